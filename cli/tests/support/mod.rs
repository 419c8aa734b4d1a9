//! What the `sparkles` command's test files share: running it, and telling a kernel that
//! refuses sampling from a failure.

#![allow(dead_code)] // each test file uses its own part
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::process::{Command, Output};

/// `sparkles ARGS…`, run to its end.
pub fn sparkles(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sparkles"))
        .args(args)
        .output()
        .unwrap()
}

/// `sparkles ARGS…` that samples (`record`): its output once it succeeded; `None` where
/// the kernel refuses sampling here (said, and counted as a skip).
pub fn recorded(args: &[&str]) -> Option<Output> {
    let out = sparkles(args);
    if refused(&out) {
        return None;
    }
    assert!(
        out.status.success(),
        "sparkles {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(out)
}

/// `sparkles record` refuses to sample here, saying why: the caller skips.
pub fn refused(out: &Output) -> bool {
    let err = String::from_utf8_lossy(&out.stderr);
    // The paranoid level's refusal, a seccomp filter's, or a build without the edge.
    let perf_event = [
        "perf_event_paranoid",
        "EACCES",
        "EPERM",
        "seccomp",
        "perf_event",
    ];
    if !out.status.success() && perf_event.iter().any(|k| err.contains(k)) {
        crate::skip::skip(
            "perf_event",
            format!("the kernel refuses sampling here: {err}"),
        );
        return true;
    }
    false
}

/// perf reads the capture at `path` without a warning of a misread, where perf runs.
pub fn perf_reads(path: &std::path::Path) {
    if let Ok(out) = Command::new("perf")
        .args(["report", "--stdio", "-i"])
        .arg(path)
        .output()
    {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "perf report: {err}");
        // Records the ring buffers dropped under load (LOST, which our summary counts
        // too) make perf warn "lost N chunks": that is the capture read right, not a
        // misread.
        let misread = err
            .lines()
            .filter(|l| !l.trim().is_empty())
            .filter(|l| {
                !l.contains("lost") && !l.contains("IO/CPU overload") && l.trim() != "Warning:"
            })
            .any(|l| l.to_lowercase().contains("warning"));
        assert!(!misread, "{err}");
    }
}

/// ajv's check of a document against a JSON schema: `node validate.js SCHEMA DOC`, in a
/// folder where `npm install ajv@8` put it; its errors on stderr, status 1 where it fails.
pub const AJV_VALIDATE_JS: &str = r#"
const Ajv = require('ajv');
const fs = require('fs');
const schema = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const data = JSON.parse(fs.readFileSync(process.argv[3], 'utf8'));
const ajv = new Ajv({allErrors: true, strict: false});
if (!ajv.validate(schema, data)) {
  console.error(JSON.stringify(ajv.errors.slice(0, 10)));
  process.exit(1);
}
"#;
