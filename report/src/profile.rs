//! Flat profiles: a capture's named stacks aggregated, weighted by sample period as perf
//! weights them, into two views (`functions`: the innermost frame, inlined functions
//! their own; `symbols`: the containing ELF symbol, as `perf report --no-children`
//! counts), per source line and per module, with folded stacks for flamegraphs.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::rc::Rc;

use rustc_hash::{FxHashMap, FxHashSet};

use serde::{Deserialize, Serialize};
use sparkles_sampler::perf_data::attr::sample_type as st;
use sparkles_sampler::perf_data::sample::Weight;
use sparkles_sampler::perf_data::DataSource;
use sparkles_sampler::perf_data::{PerfData, Record};

use crate::memory::{MemoryBuilder, MemorySample};
use crate::names::normalize;
use crate::stacks::{NamedFrame, NamedStack, StackNamer, StackOptions, Weighting};

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
    function: Rc<str>,
    symbol: Rc<str>,
    kind: Kind,
    /// Its label in folded stacks.
    folded: Rc<str>,
}

/// What a frame's keys depend on: its function, symbol and module as given.
type FrameId = (Option<Rc<str>>, Option<Rc<str>>, Option<Rc<str>>);

/// Accumulates named stacks.
#[derive(Default)]
pub struct Builder {
    samples: u64,
    weight: u64,
    functions: FxHashMap<Rc<str>, Counts>,
    symbols: FxHashMap<Rc<str>, Counts>,
    modules: FxHashMap<Rc<str>, Counts>,
    lines: FxHashMap<(Rc<str>, Rc<str>, u32), u64>,
    folded: Folded,
    /// Keys per (function, symbol, module) as given.
    keys: FxHashMap<FrameId, Keys>,
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
        let id = (f.function.clone(), f.symbol.clone(), f.module.clone());
        if let Some(k) = self.keys.get(&id) {
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
            function,
            symbol,
            kind,
            folded: Rc::from(label),
        };
        self.keys.insert(id, k.clone());
        k
    }

    /// Adds one sample's stack (innermost first) with its weight.
    pub fn add(&mut self, frames: &[NamedFrame], truncated: bool, weight: u64) {
        self.samples += 1;
        self.weight += weight;
        let Some(leaf) = frames.first() else {
            return;
        };
        let keys: Vec<Keys> = frames.iter().map(|f| self.keys(f)).collect();
        // functions: every frame a row of its own, inlined ones included.
        let c = self
            .functions
            .entry(Rc::clone(&keys[0].function))
            .or_default();
        c.self_ += weight;
        c.self_samples += 1;
        c.note(leaf, keys[0].kind);
        if let Some(line) = leaf.line {
            *c.lines.entry(line).or_default() += weight;
            if let Some(file) = &leaf.file {
                *self
                    .lines
                    .entry((Rc::clone(&keys[0].function), Rc::clone(file), line))
                    .or_default() += weight;
            }
        }
        let mut seen: FxHashSet<&str> = FxHashSet::default();
        for (f, k) in frames.iter().zip(&keys) {
            if seen.insert(&k.function) {
                let c = self.functions.entry(Rc::clone(&k.function)).or_default();
                c.total += weight;
                c.note(f, k.kind);
            }
        }
        // symbols: one row per physical frame (its containing symbol).
        let mut first = true;
        let mut seen: FxHashSet<&str> = FxHashSet::default();
        for (f, k) in frames.iter().zip(&keys).filter(|(f, _)| !f.inlined) {
            let c = self.symbols.entry(Rc::clone(&k.symbol)).or_default();
            if first {
                c.self_ += weight;
                c.self_samples += 1;
                first = false;
            }
            if seen.insert(&k.symbol) {
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
        // folded: root first.
        let mut stack =
            String::with_capacity(keys.iter().map(|k| k.folded.len() + 1).sum::<usize>() + 16);
        if truncated {
            stack.push_str("[truncated];");
        }
        for k in keys.iter().rev() {
            if !self.folded.kinds.contains_key(&*k.folded) {
                self.folded.kinds.insert(k.folded.to_string(), k.kind);
            }
            stack.push_str(&k.folded);
            stack.push(';');
        }
        stack.pop();
        match self.folded.samples.get_mut(&stack) {
            Some(n) => {
                *n += 1;
                *self.folded.stacks.get_mut(&stack).unwrap_or(&mut 0) += weight;
            }
            None => {
                self.folded.samples.insert(stack.clone(), 1);
                self.folded.stacks.insert(stack, weight);
            }
        }
    }

    fn rows(&self, map: &FxHashMap<Rc<str>, Counts>) -> Vec<Entry> {
        let pct = |w: u64| 100.0 * w as f64 / self.weight.max(1) as f64;
        let mut rows: Vec<Entry> = map
            .iter()
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
        self,
        case: &str,
        event: &str,
        lost: u64,
        unwinding: Unwinding,
    ) -> (Profile, Folded) {
        let functions = self.rows(&self.functions);
        let symbols = self.rows(&self.symbols);
        let mut modules = self.rows(&self.modules);
        modules.retain(|m| m.self_ > 0);
        // Lines of the ten hottest functions.
        let hot: HashSet<&str> = functions.iter().take(10).map(|e| e.name.as_str()).collect();
        let pct = |w: u64| 100.0 * w as f64 / self.weight.max(1) as f64;
        let mut lines: Vec<LineEntry> = self
            .lines
            .iter()
            .filter(|((f, _, _), _)| hot.contains(&**f))
            .map(|((function, file, line), w)| LineEntry {
                function: function.to_string(),
                file: file.to_string(),
                line: *line,
                self_: *w,
                self_pct: pct(*w),
            })
            .collect();
        lines.sort_by(|a, b| b.self_.cmp(&a.self_).then(a.line.cmp(&b.line)));
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
        };
        (profile, self.folded)
    }
}

/// The event a capture sampled: its EVENT_DESC name, else its attr's type and config.
pub fn event_name(data: &PerfData) -> String {
    match data.attrs.first() {
        Some(a) => match &a.name {
            Some(n) if !n.is_empty() => n.clone(),
            _ => format!("type {} config {:#x}", a.attr.type_, a.attr.config),
        },
        None => "unknown event".into(),
    }
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
    let mut namer = StackNamer::for_capture(&data, options);
    let mut builder = Builder::new();
    let mut memory = MemoryBuilder::new();
    // Samples whose data source says nothing (PERF_MEM_NA: not a memory event).
    let mut unknown_sources = 0u64;
    let mut lost = 0u64;
    data.for_each_record(|e| {
        namer.observe(&e.record);
        match &e.record {
            Record::Sample(s) => {
                let stack = namer.stack(s);
                observe(&stack);
                let weight = match options.weight {
                    Weighting::Period => s.period.unwrap_or(1).max(1),
                    Weighting::Latency => s.weight.map_or(0, |w| w.latency()),
                    Weighting::Samples => 1,
                };
                builder.add(&stack.frames, stack.truncated.is_some(), weight);
                if let Some(data_src) = s.data_src.filter(|d| {
                    let na = DataSource::new(*d).is_na();
                    unknown_sources += u64::from(na);
                    !na
                }) {
                    let object = s.addr.map(|a| namer.data_object(s.pid.unwrap_or(0), a));
                    memory.add(&MemorySample {
                        data_src,
                        weight: s.weight.map_or(0, |w| w.latency()),
                        ins_lat: s.weight.and_then(|w| w.ins_lat()),
                        weight_struct: s.weight.map(|w| matches!(w, Weight::Struct { .. })),
                        code: stack.frames.first(),
                        ip: s.ip,
                        data: object.as_ref(),
                    });
                }
            }
            Record::Lost { lost: n, .. } | Record::LostSamples { lost: n, .. } => lost += n,
            _ => {}
        }
        Ok::<(), ()>(())
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
    let (mut profile, folded) = builder.finish(case, &event_name(&data), lost, unwinding);
    profile.weighting = options.weight.as_str().into();
    profile.notes = namer.notes.clone();
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
