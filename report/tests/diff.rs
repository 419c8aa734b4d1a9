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
use commands::{perf_record, perf_record_samples, run_in};

/// Builds hotspots.c with `defines` as `bin` and records it into `out`.
fn profile_of(dir: &Path, bin: &str, defines: &[&str], out: &str) -> Option<Profile> {
    profile_with(dir, bin, defines, out, commands::SAMPLES)
}

/// [`profile_of`] with about `samples` samples.
fn profile_with(
    dir: &Path,
    bin: &str,
    defines: &[&str],
    out: &str,
    samples: u64,
) -> Option<Profile> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/report/hotspots.c");
    if !Path::new(&dir.join(bin)).is_file() {
        let mut args = vec!["gcc", "-O2", "-g"];
        args.extend_from_slice(defines);
        args.extend_from_slice(&["-o", bin, src.to_str().unwrap()]);
        run_in(dir, &args)?;
    }
    let program = format!("./{bin}");
    if samples == commands::SAMPLES {
        perf_record(dir, "dwarf", out, &program, 0.45)?;
    } else {
        // Many samples, quickly: up to 16 kHz where the kernel allows it.
        perf_record_samples(dir, "fp", out, &program, 0.45, samples, 16_000)?;
    }
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

/// A real program, recorded twice as it is and once with a tenth more work in its
/// hottest function (`eight`, 53% of the samples): the two recordings of the same code
/// give no significant mover, and the tenth more work is found and ranks first. The
/// change in share is about 2.4 points, so each capture holds 60,000 samples (a few
/// seconds at up to 16 kHz; longer where the kernel's limit is low).
#[test]
fn a_tenth_more_work_in_one_function_is_found_and_ranks_first() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let n = 60_000;
    let Some(base) = profile_with(dir, "before", &[], "base.data", n) else {
        return;
    };
    let Some(again) = profile_with(dir, "before", &[], "again.data", n) else {
        return;
    };
    let Some(slower) = profile_with(dir, "tenth", &["-DEIGHT_ITERS=176000ul"], "tenth.data", n)
    else {
        return;
    };
    let same = diff("rerun", &base, &again);
    let found: Vec<_> = same.significant().collect();
    assert!(
        found.is_empty(),
        "same code, significant movers: {found:#?}"
    );
    let d = diff("a tenth more", &base, &slower);
    let top = &d.movers[0];
    eprintln!(
        "{} and {} samples; top mover {} {:.2}% -> {:.2}% (t {:.1}, p {:.1e})",
        d.base_samples, d.new_samples, top.name, top.base_pct, top.new_pct, top.z, top.p_value
    );
    assert_eq!(top.name, "eight", "{:#?}", &d.movers[..3]);
    assert!(top.significant && top.change_pp > 1.0, "{top:?}");
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

/// A small deterministic generator (SplitMix64) for the synthetic captures below.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A synthetic capture of 40,000 samples (ten seconds at 4 kHz) as real ones are:
/// `phased` runs in phases (its rate drawn anew every 1,000 samples, 10% on average,
/// anywhere from 2% to 18%: an allocator's or a collector's), `steady` at `steady`
/// throughout, `rest` the remainder.
fn synthetic(seed: u64, steady: f64) -> Profile {
    let mut rng = Rng(seed);
    let mut b = Builder::new();
    let mut names = Names::new();
    let [phased, steady_f, rest, main] =
        ["phased", "steady", "rest", "main"].map(|n| frame(&mut names, n));
    let mut rate = 0.1;
    for i in 0..40_000 {
        if i % 1000 == 0 {
            rate = 0.02 + 0.16 * rng.next();
        }
        let x = rng.next();
        let leaf = if x < rate {
            &phased
        } else if x < rate + steady {
            &steady_f
        } else {
            &rest
        };
        b.add(&[leaf.clone(), main.clone()], false, 1);
    }
    b.finish("synthetic", "cycles", 0, Unwinding::default()).0
}

/// The statistic on captures whose samples come in phases: two captures of the same
/// program (A/A) almost never give a significant mover, where a binomial test (the same
/// profiles without their block counts) finds one in a quarter of the pairs or more; a steady function doing
/// a tenth more work (30% of the samples to 32.1%) is found, and ranks first.
#[test]
fn phases_are_not_movers_and_a_tenth_more_work_is() {
    let pairs = 60;
    let (mut batch_false, mut binomial_false, mut found_first) = (0, 0, 0);
    for pair in 0..pairs {
        let base = synthetic(2 * pair, 0.3);
        let same = synthetic(2 * pair + 1, 0.3);
        if diff("a/a", &base, &same).significant().count() > 0 {
            batch_false += 1;
        }
        let unblocked = |p: &Profile| Profile {
            block_samples: Vec::new(),
            ..p.clone()
        };
        if diff("a/a", &unblocked(&base), &unblocked(&same))
            .significant()
            .count()
            > 0
        {
            binomial_false += 1;
        }
        // 30% of the time, a tenth more work: 0.33 / 1.03 of the new total.
        let slower = synthetic(1000 + pair, 0.33 / 1.03);
        let d = diff("a/b", &base, &slower);
        if d.movers[0].name == "steady" && d.movers[0].significant {
            found_first += 1;
        }
    }
    eprintln!(
        "{pairs} A/A pairs: {batch_false} with a significant mover by batch means, \
         {binomial_false} by the binomial test; planted +2.1 pp found first in {found_first}"
    );
    assert!(batch_false * 100 <= pairs * 5, "{batch_false} of {pairs}");
    // Where a right test errs in 0.1% of pairs, a binomial one errs in a quarter or more.
    assert!(
        binomial_false * 4 >= pairs,
        "the phases are noise a binomial test calls movers: {binomial_false} of {pairs}"
    );
    assert!(found_first * 100 >= pairs * 95, "{found_first} of {pairs}");
}
