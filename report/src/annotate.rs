//! Inside the hot functions (`sparkles annotate`): each chosen function's source lines and
//! instructions with the samples that landed on them, as perf annotate shows them.
//!
//! A sample lands on the instruction its IP names (the leaf of its stack, before any
//! unwinding): per function (the ELF symbol containing the IP, as perf annotate groups
//! them) the samples per instruction address, the instructions disassembled from the
//! module's own bytes (iced-x86; x86_64 modules), each labelled with the source line DWARF
//! gives it, and the lines of the function itself with the lines of what was inlined into
//! them under them. Addresses are the binary's own (ELF virtual addresses), as perf
//! annotate prints them. A non-precise event (cpu-clock, most cycles events) charges the
//! instruction after the one that cost: the annotation says whether its event was precise.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde::{Deserialize, Serialize};
use sparkles_perf_data::record::Record;
use sparkles_perf_data::{Event, PerfData};
use sparkles_symbolize::symbolizer::{ModuleKey, Place};

use crate::error::Error;
use crate::stacks::{StackNamer, StackOptions};

/// `sparkles.annotate/1`.
pub const SCHEMA: &str = "sparkles.annotate/1";

/// Which functions to annotate.
#[derive(Debug, Clone, Default)]
pub struct Select {
    /// By name (the demangled symbol, or its last path segments: `hot_loop`,
    /// `mycrate::parse`); empty: the hottest.
    pub symbols: Vec<String>,
    /// How many of the hottest, by self samples, where no names are given.
    pub top: usize,
    /// Where source files built elsewhere are looked for: a file not at its recorded path is
    /// tried under this folder by ever shorter tails of that path.
    pub source_root: Option<PathBuf>,
}

/// The annotation of a capture's hottest (or named) functions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Annotation {
    /// [`SCHEMA`].
    pub schema: String,
    /// The event whose samples are counted.
    pub event: String,
    /// Whether that event is precise (its samples name the instruction that caused them);
    /// where not, a sample lands after the instruction that cost (skid).
    pub precise: bool,
    /// Samples of the event in the capture (user and kernel).
    pub samples: u64,
    /// The functions, hottest first.
    pub functions: Vec<Function>,
    /// What could not be done, and why.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The annotation this one was compared against ([`compare`]), where it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
}

/// What an annotation was compared against.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Baseline {
    /// Where it came from (a file).
    pub source: String,
    /// Its event.
    pub event: String,
    /// Its samples of that event.
    pub samples: u64,
}

/// A function's samples in the baseline.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FunctionBase {
    pub samples: u64,
    /// Of all the baseline capture's samples, percent.
    pub share: f64,
}

/// One annotated function.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Function {
    /// Its symbol, demangled.
    pub name: String,
    /// The module's path.
    pub module: String,
    /// Its address in the module (`0x…`).
    pub address: String,
    /// Samples whose IP is in it.
    pub samples: u64,
    /// Of all the capture's samples, percent.
    pub share: f64,
    /// Its own source lines with samples, most first; each with the inlined callees' lines
    /// under it.
    pub lines: Vec<Line>,
    /// Every instruction, in address order.
    pub instructions: Vec<Instruction>,
    /// Why a view is missing or partial (no line table, no source file, another
    /// architecture).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The whole function's source, line by line, where its file was found: from the
    /// first to the last line of its own file that an instruction of it is labelled with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// Against a baseline: the function's samples there (absent where the baseline's
    /// annotation does not have it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<FunctionBase>,
    /// Against a baseline: its lines that had samples there and have none now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_only: Vec<Line>,
}

/// A function's source file, from its first line to its last.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Source {
    pub file: String,
    /// Every line of the range, in order.
    pub lines: Vec<SourceLine>,
}

/// One line of a function's source.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SourceLine {
    pub line: u32,
    pub text: String,
    /// As the line's row in `lines` (0 where it has none).
    pub samples: u64,
    pub share: f64,
    /// Against a baseline: the change in share, in points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<f64>,
}

/// A source line's samples.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Line {
    pub file: String,
    pub line: u32,
    /// Samples at instructions of this line (the inlined code under it included).
    pub samples: u64,
    /// Of the function's samples, percent.
    pub share: f64,
    /// The line's text, where the file was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Lines of functions inlined here (the innermost frame's line), most first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inlined: Vec<Line>,
    /// Against a baseline: the line's share of the function's samples there (0 where it
    /// had none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_share: Option<f64>,
    /// `share - base_share`, in points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<f64>,
    /// How far apart two captures of the same code put the line (about two binomial
    /// standard errors of the change, in points): a change within it is not told apart
    /// from sampling noise. Per line, not corrected for the function's number of lines
    /// (of 100 unchanged lines about 5 fall outside it), and binomial, so a lower bound
    /// where samples come in runs: the diff's test (blocks, Bonferroni) says which
    /// functions moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<f64>,
}

/// An instruction's samples.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Instruction {
    /// Its address in the module (`0x…`).
    pub address: String,
    /// AT&T syntax, as objdump and perf annotate print it; a branch's target named
    /// `<function+0xoff>`.
    pub text: String,
    pub samples: u64,
    /// Of the function's samples, percent.
    pub share: f64,
    /// Its source line (the innermost frame's: an inlined callee's line where it is one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// A source line: file and line number.
type At = (String, u32);

/// Samples of one function: per address.
#[derive(Debug, Default)]
struct Tally {
    name: String,
    module: String,
    samples: u64,
    at: HashMap<u64, u64>,
}

/// Annotates the functions of `path` that `select` names, or its hottest.
pub fn annotate(path: &Path, options: &StackOptions, select: &Select) -> Result<Annotation, Error> {
    let data = PerfData::open(path)?;
    let mut namer = StackNamer::for_capture(&data, options);
    let mut tallying = Tallying::new(&data, options)?;
    crate::capture::each_record(&data, &mut namer, &mut tallying)?;
    Ok(tallying.finish(&mut namer, select))
}

/// [`annotate`]'s part of a reading of the capture ([`crate::reading::read_capture`]):
/// the chosen events' samples counted by process and IP, each IP's function found where
/// the address space holds it.
pub(crate) struct Tallying {
    chosen: Vec<bool>,
    tallies: HashMap<(ModuleKey, u64), Tally>,
    samples: u64,
    precise: bool,
    events: Vec<String>,
    /// Samples by process and IP, located once each (a hot loop's few addresses are most
    /// of a capture's samples); forgotten when an address space changes.
    at_ip: HashMap<(u32, u64), u64>,
}

impl Tallying {
    pub(crate) fn new(data: &PerfData, options: &StackOptions) -> Result<Tallying, Error> {
        let chosen = crate::capture::chosen_events(data, options.event.as_deref())?;
        let mut precise = true;
        let mut events: Vec<String> = Vec::new();
        for (i, a) in data.attrs.iter().enumerate() {
            if chosen.get(i).copied().unwrap_or(true) {
                precise &= is_precise(&a.attr);
                events.push(crate::capture::attr_name(a));
            }
        }
        Ok(Tallying {
            chosen,
            tallies: HashMap::new(),
            samples: 0,
            precise,
            events,
            at_ip: HashMap::new(),
        })
    }
}

impl crate::capture::Visit for Tallying {
    /// Before the namer observes `record`: where it changes an address space, the samples
    /// counted so far are located in the space they were taken in.
    fn before_observed(&mut self, record: &Record<'_>, namer: &mut StackNamer) {
        if matches!(
            record,
            Record::Mmap(_) | Record::Comm { exec: true, .. } | Record::Fork(_) | Record::Exit(_)
        ) {
            tally(namer, &mut self.tallies, std::mem::take(&mut self.at_ip));
        }
    }

    /// Counts a sample of the chosen events by its process and IP.
    fn record(
        &mut self,
        e: &Event<'_>,
        _namer: &mut StackNamer,
        _found: &mut crate::capture::Found,
    ) {
        let Record::Sample(s) = &e.record else {
            return;
        };
        if !self
            .chosen
            .get(e.attr.unwrap_or(0))
            .copied()
            .unwrap_or(true)
        {
            return;
        }
        self.samples += 1;
        if let (Some(ip), pid) = (s.ip, s.pid.unwrap_or(0)) {
            *self.at_ip.entry((pid, ip)).or_default() += 1;
        }
    }
}

impl Tallying {
    /// The annotation of the functions `select` picks.
    pub(crate) fn finish(mut self, namer: &mut StackNamer, select: &Select) -> Annotation {
        let samples = self.samples;
        tally(namer, &mut self.tallies, self.at_ip);
        let mut ranked: Vec<((ModuleKey, u64), Tally)> = self.tallies.into_iter().collect();
        ranked.sort_by(|a, b| b.1.samples.cmp(&a.1.samples).then(a.0 .1.cmp(&b.0 .1)));
        let mut notes = Vec::new();
        let picked: Vec<((ModuleKey, u64), Tally)> = if select.symbols.is_empty() {
            ranked.into_iter().take(select.top.max(1)).collect()
        } else {
            let mut picked = Vec::new();
            for wanted in &select.symbols {
                let matches = |n: &str| n == wanted || n.ends_with(&format!("::{wanted}"));
                match ranked.iter().position(|(_, t)| matches(&t.name)) {
                    Some(i) => picked.push(ranked.swap_remove(i)),
                    None => notes.push(format!(
                        "{wanted}: no sample landed in a function of that name"
                    )),
                }
            }
            picked.sort_by_key(|p| std::cmp::Reverse(p.1.samples));
            picked
        };
        let functions = picked
            .into_iter()
            .map(|((key, start), t)| function(namer, &key, start, t, samples, select))
            .collect();
        Annotation {
            schema: SCHEMA.to_string(),
            event: self.events.join(", "),
            precise: self.precise && !self.events.is_empty(),
            samples,
            functions,
            notes,
            baseline: None,
        }
    }
}

/// Whether an event's samples name the instruction that caused them: `precise_ip` asked
/// of a hardware event (PEBS, IBS). A software event (cpu-clock, task-clock) samples from
/// a timer interrupt however it is spelled: perf record's fallback from `cycles:P` keeps
/// the `:ppp`, and the kernel ignores it. A tracepoint's IP is the kernel's, not the
/// cost's.
fn is_precise(attr: &sparkles_perf_data::attr::Attr) -> bool {
    use crate::capture::{PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT};
    let asked = (attr.flags >> sparkles_perf_data::attr::flag::PRECISE_SHIFT) & 3 > 0;
    asked && !matches!(attr.type_, PERF_TYPE_SOFTWARE | PERF_TYPE_TRACEPOINT)
}

/// Compares annotation `a` with `base` (the same code's, a baseline's, from `source`):
/// each function of `a` that `base` has gets its samples there, each of its lines (and
/// inlined lines, and whole-source lines) its share there and the change in points with
/// the noise that change has; lines that had samples there and have none now are listed
/// apart. A function `base` does not have is said in its notes.
pub fn compare(a: &mut Annotation, base: &Annotation, source: &str) {
    a.baseline = Some(Baseline {
        source: source.to_string(),
        event: base.event.clone(),
        samples: base.samples,
    });
    if base.event != a.event {
        a.notes.push(format!(
            "the baseline's samples are of {}, these of {}: their shares compared all the same",
            base.event, a.event
        ));
    }
    type Key = (String, u32);
    let key = |l: &Line| (l.file.clone(), l.line);
    for f in &mut a.functions {
        let Some(b) = base.functions.iter().find(|b| b.name == f.name) else {
            f.notes.push(format!(
                "not among the baseline's {} annotated functions: no change per line",
                base.functions.len()
            ));
            continue;
        };
        f.base = Some(FunctionBase {
            samples: b.samples,
            share: b.share,
        });
        // The change in points, and two binomial standard errors of it.
        let (now_n, base_n) = (f.samples, b.samples);
        let against = |l: &mut Line, was: Option<&Line>| {
            let then = was.map_or(0.0, |w| w.share);
            l.base_share = Some(then);
            l.change = Some(l.share - then);
            l.noise = Some(noise(l.share, now_n, then, base_n));
        };
        let before: HashMap<Key, &Line> = b.lines.iter().map(|l| (key(l), l)).collect();
        for l in &mut f.lines {
            let was = before.get(&key(l)).copied();
            let inlined: HashMap<Key, &Line> = was
                .map(|w| w.inlined.iter().map(|c| (key(c), c)).collect())
                .unwrap_or_default();
            for c in &mut l.inlined {
                against(c, inlined.get(&key(c)).copied());
            }
            against(l, was);
        }
        let now: std::collections::HashSet<Key> = f.lines.iter().map(key).collect();
        f.base_only = b
            .lines
            .iter()
            .filter(|l| !now.contains(&key(l)))
            .map(|l| Line {
                file: l.file.clone(),
                line: l.line,
                text: l.text.clone(),
                base_share: Some(l.share),
                change: Some(-l.share),
                noise: Some(noise(0.0, now_n, l.share, base_n)),
                ..Line::default()
            })
            .collect();
        if let Some(src) = &mut f.source {
            for sl in &mut src.lines {
                let then = before
                    .get(&(src.file.clone(), sl.line))
                    .map_or(0.0, |w| w.share);
                sl.change = Some(sl.share - then);
            }
        }
    }
}

/// About two standard errors of the difference of two shares (percent of `n` and `m`
/// samples), in points: binomial, so a lower bound where samples come in runs (a periodic
/// sampler beating with a loop).
fn noise(p: f64, n: u64, q: f64, m: u64) -> f64 {
    // A share estimated as (k + 1) / (n + 2): a line with no samples of few still varies.
    let var = |share: f64, of: u64| {
        let of = of as f64;
        let x = (share / 100.0 * of + 1.0) / (of + 2.0);
        x * (1.0 - x) / (of + 2.0)
    };
    200.0 * (var(p, n) + var(q, m)).sqrt()
}

/// Adds the samples counted per process and IP to their functions' tallies, each IP
/// located in the address space as it is now.
fn tally(
    namer: &mut StackNamer,
    tallies: &mut HashMap<(ModuleKey, u64), Tally>,
    at_ip: HashMap<(u32, u64), u64>,
) {
    for ((pid, ip), n) in at_ip {
        let located = namer.locate(pid, ip);
        let Place::Module { key, vaddr } = &located.place else {
            continue;
        };
        let Some((name, offset)) = namer.symbolizer().symbol(&located.place) else {
            continue;
        };
        let start = vaddr - offset;
        let t = tallies
            .entry((key.clone(), start))
            .or_insert_with(|| Tally {
                name: sparkles_symbolize::demangle::for_display(name).to_string(),
                module: located.mapping.as_deref().unwrap_or("").to_string(),
                ..Tally::default()
            });
        t.samples += n;
        *t.at.entry(*vaddr).or_default() += n;
    }
}

/// One function's views: its instructions from the module's bytes, each named by its
/// line, and its lines.
fn function(
    namer: &mut StackNamer,
    key: &ModuleKey,
    start: u64,
    t: Tally,
    all: u64,
    select: &Select,
) -> Function {
    let share = |n: u64, of: u64| {
        if of == 0 {
            0.0
        } else {
            n as f64 * 100.0 / of as f64
        }
    };
    let mut notes = Vec::new();
    let module = namer.symbolizer().loaded(key).cloned();
    let mut instructions = Vec::new();
    if let Some(m) = module {
        if let Some(why) = m.debug_info().reason() {
            notes.push(format!("no source lines: {why}"));
        }
        let path = m.path().to_path_buf();
        // A call's or jump's target outside the function, by the module's symbols.
        let name_of = |addr: u64| {
            m.symbol(addr).map(|(n, off)| {
                let n = sparkles_symbolize::demangle::for_display(n);
                if off == 0 {
                    format!("<{n}>")
                } else {
                    format!("<{n}+{off:#x}>")
                }
            })
        };
        // A stripped module's local symbols (and their sizes) are in its debug file.
        let debug = (m.dwarf_path() != m.path())
            .then(|| std::fs::read(m.dwarf_path()).ok())
            .flatten();
        match disassemble(&m.image(), debug.as_deref(), start, &t.name, name_of) {
            Ok(list) => instructions = list,
            Err(why) => notes.push(format!("no instructions from {}: {why}", path.display())),
        }
    } else {
        notes.push("its module is not loaded: no instructions".to_string());
    }
    // Each instruction's samples and line; the lines of the function and of its inlined
    // callees.
    let mut own: BTreeMap<At, (u64, BTreeMap<At, u64>)> = BTreeMap::new();
    let mut rows = Vec::new();
    // The function's own lines (the outermost frame's) its instructions are labelled with,
    // per file: the range of its source.
    let mut spans: HashMap<String, (u32, u32, usize)> = HashMap::new();
    for (address, text) in instructions {
        let n = t.at.get(&address).copied().unwrap_or(0);
        let named = namer.symbolizer().name(&Place::Module {
            key: key.clone(),
            vaddr: address,
        });
        if let Some((file, line)) = named.frames.last().and_then(frame_line) {
            let span = spans.entry(file).or_insert((line, line, 0));
            span.0 = span.0.min(line);
            span.1 = span.1.max(line);
            span.2 += 1;
        }
        let inner = innermost_line(&named.frames);
        rows.push(Instruction {
            address: format!("{address:#x}"),
            text,
            samples: n,
            share: share(n, t.samples),
            file: inner.as_ref().map(|(f, _)| f.clone()),
            line: inner.map(|(_, l)| l),
        });
    }
    for (&address, &n) in &t.at {
        let named = namer.symbolizer().name(&Place::Module {
            key: key.clone(),
            vaddr: address,
        });
        // The function's own line: the outermost frame's; the inlined code's: the
        // innermost frame that has one (as the instruction is labelled).
        let Some(line) = named
            .frames
            .last()
            .and_then(frame_line)
            .or_else(|| innermost_line(&named.frames))
        else {
            continue;
        };
        let entry = own.entry(line.clone()).or_default();
        entry.0 += n;
        if let Some(callee) = innermost_line(&named.frames).filter(|c| *c != line) {
            *entry.1.entry(callee).or_default() += n;
        }
    }
    let mut sources = Sources::new(select.source_root.clone());
    let mut lines: Vec<Line> = own
        .into_iter()
        .map(|((file, line), (n, inlined))| {
            let mut inlined: Vec<Line> = inlined
                .into_iter()
                .map(|((f, l), m)| Line {
                    text: sources.line(&f, l),
                    file: f,
                    line: l,
                    samples: m,
                    share: share(m, t.samples),
                    ..Line::default()
                })
                .collect();
            inlined.sort_by_key(|l| std::cmp::Reverse(l.samples));
            Line {
                text: sources.line(&file, line),
                file,
                line,
                samples: n,
                share: share(n, t.samples),
                inlined,
                ..Line::default()
            }
        })
        .collect();
    lines.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.line.cmp(&b.line)));
    // The whole function: the file most of its instructions are labelled with (its hottest
    // line's where that is one of them), first line to last.
    let file = lines
        .first()
        .map(|l| l.file.clone())
        .filter(|f| spans.contains_key(f))
        .or_else(|| {
            spans
                .iter()
                .max_by(|a, b| a.1 .2.cmp(&b.1 .2).then(b.0.cmp(a.0)))
                .map(|(f, _)| f.clone())
        });
    let source = file.and_then(|file| {
        let (first, last, _) = spans[&file];
        if last - first >= MAX_SOURCE_LINES {
            notes.push(format!(
                "its lines in {file} span {first}..{last}: more than {MAX_SOURCE_LINES}, so no whole-function source"
            ));
            return None;
        }
        let sampled: HashMap<u32, u64> = lines
            .iter()
            .filter(|l| l.file == file)
            .map(|l| (l.line, l.samples))
            .collect();
        let listed = (first..=last)
            .map(|line| {
                let n = sampled.get(&line).copied().unwrap_or(0);
                Some(SourceLine {
                    line,
                    text: sources.line(&file, line)?,
                    samples: n,
                    share: share(n, t.samples),
                    change: None,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Source {
            file,
            lines: listed,
        })
    });
    notes.extend(sources.missing());
    Function {
        name: t.name,
        module: t.module,
        address: format!("{start:#x}"),
        samples: t.samples,
        share: share(t.samples, all),
        lines,
        instructions: rows,
        notes,
        source,
        base: None,
        base_only: Vec::new(),
    }
}

/// The longest function source listed whole (a range longer is a function whose lines
/// come from all over its file, macros or generated code).
const MAX_SOURCE_LINES: u32 = 400;

/// A frame's source line, where it has one (line 0 is none).
fn frame_line(f: &sparkles_symbolize::Frame) -> Option<At> {
    Some((f.file.clone()?, f.line.filter(|&l| l > 0)?))
}

/// The line an address is labelled with: the innermost of its frames (inlined callees
/// first) that has one.
fn innermost_line(frames: &[sparkles_symbolize::Frame]) -> Option<At> {
    frames.iter().find_map(frame_line)
}

/// The instructions of the symbol at `start` in an ELF image (x86_64 or aarch64): address
/// and text, a branch inside the function named `<name+0xoff>`, one outside by `name_of`.
fn disassemble(
    image: &[u8],
    debug: Option<&[u8]>,
    start: u64,
    name: &str,
    name_of: impl Fn(u64) -> Option<String>,
) -> Result<Vec<(u64, String)>, String> {
    use object::{Object, ObjectSection, ObjectSymbol};
    let file = object::File::parse(image).map_err(|e| e.to_string())?;
    let arch = file.architecture();
    if !matches!(
        arch,
        object::Architecture::X86_64 | object::Architecture::Aarch64
    ) {
        return Err(format!(
            "{arch:?} code is not disassembled (x86_64 and aarch64 are)"
        ));
    }
    let sized = |f: &object::File<'_>| {
        f.symbols()
            .chain(f.dynamic_symbols())
            .filter(|s| s.address() == start && s.size() > 0)
            .max_by_key(|s| s.size())
            .map(|s| (s.size(), s.section_index()))
    };
    let (size, in_image) = match sized(&file) {
        Some((size, section)) => (size, section),
        None => {
            let debug = debug.and_then(|d| object::File::parse(d).ok());
            let size = debug.as_ref().and_then(sized).map(|(size, _)| size);
            (
                size.ok_or_else(|| format!("no symbol of known size at {start:#x}"))?,
                None,
            )
        }
    };
    // The symbol's own section (a relocatable object's all start at 0), else the one
    // whose addresses hold it.
    let section = in_image
        .and_then(|i| file.section_by_index(i).ok())
        .or_else(|| {
            file.sections()
                .find(|s| s.address() <= start && start + size <= s.address() + s.size())
        })
        .ok_or_else(|| format!("no section holds {start:#x}..{:#x}", start + size))?;
    let data = section.data().map_err(|e| e.to_string())?;
    let from = (start - section.address()) as usize;
    let bytes = data
        .get(from..from + size as usize)
        .ok_or_else(|| format!("{start:#x} is past its section's bytes (.bss?)"))?;
    let end = start + size;
    // A target inside the function by its offset, outside by the module's symbols.
    let target_name = |target: u64| {
        if (start..end).contains(&target) {
            Some(format!("<{name}+{:#x}>", target - start))
        } else {
            name_of(target)
        }
    };
    match arch {
        object::Architecture::Aarch64 => Ok(aarch64(bytes, start, target_name)),
        _ => Ok(x86_64(bytes, start, target_name)),
    }
}

/// x86_64 instructions with iced-x86, in AT&T syntax as objdump prints them.
fn x86_64(
    bytes: &[u8],
    start: u64,
    target_name: impl Fn(u64) -> Option<String>,
) -> Vec<(u64, String)> {
    let mut decoder = iced_x86::Decoder::with_ip(64, bytes, start, iced_x86::DecoderOptions::NONE);
    // objdump's way: lowercase hex, small numbers in hex too, no leading zeros on branch
    // targets, operands in a column.
    let mut formatter = iced_x86::GasFormatter::new();
    {
        use iced_x86::Formatter;
        let o = formatter.options_mut();
        o.set_uppercase_hex(false);
        o.set_small_hex_numbers_in_decimal(false);
        o.set_branch_leading_zeros(false);
        o.set_first_operand_char_index(7);
    }
    let mut out = Vec::new();
    let mut instruction = iced_x86::Instruction::default();
    while decoder.can_decode() {
        decoder.decode_out(&mut instruction);
        let mut text = String::new();
        iced_x86::Formatter::format(&mut formatter, &instruction, &mut text);
        let target = instruction.near_branch_target();
        if let Some(named) = (target != 0).then(|| target_name(target)).flatten() {
            text.push(' ');
            text.push_str(&named);
        }
        out.push((instruction.ip(), text));
    }
    out
}

/// aarch64 instructions with yaxpeax-arm; a PC-relative operand shown as its absolute
/// address, as objdump shows it (`b.ne 18 <hot+0x18>`). A word that is no instruction
/// is `.inst 0x…`, as objdump prints one.
fn aarch64(
    bytes: &[u8],
    start: u64,
    target_name: impl Fn(u64) -> Option<String>,
) -> Vec<(u64, String)> {
    use yaxpeax_arch::{Decoder, U8Reader};
    use yaxpeax_arm::armv8::a64::{InstDecoder, Opcode, Operand};
    let decoder = InstDecoder::default();
    let mut out = Vec::new();
    for (i, word) in bytes.chunks_exact(4).enumerate() {
        let ip = start + 4 * i as u64;
        let mut reader = U8Reader::new(word);
        let text = match decoder.decode(&mut reader) {
            Ok(inst) => {
                let mut text = inst.to_string();
                let relative = inst.operands.iter().find_map(|o| match o {
                    Operand::PCOffset(off) => Some(*off),
                    _ => None,
                });
                if let Some(off) = relative {
                    let base = if inst.opcode == Opcode::ADRP {
                        ip & !0xfff
                    } else {
                        ip
                    };
                    let target = base.wrapping_add_signed(off);
                    let shown = if off < 0 {
                        format!("$-{:#x}", off.unsigned_abs())
                    } else {
                        format!("$+{off:#x}")
                    };
                    text = text.replace(&shown, &format!("{target:#x}"));
                    if let Some(named) = target_name(target) {
                        text.push(' ');
                        text.push_str(&named);
                    }
                }
                text
            }
            Err(_) => format!(
                ".inst {:#010x}",
                u32::from_le_bytes([word[0], word[1], word[2], word[3]])
            ),
        };
        out.push((ip, text));
    }
    out
}

/// Source files read once each; the lines of files not found, said once each.
struct Sources {
    root: Option<PathBuf>,
    files: HashMap<String, Option<Vec<String>>>,
}

impl Sources {
    fn new(root: Option<PathBuf>) -> Sources {
        Sources {
            root,
            files: HashMap::new(),
        }
    }

    /// Line `line` (1-based) of `file`, where the file is found.
    fn line(&mut self, file: &str, line: u32) -> Option<String> {
        let root = self.root.clone();
        let lines = self.files.entry(file.to_string()).or_insert_with(|| {
            let read = |p: &Path| std::fs::read_to_string(p).ok();
            let found = read(Path::new(file))
                .or_else(|| read(&rust_src(file)?))
                .or_else(|| {
                    // Built elsewhere: the file under the root by ever shorter tails.
                    let root = root?;
                    let parts: Vec<_> = Path::new(file).components().collect();
                    (0..parts.len()).find_map(|i| {
                        let tail: PathBuf = parts[i..].iter().collect();
                        read(&root.join(tail.strip_prefix("/").unwrap_or(&tail)))
                    })
                });
            found.map(|t| t.lines().map(str::to_string).collect())
        });
        lines
            .as_ref()?
            .get(line.checked_sub(1)? as usize)
            .map(|l| l.trim_end().to_string())
    }

    /// The files that were not found, said in one note.
    fn missing(&self) -> Vec<String> {
        let mut missing: Vec<&str> = self
            .files
            .iter()
            .filter(|(_, l)| l.is_none())
            .map(|(f, _)| f.as_str())
            .collect();
        missing.sort_unstable();
        let std = missing.iter().filter(|f| f.starts_with("/rustc/")).count();
        match missing.first() {
            None => Vec::new(),
            Some(first) => vec![format!(
                "source text not found for {} file{} ({first}{}){}; --source-root DIR looks under DIR",
                missing.len(),
                if missing.len() == 1 { "" } else { "s" },
                if missing.len() > 1 { ", …" } else { "" },
                if std > 0 {
                    format!(", {std} of them the standard library's (rustup component add rust-src gives them)")
                } else {
                    String::new()
                }
            )],
        }
    }
}

/// Where the rust-src component holds a standard library file that DWARF names under
/// `/rustc/<commit>/library/…` (the toolchain's sysroot, asked of rustc once).
fn rust_src(file: &str) -> Option<PathBuf> {
    static SYSROOT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let rest = file.strip_prefix("/rustc/")?.split_once('/')?.1;
    let sysroot = SYSROOT.get_or_init(|| {
        let out = std::process::Command::new("rustc")
            .args(["--print", "sysroot"])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    });
    Some(sysroot.as_ref()?.join("lib/rustlib/src/rust").join(rest))
}

/// The annotation as text, as perf annotate --stdio lays it out: per function a header
/// (event, precise or not), the lines, then every instruction with its share.
pub fn text(a: &Annotation) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let skid = if a.precise {
        "precise: samples name the instruction that caused them"
    } else {
        "not precise: a sample lands on the instruction after the one that cost (skid)"
    };
    let _ = writeln!(out, "event {} ({skid}), {} samples", a.event, a.samples);
    if let Some(b) = &a.baseline {
        let _ = writeln!(
            out,
            "against {} ({} samples of {})",
            b.source, b.samples, b.event
        );
    }
    for n in &a.notes {
        let _ = writeln!(out, "note: {n}");
    }
    for f in &a.functions {
        let _ = writeln!(
            out,
            "\n{}  {}  {} samples, {:.1}% of all  ({})",
            f.address, f.name, f.samples, f.share, f.module
        );
        for n in &f.notes {
            let _ = writeln!(out, "  note: {n}");
        }
        if let Some(b) = &f.base {
            let _ = writeln!(
                out,
                "  baseline: {} samples, {:.1}% of all; change in points of the function's samples, (~) within noise (two binomial standard errors, each line on its own: not corrected for the function's many lines, so some of them are ~-less by chance)",
                b.samples, b.share
            );
        }
        let change = |l: &Line| match (l.change, l.noise) {
            (Some(c), Some(n)) => {
                format!("{c:>+7.2}{} ", if c.abs() <= n { "~" } else { " " })
            }
            _ => String::new(),
        };
        if !f.lines.is_empty() {
            let _ = writeln!(out, "  lines:");
            for l in f.lines.iter().chain(&f.base_only) {
                let _ = writeln!(
                    out,
                    "  {:>6.2}% {}  {}:{}  {}",
                    l.share,
                    change(l),
                    short(&l.file),
                    l.line,
                    l.text.as_deref().unwrap_or("").trim()
                );
                for i in &l.inlined {
                    let _ = writeln!(
                        out,
                        "      {:>6.2}% {}  inlined {}:{}  {}",
                        i.share,
                        change(i),
                        short(&i.file),
                        i.line,
                        i.text.as_deref().unwrap_or("").trim()
                    );
                }
            }
        }
        if !f.instructions.is_empty() {
            let _ = writeln!(out, "  instructions:");
            for i in &f.instructions {
                let share = if i.samples == 0 {
                    String::from("       ")
                } else {
                    format!("{:>6.2}%", i.share)
                };
                let at = match (&i.file, i.line) {
                    (Some(file), Some(line)) => format!("  {}:{line}", short(file)),
                    _ => String::new(),
                };
                let _ = writeln!(
                    out,
                    "  {share}  {:>10}:  {:<40}{at}",
                    i.address.trim_start_matches("0x"),
                    i.text
                );
            }
        }
    }
    out
}

/// A row's shade: its share of the function's samples.
fn shade(share: f64) -> String {
    format!(
        "background: rgba(220, 80, 40, {:.3})",
        (share / 100.0).clamp(0.0, 1.0) * 0.6
    )
}

/// A line's change against the baseline, as a cell: points, coloured where it is more
/// than its noise.
fn change_cell(change: Option<f64>, noise: Option<f64>) -> Markup {
    let Some(c) = change else {
        return html! { td {} };
    };
    let class = match noise {
        Some(n) if c.abs() <= n => "noise",
        _ if c > 0.0 => "up",
        _ => "down",
    };
    let title = noise.map(|n| format!("noise ±{n:.1} points"));
    html! { td class=(class) title=[title] { (format!("{c:+.1}")) } }
}

/// A share as a cell shows it: one decimal, a share too small for it `<0.1%`, none where
/// nothing was sampled.
fn pct(samples: u64, share: f64) -> String {
    match samples {
        0 => String::new(),
        _ if share < 0.05 => "<0.1%".to_string(),
        _ => format!("{share:.1}%"),
    }
}

/// `file:line`, the file by its name.
fn place(file: &str, line: u32) -> String {
    format!("{}:{line}", short(file))
}

/// How many of a function's hottest lines its source view shows before the whole
/// function.
const LINES_SHOWN: usize = 8;

/// The annotation as HTML sections (the run report's and `sparkles report --format
/// html`'s): a heading, the event and whether it was precise, and per function (the first
/// open) its hottest lines shaded by their share (inlined callees' lines under them, and
/// against a baseline each one's change in points), the whole function's source, and its
/// instructions with their shares and lines. `heading` is the level of the section's
/// title (`h2` on a page of its own, `h3` under a case).
pub fn sections(a: &Annotation, heading: u8) -> Markup {
    if a.functions.is_empty() {
        return html! {};
    }
    let title = "Inside the hot functions";
    let vs = a.baseline.is_some();
    html! {
        @if heading <= 2 { h2 { (title) } } @else { h3 { (title) } }
        p.note { "Samples of " (a.event) " at each line and instruction. "
            @if a.precise { "A precise event: a sample names the instruction that caused it." }
            @else { "Not a precise event: a sample lands on the instruction after the one that cost (skid)." }
            @if let Some(b) = &a.baseline {
                " Against " code { (b.source) } " (" (b.samples) " samples of " (b.event) "): each line's change in points of its function's samples; greyed where within its noise (two binomial standard errors, each line on its own: not corrected for the function's many lines, so among many lines some stand out by chance; the hot-symbol diff's test, corrected, says which functions moved)."
            } }
        @for n in &a.notes { p.note { (n) } }
        @for (i, f) in a.functions.iter().enumerate() {
            details.annotate open[i == 0] {
                summary { code { (f.name) } " — " (f.samples) " samples, " (format!("{:.1}%", f.share)) " of the case's"
                    @if let Some(b) = &f.base { "; the baseline's: " (b.samples) ", " (format!("{:.1}%", b.share)) } }
                @for n in &f.notes { p.note { (n) } }
                @if !f.lines.is_empty() {
                    table.source { thead { tr { th { "share" } @if vs { th { "vs base" } } th.name { "line" } th.name { "source" } } }
                        tbody {
                            @for l in f.lines.iter().take(LINES_SHOWN) {
                                tr style=(shade(l.share)) { td { (pct(l.samples, l.share)) } @if vs { (change_cell(l.change, l.noise)) } td.name { (place(&l.file, l.line)) } td.name { code { (l.text.as_deref().unwrap_or("")) } } }
                                @for c in l.inlined.iter().take(4) {
                                    tr.inlined style=(shade(c.share)) { td { (pct(c.samples, c.share)) } @if vs { (change_cell(c.change, c.noise)) } td.name { "↳ " (place(&c.file, c.line)) } td.name { code { (c.text.as_deref().unwrap_or("")) } } }
                                }
                            }
                            @for l in f.base_only.iter().take(4) {
                                tr.gone { td { "0%" } (change_cell(l.change, l.noise)) td.name { (place(&l.file, l.line)) } td.name { code { (l.text.as_deref().unwrap_or("")) } " (samples in the baseline only)" } }
                            }
                        } }
                    @if f.lines.len() > LINES_SHOWN { p.note { (f.lines.len() - LINES_SHOWN) " more lines with samples"
                        @if f.source.is_some() { " in the whole function below" } } }
                }
                @if let Some(src) = &f.source {
                    details.whole { summary { "whole function: " (short(&src.file)) " lines " (src.lines.first().map_or(0, |l| l.line)) "–" (src.lines.last().map_or(0, |l| l.line)) }
                        table.source { thead { tr { th { "share" } @if vs { th { "vs base" } } th { "line" } th.name { "source" } } }
                            tbody { @for l in &src.lines {
                                tr style=(shade(l.share)) {
                                    td { (pct(l.samples, l.share)) }
                                    @if vs { (change_cell(l.change.filter(|c| *c != 0.0), None)) }
                                    td { (l.line) }
                                    td.name { code { (l.text) } }
                                }
                            } } } }
                }
                @if !f.instructions.is_empty() {
                    details { summary { (f.instructions.len()) " instructions" }
                        table.asm { thead { tr { th { "share" } th { "address" } th.name { "instruction" } th.name { "line" } } }
                            tbody { @for ins in &f.instructions {
                                tr style=(shade(ins.share)) {
                                    td { (pct(ins.samples, ins.share)) }
                                    td { code { (ins.address) } }
                                    td.name { code { (ins.text) } }
                                    td.name { @if let (Some(file), Some(line)) = (&ins.file, ins.line) { (place(file, line)) } }
                                }
                            } } } }
                }
            }
        }
    }
}

/// `sparkles annotate --format html`: the annotation as a page of its own.
pub fn page(a: &Annotation, title: &str) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "sparkles annotate: " (title) }
                style { (PreEscaped(crate::html::CSS)) (PreEscaped(crate::html::ANNOTATE_CSS)) }
            }
            body {
                h1 { (title) }
                p { (a.samples) " samples of " (a.event) }
                (sections(a, 2))
            }
        }
    }
    .into_string()
}

/// A path's file name, for the text view.
fn short(file: &str) -> &str {
    Path::new(file)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(file)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use super::*;

    /// testdata/annotate: `hot` cross-compiled for aarch64, and objdump's listing of it.
    fn testdata(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../testdata/annotate")
            .join(name)
    }

    #[test]
    fn aarch64_instructions_are_objdumps_and_their_branch_targets_named() {
        let image = std::fs::read(testdata("loop-aarch64.o")).unwrap();
        let ours = disassemble(&image, None, 0, "hot", |_| None).unwrap();
        // objdump's lines: `   18:\tldr\tx1, [x3], #8`.
        let listing = std::fs::read_to_string(testdata("loop-aarch64.objdump")).unwrap();
        let theirs: Vec<(u64, String)> = listing
            .lines()
            .filter_map(|l| {
                let (addr, rest) = l.split_once(":\t")?;
                let addr = u64::from_str_radix(addr.trim(), 16).ok()?;
                Some((addr, rest.split('\t').next()?.to_string()))
            })
            .collect();
        assert_eq!(ours.len(), theirs.len(), "{ours:?}");
        for ((a, text), (b, mnemonic)) in ours.iter().zip(&theirs) {
            assert_eq!(a, b);
            // The same instruction (yaxpeax spells `mov x0, #0x0` and objdump `mov x0,
            // #0x0` alike; conditions and aliases agree on this function).
            assert_eq!(
                text.split_whitespace().next(),
                Some(mnemonic.as_str()),
                "{a:#x}: {text}"
            );
        }
        // The loop's branch back, and the early exit, are named as objdump names them.
        let text = |at: u64| &ours.iter().find(|(a, _)| *a == at).unwrap().1;
        assert!(text(0x30).ends_with("0x18 <hot+0x18>"), "{}", text(0x30));
        assert!(text(0x0).ends_with("0x38 <hot+0x38>"), "{}", text(0x0));
    }

    /// An annotation of one function `name` with `samples` samples, its lines `(line,
    /// samples)` of `f.rs`, the first with an inlined callee's line 90 taking half.
    fn annotation(name: &str, samples: u64, lines: &[(u32, u64)]) -> Annotation {
        let line = |l: u32, n: u64| Line {
            file: "/src/f.rs".to_string(),
            line: l,
            samples: n,
            share: n as f64 * 100.0 / samples as f64,
            text: Some(format!("line {l}")),
            ..Line::default()
        };
        let mut lines: Vec<Line> = lines.iter().map(|&(l, n)| line(l, n)).collect();
        let first = lines[0].samples;
        lines[0].inlined = vec![line(90, first / 2)];
        Annotation {
            schema: SCHEMA.to_string(),
            event: "cpu-clock".to_string(),
            precise: false,
            samples: samples * 2,
            functions: vec![Function {
                name: name.to_string(),
                module: "/bin/x".to_string(),
                address: "0x1000".to_string(),
                samples,
                share: 50.0,
                source: Some(Source {
                    file: "/src/f.rs".to_string(),
                    lines: (10..=13)
                        .map(|l| {
                            let n = lines.iter().find(|x| x.line == l).map_or(0, |x| x.samples);
                            SourceLine {
                                line: l,
                                text: format!("line {l}"),
                                samples: n,
                                share: n as f64 * 100.0 / samples as f64,
                                change: None,
                            }
                        })
                        .collect(),
                }),
                lines,
                instructions: Vec::new(),
                notes: Vec::new(),
                base: None,
                base_only: Vec::new(),
            }],
            notes: Vec::new(),
            baseline: None,
        }
    }

    #[test]
    fn each_line_gets_its_change_against_the_baseline_and_its_noise() {
        // The baseline: line 10 60%, 11 30%, 12 10% of 1000; now: 10 40%, 11 30%, 13 30%.
        let base = annotation("f", 1000, &[(10, 600), (11, 300), (12, 100)]);
        let mut now = annotation("f", 1000, &[(10, 400), (11, 300), (13, 300)]);
        compare(&mut now, &base, "base.json");
        assert_eq!(now.baseline.as_ref().unwrap().source, "base.json");
        let f = &now.functions[0];
        assert_eq!(f.base.as_ref().unwrap().samples, 1000);
        let by = |l: u32| f.lines.iter().find(|x| x.line == l).unwrap();
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-9;
        assert!(close(by(10).change, -20.0) && close(by(10).base_share, 60.0));
        assert!(close(by(11).change, 0.0));
        // A line new since the baseline: all of its share is change.
        assert!(close(by(13).change, 30.0) && close(by(13).base_share, 0.0));
        // The inlined line under line 10: 20% now, 30% then.
        assert!(close(by(10).inlined[0].change, -10.0));
        // Line 12 had samples only in the baseline.
        assert_eq!(f.base_only.len(), 1);
        assert_eq!(f.base_only[0].line, 12);
        assert!(close(f.base_only[0].change, -10.0));
        // 20 points on a thousand samples a side is far outside the noise (about 4.3
        // points: two standard errors of a difference of two 50% shares); none is within
        // it only where nothing changed.
        let noise = by(10).noise.unwrap();
        assert!(noise > 2.0 && noise < 6.0, "{noise}");
        assert!(by(11).noise.unwrap() > 0.0);
        // The whole source's lines too.
        let src = f.source.as_ref().unwrap();
        let changes: Vec<f64> = src.lines.iter().map(|l| l.change.unwrap()).collect();
        assert_eq!(changes.len(), 4);
        assert!((changes[0] + 20.0).abs() < 1e-9 && (changes[3] - 30.0).abs() < 1e-9);
        // The text view and the HTML say the change, and round-trip through the JSON.
        let json = serde_json::to_string(&now).unwrap();
        let back: Annotation = serde_json::from_str(&json).unwrap();
        assert!(close(
            back.functions[0].lines[0].change,
            by(back.functions[0].lines[0].line).change.unwrap()
        ));
        let text = text(&now);
        assert!(text.contains("-20.00"), "{text}");
        let page = page(&now, "t");
        assert!(page.contains("vs base") && page.contains("-20.0"), "{page}");
        assert!(page.contains("samples in the baseline only"));
    }

    #[test]
    fn only_a_hardware_event_asked_for_precise_ip_is_precise() {
        let attr = |type_: u32, precise: u64| sparkles_perf_data::attr::Attr {
            type_,
            flags: precise << sparkles_perf_data::attr::flag::PRECISE_SHIFT,
            ..Default::default()
        };
        // cycles:pp, a raw PMU event (IBS op's dynamic type) with precise_ip.
        assert!(is_precise(&attr(0, 2)) && is_precise(&attr(11, 1)));
        // cycles without it; cpu-clock:ppp (perf record's fallback) and a tracepoint.
        assert!(!is_precise(&attr(0, 0)));
        assert!(!is_precise(&attr(1, 3)) && !is_precise(&attr(2, 3)));
    }

    #[test]
    fn a_function_the_baseline_lacks_is_said() {
        let base = annotation("g", 100, &[(10, 100)]);
        let mut now = annotation("f", 100, &[(10, 100)]);
        compare(&mut now, &base, "base.json");
        let f = &now.functions[0];
        assert!(f.base.is_none() && f.lines[0].change.is_none());
        assert!(f.notes[0].contains("not among the baseline's 1 annotated functions"));
    }

    #[test]
    fn no_symbol_at_the_address_is_said() {
        let image = std::fs::read(testdata("loop-aarch64.o")).unwrap();
        let why = disassemble(&image, None, 0x4, "hot", |_| None).unwrap_err();
        assert!(why.contains("no symbol of known size at 0x4"), "{why}");
        assert!(disassemble(b"not an elf", None, 0, "f", |_| None).is_err());
    }
}
