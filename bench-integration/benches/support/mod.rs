//! Shared by the unwind, report and memory benches: a capture `perf record --call-graph
//! dwarf` makes of `testdata/unwind/callchains.c`, recorded once into the bench-data
//! folder, and running a peer tool's shell pipeline. Each bench uses what it needs.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn run(dir: &Path, program: &str, args: &[&str]) -> Result<(), String> {
    let status = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("{program}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{program} {args:?} failed ({status})"))
    }
}

/// `NAME-ROUNDS.perf.data` in `dir`: the program built with `gcc -O2 -g` and recorded with
/// `perf record -F FREQ --call-graph dwarf,STACK`; each of `rounds` extra arguments is
/// another 240 rounds of the program (about 0.3 s). Recorded once, reused after.
pub fn callchains_capture(
    dir: &Path,
    name: &str,
    rounds: usize,
    freq: u32,
    stack: u32,
) -> Result<PathBuf, String> {
    let path = dir.join(format!("{name}-{rounds}.perf.data"));
    if path.is_file() {
        return Ok(path);
    }
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/unwind/callchains.c");
    let src = src.to_str().ok_or("source path is not UTF-8")?;
    run(dir, "gcc", &["-O2", "-g", "-o", "callchains", src])?;
    let tmp = path.with_extension("tmp");
    let tmp_s = tmp.to_str().ok_or("path is not UTF-8")?.to_string();
    let (freq, call_graph) = (freq.to_string(), format!("dwarf,{stack}"));
    let mut args = vec![
        "record",
        "-q",
        "-F",
        &freq,
        "--call-graph",
        &call_graph,
        "-o",
        &tmp_s,
        "./callchains",
    ];
    let extra = vec!["x"; rounds];
    args.extend(extra.iter().copied());
    run(dir, "perf", &args)?;
    std::fs::rename(&tmp, &path).map_err(|e| e.to_string())?;
    Ok(path)
}

/// Runs a shell pipeline, its output discarded; the bytes it printed.
pub fn shell(script: &str) -> Result<u64, String> {
    let out = Command::new("sh")
        .args(["-c", script])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("`{script}` failed ({})", out.status));
    }
    Ok(out.stdout.len() as u64)
}
