//! `PERF_SAMPLE_DATA_SRC` decoding.
//!
//! - On the real PEBS recordings in `../shared/fixtures/pebs/`: every sample's decoded
//!   fields equal perf 6.1's reading of the same sample (`perf script -F data_src`'s
//!   `|OP …|LVL …|SNP …|TLB …|LCK …|BLK …` and `perf report -D`'s raw value and weight).
//!   perf 6.1 joins the older and newer level fields ("L1 or L1 hit"), so the level is
//!   compared field by field, not as a string.
//! - Remote and exotic levels, of which no public recording exists: values built bit by
//!   bit from the kernel ABI name the levels perf 6.4+ prints (perf's own
//!   `tools/perf/tests/mem.c` cases, and the encodings of AMD IBS in
//!   `arch/x86/events/amd/ibs.c`).

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use sparkles_perf_data::data_src::{
    blk, lock, lvl, lvl_num, lvl_num_name, op, shift, snoop, snoopx, tlb, DataSource,
};
use sparkles_perf_data::sample::Weight;
use sparkles_perf_data::{PerfData, Record};
use support::fixtures;

/// One sample as perf 6.1's `perf script` printed it: the raw value and the six fields.
#[derive(Debug)]
struct PerfLine {
    data_src: u64,
    fields: BTreeMap<&'static str, String>,
}

fn perf_script_lines(path: &Path) -> Vec<PerfLine> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| l.contains("|OP "))
        .map(|line| {
            let (left, right) = line.split_once('|').unwrap();
            let data_src =
                u64::from_str_radix(left.split_whitespace().last().unwrap(), 16).unwrap();
            let mut fields = BTreeMap::new();
            // `OP LOAD|LVL L1 or L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A   7 …`
            for part in right.split('|') {
                let (key, value) = part.split_once(' ').unwrap();
                let key = match key {
                    "OP" => "op",
                    "LVL" => "lvl",
                    "SNP" => "snoop",
                    "TLB" => "tlb",
                    "LCK" => "lock",
                    "BLK" => "blk",
                    other => panic!("unexpected field {other}"),
                };
                let value = if key == "blk" {
                    // ` N/A             7 …`: the blocked field is one word here.
                    value.split_whitespace().next().unwrap().to_string()
                } else {
                    value.to_string()
                };
                fields.insert(key, value);
            }
            PerfLine { data_src, fields }
        })
        .collect()
}

/// perf 6.1's level string taken apart: remote, hops, the names it joined with " or ",
/// and hit or miss.
fn perf61_level(s: &str) -> (bool, Vec<String>, &'static str) {
    let (rest, hit_miss) = if let Some(r) = s.strip_suffix(" hit") {
        (r, "hit")
    } else if let Some(r) = s.strip_suffix(" miss") {
        (r, "miss")
    } else {
        (s, "")
    };
    let (remote, rest) = match rest.strip_prefix("Remote ") {
        Some(r) => (true, r),
        None => (false, rest),
    };
    (
        remote,
        rest.split(" or ").map(str::to_string).collect(),
        hit_miss,
    )
}

fn samples_of(path: &Path) -> Vec<(u64, u64, Option<Weight>)> {
    let data = PerfData::open(path).unwrap();
    let mut out = Vec::new();
    data.for_each_record(|e| {
        if let Record::Sample(s) = &e.record {
            out.push((s.addr.unwrap(), s.data_src.unwrap(), s.weight));
        }
        Ok::<(), sparkles_perf_data::Error>(())
    })
    .unwrap();
    out
}

#[test]
fn pebs_fields_equal_perf_61_script() {
    let Some(root) = fixtures() else { return };
    for name in ["skx-ldlat-weight_struct", "ivb-ep-mem-loads"] {
        let lines = perf_script_lines(&root.join(format!("pebs/{name}.perf61-script.txt")));
        let ours = samples_of(&root.join(format!("pebs/{name}.perf.data")));
        assert_eq!(lines.len(), ours.len(), "{name}: samples");
        assert!(lines.len() >= 14, "{name}");
        for line in &lines {
            let d = DataSource::new(line.data_src);
            let f = &line.fields;
            assert_eq!(f["op"], d.op_name(), "{name}: {:#x} op", d.raw);
            assert_eq!(f["snoop"], d.snoop_name(), "{name}: {:#x} snoop", d.raw);
            assert_eq!(f["tlb"], d.tlb_name(), "{name}: {:#x} tlb", d.raw);
            assert_eq!(f["lock"], d.lock_name(), "{name}: {:#x} lock", d.raw);
            assert_eq!(f["blk"], d.blk_name(), "{name}: {:#x} blk", d.raw);
            // perf 6.1: the mem_lvl names, then the mem_lvl_num name, joined by " or ".
            let (remote, names, hit_miss) = perf61_level(&f["lvl"]);
            let mut expected: Vec<String> = d.lvl_names().iter().map(|s| s.to_string()).collect();
            if d.lvl_num != 0 {
                expected.push(lvl_num_name(d.lvl_num).unwrap().to_string());
            }
            assert_eq!(names, expected, "{name}: {:#x} level names", d.raw);
            assert_eq!(remote, d.remote, "{name}: {:#x} remote", d.raw);
            let ours = if d.hit() {
                "hit"
            } else if d.miss() {
                "miss"
            } else {
                ""
            };
            assert_eq!(hit_miss, ours, "{name}: {:#x} hit/miss", d.raw);
        }
    }
}

/// `(addr, data_src, weight fields)` per sample of a `perf report -D` golden.
fn perf_dump(path: &Path) -> Vec<(u64, u64, Vec<u64>)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    for block in text.split("\n--") {
        let addr = block
            .split(" addr: 0x")
            .nth(1)
            .map(|s| u64::from_str_radix(s.split_whitespace().next().unwrap(), 16).unwrap());
        let data_src = block
            .split(" . data_src: 0x")
            .nth(1)
            .map(|s| u64::from_str_radix(s.split_whitespace().next().unwrap(), 16).unwrap());
        let weight = block.split("... weight: ").nth(1).map(|s| {
            s.lines()
                .next()
                .unwrap()
                .split(',')
                .map(|w| match w.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16).unwrap(),
                    None => w.parse().unwrap(),
                })
                .collect()
        });
        if let (Some(a), Some(d), Some(w)) = (addr, data_src, weight) {
            out.push((a, d, w));
        }
    }
    out.sort();
    out
}

#[test]
fn raw_values_and_weights_equal_perf_report_dump() {
    let Some(root) = fixtures() else { return };
    for name in ["skx-ldlat-weight_struct", "ivb-ep-mem-loads"] {
        let theirs = perf_dump(&root.join(format!("pebs/{name}.perf61-dump-samples.txt")));
        let mut ours: Vec<(u64, u64, Vec<u64>)> =
            samples_of(&root.join(format!("pebs/{name}.perf.data")))
                .into_iter()
                .map(|(a, d, w)| {
                    let w = match w.unwrap() {
                        Weight::Full(w) => vec![w],
                        Weight::Struct { var1, var2, var3 } => {
                            vec![var1.into(), var2.into(), var3.into()]
                        }
                    };
                    (a, d, w)
                })
                .collect();
        ours.sort();
        assert_eq!(ours.len(), 14, "{name}");
        assert_eq!(ours, theirs, "{name}");
    }
}

/// A data_src value from its fields, as the kernel's `PERF_MEM_S()` builds one.
#[derive(Default, Clone, Copy)]
struct Src {
    op: u8,
    lvl: u16,
    snoop: u8,
    lock: u8,
    tlb: u8,
    lvl_num: u8,
    remote: bool,
    snoopx: u8,
    blk: u8,
    hops: u8,
}

impl Src {
    fn raw(self) -> u64 {
        (u64::from(self.op) << shift::OP)
            | (u64::from(self.lvl) << shift::LVL)
            | (u64::from(self.snoop) << shift::SNOOP)
            | (u64::from(self.lock) << shift::LOCK)
            | (u64::from(self.tlb) << shift::TLB)
            | (u64::from(self.lvl_num) << shift::LVL_NUM)
            | (u64::from(self.remote) << shift::REMOTE)
            | (u64::from(self.snoopx) << shift::SNOOPX)
            | (u64::from(self.blk) << shift::BLK)
            | (u64::from(self.hops) << shift::HOPS)
    }

    fn decoded(self) -> DataSource {
        DataSource::new(self.raw())
    }
}

#[test]
fn each_field_decodes_from_its_own_bits() {
    let all = Src {
        op: op::STORE,
        lvl: lvl::MISS | lvl::L3,
        snoop: snoop::HITM,
        lock: lock::LOCKED,
        tlb: tlb::MISS | tlb::WK,
        lvl_num: lvl_num::L3,
        remote: true,
        snoopx: snoopx::PEER,
        blk: blk::DATA | blk::ADDR,
        hops: 4,
    };
    let d = all.decoded();
    assert_eq!(
        (d.op, d.lvl, d.snoop, d.lock, d.tlb, d.lvl_num, d.remote, d.snoopx, d.blk, d.hops),
        (
            op::STORE,
            lvl::MISS | lvl::L3,
            snoop::HITM,
            lock::LOCKED,
            tlb::MISS | tlb::WK,
            lvl_num::L3,
            true,
            snoopx::PEER,
            blk::DATA | blk::ADDR,
            4
        )
    );
    assert_eq!(
        d.to_string(),
        "|OP STORE|LVL Remote board L3 miss|SNP HitM or Peer|TLB Walker miss|LCK Yes|BLK  Data Addr"
    );
    assert!(d.hitm() && d.locked() && d.is_remote() && d.miss() && !d.hit());
    // Every field at its widest leaves the others alone.
    let widest = [
        (shift::OP, 5),
        (shift::LVL, 14),
        (shift::SNOOP, 5),
        (shift::LOCK, 2),
        (shift::TLB, 7),
        (shift::LVL_NUM, 4),
        (shift::REMOTE, 1),
        (shift::SNOOPX, 2),
        (shift::BLK, 3),
        (shift::HOPS, 3),
        (shift::REGION, 5),
    ];
    for (i, (at, bits)) in widest.iter().enumerate() {
        let d = DataSource::new(((1u64 << bits) - 1) << at);
        let values = [
            u64::from(d.op),
            u64::from(d.lvl),
            u64::from(d.snoop),
            u64::from(d.lock),
            u64::from(d.tlb),
            u64::from(d.lvl_num),
            u64::from(d.remote),
            u64::from(d.snoopx),
            u64::from(d.blk),
            u64::from(d.hops),
            u64::from(d.region),
        ];
        for (j, v) in values.iter().enumerate() {
            let want = if i == j { (1u64 << widest[j].1) - 1 } else { 0 };
            assert_eq!(*v, want, "field {j} with field {i} set");
        }
    }
}

/// `mem_region` (5 bits at 46, `PERF_MEM_REGION_*`): named where set, and left out of
/// perf script's string, which perf 6.1 prints without it.
#[test]
fn the_region_is_named_where_set() {
    let l3 = Src {
        op: op::LOAD,
        lvl: lvl::HIT | lvl::L3,
        ..Src::default()
    };
    assert_eq!(l3.decoded().region_name(), None);
    let other_ccx = DataSource::new(l3.raw() | (0x05 << shift::REGION));
    assert_eq!(other_ccx.region, 5);
    assert_eq!(
        other_ccx.region_name().as_deref(),
        Some("Other CA shared cache")
    );
    assert_eq!(other_ccx.to_string(), l3.decoded().to_string());
    let mem2 = DataSource::new(0x0a << shift::REGION);
    assert_eq!(mem2.region_name().as_deref(), Some("Memory region 2"));
    let past = DataSource::new(0x1f << shift::REGION);
    assert_eq!(past.region_name().as_deref(), Some("region 0x1f"));
}

/// perf's `tools/perf/tests/mem.c`: the snoop string followed by the level string.
#[test]
fn perf_tests_mem_c_cases() {
    let mut src = Src {
        lvl: lvl::HIT,
        lvl_num: 4,
        ..Src::default()
    };
    let both = |s: Src| {
        let d = s.decoded();
        format!("{}{}", d.snoop_name(), d.level())
    };
    assert_eq!(both(src), "N/AL4 hit");
    src.remote = true;
    assert_eq!(both(src), "N/ARemote L4 hit");
    src.lvl = lvl::MISS;
    src.lvl_num = lvl_num::PMEM;
    src.remote = false;
    assert_eq!(both(src), "N/APMEM miss");
    src.remote = true;
    assert_eq!(both(src), "N/ARemote PMEM miss");
    src.snoopx = snoopx::FWD;
    src.lvl_num = lvl_num::RAM;
    assert_eq!(both(src), "FwdRemote RAM miss");
}

#[test]
fn remote_and_exotic_levels_name_as_perf_6_4_does() {
    let hit = |lvl_bits: u16, num: u8, remote: bool, hops: u8| {
        Src {
            op: op::LOAD,
            lvl: lvl_bits | lvl::HIT,
            lvl_num: num,
            remote,
            hops,
            ..Src::default()
        }
        .decoded()
        .level()
    };
    let cases = [
        (hit(lvl::L1, lvl_num::L1, false, 0), "L1 hit"),
        (hit(lvl::LFB, lvl_num::LFB, false, 0), "LFB/MAB hit"),
        (hit(lvl::L2, lvl_num::L2, false, 0), "L2 hit"),
        (hit(lvl::L3, lvl_num::L3, false, 0), "L3 hit"),
        (hit(lvl::LOC_RAM, lvl_num::RAM, false, 0), "RAM hit"),
        // Remote RAM at each hop count.
        (
            hit(lvl::REM_RAM1, lvl_num::RAM, true, 1),
            "Remote core, same node RAM hit",
        ),
        (
            hit(lvl::REM_RAM1, lvl_num::RAM, true, 2),
            "Remote node, same socket RAM hit",
        ),
        (
            hit(lvl::REM_RAM2, lvl_num::RAM, true, 3),
            "Remote socket, same board RAM hit",
        ),
        (
            hit(lvl::REM_RAM2, lvl_num::RAM, true, 4),
            "Remote board RAM hit",
        ),
        // Remote caches.
        (
            hit(lvl::REM_CCE2, lvl_num::ANY_CACHE, true, 3),
            "Remote socket, same board Any cache hit",
        ),
        (
            hit(lvl::REM_CCE1, lvl_num::ANY_CACHE, true, 1),
            "Remote core, same node Any cache hit",
        ),
        (hit(0, lvl_num::PMEM, false, 0), "PMEM hit"),
        (
            hit(0, lvl_num::PMEM, true, 2),
            "Remote node, same socket PMEM hit",
        ),
        (hit(0, lvl_num::CXL, false, 0), "CXL hit"),
        (hit(lvl::IO, lvl_num::IO, false, 0), "I/O hit"),
        (hit(lvl::UNC, lvl_num::UNC, false, 0), "Uncached hit"),
        (hit(0, lvl_num::L2_MHB, false, 0), "L2 MHB hit"),
        (hit(0, lvl_num::MSC, false, 0), "Memory-side Cache hit"),
        // No lvl_num: the older bits, joined as perf joins them.
        (hit(lvl::L1, 0, false, 0), "L1 hit"),
        (hit(lvl::REM_RAM1, 0, false, 0), "Remote RAM (1 hop) hit"),
        (
            hit(lvl::L3 | lvl::REM_CCE1, 0, false, 0),
            "L3 or Remote Cache (1 hop) hit",
        ),
        // Nothing known.
        (Src::default().decoded().level(), "N/A"),
        (
            Src {
                lvl: lvl::NA,
                lvl_num: lvl_num::NA,
                ..Src::default()
            }
            .decoded()
            .level(),
            "N/A",
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
    // A HITM snoop from a remote cache.
    let hitm = Src {
        op: op::LOAD,
        lvl: lvl::HIT | lvl::REM_CCE1,
        snoop: snoop::HITM,
        lvl_num: lvl_num::ANY_CACHE,
        remote: true,
        hops: 2,
        ..Src::default()
    }
    .decoded();
    assert_eq!(hitm.snoop_name(), "HitM");
    assert_eq!(hitm.level(), "Remote node, same socket Any cache hit");
    assert!(hitm.hitm() && hitm.is_remote());
}

/// What `arch/x86/events/amd/ibs.c` (`perf_ibs_get_mem_lvl`, 6.6+) writes for each IBS
/// data source, and the levels perf 6.4+ names them by.
#[test]
fn amd_ibs_encodings() {
    let l = |bits: u16| bits | lvl::HIT;
    let ibs = |lvl_bits: u16, num: u8, remote: bool, hops: u8| {
        Src {
            op: op::LOAD,
            lvl: lvl_bits,
            lvl_num: num,
            remote,
            hops,
            ..Src::default()
        }
        .decoded()
        .level()
    };
    let cases = [
        // Uncached (DcUcMemAcc), L1 (no DcMiss), L2 (no L2Miss).
        (ibs(l(lvl::UNC), lvl_num::UNC, false, 0), "Uncached hit"),
        (ibs(l(lvl::L1), lvl_num::L1, false, 0), "L1 hit"),
        (ibs(l(lvl::L2), lvl_num::L2, false, 0), "L2 hit"),
        // Zen 4 DataSrc: local cache, near CCX, DRAM, remote DRAM, far CCX, PMEM, CXL, IO.
        (ibs(l(lvl::L3), lvl_num::L3, false, 0), "L3 hit"),
        (
            ibs(l(lvl::REM_CCE1), lvl_num::ANY_CACHE, true, 1),
            "Remote core, same node Any cache hit",
        ),
        (ibs(l(lvl::LOC_RAM), lvl_num::RAM, false, 0), "RAM hit"),
        (
            ibs(l(lvl::REM_RAM1), lvl_num::RAM, true, 2),
            "Remote node, same socket RAM hit",
        ),
        (
            ibs(l(lvl::REM_CCE2), lvl_num::ANY_CACHE, true, 2),
            "Remote node, same socket Any cache hit",
        ),
        // PMEM and CXL carry no HIT bit: perf prints the level alone.
        (ibs(0, lvl_num::PMEM, false, 0), "PMEM"),
        (
            ibs(0, lvl_num::PMEM, true, 2),
            "Remote node, same socket PMEM",
        ),
        (ibs(0, lvl_num::CXL, false, 0), "CXL"),
        (ibs(l(lvl::IO), lvl_num::IO, false, 0), "I/O hit"),
        // Before Zen 4: a local cache is L3 or a near remote cache, hops 0 without REM.
        (
            ibs(l(lvl::L3 | lvl::REM_CCE1), lvl_num::ANY_CACHE, false, 1),
            "core, same node Any cache hit",
        ),
        // No DataSrc: the miss address buffer, else N/A without HIT.
        (ibs(l(lvl::LFB), lvl_num::LFB, false, 0), "LFB/MAB hit"),
        (ibs(lvl::NA, lvl_num::NA, false, 0), "N/A"),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
}
