//! Every expected resolution listed in the READMEs of `../shared/fixtures/sysfs/`,
//! reproduced on the fake trees. Dynamic PMU types are read from each tree, never
//! assumed. Skips, saying so, when the fixtures are absent (a user's fresh clone).

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

mod support;

use std::path::PathBuf;

use sparkles_sampler::{EventAttr, EventError, EventResolver};

fn fixtures() -> Option<PathBuf> {
    support::fixtures().map(|f| f.join("sysfs"))
}

/// `(type, config, config1, config2, precise_ip)` of one opened event.
type Enc = (u32, u64, u64, u64, u8);

enum Expect {
    Events(Vec<Enc>),
    Error(&'static str),
}

fn enc(a: &EventAttr) -> Enc {
    (a.type_, a.config, a.config1, a.config2, a.precise_ip)
}

fn check(tree: &str, cases: &[(&str, Expect)]) {
    let Some(root) = fixtures() else { return };
    let r = EventResolver::new(root.join(tree)).unwrap();
    for (spelling, expect) in cases {
        let got = r.resolve(spelling);
        match (expect, got) {
            (Expect::Events(want), Ok(attrs)) => {
                let encs: Vec<Enc> = attrs.iter().map(enc).collect();
                assert_eq!(&encs, want, "{tree}: {spelling}");
            }
            (Expect::Error(fragment), Err(e)) => {
                let text = e.to_string();
                assert!(
                    text.contains(fragment),
                    "{tree}: {spelling}: '{text}' lacks '{fragment}'"
                );
            }
            (Expect::Events(want), Err(e)) => {
                panic!("{tree}: {spelling}: want {want:x?}, got error {e}")
            }
            (Expect::Error(f), Ok(attrs)) => {
                panic!("{tree}: {spelling}: want error '{f}', got {attrs:?}")
            }
        }
    }
}

fn pmu_type(tree: &str, pmu: &str) -> u32 {
    let root = fixtures().unwrap();
    let text = std::fs::read_to_string(
        root.join(tree)
            .join("sys/bus/event_source/devices")
            .join(pmu)
            .join("type"),
    )
    .unwrap();
    text.trim().parse().unwrap()
}

fn one(e: Enc) -> Expect {
    Expect::Events(vec![e])
}

#[test]
fn amd_zen4() {
    if fixtures().is_none() {
        return;
    }
    let tree = "amd-zen4";
    let op = pmu_type(tree, "ibs_op");
    let fetch = pmu_type(tree, "ibs_fetch");
    check(
        tree,
        &[
            ("ibs_op/cnt_ctl=1/", one((op, 0x80000, 0, 0, 0))),
            ("ibs_op/l3missonly=1/", one((op, 0x10000, 0, 0, 0))),
            (
                "ibs_op/cnt_ctl=1,l3missonly=1/",
                one((op, 0x90000, 0, 0, 0)),
            ),
            ("ibs_op//", one((op, 0, 0, 0, 0))),
            (
                "ibs_fetch/rand_en=1,l3missonly=1/",
                one((fetch, 0x0a00_0000_0000_0000, 0, 0, 0)),
            ),
            ("ibs_op/swfilt=1/u", one((op, 0, 0, 1, 0))),
            ("ibs_op/ldlat=128/", Expect::Error("no term 'ldlat'")),
            ("cpu/event=0x76/", one((4, 0x76, 0, 0, 0))),
            ("r076", one((4, 0x76, 0, 0, 0))),
            (
                "cpu/event=0x120,umask=0x1/",
                one((4, 0x1_0000_0120, 0, 0, 0)),
            ),
            ("cpu/ref-cycles/", one((4, 0x1_0000_0120, 0, 0, 0))),
            ("cpu/cache-misses/", one((4, 0x964, 0, 0, 0))),
            ("cpu/event=0xc0,cmask=1,inv/", one((4, 0x18000c0, 0, 0, 0))),
            (
                "cpu/event=0x1000/",
                Expect::Error("does not fit config:0-7,32-35 (12 bits)"),
            ),
            ("cpu/mem-loads/", Expect::Error("no term 'mem-loads'")),
            ("cycles:pp", one((0, 0, 0, 0, 2))),
            // caps/max_precise is 0, but the kernel forwards precise cycles to IBS.
            ("cycles:P", one((0, 0, 0, 0, 2))),
        ],
    );
    let r = EventResolver::new(fixtures().unwrap().join(tree)).unwrap();
    let swfilt = &r.resolve("ibs_op/swfilt=1/u").unwrap()[0];
    assert!(swfilt.exclude_kernel && !swfilt.exclude_user);
}

#[test]
fn intel_alder_lake_hybrid() {
    if fixtures().is_none() {
        return;
    }
    let tree = "intel-alder-lake-hybrid";
    let core = u64::from(pmu_type(tree, "cpu_core"));
    let atom32 = pmu_type(tree, "cpu_atom");
    let atom = u64::from(atom32);
    check(
        tree,
        &[
            ("cpu_core/cycles/", one((0, core << 32, 0, 0, 0))),
            // The sysfs alias wins over the legacy event (perf 6.5-6.9; both count the same).
            ("cpu_atom/instructions/", one((atom32, 0xc0, 0, 0, 0))),
            ("cpu_core/cpu-cycles/", one((4, 0x3c, 0, 0, 0))),
            (
                "cycles",
                Expect::Events(vec![(0, core << 32, 0, 0, 0), (0, atom << 32, 0, 0, 0)]),
            ),
            (
                "instructions:u",
                Expect::Events(vec![
                    (0, core << 32 | 1, 0, 0, 0),
                    (0, atom << 32 | 1, 0, 0, 0),
                ]),
            ),
            ("cpu_core/mem-loads,ldlat=30/P", one((4, 0x1cd, 0x1e, 0, 3))),
            (
                "cpu_atom/mem-loads,ldlat=30/P",
                one((atom32, 0x5d0, 0x1e, 0, 3)),
            ),
            (
                "mem-loads",
                Expect::Events(vec![(4, 0x1cd, 0x3, 0, 0), (atom32, 0x5d0, 0x3, 0, 0)]),
            ),
            ("mem-loads-aux", one((4, 0x8203, 0, 0, 0))),
            ("cpu_core/topdown-retiring/", one((4, 0x8000, 0, 0, 0))),
            ("cpu_atom/topdown-retiring/", one((atom32, 0xc2, 0, 0, 0))),
            ("cpu_atom/slots/", Expect::Error("no term 'slots'")),
            (
                "cpu_core/event=0xc6,umask=0x1,frontend=0x11/",
                one((4, 0x1c6, 0x11, 0, 0)),
            ),
            (
                "cpu_atom/frontend=0x11/",
                Expect::Error("no term 'frontend'"),
            ),
            (
                "cpu_atom/event=0xd0,umask=0x81/pp",
                one((atom32, 0x81d0, 0, 0, 2)),
            ),
            ("r01c2", one((4, 0x1c2, 0, 0, 0))),
            (
                "cpu_core/event=0x3c,in_tx=1/",
                Expect::Error("no term 'in_tx'"),
            ),
        ],
    );
    let r = EventResolver::new(fixtures().unwrap().join(tree)).unwrap();
    let u = r.resolve("instructions:u").unwrap();
    assert!(u.iter().all(|a| a.exclude_kernel && !a.exclude_user));
    assert_eq!(u[0].pmu, "cpu_core");
    assert_eq!(u[1].pmu, "cpu_atom");
    assert!(r.is_hybrid());
}

fn sapphire_rapids_common() -> Vec<(&'static str, Expect)> {
    vec![
        ("cpu/event=0x3c,umask=0x0/", one((4, 0x3c, 0, 0, 0))),
        ("cpu/mem-loads,ldlat=30/P", one((4, 0x1cd, 0x1e, 0, 3))),
        ("mem-loads", one((4, 0x1cd, 0x3, 0, 0))),
        ("mem-stores:P", one((4, 0x2cd, 0, 0, 3))),
        ("cpu/mem-loads-aux/", one((4, 0x8203, 0, 0, 0))),
        ("cpu/event=0xd0,umask=0x81/pp", one((4, 0x81d0, 0, 0, 2))),
        ("r01c2", one((4, 0x1c2, 0, 0, 0))),
        ("r81d0:pp", one((4, 0x81d0, 0, 0, 2))),
        (
            "cpu/event=0x2a,umask=0x1,offcore_rsp=0x10001/",
            one((4, 0x12a, 0x10001, 0, 0)),
        ),
        (
            "cpu/event=0xc6,umask=0x1,frontend=0x11/ppp",
            one((4, 0x1c6, 0x11, 0, 3)),
        ),
        (
            "cpu/event=0x3c,edge,inv,cmask=2/",
            one((4, 0x284003c, 0, 0, 0)),
        ),
        ("cpu/slots/", one((4, 0x400, 0, 0, 0))),
        ("cpu/topdown-retiring/", one((4, 0x8000, 0, 0, 0))),
        ("cpu/cpu-cycles/", one((4, 0x3c, 0, 0, 0))),
        ("cycles:P", one((0, 0, 0, 0, 3))),
        ("cpu/event=0x3c,any=1/", Expect::Error("no term 'any'")),
        (
            "cpu/ldlat=0x10000/",
            Expect::Error("does not fit config1:0-15 (16 bits)"),
        ),
    ]
}

#[test]
fn intel_sapphire_rapids() {
    let mut cases = sapphire_rapids_common();
    cases.push(("cpu/cycles-t/", one((4, 0x1_0000_003c, 0, 0, 0))));
    cases.push((
        "cpu/event=0x3c,in_tx=1,in_tx_cp=1/",
        one((4, 0x3_0000_003c, 0, 0, 0)),
    ));
    check("intel-sapphire-rapids", &cases);
}

#[test]
fn intel_sapphire_rapids_tsx_off() {
    let mut cases = sapphire_rapids_common();
    cases.push(("cpu/cycles-t/", Expect::Error("no term 'cycles-t'")));
    cases.push((
        "cpu/event=0x3c,in_tx=1,in_tx_cp=1/",
        Expect::Error("no term 'in_tx'"),
    ));
    check("intel-sapphire-rapids-tsx-off", &cases);
}

#[test]
fn misspellings_suggest_the_right_name() {
    let Some(root) = fixtures() else { return };
    let r = EventResolver::new(root.join("intel-sapphire-rapids")).unwrap();
    match r.resolve("cylces") {
        Err(EventError::Unknown { suggestions, .. }) => assert_eq!(suggestions[0], "cycles"),
        other => panic!("{other:?}"),
    }
    let e = r.resolve("cpu/evnt=0x3c/").unwrap_err().to_string();
    assert!(e.contains("did you mean 'event'"), "{e}");
    let e = r.resolve("cpuu/event=0x3c/").unwrap_err().to_string();
    assert!(
        e.contains("unknown PMU 'cpuu'") && e.contains("'cpu'"),
        "{e}"
    );
    let e = r.resolve("mem-lods").unwrap_err().to_string();
    assert!(e.contains("mem-loads"), "{e}");
}

#[test]
fn every_alias_in_every_tree_resolves() {
    let Some(root) = fixtures() else { return };
    for tree in [
        "amd-zen4",
        "intel-alder-lake-hybrid",
        "intel-sapphire-rapids",
        "intel-sapphire-rapids-tsx-off",
    ] {
        let r = EventResolver::new(root.join(tree)).unwrap();
        for p in r.pmus() {
            for alias in p.aliases.keys() {
                let spelling = format!("{}/{alias}/", p.name);
                let attrs = r
                    .resolve(&spelling)
                    .unwrap_or_else(|e| panic!("{tree}: {spelling}: {e}"));
                assert_eq!(attrs[0].type_, p.type_, "{tree}: {spelling}");
            }
        }
    }
}
