//! The harness end to end, as `cargo bench -- …` drives it: JSON rows, baselines, tier 0
//! and the harness's own cost.
//!
//! Tier 0 counts for the whole process, so these tests take a lock: a test allocating on
//! another thread would otherwise show up in this one's fault counts.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../benches/demo_suite/mod.rs"]
mod demo;

use std::path::Path;
use std::sync::Mutex;

use sparkles_bench::{run_main, Suite};

static SERIAL: Mutex<()> = Mutex::new(());

fn args(extra: &[&str]) -> Vec<String> {
    std::iter::once("bench")
        .chain(extra.iter().copied())
        .map(String::from)
        .collect()
}

fn run(suite: Suite, extra: &[&str]) -> sparkles_bench::Outcome {
    use clap::Parser;
    let parsed = sparkles_bench::HarnessArgs::try_parse_from(args(extra)).unwrap();
    sparkles_bench::run(suite, &parsed).unwrap()
}

fn read_rows(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

const FAST_DEMO_CASES: [&str; 3] = ["hashmap/insert", "io/read_file", "compute/sieve"];

#[test]
fn bench_json_has_the_documented_layout_and_baselines_give_verdicts() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().to_str().unwrap();
    let json = dir.path().join("out.jsonl");
    let mut flags = vec![
        "--bench",
        "--bench-min-time",
        "1ms",
        "--samples",
        "6",
        "--out-dir",
        out_dir,
        "--bench-json",
        json.to_str().unwrap(),
        "--save-baseline",
        "b",
    ];
    flags.extend(FAST_DEMO_CASES);
    let first = run(demo::suite(), &flags);
    assert!(first.all_ok());

    let rows = read_rows(&json);
    assert_eq!(rows.len(), FAST_DEMO_CASES.len());
    for row in &rows {
        let keys: Vec<_> = row
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "schema",
                "case",
                "slug",
                "ok",
                "error",
                "iterations",
                "timing",
                "metrics"
            ]
        );
        assert_eq!(row["schema"], "sparkles.bench/1");
        assert_eq!(row["ok"], true);
        assert!(row["error"].is_null());
        assert!(row["iterations"].as_u64().unwrap() >= 1);
        let timing = &row["timing"];
        assert_eq!(timing["unit"], "ns");
        assert_eq!(timing["samples"].as_array().unwrap().len(), 6);
        let (min, median, max) = (
            timing["min"].as_f64().unwrap(),
            timing["median"].as_f64().unwrap(),
            timing["max"].as_f64().unwrap(),
        );
        assert!(0.0 < min && min <= median && median <= max);
        let metrics = row["metrics"].as_object().unwrap();
        assert!(metrics.contains_key("rusage.minor_faults"));
        assert!(metrics.contains_key("throughput.bytes_per_sec"));
    }
    let io = rows
        .iter()
        .find(|r| r["case"] == "io/read_file/1MiB")
        .unwrap();
    assert_eq!(io["slug"], "io_read_file_1MiB");
    let rate = io["metrics"]["throughput.bytes_per_sec"].as_f64().unwrap();
    let median = io["timing"]["median"].as_f64().unwrap();
    assert!((rate - demo::READ_BYTES as f64 * 1e9 / median).abs() / rate < 1e-9);
    // Reading 1 MiB through the page cache: at least the file's bytes through read(2).
    let rchar = io["metrics"]["io.rchar"].as_f64().unwrap();
    assert!(rchar >= demo::READ_BYTES as f64, "rchar {rchar}");

    let saved = first.saved_baseline.unwrap();
    assert!(
        saved.ends_with("baselines/b/demo.jsonl"),
        "{}",
        saved.display()
    );
    assert!(saved.with_file_name("demo.env.json").is_file());

    let mut flags = vec![
        "--bench",
        "--bench-min-time",
        "1ms",
        "--samples",
        "6",
        "--out-dir",
        out_dir,
        "--baseline",
        "b",
    ];
    flags.extend(FAST_DEMO_CASES);
    let second = run(demo::suite(), &flags);
    for row in &second.rows {
        let c = row.comparison.as_ref().expect("every ok case is compared");
        assert!(c.ci_low_pct.unwrap() <= c.ci_high_pct.unwrap());
        assert!(c.baseline_median_ns > 0.0);
    }
}

#[test]
fn a_corrupt_or_missing_baseline_fails_before_measuring_and_is_left_alone() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().to_str().unwrap();
    let bad = dir.path().join("baselines/bad/demo.jsonl");
    std::fs::create_dir_all(bad.parent().unwrap()).unwrap();
    std::fs::write(&bad, "{\"schema\": \"sparkles.bench/1\", \"case\": \n").unwrap();
    let json = dir.path().join("never.jsonl");
    let common = [
        "--bench",
        "--out-dir",
        out_dir,
        "--bench-json",
        json.to_str().unwrap(),
        "compute/sieve",
    ];
    for flags in [
        &["--baseline", "bad"][..],
        &["--save-baseline", "bad"][..],
        &["--baseline", "missing"][..],
    ] {
        let all: Vec<&str> = common.iter().chain(flags).copied().collect();
        assert_eq!(run_main(demo::suite(), args(&all)), 2, "{flags:?}");
    }
    assert_eq!(
        std::fs::read_to_string(&bad).unwrap(),
        "{\"schema\": \"sparkles.bench/1\", \"case\": \n"
    );
    assert!(!json.exists(), "nothing is written by a run that failed");
}

#[test]
fn tier0_reads_zero_faults_for_a_quiet_body_and_one_per_touched_page() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut suite = Suite::new("tier0");
    suite.case("quiet", |b| {
        let mut x = 1u64;
        b.iter(|| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            x
        })
    });
    suite.case("touch", |b| {
        b.try_iter(|| demo::touch_fresh_pages(demo::TOUCH_BYTES))
    });
    let outcome = run(
        suite,
        &[
            "--bench",
            "--bench-min-time",
            "2ms",
            "--samples",
            "3",
            "--metrics",
            "rusage.*,io.*",
        ],
    );
    let metric = |case: &str, id: &str| {
        let row = outcome.rows.iter().find(|r| r.case == case).unwrap();
        row.metrics[id].unwrap()
    };
    for id in [
        "rusage.minor_faults",
        "rusage.major_faults",
        "io.syscr",
        "io.rchar",
    ] {
        let v = metric("quiet", id);
        assert!(
            v < 0.01,
            "{id} = {v} per iteration for a body that does nothing"
        );
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as f64;
    let pages = demo::TOUCH_BYTES as f64 / page;
    let faults = metric("touch", "rusage.minor_faults");
    assert!(
        (pages * 0.98..=pages * 1.05).contains(&faults),
        "{faults} faults per iteration for {pages} fresh pages"
    );
}

#[test]
fn an_empty_body_costs_a_few_ns() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut suite = Suite::new("empty");
    suite.case("empty", |b| b.iter(|| ()));
    suite.case("batched_empty", |b| b.iter_batched(|| (), |()| (), |()| ()));
    let outcome = run(
        suite,
        &[
            "--bench",
            "--bench-min-time",
            "2ms",
            "--samples",
            "8",
            "--metrics",
            "throughput.*",
        ],
    );
    for row in &outcome.rows {
        let median = row.timing.as_ref().unwrap().summary.median;
        assert!(
            median < 5.0,
            "{}: {median} ns per empty iteration",
            row.case
        );
    }
}

#[test]
fn failing_cases_fail_the_run_but_not_the_others() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let suite = || {
        let mut s = Suite::new("f");
        s.case("good", |b| b.iter(|| 1));
        s.case("bad", |b| b.iter(|| -> u8 { panic!("deliberate") }));
        s
    };
    assert_eq!(run_main(suite(), args(&["--quiet"])), 1);
    assert_eq!(run_main(suite(), args(&["good"])), 0);
    let outcome = run(
        suite(),
        &["--bench", "--bench-min-time", "1ms", "--samples", "2"],
    );
    let good = outcome.rows.iter().find(|r| r.case == "good").unwrap();
    let bad = outcome.rows.iter().find(|r| r.case == "bad").unwrap();
    assert!(good.ok && good.timing.is_some());
    assert!(!bad.ok && bad.timing.is_none());
    assert!(bad.error.as_deref().unwrap().contains("deliberate"));
    assert!(bad.metrics.values().all(Option::is_none));
}

#[test]
fn flags_that_cargo_and_nextest_pass_are_accepted() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut s = Suite::new("n");
    s.case("one", |b| b.iter(|| 1));
    assert_eq!(run_main(s, args(&["--list", "--format", "terse"])), 0);
    let mut s = Suite::new("n");
    s.case("one", |b| b.iter(|| 1));
    assert_eq!(
        run_main(
            s,
            args(&["--exact", "one", "--nocapture", "--test-threads", "1", "-q"])
        ),
        0
    );
    let mut s = Suite::new("n");
    s.case("one", |b| b.iter(|| 1));
    assert_eq!(run_main(s, args(&["--bench", "--metrics", "nosuch"])), 2);
}

#[test]
fn profile_writes_a_capture_per_case() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut suite = Suite::new("prof");
    suite.case("spin/loop", |b| {
        b.iter(|| {
            let mut x = 1u64;
            for i in 0..1000u64 {
                x = std::hint::black_box(x.wrapping_mul(i | 1));
            }
            x
        })
    });
    // 300 ms at 4000 Hz, or long enough for 400 samples at the kernel's lower limit (which
    // it lowers itself when sampling interrupts run long, as a VM's do).
    let rate = sparkles_sampler::session::allowed_frequency(4000);
    let profile_time = format!("{}ms", (400_000 / rate).max(300));
    let outcome = run(
        suite,
        &[
            "--bench",
            "--bench-min-time",
            "1ms",
            "--samples",
            "3",
            "--profile",
            "--profile-time",
            &profile_time,
            "--profile-event",
            "cpu-clock",
            "--out-dir",
            dir.path().to_str().unwrap(),
        ],
    );
    let row = &outcome.rows[0];
    let profile = row.profile.as_ref().expect("a profile summary");
    if let Some(error) = &profile.error {
        eprintln!("skipped: the sampler could not start here: {error}");
        return;
    }
    let capture = dir.path().join("profile/spin_loop/capture.perf.data");
    assert_eq!(profile.capture.as_deref(), Some(capture.to_str().unwrap()));
    assert!(profile.samples > 100, "{profile:?}");
    assert_eq!(profile.lost + profile.lost_samples, 0);
    assert_eq!(row.metrics["profile.samples"], Some(profile.samples as f64));
    let data = sparkles_perf_data::PerfData::open(&capture).unwrap();
    let stats = data
        .for_each_record(|_| Ok::<(), sparkles_perf_data::Error>(()))
        .unwrap();
    assert_eq!(stats.samples, profile.samples);
    // The timing pass ran before, with nothing enabled: its samples are untouched.
    assert_eq!(row.timing.as_ref().unwrap().samples.len(), 3);
    // Its stacks unwind through the case to the thread's root, with at most 1% errors.
    let u = profile.unwind.as_ref().expect("the capture was unwound");
    eprintln!("{}", u.describe());
    assert!(u.user_samples * 10 >= u.samples * 9, "{u:?}");
    let pct = |n: u64| 100.0 * n as f64 / u.user_samples as f64;
    assert!(pct(u.reached_case) >= 95.0, "{u:?}");
    assert!(pct(u.reached_root) >= 95.0, "{u:?}");
    assert!(pct(u.truncated.values().sum()) <= 1.0, "{u:?}");
    // The case's artifacts beside its capture, and its hottest functions in its row.
    let dir = capture.parent().unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("profile.json")).unwrap()).unwrap();
    assert_eq!(json["schema"], "sparkles.profile/1");
    assert_eq!(json["case"], "spin/loop");
    assert_eq!(json["samples"].as_u64(), Some(profile.samples));
    let svg = std::fs::read_to_string(dir.join("flamegraph.svg")).unwrap();
    assert!(svg.contains("spin/loop: ") && svg.trim_end().ends_with("</svg>"));
    let folded = std::fs::read_to_string(dir.join("folded.txt")).unwrap();
    let weight: u64 = folded
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(Some(weight), json["weight"].as_u64());
    assert_eq!(profile.top.len(), 5);
    assert!(profile
        .top
        .windows(2)
        .all(|w| w[0].self_pct >= w[1].self_pct));
}

#[test]
fn a_profiled_baseline_gives_each_case_a_hot_function_diff() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let suite = || {
        let mut suite = Suite::new("profdiff");
        // The hot code is one function (libc's memset): a loop of tiny debug-build calls
        // (black_box, Range::next, lt) splits its samples among them differently from
        // run to run, as a periodic sampler and the loop beat.
        suite.case("spin", |b| {
            let mut buffer = vec![0u8; 64 << 10];
            let mut i = 0u8;
            b.iter(move || {
                i = i.wrapping_add(1);
                std::hint::black_box(&mut buffer).fill(i);
                buffer[i as usize]
            })
        });
        suite
    };
    let flags = |extra: &[&str]| {
        let mut f = vec![
            "--bench",
            "--bench-min-time",
            "1ms",
            "--samples",
            "3",
            "--profile",
            "--profile-time",
            "300ms",
            "--profile-event",
            "cpu-clock",
            "--out-dir",
            dir.path().to_str().unwrap(),
        ];
        f.extend_from_slice(extra);
        f.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let first = run(
        suite(),
        &flags(&["--save-baseline", "main"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    if let Some(e) = first.rows[0]
        .profile
        .as_ref()
        .and_then(|p| p.error.as_ref())
    {
        eprintln!("skipped: the sampler could not start here: {e}");
        return;
    }
    let kept = dir.path().join("baselines/main/profile/spin");
    assert!(kept.join("profile.json").is_file() && kept.join("folded.txt").is_file());
    let second = run(
        suite(),
        &flags(&["--baseline", "main"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let p = second.rows[0].profile.as_ref().unwrap();
    assert!(!p.movers.is_empty(), "{p:?}");
    // The same code: no significant mover.
    assert!(p.movers.iter().all(|m| !m.significant), "{:?}", p.movers);
    let case = dir.path().join("profile/spin");
    let diff: serde_json::Value =
        serde_json::from_slice(&std::fs::read(case.join("diff.json")).unwrap()).unwrap();
    assert_eq!(diff["schema"], "sparkles.diff/1");
    assert!(std::fs::read_to_string(case.join("diff.svg"))
        .unwrap()
        .trim_end()
        .ends_with("</svg>"));
}

/// `--profile=mem` on a case that touches a fresh 4 MiB buffer each iteration: on a
/// machine without a precise memory PMU (this one: a VM), the fallback is said with its
/// reason and the capture is page faults with data addresses; every placed page is on
/// one of the machine's nodes (here all on node 0, the only one), asked of the kernel
/// while the case ran; the code that touched them is the case's.
#[test]
fn profile_mem_places_first_touched_pages_on_their_nodes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut suite = Suite::new("mem");
    suite.case("touch/4MiB", |b| {
        b.try_iter(|| demo::touch_fresh_pages(4 << 20))
    });
    let outcome = run(
        suite,
        &[
            "--bench",
            "--bench-min-time",
            "1ms",
            "--samples",
            "3",
            "--profile=mem",
            "--profile-time",
            "300ms",
            "--out-dir",
            dir.path().to_str().unwrap(),
        ],
    );
    let row = &outcome.rows[0];
    let profile = row.profile.as_ref().expect("a profile summary");
    if let Some(error) = &profile.error {
        eprintln!("skipped: the sampler could not start here: {error}");
        return;
    }
    let numa = profile.numa.as_ref().expect("a numa section");
    let topology = sparkles_perf_data::topology::Topology::from_sysfs(Path::new("/")).unwrap();
    let nodes: Vec<u32> = topology.nodes.iter().map(|n| n.id).collect();
    let choice = sparkles_sampler::mem_events::choose(
        &sparkles_sampler::EventResolver::live().unwrap(),
        &sparkles_sampler::mem_events::MemOptions {
            ldlat: 30,
            kernel: (6, 1),
            phys_addr: false,
            hypervisor: false,
        },
    );
    if let Some(why) = &choice.unavailable {
        // The fallback, said with its reason.
        assert_eq!(numa.source, "first_touch");
        assert_eq!(numa.node_source.as_deref(), Some("move_pages"));
        assert_eq!(profile.event, "page-faults");
        let json: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.path().join("profile/touch_4MiB/profile.json")).unwrap(),
        )
        .unwrap();
        let note = json["event_note"].as_str().unwrap();
        assert!(
            note.contains("first-touch placement") && note.contains(why.as_str()),
            "{note}"
        );
    }
    assert!(numa.samples > 0, "{numa:?}");
    let unplaced: u64 = numa.unplaced.values().sum();
    assert!(
        numa.samples >= 4 * unplaced,
        "most pages are placed: {numa:?}"
    );
    for cell in &numa.matrix {
        assert!(
            nodes.contains(&cell.mem_node) && nodes.contains(&cell.cpu_node),
            "{cell:?}"
        );
    }
    if nodes.len() == 1 {
        assert_eq!(numa.matrix.len(), 1);
        assert_eq!(
            (numa.matrix[0].cpu_node, numa.matrix[0].mem_node),
            (nodes[0], nodes[0])
        );
        assert_eq!(numa.local_share, 1.0);
    }
    // The code that touched them: the case's function (the write inlined into it).
    assert!(
        numa.code
            .iter()
            .any(|c| c.function.contains("touch_fresh_pages")
                || c.symbol
                    .as_deref()
                    .is_some_and(|s| s.contains("touch_fresh_pages"))),
        "{:?}",
        numa.code
    );
    assert!(numa
        .data_objects
        .iter()
        .all(|d| d.kind == "anon" || d.kind == "heap"));
    // The page table is beside the capture, and `sparkles report` on the capture alone
    // finds it.
    let capture = dir.path().join("profile/touch_4MiB/capture.perf.data");
    assert!(sparkles_perf_data::pages::PageNodes::read_beside(&capture)
        .unwrap()
        .is_some());
    let (p, _) = sparkles_report::profile::profile_capture(
        &capture,
        "touch",
        &sparkles_report::stacks::StackOptions::default(),
    )
    .unwrap();
    assert_eq!(p.numa.as_ref().unwrap().samples, numa.samples);
    assert!(profile.numa_line().unwrap().starts_with("numa ("));
}

#[test]
fn the_demo_chase_is_one_cycle() {
    let next = demo::chase_cycle(1000);
    assert_eq!(demo::chase(&next, 0, 1000), 0);
    assert!((1..1000).all(|k| demo::chase(&next, 0, k) != 0));
}

#[test]
fn the_demo_inputs_are_what_the_cases_claim() {
    let doc = demo::json_document(1500);
    assert!((200_000..600_000).contains(&doc.len()), "{}", doc.len());
    let parsed: Vec<demo::Record> = serde_json::from_slice(&doc).unwrap();
    assert_eq!(parsed.len(), 1500);
    assert_eq!(demo::sieve(100), 25);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    assert_eq!(demo::touch_fresh_pages(64 * page).unwrap(), 64);
}
