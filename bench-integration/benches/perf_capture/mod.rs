//! A capture recorded by `perf record --call-graph dwarf` of `sha1sum /dev/zero`, for
//! the benches that read captures (decode, compress).

use std::path::Path;
use std::process::{Command, Stdio};

/// Whether `perf` runs here.
pub fn perf_available() -> bool {
    Command::new("perf")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Records `path` with perf until it holds at least `min_bytes`; `Err` says why not.
pub fn record_capture(
    path: &Path,
    seconds: u32,
    min_bytes: u64,
    extra: &[&str],
) -> Result<(), String> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() >= min_bytes) {
        return Ok(());
    }
    std::fs::create_dir_all(path.parent().unwrap_or(Path::new("."))).map_err(|e| e.to_string())?;
    let tmp = path.with_extension("tmp");
    let status = Command::new("perf")
        .args(["record", "-q", "-F", "4000", "--call-graph", "dwarf,8192"])
        .args(extra)
        .arg("-o")
        .arg(&tmp)
        .args([
            "--",
            "timeout",
            &seconds.to_string(),
            "sha1sum",
            "/dev/zero",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("perf record: {e}"))?;
    // timeout ends sha1sum with status 124; perf passes the workload's status on.
    if !status.success() && status.code() != Some(124) {
        return Err(format!("perf record failed ({status})"));
    }
    let len = std::fs::metadata(&tmp).map_err(|e| e.to_string())?.len();
    if len < min_bytes {
        return Err(format!(
            "perf record wrote {len} bytes, fewer than the {min_bytes} wanted"
        ));
    }
    std::fs::rename(&tmp, path).map_err(|e| e.to_string())
}
