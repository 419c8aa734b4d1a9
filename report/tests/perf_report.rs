//! Profiles against perf on captures `perf record --call-graph dwarf` makes here of a C
//! program the test builds (`testdata/report/hotspots.c`: four functions with shares of
//! about 53/27/13/7%): the `symbols` view agrees with `perf report --no-children` on the
//! top 5 by self, within 2 percentage points each; the `functions` view shows the inlined
//! loop under its own name; folded stacks and the flamegraph come out whole. Skips,
//! saying so, without gcc or perf, or where the kernel refuses perf.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};

use sparkles_report::capture::profile_capture;
use sparkles_report::stacks::StackOptions;

#[path = "../../testdata/support/commands.rs"]
mod commands;
use commands::{perf_record, run_in as run};

/// Builds and records the program; the capture.
fn capture(dir: &Path) -> Option<PathBuf> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/report/hotspots.c");
    run(
        dir,
        &["gcc", "-O2", "-g", "-o", "hotspots", src.to_str().unwrap()],
    )?;
    perf_record(dir, "dwarf", "perf.data", "./hotspots", 0.45)
}

#[test]
fn symbols_agree_with_perf_report_no_children() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(path) = capture(tmp.path()) else {
        return;
    };
    let Some(text) = run(
        tmp.path(),
        &[
            "perf",
            "report",
            "-i",
            "perf.data",
            "--no-children",
            "--stdio",
            "--sort",
            "sym",
            "-q",
            "-g",
            "none",
        ],
    ) else {
        return;
    };
    // "    55.59%  [.] eight"
    let theirs: Vec<(String, f64)> = text
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let pct = w.next()?.strip_suffix('%')?.parse::<f64>().ok()?;
            let _kind = w.next()?;
            Some((w.collect::<Vec<_>>().join(" "), pct))
        })
        .collect();
    // Every symbol perf puts at 1% or more (the program's four, and whatever else is that
    // hot here); below that are a few samples each of the loader and libc, which differ
    // from run to run.
    let hot: Vec<&(String, f64)> = theirs.iter().filter(|(_, pct)| *pct >= 1.0).collect();
    assert!(hot.len() >= 4, "{text}");
    let (profile, folded) = profile_capture(&path, "hotspots", &StackOptions::default()).unwrap();
    for (name, pct) in hot {
        let ours = profile
            .symbols
            .iter()
            .find(|e| &e.name == name)
            .unwrap_or_else(|| panic!("{name} ({pct}%) is not in our symbols view"));
        eprintln!("{name}: perf {pct:.2}%, sparkles {:.2}%", ours.self_pct);
        assert!(
            (ours.self_pct - pct).abs() <= 2.0,
            "{name}: perf {pct:.2}%, sparkles {:.2}%",
            ours.self_pct
        );
    }
    // The same top 4, in the same order.
    let top: Vec<&str> = profile
        .symbols
        .iter()
        .take(4)
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(top, ["eight", "four", "two", "one"]);
    // The functions view names the loop inlined into all four by its own name.
    assert_eq!(profile.functions[0].name, "work");
    assert!(
        profile.functions[0].self_pct > 90.0,
        "{:?}",
        profile.functions[0]
    );
    assert!(profile
        .lines
        .iter()
        .any(|l| l.function == "work" && l.file.ends_with("hotspots.c")));
    // Folded stacks, root first, and an SVG that is a whole document with its title.
    assert!(
        folded
            .text()
            .lines()
            .any(|l| l.starts_with("_start;") && l.contains(";eight;work ")),
        "{}",
        folded.text()
    );
    let svg = sparkles_report::flame::svg(&profile, &folded).unwrap();
    assert!(svg.trim_start().starts_with("<?xml") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains(&format!("hotspots: {}", profile.event)));
    // JSON: the pinned keys, sorted by self.
    let json: serde_json::Value = serde_json::to_value(&profile).unwrap();
    assert_eq!(json["schema"], "sparkles.profile/1");
    for key in ["case", "event", "samples", "lost", "functions", "symbols"] {
        assert!(json.get(key).is_some(), "{key}");
    }
    let row = &json["symbols"][0];
    for key in [
        "name",
        "module",
        "file",
        "line",
        "self",
        "total",
        "self_pct",
        "total_pct",
    ] {
        assert!(row.get(key).is_some(), "{key} in {row}");
    }
    let selfs: Vec<u64> = json["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["self"].as_u64().unwrap())
        .collect();
    assert!(selfs.windows(2).all(|w| w[0] >= w[1]));
}
