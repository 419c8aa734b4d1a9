//! SparklesProfiler behind a real criterion (0.8, and 0.5 with the `criterion-05` feature) run with a profile time, as `cargo bench
//! -- --profile-time N` drives it: each benchmark's folder gets the capture, flamegraph,
//! folded stacks and profile.json, rooted at the benchmark. Where the kernel refuses
//! sampling the benchmark still runs, unprofiled, and the test says it skipped.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use sparkles_criterion::{SparklesProfiler, CAPTURE};

#[inline(never)]
fn spin_work(n: u64) -> u64 {
    let mut x = 1u64;
    for i in 0..n {
        x = black_box(x.wrapping_mul(i | 1).rotate_left(7));
    }
    x
}

/// Whether this machine lets the sampler start, and if not why.
fn sampling_refused() -> Option<String> {
    use sparkles_sampler::session::{
        default_event, CallGraph, Rate, SamplingConfig, Session, Target,
    };
    use sparkles_sampler::system::System;
    let resolver = match sparkles_sampler::EventResolver::live() {
        Ok(r) => r,
        Err(e) => return Some(e.to_string()),
    };
    let (event, _) = default_event(&resolver, &System::probe());
    let config = SamplingConfig {
        buffer_pages: 8,
        ..SamplingConfig::new(
            vec![event.into()],
            Rate::Frequency(100),
            CallGraph::FramePointer,
        )
    };
    match Session::start(&config, Target::CurrentThread, &System::probe()) {
        Ok(s) => {
            drop(s.finish());
            None
        }
        Err(e) => Some(e.to_string()),
    }
}

#[test]
fn profile_time_writes_the_harness_artifacts_per_benchmark() {
    let out = tempfile::tempdir().unwrap();
    let mut c = Criterion::default()
        .with_profiler(SparklesProfiler::default().frequency(1000).top(3))
        .output_directory(out.path())
        .profile_time(Some(Duration::from_millis(600)));
    c.bench_function("spin/work", |b| b.iter(|| spin_work(black_box(20_000))));
    check_artifacts(out.path());
}

/// The same through criterion 0.5's hook (the `criterion-05` feature, which the
/// workspace's tests turn on through sparkles-cli).
#[cfg(feature = "criterion-05")]
#[test]
fn criterion_0_5_gets_the_same_profiles_through_its_hook() {
    let out = tempfile::tempdir().unwrap();
    let mut c = criterion05::Criterion::default()
        .with_profiler(SparklesProfiler::default().frequency(1000).top(3))
        .output_directory(out.path())
        .profile_time(Some(Duration::from_millis(600)));
    c.bench_function("spin/work", |b| b.iter(|| spin_work(black_box(20_000))));
    check_artifacts(out.path());
}

/// What a benchmark `spin/work` profiled under `out` left there: every artifact, the
/// routine's function where the time went, the stacks rooted at the benchmark.
fn check_artifacts(out: &std::path::Path) {
    let dir = out.join("spin_work").join("profile");
    if let Some(why) = sampling_refused() {
        // The benchmark ran to its end all the same, with nothing written.
        assert!(!dir.join(CAPTURE).exists());
        skip::skip(
            "perf_event",
            format!("the kernel refuses sampling here: {why}"),
        );
        return;
    }
    for file in [CAPTURE, "flamegraph.svg", "folded.txt", "profile.json"] {
        assert!(
            dir.join(file).is_file(),
            "{file} missing in {}",
            dir.display()
        );
    }
    let profile: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("profile.json")).unwrap()).unwrap();
    assert_eq!(profile["schema"], "sparkles.profile/1");
    assert_eq!(profile["case"], "spin/work");
    assert!(
        profile["samples"].as_u64().unwrap() > 100,
        "{}",
        profile["samples"]
    );
    // The routine's function is where the time went (in a debug build its inlined-away
    // helpers are frames of their own: by total, not self).
    let spin = profile["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"].as_str().unwrap().ends_with("spin_work"))
        .expect("spin_work is in the profile");
    assert!(spin["total_pct"].as_f64().unwrap() > 90.0, "{spin}");
    // Rooted at the benchmark: criterion's frames and those around them are one root.
    let folded = std::fs::read_to_string(dir.join("folded.txt")).unwrap();
    let total: u64 = folded
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    let under: u64 = folded
        .lines()
        .filter(|l| l.starts_with("spin/work;"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(under * 10 >= total * 9, "{under} of {total}:\n{folded}");
    assert!(
        !folded
            .lines()
            .any(|l| l.split(';').any(|f| f.starts_with("criterion::"))),
        "{folded}"
    );
    let svg = std::fs::read_to_string(dir.join("flamegraph.svg")).unwrap();
    assert!(svg.contains("spin/work") && svg.trim_end().ends_with("</svg>"));
}
