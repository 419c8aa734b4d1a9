//! The one-pass capture driver: a capture's records read once, in time order, its
//! samples named and fed to the profile builder (and the memory, NUMA and off-CPU
//! builders where the capture has what they need), giving the profiles of one capture.

use std::path::Path;
use std::rc::Rc;

use sparkles_perf_data::attr::sample_type as st;
use sparkles_perf_data::pages::PageNodes;
use sparkles_perf_data::sample::Weight;
use sparkles_perf_data::topology::Topology;
use sparkles_perf_data::tracing::EventFormat;
use sparkles_perf_data::{DataSource, Event, PerfData, Record, Sample};

use crate::memory::{MemoryBuilder, MemorySample};
use crate::notes::{NoNuma, Note};
use crate::numa::{NumaBuilder, Page};
use crate::offcpu::{self, OffCpuBuilder};
use crate::profile::{Builder, Folded, Profile, Unwinding};
use crate::stacks::{NamedStack, StackId, StackNamer, StackOptions, Weighting};

use crate::Error;

/// An event's name: its EVENT_DESC name, else its attr's type and config.
pub(crate) fn attr_name(a: &sparkles_perf_data::AttrEntry) -> String {
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

/// Which of a capture's events a report takes samples from: the one `event` names, else
/// every one.
pub(crate) fn chosen_events(data: &PerfData, event: Option<&str>) -> Result<Vec<bool>, Error> {
    let Some(wanted) = event else {
        // An allocation capture's second event repeats some of its first's samples (those
        // still live at their iteration's end): by default, the first alone.
        let live = format!("{}-live", crate::stacks::ALLOC_EVENT_PREFIX);
        let has_all = data
            .attrs
            .iter()
            .any(|a| attr_name(a) == crate::stacks::ALLOC_EVENT_PREFIX);
        return Ok(match data.attrs.len() {
            0 => vec![true],
            _ => data
                .attrs
                .iter()
                .map(|a| !(has_all && attr_name(a) == live))
                .collect(),
        });
    };
    let chosen: Vec<bool> = data.attrs.iter().map(|a| attr_name(a) == wanted).collect();
    if !chosen.contains(&true) {
        return Err(Error::NoSuchEvent {
            path: data.path().to_path_buf(),
            wanted: wanted.to_string(),
            events: data.attrs.iter().map(attr_name).collect(),
        });
    }
    Ok(chosen)
}

/// How a capture's samples are placed on NUMA nodes: by their physical addresses through
/// the capture's memory topology, else by the page table asked of the live process and
/// written beside the capture (with it, the table); else why neither can be.
fn numa_placement(data: &PerfData) -> Result<(NumaBuilder, Option<PageNodes>), NoNuma> {
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
    let pages =
        PageNodes::read_beside(data.path()).map_err(|e| NoNuma::PageTable(e.to_string()))?;
    let Some(pages) = pages else {
        return Err(if phys {
            NoNuma::NoMemoryTopology
        } else {
            NoNuma::NoPhysicalAddresses
        });
    };
    let topology = topology
        .or_else(|| Topology::from_sysfs(Path::new("/")).ok())
        .ok_or(NoNuma::NoTopology)?;
    // Page faults are where pages are first touched: first-touch placement.
    let faults = data
        .attrs
        .first()
        .is_some_and(|a| a.attr.type_ == PERF_TYPE_SOFTWARE && matches!(a.attr.config, 2 | 5 | 6));
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
) -> Result<(Profile, Folded), Error> {
    profile_capture_with(path, case, options, |_| {})
}

/// [`profile_capture`], showing each sample's named stack to `observe` too.
pub fn profile_capture_with(
    path: &Path,
    case: &str,
    options: &StackOptions,
    observe: impl FnMut(&NamedStack),
) -> Result<(Profile, Folded), Error> {
    let p = profiles_of_capture(path, case, options, observe)?;
    Ok((p.profile, p.folded))
}

/// A capture's profiles: on-CPU, and where it has switch records the wall-clock one.
#[derive(Debug)]
pub struct Profiles {
    /// The on-CPU profile (with its `offcpu` section where there are switch records).
    pub profile: Profile,
    /// Its folded stacks.
    pub folded: Folded,
    /// The wall-clock profile: every stack weighed in nanoseconds of thread time, waits
    /// under `[off-cpu: REASON]` frames ([`crate::offcpu`]).
    pub wall: Option<(Profile, Folded)>,
}

/// Unwinds, names and aggregates every sample of a capture, and its waits where it has
/// switch records.
pub fn profiles_of_capture(
    path: &Path,
    case: &str,
    options: &StackOptions,
    mut observe: impl FnMut(&NamedStack),
) -> Result<Profiles, Error> {
    let data = PerfData::open(path)?;
    let mut namer = StackNamer::for_capture(&data, options);
    let mut one = One(Pass::new(&data, case, options)?, &mut observe);
    each_record(&data, &mut namer, &mut one)?;
    Ok(one.0.finish(&mut namer, case))
}

/// A profile's pass alone, showing each sample's stack to its observer.
struct One<'a, 'o, F>(Pass<'a>, &'o mut F);

impl<F: FnMut(&NamedStack)> Visit for One<'_, '_, F> {
    fn record(&mut self, e: &Event<'_>, namer: &mut StackNamer, found: &mut Found) {
        self.0.record(e, namer, found, self.1);
    }
}

/// A sample's stack, unwound and named once however many readers take it: its number, made
/// by the first that asks.
#[derive(Debug, Default)]
pub(crate) struct Found(Option<StackId>);

impl Found {
    /// The sample's stack number (unwound and named the first time).
    pub(crate) fn of(&mut self, namer: &mut StackNamer, s: &Sample<'_>) -> StackId {
        *self.0.get_or_insert_with(|| namer.interned_id(s))
    }
}

/// A reader of a capture's records ([`each_record`]): the profile's pass, the
/// annotation's tally, the viewers' time line, or all of them in one reading.
pub(crate) trait Visit {
    /// Sees a record before the namer observes it (an address space about to change).
    fn before_observed(&mut self, _record: &Record<'_>, _namer: &mut StackNamer) {}

    /// Takes a record (the namer has observed it); a sample's stack is `found`'s, found
    /// at most once however many readers ask for it.
    fn record(&mut self, e: &Event<'_>, namer: &mut StackNamer, found: &mut Found);
}

/// Reads `data`'s records once, in time order (read and ordered on another thread while
/// this one names and counts), for `visit`.
pub(crate) fn each_record(
    data: &PerfData,
    namer: &mut StackNamer,
    visit: &mut impl Visit,
) -> Result<(), Error> {
    data.for_each_record_read_ahead(|e| {
        visit.before_observed(&e.record, namer);
        namer.observe(&e.record);
        visit.record(e, namer, &mut Found::default());
        Ok::<(), Error>(())
    })?;
    Ok(())
}

/// The capture's `sched:sched_switch` event: its attr's index and format, where it has
/// one (by its TRACING_DATA format's id, else by its name).
pub(crate) fn sched_switch_event(data: &PerfData) -> Option<(usize, Option<EventFormat>)> {
    // Its samples are switch-outs only in an off-CPU capture (with switch records); a
    // capture of `perf record -e sched:sched_switch` alone is profiled as any other.
    if !has_switch_records(data) {
        return None;
    }
    let tracing = data.features.tracing_data.as_ref();
    data.attrs.iter().enumerate().find_map(|(i, a)| {
        if a.attr.type_ != PERF_TYPE_TRACEPOINT {
            return None;
        }
        let format = tracing
            .and_then(|t| t.event(a.attr.config))
            .filter(|f| f.system == "sched" && f.name == "sched_switch")
            .cloned();
        (format.is_some() || a.name.as_deref() == Some("sched:sched_switch")).then_some((i, format))
    })
}

/// Whether some event of the capture records context switches (`context_switch`).
pub(crate) fn has_switch_records(data: &PerfData) -> bool {
    data.attrs
        .iter()
        .any(|a| a.attr.flags & sparkles_perf_data::attr::flag::CONTEXT_SWITCH != 0)
}

/// `perf_event_attr.type` of a software event (cpu-clock, page-faults, …).
pub(crate) const PERF_TYPE_SOFTWARE: u32 = 1;
/// `perf_event_attr.type` of a tracepoint.
pub(crate) const PERF_TYPE_TRACEPOINT: u32 = 2;

/// One pass over a capture's records: every sample named, weighed and added to the
/// profile, and to the memory and NUMA sections where it carries what they need.
pub(crate) struct Pass<'a> {
    data: &'a PerfData,
    /// How its stacks are read (the unwinding mode, rooted at the case or not).
    options: &'a StackOptions,
    weighting: Weighting,
    /// Its samples' stacks: how many it asked for and why those cut short were cut (its
    /// own: the namer it shares may unwind other events' samples too).
    unwound: sparkles_unwind::Stats,
    /// Which events' samples are taken.
    chosen: Vec<bool>,
    /// Samples taken per event, to say which events a profile mixes.
    per_event: Vec<u64>,
    builder: Builder,
    memory: MemoryBuilder,
    numa: Result<(NumaBuilder, Option<PageNodes>), NoNuma>,
    /// Samples whose data source says nothing (PERF_MEM_NA: not a memory event).
    unknown_sources: u64,
    lost_records: u64,
    lost_samples: u64,
    throttling: sparkles_perf_data::throttle::Throttling,
    /// Off-CPU accounting, where the capture has switch records.
    offcpu: Option<OffCpuBuilder>,
    /// The `sched:sched_switch` event: its index and format (for `prev_state`).
    sched_switch: Option<(usize, Option<EventFormat>)>,
    /// The wall-clock profile's builder (rooted like the on-CPU one).
    wall: Option<Builder>,
}

impl<'a> Pass<'a> {
    pub(crate) fn new(
        data: &'a PerfData,
        case: &str,
        options: &'a StackOptions,
    ) -> Result<Pass<'a>, Error> {
        if options.weight == Weighting::Latency
            && !data
                .attrs
                .iter()
                .any(|a| a.attr.sample_type & (st::WEIGHT | st::WEIGHT_STRUCT) != 0)
        {
            return Err(Error::NoWeight {
                path: data.path().to_path_buf(),
            });
        }
        let chosen = chosen_events(data, options.event.as_deref())?;
        let switches = has_switch_records(data);
        let sched_switch = sched_switch_event(data);
        Ok(Pass {
            data,
            options,
            weighting: options.weight,
            unwound: sparkles_unwind::Stats::default(),
            per_event: vec![0; chosen.len()],
            chosen,
            builder: {
                let mut b = if options.root_at_case {
                    Builder::rooted_at(case)
                } else {
                    Builder::new()
                };
                b.cut_blocks(options.blocks);
                b
            },
            memory: MemoryBuilder::new(),
            numa: numa_placement(data),
            unknown_sources: 0,
            lost_records: 0,
            lost_samples: 0,
            throttling: Default::default(),
            offcpu: switches.then(|| {
                OffCpuBuilder::new(if sched_switch.is_some() {
                    offcpu::SOURCE_SCHED_SWITCH
                } else {
                    offcpu::SOURCE_SWITCH_RECORDS
                })
            }),
            wall: switches.then(|| {
                if options.root_at_case {
                    Builder::rooted_at(case)
                } else {
                    Builder::new()
                }
            }),
            sched_switch,
        })
    }

    /// The stack of a sample this pass takes, counted in its unwinding figures.
    fn stack_of(&mut self, namer: &mut StackNamer, found: &mut Found, s: &Sample<'_>) -> StackId {
        let id = found.of(namer, s);
        self.unwound.samples += 1;
        match namer.interned(id.id).truncated {
            None => self.unwound.complete += 1,
            Some(t) => *self.unwound.truncated.entry(t).or_default() += 1,
        }
        id
    }

    /// Takes a record (the namer has observed it).
    pub(crate) fn record(
        &mut self,
        e: &Event<'_>,
        namer: &mut StackNamer,
        found: &mut Found,
        observe: &mut impl FnMut(&NamedStack),
    ) {
        if let Some(time) = e.time {
            self.throttling.saw(time);
        }
        match &e.record {
            Record::Sample(s) => {
                let event = e.attr.unwrap_or(0);
                if let Some((index, format)) = &self.sched_switch {
                    // A switch-out, not time on a CPU: where the thread blocked.
                    if *index == event {
                        let state = format
                            .as_ref()
                            .zip(s.raw)
                            .and_then(|(f, raw)| f.read("prev_state", raw));
                        if let (true, Some(tid), Some(time)) =
                            (self.offcpu.is_some(), s.tid, s.time)
                        {
                            let id = self.stack_of(namer, found, s).id;
                            if let Some(off) = self.offcpu.as_mut() {
                                off.switch_sample(tid, time, namer.interned(id), state);
                            }
                        }
                        return;
                    }
                }
                if !self.chosen.get(event).copied().unwrap_or(true) {
                    return;
                }
                if let Some(n) = self.per_event.get_mut(event) {
                    *n += 1;
                }
                let found = self.stack_of(namer, found, s);
                observe(namer.interned(found.id));
                if let (Some(off), Some(tid), Some(time)) = (self.offcpu.as_mut(), s.tid, s.time) {
                    off.on_cpu_sample(
                        tid,
                        time,
                        found.id,
                        namer.interned(found.id),
                        s.period.unwrap_or(1).max(1),
                    );
                }
                self.sample(namer, s, found);
            }
            Record::Switch { out, preempt, .. } => {
                if let (Some(off), Some(tid), Some(time)) = (
                    self.offcpu.as_mut(),
                    e.sample_id.as_ref().and_then(|i| i.tid),
                    e.time,
                ) {
                    off.switch(tid, time, *out, *preempt);
                }
            }
            Record::Exit(task) => {
                if let Some(off) = self.offcpu.as_mut() {
                    off.exit(task.tid, task.time);
                }
            }
            Record::Lost { lost: n, .. } => self.lost_records += n,
            Record::LostSamples { lost: n, .. } => self.lost_samples += n,
            Record::Throttle {
                throttled,
                time,
                id,
                ..
            } => self.throttling.record(*throttled, *time, *id),
            _ => {}
        }
    }

    /// Adds one sample: its stack to the profile, its access to the memory and NUMA
    /// sections.
    fn sample(&mut self, namer: &mut StackNamer, s: &Sample<'_>, found: StackId) {
        let weight = match self.weighting {
            Weighting::Period => s.period.unwrap_or(1).max(1),
            Weighting::Latency => s.weight.map_or(0, |w| w.latency()),
            Weighting::Samples => 1,
        };
        // A stack the profile has seen is counted by its number alone.
        if !self.builder.add_again(found.id, weight) {
            let stack = Rc::clone(namer.interned(found.id));
            self.builder
                .add_interned(found.id, &stack.frames, found.truncated, weight);
        }
        let data_src = s.data_src.filter(|d| {
            let na = DataSource::new(*d).is_na();
            self.unknown_sources += u64::from(na);
            !na
        });
        let placed = match &self.numa {
            Ok((_, Some(_))) => s.addr.is_some(),
            Ok((_, None)) => s.phys_addr.is_some(),
            Err(_) => false,
        };
        if data_src.is_none() && !placed {
            return;
        }
        let pid = s.pid.unwrap_or(0);
        // Its memory (a variable, or the kind of memory), its code (the leaf frame).
        let stack = Rc::clone(namer.interned(found.id));
        let object = s.addr.map(|a| namer.data_object(pid, a));
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
            self.memory.add(&sample);
        }
        let Ok((numa, pages)) = self.numa.as_mut() else {
            return;
        };
        if !placed {
            return;
        }
        // Its node: by the page table where there is one, else by its physical address.
        // The sampled page: DATA_PAGE_SIZE where sampled (a huge page is one page), else
        // the page the table was asked by.
        let size = s
            .data_page_size
            .filter(|&z| z > 0)
            .or(pages.as_ref().map(|p| p.page_size))
            .unwrap_or(4096);
        let page = s.addr.map(|a| Page::of(pid, a, size));
        match (pages.as_ref(), s.addr) {
            (Some(p), Some(addr)) => match p.node(pid, addr) {
                Ok(node) => numa.add_node(s.cpu, node, page, &sample),
                Err(why) => numa.add_unplaced(why),
            },
            _ => numa.add_phys(s.cpu, s.phys_addr, page, &sample),
        }
    }

    /// The profile: its views, its event named by the events that sampled, its memory
    /// and NUMA sections, and every note.
    pub(crate) fn finish(mut self, namer: &mut StackNamer, case: &str) -> Profiles {
        let (data, options) = (self.data, self.options);
        let stats = &self.unwound;
        let unwinding = Unwinding {
            mode: options.unwind.as_str().into(),
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
            .zip(&self.per_event)
            .filter(|(_, &n)| n > 0)
            .map(|(a, &n)| (attr_name(a), n))
            .collect();
        let event = match (&options.event, sampling.is_empty()) {
            (Some(name), _) => name.clone(),
            (None, false) => {
                let names: Vec<&str> = sampling.iter().map(|(name, _)| name.as_str()).collect();
                names.join(", ")
            }
            (None, true) => event_name(data),
        };
        let lost = self.lost_records + self.lost_samples;
        let wall_unwinding = unwinding.clone();
        let (mut profile, folded) = self.builder.finish(case, &event, lost, unwinding);
        let mut wall = None;
        if let (Some(mut off), Some(mut builder)) = (self.offcpu.take(), self.wall.take()) {
            let section = off.finish();
            // Samples and waits in time order, so that the wall profile's blocks are
            // stretches of time as the on-CPU profile's are.
            let (mut i, mut j) = (0, 0);
            while i < off.on_samples.len() || j < off.waits.len() {
                let sample_first = match (off.on_samples.get(i), off.waits.get(j)) {
                    (Some(s), Some(w)) => s.time <= w.time,
                    (Some(_), None) => true,
                    _ => false,
                };
                if sample_first {
                    let s = off.on_samples[i];
                    i += 1;
                    if let Some(stack) = off.stacks.get(&s.id) {
                        let ns = off.on_cpu_ns(&s);
                        builder.add_interned(s.id, &stack.frames, stack.truncated.is_some(), ns);
                    }
                } else {
                    let w = &off.waits[j];
                    j += 1;
                    let frames = OffCpuBuilder::wait_frames(namer, w);
                    let truncated = w.stack.as_ref().is_some_and(|s| s.truncated.is_some());
                    builder.add(&frames, truncated, w.ns);
                }
            }
            let wall_event = format!("{event} + off-CPU ({})", section.source);
            let (mut p, f) = builder.finish(case, &wall_event, lost, wall_unwinding);
            p.weighting = "wall".into();
            p.offcpu = Some(section.clone());
            profile.offcpu = Some(section);
            wall = Some((p, f));
        }
        profile.lost_records = self.lost_records;
        profile.lost_samples = self.lost_samples;
        profile.throttled = self.throttling.finish();
        profile.weighting = options.weight.as_str().into();
        let mut notes: Vec<Note> = namer.notes.clone();
        if sampling.len() > 1 {
            notes.push(Note::MixedEvents(sampling));
        }
        let sampled = |bit: u64| data.attrs.iter().any(|a| a.attr.sample_type & bit != 0);
        match self.numa {
            Ok((numa, _)) => profile.numa = Some(numa.finish()),
            Err(why) if !self.memory.is_empty() || sampled(st::ADDR) => {
                notes.push(Note::NoNuma(why))
            }
            Err(_) => {}
        }
        if !self.memory.is_empty() {
            profile.memory = Some(self.memory.finish());
            if self.unknown_sources > 0 {
                notes.push(Note::UnknownDataSources(self.unknown_sources));
            }
        } else if self.unknown_sources > 0 {
            notes.push(Note::NotAMemoryEvent {
                event: profile.event.clone(),
            });
        }
        notes.extend(namer.unavailable());
        // After the builder's own (too few rounds, a bench without line tables).
        profile.notes.extend(notes.iter().map(ToString::to_string));
        if let Some((w, _)) = wall.as_mut() {
            w.notes = profile.notes.clone();
            w.lost_records = profile.lost_records;
            w.lost_samples = profile.lost_samples;
            w.throttled = profile.throttled;
        }
        Profiles {
            profile,
            folded,
            wall,
        }
    }
}
