//! `sparkles record` and `sparkles report -o` cut short or out of room: SIGINT or SIGTERM
//! during a record stops the sampling and writes a capture that `sparkles report` and
//! perf read (as `perf record` does on Ctrl-C), exit status 130 or 143; a signal while a
//! report reads its input writes nothing; a full disk and a read-only folder are errors
//! naming the file, with the old file intact; no temporary file is left.

#![cfg(target_os = "linux")] // signals and tmpfs are Linux's here
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;
mod support;

#[path = "../../testdata/support/fixtures.rs"]
mod fixtures;

#[path = "../../testdata/support/interrupt.rs"]
mod interrupt;

#[path = "../../testdata/support/tmpfs.rs"]
mod tmpfs;

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use interrupt::{temporaries_under, Watched};
use support::{perf_reads, refused, sparkles};

const NO_TEMPORARIES: Vec<PathBuf> = Vec::new();

/// `sparkles ARGS…` as a command to start.
fn command(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sparkles"));
    c.args(args);
    c
}

/// Whether `status`/`stderr` of a record that ended before sampling is the kernel's
/// refusal (said, and a skip).
fn refused_here(status: std::process::ExitStatus, stderr: &str) -> bool {
    refused(&Output {
        status,
        stdout: Vec::new(),
        stderr: stderr.as_bytes().to_vec(),
    })
}

/// Records a busy shell loop into a folder, sends `signal` once sampling has started
/// (the line that names the event), and checks the capture written whole: exit status
/// 128 + `signal`, the line that says so, read by `sparkles report` and by perf.
fn record_interrupted_by(signal: i32, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.perf.data");
    std::fs::write(&path, b"an earlier capture").unwrap();
    let mut run = Watched::start(&mut command(&[
        "record",
        "-F",
        "1000",
        "-o",
        path.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "while :; do :; done",
    ]));
    if run
        .wait_for(|l| l.starts_with("sparkles record: event"))
        .is_none()
    {
        let (status, stderr) = run.finish();
        assert!(refused_here(status, &stderr), "{status:?}\n{stderr}");
        return;
    }
    run.signal(signal);
    let (status, stderr) = run.finish();
    assert_eq!(status.code(), Some(128 + signal), "{status:?}\n{stderr}");
    let said = format!(
        "sparkles: interrupted by {name}: sampling stopped; the capture written whole to {}",
        path.display()
    );
    assert!(stderr.lines().any(|l| l == said), "{stderr}");
    assert_eq!(temporaries_under(dir.path()), NO_TEMPORARIES);
    let report = sparkles(&["report", path.to_str().unwrap()]);
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    if Command::new("perf").arg("--version").output().is_err() {
        skip::skip(
            "perf",
            "perf is not installed: the capture not read by perf",
        );
    } else {
        perf_reads(&path);
    }
}

#[test]
fn sigint_stops_a_record_and_its_capture_reads() {
    record_interrupted_by(libc::SIGINT, "SIGINT");
}

#[test]
fn sigterm_stops_a_record_and_its_capture_reads() {
    record_interrupted_by(libc::SIGTERM, "SIGTERM");
}

/// The error of a command that could not write `path`: exit status 2, one `error:`
/// line naming `path` (not a temporary file) and saying `why`.
fn assert_not_written(out: &Output, path: &Path, why: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let error = stderr.lines().find(|l| l.starts_with("error: ")).unwrap();
    assert!(error.contains(path.to_str().unwrap()), "{stderr}");
    assert!(why.iter().any(|w| error.contains(w)), "{stderr}");
    assert!(!stderr.contains(".sparkles-"), "{stderr}");
}

#[test]
fn a_record_onto_a_full_disk_names_the_capture_and_keeps_the_old_one() {
    let Some(fs) = tmpfs::Tmpfs::mount("1m") else {
        return;
    };
    let path = fs.path().join("x.perf.data");
    std::fs::write(&path, b"an earlier capture").unwrap();
    fs.fill();
    let out = sparkles(&["record", "-o", path.to_str().unwrap(), "--", "true"]);
    if refused(&out) {
        return;
    }
    assert_not_written(&out, &path, &["No space left"]);
    assert_eq!(std::fs::read(&path).unwrap(), b"an earlier capture");
    assert_eq!(temporaries_under(fs.path()), NO_TEMPORARIES);
}

/// A small capture of the shared fixtures, or `None` (said) where they are absent.
fn capture() -> Option<PathBuf> {
    Some(fixtures::fixtures()?.join("pebs/ivb-ep-mem-loads.perf.data"))
}

#[test]
fn a_report_onto_a_full_disk_or_a_read_only_folder_names_the_file() {
    let Some(capture) = capture() else { return };
    let capture = capture.to_str().unwrap();
    let old = b"an earlier flamegraph";
    if let Some(fs) = tmpfs::Tmpfs::mount("1m") {
        let path = fs.path().join("x.svg");
        std::fs::write(&path, old).unwrap();
        fs.fill();
        let out = sparkles(&[
            "report",
            capture,
            "--format",
            "svg",
            "-o",
            path.to_str().unwrap(),
        ]);
        assert_not_written(&out, &path, &["No space left"]);
        assert_eq!(std::fs::read(&path).unwrap(), old);
        assert_eq!(temporaries_under(fs.path()), NO_TEMPORARIES);
    }
    let Some(ro) = tmpfs::ReadOnly::make(|dir| std::fs::write(dir.join("x.svg"), old).unwrap())
    else {
        return;
    };
    let path = ro.path().join("x.svg");
    let out = sparkles(&[
        "report",
        capture,
        "--format",
        "svg",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert_not_written(&out, &path, &["Read-only file system", "Permission denied"]);
    assert_eq!(std::fs::read(&path).unwrap(), old);
}

/// A report reading its capture from a pipe has written nothing before the pipe ends:
/// SIGINT then ends it as the signal does (status 130 in a shell), the old output
/// untouched, no temporary file.
#[test]
fn sigint_while_a_report_reads_leaves_the_old_output() {
    let Some(capture) = capture() else { return };
    let bytes = std::fs::read(capture).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.svg");
    std::fs::write(&path, b"an earlier flamegraph").unwrap();
    let mut run = Watched::start(
        command(&["report", "/dev/stdin", "--format", "svg", "-o"])
            .arg(&path)
            .stdin(Stdio::piped()),
    );
    let mut input = run.take_stdin();
    // Half the capture: the report waits for the rest (a file-mode capture is read
    // whole), so it is reading when the signal comes.
    input.write_all(&bytes[..bytes.len() / 2]).unwrap();
    run.signal(libc::SIGINT);
    let (status, stderr) = run.finish();
    drop(input);
    let interrupted = status.signal() == Some(libc::SIGINT) || status.code() == Some(130);
    assert!(interrupted, "{status:?}\n{stderr}");
    assert_eq!(std::fs::read(&path).unwrap(), b"an earlier flamegraph");
    assert_eq!(temporaries_under(dir.path()), NO_TEMPORARIES);
}
