//! Flat profiles: a capture's named stacks aggregated, weighted by sample period as perf
//! weights them, into two views (`functions`: the innermost frame, inlined functions
//! their own; `symbols`: the containing ELF symbol, as `perf report --no-children`
//! counts), per source line and per module, with folded stacks for flamegraphs.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::rc::Rc;

use rustc_hash::FxHashMap;

use serde::{Deserialize, Serialize};
use sparkles_perf_data::attr::sample_type as st;
use sparkles_perf_data::sample::Weight;
use sparkles_perf_data::DataSource;
use sparkles_perf_data::{PerfData, Record};

use crate::memory::{MemoryBuilder, MemorySample};
use crate::names::normalize;
use crate::numa::{NumaBuilder, Page};
use crate::stacks::{NamedFrame, NamedStack, StackNamer, StackOptions, Weighting};
use sparkles_perf_data::{pages::PageNodes, topology::Topology};

/// What a frame's code is, for colours and for reading a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// The program's own code (and its dependencies' crates).
    User,
    /// Rust's std, core and alloc.
    Std,
    /// libc and other shared libraries, the vDSO.
    Library,
    /// The kernel.
    Kernel,
    /// Nothing named it.
    Unknown,
}

/// Which kind a named frame is.
pub fn kind_of(f: &NamedFrame) -> Kind {
    let module = f.module.as_deref().unwrap_or("");
    let name = f.function.as_deref().unwrap_or("");
    if module.starts_with("[kernel") || name == "[kernel]" {
        Kind::Kernel
    } else if f.function.is_none() {
        Kind::Unknown
    } else if f.file.as_deref().is_some_and(|p| p.starts_with("/rustc/"))
        || [
            "std::", "core::", "alloc::", "<std::", "<core::", "<alloc::",
        ]
        .iter()
        .any(|p| name.starts_with(p))
    {
        Kind::Std
    } else if module == "[vdso]" || module.ends_with(".so") || module.contains(".so.") {
        Kind::Library
    } else {
        Kind::User
    }
}

/// One row of a flat view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Function or symbol name, normalized (no Rust hash, no clone suffixes).
    pub name: String,
    /// Its module (the mapping's path).
    pub module: Option<String>,
    /// Source file, where one file holds it.
    pub file: Option<String>,
    /// Its hottest line, where known.
    pub line: Option<u32>,
    /// Weight where it is the innermost frame (sample periods summed).
    #[serde(rename = "self")]
    pub self_: u64,
    /// Weight of the samples it is anywhere in (once per sample, recursion or not).
    pub total: u64,
    /// `self` over all samples' weight, percent.
    pub self_pct: f64,
    /// `total` over all samples' weight, percent.
    pub total_pct: f64,
    /// Samples where it is the innermost frame.
    pub self_samples: u64,
    /// What its code is.
    pub kind: Kind,
}

/// One source line of a hot function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineEntry {
    /// The function.
    pub function: String,
    /// Source file.
    pub file: String,
    /// Line.
    pub line: u32,
    /// Weight of samples whose innermost frame is this line.
    #[serde(rename = "self")]
    pub self_: u64,
    /// Percent of all samples' weight.
    pub self_pct: f64,
}

/// How the profile's stacks unwound.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Unwinding {
    /// `dwarf`, `fp` or `auto`.
    pub mode: String,
    /// Samples unwound.
    pub samples: u64,
    /// Stacks that ended before their thread's root, per cause.
    pub truncated: BTreeMap<String, u64>,
    /// Truncated stacks over samples, percent.
    pub truncated_pct: f64,
}

/// A flat profile of one capture (`sparkles.profile/1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// `sparkles.profile/1`.
    pub schema: String,
    /// The case (or the file) profiled.
    pub case: String,
    /// The event sampled.
    pub event: String,
    /// Why that event and not the one asked for, where a fallback happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_note: Option<String>,
    /// Samples.
    pub samples: u64,
    /// Samples and records the kernel dropped (LOST_SAMPLES and LOST).
    pub lost: u64,
    /// All samples' weight (periods summed).
    pub weight: u64,
    /// Innermost frame as self, inlined functions their own rows; by self, descending.
    pub functions: Vec<Entry>,
    /// The containing ELF symbol as self (`perf report --no-children`); by self.
    pub symbols: Vec<Entry>,
    /// Lines of the hottest functions; by self.
    pub lines: Vec<LineEntry>,
    /// Modules by self.
    pub modules: Vec<Entry>,
    /// How the stacks unwound.
    pub unwinding: Unwinding,
    /// Modules that could not be used for names, each with the reason.
    pub notes: Vec<String>,
    /// What a sample weighs: `period` (perf's weighting), `latency` (a memory sample's
    /// weight field, `--weight latency`), `samples`.
    #[serde(default = "period")]
    pub weighting: String,
    /// Which memory level served the sampled accesses, from which code, to which data:
    /// present when the capture's samples carry a data source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<crate::memory::Memory>,
    /// Which node's CPU made each sampled access and which node's memory it touched:
    /// present when the memory node can be told (see [`crate::numa`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa: Option<crate::numa::Numa>,
}

fn period() -> String {
    "period".into()
}

/// Folded stacks (`root;…;leaf weight`), the flamegraph's input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Folded {
    /// Stack line to weight, sorted.
    pub stacks: BTreeMap<String, u64>,
    /// Stack line to its number of samples.
    pub samples: BTreeMap<String, u64>,
    /// Each function's kind, for colours.
    pub kinds: HashMap<String, Kind>,
}

impl Folded {
    /// Reads the text form back (kinds are not kept in it).
    pub fn parse(text: &str) -> Result<Folded, String> {
        let mut f = Folded::default();
        for (i, line) in text.lines().enumerate() {
            let (stack, w) = line
                .rsplit_once(' ')
                .and_then(|(s, w)| Some((s, w.parse::<u64>().ok()?)))
                .ok_or_else(|| format!("line {}: not `stack weight`", i + 1))?;
            *f.stacks.entry(stack.to_string()).or_default() += w;
        }
        Ok(f)
    }

    /// The text form: one `stack weight` line each.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (stack, w) in &self.stacks {
            out.push_str(stack);
            out.push(' ');
            out.push_str(&w.to_string());
            out.push('\n');
        }
        out
    }
}

#[derive(Default)]
struct Counts {
    self_: u64,
    total: u64,
    self_samples: u64,
    module: Option<Rc<str>>,
    file: Option<Rc<str>>,
    kind: Option<Kind>,
    /// Self weight per line, for the hottest.
    lines: HashMap<u32, u64>,
}

impl Counts {
    fn note(&mut self, f: &NamedFrame, kind: Kind) {
        if self.module.is_none() {
            self.module = f.module.clone();
        }
        if self.file.is_none() {
            self.file = f.file.clone();
        }
        self.kind.get_or_insert(kind);
    }
}

/// A frame's names as profiles key it, worked out once per distinct name.
#[derive(Clone)]
struct Keys {
    /// Index of its `functions` row.
    function: usize,
    /// Index of its `symbols` row.
    symbol: usize,
    kind: Kind,
    /// Its label in folded stacks.
    folded: Rc<str>,
}

/// What a frame's keys depend on: its function, symbol and module as given, by the
/// address of their shared strings (a stack's frames share them: see
/// [`NamedFrame`]); the strings are kept alive beside the keys.
type FrameId = (usize, usize, usize);

fn id_of(s: &Option<Rc<str>>) -> usize {
    s.as_ref().map_or(0, |s| s.as_ptr() as usize)
}

/// The strings a [`FrameId`] was made from, kept alive while it is a key.
type Kept = [Option<Rc<str>>; 3];

/// Rows of one view: names, their counts, and the index of each name.
#[derive(Default)]
struct Rows {
    names: Vec<Rc<str>>,
    counts: Vec<Counts>,
    index: FxHashMap<Rc<str>, usize>,
    /// The last sample each row was counted in as total (once per sample).
    seen: Vec<u64>,
}

impl Rows {
    fn id(&mut self, name: &Rc<str>) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len();
        self.names.push(Rc::clone(name));
        self.counts.push(Counts::default());
        self.seen.push(0);
        self.index.insert(Rc::clone(name), i);
        i
    }
}

/// One distinct folded stack.
struct FoldedStack {
    line: String,
    weight: u64,
    samples: u64,
}

/// Accumulates named stacks.
#[derive(Default)]
pub struct Builder {
    samples: u64,
    weight: u64,
    functions: Rows,
    symbols: Rows,
    modules: FxHashMap<Rc<str>, Counts>,
    /// Self weight per (function row, file, line); the file by its string's address,
    /// kept alive in the value.
    lines: FxHashMap<(usize, usize, u32), (Rc<str>, u64)>,
    /// Distinct stacks by their frames' folded labels (addresses, the truncation mark
    /// first), and each one's line and sums.
    stack_ids: FxHashMap<Box<[usize]>, usize>,
    stacks: Vec<FoldedStack>,
    kinds: HashMap<String, Kind>,
    /// Keys per (function, symbol, module) as given, with the strings they were keyed by.
    keys: FxHashMap<FrameId, (Keys, Kept)>,
    /// Scratch: one sample's keys and stack id.
    scratch_keys: Vec<Keys>,
    scratch_id: Vec<usize>,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("samples", &self.samples)
            .field("weight", &self.weight)
            .finish()
    }
}

impl Builder {
    /// A new, empty profile.
    pub fn new() -> Builder {
        Builder::default()
    }

    fn keys(&mut self, f: &NamedFrame) -> Keys {
        let id = (id_of(&f.function), id_of(&f.symbol), id_of(&f.module));
        if let Some((k, _)) = self.keys.get(&id) {
            return k.clone();
        }
        let function: Rc<str> = match &f.function {
            Some(n) => Rc::from(normalize(n)),
            None => Rc::from(match &f.module {
                Some(m) => format!("[unknown] ({m})"),
                None => "[unknown]".to_string(),
            }),
        };
        let symbol = match &f.symbol {
            Some(n) => Rc::from(normalize(n)),
            None => Rc::clone(&function),
        };
        let kind = kind_of(f);
        // ';' separates frames and ' ' the weight: neither may be in a name. Kernel
        // frames are marked as perf marks them.
        let mut label = function.replace(';', ":");
        if kind == Kind::Kernel {
            label.push_str("_[k]");
        }
        let k = Keys {
            function: self.functions.id(&function),
            symbol: self.symbols.id(&symbol),
            kind,
            folded: Rc::from(label),
        };
        let kept = [f.function.clone(), f.symbol.clone(), f.module.clone()];
        self.keys.insert(id, (k.clone(), kept));
        k
    }

    /// Adds one sample's stack (innermost first) with its weight.
    pub fn add(&mut self, frames: &[NamedFrame], truncated: bool, weight: u64) {
        self.samples += 1;
        self.weight += weight;
        let sample = self.samples;
        let Some(leaf) = frames.first() else {
            return;
        };
        let mut keys = std::mem::take(&mut self.scratch_keys);
        keys.clear();
        keys.extend(frames.iter().map(|f| self.keys(f)));
        // functions: every frame a row of its own, inlined ones included.
        let c = &mut self.functions.counts[keys[0].function];
        c.self_ += weight;
        c.self_samples += 1;
        c.note(leaf, keys[0].kind);
        if let Some(line) = leaf.line {
            *c.lines.entry(line).or_default() += weight;
            if let Some(file) = &leaf.file {
                self.lines
                    .entry((keys[0].function, file.as_ptr() as usize, line))
                    .or_insert_with(|| (Rc::clone(file), 0))
                    .1 += weight;
            }
        }
        for (f, k) in frames.iter().zip(&keys) {
            if self.functions.seen[k.function] != sample {
                self.functions.seen[k.function] = sample;
                let c = &mut self.functions.counts[k.function];
                c.total += weight;
                c.note(f, k.kind);
            }
        }
        // symbols: one row per physical frame (its containing symbol).
        let mut first = true;
        for (f, k) in frames.iter().zip(&keys).filter(|(f, _)| !f.inlined) {
            let c = &mut self.symbols.counts[k.symbol];
            if first {
                c.self_ += weight;
                c.self_samples += 1;
                first = false;
            }
            if self.symbols.seen[k.symbol] != sample {
                self.symbols.seen[k.symbol] = sample;
                c.total += weight;
            }
            c.note(f, k.kind);
        }
        // modules: the leaf's.
        let module: Rc<str> = leaf.module.clone().unwrap_or_else(|| Rc::from("[unknown]"));
        let c = self.modules.entry(Rc::clone(&module)).or_default();
        c.self_ += weight;
        c.self_samples += 1;
        c.module = Some(module);
        c.kind.get_or_insert(keys[0].kind);
        // folded: the stack by its labels' addresses; its line made once.
        let mut id = std::mem::take(&mut self.scratch_id);
        id.clear();
        id.push(usize::from(truncated));
        id.extend(keys.iter().map(|k| k.folded.as_ptr() as usize));
        match self.stack_ids.get(id.as_slice()) {
            Some(&i) => {
                let s = &mut self.stacks[i];
                s.weight += weight;
                s.samples += 1;
            }
            None => {
                let mut line = String::with_capacity(
                    keys.iter().map(|k| k.folded.len() + 1).sum::<usize>() + 16,
                );
                if truncated {
                    line.push_str("[truncated];");
                }
                for k in keys.iter().rev() {
                    if !self.kinds.contains_key(&*k.folded) {
                        self.kinds.insert(k.folded.to_string(), k.kind);
                    }
                    line.push_str(&k.folded);
                    line.push(';');
                }
                line.pop();
                self.stack_ids
                    .insert(id.clone().into_boxed_slice(), self.stacks.len());
                self.stacks.push(FoldedStack {
                    line,
                    weight,
                    samples: 1,
                });
            }
        }
        self.scratch_id = id;
        self.scratch_keys = keys;
    }

    /// The folded stacks: distinct lines (two stacks can print alike) summed.
    fn folded(&mut self) -> Folded {
        let mut f = Folded {
            kinds: std::mem::take(&mut self.kinds),
            ..Folded::default()
        };
        for s in self.stacks.drain(..) {
            *f.samples.entry(s.line.clone()).or_default() += s.samples;
            *f.stacks.entry(s.line).or_default() += s.weight;
        }
        f
    }

    fn rows<'a>(&self, map: impl Iterator<Item = (&'a Rc<str>, &'a Counts)>) -> Vec<Entry> {
        let pct = |w: u64| 100.0 * w as f64 / self.weight.max(1) as f64;
        let mut rows: Vec<Entry> = map
            .map(|(name, c)| Entry {
                name: name.to_string(),
                module: c.module.as_deref().map(str::to_string),
                file: c.file.as_deref().map(str::to_string),
                line: c
                    .lines
                    .iter()
                    .max_by_key(|(line, w)| (**w, std::cmp::Reverse(**line)))
                    .map(|(l, _)| *l),
                self_: c.self_,
                total: c.total,
                self_pct: pct(c.self_),
                total_pct: pct(c.total),
                self_samples: c.self_samples,
                kind: c.kind.unwrap_or(Kind::Unknown),
            })
            .collect();
        rows.sort_by(|a, b| {
            b.self_
                .cmp(&a.self_)
                .then(b.total.cmp(&a.total))
                .then(a.name.cmp(&b.name))
        });
        rows
    }

    /// The profile, and its folded stacks.
    pub fn finish(
        mut self,
        case: &str,
        event: &str,
        lost: u64,
        unwinding: Unwinding,
    ) -> (Profile, Folded) {
        let functions = self.rows(self.functions.names.iter().zip(&self.functions.counts));
        let symbols = self.rows(self.symbols.names.iter().zip(&self.symbols.counts));
        let mut modules = self.rows(self.modules.iter());
        modules.retain(|m| m.self_ > 0);
        // Lines of the ten hottest functions.
        let hot: HashSet<&str> = functions.iter().take(10).map(|e| e.name.as_str()).collect();
        let pct = |w: u64| 100.0 * w as f64 / self.weight.max(1) as f64;
        let mut by_line: BTreeMap<(&str, &str, u32), u64> = BTreeMap::new();
        for ((function, _, line), (file, w)) in &self.lines {
            let function = &*self.functions.names[*function];
            if hot.contains(function) {
                *by_line.entry((function, file, *line)).or_default() += w;
            }
        }
        let mut lines: Vec<LineEntry> = by_line
            .into_iter()
            .map(|((function, file, line), w)| LineEntry {
                function: function.to_string(),
                file: file.to_string(),
                line,
                self_: w,
                self_pct: pct(w),
            })
            .collect();
        lines.sort_by(|a, b| b.self_.cmp(&a.self_).then(a.line.cmp(&b.line)));
        let folded = self.folded();
        let profile = Profile {
            schema: "sparkles.profile/1".into(),
            case: case.into(),
            event: event.into(),
            event_note: None,
            samples: self.samples,
            lost,
            weight: self.weight,
            functions,
            symbols,
            lines,
            modules,
            unwinding,
            notes: Vec::new(),
            weighting: period(),
            memory: None,
            numa: None,
        };
        (profile, folded)
    }
}

/// An event's name: its EVENT_DESC name, else its attr's type and config.
fn attr_name(a: &sparkles_perf_data::AttrEntry) -> String {
    match &a.name {
        Some(n) if !n.is_empty() => n.clone(),
        _ => format!("type {} config {:#x}", a.attr.type_, a.attr.config),
    }
}

/// The event a capture sampled: the name of each event that samples (a counting-only
/// group leader does not), joined; the first event's where none says it samples.
pub fn event_name(data: &PerfData) -> String {
    let sampling: Vec<String> = data
        .attrs
        .iter()
        .filter(|a| a.attr.sample_period_or_freq != 0)
        .map(attr_name)
        .collect();
    match (sampling.is_empty(), data.attrs.first()) {
        (false, _) => sampling.join(", "),
        (true, Some(a)) => attr_name(a),
        (true, None) => "unknown event".into(),
    }
}

/// Which of a capture's events a report takes samples from: the one `--event` names,
/// else every one.
fn chosen_events(data: &PerfData, path: &Path, event: Option<&str>) -> Result<Vec<bool>, String> {
    let Some(wanted) = event else {
        return Ok(vec![true; data.attrs.len().max(1)]);
    };
    let chosen: Vec<bool> = data.attrs.iter().map(|a| attr_name(a) == wanted).collect();
    if !chosen.contains(&true) {
        let names: Vec<String> = data.attrs.iter().map(attr_name).collect();
        return Err(format!(
            "--event {wanted}: {} has no event of that name; its events: {}",
            path.display(),
            names.join(", ")
        ));
    }
    Ok(chosen)
}

/// How a capture's samples are placed on NUMA nodes: by their physical addresses through
/// the capture's memory topology, else by the page table asked of the live process and
/// written beside the capture (with it, the table); else why neither can be.
fn numa_placement(
    data: &PerfData,
    path: &Path,
) -> Result<(NumaBuilder, Option<PageNodes>), String> {
    let topology = Topology::from_features(&data.features);
    let phys = data
        .attrs
        .iter()
        .any(|a| a.attr.sample_type & st::PHYS_ADDR != 0);
    if phys {
        if let Some(t) = topology.clone().filter(Topology::knows_memory) {
            return Ok((NumaBuilder::new(t, "phys_addr"), None));
        }
    }
    let Some(pages) = PageNodes::read_beside(path).map_err(|e| e.to_string())? else {
        return Err(if phys {
            "the capture records no memory topology (NUMA_TOPOLOGY and MEM_TOPOLOGY), so physical addresses cannot be placed on nodes"
        } else {
            "the samples carry no physical address (PHYS_ADDR), and a capture read offline cannot ask the kernel which node a page is on"
        }
        .into());
    };
    let topology = topology
        .or_else(|| Topology::from_sysfs(Path::new("/")).ok())
        .ok_or("the capture records no NUMA topology and this machine's sysfs has none")?;
    // Page faults are where pages are first touched: first-touch placement.
    let faults = data
        .attrs
        .first()
        .is_some_and(|a| a.attr.type_ == 1 && matches!(a.attr.config, 2 | 5 | 6));
    let source = if faults { "first_touch" } else { "move_pages" };
    Ok((
        NumaBuilder::new(topology, source).with_node_source("move_pages"),
        Some(pages),
    ))
}

/// Unwinds, names and aggregates every sample of a capture.
pub fn profile_capture(
    path: &Path,
    case: &str,
    options: &StackOptions,
) -> Result<(Profile, Folded), String> {
    profile_capture_with(path, case, options, |_| {})
}

/// [`profile_capture`], showing each sample's named stack to `observe` too.
pub fn profile_capture_with(
    path: &Path,
    case: &str,
    options: &StackOptions,
    mut observe: impl FnMut(&NamedStack),
) -> Result<(Profile, Folded), String> {
    let data = PerfData::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if options.weight == Weighting::Latency
        && !data
            .attrs
            .iter()
            .any(|a| a.attr.sample_type & (st::WEIGHT | st::WEIGHT_STRUCT) != 0)
    {
        return Err(format!(
            "--weight latency: {}: its samples carry no weight (no event of it samples WEIGHT or WEIGHT_STRUCT)",
            path.display()
        ));
    }
    let chosen = chosen_events(&data, path, options.event.as_deref())?;
    // Samples per event, to say which events a profile mixes.
    let mut per_event = vec![0u64; chosen.len()];
    let mut namer = StackNamer::for_capture(&data, options);
    let mut builder = Builder::new();
    let mut memory = MemoryBuilder::new();
    let sampled = |bit: u64| data.attrs.iter().any(|a| a.attr.sample_type & bit != 0);
    let (mut numa, pages, numa_absent) = match numa_placement(&data, path) {
        Ok((n, pages)) => (Some(n), pages, String::new()),
        Err(why) => (None, None, why),
    };
    // Samples whose data source says nothing (PERF_MEM_NA: not a memory event).
    let mut unknown_sources = 0u64;
    let mut lost = 0u64;
    data.for_each_record(|e| {
        namer.observe(&e.record);
        match &e.record {
            Record::Sample(_) if !chosen.get(e.attr.unwrap_or(0)).copied().unwrap_or(true) => {}
            Record::Sample(s) => {
                if let Some(n) = per_event.get_mut(e.attr.unwrap_or(0)) {
                    *n += 1;
                }
                let stack = namer.stack(s);
                observe(&stack);
                let weight = match options.weight {
                    Weighting::Period => s.period.unwrap_or(1).max(1),
                    Weighting::Latency => s.weight.map_or(0, |w| w.latency()),
                    Weighting::Samples => 1,
                };
                builder.add(&stack.frames, stack.truncated.is_some(), weight);
                let data_src = s.data_src.filter(|d| {
                    let na = DataSource::new(*d).is_na();
                    unknown_sources += u64::from(na);
                    !na
                });
                let placed = numa.is_some()
                    && match &pages {
                        Some(_) => s.addr.is_some(),
                        None => s.phys_addr.is_some(),
                    };
                if data_src.is_some() || placed {
                    let object = s.addr.map(|a| namer.data_object(s.pid.unwrap_or(0), a));
                    let sample = MemorySample {
                        data_src: data_src.unwrap_or(0),
                        weight: s.weight.map_or(0, |w| w.latency()),
                        ins_lat: s.weight.and_then(|w| w.ins_lat()),
                        weight_struct: s.weight.map(|w| matches!(w, Weight::Struct { .. })),
                        code: stack.frames.first(),
                        ip: s.ip,
                        data: object.as_ref(),
                    };
                    if data_src.is_some() {
                        memory.add(&sample);
                    }
                    if let Some(n) = numa.as_mut().filter(|_| placed) {
                        // The sampled page: DATA_PAGE_SIZE where sampled (a huge page
                        // is one page), else the page the table was asked by.
                        let size = s
                            .data_page_size
                            .filter(|&z| z > 0)
                            .or(pages.as_ref().map(|p| p.page_size))
                            .unwrap_or(4096);
                        let page = s.addr.map(|a| Page::of(s.pid.unwrap_or(0), a, size));
                        match (&pages, s.addr) {
                            (Some(p), Some(addr)) => match p.node(s.pid.unwrap_or(0), addr) {
                                Ok(node) => n.add_node(s.cpu, node, page, &sample),
                                Err(why) => n.add_unplaced(why),
                            },
                            _ => n.add_phys(s.cpu, s.phys_addr, page, &sample),
                        }
                    }
                }
            }
            Record::Lost { lost: n, .. } | Record::LostSamples { lost: n, .. } => lost += n,
            _ => {}
        }
        Ok::<(), sparkles_perf_data::Error>(())
    })
    .map_err(|e| format!("{}: {e:?}", path.display()))?;
    let stats = namer.unwind_stats();
    let unwinding = Unwinding {
        mode: match options.unwind {
            sparkles_unwind::Mode::Dwarf => "dwarf",
            sparkles_unwind::Mode::Fp => "fp",
            sparkles_unwind::Mode::Auto => "auto",
        }
        .into(),
        samples: stats.samples,
        truncated: stats
            .truncated
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), *v))
            .collect(),
        truncated_pct: stats.truncated_pct(),
    };
    // The events that sampled name the profile; with none, those that sample.
    let sampling: Vec<(String, u64)> = data
        .attrs
        .iter()
        .zip(&per_event)
        .filter(|(_, &n)| n > 0)
        .map(|(a, &n)| (attr_name(a), n))
        .collect();
    let event = match (&options.event, sampling.is_empty()) {
        (Some(name), _) => name.clone(),
        (None, false) => {
            let names: Vec<&str> = sampling.iter().map(|(name, _)| name.as_str()).collect();
            names.join(", ")
        }
        (None, true) => event_name(&data),
    };
    let (mut profile, folded) = builder.finish(case, &event, lost, unwinding);
    profile.weighting = options.weight.as_str().into();
    profile.notes = namer.notes.clone();
    if sampling.len() > 1 {
        let sampled_events: Vec<String> = sampling
            .iter()
            .map(|(name, n)| format!("{name} ({n})"))
            .collect();
        profile.notes.push(format!(
            "samples of {} events together: {}; --event NAME reports one",
            sampled_events.len(),
            sampled_events.join(", ")
        ));
    }
    if let Some(n) = numa {
        profile.numa = Some(n.finish());
    } else if !memory.is_empty() || sampled(st::ADDR) {
        profile
            .notes
            .push(format!("no NUMA section: {numa_absent}"));
    }
    if !memory.is_empty() {
        profile.memory = Some(memory.finish());
        if unknown_sources > 0 {
            profile.notes.push(format!(
                "{unknown_sources} samples' data source says nothing (N/A): left out of the memory section"
            ));
        }
    } else if unknown_sources > 0 {
        profile.notes.push(format!(
            "no memory section: the samples carry a data source, but every one says nothing (N/A): {} is not a memory event",
            profile.event
        ));
    }
    profile.notes.extend(namer.unavailable());
    Ok((profile, folded))
}

/// The profile as a table: the top `n` of both views.
pub fn table(p: &Profile, n: usize) -> String {
    let mut out = format!(
        "{}: {}, {} samples, {} lost; unwinding {}: {:.1}% truncated\n",
        p.case, p.event, p.samples, p.lost, p.unwinding.mode, p.unwinding.truncated_pct
    );
    for (title, rows) in [("functions", &p.functions), ("symbols", &p.symbols)] {
        out.push_str(&format!(
            "\n{title}\n{:>7} {:>7}  name\n",
            "self%", "total%"
        ));
        for e in rows.iter().take(n) {
            out.push_str(&format!(
                "{:>6.2}% {:>6.2}%  {}{}\n",
                e.self_pct,
                e.total_pct,
                e.name,
                e.module
                    .as_deref()
                    .map(|m| format!("  ({})", m.rsplit('/').next().unwrap_or(m)))
                    .unwrap_or_default()
            ));
        }
    }
    if !p.lines.is_empty() {
        out.push_str(&format!("\nlines\n{:>7}  line\n", "self%"));
        for l in p.lines.iter().take(n) {
            out.push_str(&format!(
                "{:>6.2}%  {}:{}  {}\n",
                l.self_pct, l.file, l.line, l.function
            ));
        }
    }
    if let Some(m) = &p.memory {
        out.push_str(&crate::memory::table(m, n));
    }
    if let Some(numa) = &p.numa {
        out.push_str(&crate::numa::table(numa, n));
    }
    for note in &p.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    out
}

/// Writes `bytes` to `path` whole or not at all: a temporary file beside it, renamed over
/// it, so a failed run never leaves a half-written report or clobbers the last good one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("{}: {e}", path.display())
        })
}
