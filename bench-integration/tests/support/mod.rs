//! What the harness's test files share: running a suite as `cargo bench -- …` does, and
//! reading the rows it writes.

#![allow(dead_code)] // each test file uses its own part
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::path::Path;
use std::sync::Mutex;

use sparkles_bench::Suite;

/// Tier 0 counts for the whole process: one test at a time.
pub static SERIAL: Mutex<()> = Mutex::new(());

pub fn args(extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = std::iter::once("bench")
        .chain(extra.iter().copied())
        .map(String::from)
        .collect();
    // A run that names no folder of its own writes into a fresh one under cargo's
    // target/tmp, never into target/sparkles: a test's suite is no case of the user's run
    // report, baselines or profiles.
    if !extra
        .iter()
        .any(|a| *a == "--out-dir" || a.starts_with("--out-dir="))
    {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap()
            .keep();
        args.push("--out-dir".into());
        args.push(dir.to_string_lossy().into_owned());
    }
    args
}

pub fn run(suite: Suite, extra: &[&str]) -> sparkles_bench::Outcome {
    use clap::Parser;
    let parsed = sparkles_bench::HarnessArgs::try_parse_from(args(extra)).unwrap();
    sparkles_bench::run(suite, &parsed).unwrap()
}

pub fn read_rows(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
