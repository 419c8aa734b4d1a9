//! Flat profiles: a capture's named stacks aggregated, weighted by sample period as perf
//! weights them, into two views (`functions`: the innermost frame, inlined functions
//! their own; `symbols`: the containing ELF symbol, as `perf report --no-children`
//! counts), per source line and per module, with folded stacks for flamegraphs.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

use rustc_hash::FxHashMap;

use serde::{Deserialize, Serialize};

use crate::names::{normalize, Name, Names};
use crate::stacks::{is_harness_frame, NamedFrame};
pub use crate::stacks::{kind_of, Blocks, Kind};
use crate::Error;

/// A frame's function as views name it: demangled and normalized
/// ([`crate::names::normalize`]), else `[unknown] (module)`.
pub fn function_name(f: &NamedFrame) -> String {
    match &f.function {
        Some(n) => normalize(n),
        None => match &f.module {
            Some(m) => format!("[unknown] ({m})"),
            None => "[unknown]".to_string(),
        },
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
    /// Its self samples in each of the capture's [`BLOCKS`] consecutive blocks of samples
    /// (`Profile::block_samples` each), for the diff's variance: empty where the capture
    /// is too short to cut ([`MIN_BLOCKED_SAMPLES`]) or the row has no self samples.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<u32>,
    /// What its code is.
    pub kind: Kind,
    /// In the functions view, the symbol its self samples all land in, where that is
    /// another function (it was inlined there, and only there): its time is part of that
    /// symbol's self time, not beside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inlined_into: Option<String>,
}

/// How many consecutive blocks a capture's samples are cut into for the diff's
/// batch-means variance, where no rounds are found in it.
pub const BLOCKS: usize = 20;

/// What a profile's blocks (the diff's replicates) hold.
///
/// A share's variance is measured from its spread over blocks, which is right where
/// every block is a draw of the same mix. A program that runs in rounds of phases (a
/// bench body that parses then serializes, a script's stages, a collector's cycle) gives
/// blocks of a twentieth of the capture that hold one phase or another: their shares
/// swing with the phases, the variance is overstated, and a real change is called noise.
/// Blocks of whole rounds are draws of the same mix again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockedBy {
    /// [`BLOCKS`] equal runs of samples: no rounds found, or too few to cut.
    Samples,
    /// Whole bench iterations: the harness says how many the capture holds
    /// ([`Blocks::Repeats`]).
    Iterations,
    /// Whole rounds of the program's phases, their length found in the capture by the
    /// autocorrelation of its hottest functions' shares along it.
    Rounds,
}

/// The fewest blocks of whole rounds a capture is cut into; a capture of fewer rounds
/// keeps blocks of [`BLOCKS`]ths, with a note.
pub const MIN_ROUND_BLOCKS: usize = 5;

/// The shortest capture, in fine blocks, whose rounds are looked for.
const MIN_FINE: usize = 64;
/// At most this many fine blocks of whole chunks are correlated.
const MAX_FINE: u64 = 2048;
/// Functions whose shares along the capture are correlated: the hottest, each of at
/// least 1% of the samples.
const ROUND_FUNCTIONS: usize = 12;
/// A round is found where the autocorrelation at its length is at least this (of the
/// variance beyond sampling noise), after the correlation has gone negative.
const ROUND_CORRELATION: f64 = 0.5;

/// And at least this many standard errors of the autocorrelation's estimate.
const ROUND_CLEAR: f64 = 4.0;

/// Where a profile's repeats (iterations, or rounds of phases) are too few to cut into
/// [`MIN_ROUND_BLOCKS`] blocks of whole ones, so its blocks are twentieths of its samples:
/// the sentence that says so (a profile note, and a warning in a diff against it).
pub fn too_few_rounds(p: &Profile) -> Option<String> {
    let round = p.round_samples?;
    (p.blocked_by == Some(BlockedBy::Samples)).then(|| {
        format!(
            "the capture holds {:.1} repeats of its work (iterations, or rounds of phases) of {round:.0} samples each, too few to cut into {MIN_ROUND_BLOCKS} blocks of whole ones: its variance over {} blocks of samples is overstated where they hold different phases, and a diff against it finds less (record at least {MIN_ROUND_BLOCKS})",
            p.samples as f64 / round.max(1.0),
            p.block_samples.len()
        )
    })
}

/// How a capture's chunks are cut into blocks.
#[derive(Debug, Clone, Copy)]
struct Blocking {
    /// Chunks per block.
    len: f64,
    count: usize,
    by: BlockedBy,
    /// Chunks per round, where blocks hold whole ones.
    round: Option<f64>,
}

impl Blocking {
    /// The block chunk `chunk` falls in (a last, partial block's chunks in the one before).
    fn of(&self, chunk: u32) -> usize {
        ((f64::from(chunk) / self.len) as usize).min(self.count - 1)
    }
}

/// Samples of a block-count chunk: blocks are whole chunks.
const CHUNK: u64 = 16;

/// A capture shorter than this keeps no block counts (16 samples a block at least).
pub const MIN_BLOCKED_SAMPLES: u64 = BLOCKS as u64 * CHUNK;

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
    /// Samples in each of the consecutive blocks the rows' `blocks` count (empty where
    /// the capture is too short to cut): [`BLOCKS`] of them, or as many whole rounds as
    /// fit (`blocked_by`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_samples: Vec<u64>,
    /// What the blocks are cut along: `samples` (twentieths of the capture), `iterations`
    /// (whole bench iterations) or `rounds` (whole rounds of the program's phases, found
    /// in the capture); absent where there are no blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<BlockedBy>,
    /// Samples in one iteration or round, where the capture has them (with
    /// `blocked_by` `samples`: too few of them to cut into blocks of whole ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_samples: Option<f64>,
    /// Samples and records the kernel dropped (LOST_SAMPLES and LOST).
    pub lost: u64,
    /// Of `lost`, records the ring buffers dropped (LOST).
    #[serde(default)]
    pub lost_records: u64,
    /// Of `lost`, samples the kernel dropped (LOST_SAMPLES).
    #[serde(default)]
    pub lost_samples: u64,
    /// How often and how long the kernel throttled the sampled events.
    #[serde(default)]
    pub throttled: sparkles_perf_data::throttle::Throttled,
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
    /// weight field), `samples`.
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
    /// Where the sampled threads waited, and why: present when the capture has switch
    /// records (`sparkles record --off-cpu`, `--profile=wall`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offcpu: Option<crate::offcpu::OffCpu>,
    /// The iterations whose costs the weights total: present in an instruction profile
    /// (callgrind's counts, `weighting` `instructions`), where they are exact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
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
    pub fn parse(text: &str) -> Result<Folded, Error> {
        let mut f = Folded::default();
        for (i, line) in text.lines().enumerate() {
            let (stack, w) = line
                .rsplit_once(' ')
                .and_then(|(s, w)| Some((s, w.parse::<u64>().ok()?)))
                .ok_or(Error::Folded { line: i + 1 })?;
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
    /// Self samples per chunk of [`CHUNK`] samples, `(chunk, count)` in order.
    chunks: Vec<(u32, u32)>,
    module: Option<Name>,
    file: Option<Name>,
    kind: Option<Kind>,
    /// Self weight per line, for the hottest.
    lines: FxHashMap<u32, u64>,
    /// The symbol rows its self samples land in (a function row's), where every one came
    /// from a frame inlined there.
    self_in: SelfIn,
}

/// Which symbol rows a function row's self samples land in.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
enum SelfIn {
    #[default]
    Nowhere,
    One(usize),
    Several,
}

impl SelfIn {
    /// Self samples of the row landed in symbol row `symbol`, from a frame inlined there
    /// or (not `inlined`) from its own physical frame: then it has time of its own.
    fn landed(&mut self, symbol: usize, inlined: bool) {
        *self = match *self {
            _ if !inlined => SelfIn::Several,
            SelfIn::Nowhere => SelfIn::One(symbol),
            SelfIn::One(s) if s == symbol => SelfIn::One(s),
            _ => SelfIn::Several,
        };
    }
}

/// An interned stack as the profile counts it: the rows its samples add to, worked out
/// once, and the weight and samples it had since the counts were last brought up to date.
/// A sample of it only adds to these and to its leaf's time chunks; the rows get the sums
/// in [`Builder::flush`] (totals and sums do not depend on the order samples came in).
struct Prepared {
    /// The leaf frame's line and file name id (its function and symbol rows are in the
    /// stack's [`Hot`]).
    leaf_line: Option<(u32, Option<u32>)>,
    /// Distinct function rows of the stack, the leaf's included.
    functions: Box<[usize]>,
    /// The distinct symbol rows of its physical frames.
    symbols: Box<[usize]>,
    /// The leaf's module id.
    module: u32,
    /// Its folded stack.
    stack: usize,
}

/// An interned stack's counts since the last flush, and the leaf rows each sample adds a
/// time chunk to.
#[derive(Clone, Copy, Default)]
struct Hot {
    /// Whether the stack has been prepared.
    seen: bool,
    /// Its leaf's function row and symbol row (its innermost physical frame's);
    /// `u32::MAX`: none (an empty stack has neither).
    leaf: u32,
    leaf_symbol: u32,
    weight: u64,
    samples: u64,
}

impl Hot {
    /// An empty stack's: seen, and adding to the totals only.
    const EMPTY: Hot = Hot {
        seen: true,
        leaf: u32::MAX,
        leaf_symbol: u32::MAX,
        weight: 0,
        samples: 0,
    };
}

impl Counts {
    /// One self sample, the `sample`th of the capture (from 1).
    fn count_self(&mut self, sample: u64) {
        self.self_samples += 1;
        let chunk = ((sample - 1) / CHUNK) as u32;
        match self.chunks.last_mut() {
            Some((c, n)) if *c == chunk => *n += 1,
            _ => self.chunks.push((chunk, 1)),
        }
    }

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
#[derive(Clone, Copy)]
struct Keys {
    /// Index of its `functions` row.
    function: usize,
    /// Index of its `symbols` row.
    symbol: usize,
    kind: Kind,
    /// Its label in folded stacks, by id in the builder's label table.
    folded: u32,
}

/// What a frame's keys depend on: its function, symbol and module names, by id (one past
/// it; 0 for none).
type FrameId = (u32, u32, u32);

/// A name's id, one past it: 0 stands for none.
fn id_of(s: &Option<Name>) -> u32 {
    s.as_ref().map_or(0, |n| n.id() + 1)
}

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
    fn id(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len();
        let name: Rc<str> = Rc::from(name);
        self.names.push(Rc::clone(&name));
        self.counts.push(Counts::default());
        self.seen.push(0);
        self.index.insert(name, i);
        i
    }
}

/// One distinct folded stack.
struct FoldedStack {
    line: String,
    weight: u64,
    samples: u64,
}

/// Accumulates named stacks. The frames of one profile come from one [`StackNamer`]
/// (or share one [`crate::names::Names`]), whose name ids key every aggregate.
#[derive(Default)]
pub struct Builder {
    samples: u64,
    weight: u64,
    functions: Rows,
    symbols: Rows,
    /// Per module name id: the name and its counts.
    modules: FxHashMap<u32, (Name, Counts)>,
    /// Self weight per (function row, file name id, line), with the file's name.
    lines: FxHashMap<(usize, u32, u32), (Name, u64)>,
    /// Folded-stack labels, interned: a distinct stack is keyed by its labels' ids.
    labels: Names,
    /// Distinct stacks by their frames' label ids (the truncation mark first), and each
    /// one's line and sums.
    stack_ids: FxHashMap<Box<[u32]>, usize>,
    stacks: Vec<FoldedStack>,
    kinds: HashMap<String, Kind>,
    /// Keys per (function, symbol, module) name ids.
    keys: FxHashMap<FrameId, Keys>,
    /// Scratch: one sample's keys and stack id.
    scratch_keys: Vec<Keys>,
    scratch_id: Vec<u32>,
    /// Per interned stack (by its namer's number): what its samples add to.
    prepared: Vec<Option<Prepared>>,
    /// The same, what a sample of it touches: its leaf's rows and what its samples added
    /// since the last [`Builder::flush`] (apart, and small, so that counting a repeat
    /// reads little memory).
    hot: Vec<Hot>,
    /// The case's name as the root of folded stacks that run through the harness (the
    /// harness's frames folded into it); `None` keeps whole stacks.
    root: Option<u32>,
    /// How the diff's blocks are cut ([`Builder::cut_blocks`]).
    blocks: Blocks,
    /// Rooted at a case: the module holding the harness's frames (the bench executable)
    /// and why it has no debug info, where it has none.
    bench_without_dwarf: Option<(String, String)>,
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

    /// A new profile whose folded stacks are rooted at `case`: in a stack that runs
    /// through the harness, the harness's frames and everything outside them are folded
    /// into one root frame of that name.
    pub fn rooted_at(case: &str) -> Builder {
        let mut b = Builder::default();
        b.root = Some(b.labels.intern(case).id());
        b
    }

    /// How the diff's blocks are to be cut ([`Blocks`]).
    pub fn cut_blocks(&mut self, how: Blocks) {
        self.blocks = how;
    }

    fn keys(&mut self, f: &NamedFrame) -> Keys {
        let id = (id_of(&f.function), id_of(&f.symbol), id_of(&f.module));
        if let Some(k) = self.keys.get(&id) {
            return *k;
        }
        let function = function_name(f);
        let symbol = match &f.symbol {
            Some(n) => normalize(n),
            None => function.clone(),
        };
        // Rooted at a case, the harness's frames around its body (the timing loop, the
        // thread it runs on) are the case's own: their time is the case root's row in the
        // flat views too, never a harness function's self time.
        let harness_root = self
            .root
            .filter(|_| f.function.as_deref().is_some_and(is_harness_frame))
            .map(|root| self.labels.text(root).to_string());
        let is_root = harness_root.is_some();
        let (function, symbol) = match harness_root {
            Some(case) => (case.clone(), case),
            None => (function, symbol),
        };
        let kind = kind_of(f);
        // ';' separates frames and ' ' the weight: neither may be in a name. Kernel
        // frames are marked as perf marks them.
        let mut label = function.replace(';', ":");
        if kind == Kind::Kernel {
            label.push_str("_[k]");
        }
        let folded = self.labels.intern(&label);
        // The case's root is coloured as the harness's (flame.rs), not as code.
        if !is_root {
            self.kinds.entry(label).or_insert(kind);
        }
        let k = Keys {
            function: self.functions.id(&function),
            symbol: self.symbols.id(&symbol),
            kind,
            folded: folded.id(),
        };
        self.keys.insert(id, k);
        k
    }

    /// Adds one sample's stack (innermost first) with its weight.
    pub fn add(&mut self, frames: &[NamedFrame], truncated: bool, weight: u64) {
        let (keys, stack) = self.prepare(frames, truncated);
        self.count(frames, &keys, stack, weight);
        self.scratch_keys = keys;
    }

    /// [`Builder::add`] for a stack its namer interned as number `id`
    /// ([`crate::stacks::Interned`]): its keys and folded line are worked out the first
    /// time, and a repeat is only counted.
    pub fn add_interned(&mut self, id: usize, frames: &[NamedFrame], truncated: bool, weight: u64) {
        if !self.hot.get(id).is_some_and(|h| h.seen) {
            if self.prepared.len() <= id {
                self.prepared.resize_with(id + 1, || None);
                self.hot.resize(id + 1, Hot::default());
            }
            let (keys, stack) = self.prepare(frames, truncated);
            let (prepared, hot) = match self.rows_of(frames, &keys, stack) {
                Some((p, h)) => (Some(p), h),
                None => (None, Hot::EMPTY),
            };
            self.scratch_keys = keys;
            self.hot[id] = hot;
            self.prepared[id] = prepared;
        }
        self.add_again(id, weight);
    }

    /// Counts one more sample of the interned stack `id` where the profile has seen it
    /// before ([`Builder::add_interned`]); `false` (and nothing counted) where not.
    #[inline]
    pub fn add_again(&mut self, id: usize, weight: u64) -> bool {
        let Some(h) = self.hot.get_mut(id).filter(|h| h.seen) else {
            return false;
        };
        self.samples += 1;
        self.weight += weight;
        let sample = self.samples;
        // An empty stack adds to the totals only.
        if h.leaf == u32::MAX {
            return true;
        }
        h.weight += weight;
        h.samples += 1;
        self.functions.counts[h.leaf as usize].count_self(sample);
        if h.leaf_symbol != u32::MAX {
            self.symbols.counts[h.leaf_symbol as usize].count_self(sample);
        }
        true
    }

    /// The rows a stack's samples add to (`None` for an empty stack), each row told of
    /// the frames it is counted for (its module, file and kind) as [`Builder::count`]
    /// tells it, with nothing added yet.
    fn rows_of(
        &mut self,
        frames: &[NamedFrame],
        keys: &[Keys],
        stack: usize,
    ) -> Option<(Prepared, Hot)> {
        let leaf = frames.first()?;
        let mut functions: Vec<usize> = Vec::with_capacity(keys.len());
        self.functions.counts[keys[0].function].note(leaf, keys[0].kind);
        for (f, k) in frames.iter().zip(keys) {
            if !functions.contains(&k.function) {
                functions.push(k.function);
                self.functions.counts[k.function].note(f, k.kind);
            }
        }
        let mut symbols: Vec<usize> = Vec::new();
        for (f, k) in frames.iter().zip(keys).filter(|(f, _)| !f.inlined) {
            if !symbols.contains(&k.symbol) {
                symbols.push(k.symbol);
            }
            self.symbols.counts[k.symbol].note(f, k.kind);
        }
        let leaf_line = leaf.line.map(|line| {
            let file = leaf.file.as_ref().map(|file| {
                self.lines
                    .entry((keys[0].function, file.id(), line))
                    .or_insert_with(|| (file.clone(), 0));
                file.id()
            });
            (line, file)
        });
        if let Some(&s) = symbols.first() {
            self.functions.counts[keys[0].function]
                .self_in
                .landed(s, leaf.inlined);
        }
        let module = self.module_counts(leaf, keys[0].kind);
        let row = |r: usize| u32::try_from(r).unwrap_or(u32::MAX);
        let hot = Hot {
            seen: true,
            leaf: row(keys[0].function),
            leaf_symbol: symbols.first().map_or(u32::MAX, |&s| row(s)),
            weight: 0,
            samples: 0,
        };
        let prepared = Prepared {
            leaf_line,
            functions: functions.into(),
            symbols: symbols.into(),
            module,
            stack,
        };
        Some((prepared, hot))
    }

    /// The module row of `leaf` (made on first use and told of its name and kind), by
    /// its id.
    fn module_counts(&mut self, leaf: &NamedFrame, kind: Kind) -> u32 {
        let module_id = id_of(&leaf.module);
        let (module, c) = self.modules.entry(module_id).or_insert_with(|| {
            let name = leaf
                .module
                .clone()
                .unwrap_or_else(|| self.labels.intern("[unknown]"));
            (name, Counts::default())
        });
        if c.module.is_none() {
            c.module = Some(module.clone());
        }
        c.kind.get_or_insert(kind);
        module_id
    }

    /// Adds what interned stacks' samples added since the last flush to their rows.
    fn flush(&mut self) {
        for (p, h) in self.prepared.iter().zip(&mut self.hot) {
            let Some(p) = p else {
                continue;
            };
            if h.samples == 0 {
                continue;
            }
            let (w, n) = (
                std::mem::take(&mut h.weight),
                std::mem::take(&mut h.samples),
            );
            let leaf_row = h.leaf as usize;
            let leaf = &mut self.functions.counts[leaf_row];
            leaf.self_ += w;
            if let Some((line, file)) = p.leaf_line {
                *leaf.lines.entry(line).or_default() += w;
                if let Some(e) = file.and_then(|f| self.lines.get_mut(&(leaf_row, f, line))) {
                    e.1 += w;
                }
            }
            for &f in &*p.functions {
                self.functions.counts[f].total += w;
            }
            if h.leaf_symbol != u32::MAX {
                self.symbols.counts[h.leaf_symbol as usize].self_ += w;
            }
            for &s in &*p.symbols {
                self.symbols.counts[s].total += w;
            }
            if let Some((_, c)) = self.modules.get_mut(&p.module) {
                c.self_ += w;
                c.self_samples += n;
            }
            let s = &mut self.stacks[p.stack];
            s.weight += w;
            s.samples += n;
        }
    }

    /// A stack's keys, frame by frame, and its folded stack's index (`usize::MAX` for an
    /// empty stack).
    fn prepare(&mut self, frames: &[NamedFrame], truncated: bool) -> (Vec<Keys>, usize) {
        let mut keys = std::mem::take(&mut self.scratch_keys);
        keys.clear();
        if frames.is_empty() {
            return (keys, usize::MAX);
        }
        keys.extend(frames.iter().map(|f| self.keys(f)));
        // folded: the stack by its labels' ids; its line made once. Rooted at the case:
        // the frames inside the innermost harness frame, under the case's name.
        let (inside, root) = match self.root.and_then(|root| {
            frames
                .iter()
                .position(|f| f.function.as_deref().is_some_and(is_harness_frame))
                .map(|i| (i, root))
        }) {
            Some((i, root)) => {
                if self.bench_without_dwarf.is_none() {
                    let f = &frames[i];
                    if let (Some(module), Some(why)) = (&f.module, &f.missing) {
                        self.bench_without_dwarf =
                            Some((module.as_str().to_string(), why.as_str().to_string()));
                    }
                }
                (i, Some(root))
            }
            None => (keys.len(), None),
        };
        let mut id = std::mem::take(&mut self.scratch_id);
        id.clear();
        id.push(u32::from(truncated));
        id.extend(keys[..inside].iter().map(|k| k.folded));
        id.extend(root);
        let index = match self.stack_ids.get(id.as_slice()) {
            Some(&i) => i,
            None => {
                let labels: Vec<&str> = root
                    .into_iter()
                    .chain(keys[..inside].iter().rev().map(|k| k.folded))
                    .map(|id| self.labels.text(id))
                    .collect();
                let mut line =
                    String::with_capacity(labels.iter().map(|l| l.len() + 1).sum::<usize>() + 16);
                // A stack cut short has no root to fold: it stays as it was unwound.
                if truncated && root.is_none() {
                    line.push_str("[truncated];");
                }
                line.push_str(&labels.join(";"));
                self.stack_ids
                    .insert(id.clone().into_boxed_slice(), self.stacks.len());
                self.stacks.push(FoldedStack {
                    line,
                    weight: 0,
                    samples: 0,
                });
                self.stacks.len() - 1
            }
        };
        self.scratch_id = id;
        (keys, index)
    }

    /// Counts one sample of a prepared stack.
    fn count(&mut self, frames: &[NamedFrame], keys: &[Keys], stack: usize, weight: u64) {
        self.samples += 1;
        self.weight += weight;
        let sample = self.samples;
        let Some(leaf) = frames.first() else {
            return;
        };
        // functions: every frame a row of its own, inlined ones included.
        let c = &mut self.functions.counts[keys[0].function];
        c.self_ += weight;
        c.count_self(sample);
        c.note(leaf, keys[0].kind);
        if let Some(line) = leaf.line {
            *c.lines.entry(line).or_default() += weight;
            if let Some(file) = &leaf.file {
                self.lines
                    .entry((keys[0].function, file.id(), line))
                    .or_insert_with(|| (file.clone(), 0))
                    .1 += weight;
            }
        }
        for (f, k) in frames.iter().zip(keys) {
            if self.functions.seen[k.function] != sample {
                self.functions.seen[k.function] = sample;
                let c = &mut self.functions.counts[k.function];
                c.total += weight;
                c.note(f, k.kind);
            }
        }
        // symbols: one row per physical frame (its containing symbol).
        let mut first = true;
        for (f, k) in frames.iter().zip(keys).filter(|(f, _)| !f.inlined) {
            if first {
                self.functions.counts[keys[0].function]
                    .self_in
                    .landed(k.symbol, leaf.inlined);
            }
            let c = &mut self.symbols.counts[k.symbol];
            if first {
                c.self_ += weight;
                c.count_self(sample);
                first = false;
            }
            if self.symbols.seen[k.symbol] != sample {
                self.symbols.seen[k.symbol] = sample;
                c.total += weight;
            }
            c.note(f, k.kind);
        }
        // modules: the leaf's.
        let module_id = self.module_counts(leaf, keys[0].kind);
        if let Some((_, c)) = self.modules.get_mut(&module_id) {
            c.self_ += weight;
            c.self_samples += 1;
        }
        let s = &mut self.stacks[stack];
        s.weight += weight;
        s.samples += 1;
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

    /// How the capture's chunks are cut into blocks; `None` for a capture too short to
    /// cut. Where its repeats are too few for blocks of whole ones it keeps twentieths,
    /// with the repeat's length ([`too_few_rounds`] says so).
    fn blocking(&self) -> Option<Blocking> {
        if self.samples < MIN_BLOCKED_SAMPLES {
            return None;
        }
        let chunks = self.samples.div_ceil(CHUNK);
        let twentieths = Blocking {
            len: chunks as f64 / BLOCKS as f64,
            count: BLOCKS,
            by: BlockedBy::Samples,
            round: None,
        };
        let (round, by) = match self.blocks {
            Blocks::Samples => return Some(twentieths),
            Blocks::Repeats(n) => (chunks as f64 / n.max(1) as f64, BlockedBy::Iterations),
            Blocks::Found => match self.round_length(chunks) {
                Some(round) => (round, BlockedBy::Rounds),
                None => return Some(twentieths),
            },
        };
        // Whole rounds, as near a twentieth of the capture as they come.
        let len = (twentieths.len / round).round().max(1.0) * round;
        let count = (chunks as f64 / len) as usize;
        if count < MIN_ROUND_BLOCKS {
            return Some(Blocking {
                round: Some(round),
                ..twentieths
            });
        }
        Some(Blocking {
            len,
            count,
            by,
            round: Some(round),
        })
    }

    /// The length in chunks of the capture's rounds of phases, where it runs in rounds:
    /// the first peak of the autocorrelation of its hottest functions' shares along the
    /// capture (per fine block of whole chunks), after it has gone negative, where that
    /// peak is at least [`ROUND_CORRELATION`] of their variance beyond sampling noise and
    /// clear of the noise of the estimate. `None` for a capture with no rounds (a steady
    /// mix, or phases that do not repeat in it).
    fn round_length(&self, chunks: u64) -> Option<f64> {
        let per_fine = chunks.div_ceil(MAX_FINE).max(1);
        let fine = chunks.div_ceil(per_fine) as usize;
        if fine < MIN_FINE {
            return None;
        }
        let fine_samples = per_fine * CHUNK;
        let size = |i: usize| fine_samples.min(self.samples - i as u64 * fine_samples) as f64;
        let mut hottest: Vec<&Counts> = (self.functions.counts.iter())
            .filter(|c| c.self_samples * 100 >= self.samples)
            .collect();
        hottest.sort_by_key(|c| std::cmp::Reverse(c.self_samples));
        hottest.truncate(ROUND_FUNCTIONS);
        let max_lag = fine / MIN_ROUND_BLOCKS;
        let mut cov = vec![0.0f64; max_lag + 1];
        let (mut signal, mut total) = (0.0f64, 0.0f64);
        let mut x = vec![0.0f64; fine];
        for c in hottest {
            x.fill(0.0);
            for &(chunk, n) in &c.chunks {
                x[(u64::from(chunk) / per_fine) as usize] += f64::from(n);
            }
            let mean = c.self_samples as f64 / self.samples as f64;
            for (i, v) in x.iter_mut().enumerate() {
                *v = *v / size(i) - mean;
            }
            let c0 = x.iter().map(|v| v * v).sum::<f64>() / fine as f64;
            let noise = mean * (1.0 - mean) / fine_samples as f64;
            signal += (c0 - noise).max(0.0);
            total += c0;
            for (lag, acc) in cov.iter_mut().enumerate().skip(1) {
                *acc += x.iter().zip(&x[lag..]).map(|(a, b)| a * b).sum::<f64>() / fine as f64;
            }
        }
        if signal <= 0.0 {
            return None;
        }
        let rho: Vec<f64> = cov.iter().map(|c| c / signal).collect();
        let negative = (1..=max_lag).find(|&l| rho[l] < 0.0)?;
        let peak = (negative..=max_lag)
            .map(|l| rho[l])
            .fold(f64::MIN, f64::max);
        // Clear of the estimate's own noise, which a correlated series makes large
        // (Bartlett: the variance of an autocorrelation estimate is (1 + 2 Σ ρ_j²) / n
        // over the lags before it, in the series' own units, sampling noise included).
        let observed = |c: f64| c / total;
        let bartlett = 1.0
            + 2.0
                * cov[1..negative]
                    .iter()
                    .map(|&c| observed(c).powi(2))
                    .sum::<f64>();
        let noise = (bartlett / fine as f64).sqrt();
        if peak < ROUND_CORRELATION || observed(peak * signal) < ROUND_CLEAR * noise {
            return None;
        }
        // The first peak near the highest (the round, not a multiple of it).
        // A peak at the end of the lags looked at is no round found.
        let lag = (negative..max_lag)
            .find(|&l| rho[l] >= 0.8 * peak && rho[l] >= rho[l - 1] && rho[l] >= rho[l + 1])?;
        // Between fine blocks: the vertex of the parabola through the peak and its two
        // neighbours.
        let (a, b, c) = (rho[lag - 1], rho[lag], rho[lag + 1]);
        let curve = a - 2.0 * b + c;
        let shift = if curve < 0.0 {
            (0.5 * (a - c) / curve).clamp(-0.5, 0.5)
        } else {
            0.0
        };
        Some((lag as f64 + shift) * per_fine as f64)
    }

    /// Samples in each block.
    fn block_samples(&self, blocking: Option<&Blocking>) -> Vec<u64> {
        let Some(blocking) = blocking else {
            return Vec::new();
        };
        let mut out = vec![0u64; blocking.count];
        for chunk in 0..self.samples.div_ceil(CHUNK) {
            let size = CHUNK.min(self.samples - chunk * CHUNK);
            out[blocking.of(chunk as u32)] += size;
        }
        out
    }

    /// A flat view's rows; `symbols` names the symbol rows a function row's self
    /// samples land in (the functions view's).
    fn rows<'a>(
        &self,
        map: impl Iterator<Item = (&'a str, &'a Counts)>,
        symbols: Option<&Rows>,
        blocking: Option<&Blocking>,
    ) -> Vec<Entry> {
        let pct = |w: u64| 100.0 * w as f64 / self.weight.max(1) as f64;
        let blocks = |c: &Counts| -> Vec<u32> {
            match blocking {
                Some(blocking) if c.self_samples > 0 => {
                    let mut out = vec![0u32; blocking.count];
                    for &(chunk, n) in &c.chunks {
                        out[blocking.of(chunk)] += n;
                    }
                    out
                }
                _ => Vec::new(),
            }
        };
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
                blocks: blocks(c),
                kind: c.kind.unwrap_or(Kind::Unknown),
                inlined_into: match (c.self_in, symbols) {
                    (SelfIn::One(s), Some(rows)) if *rows.names[s] != *name => {
                        Some(rows.names[s].to_string())
                    }
                    _ => None,
                },
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
        self.flush();
        let blocking = self.blocking();
        let blocking = blocking.as_ref();
        let functions = self.rows(
            (self.functions.names.iter().map(|n| &**n)).zip(&self.functions.counts),
            Some(&self.symbols),
            blocking,
        );
        let symbols = self.rows(
            (self.symbols.names.iter().map(|n| &**n)).zip(&self.symbols.counts),
            None,
            blocking,
        );
        let mut modules = self.rows(
            self.modules.values().map(|(n, c)| (n.as_str(), c)),
            None,
            blocking,
        );
        modules.retain(|m| m.self_ > 0);
        // Lines of the ten hottest functions.
        let hot: HashSet<&str> = functions.iter().take(10).map(|e| e.name.as_str()).collect();
        let pct = |w: u64| 100.0 * w as f64 / self.weight.max(1) as f64;
        let mut by_line: BTreeMap<(&str, &str, u32), u64> = BTreeMap::new();
        for ((function, _, line), (file, w)) in &self.lines {
            let function = &*self.functions.names[*function];
            if hot.contains(function) {
                *by_line.entry((function, file.as_str(), *line)).or_default() += w;
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
        let mut profile = Profile {
            schema: "sparkles.profile/1".into(),
            case: case.into(),
            event: event.into(),
            event_note: None,
            samples: self.samples,
            block_samples: self.block_samples(blocking),
            blocked_by: blocking.map(|b| b.by),
            round_samples: blocking.and_then(|b| b.round).map(|r| r * CHUNK as f64),
            lost,
            lost_records: 0,
            lost_samples: 0,
            throttled: Default::default(),
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
            offcpu: None,
            iterations: None,
        };
        profile.notes.extend(too_few_rounds(&profile));
        profile.notes.extend(self.bench_without_dwarf.map(|(module, why)| {
            format!(
                "{module}: {why}: the case's code is named by its symbols alone (what was inlined into a function is its self time, with no source lines); build the benches with line tables: [profile.bench] debug = \"line-tables-only\" in the workspace's Cargo.toml (or CARGO_PROFILE_BENCH_DEBUG=line-tables-only)"
            )
        }));
        (profile, folded)
    }
}

/// The profile as a table: the top `n` of both views.
pub fn table(p: &Profile, n: usize) -> String {
    let mut out = format!(
        "{}: {}, {} samples, {} lost, throttled {} times ({:.3} s); unwinding {}: {:.1}% truncated\n",
        p.case,
        p.event,
        p.samples,
        p.lost,
        p.throttled.count,
        p.throttled.seconds,
        p.unwinding.mode,
        p.unwinding.truncated_pct
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
    if let Some(o) = &p.offcpu {
        out.push_str(&crate::offcpu::table(o, n));
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
