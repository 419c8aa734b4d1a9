//! A run cut short loses nothing: SIGINT or SIGTERM in the timing, counting or profile
//! pass of a run that saves a baseline ends it with status 130 or 143, every file of the
//! earlier run as it was and no temporary file left; a full disk and a read-only output
//! folder are errors naming the file, with the old files intact. Each test runs this
//! test binary again as the child that runs a small suite
//! (`child_runs_the_suite`), watches its standard error for the line that starts
//! the pass, and interrupts it there.

#![cfg(target_os = "linux")] // signals and tmpfs are Linux's here
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

#[path = "../../testdata/support/interrupt.rs"]
mod interrupt;

#[path = "../../testdata/support/tmpfs.rs"]
mod tmpfs;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use interrupt::{assert_untouched, files_under, temporaries_under, Watched};

/// Set in the child's environment: its harness flags, separated by newlines.
const CHILD: &str = "SPARKLES_INTERRUPTED_ARGS";

/// The baseline both runs save.
const BASELINE: &str = "b";

/// Set in the child's environment where an iteration spins longer than a millisecond.
const SPIN_MS: &str = "SPARKLES_INTERRUPTED_SPIN_MS";

/// The child: a suite of one case that spins for a millisecond per iteration (or
/// [`SPIN_MS`]), so that a pass of many samples or brackets lasts until it is
/// interrupted, run with the flags the parent gives; its exit status is the harness's.
#[test]
#[ignore = "the child the tests below run and interrupt"]
fn child_runs_the_suite() {
    let flags = std::env::var(CHILD).expect("run by the tests below, which set the flags");
    let spin = std::env::var(SPIN_MS).map_or(1, |ms| ms.parse().unwrap());
    let mut suite = sparkles_bench::Suite::new("interrupted");
    suite.case("spins", move |b| {
        b.iter(|| {
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(spin) {
                std::hint::spin_loop();
            }
        })
    });
    let args = std::iter::once("bench").chain(flags.lines());
    std::process::exit(sparkles_bench::run_main(suite, args));
}

/// The child, measuring into `out` and saving baseline [`BASELINE`], with `extra` flags.
fn child(out: &Path, extra: &[&str]) -> Command {
    let mut flags = vec![
        "--bench",
        "--bench-min-time",
        "1ms",
        "--out-dir",
        out.to_str().unwrap(),
        "--save-baseline",
        BASELINE,
    ];
    flags.extend(extra);
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--ignored",
            "--exact",
            "child_runs_the_suite",
            "--nocapture",
        ])
        .env(CHILD, flags.join("\n"));
    command
}

/// A whole run into `out` (three samples, one bracket), with `extra` flags: the earlier
/// run whose files an interrupted one must leave alone.
fn earlier_run(out: &Path, extra: &[&str]) {
    let mut flags = vec!["--samples", "3", "--count-brackets", "1"];
    flags.extend(extra);
    let (status, stderr) = Watched::start(&mut child(out, &flags)).finish();
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(
        out.join("baselines/b/interrupted.jsonl").is_file(),
        "{stderr}"
    );
}

/// Runs `child` (measuring into `out`), waits for `line` on its standard error, sends
/// `signal` and checks what the run left: the exit status, the line that says what was
/// kept, every file of the earlier run as it was, no temporary file.
fn interrupt_at(out: &Path, child: &mut Command, line: &str, signal: i32) {
    let before = files_under(out);
    let mut run = Watched::start(child);
    let seen = run.wait_for(|l| l.starts_with(line));
    assert!(seen.is_some(), "'{line}' never printed:\n{}", run.stderr);
    run.signal(signal);
    let (status, stderr) = run.finish();
    assert_stopped(out, &before, status, &stderr, signal);
}

/// The exit status is 128 + `signal`, the run said what it kept, and it kept it.
fn assert_stopped(
    out: &Path,
    before: &std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>,
    status: std::process::ExitStatus,
    stderr: &str,
    signal: i32,
) {
    assert_eq!(status.code(), Some(128 + signal), "{status:?}\n{stderr}");
    let name = if signal == libc::SIGINT {
        "SIGINT"
    } else {
        "SIGTERM"
    };
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with(&format!("sparkles: interrupted by {name}: nothing saved")))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains("baselines/b/interrupted.jsonl"),
        "{stderr}"
    );
    assert_untouched(out, before, stderr);
    assert_eq!(temporaries_under(out), Vec::<std::path::PathBuf>::new());
}

#[test]
fn sigint_in_the_timing_pass_keeps_the_earlier_baseline() {
    let dir = tempfile::tempdir().unwrap();
    earlier_run(dir.path(), &[]);
    // A million samples of a millisecond: still timing when the signal comes.
    interrupt_at(
        dir.path(),
        &mut child(dir.path(), &["--samples", "1000000"]),
        "sparkles: timing pass",
        libc::SIGINT,
    );
}

#[test]
fn sigterm_in_the_counting_pass_keeps_the_earlier_baseline() {
    let dir = tempfile::tempdir().unwrap();
    earlier_run(dir.path(), &[]);
    // A bracket holds at least one iteration: a thousand of a second each.
    interrupt_at(
        dir.path(),
        child(dir.path(), &["--samples", "2", "--count-brackets", "1000"]).env(SPIN_MS, "1000"),
        "sparkles: counting pass",
        libc::SIGTERM,
    );
}

/// The profile pass streams its capture to a temporary file: the signal comes once that
/// file exists, and the capture of the earlier run is what is left.
#[test]
fn sigint_while_a_capture_streams_keeps_the_earlier_capture() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    earlier_run(out, &["--profile", "--profile-time", "100ms"]);
    let capture = out.join("profile/spins/capture.perf.data");
    if !capture.is_file() {
        skip::skip(
            "perf_event",
            "the earlier run wrote no capture (sampling refused here)",
        );
        return;
    }
    let before = files_under(out);
    let flags = [
        "--samples",
        "3",
        "--count-brackets",
        "1",
        "--profile",
        "--profile-time",
        "600s",
    ];
    let mut run = Watched::start(&mut child(out, &flags));
    assert!(
        run.wait_for(|l| l.starts_with("sparkles: profile pass"))
            .is_some(),
        "{}",
        run.stderr
    );
    let streaming = run.wait_until(|| !temporaries_under(&out.join("profile/spins")).is_empty());
    assert!(streaming, "no capture streamed:\n{}", run.stderr);
    run.signal(libc::SIGINT);
    let (status, stderr) = run.finish();
    assert_stopped(out, &before, status, &stderr, libc::SIGINT);
    sparkles_perf_data::PerfData::open(&capture).unwrap();
}

/// On a full disk the baseline cannot be saved: an error naming its file (not a
/// temporary one), status 2, the old baseline as it was.
#[test]
fn a_full_disk_is_an_error_naming_the_file_and_the_old_baseline_stays() {
    let Some(fs) = tmpfs::Tmpfs::mount("1m") else {
        return;
    };
    earlier_run(fs.path(), &["--no-report"]);
    fs.fill();
    let before = files_under(fs.path());
    let (status, stderr) = Watched::start(&mut child(fs.path(), &["--samples", "3"])).finish();
    assert_eq!(status.code(), Some(2), "{status:?}\n{stderr}");
    let error = stderr.lines().find(|l| l.starts_with("error: ")).unwrap();
    assert!(
        error.contains("baselines/b/interrupted.jsonl") && error.contains("No space left"),
        "{stderr}"
    );
    assert!(!stderr.contains(".sparkles-"), "{stderr}");
    assert_untouched(fs.path(), &before, &stderr);
    assert_eq!(
        temporaries_under(fs.path()),
        Vec::<std::path::PathBuf>::new()
    );
}

/// Outputs asked for that land on a full disk (the case's profile folder and the report
/// folder linked there, the history kept there): the run writes what it can (its rows,
/// its baseline), names each file it could not write with the error, and exits 1.
#[test]
fn outputs_that_cannot_be_written_fail_the_run_after_the_rest_is_written() {
    let Some(fs) = tmpfs::Tmpfs::mount("1m") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    for (link, target) in [("profile/spins", "capture"), ("report", "report")] {
        std::fs::create_dir_all(fs.path().join(target)).unwrap();
        let link = out.join(link);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(fs.path().join(target), link).unwrap();
    }
    let history = fs.path().join("history");
    std::fs::create_dir_all(&history).unwrap();
    fs.fill();
    let flags = [
        "--samples",
        "3",
        "--count-brackets",
        "1",
        "--profile",
        "--profile-time",
        "100ms",
        "--history-dir",
        history.to_str().unwrap(),
    ];
    let (status, stderr) = Watched::start(&mut child(out, &flags)).finish();
    // A build that samples (the kernel edge, on Linux) asked for a capture too; one that
    // does not says why and is no failure of its own.
    let samples = cfg!(all(feature = "perf", target_os = "linux"));
    if !samples {
        skip::skip(
            "kernel_edge",
            "this build samples nothing: the capture's part is not tested",
        );
    } else if stderr.contains("no capture:") && !stderr.contains("No space left") {
        skip::skip("perf_event", format!("sampling refused here: {stderr}"));
        return;
    }
    assert_eq!(status.code(), Some(1), "{status:?}\n{stderr}");
    let said: Vec<&str> = stderr
        .lines()
        .skip_while(|l| !l.contains("asked for not written, exit status 1"))
        .collect();
    let outputs = if samples { 3 } else { 2 };
    assert!(
        said[0].starts_with(&format!("sparkles: {outputs} outputs")),
        "{stderr}"
    );
    let capture = ("profile of spins: ", "capture.perf.data");
    for (what, file) in [
        ("history line: ", "history"),
        ("run report: ", "index.html"),
    ]
    .into_iter()
    .chain(samples.then_some(capture))
    {
        assert!(
            said.iter().any(|l| l.trim_start().starts_with(what)
                && l.contains(file)
                && l.contains("No space left")),
            "{what}{file}: {stderr}"
        );
    }
    // What could be written was: the rows and the baseline, whole.
    let baseline = std::fs::read_to_string(out.join("baselines/b/interrupted.jsonl")).unwrap();
    assert!(baseline.contains("\"case\":\"spins\""), "{baseline}");
    assert_eq!(temporaries_under(out), Vec::<std::path::PathBuf>::new());
}

/// A read-only output folder: an error naming the file, status 2, the old files intact.
#[test]
fn a_read_only_out_dir_is_an_error_naming_the_file() {
    let Some(ro) = tmpfs::ReadOnly::make(|out| earlier_run(out, &[])) else {
        return;
    };
    let before = files_under(ro.path());
    let (status, stderr) = Watched::start(&mut child(ro.path(), &["--samples", "3"])).finish();
    assert_eq!(status.code(), Some(2), "{status:?}\n{stderr}");
    let error = stderr.lines().find(|l| l.starts_with("error: ")).unwrap();
    assert!(
        error.contains("baselines/b/interrupted.jsonl")
            && (error.contains("Read-only file system") || error.contains("Permission denied")),
        "{stderr}"
    );
    assert_untouched(ro.path(), &before, &stderr);
}
