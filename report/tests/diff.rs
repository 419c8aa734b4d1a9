//! The hot-function diff: a planted regression (one function doing three times the work)
//! is the top mover with a significant verdict; two runs of the same code give no
//! significant mover; names that differ only by what a rebuild changes (Rust's hash,
//! `.llvm.N`) are one function. The first two record `testdata/report/hotspots.c` with
//! perf and skip, saying so, without gcc or perf.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};

use sparkles_report::diff::diff;
use sparkles_report::names::Names;
use sparkles_report::profile::{profile_capture, Builder, Profile, Unwinding};
use sparkles_report::stacks::{NamedFrame, StackOptions};

#[path = "../../testdata/support/commands.rs"]
mod commands;
use commands::{perf_record, run_in};

/// Builds hotspots.c with `defines` as `bin` and records it into `out`.
fn profile_of(dir: &Path, bin: &str, defines: &[&str], out: &str) -> Option<Profile> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/report/hotspots.c");
    if !Path::new(&dir.join(bin)).is_file() {
        let mut args = vec!["gcc", "-O2", "-g"];
        args.extend_from_slice(defines);
        args.extend_from_slice(&["-o", bin, src.to_str().unwrap()]);
        run_in(dir, &args)?;
    }
    let program = format!("./{bin}");
    perf_record(dir, "dwarf", out, &program, 0.45)?;
    let (p, _) = profile_capture(&dir.join(out), out, &StackOptions::default()).unwrap();
    Some(p)
}

#[test]
fn a_planted_regression_is_the_top_significant_mover_and_reruns_are_noise() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let Some(base) = profile_of(dir, "before", &[], "base.data") else {
        return;
    };
    let Some(again) = profile_of(dir, "before", &[], "again.data") else {
        return;
    };
    let Some(slower) = profile_of(dir, "after", &["-DTWO_UNITS=6"], "slower.data") else {
        return;
    };
    // The same code twice: nothing significant.
    let same = diff("rerun", &base, &again);
    let found: Vec<_> = same.significant().collect();
    assert!(
        found.is_empty(),
        "same code, significant movers: {found:#?}"
    );

    // `two` does three times the work: it is the top mover, significant, and grew (by
    // its symbol: the loop itself is a helper inlined into all four functions).
    let d = diff("regression", &base, &slower);
    let top = &d.movers[0];
    eprintln!(
        "top mover: {} {:.1}% -> {:.1}% (z {:.1}); next: {:?}",
        top.name,
        top.base_pct,
        top.new_pct,
        top.z,
        d.movers
            .get(1)
            .map(|m| (&m.name, m.change_pp, m.significant))
    );
    assert_eq!(top.name, "two", "{:#?}", &d.movers[..3]);
    assert!(top.significant && top.change_pp > 10.0, "{top:?}");
}

/// A frame whose names are interned in `names` (one table for all a profile's frames).
fn frame(names: &mut Names, name: &str) -> NamedFrame {
    NamedFrame {
        addr: 0x1000,
        function: Some(names.intern(name)),
        module: Some(names.intern("/bin/app")),
        file: None,
        line: None,
        inlined: false,
        symbol: Some(names.intern(name)),
        symbol_offset: None,
        missing: None,
    }
}

#[test]
fn a_rebuild_that_changes_hashes_moves_nothing() {
    let build = |hash: &str, llvm: &str| {
        let mut b = Builder::new();
        let mut names = Names::new();
        let mut frame = |name: &str| frame(&mut names, name);
        for i in 0..1000u64 {
            let leaf = if i % 4 == 0 {
                format!("app::parse::{hash}")
            } else {
                format!("app::hot_loop{llvm}")
            };
            b.add(
                &[frame(&leaf), frame(&format!("app::main::{hash}"))],
                false,
                1,
            );
        }
        b.finish("rebuild", "cycles", 0, Unwinding::default()).0
    };
    let before = build("h0123456789abcdef", ".llvm.1111");
    let after = build("hfedcba9876543210", ".llvm.2222");
    let names: Vec<&str> = after.functions.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["app::hot_loop", "app::parse", "app::main"]);
    let d = diff("rebuild", &before, &after);
    assert_eq!(d.movers.len(), 3, "one row per function, not per hash");
    assert_eq!(d.significant().count(), 0);
    assert!(d.movers.iter().all(|m| m.change_pp == 0.0));
}
