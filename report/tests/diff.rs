//! The hot-function diff: a planted regression (one function doing three times the work)
//! is the top mover with a significant verdict; two runs of the same code give no
//! significant mover; names that differ only by what a rebuild changes (Rust's hash,
//! `.llvm.N`) are one function. The first two record `testdata/report/hotspots.c` with
//! perf and skip, saying so, without gcc or perf.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};

use sparkles_report::capture::profile_capture;
use sparkles_report::diff::diff;
use sparkles_report::names::Names;
use sparkles_report::profile::{Blocks, Builder, Profile, Unwinding};
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
    record_program(dir, "hotspots.c", bin, defines, out, 0.45, samples)
}

/// Builds `testdata/report/SOURCE` with `defines` as `bin` and records about `samples`
/// samples of it into `out`, each of its runs about `seconds`.
fn record_program(
    dir: &Path,
    source: &str,
    bin: &str,
    defines: &[&str],
    out: &str,
    seconds: f64,
    samples: u64,
) -> Option<Profile> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/report")
        .join(source);
    if !Path::new(&dir.join(bin)).is_file() {
        let mut args = vec!["gcc", "-O2", "-g"];
        args.extend_from_slice(defines);
        args.extend_from_slice(&["-o", bin, src.to_str().unwrap()]);
        run_in(dir, &args)?;
    }
    let program = format!("./{bin}");
    if samples == commands::SAMPLES {
        perf_record(dir, "dwarf", out, &program, seconds)?;
    } else {
        // Many samples, quickly: up to 16 kHz where the kernel allows it.
        perf_record_samples(dir, "fp", out, &program, seconds, samples, 16_000)?;
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
        "{} and {} samples; top mover {} {:.2}% -> {:.2}% (t {:.1}, p {:.1e}); blocks: {:?}",
        d.base_samples,
        d.new_samples,
        top.name,
        top.base_pct,
        top.new_pct,
        top.z,
        top.p_value,
        d.blocks
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

/// A program in phases (`phases.c`: rounds of a phase of `alpha`, then one of `beta`),
/// recorded twice as it is and once with its beta phase
/// doubled: the two recordings of the same code give no significant mover, and the
/// doubled phase (beta from about half of the samples to two thirds) is found and ranks
/// first. Blocks of a twentieth of the capture are about a phase long, so their shares
/// swing between the phases; blocks that fit the program hold whole rounds.
#[test]
fn a_doubled_phase_is_found_and_reruns_of_a_phased_program_are_noise() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // About fifty rounds at 16 kHz (more where the kernel allows less): on a busy machine
    // a round's samples vary with what runs beside it, and blocks of several rounds and
    // many of them keep that edge noise small.
    let n = 20_000;
    let record = |bin: &str, defines: &[&str], out: &str| {
        record_program(dir, "phases.c", bin, defines, out, 0.025, n)
    };
    let Some(base) = record("phases", &[], "base.data") else {
        return;
    };
    let Some(again) = record("phases", &[], "again.data") else {
        return;
    };
    let Some(doubled) = record("doubled", &["-DBETA_ITERS=(2*BASE_ITERS)"], "doubled.data") else {
        return;
    };
    let blocks = |p: &Profile| (p.block_samples.len(), p.blocked_by);
    eprintln!(
        "blocks: base {:?}, again {:?}, doubled {:?}",
        blocks(&base),
        blocks(&again),
        blocks(&doubled)
    );
    let same = diff("rerun", &base, &again);
    let found: Vec<_> = same.significant().collect();
    assert!(
        found.is_empty(),
        "same code, significant movers: {found:#?}"
    );
    let d = diff("doubled phase", &base, &doubled);
    let top = &d.movers[0];
    eprintln!(
        "{} and {} samples; top mover {} {:.1}% -> {:.1}% (t {:.1}, p {:.1e})",
        d.base_samples, d.new_samples, top.name, top.base_pct, top.new_pct, top.z, top.p_value
    );
    // The same captures cut in twentieths, as the diff first did: for the record.
    let twentieths = |out: &str| {
        let options = StackOptions {
            blocks: Blocks::Samples,
            ..StackOptions::default()
        };
        profile_capture(&dir.join(out), out, &options).unwrap().0
    };
    let before = diff(
        "doubled phase",
        &twentieths("base.data"),
        &twentieths("doubled.data"),
    );
    let beta = before.movers.iter().find(|m| m.name == "beta").unwrap();
    eprintln!(
        "in twentieths: beta {:+.1} pp, t {:.1}, p {:.1e}, significant {}",
        beta.change_pp, beta.z, beta.p_value, beta.significant
    );
    assert!(
        ["alpha", "beta"].contains(&top.name.as_str()),
        "{:#?}",
        &d.movers[..3]
    );
    assert!(top.significant && top.change_pp.abs() > 10.0, "{top:?}");
    // Alpha's fall and beta's rise are the one change: the top mover is either.
    let beta = d.movers.iter().find(|m| m.name == "beta").unwrap();
    assert!(beta.change_pp > 10.0, "{beta:?}");
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

/// A synthetic capture of 60,000 samples (fifteen seconds at 4 kHz) of a program in rounds, as scripts run: each
/// round a phase of `alpha` (2,000 samples) then one of `beta` (`beta_len`), each phase's
/// length off by up to a tenth at random, the capture starting anywhere in a round; in
/// its phase a function takes 60% of the samples, `rest` the others.
fn synthetic_rounds(seed: u64, beta_len: f64) -> Profile {
    rounds(seed, beta_len, false)
}

/// [`synthetic_rounds`], its blocks cut as twentieths of the samples where `twentieths`.
fn rounds(seed: u64, beta_len: f64, twentieths: bool) -> Profile {
    let mut rng = Rng(seed);
    let mut b = Builder::new();
    if twentieths {
        b.cut_blocks(Blocks::Samples);
    }
    let mut names = Names::new();
    let [alpha, beta, rest, main] = ["alpha", "beta", "rest", "main"].map(|n| frame(&mut names, n));
    let jitter = |rng: &mut Rng, len: f64| (len * (0.9 + 0.2 * rng.next())) as u64;
    let mut in_beta = rng.next() < 0.5;
    let mut left = (rng.next() * if in_beta { beta_len } else { 2000.0 }) as u64;
    for _ in 0..60_000 {
        while left == 0 {
            in_beta = !in_beta;
            left = jitter(&mut rng, if in_beta { beta_len } else { 2000.0 });
        }
        left -= 1;
        let leaf = match (rng.next() < 0.6, in_beta) {
            (true, false) => &alpha,
            (true, true) => &beta,
            _ => &rest,
        };
        b.add(&[leaf.clone(), main.clone()], false, 1);
    }
    b.finish("rounds", "cycles", 0, Unwinding::default()).0
}

/// Rounds of phases longer than a twentieth of the capture: two captures of the same
/// program give a significant mover in almost no pair, and a doubled phase (beta from 30%
/// of the samples to 40%) is found in almost every one, where blocks of a twentieth of
/// the capture (half a round: one phase or the other) find it in few.
#[test]
fn rounds_of_long_phases_are_not_movers_and_a_doubled_phase_is() {
    let pairs = 60;
    let (mut false_found, mut found, mut found_by_twentieths) = (0, 0, 0);
    for pair in 0..pairs {
        let base = synthetic_rounds(2 * pair, 2000.0);
        let same = synthetic_rounds(2 * pair + 1, 2000.0);
        if diff("a/a", &base, &same).significant().count() > 0 {
            false_found += 1;
        }
        let doubled = synthetic_rounds(1000 + pair, 4000.0);
        let d = diff("a/b", &base, &doubled);
        if d.movers
            .iter()
            .any(|m| m.name == "beta" && m.significant && m.change_pp > 5.0)
        {
            found += 1;
        }
        let d = diff(
            "a/b",
            &rounds(2 * pair, 2000.0, true),
            &rounds(1000 + pair, 4000.0, true),
        );
        if d.movers.iter().any(|m| m.name == "beta" && m.significant) {
            found_by_twentieths += 1;
        }
    }
    eprintln!(
        "{pairs} pairs: {false_found} A/A with a significant mover; doubled phase found in          {found} (blocks of a twentieth: {found_by_twentieths})"
    );
    assert!(false_found * 100 <= pairs * 5, "{false_found} of {pairs}");
    assert!(found * 100 >= pairs * 95, "{found} of {pairs}");
    assert!(
        found_by_twentieths * 2 < pairs,
        "{found_by_twentieths} of {pairs}"
    );
}

/// A capture of three repeats of its work (a bench pass of three slow iterations) is too
/// few to cut into blocks of whole ones: it keeps twentieths of its samples, and both its
/// profile and a diff against it say why.
#[test]
fn too_few_repeats_keep_twentieths_and_say_so() {
    let profile = |repeats: u64| {
        let mut b = Builder::new();
        b.cut_blocks(Blocks::Repeats(repeats));
        let mut names = Names::new();
        let [work, main] = ["work", "main"].map(|n| frame(&mut names, n));
        for _ in 0..4_000 {
            b.add(&[work.clone(), main.clone()], false, 1);
        }
        b.finish("slow", "cycles", 0, Unwinding::default()).0
    };
    let few = profile(3);
    assert_eq!(
        few.blocked_by,
        Some(sparkles_report::profile::BlockedBy::Samples)
    );
    assert_eq!(few.block_samples.len(), sparkles_report::profile::BLOCKS);
    let round = few.round_samples.unwrap();
    assert!((round - 4_000.0 / 3.0).abs() < 1.0, "{round}");
    assert!(
        few.notes.iter().any(|n| n.contains("3.0 repeats")),
        "{:?}",
        few.notes
    );
    let many = profile(100);
    assert_eq!(
        many.blocked_by,
        Some(sparkles_report::profile::BlockedBy::Iterations)
    );
    assert!(many.notes.is_empty(), "{:?}", many.notes);
    let d = diff("slow", &many, &few);
    assert!(
        d.warnings
            .iter()
            .any(|w| w.starts_with("new: ") && w.contains("3.0 repeats")),
        "{:?}",
        d.warnings
    );
    assert!(!d
        .warnings
        .iter()
        .any(|w| w.starts_with("base: the capture")));
}
