//! Unwinding against perf on captures `perf record` makes here of a C program the test
//! builds (`testdata/unwind/callchains.c`: several call depths, recursion, a call through
//! a function pointer): with `--call-graph dwarf`, at least 98% of samples reach `main`,
//! and the leaf function and the caller chain agree with `perf script`'s for at least 98%;
//! a frame-pointer build walked with `--unwind fp` reaches `main` as often. Skips, saying
//! so, without gcc or perf, or where the kernel refuses perf.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use sparkles_perf_data::{PerfData, Record};
use sparkles_report::stacks::{StackNamer, StackOptions};
use sparkles_unwind::Mode;

#[path = "../../testdata/support/commands.rs"]
mod commands;
use commands::{perf_record, run_in};

/// Builds the program with `cflags` and records it with `perf record --call-graph
/// CALL_GRAPH`; the capture's path.
fn record(dir: &Path, cflags: &[&str], call_graph: &str) -> Option<PathBuf> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/unwind/callchains.c");
    let mut args = vec!["gcc", "-O2", "-g"];
    args.extend_from_slice(cflags);
    args.extend_from_slice(&["-o", "callchains", src.to_str().unwrap()]);
    run_in(dir, &args)?;
    perf_record(dir, call_graph, "perf.data", "./callchains", 0.25)
}

/// One user frame: the name given it and, from us, the DWARF function holding it (the
/// outermost of what is inlined there).
#[derive(Debug, Clone, PartialEq)]
struct Frame {
    name: String,
    function: Option<String>,
}

/// `perf script`'s user frames per sample (keyed by its microsecond time), inlined
/// entries left out.
fn perf_stacks(dir: &Path) -> HashMap<String, Vec<Frame>> {
    let out = Command::new("perf")
        .args([
            "script",
            "-i",
            "perf.data",
            "-F",
            "comm,tid,time,ip,sym,dso",
        ])
        .current_dir(dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut stacks = HashMap::new();
    for block in text.split("\n\n") {
        let mut lines = block.lines().filter(|l| !l.trim().is_empty());
        let Some(header) = lines.next() else { continue };
        if !header.starts_with("callchains ") {
            continue;
        }
        let time = header
            .split_whitespace()
            .find(|w| w.ends_with(':'))
            .unwrap()
            .trim_end_matches(':')
            .to_string();
        // perf marks inlined frames "(inlined)" and repeats their physical frame's
        // address; an "(inlined)" line with an address of its own is a frame.
        let mut frames: Vec<Frame> = Vec::new();
        let mut previous = "";
        for l in lines.filter(|l| !l.contains("[kernel.kallsyms]")) {
            let mut words = l.split_whitespace();
            let (Some(ip), Some(name)) = (words.next(), words.next()) else {
                continue;
            };
            if !(l.contains("(inlined)") && ip == previous) {
                frames.push(Frame {
                    name: name.to_string(),
                    function: None,
                });
            }
            previous = ip;
        }
        stacks.insert(time, frames);
    }
    stacks
}

/// Whether our frame is the one perf names: by its symbol (perf keeps a symbol version
/// we take off: `cfree@GLIBC_2.2.5`), or (where perf resolves the frame's inlining from
/// DWARF and marks it "(inlined)", as it does in libc with its debug file installed:
/// `__libc_start_main_impl` for the symbol `__libc_start_main`) by its DWARF function.
/// Ours never carries a symbol version.
fn same_frame(ours: &Frame, perf: &Frame) -> bool {
    let unversioned = perf.name.split('@').next().unwrap_or_default();
    !ours.name.contains('@')
        && (ours.name == unversioned || ours.function.as_deref() == Some(perf.name.as_str()))
}

/// Our user frames per sample of the program: the symbol holding each physical frame
/// (what the profile's `symbols` view counts), as perf names them.
fn our_stacks(path: &Path, mode: Mode) -> (HashMap<String, Vec<Frame>>, String) {
    let data = PerfData::open(path).unwrap();
    let mut namer = StackNamer::for_capture(
        &data,
        &StackOptions {
            unwind: mode,
            ..StackOptions::default()
        },
    );
    let mut comms: HashMap<u32, String> = HashMap::new();
    let mut out = HashMap::new();
    data.for_each_record(|e| {
        namer.observe(&e.record);
        match &e.record {
            Record::Comm { pid, comm, .. } => {
                comms.insert(*pid, String::from_utf8_lossy(comm).into_owned());
            }
            Record::Sample(s) => {
                let pid = s.pid.unwrap();
                if comms.get(&pid).map(String::as_str) != Some("callchains") {
                    return Ok::<(), sparkles_perf_data::Error>(());
                }
                let names: Vec<Frame> = namer
                    .stack(s)
                    .frames
                    .iter()
                    .filter(|f| {
                        !f.inlined
                            && !f
                                .module
                                .as_deref()
                                .is_some_and(|m| m.starts_with("[kernel"))
                    })
                    .map(|f| Frame {
                        name: f.symbol.as_deref().unwrap_or("[unknown]").to_string(),
                        function: f.function.as_deref().map(str::to_string),
                    })
                    .collect();
                let t = s.time.unwrap();
                out.insert(
                    format!("{}.{:06}", t / 1_000_000_000, (t % 1_000_000_000) / 1000),
                    names,
                );
            }
            _ => {}
        }
        Ok(())
    })
    .unwrap();
    (out, namer.unwind_stats().summary())
}

/// The functions of testdata/unwind/callchains.c.
const PROGRAM: [&str; 7] = [
    "main",
    "spin",
    "depth1",
    "depth2",
    "depth3",
    "recurse",
    "through_pointer",
];

/// A sample of the program's own code: its user leaf is one of the program's functions
/// (gcc may add a `.constprop.0`-style suffix). Samples of the dynamic loader's startup
/// (`dl_main`, `_dl_relocate_object`: many, since a frequency starts at period 1) and of
/// the exit handlers run outside `main` and never reach it; samples taken inside
/// `execve` carry the user IP of the image being replaced, in no mapping of the new one.
fn in_program(frames: &[Frame]) -> bool {
    frames
        .first()
        .and_then(|f| f.name.split('.').next())
        .is_some_and(|n| PROGRAM.contains(&n))
}

#[test]
fn dwarf_stacks_reach_main_and_agree_with_perf() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(capture) = record(tmp.path(), &[], "dwarf") else {
        return;
    };
    let theirs = perf_stacks(tmp.path());
    let (ours, stats) = our_stacks(&capture, Mode::Auto);
    let user: Vec<(&String, &Vec<Frame>)> = ours.iter().filter(|(_, n)| in_program(n)).collect();
    assert!(user.len() >= 100, "{} user samples", user.len());
    let main = user
        .iter()
        .filter(|(_, n)| n.iter().any(|f| f.name == "main"))
        .count();
    let (mut compared, mut agree) = (0, 0);
    let mut first_disagreement = None;
    for (time, names) in &user {
        let Some(perf) = theirs.get(*time) else {
            continue;
        };
        compared += 1;
        if perf.len() == names.len() && perf.iter().zip(names.iter()).all(|(p, o)| same_frame(o, p))
        {
            agree += 1;
        } else if first_disagreement.is_none() {
            first_disagreement = Some(format!("{time}: ours {names:?}, perf {perf:?}"));
        }
    }
    let pct = |n: usize, of: usize| 100.0 * n as f64 / of.max(1) as f64;
    eprintln!(
        "dwarf: {} user samples, {:.1}% reach main, {:.1}% of {compared} agree with perf script; {stats}",
        user.len(),
        pct(main, user.len()),
        pct(agree, compared)
    );
    assert!(
        pct(main, user.len()) >= 98.0,
        "{main} of {} reach main",
        user.len()
    );
    assert!(
        compared * 10 >= user.len() * 9,
        "perf named the same samples"
    );
    assert!(
        pct(agree, compared) >= 98.0,
        "{agree} of {compared} agree; first: {}",
        first_disagreement.unwrap_or_default()
    );
}

/// Asserts that at least 98% of the program's samples in `capture`, unwound in `mode`,
/// reach `main`.
fn assert_reach_main(capture: &Path, mode: Mode, what: &str) {
    let (ours, stats) = our_stacks(capture, mode);
    let user: Vec<&Vec<Frame>> = ours.values().filter(|n| in_program(n)).collect();
    let main = user
        .iter()
        .filter(|n| n.iter().any(|f| f.name == "main"))
        .count();
    eprintln!(
        "{what}: {} user samples, {main} reach main; {stats}",
        user.len()
    );
    // The capture is made long enough for about 600 samples (commands::SAMPLES).
    assert!(user.len() >= 100, "{what}: {} user samples", user.len());
    assert!(
        main * 100 >= user.len() * 98,
        "{what}: {main} of {} reach main",
        user.len()
    );
}

#[test]
fn frame_pointer_stacks_reach_main() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(capture) = record(tmp.path(), &["-fno-omit-frame-pointer"], "dwarf") else {
        return;
    };
    assert_reach_main(&capture, Mode::Fp, "fp over the stack copy");
    let tmp = tempfile::tempdir().unwrap();
    let Some(capture) = record(tmp.path(), &["-fno-omit-frame-pointer"], "fp") else {
        return;
    };
    assert_reach_main(&capture, Mode::Auto, "the kernel's fp callchain");
}
