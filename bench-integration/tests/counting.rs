//! The perf_event counting tiers end to end, as `cargo bench -- --perf …` drives them:
//! software counters on every case, syscall tracepoints against the reads a case does,
//! threads started before and during a pass, estimates where groups share the PMU, and
//! the rdpmc read path.
//!
//! Each test skips, saying why, where the kernel refuses what it needs (no PMU, no
//! tracefs, paranoid level). The counters cover every thread of the process, so the
//! tests take a lock.

#![cfg(target_os = "linux")] // perf_event is Linux's: elsewhere this file is empty
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

#[path = "../benches/demo_suite/mod.rs"]
mod demo;

use std::sync::mpsc::channel;
use std::sync::Mutex;

use serde_json::Value;
use sparkles_bench::catalog::{Availability, Catalog};
use sparkles_bench::counters::CountingOptions;
use sparkles_bench::Suite;

static SERIAL: Mutex<()> = Mutex::new(());

/// Runs `suite` with `flags` and returns its JSON rows.
fn rows(suite: Suite, flags: &[&str]) -> Vec<Value> {
    use clap::Parser;
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("rows.jsonl");
    let mut all = vec![
        "bench",
        "--bench",
        "--bench-min-time",
        "1ms",
        "--samples",
        "3",
        "--out-dir",
        dir.path().to_str().unwrap(),
        "--bench-json",
        json.to_str().unwrap(),
    ];
    all.extend(flags);
    let args = sparkles_bench::HarnessArgs::try_parse_from(all).unwrap();
    let outcome = sparkles_bench::run(suite, &args).unwrap();
    assert!(outcome.all_ok());
    std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Why `id` cannot be counted here, if it cannot.
fn unavailable(options: &CountingOptions, id: &str) -> Option<String> {
    let catalog = Catalog::probe_with(options).unwrap();
    let m = catalog.descriptors().iter().find(|m| m.id == id).unwrap();
    match &m.availability {
        Availability::Available => None,
        Availability::Unavailable(why) => Some(why.clone()),
    }
}

fn row<'a>(rows: &'a [Value], case: &str) -> &'a Value {
    rows.iter().find(|r| r["case"] == case).unwrap()
}

#[test]
fn perf_reports_software_counters_for_every_demo_case() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = unavailable(&CountingOptions::default(), "task-clock") {
        skip::skip(
            "perf_event",
            format!("software counters unavailable: {why}"),
        );
        return;
    }
    let rows = rows(demo::suite(), &["--perf"]);
    assert_eq!(rows.len(), 15);
    let catalog = Catalog::probe();
    for r in &rows {
        let m = &r["metrics"];
        let task = m["task-clock"].as_f64().unwrap_or(0.0);
        assert!(task > 0.0, "{}: task-clock {task}", r["case"]);
        for id in ["page-faults", "context-switches", "cpu-migrations"] {
            assert!(m[id].is_number(), "{}: {id} is {}", r["case"], m[id]);
        }
        // Hardware metrics: counted, or absent for the reason the catalog gives.
        for id in ["cycles", "instructions", "ipc"] {
            let d = catalog.descriptors().iter().find(|d| d.id == id).unwrap();
            match &d.availability {
                Availability::Available => assert!(m[id].is_number(), "{}: {id}", r["case"]),
                Availability::Unavailable(_) => assert!(m[id].is_null()),
            }
        }
        // Which threads were counted, and how.
        let perf = &r["counting"]["perf"];
        let threads = perf["threads"].as_array().unwrap();
        // Thread names are the slug, cut to the kernel's 15 characters.
        let slug = r["slug"].as_str().unwrap();
        assert!(
            threads.iter().any(|t| {
                let name = t["name"].as_str().unwrap();
                !name.is_empty() && slug.starts_with(name)
            }),
            "the case's own thread is among {threads:?}"
        );
        assert_eq!(perf["inherit"], true);
        assert_eq!(perf["read"], "read(2)");
        assert_eq!(perf["events"]["task-clock"]["estimated"], false);
        assert_eq!(perf["events"]["task-clock"]["running_ratio"], 1.0);
    }
    // The fault counters agree with getrusage's on the page-touching case.
    let touch = row(&rows, "pages/touch/4MiB");
    let faults = touch["metrics"]["page-faults"].as_f64().unwrap();
    let minflt = touch["metrics"]["rusage.minor_faults"].as_f64().unwrap();
    assert!(
        (faults - minflt).abs() <= minflt * 0.02 + 1.0,
        "page-faults {faults} against ru_minflt {minflt}"
    );
}

#[test]
fn syscall_tracepoints_count_the_reads_a_case_does() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = unavailable(&CountingOptions::default(), "syscalls:read") {
        skip::skip("tracefs", format!("syscall tracepoints unavailable: {why}"));
        return;
    }
    let rows = rows(
        demo::suite(),
        &[
            "--metrics",
            "syscalls:*,io.syscr",
            "io/read_file",
            "sort/u64",
        ],
    );
    let read = row(&rows, "io/read_file/1MiB");
    let calls = read["metrics"]["syscalls:read"].as_f64().unwrap();
    let syscr = read["metrics"]["io.syscr"].as_f64().unwrap();
    // std::fs::read: one read of the whole file, one more that finds its end.
    assert!(calls >= 1.0, "syscalls:read {calls} per iteration");
    assert!(
        (calls - syscr).abs() < 0.1,
        "syscalls:read {calls} against /proc/self/io's {syscr} read-class calls"
    );
    for id in ["syscalls:openat", "syscalls:close"] {
        let v = read["metrics"][id].as_f64().unwrap();
        assert!((v - 1.0).abs() < 0.1, "{id} {v}: one file opened per read");
    }
    let total = read["metrics"]["syscalls:total"].as_f64().unwrap();
    assert!(total >= calls + 2.0, "total {total}");
    let sort = row(&rows, "sort/u64/100k");
    for id in ["syscalls:read", "syscalls:total"] {
        let v = sort["metrics"][id].as_f64().unwrap();
        assert!(v < 0.05, "{id} {v} per iteration of an in-memory sort");
    }
}

#[test]
fn threads_started_before_and_during_the_pass_are_both_counted() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let options = CountingOptions {
        syscalls: vec!["getppid".into()],
        syscalls_named: true,
        ..CountingOptions::default()
    };
    if let Some(why) = unavailable(&options, "syscalls:getppid") {
        skip::skip("tracefs", format!("syscall tracepoints unavailable: {why}"));
        return;
    }
    const BY_WORKER: u64 = 30;
    const BY_SPAWNED: u64 = 20;
    let mut suite = Suite::new("threads");
    suite.case("pool_and_spawn", |b| {
        // A worker started in setup, before any counter opens.
        let (work_tx, work_rx) = channel::<()>();
        let (done_tx, done_rx) = channel::<()>();
        let worker = std::thread::Builder::new()
            .name("setup-worker".into())
            .spawn(move || {
                while work_rx.recv().is_ok() {
                    for _ in 0..BY_WORKER {
                        // SAFETY: getppid has no preconditions.
                        std::hint::black_box(unsafe { libc::getppid() });
                    }
                    done_tx.send(()).unwrap();
                }
            })
            .unwrap();
        b.iter(|| {
            work_tx.send(()).unwrap();
            // A thread started inside the body, during the pass.
            std::thread::spawn(|| {
                for _ in 0..BY_SPAWNED {
                    // SAFETY: as above.
                    std::hint::black_box(unsafe { libc::getppid() });
                }
            })
            .join()
            .unwrap();
            done_rx.recv().unwrap();
        });
        drop(work_tx);
        worker.join().unwrap();
    });
    let rows = rows(suite, &["--syscalls", "getppid"]);
    let r = &rows[0];
    let calls = r["metrics"]["syscalls:getppid"].as_f64().unwrap();
    assert!(
        (calls - (BY_WORKER + BY_SPAWNED) as f64).abs() < 0.5,
        "{calls} getppid calls per iteration; the worker makes {BY_WORKER}, the spawned thread {BY_SPAWNED}"
    );
    let tier = &r["counting"]["syscalls"];
    assert_eq!(tier["inherit"], true);
    assert!(
        tier["threads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "setup-worker"),
        "{tier}"
    );
}

/// Nine hardware events: more than one group of them fits on this kind of PMU.
const NINE: &str = "instructions,cycles,branches,branch-misses,instructions:u,cycles:u,branches:u,branch-misses:u,instructions:k";

fn hardware_options() -> CountingOptions {
    CountingOptions {
        events: NINE.split(',').map(String::from).collect(),
        ..CountingOptions::default()
    }
}

#[test]
fn groups_sharing_the_pmu_give_labelled_estimates_and_exact_leaves_events_out() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = unavailable(&hardware_options(), "instructions") {
        skip::skip("pmu", format!("no hardware counters here: {why}"));
        return;
    }
    let rows_shared = rows(demo::suite(), &["--events", NINE, "compute/sieve"]);
    let perf = &rows_shared[0]["counting"]["perf"];
    if perf["pmu_groups"] == 1 {
        // This PMU holds all nine at once (eight general counters and three fixed ones):
        // nothing is scaled, and --perf-exact has nothing to leave out.
        let events = perf["events"].as_object().unwrap();
        assert!(events.values().all(|e| e["estimated"] == false), "{perf}");
        let rows_exact = rows(
            demo::suite(),
            &["--events", NINE, "--perf-exact", "compute/sieve"],
        );
        let exact = &rows_exact[0]["counting"]["perf"];
        assert_eq!(exact["pmu_groups"], 1);
        assert!(
            exact["events"]
                .as_object()
                .unwrap()
                .values()
                .all(|e| e["reason"].is_null()),
            "{exact}"
        );
        return;
    }
    let instr = &perf["events"]["instructions"];
    assert_eq!(instr["estimated"], true, "{perf}");
    let ratio = instr["running_ratio"].as_f64().unwrap();
    assert!(ratio > 0.0 && ratio < 1.0, "{ratio}");
    assert!(rows_shared[0]["metrics"]["instructions"].as_f64().unwrap() > 0.0);

    let rows_exact = rows(
        demo::suite(),
        &["--events", NINE, "--perf-exact", "compute/sieve"],
    );
    let perf = &rows_exact[0]["counting"]["perf"];
    assert_eq!(perf["pmu_groups"], 1);
    assert_eq!(perf["events"]["instructions"]["estimated"], false);
    let left_out: Vec<&str> = perf["events"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, e)| {
            e["reason"]
                .as_str()
                .is_some_and(|r| r.contains("--perf-exact"))
        })
        .map(|(id, _)| id.as_str())
        .collect();
    assert!(!left_out.is_empty(), "{perf}");
    for id in left_out {
        assert!(
            rows_exact[0]["metrics"][id].is_null(),
            "{id} left out but has a value"
        );
    }
    // How close an estimate comes is tested on a long pass in sparkles-sampler
    // (counters::tests): a pass of one 5 ms iteration holds one or two turns of the
    // groups (the kernel rotates them every few ms), too few to compare here.
    assert!(rows_exact[0]["metrics"]["instructions"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_case_thread_alone_is_read_with_rdpmc_where_the_kernel_allows_it() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let options = CountingOptions {
        events: vec!["instructions:u".into(), "cycles:u".into()],
        calling_thread_only: true,
        ..CountingOptions::default()
    };
    if let Some(why) = unavailable(&options, "instructions:u") {
        skip::skip("pmu", format!("no hardware counters here: {why}"));
        return;
    }
    let rows = rows(
        demo::suite(),
        &[
            "--events",
            "instructions:u,cycles:u",
            "--perf-threads",
            "self",
            "compute/sieve",
        ],
    );
    let perf = &rows[0]["counting"]["perf"];
    assert_eq!(perf["inherit"], false);
    assert_eq!(perf["threads"].as_array().unwrap().len(), 1);
    if perf["read"] != "rdpmc" {
        skip::skip(
            "rdpmc",
            format!("rdpmc not allowed here: {}", perf["read_reason"]),
        );
        return;
    }
    let instr = rows[0]["metrics"]["instructions:u"].as_f64().unwrap();
    // The sieve of a million numbers is millions of instructions.
    assert!(instr > 1e6, "{instr}");
}
