//! A profile counted from interned stacks (each distinct stack's keys and folded line
//! worked out once, repeats only counted) is the profile counted sample by sample.

use sparkles_report::names::Names;
use sparkles_report::profile::{Builder, Unwinding};
use sparkles_report::stacks::NamedFrame;

fn frame(names: &mut Names, name: &str, line: u32, inlined: bool) -> NamedFrame {
    NamedFrame {
        addr: 0x1000,
        function: Some(names.intern(name)),
        module: Some(names.intern(if name.ends_with("_[k]") {
            "[kernel.kallsyms]"
        } else {
            "/bin/app"
        })),
        file: Some(names.intern("app.rs")),
        line: Some(line),
        inlined,
        symbol: Some(names.intern(name.trim_end_matches("_inl"))),
        symbol_offset: None,
        missing: None,
    }
}

#[test]
fn interned_stacks_count_as_stacks_added_one_by_one() {
    let mut names = Names::new();
    // Twelve distinct stacks (some sharing frames, one inlined frame, one recursive, one
    // empty, some truncated), drawn 5,000 times with different weights.
    let leaves = ["alpha", "beta", "gamma_inl", "delta", "epsilon_[k]", "zeta"];
    let stacks: Vec<(Vec<NamedFrame>, bool)> = (0..12)
        .map(|i| {
            if i == 11 {
                return (Vec::new(), false);
            }
            if i == 10 {
                // Recursion (a function and a symbol twice in one stack), and a frame
                // with no file or line before the same function's frame with them.
                let mut bare = frame(&mut names, "beta", 0, false);
                bare.file = None;
                bare.line = None;
                let frames = vec![
                    bare,
                    frame(&mut names, "alpha", 31, false),
                    frame(&mut names, "beta", 32, false),
                    frame(&mut names, "alpha", 33, false),
                    frame(&mut names, "main", 1, false),
                ];
                return (frames, false);
            }
            let mut frames = vec![frame(
                &mut names,
                leaves[i % 6],
                10 + i as u32,
                leaves[i % 6].ends_with("_inl"),
            )];
            for depth in 0..(i % 4) {
                frames.push(frame(
                    &mut names,
                    leaves[(i + depth + 1) % 6],
                    20 + depth as u32,
                    false,
                ));
            }
            frames.push(frame(&mut names, "main", 1, false));
            (frames, i % 5 == 0)
        })
        .collect();
    let (mut one_by_one, mut interned) = (Builder::new(), Builder::new());
    let mut x = 88172645463325252u64;
    for _ in 0..5000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let id = (x % stacks.len() as u64) as usize;
        let weight = 1 + (x >> 32) % 1000;
        let (frames, truncated) = &stacks[id];
        one_by_one.add(frames, *truncated, weight);
        interned.add_interned(id, frames, *truncated, weight);
    }
    let unwinding = || Unwinding::default();
    let (a, fa) = one_by_one.finish("case", "cpu-clock", 0, unwinding());
    let (b, fb) = interned.finish("case", "cpu-clock", 0, unwinding());
    assert_eq!(a, b);
    assert_eq!(fa.text(), fb.text());
    assert!(a.functions.len() >= 7, "{:?}", a.functions);
}

/// Rooted at the case, a stack that runs through the harness keeps the frames inside the
/// innermost harness frame under one root named after the case; other stacks stay whole.
/// The flat views keep every frame.
#[test]
fn folded_stacks_are_rooted_at_the_case() {
    let mut names = Names::new();
    let mut f = |n: &str| frame(&mut names, n, 1, false);
    // Innermost first: body, the user's closure, the harness, the thread's start.
    let through_harness = vec![
        f("demo::sieve"),
        f("demo::suite::{{closure}}"),
        f("<sparkles_bench::bencher::Plain<F> as sparkles_bench::bencher::Routine>::run"),
        f("sparkles_bench::bencher::profile_pass"),
        f("sparkles_bench::bencher::Bencher::serve"),
        f("std::sys::thread::unix::Thread::new::thread_start"),
        f("clone3"),
    ];
    let elsewhere = vec![f("poll"), f("sparkles_drain_helper"), f("clone3")];
    // A sample in the timing loop itself, between calls of the body.
    let in_the_loop = through_harness[2..].to_vec();
    let (mut rooted, mut whole) = (Builder::rooted_at("compute/sieve"), Builder::new());
    for b in [&mut rooted, &mut whole] {
        b.add(&through_harness, false, 3);
        b.add(&elsewhere, false, 1);
        b.add(&in_the_loop, false, 2);
    }
    let unwinding = || Unwinding::default();
    let (rp, rf) = rooted.finish("compute/sieve", "cpu-clock", 0, unwinding());
    let (wp, wf) = whole.finish("compute/sieve", "cpu-clock", 0, unwinding());
    let text = rf.text();
    assert!(
        text.contains("compute/sieve;demo::suite::{{closure}};demo::sieve 3"),
        "{text}"
    );
    assert!(
        text.contains("clone3;sparkles_drain_helper;poll 1"),
        "{text}"
    );
    assert!(!text.contains("sparkles_bench"), "{text}");
    assert!(wf
        .text()
        .contains("sparkles_bench::bencher::Bencher::serve"));
    assert!(
        text.contains("\ncompute/sieve 2") || text.starts_with("compute/sieve 2"),
        "{text}"
    );
    // The flat views keep every frame of the user's, and charge the harness's frames
    // (the loop's own time among them) to the case: no harness function has self time.
    let harness = |n: &str| n.contains("sparkles_bench::");
    for (rooted, whole) in [(&rp.functions, &wp.functions), (&rp.symbols, &wp.symbols)] {
        assert!(rooted.iter().all(|e| !harness(&e.name)), "{rooted:?}");
        let case = rooted.iter().find(|e| e.name == "compute/sieve").unwrap();
        assert_eq!((case.self_, case.total), (2, 5), "{case:?}");
        let theirs = |v: &[sparkles_report::profile::Entry]| {
            v.iter()
                .filter(|e| !harness(&e.name) && e.name != "compute/sieve")
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(theirs(rooted), theirs(whole));
        assert!(
            whole.iter().any(|e| harness(&e.name) && e.self_ == 2),
            "{whole:?}"
        );
    }
}

/// A bench executable without debug info (the harness's frames named from .symtab only)
/// is said in the rooted profile's notes, with how to add line tables; one with them, and
/// a profile of no case, say nothing of it.
#[test]
fn a_bench_without_line_tables_is_said_with_the_fix() {
    let mut names = Names::new();
    let mut stack = |missing: Option<&str>| {
        let mut frames = vec![
            frame(&mut names, "demo::sieve", 1, false),
            frame(
                &mut names,
                "sparkles_bench::bencher::profile_pass",
                1,
                false,
            ),
        ];
        for f in &mut frames {
            f.module = Some(names.intern("/tmp/demo"));
            f.missing = missing.map(|m| names.intern(m));
        }
        frames
    };
    let bare = stack(Some("binary has no debug info: symbols from .symtab only"));
    let dwarf = stack(None);
    let notes = |frames: &[sparkles_report::stacks::NamedFrame], rooted: bool| {
        let mut b = if rooted {
            Builder::rooted_at("c")
        } else {
            Builder::new()
        };
        b.add(frames, false, 1);
        b.finish("c", "cpu-clock", 0, Unwinding::default()).0.notes
    };
    let said = notes(&bare, true);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("/tmp/demo: binary has no debug info"),
        "{said:?}"
    );
    assert!(
        said[0].contains(r#"[profile.bench] debug = "line-tables-only""#),
        "{said:?}"
    );
    assert!(notes(&dwarf, true).is_empty());
    assert!(notes(&bare, false).is_empty());
}

/// A function inlined only into one symbol is that symbol's: its row says so, and where
/// both move the same way the diff reports one finding, the symbol, with the callee
/// `part_of` it; a function with self time of its own is its own finding.
#[test]
fn a_callee_inlined_into_a_mover_is_part_of_it() {
    let mut names = Names::new();
    let mut copied = frame(&mut names, "copied<u8>", 2, true);
    copied.symbol = Some(names.intern("extra_fnv"));
    let fnv = frame(&mut names, "extra_fnv", 1, false);
    let other = frame(&mut names, "other", 1, false);
    let main = frame(&mut names, "main", 1, false);
    let profile = |hot: u64, interned: bool| {
        let mut b = Builder::new();
        let stacks = [
            vec![copied.clone(), fnv.clone(), main.clone()],
            vec![fnv.clone(), main.clone()],
            vec![other.clone(), main.clone()],
        ];
        for i in 0..2000u64 {
            let which = match i % 100 {
                n if n < hot => 0,
                n if n < hot + 5 => 1,
                _ => 2,
            };
            if interned {
                b.add_interned(which, &stacks[which], false, 1);
            } else {
                b.add(&stacks[which], false, 1);
            }
        }
        b.finish("case", "cpu-clock", 0, Unwinding::default()).0
    };
    for interned in [false, true] {
        let (base, new) = (profile(10, interned), profile(40, interned));
        let row = |name: &str| new.functions.iter().find(|e| e.name == name).unwrap();
        assert_eq!(row("copied<u8>").inlined_into.as_deref(), Some("extra_fnv"));
        assert_eq!(row("extra_fnv").inlined_into, None);
        assert_eq!(row("other").inlined_into, None);
        let d = sparkles_report::diff::diff("case", &base, &new);
        let findings: Vec<&str> = d.findings().map(|m| m.name.as_str()).collect();
        assert!(findings.contains(&"extra_fnv"), "{findings:?}");
        assert!(!findings.contains(&"copied<u8>"), "{findings:?}");
        let callee = d.movers.iter().find(|m| m.name == "copied<u8>").unwrap();
        assert!(callee.significant, "{callee:?}");
        assert_eq!(callee.part_of.as_deref(), Some("extra_fnv"));
        // `other` lost share: a finding of its own, moving the other way.
        assert!(findings.contains(&"other"), "{findings:?}");
        // Ordered by the size of the change among the findings.
        let sizes: Vec<f64> = d.significant().map(|m| m.change_pp.abs()).collect();
        assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "{sizes:?}");
    }
}
