//! The offline NUMA path: a capture written with the fake two-node topology of
//! `../shared/fixtures/sysfs/numa-2node/` (NUMA_TOPOLOGY and MEM_TOPOLOGY), with samples
//! built byte by byte in the kernel's field order, gives the (CPU node, memory node)
//! matrix the topology implies: physical addresses at block boundaries, CPUs on both
//! nodes, and the samples that cannot be placed counted with their reason.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};

use sparkles_perf_data::attr::{sample_type as st, Attr};
use sparkles_perf_data::topology::Topology;
use sparkles_perf_data::writer::{CaptureWriter, HostInfo};
use sparkles_report::capture::profile_capture;
use sparkles_report::stacks::StackOptions;

fn tree() -> Option<PathBuf> {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/sysfs/numa-2node");
    if dir.is_dir() {
        Some(dir)
    } else {
        skip::skip("fixtures", format!("{} is absent", dir.display()));
        None
    }
}

const RAM_HIT: u64 = (0x0d << 33) | ((0x80 | 0x02) << 5) | 0x02;
const REMOTE_RAM_HIT: u64 = (0x0d << 33) | (1 << 37) | (2 << 43) | ((0x100 | 0x02) << 5) | 0x02;

/// A SAMPLE record: IP | TID | TIME | ADDR | CPU | PERIOD | WEIGHT | DATA_SRC | PHYS_ADDR.
fn sample(time: u64, cpu: u32, addr: u64, weight: u64, data_src: u64, phys: u64) -> Vec<u8> {
    sample_sized(time, cpu, addr, weight, data_src, phys, None)
}

/// [`sample`], with DATA_PAGE_SIZE after PHYS_ADDR where given.
fn sample_sized(
    time: u64,
    cpu: u32,
    addr: u64,
    weight: u64,
    data_src: u64,
    phys: u64,
    page_size: Option<u64>,
) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&0x40_1000u64.to_le_bytes()); // ip
    body.extend_from_slice(&1234u32.to_le_bytes()); // pid
    body.extend_from_slice(&1234u32.to_le_bytes()); // tid
    body.extend_from_slice(&time.to_le_bytes());
    body.extend_from_slice(&addr.to_le_bytes());
    body.extend_from_slice(&cpu.to_le_bytes());
    body.extend_from_slice(&0u32.to_le_bytes()); // res
    body.extend_from_slice(&1u64.to_le_bytes()); // period
    body.extend_from_slice(&weight.to_le_bytes());
    body.extend_from_slice(&data_src.to_le_bytes());
    body.extend_from_slice(&phys.to_le_bytes());
    if let Some(size) = page_size {
        body.extend_from_slice(&size.to_le_bytes());
    }
    let mut r = Vec::new();
    r.extend_from_slice(&9u32.to_le_bytes()); // PERF_RECORD_SAMPLE
    r.extend_from_slice(&2u16.to_le_bytes()); // user
    r.extend_from_slice(&((8 + body.len()) as u16).to_le_bytes());
    r.extend_from_slice(&body);
    r
}

fn capture(dir: &Path, topology: &Topology, samples: &[Vec<u8>]) -> PathBuf {
    capture_with(dir, topology, samples, 0)
}

fn capture_with(dir: &Path, topology: &Topology, samples: &[Vec<u8>], extra: u64) -> PathBuf {
    let attr = Attr {
        type_: 4,
        config: 0x1cd,
        sample_period_or_freq: 1,
        sample_type: st::IP
            | st::TID
            | st::TIME
            | st::ADDR
            | st::CPU
            | st::PERIOD
            | st::WEIGHT
            | st::DATA_SRC
            | st::PHYS_ADDR
            | extra,
        ..Attr::default()
    };
    let mut w = CaptureWriter::new(attr, vec![7], "cpu/mem-loads,ldlat=30/P".into());
    w.host = HostInfo {
        nrcpus: (8, 8),
        arch: "x86_64".into(),
        ..HostInfo::default()
    }
    .with_topology(topology);
    for s in samples {
        w.push(s);
    }
    let path = dir.join("numa.perf.data");
    w.write(&path).unwrap();
    path
}

#[test]
fn physical_addresses_and_cpus_give_the_matrix() {
    let Some(root) = tree() else { return };
    let topology = Topology::from_sysfs(&root).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // (cpu, phys, weight): the README's boundaries.
    let cases: [(u32, u64, u64); 8] = [
        (0, 0x1000, 10),       // node 0 CPU, node 0 memory
        (1, 0x07ff_ffff, 20),  // last byte of block 0
        (2, 0x4000_0000, 300), // first byte of node 1
        (5, 0x0800_0000, 400), // first byte of block 1, node 0, from node 1
        (7, 0x7fff_ffff, 50),  // last byte of node 1
        (4, 0x4800_1000, 60),  // block 9
        (6, 0x8000_0000, 70),  // past the last block: not RAM
        (3, 0, 80),            // no physical address
    ];
    let samples: Vec<Vec<u8>> = cases
        .iter()
        .enumerate()
        .map(|(i, (cpu, phys, w))| {
            let remote = match (topology.node_of_cpu(*cpu), topology.node_of_phys(*phys)) {
                (Some(c), Some(m)) => c != m && *phys != 0,
                _ => false,
            };
            let src = if remote { REMOTE_RAM_HIT } else { RAM_HIT };
            sample(
                1000 + i as u64,
                *cpu,
                0x7f00_0000_0000 + i as u64 * 64,
                *w,
                src,
                *phys,
            )
        })
        .collect();
    let path = capture(tmp.path(), &topology, &samples);
    let (p, _) = profile_capture(&path, "numa", &StackOptions::default()).unwrap();
    let n = p.numa.as_ref().unwrap();
    assert_eq!(n.source, "phys_addr");
    let matrix: Vec<(u32, u32, u64, u64)> = n
        .matrix
        .iter()
        .map(|c| (c.cpu_node, c.mem_node, c.samples, c.weight_total))
        .collect();
    assert_eq!(
        matrix,
        [
            (0, 0, 2, 30),
            (0, 1, 1, 300),
            (1, 0, 1, 400),
            (1, 1, 2, 110)
        ]
    );
    assert_eq!(n.samples, 6);
    assert!((n.local_share - 4.0 / 6.0).abs() < 1e-12);
    assert_eq!(n.unplaced.values().sum::<u64>(), 2);
    assert!(n.unplaced.keys().any(|k| k.contains("no memory block")));
    assert!(n.unplaced.keys().any(|k| k.contains("not present")));
    let nodes: Vec<(u32, &str)> = n.nodes.iter().map(|r| (r.node, r.cpus.as_str())).collect();
    assert_eq!(nodes, [(0, "0-3"), (1, "4-7")]);
    // The remote accesses' code and data: two samples.
    assert_eq!(n.remote_code.iter().map(|c| c.samples).sum::<u64>(), 2);
    assert_eq!(n.remote_data.iter().map(|d| d.samples).sum::<u64>(), 2);
    // The memory section sees the same samples, remote ones named as perf names them.
    let m = p.memory.as_ref().unwrap();
    assert_eq!(m.samples, 8);
    assert!(m
        .levels
        .iter()
        .any(|l| l.level == "Remote node, same socket RAM hit" && l.samples == 2));
    // JSON: the pinned layout, integers for counts and weights.
    let j = serde_json::to_value(&p).unwrap();
    assert_eq!(j["numa"]["source"], "phys_addr");
    assert_eq!(j["numa"]["matrix"][1]["cpu_node"], 0);
    assert_eq!(j["numa"]["matrix"][1]["mem_node"], 1);
    assert_eq!(j["numa"]["matrix"][1]["samples"], 1);
    assert_eq!(j["numa"]["matrix"][1]["weight_total"], 300);
    assert!(j["numa"]["local_share"].is_f64());
    assert!(j["numa"]["nodes"].is_array());
    let text = sparkles_report::profile::table(&p, 10);
    assert!(
        text.contains("numa (phys_addr): 6 samples placed, 66.7% local"),
        "{text}"
    );
}

#[test]
fn without_a_topology_the_reason_is_given() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = Topology::default();
    let path = capture(
        tmp.path(),
        &empty,
        &[sample(1, 0, 0x7f00_0000_0000, 5, RAM_HIT, 0x1000)],
    );
    let (p, _) = profile_capture(&path, "numa", &StackOptions::default()).unwrap();
    assert!(p.numa.is_none());
    assert!(
        p.notes
            .iter()
            .any(|n| n.contains("no NUMA section") && n.contains("MEM_TOPOLOGY")),
        "{:?}",
        p.notes
    );
}

#[test]
fn a_huge_page_is_counted_once_with_its_size() {
    let Some(root) = tree() else { return };
    let topology = Topology::from_sysfs(&root).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let huge = 2 << 20;
    let samples = vec![
        // Three loads in one 2 MiB page on node 1, from CPU 4 (node 1).
        sample_sized(1, 4, 0x7f00_0020_0000, 5, RAM_HIT, 0x4020_0000, Some(huge)),
        sample_sized(2, 4, 0x7f00_0020_1000, 5, RAM_HIT, 0x4020_1000, Some(huge)),
        sample_sized(3, 5, 0x7f00_003f_f000, 5, RAM_HIT, 0x403f_f000, Some(huge)),
        // Two loads in two 4 KiB pages on node 0, from CPU 0.
        sample_sized(4, 0, 0x5500_0000_1000, 5, RAM_HIT, 0x1000, Some(4096)),
        sample_sized(5, 0, 0x5500_0000_2008, 5, RAM_HIT, 0x2008, Some(4096)),
    ];
    let path = capture_with(tmp.path(), &topology, &samples, st::DATA_PAGE_SIZE);
    let (p, _) = profile_capture(&path, "huge", &StackOptions::default()).unwrap();
    let n = p.numa.unwrap();
    let pages: Vec<(u32, u64, u64, u64)> = n
        .pages
        .iter()
        .map(|r| (r.node, r.pages, r.bytes, r.huge_pages))
        .collect();
    assert_eq!(pages, [(0, 2, 8192, 0), (1, 1, huge, 1)]);
    assert_eq!(n.samples, 5);
    assert_eq!(n.local_share, 1.0);
}
