//! Profiles for the interactive viewers people already use: speedscope's file format
//! (`sparkles report FILE --format speedscope`) and the Firefox Profiler's processed
//! format through samply's `fxprof-processed-profile` (`--format firefox`).
//!
//! Both are made from a [`Timeline`]: one pass over a capture keeping every on-CPU
//! sample in time order with its thread, weight and named stack (inlined functions their
//! own frames; rooted at the case as the flamegraphs are), the threads' and processes'
//! names, and the intervals where records were lost or the kernel throttled sampling.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use rustc_hash::FxHashMap;
use serde::Serialize;
use sparkles_perf_data::{Event, PerfData, Record};

use crate::capture::{attr_name, chosen_events, sched_switch_event};
use crate::profile::{function_name, kind_of, Kind};
use crate::stacks::{is_harness_frame, NamedFrame, StackNamer, StackOptions};
use crate::Error;

/// One frame of a timeline: a function (an inlined one its own), where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimelineFrame {
    /// The function, demangled and normalized; `[unknown] (module)` where unnamed.
    pub name: String,
    /// Its source file.
    pub file: Option<String>,
    /// The line its samples fell on most.
    pub line: Option<u32>,
    /// Its module.
    pub module: Option<String>,
    /// What its code is (user, std, library, kernel).
    pub kind: Kind,
    /// Inlined into its caller.
    pub inlined: bool,
}

/// One sample of a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimedSample {
    /// Its time (the capture's clock, ns).
    pub time: u64,
    /// Its weight (period).
    pub weight: u64,
    /// Its stack: an index into [`Timeline::stacks`].
    pub stack: u32,
}

/// One thread's samples, in time order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadLine {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Its name (its last COMM).
    pub name: String,
    /// Its samples.
    pub samples: Vec<TimedSample>,
}

/// A capture's samples on a time line.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// The case (or file) profiled.
    pub case: String,
    /// The events sampled.
    pub event: String,
    /// What a weight is: `nanoseconds` where the event is a clock (cpu-clock,
    /// task-clock: periods in ns), else `none` (events).
    pub unit: &'static str,
    /// Frames, each once.
    pub frames: Vec<TimelineFrame>,
    /// Stacks, each once: frame indices from the root to the leaf.
    pub stacks: Vec<Vec<u32>>,
    /// Threads with samples, by first sample.
    pub threads: Vec<ThreadLine>,
    /// Process names, by pid.
    pub processes: BTreeMap<u32, String>,
    /// First and last timestamps seen.
    pub start: u64,
    /// Last timestamp seen.
    pub end: u64,
    /// When records or samples were lost, and how many.
    pub lost: Vec<(u64, u64)>,
    /// When sampling was throttled: from, to.
    pub throttled: Vec<(u64, u64)>,
}

/// A frame's key while building: its name and file.
type FrameKey = (String, Option<String>);

struct Building {
    frames: Vec<TimelineFrame>,
    frame_ids: FxHashMap<FrameKey, u32>,
    /// Per frame: weight per line.
    lines: Vec<FxHashMap<u32, u64>>,
    stacks: Vec<Vec<u32>>,
    stack_ids: FxHashMap<Vec<u32>, u32>,
    /// Per stack: its frames' lines, to weigh by each sample.
    stack_lines: Vec<Vec<(u32, u32)>>,
    /// Per namer stack number: the timeline's stack.
    by_namer: Vec<Option<u32>>,
    root: Option<u32>,
}

impl Building {
    fn frame(&mut self, f: &NamedFrame) -> u32 {
        let file = f.file.as_deref().map(str::to_string);
        let key = (function_name(f), file);
        let id = match self.frame_ids.get(&key) {
            Some(&id) => id,
            None => {
                let id = self.frames.len() as u32;
                self.frames.push(TimelineFrame {
                    name: key.0.clone(),
                    file: key.1.clone(),
                    line: None,
                    module: f.module.as_deref().map(str::to_string),
                    kind: kind_of(f),
                    inlined: f.inlined,
                });
                self.lines.push(FxHashMap::default());
                self.frame_ids.insert(key, id);
                id
            }
        };
        id
    }

    /// Adds a sample's weight to the lines of its stack's frames.
    fn weigh(&mut self, stack: u32, weight: u64) {
        for &(frame, line) in &self.stack_lines[stack as usize] {
            *self.lines[frame as usize].entry(line).or_default() += weight;
        }
    }

    fn label(&mut self, name: &str) -> u32 {
        let key = (name.to_string(), None);
        if let Some(&id) = self.frame_ids.get(&key) {
            return id;
        }
        let id = self.frames.len() as u32;
        self.frames.push(TimelineFrame {
            name: name.to_string(),
            file: None,
            line: None,
            module: None,
            kind: Kind::User,
            inlined: false,
        });
        self.lines.push(FxHashMap::default());
        self.frame_ids.insert(key, id);
        id
    }

    /// The timeline stack of a named stack (innermost first), rooted at the case where
    /// it runs through the harness.
    fn stack(&mut self, frames: &[NamedFrame]) -> u32 {
        let inside = match self.root {
            Some(_) => frames
                .iter()
                .position(|f| f.function.as_deref().is_some_and(is_harness_frame)),
            None => None,
        };
        let mut ids: Vec<u32> = Vec::with_capacity(frames.len() + 1);
        if let (Some(root), Some(_)) = (self.root, inside) {
            ids.push(root);
        }
        let kept = &frames[..inside.unwrap_or(frames.len())];
        let mut lines = Vec::new();
        for f in kept.iter().rev() {
            let id = self.frame(f);
            ids.push(id);
            lines.extend(f.line.map(|l| (id, l)));
        }
        match self.stack_ids.get(&ids) {
            Some(&id) => id,
            None => {
                let id = self.stacks.len() as u32;
                self.stacks.push(ids.clone());
                self.stack_lines.push(lines);
                self.stack_ids.insert(ids, id);
                id
            }
        }
    }
}

impl Timeline {
    /// Reads a capture's on-CPU samples onto a time line (the `sched:sched_switch`
    /// samples of an off-CPU capture are switch-outs, not time on a CPU, and are left
    /// out).
    pub fn of_capture(path: &Path, case: &str, options: &StackOptions) -> Result<Timeline, Error> {
        let data = PerfData::open(path)?;
        let mut namer = StackNamer::for_capture(&data, options);
        let mut builder = TimelineBuilder::new(&data, case, options)?;
        crate::capture::each_record(&data, &mut namer, &mut builder)?;
        Ok(builder.finish())
    }

    /// Samples in all threads.
    pub fn samples(&self) -> usize {
        self.threads.iter().map(|t| t.samples.len()).sum()
    }
}

/// [`Timeline::of_capture`]'s part of a reading of the capture
/// ([`crate::reading::read_capture`]).
pub(crate) struct TimelineBuilder {
    case: String,
    chosen: Vec<bool>,
    /// The `sched:sched_switch` event of an off-CPU capture: switch-outs, not time on a CPU.
    switch: Option<usize>,
    clock: bool,
    event: String,
    b: Building,
    threads: Vec<ThreadLine>,
    thread_of: FxHashMap<u32, usize>,
    names: FxHashMap<u32, String>,
    processes: BTreeMap<u32, String>,
    start: u64,
    end: u64,
    lost: Vec<(u64, u64)>,
    throttled: Vec<(u64, u64)>,
    throttle_start: FxHashMap<u64, u64>,
}

impl TimelineBuilder {
    pub(crate) fn new(
        data: &PerfData,
        case: &str,
        options: &StackOptions,
    ) -> Result<TimelineBuilder, Error> {
        let chosen = chosen_events(data, options.event.as_deref())?;
        // Switch-outs, not time on a CPU, in an off-CPU capture.
        let switch = sched_switch_event(data).map(|(i, _)| i);
        let clock = data
            .attrs
            .iter()
            .enumerate()
            .filter(|(i, _)| chosen.get(*i).copied().unwrap_or(true) && Some(*i) != switch)
            .all(|(_, a)| {
                a.attr.type_ == crate::capture::PERF_TYPE_SOFTWARE && matches!(a.attr.config, 0 | 1)
            });
        // The events whose samples are on the line (not the switch-outs).
        let event = data
            .attrs
            .iter()
            .enumerate()
            .filter(|(i, a)| {
                chosen.get(*i).copied().unwrap_or(true)
                    && Some(*i) != switch
                    && a.attr.sample_period_or_freq != 0
            })
            .map(|(_, a)| attr_name(a))
            .collect::<Vec<_>>()
            .join(", ");
        let mut b = Building {
            frames: Vec::new(),
            frame_ids: FxHashMap::default(),
            lines: Vec::new(),
            stacks: Vec::new(),
            stack_ids: FxHashMap::default(),
            stack_lines: Vec::new(),
            by_namer: Vec::new(),
            root: None,
        };
        if options.root_at_case {
            b.root = Some(b.label(case));
        }
        Ok(TimelineBuilder {
            case: case.to_string(),
            chosen,
            switch,
            clock,
            event,
            b,
            threads: Vec::new(),
            thread_of: FxHashMap::default(),
            names: FxHashMap::default(),
            processes: BTreeMap::new(),
            start: u64::MAX,
            end: 0,
            lost: Vec::new(),
            throttled: Vec::new(),
            throttle_start: FxHashMap::default(),
        })
    }
}

impl crate::capture::Visit for TimelineBuilder {
    fn record(&mut self, e: &Event<'_>, namer: &mut StackNamer, found: &mut crate::capture::Found) {
        if let Some(t) = e.time {
            self.start = self.start.min(t);
            self.end = self.end.max(t);
        }
        match &e.record {
            Record::Sample(s) => {
                let event = e.attr.unwrap_or(0);
                if Some(event) == self.switch || !self.chosen.get(event).copied().unwrap_or(true) {
                    return;
                }
                let id = found.of(namer, s).id;
                let weight = s.period.unwrap_or(1).max(1);
                let b = &mut self.b;
                if b.by_namer.len() <= id {
                    b.by_namer.resize(id + 1, None);
                }
                let stack = match b.by_namer[id] {
                    Some(stack) => stack,
                    None => {
                        let stack = b.stack(&namer.interned(id).frames);
                        b.by_namer[id] = Some(stack);
                        stack
                    }
                };
                b.weigh(stack, weight);
                let (pid, tid) = (s.pid.unwrap_or(0), s.tid.unwrap_or(0));
                let threads = &mut self.threads;
                let index = *self.thread_of.entry(tid).or_insert_with(|| {
                    threads.push(ThreadLine {
                        pid,
                        tid,
                        name: String::new(),
                        samples: Vec::new(),
                    });
                    threads.len() - 1
                });
                threads[index].samples.push(TimedSample {
                    time: s.time.unwrap_or(0),
                    weight,
                    stack,
                });
            }
            Record::Comm { pid, tid, comm, .. } => {
                let name = String::from_utf8_lossy(comm).into_owned();
                if pid == tid {
                    self.processes.insert(*pid, name.clone());
                }
                self.names.insert(*tid, name);
            }
            Record::Lost { lost: n, .. } | Record::LostSamples { lost: n } => {
                self.lost.push((e.time.unwrap_or(self.end), *n));
            }
            Record::Throttle {
                throttled: on,
                time,
                id,
                ..
            } => {
                if *on {
                    self.throttle_start.entry(*id).or_insert(*time);
                } else if let Some(from) = self.throttle_start.remove(id) {
                    self.throttled.push((from, *time));
                }
            }
            _ => {}
        }
    }
}

impl TimelineBuilder {
    /// The time line.
    pub(crate) fn finish(self) -> Timeline {
        let TimelineBuilder {
            case,
            clock,
            event,
            mut b,
            mut threads,
            names,
            mut processes,
            mut start,
            end,
            lost,
            mut throttled,
            throttle_start,
            ..
        } = self;
        // A throttle never lifted lasts to the end.
        throttled.extend(throttle_start.into_values().map(|from| (from, end)));
        throttled.sort_unstable();
        for t in &mut threads {
            t.name = names
                .get(&t.tid)
                .cloned()
                .unwrap_or_else(|| format!("thread {}", t.tid));
            processes.entry(t.pid).or_insert_with(|| {
                names
                    .get(&t.pid)
                    .cloned()
                    .unwrap_or_else(|| format!("process {}", t.pid))
            });
        }
        for (frame, lines) in b.frames.iter_mut().zip(&b.lines) {
            frame.line = lines
                .iter()
                .max_by_key(|(line, w)| (**w, std::cmp::Reverse(**line)))
                .map(|(l, _)| *l);
        }
        if start > end {
            start = end;
        }
        Timeline {
            case,
            event,
            unit: if clock { "nanoseconds" } else { "none" },
            frames: b.frames,
            stacks: b.stacks,
            threads,
            processes,
            start,
            end,
            lost,
            throttled,
        }
    }
}

/// speedscope's file (https://www.speedscope.app/file-format-schema.json).
#[derive(Debug, Serialize)]
struct SpeedscopeFile<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    name: String,
    exporter: String,
    #[serde(rename = "activeProfileIndex")]
    active_profile_index: usize,
    shared: SpeedscopeShared<'a>,
    profiles: Vec<SpeedscopeProfile>,
}

#[derive(Debug, Serialize)]
struct SpeedscopeShared<'a> {
    frames: Vec<SpeedscopeFrame<'a>>,
}

#[derive(Debug, Serialize)]
struct SpeedscopeFrame<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
}

#[derive(Debug, Serialize)]
struct SpeedscopeProfile {
    #[serde(rename = "type")]
    type_: &'static str,
    name: String,
    unit: &'static str,
    #[serde(rename = "startValue")]
    start_value: f64,
    #[serde(rename = "endValue")]
    end_value: f64,
    samples: Vec<Vec<u32>>,
    weights: Vec<f64>,
}

/// The timeline in speedscope's format: one sampled profile per thread (samples in time
/// order, weighed by their periods), frames with file and line, inlined frames their
/// own. The threads are listed busiest first; the first is shown on opening.
pub fn speedscope(t: &Timeline) -> Result<Vec<u8>, Error> {
    let frames = t
        .frames
        .iter()
        .map(|f| SpeedscopeFrame {
            name: &f.name,
            file: f.file.as_deref(),
            line: f.line,
        })
        .collect();
    let mut threads: Vec<&ThreadLine> = t.threads.iter().collect();
    threads.sort_by_key(|th| std::cmp::Reverse(th.samples.iter().map(|s| s.weight).sum::<u64>()));
    let profiles = threads
        .iter()
        .map(|th| {
            let weights: Vec<f64> = th.samples.iter().map(|s| s.weight as f64).collect();
            SpeedscopeProfile {
                type_: "sampled",
                name: format!("{} (pid {}, tid {})", th.name, th.pid, th.tid),
                unit: t.unit,
                start_value: 0.0,
                end_value: weights.iter().sum(),
                samples: th
                    .samples
                    .iter()
                    .map(|s| t.stacks[s.stack as usize].clone())
                    .collect(),
                weights,
            }
        })
        .collect();
    let file = SpeedscopeFile {
        schema: "https://www.speedscope.app/file-format-schema.json",
        name: format!("{}: {}", t.case, t.event),
        exporter: concat!("sparkles ", env!("CARGO_PKG_VERSION")).to_string(),
        active_profile_index: 0,
        shared: SpeedscopeShared { frames },
        profiles,
    };
    serde_json::to_vec(&file).map_err(|e| Error::Export {
        what: "speedscope",
        reason: e.to_string(),
    })
}

/// Whether this build has the Firefox Profiler's export (feature `firefox`).
pub const FIREFOX: bool = cfg!(feature = "firefox");

/// Why the Firefox Profiler's export is missing from a build without feature `firefox`.
pub const NO_FIREFOX: &str = "this build has no Firefox Profiler export: it is sparkles-report's feature `firefox` (sparkles-bench's `firefox`; the sparkles command has it)";

/// A marker of an interval where the capture misses samples (records lost, sampling
/// throttled).
#[cfg(feature = "firefox")]
#[derive(Debug, Clone)]
struct GapMarker {
    name: fxprof_processed_profile::StringHandle,
    what: fxprof_processed_profile::StringHandle,
}

#[cfg(feature = "firefox")]
impl fxprof_processed_profile::StaticSchemaMarker for GapMarker {
    const UNIQUE_MARKER_TYPE_NAME: &'static str = "SparklesGap";
    const DESCRIPTION: Option<&'static str> =
        Some("Where the capture misses samples: records lost, or sampling throttled");
    const CHART_LABEL: Option<&'static str> = Some("{marker.data.what}");
    const TABLE_LABEL: Option<&'static str> = Some("{marker.name}: {marker.data.what}");
    const FIELDS: &'static [fxprof_processed_profile::StaticSchemaMarkerField] =
        &[fxprof_processed_profile::StaticSchemaMarkerField {
            key: "what",
            label: "What",
            format: fxprof_processed_profile::MarkerFieldFormat::String,
            flags: fxprof_processed_profile::MarkerFieldFlags::SEARCHABLE,
        }];

    fn name(
        &self,
        _: &mut fxprof_processed_profile::Profile,
    ) -> fxprof_processed_profile::StringHandle {
        self.name
    }

    fn category(
        &self,
        _: &mut fxprof_processed_profile::Profile,
    ) -> fxprof_processed_profile::CategoryHandle {
        fxprof_processed_profile::CategoryHandle::OTHER
    }

    fn string_field_value(&self, _: u32) -> fxprof_processed_profile::StringHandle {
        self.what
    }

    fn number_field_value(&self, _: u32) -> f64 {
        0.0
    }
}

/// The timeline in the Firefox Profiler's processed format (samply's
/// `fxprof-processed-profile`): a process per pid and a thread per tid, samples at their
/// times with their periods as weights (and, for a clock event, as CPU time), stacks of
/// labelled frames with inlined functions their own, categories by kind of code (user,
/// std, library, kernel), and markers where records were lost or sampling throttled.
/// Times are relative to the first record; the profile's wall-clock start is the
/// capture's modification time less its span.
#[cfg(feature = "firefox")]
pub fn firefox(t: &Timeline, modified: Option<std::time::SystemTime>) -> Result<Vec<u8>, Error> {
    use fxprof_processed_profile::{
        CategoryColor, CategoryPairHandle, CpuDelta, Frame, FrameFlags, FrameInfo, MarkerTiming,
        Profile, ReferenceTimestamp, SamplingInterval, Timestamp, WeightType,
    };
    let span = std::time::Duration::from_nanos(t.end.saturating_sub(t.start));
    let started = modified
        .and_then(|m| m.checked_sub(span))
        .unwrap_or(std::time::UNIX_EPOCH);
    let mean_gap = t
        .threads
        .iter()
        .flat_map(|th| {
            th.samples
                .windows(2)
                .map(|w| w[1].time.saturating_sub(w[0].time))
        })
        .collect::<Vec<u64>>();
    let interval = if mean_gap.is_empty() {
        SamplingInterval::from_millis(1)
    } else {
        let mut g = mean_gap;
        g.sort_unstable();
        SamplingInterval::from_nanos(g[g.len() / 2].max(1))
    };
    let mut p = Profile::new(
        &format!("{}: {}", t.case, t.event),
        ReferenceTimestamp::from_system_time(started),
        interval,
    );
    let category = |p: &mut Profile, kind: Kind| -> CategoryPairHandle {
        let (name, colour) = match kind {
            Kind::User => ("User", CategoryColor::Blue),
            Kind::Std => ("Rust std", CategoryColor::Orange),
            Kind::Library => ("Library", CategoryColor::Yellow),
            Kind::Kernel => ("Kernel", CategoryColor::Red),
            Kind::OffCpu => ("Off-CPU", CategoryColor::Purple),
            Kind::Unknown => ("Unknown", CategoryColor::Gray),
        };
        p.add_category(name, colour).into()
    };
    let kinds = [
        Kind::User,
        Kind::Std,
        Kind::Library,
        Kind::Kernel,
        Kind::OffCpu,
        Kind::Unknown,
    ];
    let categories: Vec<(Kind, CategoryPairHandle)> =
        kinds.iter().map(|&k| (k, category(&mut p, k))).collect();
    let category_of = |k: Kind| {
        categories.iter().find(|(c, _)| *c == k).map_or(
            fxprof_processed_profile::CategoryHandle::OTHER.into(),
            |(_, h)| *h,
        )
    };
    let at = |time: u64| Timestamp::from_nanos_since_reference(time.saturating_sub(t.start));
    let mut processes = FxHashMap::default();
    let mut first_thread = None;
    for th in &t.threads {
        let process = *processes.entry(th.pid).or_insert_with(|| {
            let name = t.processes.get(&th.pid).cloned().unwrap_or_default();
            p.add_process(
                &name,
                th.pid,
                at(th.samples.first().map_or(t.start, |s| s.time)),
            )
        });
        let thread = p.add_thread(
            process,
            th.tid,
            at(th.samples.first().map_or(t.start, |s| s.time)),
            th.tid == th.pid,
        );
        p.set_thread_name(thread, &th.name);
        if t.unit != "nanoseconds" {
            p.set_thread_samples_weight_type(thread, WeightType::Samples);
        }
        first_thread.get_or_insert(thread);
        // Frames and stacks are per thread in this format.
        let mut frames: FxHashMap<u32, fxprof_processed_profile::FrameHandle> =
            FxHashMap::default();
        let mut stacks: FxHashMap<u32, Option<fxprof_processed_profile::StackHandle>> =
            FxHashMap::default();
        for s in &th.samples {
            let stack = match stacks.get(&s.stack) {
                Some(h) => *h,
                None => {
                    let mut parent = None;
                    for &f in &t.stacks[s.stack as usize] {
                        let frame = match frames.get(&f) {
                            Some(h) => *h,
                            None => {
                                let tf = &t.frames[f as usize];
                                let label = match (&tf.file, tf.line) {
                                    (Some(file), Some(line)) => format!(
                                        "{} ({}:{line})",
                                        tf.name,
                                        file.rsplit('/').next().unwrap_or(file)
                                    ),
                                    _ => tf.name.clone(),
                                };
                                let info = FrameInfo {
                                    frame: Frame::Label(p.intern_string(&label)),
                                    category_pair: category_of(tf.kind),
                                    flags: FrameFlags::empty(),
                                };
                                let h = p.intern_frame(thread, info);
                                frames.insert(f, h);
                                h
                            }
                        };
                        parent = Some(p.intern_stack(thread, parent, frame));
                    }
                    stacks.insert(s.stack, parent);
                    parent
                }
            };
            let cpu = if t.unit == "nanoseconds" {
                CpuDelta::from_nanos(s.weight)
            } else {
                CpuDelta::ZERO
            };
            let weight = if t.unit == "nanoseconds" {
                i32::try_from(s.weight).unwrap_or(i32::MAX)
            } else {
                1
            };
            p.add_sample(thread, at(s.time), stack, cpu, weight);
        }
    }
    if let Some(thread) = first_thread {
        for &(time, n) in &t.lost {
            let marker = GapMarker {
                name: p.intern_string("lost"),
                what: p.intern_string(&format!("{n} records or samples lost")),
            };
            p.add_marker(thread, MarkerTiming::Instant(at(time)), marker);
        }
        for &(from, to) in &t.throttled {
            let marker = GapMarker {
                name: p.intern_string("throttled"),
                what: p.intern_string("sampling throttled by the kernel"),
            };
            p.add_marker(thread, MarkerTiming::Interval(at(from), at(to)), marker);
        }
    }
    serde_json::to_vec(&p).map_err(|e| Error::Export {
        what: "firefox",
        reason: e.to_string(),
    })
}

/// The Firefox Profiler's export, missing from this build: an error that says so
/// ([`NO_FIREFOX`]).
#[cfg(not(feature = "firefox"))]
pub fn firefox(_: &Timeline, _: Option<std::time::SystemTime>) -> Result<Vec<u8>, Error> {
    Err(Error::Export {
        what: "firefox",
        reason: NO_FIREFOX.to_string(),
    })
}

/// An interactive viewer's file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Viewer {
    /// speedscope's ([`speedscope`]).
    Speedscope,
    /// The Firefox Profiler's ([`firefox`]).
    Firefox,
}

/// The timeline of `capture` as `viewer`'s file (the Firefox Profiler's gzipped where
/// `gzip`); an error where it has no sample.
pub fn viewer_file(
    t: &Timeline,
    capture: &Path,
    viewer: Viewer,
    gzip: bool,
) -> Result<Vec<u8>, Error> {
    if t.samples() == 0 {
        return Err(Error::Empty);
    }
    match viewer {
        Viewer::Speedscope => speedscope(t),
        Viewer::Firefox => {
            let modified = std::fs::metadata(capture).and_then(|m| m.modified()).ok();
            let json = firefox(t, modified)?;
            if gzip {
                self::gzip(&json)
            } else {
                Ok(json)
            }
        }
    }
}

/// `bytes` gzipped (the Firefox Profiler opens `.json.gz` files).
pub fn gzip(bytes: &[u8]) -> Result<Vec<u8>, Error> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes)
        .and_then(|()| gz.finish())
        .map_err(|e| Error::Export {
            what: "gzip",
            reason: e.to_string(),
        })
}
