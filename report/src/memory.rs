//! Memory attribution: for the samples of a capture that carry a data source
//! (`PERF_SAMPLE_DATA_SRC`: PEBS load latency, IBS op), which memory level served each
//! sampled access, from which code, touching which data; weighted by the sample's
//! weight (the access latency in cycles: the u64 `WEIGHT`, or `WEIGHT_STRUCT`'s first
//! field).
//!
//! - Levels: samples, their share, and latency total, mean and p90 per level, the level
//!   named as perf 6.4+ names it ([`DataSource::level`]).
//! - Code: the sampled instruction's function and line (innermost frame, inlined
//!   functions their own), by total latency.
//! - Data objects: the variable (ELF data symbol) holding the address, else the kind of
//!   memory the address-space model says it is (heap, stack, anonymous, file, kernel).

use std::collections::BTreeMap;
use std::rc::Rc;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use sparkles_perf_data::data_src::{shift, DataSource, LEVEL_BITS};
use sparkles_symbolize::symbolizer::{DataKind, DataObject};

use crate::names::{normalize, Name};
use crate::stacks::NamedFrame;

/// Rows kept in the JSON's `code` and `data_objects`.
pub const ROWS: usize = 50;

/// One memory level's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Level {
    /// The level, as perf 6.4+ names it ("L1 hit", "Remote node, same socket RAM hit").
    pub level: String,
    /// Samples served there.
    pub samples: u64,
    /// Their share of all memory samples (0 to 1).
    pub share: f64,
    /// Their weights summed (latency, cycles).
    pub weight_total: u64,
    /// `weight_total / samples`.
    pub weight_mean: f64,
    /// The 90th percentile of their weights (nearest rank).
    pub weight_p90: u64,
    /// Their share of all memory samples' weight (0 to 1).
    pub weight_share: f64,
}

/// One code location's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeRow {
    /// The function of the sampled instruction (inlined functions their own), or its
    /// address where nothing names it.
    pub function: String,
    /// Source file.
    pub file: Option<String>,
    /// Source line.
    pub line: Option<u32>,
    /// The module (mapping) holding the code.
    pub module: Option<String>,
    /// The ELF symbol holding the instruction (the function an inlined one is in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// Samples.
    pub samples: u64,
    /// Weights summed.
    pub weight_total: u64,
    /// `weight_total / samples`.
    pub weight_mean: f64,
    /// Share of all memory samples' weight (0 to 1).
    pub share: f64,
    /// The level that served most of its weight.
    pub top_level: String,
}

impl CodeRow {
    /// `function[ in symbol][  file:line]`, as the tables print a row.
    pub fn location(&self) -> String {
        let mut out = self.function.clone();
        if let Some(s) = &self.symbol {
            out.push_str(&format!(" in {s}"));
        }
        if let (Some(f), Some(l)) = (&self.file, self.line) {
            out.push_str(&format!("  {f}:{l}"));
        }
        out
    }
}

/// One data object's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataRow {
    /// The variable's name; else `[heap]`, `[stack]`, `[anon]`, the file, `[kernel]`,
    /// `[unknown]`.
    pub name: String,
    /// `global`, `heap`, `stack`, `anon`, `file`, `kernel` or `unknown`.
    pub kind: String,
    /// The module or file mapped there.
    pub module: Option<String>,
    /// For a variable: its ELF section (`.data`, `.bss`, `.rodata`, …).
    pub section: Option<String>,
    /// For a variable, its address in the module; for anonymous memory, heap and
    /// stack, the mapping's first address (hex).
    pub address: Option<String>,
    /// Samples.
    pub samples: u64,
    /// Weights summed.
    pub weight_total: u64,
    /// `weight_total / samples`.
    pub weight_mean: f64,
    /// Share of all memory samples' weight (0 to 1).
    pub share: f64,
    /// The level that served most of its weight.
    pub top_level: String,
}

/// A breakdown row (ops, TLB, snoop).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// The value as perf prints it ("LOAD", "L1 or L2 hit", "HitM").
    pub name: String,
    /// Samples.
    pub samples: u64,
    /// Weights summed.
    pub weight_total: u64,
}

/// The memory section of a profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// Samples that carry a data source.
    pub samples: u64,
    /// Their weights summed.
    pub weight_total: u64,
    /// What the weight is: `latency (WEIGHT)`, `latency (WEIGHT_STRUCT, first field)`,
    /// or `none` (the samples carry no weight: every weight is 0).
    pub weight: String,
    /// Instruction latencies summed (`WEIGHT_STRUCT`'s second field), where present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ins_lat_total: Option<u64>,
    /// By level, most samples first.
    pub levels: Vec<Level>,
    /// Code locations by weight, the top [`ROWS`].
    pub code: Vec<CodeRow>,
    /// Data objects by weight, the top [`ROWS`].
    pub data_objects: Vec<DataRow>,
    /// By operation (LOAD, STORE, …).
    pub ops: Vec<Breakdown>,
    /// By TLB access.
    pub tlb: Vec<Breakdown>,
    /// By snoop result.
    pub snoop: Vec<Breakdown>,
    /// By the cache or memory region that served the access (`mem_region`), where the
    /// PMU says; absent where no sample does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<Breakdown>,
    /// Locked accesses.
    pub locked: u64,
    /// Accesses served remotely (another core's cache across nodes, another node,
    /// socket or board).
    pub remote: u64,
    /// Accesses that hit a modified line in another cache.
    pub hitm: u64,
    /// Samples without a data address (their data object is `[unknown]`).
    pub without_address: u64,
}

#[derive(Default)]
struct Acc {
    samples: u64,
    weight: u64,
    /// Weight per level index (few levels: a short list).
    levels: Vec<(usize, u64)>,
}

impl Acc {
    fn add(&mut self, weight: u64, level: usize) {
        self.samples += 1;
        self.weight += weight;
        match self.levels.iter_mut().find(|(l, _)| *l == level) {
            Some((_, w)) => *w += weight,
            None => self.levels.push((level, weight)),
        }
    }
}

/// What a code location is keyed by: the frame's function, file, module and symbol by
/// their names' ids (one string table per capture), and its line; or the address where
/// nothing names the code.
type CodeKey = (u32, u32, u32, u32, u64, u32);

/// A code row's name: function, file, line, module, containing symbol.
type CodeName = (
    String,
    Option<String>,
    Option<u32>,
    Option<String>,
    Option<String>,
);

/// A code row: what it shows, and its sums.
struct CodeAcc {
    function: Option<Name>,
    file: Option<Name>,
    line: Option<u32>,
    module: Option<Name>,
    symbol: Option<Name>,
    addr: u64,
    acc: Acc,
}

/// A name's id, one past it: 0 stands for none.
fn id(s: &Option<Name>) -> u32 {
    s.as_ref().map_or(0, |n| n.id() + 1)
}

/// What a data object is keyed by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum DataKey {
    Variable { module: Option<Rc<str>>, start: u64 },
    Mapping { kind: DataKind, start: u64 },
    File(Option<Rc<str>>),
    Kind(DataKind),
}

/// Accumulates memory samples.
pub struct MemoryBuilder {
    samples: u64,
    weight_total: u64,
    ins_lat_total: Option<u64>,
    weight_kind: Option<&'static str>,
    /// Level index by the data source's level bits.
    level_of_bits: FxHashMap<u64, usize>,
    /// Level names, index by index.
    level_names: Vec<String>,
    /// Per level index: samples, weights.
    level_weights: Vec<Vec<u64>>,
    code: FxHashMap<CodeKey, usize>,
    code_rows: Vec<CodeAcc>,
    data: FxHashMap<DataKey, (Acc, DataObject)>,
    /// Samples and weight by mem_op, mem_dtlb, and mem_snoop | mem_snoopx << 5.
    ops: [(u64, u64); 32],
    tlb: [(u64, u64); 128],
    snoop: [(u64, u64); 128],
    regions: [(u64, u64); 32],
    locked: u64,
    remote: u64,
    hitm: u64,
    without_address: u64,
}

impl std::fmt::Debug for MemoryBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBuilder")
            .field("samples", &self.samples)
            .field("weight_total", &self.weight_total)
            .finish()
    }
}

/// One memory sample, as [`MemoryBuilder::add`] takes it.
#[derive(Debug, Clone, Copy)]
pub struct MemorySample<'a> {
    /// The raw data source.
    pub data_src: u64,
    /// The weight (latency), 0 where the sample has none.
    pub weight: u64,
    /// Instruction latency (`WEIGHT_STRUCT`'s second field).
    pub ins_lat: Option<u16>,
    /// Which weight field the sample carries: `Some(true)` for `WEIGHT_STRUCT`.
    pub weight_struct: Option<bool>,
    /// The sampled instruction's frame (innermost), where the stack has one.
    pub code: Option<&'a NamedFrame>,
    /// The sampled instruction's address.
    pub ip: Option<u64>,
    /// What the data address is; `None` where the sample has no address.
    pub data: Option<&'a DataObject>,
}

impl Default for MemoryBuilder {
    fn default() -> MemoryBuilder {
        MemoryBuilder {
            samples: 0,
            weight_total: 0,
            ins_lat_total: None,
            weight_kind: None,
            level_of_bits: FxHashMap::default(),
            level_names: Vec::new(),
            level_weights: Vec::new(),
            code: FxHashMap::default(),
            code_rows: Vec::new(),
            data: FxHashMap::default(),
            ops: [(0, 0); 32],
            tlb: [(0, 0); 128],
            snoop: [(0, 0); 128],
            regions: [(0, 0); 32],
            locked: 0,
            remote: 0,
            hitm: 0,
            without_address: 0,
        }
    }
}

impl MemoryBuilder {
    /// An empty one.
    pub fn new() -> MemoryBuilder {
        MemoryBuilder::default()
    }

    /// Whether any sample was added.
    pub fn is_empty(&self) -> bool {
        self.samples == 0
    }

    fn level(&mut self, d: &DataSource) -> usize {
        let bits = d.raw & LEVEL_BITS;
        if let Some(&i) = self.level_of_bits.get(&bits) {
            return i;
        }
        let name = d.level();
        let i = match self.level_names.iter().position(|n| *n == name) {
            Some(i) => i,
            None => {
                self.level_names.push(name);
                self.level_weights.push(Vec::new());
                self.level_names.len() - 1
            }
        };
        self.level_of_bits.insert(bits, i);
        i
    }

    /// Adds one sample.
    pub fn add(&mut self, s: &MemorySample<'_>) {
        let d = DataSource::new(s.data_src);
        let level = self.level(&d);
        let w = s.weight;
        self.samples += 1;
        self.weight_total += w;
        self.level_weights[level].push(w);
        if let Some(lat) = s.ins_lat {
            *self.ins_lat_total.get_or_insert(0) += u64::from(lat);
        }
        if self.weight_kind.is_none() {
            self.weight_kind = Some(match s.weight_struct {
                Some(true) => "latency (WEIGHT_STRUCT, first field)",
                Some(false) => "latency (WEIGHT)",
                None => "none",
            });
        }
        for (table, i) in [
            (&mut self.ops[..], usize::from(d.op)),
            (&mut self.tlb[..], usize::from(d.tlb)),
            (&mut self.snoop[..], usize::from(d.snoop | d.snoopx << 5)),
            (&mut self.regions[..], usize::from(d.region)),
        ] {
            table[i].0 += 1;
            table[i].1 += w;
        }
        self.locked += u64::from(d.locked());
        self.remote += u64::from(d.is_remote());
        self.hitm += u64::from(d.hitm());
        // Code: the innermost frame.
        let key: CodeKey = match s.code {
            Some(f) if f.function.is_some() => (
                id(&f.function),
                id(&f.file),
                f.line.unwrap_or(0),
                id(&f.module),
                0,
                id(&f.symbol),
            ),
            f => (
                0,
                0,
                0,
                f.map_or(0, |f| id(&f.module)),
                s.ip.unwrap_or(0),
                0,
            ),
        };
        let i = match self.code.get(&key) {
            Some(&i) => i,
            None => {
                let named = s.code.filter(|f| f.function.is_some());
                self.code_rows.push(CodeAcc {
                    function: named.and_then(|f| f.function.clone()),
                    file: named.and_then(|f| f.file.clone()),
                    line: named.and_then(|f| f.line),
                    module: s.code.and_then(|f| f.module.clone()),
                    symbol: named.and_then(|f| f.symbol.clone()),
                    addr: s.ip.unwrap_or(0),
                    acc: Acc::default(),
                });
                self.code.insert(key, self.code_rows.len() - 1);
                self.code_rows.len() - 1
            }
        };
        self.code_rows[i].acc.add(w, level);
        // Data.
        let Some(o) = s.data else {
            self.without_address += 1;
            let unknown = DataObject {
                kind: DataKind::Unknown,
                mapping: None,
                mapping_start: 0,
                symbol: None,
            };
            self.data
                .entry(DataKey::Kind(DataKind::Unknown))
                .or_insert_with(|| (Acc::default(), unknown))
                .0
                .add(w, level);
            return;
        };
        let key = match (o.kind, &o.symbol) {
            (DataKind::Global, Some(sym)) => DataKey::Variable {
                module: o.mapping.clone(),
                start: sym.start,
            },
            (DataKind::Heap | DataKind::Stack | DataKind::Anon, _) => DataKey::Mapping {
                kind: o.kind,
                start: o.mapping_start,
            },
            (DataKind::File, _) => DataKey::File(o.mapping.clone()),
            (kind, _) => DataKey::Kind(kind),
        };
        match self.data.get_mut(&key) {
            Some((acc, _)) => acc.add(w, level),
            None => {
                let mut acc = Acc::default();
                acc.add(w, level);
                self.data.insert(key, (acc, o.clone()));
            }
        }
    }

    /// The section.
    pub fn finish(self) -> Memory {
        let n = self.samples.max(1) as f64;
        let total = self.weight_total.max(1) as f64;
        let top_level = |acc: &Acc| -> String {
            acc.levels
                .iter()
                .max_by_key(|(i, w)| (*w, std::cmp::Reverse(*i)))
                .map(|(i, _)| self.level_names[*i].clone())
                .unwrap_or_default()
        };
        let mut levels: Vec<Level> = self
            .level_names
            .iter()
            .zip(self.level_weights.iter())
            .map(|(name, weights)| {
                let samples = weights.len() as u64;
                let weight_total: u64 = weights.iter().sum();
                Level {
                    level: name.clone(),
                    samples,
                    share: samples as f64 / n,
                    weight_total,
                    weight_mean: weight_total as f64 / samples.max(1) as f64,
                    weight_p90: p90(weights),
                    weight_share: weight_total as f64 / total,
                }
            })
            .collect();
        levels.sort_by(|a, b| {
            b.samples
                .cmp(&a.samples)
                .then(b.weight_total.cmp(&a.weight_total))
                .then(a.level.cmp(&b.level))
        });
        // Rows of one function and line (inlined copies, equal names) merged.
        let mut merged: BTreeMap<CodeName, Acc> = BTreeMap::new();
        for c in &self.code_rows {
            let function = match &c.function {
                Some(f) => normalize(f),
                None => format!("{:#x}", c.addr),
            };
            let symbol = c
                .symbol
                .as_deref()
                .map(normalize)
                .filter(|s| *s != function);
            let key = (
                function,
                c.file.as_deref().map(str::to_string),
                c.line,
                c.module.as_deref().map(str::to_string),
                symbol,
            );
            let m = merged.entry(key).or_default();
            m.samples += c.acc.samples;
            m.weight += c.acc.weight;
            for (l, w) in &c.acc.levels {
                match m.levels.iter_mut().find(|(x, _)| x == l) {
                    Some((_, v)) => *v += w,
                    None => m.levels.push((*l, *w)),
                }
            }
        }
        let mut code: Vec<CodeRow> = merged
            .into_iter()
            .map(|((function, file, line, module, symbol), acc)| CodeRow {
                function,
                file,
                line,
                module,
                symbol,
                samples: acc.samples,
                weight_total: acc.weight,
                weight_mean: acc.weight as f64 / acc.samples.max(1) as f64,
                share: acc.weight as f64 / total,
                top_level: top_level(&acc),
            })
            .collect();
        code.sort_by(|a, b| {
            b.weight_total
                .cmp(&a.weight_total)
                .then(b.samples.cmp(&a.samples))
                .then(a.function.cmp(&b.function))
                .then(a.line.cmp(&b.line))
        });
        code.truncate(ROWS);
        let mut data_objects: Vec<DataRow> = self
            .data
            .values()
            .map(|(acc, o)| {
                let (name, section, address) = match (&o.symbol, o.kind) {
                    (Some(sym), _) => (
                        sym.name.to_string(),
                        Some(sym.section.to_string()),
                        Some(format!("{:#x}", sym.start)),
                    ),
                    (None, DataKind::Heap) => (
                        "[heap]".into(),
                        None,
                        Some(format!("{:#x}", o.mapping_start)),
                    ),
                    (None, DataKind::Stack) => (
                        "[stack]".into(),
                        None,
                        Some(format!("{:#x}", o.mapping_start)),
                    ),
                    (None, DataKind::Anon) => (
                        "[anon]".into(),
                        None,
                        Some(format!("{:#x}", o.mapping_start)),
                    ),
                    (None, DataKind::File) => (
                        o.mapping.as_deref().unwrap_or("[file]").to_string(),
                        None,
                        None,
                    ),
                    (None, DataKind::Kernel) => ("[kernel]".into(), None, None),
                    (None, _) => ("[unknown]".into(), None, None),
                };
                DataRow {
                    name,
                    kind: o.kind.as_str().into(),
                    module: o.mapping.as_deref().map(str::to_string),
                    section,
                    address,
                    samples: acc.samples,
                    weight_total: acc.weight,
                    weight_mean: acc.weight as f64 / acc.samples.max(1) as f64,
                    share: acc.weight as f64 / total,
                    top_level: top_level(acc),
                }
            })
            .collect();
        data_objects.sort_by(|a, b| {
            b.weight_total
                .cmp(&a.weight_total)
                .then(b.samples.cmp(&a.samples))
                .then(a.name.cmp(&b.name))
                .then(a.address.cmp(&b.address))
        });
        data_objects.truncate(ROWS);
        let breakdown = |mut rows: Vec<Breakdown>| {
            rows.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.name.cmp(&b.name)));
            rows
        };
        let table = |t: &[(u64, u64)], name: &dyn Fn(u64) -> String| {
            breakdown(merge(
                t.iter()
                    .enumerate()
                    .filter(|(_, (n, _))| *n > 0)
                    .map(|(i, sw)| (name(i as u64), *sw)),
            ))
        };
        let ops = table(&self.ops, &|i| {
            DataSource::new(i << shift::OP).op_name().to_string()
        });
        let tlb = table(&self.tlb, &|i| DataSource::new(i << shift::TLB).tlb_name());
        let snoop = table(&self.snoop, &|i| {
            DataSource::new(((i & 0x1f) << shift::SNOOP) | ((i >> 5) << shift::SNOOPX)).snoop_name()
        });
        // Region 0 is "not said": no row.
        let mut regions = self.regions;
        regions[0] = (0, 0);
        let regions = table(&regions, &|i| {
            DataSource::new(i << shift::REGION)
                .region_name()
                .unwrap_or_default()
        });
        Memory {
            samples: self.samples,
            weight_total: self.weight_total,
            weight: self.weight_kind.unwrap_or("none").to_string(),
            ins_lat_total: self.ins_lat_total,
            levels,
            code,
            data_objects,
            ops,
            tlb,
            snoop,
            regions,
            locked: self.locked,
            remote: self.remote,
            hitm: self.hitm,
            without_address: self.without_address,
        }
    }
}

/// Rows of the same name (different bits can print alike) summed.
fn merge(rows: impl Iterator<Item = (String, (u64, u64))>) -> Vec<Breakdown> {
    let mut by: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for (name, (s, w)) in rows {
        let e = by.entry(name).or_default();
        e.0 += s;
        e.1 += w;
    }
    by.into_iter()
        .map(|(name, (samples, weight_total))| Breakdown {
            name,
            samples,
            weight_total,
        })
        .collect()
}

/// The 90th percentile by nearest rank: the smallest weight at least 90% of the weights
/// are at or below.
pub fn p90(weights: &[u64]) -> u64 {
    if weights.is_empty() {
        return 0;
    }
    let mut w = weights.to_vec();
    let rank = (w.len() * 9).div_ceil(10).max(1) - 1;
    let (_, v, _) = w.select_nth_unstable(rank);
    *v
}

fn pct(f: f64) -> String {
    format!("{:.1}%", 100.0 * f)
}

/// The memory section as text: the level table, then the top `n` code locations and
/// data objects.
pub fn table(m: &Memory, n: usize) -> String {
    let mut out = format!(
        "\nmemory: {} samples with a data source, total weight {} ({})\n",
        m.samples, m.weight_total, m.weight
    );
    out.push_str(&format!(
        "{:<42} {:>9} {:>7} {:>12} {:>9} {:>7}\n",
        "level", "samples", "share", "weight", "mean", "p90"
    ));
    for l in &m.levels {
        out.push_str(&format!(
            "{:<42} {:>9} {:>7} {:>12} {:>9.1} {:>7}\n",
            l.level,
            l.samples,
            pct(l.share),
            l.weight_total,
            l.weight_mean,
            l.weight_p90
        ));
    }
    out.push_str(&format!(
        "remote {} · HITM {} · locked {}{}\n",
        m.remote,
        m.hitm,
        m.locked,
        if m.without_address > 0 {
            format!(" · {} without a data address", m.without_address)
        } else {
            String::new()
        }
    ));
    out.push_str(&format!(
        "\nmemory by code (weight)\n{:>7} {:>9} {:>9}  {:<22} location\n",
        "weight%", "samples", "mean", "mostly"
    ));
    for c in m.code.iter().take(n) {
        let module = c
            .module
            .as_deref()
            .map(|m| format!("  ({})", m.rsplit('/').next().unwrap_or(m)))
            .unwrap_or_default();
        out.push_str(&format!(
            "{:>7} {:>9} {:>9.1}  {:<22} {}{}\n",
            pct(c.share),
            c.samples,
            c.weight_mean,
            c.top_level,
            c.location(),
            module
        ));
    }
    out.push_str(&format!(
        "\nmemory by data object (weight)\n{:>7} {:>9} {:>9}  {:<22} {:<7} object\n",
        "weight%", "samples", "mean", "mostly", "kind"
    ));
    for d in m.data_objects.iter().take(n) {
        let mut what = d.name.clone();
        if let Some(s) = &d.section {
            what.push_str(&format!(" ({s}"));
            if let Some(m) = &d.module {
                what.push_str(&format!(", {}", m.rsplit('/').next().unwrap_or(m)));
            }
            what.push(')');
        } else if let Some(a) = &d.address {
            what.push_str(&format!(" at {a}"));
        }
        out.push_str(&format!(
            "{:>7} {:>9} {:>9.1}  {:<22} {:<7} {}\n",
            pct(d.share),
            d.samples,
            d.weight_mean,
            d.top_level,
            d.kind,
            what
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::Names;
    use crate::stacks::test_frame as frame;

    #[test]
    fn p90_is_the_nearest_rank() {
        assert_eq!(p90(&[]), 0);
        assert_eq!(p90(&[7]), 7);
        let w: Vec<u64> = (1..=10).collect();
        assert_eq!(p90(&w), 9);
        let w: Vec<u64> = (1..=11).rev().collect();
        assert_eq!(p90(&w), 10);
        let w: Vec<u64> = (1..=100).collect();
        assert_eq!(p90(&w), 90);
    }

    #[test]
    fn levels_code_and_data_are_summed_by_weight() {
        let l1 = 0x68100142; // L1 hit (mem_lvl only)
        let ram = (0x0d_u64 << 33) | (0x80 | 0x2) << 5 | 0x2; // RAM hit, lvl_num
        let remote = (0x0d_u64 << 33) | (1 << 37) | (2 << 43) | (0x100 | 0x2) << 5 | 0x2;
        let mut names = Names::new();
        let hot = frame(&mut names, "app::walk::h0123456789abcdef", 10);
        let cold = frame(&mut names, "app::init", 3);
        let heap = DataObject {
            kind: DataKind::Heap,
            mapping: Some(Rc::from("[heap]")),
            mapping_start: 0x5000,
            symbol: None,
        };
        let mut b = MemoryBuilder::new();
        let mut add = |data_src: u64, weight: u64, code: &NamedFrame, data: Option<&DataObject>| {
            b.add(&MemorySample {
                data_src,
                weight,
                ins_lat: None,
                weight_struct: Some(false),
                code: Some(code),
                ip: Some(0x1000),
                data,
            })
        };
        for w in [4, 5, 6] {
            add(l1, w, &cold, Some(&heap));
        }
        add(ram, 200, &hot, Some(&heap));
        add(remote, 400, &hot, None);
        let m = b.finish();
        assert_eq!((m.samples, m.weight_total), (5, 615));
        let names: Vec<&str> = m.levels.iter().map(|l| l.level.as_str()).collect();
        assert_eq!(
            names,
            // Most samples first; of equal samples, most weight.
            ["L1 hit", "Remote node, same socket RAM hit", "RAM hit"]
        );
        assert_eq!(m.levels[0].samples, 3);
        assert_eq!(m.levels[0].weight_total, 15);
        assert_eq!(m.levels[0].weight_p90, 6);
        assert!((m.levels[0].share - 0.6).abs() < 1e-9);
        assert_eq!((m.remote, m.without_address), (1, 1));
        // Code: the hot loop first, its hash dropped, mostly served remotely.
        assert_eq!(m.code[0].function, "app::walk");
        assert_eq!(m.code[0].weight_total, 600);
        assert_eq!(m.code[0].top_level, "Remote node, same socket RAM hit");
        // Data: the sample without an address is [unknown]; the heap has the rest.
        assert_eq!(m.data_objects[0].name, "[unknown]");
        assert_eq!(m.data_objects[1].name, "[heap]");
        assert_eq!(m.data_objects[1].samples, 4);
        assert_eq!(m.data_objects[1].top_level, "RAM hit");
        let json = serde_json::to_value(&m).unwrap_or_default();
        assert!(json["weight_total"].is_u64() && json["levels"][0]["samples"].is_u64());
    }
}
