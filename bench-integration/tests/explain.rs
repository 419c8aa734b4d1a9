//! Regressions explained: a suite whose second build plants one cause per case (more work,
//! more page faults, more read syscalls, the same loads over memory instead of caches),
//! measured against its first build saved as a
//! baseline. Each case's `comparison.explanation` names its cause; the unchanged case names
//! none; every metric both runs have is compared. Expectations come from this machine:
//! without a PMU, perf's instructions and cycles are unavailable, and more work is told
//! from callgrind's count (`--instructions`) where valgrind is installed, never claimed
//! where it is not.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../benches/demo_suite/mod.rs"]
mod demo;
#[path = "../../testdata/support/skip.rs"]
mod skip;
mod support;

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};

use sparkles_bench::explain::{Cause, MetricVerdict};
use sparkles_bench::stats::Verdict;
use sparkles_bench::Suite;

use support::{run, SERIAL};

/// Which build the suite is: 1 the baseline, 2 the one with the planted causes.
static BUILD: AtomicU32 = AtomicU32::new(1);

fn spin(n: u64) -> u64 {
    let mut x = 1u64;
    for i in 0..n {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }
    x
}

/// Set in a rerun's environment (`--instructions` counts each case in one): the build.
const RERUN_BUILD: &str = "SPARKLES_EXPLAIN_TEST_BUILD";

fn suite() -> Suite {
    let mut s = Suite::new("planted");
    s.reexec_with(
        ["rerun", "--exact", "--nocapture"],
        [(RERUN_BUILD, BUILD.load(Ordering::Relaxed).to_string())],
    );
    let second = || BUILD.load(Ordering::Relaxed) == 2;
    s.case("work", move |b| {
        // Ten times the work: between two runs a busy machine moves a case's median by
        // up to a few times (three times the work was once inside the noise beside the
        // workspace's tests and two busy loops); the planted change is beyond that.
        let n = if second() { 600_000 } else { 60_000 };
        b.iter(|| spin(n))
    });
    s.case("faults", move |b| {
        let pages = if second() { 256 } else { 0 };
        b.iter(|| {
            // Fresh pages each iteration: each first touch is a minor fault.
            let touched = match pages {
                0 => 0,
                n => demo::touch_fresh_pages(n * demo::page_size()).unwrap(),
            };
            spin(20_000) + touched as u64
        })
    });
    s.case("syscalls", move |b| {
        // A thousand: several times the loop's own time, so the verdict holds on a
        // machine loaded enough to spread 200 reads' +70% into the noise (seen in CI).
        let reads = if second() { 1000 } else { 0 };
        let file = std::fs::File::open("/dev/zero").unwrap();
        b.iter(|| {
            use std::io::Read;
            let mut f = &file;
            // Empty reads: read-class syscalls that move no bytes.
            for _ in 0..reads {
                let _ = f.read(&mut []);
            }
            spin(20_000)
        })
    });
    s.case("locality", move |b| {
        // The same loads, one after another along a random cycle: over 16 KiB (caches)
        // in the first build, over 32 MiB (memory) in the second. The instructions are
        // the same; the cycles are not.
        let entries = if second() { 8 << 20 } else { 4 << 10 };
        let next = cycle(entries);
        let mut at = 0usize;
        b.iter(|| {
            for _ in 0..20_000 {
                at = next[at] as usize;
            }
            black_box(at)
        })
    });
    s.case("same", |b| b.iter(|| spin(40_000)));
    s
}

/// `next[i]`: a single random cycle through every index (Sattolo's shuffle).
fn cycle(n: usize) -> Vec<u32> {
    let mut next: Vec<u32> = (0..n as u32).collect();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = (x % i as u64) as usize;
        next.swap(i, j);
    }
    next
}

/// Where `--instructions` reruns the suite under valgrind: the same build, counted and
/// exited by the harness. Outside a rerun it does nothing.
#[test]
fn rerun() {
    let Some(build) = std::env::var_os(RERUN_BUILD) else {
        return;
    };
    BUILD.store(build.to_string_lossy().parse().unwrap(), Ordering::Relaxed);
    run(suite(), &["--bench"]);
    unreachable!("the harness exits in a rerun under valgrind");
}

#[test]
fn each_planted_cause_is_named_and_the_same_code_explains_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !cfg!(target_os = "linux") {
        skip::skip(
            "kernel_edge",
            "tier 0's fault and syscall counts are Linux's",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    // Exact instruction counts where valgrind is installed: the work cause is told
    // without a PMU too.
    let valgrind = sparkles_bench::valgrind::program().is_ok();
    if !valgrind {
        skip::skip(
            "valgrind",
            "no valgrind: without a PMU, more work cannot be told from less speed",
        );
    }
    let flags = |baseline: &'static str| {
        let mut flags = vec![
            "--bench",
            // Samples of several scheduler slices: a loaded machine's preemptions average
            // out within each instead of deciding it.
            "--bench-min-time",
            "10ms",
            "--samples",
            "12",
            "--out-dir",
            out,
            baseline,
            "b",
        ];
        if valgrind {
            flags.push("--instructions");
        }
        flags
    };
    BUILD.store(1, Ordering::Relaxed);
    assert!(run(suite(), &flags("--save-baseline")).all_ok());
    BUILD.store(2, Ordering::Relaxed);
    let second = run(suite(), &flags("--baseline"));
    assert!(second.all_ok());
    let pmu = second
        .rows
        .iter()
        .any(|r| r.metrics.get("instructions").copied().flatten().is_some());
    let by = |case: &str| {
        let row = second.rows.iter().find(|r| r.case == case).unwrap();
        let c = row.comparison.as_ref().unwrap();
        eprintln!(
            "{case}: {:?}: {}",
            c.explanation.as_ref().unwrap().kind,
            c.explanation.as_ref().unwrap().text
        );
        if let Some(i) = c.metrics.iter().find(|m| m.id == "valgrind.instructions") {
            eprintln!(
                "{case}: valgrind.instructions {} -> {} ({:?}%)",
                i.base, i.new, i.change_pct
            );
        }
        (row, c)
    };

    // Every metric both runs have is compared, from the counting pass's brackets.
    let (row, c) = by("faults");
    assert!(row
        .metric_samples
        .get("rusage.minor_faults")
        .is_some_and(|v| v.len() >= 6));
    let faults = c
        .metrics
        .iter()
        .find(|m| m.id == "rusage.minor_faults")
        .unwrap();
    assert_eq!(faults.verdict, MetricVerdict::Higher, "{faults:?}");
    assert!(faults.new - faults.base >= 200.0, "{faults:?}");
    assert_eq!(c.verdict, Verdict::Regression);
    let e = c.explanation.as_ref().unwrap();
    assert_eq!(e.kind, Cause::MoreFaults, "{}", e.text);

    let (row, c) = by("syscalls");
    if row.metrics.get("io.syscr").copied().flatten().is_none() {
        skip::skip(
            "proc_io",
            "/proc/self/io gives no syscall counts here: the planted syscalls cannot be told",
        );
    } else {
        assert_eq!(c.verdict, Verdict::Regression);
        let e = c.explanation.as_ref().unwrap();
        // The reads' own user-space instructions (about half again the loop's, counted
        // exactly) are more work too where the time moved less than three times that:
        // both named.
        let both = (pmu || valgrind) && e.kind == Cause::Mixed && e.text.contains("more work)");
        assert!(e.kind == Cause::MoreSyscalls || both, "{}", e.text);
        assert!(e.text.contains("io.syscr syscalls/iter"), "{}", e.text);
    }

    let (_, c) = by("work");
    assert_eq!(c.verdict, Verdict::Regression);
    let e = c.explanation.as_ref().unwrap();
    if pmu {
        assert_eq!(e.kind, Cause::MoreWork, "{}", e.text);
    } else if valgrind {
        // callgrind's exact count: ten times the loop, ten times the instructions.
        assert_eq!(e.kind, Cause::MoreWork, "{}", e.text);
        assert!(e.text.contains("(valgrind; more work)"), "{}", e.text);
        let i = c
            .metrics
            .iter()
            .find(|m| m.id == "valgrind.instructions")
            .unwrap();
        assert!(i.new / i.base > 9.0 && i.new / i.base < 10.1, "{i:?}");
    } else {
        // Without instructions a slower case is never called more work, and says why.
        assert_eq!(e.kind, Cause::Unexplained, "{}", e.text);
        assert!(
            e.text.contains("instructions and cycles unavailable"),
            "{}",
            e.text
        );
        // Neither run profiled: the line says where could not be told, and how to.
        assert!(
            e.text
                .ends_with("; where: not profiled (run with --profile, against a baseline saved with --profile)"),
            "{}",
            e.text
        );
        assert!(
            c.metrics_missing.is_empty() || c.metrics_missing.iter().all(|m| !m.reason.is_empty())
        );
    }

    // The same instructions with worse locality: IPC fell, where it can be told.
    let (_, c) = by("locality");
    let e = c.explanation.as_ref().unwrap();
    assert_eq!(c.verdict, Verdict::Regression);
    if pmu {
        assert_eq!(e.kind, Cause::SlowerPerInstruction, "{}", e.text);
    } else if valgrind {
        // The same instructions, exactly: the same work done slower.
        assert_eq!(e.kind, Cause::SlowerPerInstruction, "{}", e.text);
        assert!(e.text.contains("(valgrind; flat)"), "{}", e.text);
    } else {
        assert_eq!(e.kind, Cause::Unexplained, "{}", e.text);
    }

    // The same code: no measured cause; nothing at all where the time did not move. Two
    // runs apart in time (unpaired: a suite run from a test keeps no executable), so a
    // verdict needs the change beyond the between-run noise.
    let (_, c) = by("same");
    let e = c.explanation.as_ref().unwrap();
    let noise = c.between_run_noise.as_ref().unwrap();
    assert_eq!(c.method, Some(sparkles_bench::record::Method::Unpaired));
    let change = matches!(c.verdict, Verdict::Regression | Verdict::Improvement);
    assert!(!change || c.delta_pct.abs() > noise.pct, "{c:?}");
    match c.verdict {
        Verdict::InsideTheNoise | Verdict::Underpowered => assert_eq!(e.kind, Cause::None),
        // A busy machine slowed the same instructions: said as such where they are
        // counted exactly.
        Verdict::Regression if valgrind && !pmu => {
            assert_eq!(e.kind, Cause::SlowerPerInstruction, "{}", e.text)
        }
        Verdict::Improvement if valgrind && !pmu => {
            assert_eq!(e.kind, Cause::FasterPerInstruction, "{}", e.text)
        }
        _ => assert_eq!(e.kind, Cause::Unexplained, "{}", e.text),
    }
}
