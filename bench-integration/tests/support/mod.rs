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
    std::iter::once("bench")
        .chain(extra.iter().copied())
        .map(String::from)
        .collect()
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
