//! NUMA attribution: for each sampled data access, the node of the CPU that made it and
//! the node of the memory it touched, as a (CPU node, memory node) matrix with the local
//! share, and the code and data behind the remote accesses.
//!
//! Sources of the memory node, in order: `phys_addr` (the sample's physical address
//! placed through the capture's MEM_TOPOLOGY, offline), `move_pages` (asked of the live
//! process while it ran), `first_touch` (page-fault samples: where pages were first
//! touched, never access sampling).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sparkles_perf_data::topology::{format_list, Topology};

use crate::memory::{CodeRow, DataRow, MemoryBuilder, MemorySample};

/// One node of the topology.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeRow {
    /// Its number.
    pub node: u32,
    /// Its CPUs (`0-3`).
    pub cpus: String,
    /// Its memory, kB, where known.
    pub memory_kb: Option<u64>,
    /// Distances to each node, where known.
    pub distances: Vec<u32>,
}

/// One cell of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// The node of the CPU that made the access.
    pub cpu_node: u32,
    /// The node of the memory it touched.
    pub mem_node: u32,
    /// Samples.
    pub samples: u64,
    /// Their weights summed (latency where the samples carry one, else 0).
    pub weight_total: u64,
}

/// The distinct pages placed on one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageRow {
    /// The node.
    pub node: u32,
    /// Distinct pages sampled there (a huge page once).
    pub pages: u64,
    /// Their bytes (each page its own size: DATA_PAGE_SIZE where sampled).
    pub bytes: u64,
    /// Of them, pages larger than the base page (transparent or hugetlb huge pages).
    pub huge_pages: u64,
}

/// A sampled page: its process, first address and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Page {
    /// The process.
    pub pid: u32,
    /// Its first address.
    pub start: u64,
    /// Its size, bytes.
    pub size: u64,
}

impl Page {
    /// The page of `addr` in `pid`, `size` bytes (a power of two).
    pub fn of(pid: u32, addr: u64, size: u64) -> Page {
        let size = if size.is_power_of_two() { size } else { 4096 };
        Page {
            pid,
            start: addr & !(size - 1),
            size,
        }
    }
}

/// The `numa` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Numa {
    /// Where the memory node came from: `phys_addr`, `move_pages` or `first_touch`.
    pub source: String,
    /// The nodes.
    pub nodes: Vec<NodeRow>,
    /// Accesses by (CPU node, memory node), sorted.
    pub matrix: Vec<Cell>,
    /// Placed samples whose CPU and memory share a node, over all placed samples (0–1).
    pub local_share: f64,
    /// Samples placed on both sides.
    pub samples: u64,
    /// Samples whose memory node is unknown, by reason.
    pub unplaced: BTreeMap<String, u64>,
    /// Distinct pages per memory node (a huge page counted once, with its size).
    #[serde(default)]
    pub pages: Vec<PageRow>,
    /// Where the memory node came from, where it is not the sample itself:
    /// `move_pages` (asked of the live process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_source: Option<String>,
    /// The code behind all placed samples (for first-touch placement: the code that
    /// touched the pages first).
    pub code: Vec<CodeRow>,
    /// The data behind all placed samples.
    pub data_objects: Vec<DataRow>,
    /// The code behind the remote accesses, by weight (by samples where there is none).
    pub remote_code: Vec<CodeRow>,
    /// The data behind the remote accesses.
    pub remote_data: Vec<DataRow>,
}

/// Accumulates placed samples.
#[derive(Debug)]
pub struct NumaBuilder {
    topology: Topology,
    source: &'static str,
    cells: BTreeMap<(u32, u32), (u64, u64)>,
    unplaced: BTreeMap<String, u64>,
    remote: MemoryBuilder,
    all: MemoryBuilder,
    node_source: Option<&'static str>,
    /// Distinct pages placed, with their node.
    pages: std::collections::HashMap<Page, u32>,
}

/// Why a sample's memory node is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unplaced {
    /// No physical address (0: the page was not present when sampled).
    NoPhysical,
    /// No memory block holds the physical address.
    NotRam,
    /// The sample has no CPU, or the CPU is on no node.
    NoCpu,
}

impl NumaBuilder {
    /// A builder placing memory through `topology`, the node source named `source`.
    pub fn new(topology: Topology, source: &'static str) -> NumaBuilder {
        NumaBuilder {
            topology,
            source,
            cells: BTreeMap::new(),
            unplaced: BTreeMap::new(),
            remote: MemoryBuilder::new(),
            all: MemoryBuilder::new(),
            node_source: None,
            pages: std::collections::HashMap::new(),
        }
    }

    /// Says where the memory nodes came from, where not from the samples themselves.
    pub fn with_node_source(mut self, source: &'static str) -> NumaBuilder {
        self.node_source = Some(source);
        self
    }

    /// Counts a sample whose memory node is unknown, with the reason.
    pub fn add_unplaced(&mut self, reason: &str) {
        *self.unplaced.entry(reason.to_string()).or_default() += 1;
    }

    /// The topology it places with.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    fn unplaced(&mut self, why: Unplaced) {
        let reason = match why {
            Unplaced::NoPhysical => "no physical address (page not present when sampled)",
            Unplaced::NotRam => "physical address in no memory block",
            Unplaced::NoCpu => "no CPU, or a CPU on no node",
        };
        self.add_unplaced(reason);
    }

    /// Adds a sample whose memory node is `mem_node` (already placed, e.g. by
    /// move_pages).
    pub fn add_node(
        &mut self,
        cpu: Option<u32>,
        mem_node: u32,
        page: Option<Page>,
        s: &MemorySample<'_>,
    ) {
        let Some(cpu_node) = cpu.and_then(|c| self.topology.node_of_cpu(c)) else {
            self.unplaced(Unplaced::NoCpu);
            return;
        };
        if let Some(p) = page {
            self.pages.insert(p, mem_node);
        }
        let cell = self.cells.entry((cpu_node, mem_node)).or_default();
        cell.0 += 1;
        cell.1 += s.weight;
        self.all.add(s);
        if cpu_node != mem_node {
            self.remote.add(s);
        }
    }

    /// Adds a sample by its physical address.
    pub fn add_phys(
        &mut self,
        cpu: Option<u32>,
        phys: Option<u64>,
        page: Option<Page>,
        s: &MemorySample<'_>,
    ) {
        match phys.filter(|&p| p != 0) {
            None => self.unplaced(Unplaced::NoPhysical),
            Some(p) => match self.topology.node_of_phys(p) {
                Some(node) => self.add_node(cpu, node, page, s),
                None => self.unplaced(Unplaced::NotRam),
            },
        }
    }

    /// The section.
    pub fn finish(self) -> Numa {
        let samples: u64 = self.cells.values().map(|c| c.0).sum();
        let local: u64 = self
            .cells
            .iter()
            .filter(|((c, m), _)| c == m)
            .map(|(_, v)| v.0)
            .sum();
        let base = self.pages.keys().map(|p| p.size).min().unwrap_or(4096);
        let mut per_node: BTreeMap<u32, PageRow> = BTreeMap::new();
        for (p, node) in &self.pages {
            let row = per_node.entry(*node).or_insert(PageRow {
                node: *node,
                pages: 0,
                bytes: 0,
                huge_pages: 0,
            });
            row.pages += 1;
            row.bytes += p.size;
            row.huge_pages += u64::from(p.size > base.max(4096));
        }
        // The ten heaviest code and data rows of a set of samples.
        let top = |b: MemoryBuilder| -> (Vec<CodeRow>, Vec<DataRow>) {
            if b.is_empty() {
                return (Vec::new(), Vec::new());
            }
            let mut m = b.finish();
            m.code.truncate(10);
            m.data_objects.truncate(10);
            (m.code, m.data_objects)
        };
        let (code, data_objects) = top(self.all);
        let (remote_code, remote_data) = top(self.remote);
        Numa {
            source: self.source.into(),
            nodes: self
                .topology
                .nodes
                .iter()
                .map(|n| NodeRow {
                    node: n.id,
                    cpus: format_list(&n.cpus),
                    memory_kb: n.mem_total_kb,
                    distances: n.distances.clone(),
                })
                .collect(),
            matrix: self
                .cells
                .iter()
                .map(|((cpu_node, mem_node), (samples, weight_total))| Cell {
                    cpu_node: *cpu_node,
                    mem_node: *mem_node,
                    samples: *samples,
                    weight_total: *weight_total,
                })
                .collect(),
            local_share: if samples == 0 {
                0.0
            } else {
                local as f64 / samples as f64
            },
            samples,
            unplaced: self.unplaced,
            pages: per_node.into_values().collect(),
            node_source: self.node_source.map(str::to_string),
            code,
            data_objects,
            remote_code,
            remote_data,
        }
    }
}

/// The section as text: the matrix, the local and remote shares, the top remote code
/// and data.
pub fn table(n: &Numa, top: usize) -> String {
    let mut out = format!(
        "\nnuma ({}{}): {} samples placed, {:.1}% local, {:.1}% remote\n",
        n.source,
        n.node_source
            .as_deref()
            .map(|s| format!(", nodes from {s}"))
            .unwrap_or_default(),
        n.samples,
        100.0 * n.local_share,
        100.0 * (1.0 - n.local_share) * f64::from(u8::from(n.samples > 0))
    );
    for node in &n.nodes {
        out.push_str(&format!(
            "  node{}: cpus {}{}{}\n",
            node.node,
            node.cpus,
            node.memory_kb
                .map(|k| format!(", {} MiB", k / 1024))
                .unwrap_or_default(),
            if node.distances.is_empty() {
                String::new()
            } else {
                format!(
                    ", distances {}",
                    node.distances
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            }
        ));
    }
    out.push_str(&format!(
        "{:>9} {:>9} {:>10} {:>12} {:>7}\n",
        "cpu node", "mem node", "samples", "weight", "share"
    ));
    for c in &n.matrix {
        out.push_str(&format!(
            "{:>9} {:>9} {:>10} {:>12} {:>6.1}%\n",
            c.cpu_node,
            c.mem_node,
            c.samples,
            c.weight_total,
            100.0 * c.samples as f64 / n.samples.max(1) as f64
        ));
    }
    for p in &n.pages {
        out.push_str(&format!(
            "  node{}: {} distinct pages sampled, {:.1} MiB{}\n",
            p.node,
            p.pages,
            p.bytes as f64 / (1 << 20) as f64,
            if p.huge_pages > 0 {
                format!(" ({} huge pages)", p.huge_pages)
            } else {
                String::new()
            }
        ));
    }
    for (why, count) in &n.unplaced {
        out.push_str(&format!("  not placed: {count} samples: {why}\n"));
    }
    if !n.code.is_empty() {
        let title = if n.source == "first_touch" {
            "pages first touched by code"
        } else {
            "placed accesses by code"
        };
        rows(
            &mut out,
            title,
            "by data object",
            &n.code,
            &n.data_objects,
            top,
        );
    }
    if !n.remote_code.is_empty() {
        rows(
            &mut out,
            "remote accesses by code",
            "remote accesses by data object",
            &n.remote_code,
            &n.remote_data,
            top,
        );
    }
    out
}

/// Code rows then data rows under their titles, the top `top` of each.
fn rows(
    out: &mut String,
    code_title: &str,
    data_title: &str,
    code: &[CodeRow],
    data: &[DataRow],
    top: usize,
) {
    out.push_str(code_title);
    out.push('\n');
    for c in code.iter().take(top) {
        out.push_str(&format!("{:>9} samples  {}\n", c.samples, c.location()));
    }
    out.push_str(data_title);
    out.push('\n');
    for d in data.iter().take(top) {
        out.push_str(&format!(
            "{:>9} samples  {} ({}{})\n",
            d.samples,
            d.name,
            d.kind,
            d.address
                .as_deref()
                .map(|a| format!(" at {a}"))
                .unwrap_or_default()
        ));
    }
}
