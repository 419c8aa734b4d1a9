//! DWARF unwinding of a real capture: `../shared/fixtures/callchain/`'s static binary,
//! recorded with `perf record --call-graph dwarf` on another machine. Our stacks must
//! agree with perfparser's (another unwinder; its expected output is beside the file) for
//! every sample it unwinds to `_start`, each of those naming `main`, every sample
//! reaching its root, and `main` at least as often as perf 6.1 does on the same file (its
//! output with `--symfs` is beside it too). Skips, saying so,
//! when the fixtures are absent.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::collections::HashMap;

use sparkles_perf_data::{PerfData, Record};
use sparkles_report::stacks::{StackNamer, StackOptions};
use sparkles_unwind::Mode;

#[path = "../../testdata/support/callchain_fixture.rs"]
mod callchain_fixture;

/// perfparser's expected output: per sample time (ns), the user frame addresses (the
/// leaf's IP, then call sites: return addresses minus one, as `Frame::lookup`) and
/// whether it reached `_start`.
fn perfparser(text: &str) -> HashMap<u64, (Vec<u64>, bool)> {
    let mut out = HashMap::new();
    let mut current: Option<(u64, Vec<u64>, bool)> = None;
    for line in text.lines() {
        if !line.starts_with('\t') && !line.is_empty() {
            if let Some((t, f, root)) = current.take() {
                out.insert(t, (f, root));
            }
            // comm \t pid \t tid \t seconds.nanoseconds
            let time = line.rsplit('\t').next().unwrap();
            let (s, ns) = time.split_once('.').unwrap();
            let t = s.parse::<u64>().unwrap() * 1_000_000_000 + ns.parse::<u64>().unwrap();
            current = Some((t, Vec::new(), false));
            continue;
        }
        let Some((_, frames, root)) = current.as_mut() else {
            continue;
        };
        // A frame's own line: "\tADDR ADDR\t…" with both addresses equal.
        let body = line.trim_start_matches('\t');
        let mut words = body.split(['\t', ' ']);
        if let (Some(a), Some(b)) = (words.next(), words.next()) {
            if a == b && a != "0" {
                let addr = u64::from_str_radix(a, 16).unwrap();
                // Inlined frames repeat their physical frame's address: one frame each.
                if addr < 0xffff_8000_0000_0000 && frames.last() != Some(&addr) {
                    frames.push(addr);
                }
            }
        }
        if body.contains("\t_start ") {
            *root = true;
        }
    }
    if let Some((t, f, root)) = current {
        out.insert(t, (f, root));
    }
    out
}

#[test]
fn stacks_agree_with_perfparser_and_reach_main_as_often_as_perf() {
    let Some(dir) = callchain_fixture::callchain_dir() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    callchain_fixture::place_binary(&dir, tmp.path());
    let data = PerfData::open(dir.join("vector_static_gcc.dwarf.perf.data")).unwrap();

    let expected = perfparser(
        &std::fs::read_to_string(dir.join("vector_static_gcc.perfparser.expected.txt")).unwrap(),
    );
    let mut namer = StackNamer::for_capture(
        &data,
        &StackOptions {
            unwind: Mode::Auto,
            symfs: Some(tmp.path().to_path_buf()),
            ..StackOptions::default()
        },
    );
    let (mut compared, mut ours_reach_main, mut compared_reach_main) = (0, 0, 0);
    data.for_each_record(|e| {
        namer.observe(&e.record);
        let Record::Sample(s) = &e.record else {
            return Ok::<(), sparkles_perf_data::Error>(());
        };
        let stack = namer.unwind(s);
        let user: Vec<u64> = stack
            .frames
            .iter()
            .filter(|f| !f.kernel)
            .map(|f| f.lookup)
            .collect();
        let reaches_main = namer
            .name(s.pid.unwrap(), &stack)
            .frames
            .iter()
            .any(|fr| fr.function.as_deref() == Some("main"));
        ours_reach_main += usize::from(reaches_main);
        if let Some((theirs, true)) = expected.get(&s.time.unwrap()) {
            assert_eq!(
                &user,
                theirs,
                "sample at {}: ours {:x?}, perfparser {:x?}",
                s.time.unwrap(),
                user,
                theirs
            );
            assert_eq!(stack.truncated, None, "reached _start, so complete");
            compared += 1;
            compared_reach_main += usize::from(reaches_main);
        }
        Ok(())
    })
    .unwrap();
    let fully = expected.values().filter(|(_, root)| *root).count();
    assert!(fully >= 40, "perfparser unwound {fully} samples fully");
    assert_eq!(compared, fully, "every fully unwound sample compared");
    // perf 6.1's output on the same file: samples whose stack has main.
    let perf =
        std::fs::read_to_string(dir.join("vector_static_gcc.perf61-script-symfs.txt")).unwrap();
    let perf_main = perf
        .split("\n\n")
        .filter(|b| {
            b.lines().any(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|s| s == "main" || s.starts_with("main+"))
            })
        })
        .count();
    eprintln!(
        "{compared} samples agree with perfparser; {ours_reach_main} reach main (perf 6.1: {perf_main}); {}",
        namer.unwind_stats().summary()
    );
    assert!(ours_reach_main >= perf_main);
    // Every sample perfparser unwound to `_start` passes through main (the program does
    // all its work there): every one of them names it. And every sample of the file
    // unwinds to its root.
    assert_eq!(
        compared_reach_main, compared,
        "fully unwound samples that name main"
    );
    let unwound = namer.unwind_stats();
    assert_eq!(unwound.complete, unwound.samples, "{}", unwound.summary());
}
