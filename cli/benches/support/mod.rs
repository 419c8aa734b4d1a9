//! Shared by the unwind, report and memory benches: a capture `perf record --call-graph
//! dwarf` makes of `testdata/unwind/callchains.c`, recorded once into the bench-data
//! folder, and running a peer tool's shell pipeline. Each bench uses what it needs.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sparkles_perf_data::sample::{Regs, StackUser};
use sparkles_perf_data::Sample;

#[path = "../../../testdata/support/commands.rs"]
mod commands;

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

/// Samples a capture needs with user registers and a stack copy to be worth measuring.
const MIN_STACK_SAMPLES: usize = 20;

/// A sample's user registers and stack copy, where it has both (a sample of a kernel
/// thread has no user registers; a copy can be empty).
pub fn user_stack<'a, 's>(s: &'s Sample<'a>) -> Option<(&'s Regs<'a>, &'s StackUser<'a>)> {
    match (&s.regs_user, &s.stack_user) {
        (Some(r), Some(st)) if r.abi != 0 && !st.valid().is_empty() => Some((r, st)),
        _ => None,
    }
}

/// Samples in a capture, and those of them with user registers and a stack copy.
pub fn stack_samples(path: &Path) -> Result<(usize, usize), String> {
    use sparkles_perf_data::{PerfData, Record};
    let data = PerfData::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (mut all, mut with_stacks) = (0, 0);
    data.for_each_record(|e| {
        if let Record::Sample(s) = &e.record {
            all += 1;
            with_stacks += usize::from(user_stack(s).is_some());
        }
        Ok::<(), sparkles_perf_data::Error>(())
    })
    .map_err(|e| format!("{}: {e:?}", path.display()))?;
    Ok((all, with_stacks))
}

/// `NAME-ROUNDS.perf.data` in `dir`: the program built with `gcc -O2 -g` and recorded with
/// `perf record -F FREQ --call-graph dwarf,STACK`; each of `rounds` extra arguments is
/// another 240 rounds of the program (about 0.3 s). Where the kernel's frequency limit is
/// below `freq`, more rounds are run, so that the capture still has enough samples. A
/// capture without enough samples with stacks is an error that says what it held, and is
/// not kept. Recorded once, reused after.
pub fn callchains_capture(
    dir: &Path,
    name: &str,
    rounds: usize,
    freq: u32,
    stack: u32,
) -> Result<PathBuf, String> {
    // A run of the program (a round of arguments: argc counts the name) is about 0.25 s.
    let runs = commands::runs_for(4 * MIN_STACK_SAMPLES as u64, u64::from(freq), 0.25);
    let rounds = rounds.max(runs - 1);
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
    let (all, with_stacks) = stack_samples(&tmp)?;
    if with_stacks < MIN_STACK_SAMPLES {
        let _ = std::fs::remove_file(&tmp);
        let limit = sparkles_sampler::session::max_sample_rate()
            .map_or("unreadable".to_string(), |l| format!("{l} Hz"));
        return Err(format!(
            "perf record -F {freq} of {} rounds gave {all} samples, {with_stacks} with a user \
             stack (fewer than {MIN_STACK_SAMPLES}; kernel.perf_event_max_sample_rate: {limit})",
            240 * (rounds + 1)
        ));
    }
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
