//! NUMA topology: the fake two-node tree in `../shared/fixtures/sysfs/numa-2node/`
//! (physical addresses at block boundaries, CPUs, distances), the same topology written
//! into a capture's NUMA_TOPOLOGY and MEM_TOPOLOGY features and read back, and this
//! machine's own sysfs.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

mod support;

use sparkles_perf_data::attr::{sample_type as st, Attr};
use sparkles_perf_data::topology::Topology;
use sparkles_perf_data::writer::{CaptureWriter, HostInfo};
use sparkles_perf_data::PerfData;
use support::fixtures;

/// The README's table: physical address, node (None: no memory block there).
const PHYS: [(u64, Option<u32>); 8] = [
    (0x0, Some(0)),
    (0x07ff_ffff, Some(0)),
    (0x0800_0000, Some(0)),
    (0x3fff_ffff, Some(0)),
    (0x4000_0000, Some(1)),
    (0x4800_1000, Some(1)),
    (0x7fff_ffff, Some(1)),
    (0x8000_0000, None),
];

fn check(t: &Topology, source: &str) {
    assert_eq!(t.nodes.len(), 2, "{source}");
    assert_eq!(t.block_size, 0x800_0000, "{source}");
    for (phys, node) in PHYS {
        assert_eq!(t.node_of_phys(phys), node, "{source}: {phys:#x}");
    }
    for cpu in 0..8 {
        assert_eq!(t.node_of_cpu(cpu), Some(cpu / 4), "{source}: cpu {cpu}");
    }
    assert_eq!(t.node_of_cpu(8), None, "{source}");
}

#[test]
fn the_two_node_tree_places_addresses_and_cpus() {
    let Some(root) = fixtures() else { return };
    let t = Topology::from_sysfs(&root.join("sysfs/numa-2node")).unwrap();
    check(&t, "sysfs");
    assert_eq!(t.nodes[0].distances, [10, 21]);
    assert_eq!(t.nodes[1].distances, [21, 10]);
    assert_eq!(t.blocks, [(0, 8, 0), (8, 16, 1)]);
    assert!(t.nodes[0].mem_total_kb.unwrap() > 0);
    // A tree without nodes says so.
    let err = Topology::from_sysfs(&root.join("sysfs/amd-zen4")).unwrap_err();
    assert!(err.to_string().contains("no NUMA nodes"), "{err}");
}

#[test]
fn a_capture_carries_the_topology_offline() {
    let Some(root) = fixtures() else { return };
    let t = Topology::from_sysfs(&root.join("sysfs/numa-2node")).unwrap();
    let attr = Attr {
        type_: 1,
        config: 2,
        sample_period_or_freq: 1,
        sample_type: st::IP | st::TID | st::ADDR | st::CPU | st::PHYS_ADDR,
        ..Attr::default()
    };
    let mut w = CaptureWriter::new(attr, vec![1], "page-faults".into());
    w.host = HostInfo {
        nrcpus: (8, 8),
        ..HostInfo::default()
    }
    .with_topology(&t);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("numa.perf.data");
    w.write(&path).unwrap();
    let data = PerfData::open(&path).unwrap();
    let back = Topology::from_features(&data.features).unwrap();
    check(&back, "capture");
    assert_eq!(back.blocks, t.blocks);
    // perf 6.1 reads the features back too, where it is installed.
    if let Ok(out) = std::process::Command::new("perf")
        .args(["report", "--header-only", "-I", "-i"])
        .arg(&path)
        .output()
    {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        for line in [
            "node0 cpu list : 0-3",
            "node1 cpu list : 4-7",
            "memory nodes (nr 2, block size 0x8000000):",
            "0 [1024M]: 0-7",
            "1 [1024M]: 8-15",
        ] {
            assert!(text.contains(line), "perf does not print `{line}`:\n{text}");
        }
    }
}

#[test]
fn this_machine_has_its_memory_on_its_nodes() {
    match Topology::from_sysfs(std::path::Path::new("/")) {
        Ok(t) => {
            assert!(!t.nodes.is_empty());
            let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
            for cpu in sparkles_perf_data::topology::parse_list(&online) {
                assert!(t.node_of_cpu(cpu).is_some(), "cpu {cpu} is on no node");
            }
            if t.knows_memory() {
                // Physical address 0 is in block 0 on every x86 machine with memory blocks.
                assert!(t.node_of_phys(0).is_some());
            }
        }
        Err(why) => skip::skip("sysfs", why),
    }
}
