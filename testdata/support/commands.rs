//! Shared by tests of several crates (included with `#[path]`): running the tools a test
//! needs (gcc, perf) in a folder, saying why and skipping where one is missing or refused.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `args` in `dir`; its standard output, or `None` after printing why it could not.
pub fn run_in(dir: &Path, args: &[&str]) -> Option<String> {
    match Command::new(args[0])
        .args(&args[1..])
        .current_dir(dir)
        .output()
    {
        Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => {
            eprintln!(
                "skipped: {args:?} failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            None
        }
        Err(e) => {
            eprintln!("skipped: {args:?}: {e}");
            None
        }
    }
}

/// `perf record -F 4000 --call-graph CALL_GRAPH -o OUT PROGRAM…` in `dir`, with cycles
/// where the PMU counts, else the CPU clock; the capture's path.
pub fn perf_record(dir: &Path, call_graph: &str, out: &str, program: &[&str]) -> Option<PathBuf> {
    for event in ["cycles", "cpu-clock"] {
        let mut args = vec![
            "perf",
            "record",
            "-q",
            "-e",
            event,
            "-F",
            "4000",
            "--call-graph",
            call_graph,
            "-o",
            out,
        ];
        args.extend_from_slice(program);
        if run_in(dir, &args).is_some() {
            return Some(dir.join(out));
        }
    }
    None
}
