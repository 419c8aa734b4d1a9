//! NUMA topology: which CPUs and which physical memory each node has, and the distances
//! between nodes; read from sysfs (this machine's, or a fake root for tests), or from a
//! capture's NUMA_TOPOLOGY and MEM_TOPOLOGY header features.
//!
//! sysfs (`Documentation/ABI/stable/sysfs-devices-node`,
//! `Documentation/ABI/testing/sysfs-devices-memory`):
//! `devices/system/node/nodeN/{cpulist,distance,meminfo}`; memory in blocks of
//! `devices/system/memory/block_size_bytes` (hex without `0x`), block B holding physical
//! addresses `[B * size, (B + 1) * size)`, on the node named by the `nodeN` entry inside
//! `devices/system/memory/memoryB/` (a symlink on a real system).

use std::path::{Path, PathBuf};

use crate::features::Features;

/// One node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Its number.
    pub id: u32,
    /// Its CPUs.
    pub cpus: Vec<u32>,
    /// Distances to each node, in node order (`10` is local), where known.
    pub distances: Vec<u32>,
    /// Memory, kB, where known.
    pub mem_total_kb: Option<u64>,
    /// Free memory, kB, where known.
    pub mem_free_kb: Option<u64>,
}

/// The machine's nodes and where its physical memory lies.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Topology {
    /// Nodes, by number.
    pub nodes: Vec<Node>,
    /// Bytes per memory block (0: unknown).
    pub block_size: u64,
    /// `(first block, last block + 1, node)` runs of blocks, sorted.
    pub blocks: Vec<(u64, u64, u32)>,
}

/// Why a sysfs tree gives no topology.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: no NUMA nodes (a kernel without CONFIG_NUMA, or no sysfs)", dir.display())]
pub struct NoNodes {
    /// The folder that has no `nodeN` entries.
    pub dir: PathBuf,
}

/// Parses a CPU or node list (`0-3,8,10-11`).
pub fn parse_list(list: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.trim().parse::<u32>().ok()),
        }
    }
    out
}

/// A CPU or node list as the kernel prints one (`0-3,8`).
pub fn format_list(items: &[u32]) -> String {
    let mut sorted = items.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The numbers `N` of the entries `PREFIXN` of `dir`, sorted.
pub fn numbered(dir: &Path, prefix: &str) -> Vec<u64> {
    let mut out: Vec<u64> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str()?.strip_prefix(prefix)?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    out.sort_unstable();
    out
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

impl Topology {
    /// The topology under `root` (`/` for this machine): `Err` with the reason where
    /// there is no node directory.
    pub fn from_sysfs(root: &Path) -> Result<Topology, NoNodes> {
        let system = root.join("sys/devices/system");
        let node_dir = system.join("node");
        let ids = numbered(&node_dir, "node");
        if ids.is_empty() {
            return Err(NoNodes { dir: node_dir });
        }
        let mut nodes = Vec::new();
        for id in ids {
            let dir: PathBuf = node_dir.join(format!("node{id}"));
            let meminfo = read(&dir.join("meminfo")).unwrap_or_default();
            let field = |name: &str| {
                meminfo
                    .lines()
                    .find(|l| l.contains(name))
                    .and_then(|l| l.split_whitespace().rev().nth(1)?.parse().ok())
            };
            nodes.push(Node {
                id: id as u32,
                cpus: parse_list(&read(&dir.join("cpulist")).unwrap_or_default()),
                distances: read(&dir.join("distance"))
                    .unwrap_or_default()
                    .split_whitespace()
                    .filter_map(|d| d.parse().ok())
                    .collect(),
                mem_total_kb: field("MemTotal:"),
                mem_free_kb: field("MemFree:"),
            });
        }
        let memory = system.join("memory");
        let block_size = read(&memory.join("block_size_bytes"))
            .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
            .unwrap_or(0);
        let mut blocks = Vec::new();
        for block in numbered(&memory, "memory") {
            if let Some(&node) = numbered(&memory.join(format!("memory{block}")), "node").first() {
                blocks.push((block, node as u32));
            }
        }
        Ok(Topology {
            nodes,
            block_size,
            blocks: runs(blocks),
        })
    }

    /// The topology a capture recorded (NUMA_TOPOLOGY for nodes and CPUs, MEM_TOPOLOGY
    /// for memory blocks); `None` where it recorded no nodes.
    pub fn from_features(f: &Features) -> Option<Topology> {
        let numa = f.numa_topology.as_ref().filter(|n| !n.is_empty())?;
        let nodes = numa
            .iter()
            .map(|n| Node {
                id: n.node,
                cpus: parse_list(&n.cpus),
                distances: Vec::new(),
                mem_total_kb: Some(n.mem_total_kb),
                mem_free_kb: Some(n.mem_free_kb),
            })
            .collect();
        let (block_size, blocks) = match &f.mem_topology {
            Some(m) => (
                m.block_size,
                runs(
                    m.nodes
                        .iter()
                        .flat_map(|n| n.blocks.iter().map(move |b| (*b, n.node as u32)))
                        .collect(),
                ),
            ),
            None => (0, Vec::new()),
        };
        Some(Topology {
            nodes,
            block_size,
            blocks,
        })
    }

    /// The node of physical address `phys`: `None` where no memory block holds it (or
    /// the memory layout is unknown).
    pub fn node_of_phys(&self, phys: u64) -> Option<u32> {
        if self.block_size == 0 {
            return None;
        }
        let block = phys / self.block_size;
        let i = self.blocks.partition_point(|r| r.0 <= block);
        let r = self.blocks.get(i.checked_sub(1)?)?;
        (block < r.1).then_some(r.2)
    }

    /// The node of CPU `cpu`.
    pub fn node_of_cpu(&self, cpu: u32) -> Option<u32> {
        self.nodes
            .iter()
            .find(|n| n.cpus.contains(&cpu))
            .map(|n| n.id)
    }

    /// Whether physical addresses can be placed (a memory layout is known).
    pub fn knows_memory(&self) -> bool {
        self.block_size > 0 && !self.blocks.is_empty()
    }

    /// The blocks of each node, as MEM_TOPOLOGY records them: `(node, blocks)`.
    pub fn node_blocks(&self) -> Vec<(u64, Vec<u64>)> {
        self.nodes
            .iter()
            .map(|n| {
                let blocks = self
                    .blocks
                    .iter()
                    .filter(|r| r.2 == n.id)
                    .flat_map(|r| r.0..r.1)
                    .collect();
                (u64::from(n.id), blocks)
            })
            .collect()
    }
}

/// `(block, node)` pairs as sorted runs of consecutive blocks on one node.
fn runs(mut blocks: Vec<(u64, u32)>) -> Vec<(u64, u64, u32)> {
    blocks.sort_unstable();
    let mut out: Vec<(u64, u64, u32)> = Vec::new();
    for (b, node) in blocks {
        match out.last_mut() {
            Some(r) if r.1 == b && r.2 == node => r.1 = b + 1,
            _ => out.push((b, b + 1, node)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse() {
        assert_eq!(parse_list("0-3,8,10-11\n"), [0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_list(""), Vec::<u32>::new());
        assert_eq!(format_list(&[11, 0, 1, 2, 3, 8, 10]), "0-3,8,10-11");
        assert_eq!(format_list(&parse_list("4-7")), "4-7");
    }

    #[test]
    fn blocks_become_runs_and_place_addresses() {
        let t = Topology {
            nodes: Vec::new(),
            block_size: 0x100,
            blocks: runs(vec![(3, 1), (0, 0), (1, 0), (2, 1), (5, 1)]),
        };
        assert_eq!(t.blocks, [(0, 2, 0), (2, 4, 1), (5, 6, 1)]);
        assert_eq!(t.node_of_phys(0xff), Some(0));
        assert_eq!(t.node_of_phys(0x1ff), Some(0));
        assert_eq!(t.node_of_phys(0x200), Some(1));
        assert_eq!(t.node_of_phys(0x400), None);
        assert_eq!(t.node_of_phys(0x5ff), Some(1));
        assert_eq!(t.node_of_phys(0x600), None);
    }
}
