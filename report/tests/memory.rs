//! The memory section on the real PEBS recordings in `../shared/fixtures/pebs/`: the
//! level table equals a count made independently from perf 6.1's own `perf script`
//! output, `weight_total` equals the total weight `perf mem report` prints, and each
//! sample's data object is the kind of memory `perf mem report`'s "Data Object" column
//! names. Skips, saying so, when the fixtures are absent.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::collections::BTreeMap;
use std::path::PathBuf;

use sparkles_report::capture::profile_capture;
use sparkles_report::memory::{p90, Memory};
use sparkles_report::stacks::StackOptions;

const FILES: [&str; 2] = ["skx-ldlat-weight_struct", "ivb-ep-mem-loads"];

fn pebs() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/pebs");
    if dir.is_dir() {
        Some(dir)
    } else {
        skip::skip("fixtures", format!("{} is absent", dir.display()));
        None
    }
}

fn memory_of(dir: &std::path::Path, name: &str) -> Memory {
    let (p, _) = profile_capture(
        &dir.join(format!("{name}.perf.data")),
        name,
        &StackOptions::default(),
    )
    .unwrap();
    p.memory.unwrap()
}

/// perf 6.1's level strings and the names perf 6.4+ gives the same values: written
/// down here by hand, from the two versions' `perf_mem__lvl_scnprintf`.
fn perf64_name(perf61: &str) -> &'static str {
    match perf61 {
        "L1 hit" | "L1 or L1 hit" => "L1 hit",
        "LFB/MAB or LFB/MAB hit" => "LFB/MAB hit",
        "L2 or L2 hit" => "L2 hit",
        "L3 or L3 hit" => "L3 hit",
        other => panic!("a level this test does not know: {other}"),
    }
}

#[test]
fn level_table_equals_a_count_of_perf_script() {
    let Some(dir) = pebs() else { return };
    for name in FILES {
        // level -> weights, from perf's own lines: `…|LVL <level>|SNP …|BLK  N/A   <weight> …`.
        let mut theirs: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        let text = std::fs::read_to_string(dir.join(format!("{name}.perf61-script.txt"))).unwrap();
        for line in text.lines().filter(|l| l.contains("|LVL ")) {
            let level = line
                .split("|LVL ")
                .nth(1)
                .unwrap()
                .split('|')
                .next()
                .unwrap();
            let weight: u64 = line
                .split("|BLK ")
                .nth(1)
                .unwrap()
                .split_whitespace()
                .nth(1)
                .unwrap()
                .parse()
                .unwrap();
            theirs.entry(perf64_name(level)).or_default().push(weight);
        }
        let m = memory_of(&dir, name);
        let total: usize = theirs.values().map(Vec::len).sum();
        assert_eq!(m.samples as usize, total, "{name}");
        assert_eq!(m.levels.len(), theirs.len(), "{name}: {:?}", m.levels);
        for l in &m.levels {
            let w = &theirs[l.level.as_str()];
            assert_eq!(l.samples as usize, w.len(), "{name}: {}", l.level);
            assert_eq!(l.weight_total, w.iter().sum::<u64>(), "{name}: {}", l.level);
            assert_eq!(l.weight_p90, p90(w), "{name}: {}", l.level);
            assert!((l.share - w.len() as f64 / total as f64).abs() < 1e-12);
        }
    }
}

#[test]
fn weight_total_equals_perf_mem_report() {
    let Some(dir) = pebs() else { return };
    for name in FILES {
        let text =
            std::fs::read_to_string(dir.join(format!("{name}.perf61-mem-report.txt"))).unwrap();
        let total: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("# Total weight : "))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let m = memory_of(&dir, name);
        assert_eq!(m.weight_total, total, "{name}");
        assert!(total > 0);
        let by_level: u64 = m.levels.iter().map(|l| l.weight_total).sum();
        assert_eq!(by_level, total, "{name}");
        let by_code: u64 = m.code.iter().map(|c| c.weight_total).sum();
        assert_eq!(by_code, total, "{name}");
        let by_data: u64 = m.data_objects.iter().map(|d| d.weight_total).sum();
        assert_eq!(by_data, total, "{name}");
    }
}

#[test]
fn data_objects_are_the_kinds_perf_mem_report_names() {
    let Some(dir) = pebs() else { return };
    for name in FILES {
        // Each row of perf mem report: `… [k] 0xIP  dso  [.] 0xDADDR  Data Object  Snoop …`.
        let text =
            std::fs::read_to_string(dir.join(format!("{name}.perf61-mem-report.txt"))).unwrap();
        let mut expected: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for line in text
            .lines()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        {
            let words: Vec<&str> = line.split_whitespace().collect();
            let weight: u64 = words[2].parse().unwrap();
            // The second `[k]`/`[.]` marker is the data symbol's; the object follows it.
            let marks: Vec<usize> = words
                .iter()
                .enumerate()
                .filter(|(_, w)| **w == "[k]" || **w == "[.]")
                .map(|(i, _)| i)
                .collect();
            let daddr =
                u64::from_str_radix(words[marks[1] + 1].trim_start_matches("0x"), 16).unwrap();
            let object = words[marks[1] + 2];
            let kind = match object {
                "anon" => "anon",
                "[stack]" => "stack",
                "[heap]" => "heap",
                // perf looks a kernel-mode sample's data address up in the kernel's maps
                // only: a user address read by the kernel is [unknown] to it, and is the
                // user mapping it lies in to us. A kernel address is the kernel.
                "[unknown]" if daddr >= 0xffff_8000_0000_0000 => "kernel",
                "[unknown]" => continue,
                _ => "file",
            };
            let e = expected.entry(kind.to_string()).or_default();
            e.0 += 1;
            e.1 += weight;
        }
        let m = memory_of(&dir, name);
        let mut ours: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for d in &m.data_objects {
            let e = ours.entry(d.kind.clone()).or_default();
            e.0 += d.samples;
            e.1 += d.weight_total;
        }
        for (kind, counts) in &expected {
            if kind == "file" {
                // The user reads that perf calls [unknown] land in file mappings here.
                assert!(ours[kind].0 >= counts.0, "{name}: {kind}: {ours:?}");
            } else {
                assert_eq!(ours.get(kind), Some(counts), "{name}: {kind}: {ours:?}");
            }
        }
        assert!(expected.len() >= 2, "{name}: {expected:?}");
    }
}

#[test]
fn the_skylake_capture_is_latency_from_a_weight_struct() {
    let Some(dir) = pebs() else { return };
    let m = memory_of(&dir, "skx-ldlat-weight_struct");
    assert_eq!(m.weight, "latency (WEIGHT_STRUCT, first field)");
    // perf script's second weight column (instruction latency) is 0 on every sample.
    assert_eq!(m.ins_lat_total, Some(0));
    // Two locked loads (`LCK Yes`), no remote or HITM sample in this capture.
    assert_eq!((m.locked, m.remote, m.hitm), (2, 0, 0));
    let ops: Vec<(&str, u64)> = m.ops.iter().map(|o| (o.name.as_str(), o.samples)).collect();
    assert_eq!(ops, [("LOAD", 14)]);
    let tlb: Vec<(&str, u64)> = m.tlb.iter().map(|o| (o.name.as_str(), o.samples)).collect();
    assert_eq!(tlb, [("L1 or L2 hit", 13), ("L2 miss", 1)]);
    let m = memory_of(&dir, "ivb-ep-mem-loads");
    assert_eq!(m.weight, "latency (WEIGHT)");
    assert_eq!(m.ins_lat_total, None);
}
