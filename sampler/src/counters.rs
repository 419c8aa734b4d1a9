//! Counter sets: a list of events counted as perf_event groups over a bracketed region,
//! for the counting tiers (hardware and software counters, syscall tracepoints).
//!
//! - Groups. The events are packed, in order, into as few groups as the PMU accepts: one
//!   group where they fit, else the next event that does not fit starts another group.
//!   Groups the PMU cannot hold at once share it in turns (multiplexing); each group's
//!   counts are scaled by its own enabled and running times over the pass and labelled
//!   estimates ([`crate::counting::pass`]). With `exact`, events that would need a second
//!   group, or that keep the group from running all the time, are dropped instead, and
//!   named.
//! - Threads. [`Coverage::Process`] opens one set of groups per thread that exists at
//!   open time (`/proc/self/task`), each with `inherit`, so threads they start during the
//!   pass count into their parent's groups, and those that exit are summed in on exit.
//!   [`Coverage::CallingThread`] counts the calling thread alone, without inherit: the
//!   only shape in which a counter can be read with `rdpmc`.
//! - Reads. `read(2)` of each group (`PERF_FORMAT_GROUP` with times and ids), with the
//!   region bracketed by group ENABLE and DISABLE ioctls; or, where every counter is a
//!   hardware counter on the calling thread and its mmap page says `cap_user_rdpmc`, the
//!   self-monitoring read (`rdpmc` inside the page's seqlock loop) around a region while
//!   the group stays enabled: no syscall per bracket.
//! - Self cost. Bracketing costs something of its own (the DISABLE ioctl is itself a
//!   syscall the tracepoints see, and kernel instructions the counters see): the median
//!   of nine empty brackets is measured at open and subtracted from every bracket.

use sparkles_perf_data::attr::{flag, read_format};

use crate::counting::{self, GroupRead, NotCounted};
use crate::errno;
use crate::events::legacy::{PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT};
use crate::events::EventAttr;
use crate::open::{explain, kernel_attr, OpenMode, OpenTarget};
use crate::sys::{self, Counter};
use crate::system::System;

/// Empty brackets measured at open; their median is the set's own cost per bracket.
const CALIBRATION_BRACKETS: usize = 9;

/// How long `exact` lets a group run to see whether it keeps the PMU to itself.
const EXACT_PROBE: std::time::Duration = std::time::Duration::from_millis(2);

/// Which threads a set counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Every thread of this process: one counter per thread that exists at open time, each
    /// inherited by the threads it starts.
    Process,
    /// The calling thread only, not inherited (the shape rdpmc needs).
    CallingThread,
}

/// How a set is opened.
#[derive(Debug, Clone)]
pub struct CounterConfig {
    /// The events, in order; the first is the first group's leader.
    pub events: Vec<EventAttr>,
    /// Which threads are counted.
    pub coverage: Coverage,
    /// Drop events rather than let groups share the PMU (`--perf-exact`).
    pub exact: bool,
    /// Use rdpmc where the counters allow it.
    pub rdpmc: bool,
}

/// A thread of this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    /// Its id.
    pub tid: i32,
    /// Its name (`/proc/self/task/TID/comm`).
    pub name: String,
}

/// An event that is not counted, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Left {
    /// Its spelling.
    pub event: String,
    /// Why.
    pub reason: String,
}

/// How counts are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadPath {
    /// `read(2)` of each group, the region bracketed by ENABLE and DISABLE ioctls.
    Read,
    /// `rdpmc` inside the mmap page's seqlock loop.
    Rdpmc,
}

impl ReadPath {
    /// As reported: `read(2)` or `rdpmc`.
    pub fn label(self) -> &'static str {
        match self {
            ReadPath::Read => "read(2)",
            ReadPath::Rdpmc => "rdpmc",
        }
    }
}

/// One event's count over everything bracketed.
#[derive(Debug, Clone, PartialEq)]
pub struct EventCount {
    /// The event's spelling.
    pub event: String,
    /// The count, the set's own cost removed; `None` with `reason` where there is none.
    pub value: Option<f64>,
    /// Whether `value` is scaled up from the time its groups ran.
    pub estimated: bool,
    /// Running over enabled time of its groups, summed over threads (1.0: throughout).
    pub running_ratio: f64,
    /// Why there is no value.
    pub reason: Option<String>,
}

/// One group open on one thread.
#[derive(Debug)]
struct TaskGroup {
    /// Index into the set's layout.
    layout: usize,
    leader: Counter,
    members: Vec<Counter>,
    /// mmap pages of every counter, leader first, on the rdpmc path.
    pages: Vec<memmap2::MmapRaw>,
}

/// Every counter of a set, open and disabled.
#[derive(Debug)]
pub struct CounterSet {
    events: Vec<EventAttr>,
    /// Per group, the indices of its events, leader first.
    layout: Vec<Vec<usize>>,
    groups: Vec<TaskGroup>,
    /// Events that could not be opened at all, with the kernel's reason.
    pub absent: Vec<Left>,
    /// Events `exact` dropped, with the reason.
    pub dropped: Vec<Left>,
    /// Threads counted from the open.
    pub threads: Vec<Thread>,
    /// Every thread of the process at the open, counted or not.
    pub listed: Vec<Thread>,
    /// Whether threads started later are counted (inherit).
    pub inherit: bool,
    /// How counts are read.
    pub read_path: ReadPath,
    /// Why rdpmc is not used, where it was asked for.
    pub read_reason: Option<String>,
    /// What else a user should know: threads that could not be counted, inherit refused.
    pub notes: Vec<String>,
}

/// This thread's id (0 off Linux).
pub fn gettid() -> i32 {
    sys::gettid()
}

/// The threads of this process, the calling one first.
pub fn threads() -> Vec<Thread> {
    let me = gettid();
    let mut tids: Vec<i32> = crate::proc_synth::tasks_of(std::process::id())
        .into_iter()
        .filter_map(|t| i32::try_from(t).ok())
        .filter(|&t| t != me)
        .collect();
    tids.insert(0, me);
    tids.into_iter()
        .map(|tid| Thread {
            tid,
            name: std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
                .map(|s| s.trim_end().to_string())
                .unwrap_or_default(),
        })
        .collect()
}

fn is_software(attr: &EventAttr) -> bool {
    matches!(attr.type_, PERF_TYPE_SOFTWARE | PERF_TYPE_TRACEPOINT)
}

/// `PERF_COUNT_SW_CPU_CLOCK`.
const SW_CPU_CLOCK: u64 = 0;
/// `PERF_COUNT_SW_TASK_CLOCK`.
const SW_TASK_CLOCK: u64 = 1;

const READ_FORMAT: u64 = read_format::GROUP
    | read_format::TOTAL_TIME_ENABLED
    | read_format::TOTAL_TIME_RUNNING
    | read_format::ID;

/// Opens one counter of a group (`leader` None: as the leader) on `tid`.
fn open_one(
    attr: &EventAttr,
    tid: i32,
    inherit: bool,
    leader: Option<&mut Counter>,
) -> std::io::Result<Counter> {
    let mut a = kernel_attr(attr, attr.precise_ip, OpenMode::Counting);
    a.read_format = READ_FORMAT;
    if inherit {
        a.flags |= flag::INHERIT;
    }
    Counter::open(&a, OpenTarget::Task { tid, cpu: None }, leader)
}

/// Whether `attr` can be counted here: opens it alone on the calling thread, and says
/// why not (the kernel's refusal, explained) where it cannot.
pub fn check(attr: &EventAttr, system: &System) -> Result<(), crate::open::OpenFailure> {
    open_one(attr, gettid(), false, None)
        .map(drop)
        .map_err(|e| crate::open::OpenFailure {
            errno: errno(&e),
            reason: refusal(attr, &e, system),
        })
}

/// The kernel's refusal to count `attr`, explained.
fn refusal(attr: &EventAttr, e: &std::io::Error, system: &System) -> String {
    explain(errno(e), attr, attr.precise_ip, OpenMode::Counting, system)
}

/// Threads of this process now that are not among `listed` (started since it was
/// taken).
pub fn started_since(listed: &[Thread]) -> Vec<Thread> {
    threads()
        .into_iter()
        .filter(|t| !listed.iter().any(|c| c.tid == t.tid))
        .collect()
}

fn errno(e: &std::io::Error) -> i32 {
    sys::errno_of(e)
}

/// The events packed into groups on the calling thread: the layout, the events that
/// cannot open at all, those `exact` leaves out, and whether inherit is accepted.
struct Packing {
    layout: Vec<Vec<usize>>,
    absent: Vec<Left>,
    dropped: Vec<Left>,
    inherit: bool,
    notes: Vec<String>,
}

fn pack(
    events: &[EventAttr],
    order: &[usize],
    alone: bool,
    inherit: bool,
    exact: bool,
    system: &System,
) -> Packing {
    let me = gettid();
    let mut p = Packing {
        layout: Vec::new(),
        absent: Vec::new(),
        dropped: Vec::new(),
        inherit,
        notes: Vec::new(),
    };
    let mut current: Option<(Counter, Vec<Counter>, Vec<usize>)> = None;
    for &i in order {
        let attr = &events[i];
        if alone {
            if let Some((_, _, done)) = current.take() {
                p.layout.push(done);
            }
        }
        if let Some((leader, members, indices)) = current.as_mut() {
            if let Ok(c) = open_one(attr, me, p.inherit, Some(leader)) {
                members.push(c);
                indices.push(i);
                continue;
            }
            if exact {
                // Refused as a member: alone, either it opens (the group is full) or it
                // says why it cannot open at all.
                if let Some(e) = open_one(attr, me, p.inherit, None).err() {
                    p.absent.push(Left {
                        event: attr.name.clone(),
                        reason: refusal(attr, &e, system),
                    });
                } else {
                    p.dropped.push(Left {
                        event: attr.name.clone(),
                        reason: format!(
                            "left out by --perf-exact: it does not fit on the PMU in one group with {}",
                            indices.iter().map(|&k| events[k].name.as_str()).collect::<Vec<_>>().join(", ")
                        ),
                    });
                }
                continue;
            }
        }
        // A leader: of the first group, or of the next one where the current one is full
        // (opened alone, it either opens or says why it cannot open at all).
        let leader = match open_one(attr, me, p.inherit, None) {
            Err(e) if p.inherit && errno(&e) == errno::EINVAL => {
                open_one(attr, me, false, None).map_err(|_| e).inspect(|_| {
                    p.inherit = false;
                    p.notes.push(
                        "threads started during the pass are not counted: this kernel refuses inherit with group reads (EINVAL)"
                            .to_string(),
                    );
                })
            }
            other => other,
        };
        match leader {
            Ok(leader) => {
                if let Some((_, _, done)) = current.replace((leader, Vec::new(), vec![i])) {
                    p.layout.push(done);
                }
            }
            Err(e) => p.absent.push(Left {
                event: attr.name.clone(),
                reason: refusal(attr, &e, system),
            }),
        }
    }
    if let Some((_, _, done)) = current {
        p.layout.push(done);
    }
    p
}

/// Whether the one group of `layout` keeps the PMU to itself over a short busy run.
fn runs_throughout(events: &[EventAttr], layout: &[usize], inherit: bool) -> Option<f64> {
    let me = gettid();
    let mut leader = open_one(&events[layout[0]], me, inherit, None).ok()?;
    let mut members = Vec::new();
    for &k in &layout[1..] {
        members.push(open_one(&events[k], me, inherit, Some(&mut leader)).ok()?);
    }
    leader.enable_group().ok()?;
    let start = std::time::Instant::now();
    let mut x = 0u64;
    while start.elapsed() < EXACT_PROBE {
        x = std::hint::black_box(x.wrapping_add(1));
    }
    leader.disable_group().ok()?;
    let read = read_group(&leader, layout.len()).ok()?;
    drop(members);
    (read.enabled > 0).then(|| read.running as f64 / read.enabled as f64)
}

/// Checks that each packed group runs all the time on its own (a PMU can accept a group
/// at open that it can never schedule whole, and other users such as the NMI watchdog
/// hold counters): where one does not, its last hardware events move to a group of their
/// own, or with `exact` are left out, named. With `exact` only the first group is kept.
fn fit(
    events: &[EventAttr],
    packed: Vec<Vec<usize>>,
    inherit: bool,
    exact: bool,
) -> (Vec<Vec<usize>>, Vec<Left>) {
    let mut layout = Vec::new();
    let mut dropped = Vec::new();
    let mut queue: std::collections::VecDeque<Vec<usize>> = packed.into();
    while let Some(mut group) = queue.pop_front() {
        let mut spill = Vec::new();
        while group.iter().filter(|&&k| !is_software(&events[k])).count() > 1 {
            let Some(ratio) = runs_throughout(events, &group, inherit) else {
                break;
            };
            if ratio >= 0.999 {
                break;
            }
            let Some(pos) = group.iter().rposition(|&k| !is_software(&events[k])) else {
                break;
            };
            let k = group.remove(pos);
            if exact {
                dropped.push(Left {
                    event: events[k].name.clone(),
                    reason: format!(
                        "left out by --perf-exact: with it the group ran {:.1}% of the time (the PMU cannot hold it whole)",
                        ratio * 100.0
                    ),
                });
            } else {
                spill.insert(0, k);
            }
        }
        layout.push(group);
        if !spill.is_empty() {
            queue.push_front(spill);
        }
    }
    if exact && layout.len() > 1 {
        for k in layout.drain(1..).flatten() {
            dropped.push(Left {
                event: events[k].name.clone(),
                reason: "left out by --perf-exact: it does not fit on the PMU in the first group"
                    .to_string(),
            });
        }
    }
    (layout, dropped)
}

fn read_group(leader: &Counter, members: usize) -> Result<GroupRead, String> {
    let mut buf = vec![0u8; 24 + 16 * members];
    let n = leader.read(&mut buf).map_err(|e| e.to_string())?;
    buf.truncate(n);
    GroupRead::parse(&buf).map_err(|e| e.to_string())
}

impl CounterSet {
    /// Packs and opens `config.events` on the threads `config.coverage` names, disabled.
    /// Events that cannot be counted are in [`CounterSet::absent`] with the kernel's
    /// reason; an empty set (nothing opened) is still a set.
    pub fn open(config: &CounterConfig, system: &System) -> CounterSet {
        let events = config.events.clone();
        let inherit = config.coverage == Coverage::Process;
        // Hardware events share groups as the PMU allows. Software events never take a
        // PMU slot, so grouping them buys nothing, and the clock events (task-clock,
        // cpu-clock: their own hrtimer PMUs) leading or joining a group of other software
        // events make those lose counts on current kernels: the other software events go
        // in one group of their own, each clock event alone.
        let is_clock = |e: &EventAttr| {
            e.type_ == PERF_TYPE_SOFTWARE && matches!(e.config, SW_CPU_CLOCK | SW_TASK_CLOCK)
        };
        let pick = |f: &dyn Fn(&EventAttr) -> bool| -> Vec<usize> {
            (0..events.len()).filter(|&i| f(&events[i])).collect()
        };
        let hardware = pick(&|e| !is_software(e));
        let software = pick(&|e| is_software(e) && !is_clock(e));
        let clocks = pick(&is_clock);
        let mut packing = pack(&events, &hardware, false, inherit, config.exact, system);
        let (mut layout, mut dropped) = fit(
            &events,
            std::mem::take(&mut packing.layout),
            packing.inherit,
            config.exact,
        );
        for (order, alone) in [(&software, false), (&clocks, true)] {
            let more = pack(&events, order, alone, packing.inherit, false, system);
            layout.extend(more.layout);
            packing.absent.extend(more.absent);
            packing.notes.extend(more.notes);
            packing.inherit &= more.inherit;
        }
        let mut dropped_all = packing.dropped;
        dropped_all.append(&mut dropped);
        let listed = threads();
        let covered: Vec<Thread> = match config.coverage {
            Coverage::Process => listed.clone(),
            Coverage::CallingThread => listed.iter().take(1).cloned().collect(),
        };
        let mut set = CounterSet {
            events,
            layout,
            groups: Vec::new(),
            absent: packing.absent,
            dropped: dropped_all,
            threads: Vec::new(),
            listed,
            inherit: packing.inherit,
            read_path: ReadPath::Read,
            read_reason: None,
            notes: packing.notes,
        };
        for thread in covered {
            match set.open_on(thread.tid) {
                Ok(groups) => {
                    set.groups.extend(groups);
                    set.threads.push(thread);
                }
                Err(e) => set.notes.push(format!(
                    "thread {} ({}) not counted: {e}",
                    thread.tid, thread.name
                )),
            }
        }
        if config.rdpmc {
            match set.rdpmc_refusal(config.coverage) {
                None => set.read_path = ReadPath::Rdpmc,
                Some(why) => set.read_reason = Some(why),
            }
        }
        set
    }

    fn open_on(&self, tid: i32) -> std::io::Result<Vec<TaskGroup>> {
        let mut groups = Vec::with_capacity(self.layout.len());
        for (g, indices) in self.layout.iter().enumerate() {
            let mut leader = open_one(&self.events[indices[0]], tid, self.inherit, None)?;
            let mut members = Vec::with_capacity(indices.len() - 1);
            for &k in &indices[1..] {
                members.push(open_one(
                    &self.events[k],
                    tid,
                    self.inherit,
                    Some(&mut leader),
                )?);
            }
            groups.push(TaskGroup {
                layout: g,
                leader,
                members,
                pages: Vec::new(),
            });
        }
        Ok(groups)
    }

    /// Why the rdpmc path cannot serve this set; maps the pages where it can.
    fn rdpmc_refusal(&mut self, coverage: Coverage) -> Option<String> {
        if !cfg!(target_arch = "x86_64") {
            return Some("rdpmc is an x86-64 instruction".to_string());
        }
        if coverage != Coverage::CallingThread {
            return Some(
                "the counters cover every thread and are inherited; rdpmc reads only the calling thread's own counter"
                    .to_string(),
            );
        }
        if let Some(e) = self.events.iter().find(|e| is_software(e)) {
            return Some(format!(
                "{} is not a hardware counter; rdpmc reads hardware counters only",
                e.name
            ));
        }
        if self.groups.is_empty() {
            return Some("no counter is open".to_string());
        }
        let page = usize::try_from(sys::page_size()).unwrap_or(4096);
        for group in &mut self.groups {
            let mapped: Vec<std::io::Result<memmap2::MmapRaw>> = std::iter::once(&group.leader)
                .chain(&group.members)
                .map(|c| c.map_page(page))
                .collect();
            for map in mapped {
                match map {
                    Ok(map) => group.pages.push(map),
                    Err(e) => {
                        return Some(format!("the counter's mmap page cannot be mapped: {e}"))
                    }
                }
            }
        }
        // The capability is per counter and set while it is enabled.
        for group in &mut self.groups {
            let _ = group.leader.enable_group();
        }
        let allowed = self.groups.iter().flat_map(|g| &g.pages).all(|p| {
            // SAFETY: a mapped perf page, at least one page long.
            let caps = unsafe {
                std::ptr::read_volatile(p.as_ptr().add(counting::page::CAPABILITIES).cast::<u64>())
            };
            caps & counting::page::CAP_USER_RDPMC != 0
        });
        for group in &mut self.groups {
            let _ = group.leader.disable_group();
        }
        if allowed {
            None
        } else {
            for group in &mut self.groups {
                group.pages.clear();
            }
            Some(
                "the kernel does not allow user rdpmc for these counters (cap_user_rdpmc clear; see /sys/bus/event_source/devices/cpu/rdpmc)"
                    .to_string(),
            )
        }
    }

    /// The events counted, in order.
    pub fn events(&self) -> &[EventAttr] {
        &self.events
    }

    /// How many groups each covered thread has (more than one: they share the PMU).
    pub fn groups_per_thread(&self) -> usize {
        self.layout.len()
    }

    /// How many of those groups hold hardware counters: more than one take turns on the
    /// PMU (software groups never need to).
    pub fn pmu_groups(&self) -> usize {
        self.layout
            .iter()
            .filter(|g| g.iter().any(|&k| !is_software(&self.events[k])))
            .count()
    }

    /// Whether anything is open.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    fn enable(&mut self) {
        for g in &mut self.groups {
            let _ = g.leader.enable_group();
        }
    }

    fn disable(&mut self) {
        // The calling thread's groups come first: the rest of the ioctls go uncounted.
        for g in &mut self.groups {
            let _ = g.leader.disable_group();
        }
    }

    fn read_all(&self) -> Result<Vec<GroupRead>, String> {
        self.groups
            .iter()
            .map(|g| read_group(&g.leader, self.layout[g.layout].len()))
            .collect()
    }

    /// Every counter's value through its page (rdpmc path).
    fn page_counts(&self) -> Vec<i64> {
        let mut out = Vec::new();
        for g in &self.groups {
            for p in &g.pages {
                // SAFETY: a mapped perf page of a counter on this thread; rdpmc is used
                // only where the page's cap_user_rdpmc says the kernel allows it.
                let r = unsafe { counting::read_page(p.as_ptr(), rdpmc_or_zero) };
                out.push(r.count);
            }
        }
        out
    }
}

#[cfg(target_arch = "x86_64")]
fn rdpmc_or_zero(index: u32) -> u64 {
    // SAFETY: called only from read_page, which calls it only where cap_user_rdpmc is set
    // and the counter is on the PMU.
    unsafe { counting::rdpmc(index) }
}

#[cfg(not(target_arch = "x86_64"))]
fn rdpmc_or_zero(_index: u32) -> u64 {
    0
}

/// A set counting bracketed regions: [`Bracketed::resume`] and [`Bracketed::pause`]
/// around each, [`Bracketed::counts`] at the end.
#[derive(Debug)]
pub struct Bracketed {
    set: CounterSet,
    start: Vec<GroupRead>,
    /// rdpmc path: counts at the last resume, and the sum of bracket deltas.
    at_resume: Vec<i64>,
    summed: Vec<i64>,
    brackets: u64,
    /// Per event, the median cost of one empty bracket.
    self_cost: Vec<f64>,
    failed: Option<String>,
    /// Counters read with rdpmc must be read on the thread they count: not `Send`.
    _thread_bound: std::marker::PhantomData<*const ()>,
}

impl Bracketed {
    /// Starts counting with `set`: measures its own cost per bracket, then takes the
    /// pass's first reading.
    pub fn start(set: CounterSet) -> Bracketed {
        let n = set.events.len();
        let mut b = Bracketed {
            set,
            start: Vec::new(),
            at_resume: Vec::new(),
            summed: Vec::new(),
            brackets: 0,
            self_cost: vec![0.0; n],
            failed: None,
            _thread_bound: std::marker::PhantomData,
        };
        if b.set.read_path == ReadPath::Rdpmc {
            b.set.enable();
        }
        let mut costs: Vec<Vec<f64>> = vec![Vec::with_capacity(CALIBRATION_BRACKETS); n];
        for _ in 0..CALIBRATION_BRACKETS {
            let Ok(before) = b.reading() else { break };
            b.resume();
            b.pause();
            let Ok(after) = b.reading() else { break };
            for (k, v) in b.raw_deltas(&before, &after).into_iter().enumerate() {
                costs[k].push(v);
            }
        }
        for (k, mut c) in costs.into_iter().enumerate() {
            if !c.is_empty() {
                c.sort_by(f64::total_cmp);
                b.self_cost[k] = c[c.len() / 2];
            }
        }
        b.brackets = 0;
        b.summed = vec![0; b.set.groups.iter().map(|g| g.pages.len()).sum()];
        match b.set.read_all() {
            Ok(r) => b.start = r,
            Err(e) => b.failed = Some(format!("reading the counters failed: {e}")),
        }
        b
    }

    /// The set being counted.
    pub fn set(&self) -> &CounterSet {
        &self.set
    }

    /// A reading for calibration: group reads (read path) or page counts as one pseudo
    /// group per counter (rdpmc path).
    fn reading(&self) -> Result<Vec<GroupRead>, String> {
        match self.set.read_path {
            ReadPath::Read => self.set.read_all(),
            ReadPath::Rdpmc => Ok(vec![GroupRead {
                enabled: 0,
                running: 0,
                values: self
                    .set
                    .page_counts()
                    .into_iter()
                    .map(|c| (0, c as u64))
                    .collect(),
            }]),
        }
    }

    /// Unscaled per-event sums of the differences between two readings.
    fn raw_deltas(&self, before: &[GroupRead], after: &[GroupRead]) -> Vec<f64> {
        let mut out = vec![0.0; self.set.events.len()];
        let slots = self.slots();
        let flat = |r: &[GroupRead]| -> Vec<u64> {
            r.iter()
                .flat_map(|g| g.values.iter().map(|v| v.1))
                .collect()
        };
        for ((b, a), &k) in flat(before).iter().zip(flat(after).iter()).zip(&slots) {
            out[k] += a.wrapping_sub(*b) as i64 as f64;
        }
        out
    }

    /// The event index of every counter, in reading order.
    fn slots(&self) -> Vec<usize> {
        self.set
            .groups
            .iter()
            .flat_map(|g| self.set.layout[g.layout].iter().copied())
            .collect()
    }

    /// Starts a bracketed region.
    #[inline]
    pub fn resume(&mut self) {
        match self.set.read_path {
            ReadPath::Read => self.set.enable(),
            ReadPath::Rdpmc => self.at_resume = self.set.page_counts(),
        }
    }

    /// Ends a bracketed region.
    #[inline]
    pub fn pause(&mut self) {
        match self.set.read_path {
            ReadPath::Read => self.set.disable(),
            ReadPath::Rdpmc => {
                let now = self.set.page_counts();
                for ((s, n), r) in self.summed.iter_mut().zip(&now).zip(&self.at_resume) {
                    *s = s.wrapping_add(n.wrapping_sub(*r));
                }
            }
        }
        self.brackets += 1;
    }

    /// Every event's count over the bracketed regions so far, the set's own cost
    /// removed (clamped at zero), scaled where its groups shared the PMU.
    pub fn counts(&self) -> Vec<EventCount> {
        let n = self.set.events.len();
        let mut out: Vec<EventCount> = self
            .set
            .events
            .iter()
            .map(|e| EventCount {
                event: e.name.clone(),
                value: None,
                estimated: false,
                running_ratio: 1.0,
                reason: None,
            })
            .collect();
        let end = match self.failed.clone().map_or_else(|| self.set.read_all(), Err) {
            Ok(end) => end,
            Err(e) => {
                for c in &mut out {
                    c.reason = Some(e.clone());
                }
                return self.with_left(out);
            }
        };
        let mut sum = vec![Some(0.0f64); n];
        let mut enabled = vec![0u64; n];
        let mut running = vec![0u64; n];
        let mut page = 0;
        for ((g, before), after) in self.set.groups.iter().zip(&self.start).zip(&end) {
            let indices = &self.set.layout[g.layout];
            let d_enabled = after.enabled.saturating_sub(before.enabled);
            let d_running = after.running.saturating_sub(before.running);
            let counted = counting::pass(before, after);
            for (m, &k) in indices.iter().enumerate() {
                enabled[k] += d_enabled;
                running[k] += d_running;
                match &counted {
                    Ok(c) => {
                        let value = if self.set.read_path == ReadPath::Rdpmc {
                            // The bracket deltas, scaled like the pass.
                            let raw = self.summed[page + m] as f64;
                            if c[m].estimated {
                                raw / c[m].running_ratio
                            } else {
                                raw
                            }
                        } else {
                            c[m].value
                        };
                        sum[k] = sum[k].map(|s| s + value);
                        out[k].estimated |= c[m].estimated;
                    }
                    Err(e) => {
                        sum[k] = None;
                        out[k].reason = Some(match e {
                            NotCounted::NeverRan { .. } => format!(
                                "{e}: {} groups per thread share the PMU; fewer events (or --perf-exact) let each run",
                                self.set.layout.len()
                            ),
                            NotCounted::Mismatch(_) => e.to_string(),
                        });
                    }
                }
            }
            page += g.pages.len();
        }
        for k in 0..n {
            if enabled[k] > 0 {
                out[k].running_ratio = (running[k] as f64 / enabled[k] as f64).min(1.0);
            }
            out[k].value = sum[k].map(|s| (s - self.self_cost[k] * self.brackets as f64).max(0.0));
        }
        self.with_left(out)
    }

    /// The entries of the events in a group (one per event, in order), then one per
    /// event in none (not opened, or left out), with its reason.
    fn with_left(&self, out: Vec<EventCount>) -> Vec<EventCount> {
        let mut kept: Vec<EventCount> = out
            .into_iter()
            .enumerate()
            .filter(|(k, _)| self.set.layout.iter().any(|g| g.contains(k)))
            .map(|(_, c)| c)
            .collect();
        for left in self.set.absent.iter().chain(&self.set.dropped) {
            kept.push(EventCount {
                event: left.event.clone(),
                value: None,
                estimated: false,
                running_ratio: 0.0,
                reason: Some(left.reason.clone()),
            });
        }
        kept
    }
}

#[cfg(test)]
#[path = "../../testdata/support/skip.rs"]
mod skip;

#[cfg(test)]
mod tests {
    use super::skip;
    use super::*;
    use crate::events::EventResolver;

    fn resolve(specs: &[&str]) -> Vec<EventAttr> {
        let r = EventResolver::live().unwrap_or_else(|_| EventResolver::empty("/"));
        specs.iter().flat_map(|s| r.resolve(s).unwrap()).collect()
    }

    fn config(specs: &[&str], coverage: Coverage) -> CounterConfig {
        CounterConfig {
            events: resolve(specs),
            coverage,
            exact: false,
            rdpmc: true,
        }
    }

    /// Skips (returning None) where the kernel refuses even software counters.
    fn open(config: &CounterConfig) -> Option<CounterSet> {
        let set = CounterSet::open(config, &System::probe());
        if set.is_empty() {
            skip::skip(
                "perf_event",
                format!("the kernel refuses the counters: {:?}", set.absent),
            );
            return None;
        }
        Some(set)
    }

    /// Touches `pages` fresh 4 KiB pages of an anonymous map kept off huge pages: one
    /// page fault each.
    fn touch_pages(pages: usize) {
        let len = pages * 4096;
        let mut map = memmap2::MmapMut::map_anon(len).unwrap();
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::NoHugePage);
        for i in 0..pages {
            // SAFETY: inside the writable map.
            unsafe { std::ptr::write_volatile(map.as_mut_ptr().add(i * 4096), 1) };
        }
    }

    fn value(counts: &[EventCount], event: &str) -> f64 {
        let c = counts.iter().find(|c| c.event == event).unwrap();
        c.value
            .unwrap_or_else(|| panic!("{event}: no value: {:?}", c.reason))
    }

    #[test]
    fn software_counters_count_only_inside_brackets() {
        let Some(set) = open(&config(
            &["task-clock", "page-faults"],
            Coverage::CallingThread,
        )) else {
            return;
        };
        assert_eq!(set.read_path, ReadPath::Read);
        assert!(
            set.read_reason
                .as_deref()
                .unwrap()
                .contains("task-clock is not a hardware counter"),
            "{:?}",
            set.read_reason
        );
        let mut b = Bracketed::start(set);
        // Outside any bracket: touched pages and spent time must not count.
        touch_pages(16_384);
        b.resume();
        touch_pages(2_048);
        b.pause();
        let counts = b.counts();
        let faults = value(&counts, "page-faults");
        assert!(
            (1_500.0..8_000.0).contains(&faults),
            "2,048 pages touched inside, 16,384 outside: {faults} faults"
        );
        assert!(value(&counts, "task-clock") > 0.0);
    }

    #[test]
    fn a_thread_started_before_and_one_started_during_counting_are_both_counted() {
        use std::sync::mpsc::channel;
        // Started before the set opens: covered by its own counter.
        let (go_tx, go_rx) = channel::<()>();
        let (done_tx, done_rx) = channel::<()>();
        let (ready_tx, ready_rx) = channel::<()>();
        let before = std::thread::Builder::new()
            .name("before".into())
            .spawn(move || {
                // The new thread names itself once running: wait for that.
                ready_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                touch_pages(4_096);
                done_tx.send(()).unwrap();
            })
            .unwrap();
        ready_rx.recv().unwrap();
        let Some(set) = open(&config(&["page-faults"], Coverage::Process)) else {
            go_tx.send(()).unwrap();
            before.join().unwrap();
            return;
        };
        assert!(set.inherit, "{:?}", set.notes);
        assert!(
            set.threads.iter().any(|t| t.name == "before"),
            "{:?}",
            set.threads
        );
        let mut b = Bracketed::start(set);
        b.resume();
        go_tx.send(()).unwrap();
        done_rx.recv().unwrap();
        // Started during the pass: covered through inherit.
        std::thread::Builder::new()
            .name("during".into())
            .spawn(|| touch_pages(4_096))
            .unwrap()
            .join()
            .unwrap();
        b.pause();
        before.join().unwrap();
        let faults = value(&b.counts(), "page-faults");
        // Either thread alone would count about 4,096.
        assert!(
            faults >= 7_000.0,
            "two threads touched 4,096 pages each, counted {faults}"
        );
    }

    /// Nine hardware counters: more than a PMU of this kind holds in one group.
    const NINE: [&str; 9] = [
        "instructions",
        "cycles",
        "branches",
        "branch-misses",
        "instructions:u",
        "cycles:u",
        "branches:u",
        "branch-misses:u",
        "instructions:k",
    ];

    #[test]
    fn hardware_groups_that_do_not_fit_share_the_pmu_and_are_scaled() {
        let set = CounterSet::open(&config(&NINE, Coverage::CallingThread), &System::probe());
        if set.is_empty() || !set.absent.is_empty() {
            skip::skip(
                "pmu",
                format!("no hardware counters here: {:?}", set.absent),
            );
            return;
        }
        if set.pmu_groups() < 2 {
            // This PMU holds all nine at once: nothing shares it, nothing is scaled.
            let mut b = Bracketed::start(set);
            b.resume();
            std::hint::black_box((0..1_000_000u64).sum::<u64>());
            b.pause();
            let counts = b.counts();
            assert!(
                counts.iter().all(|c| !c.estimated && c.value.is_some()),
                "{counts:?}"
            );
            return;
        }
        // The same work counted exactly, by one counter alone, is the reference.
        let work = || {
            let mut x = 0u64;
            for i in 0..20_000_000u64 {
                x = std::hint::black_box(x ^ i);
            }
        };
        let alone = CounterSet::open(
            &config(&["instructions"], Coverage::CallingThread),
            &System::probe(),
        );
        let mut reference = Bracketed::start(alone);
        reference.resume();
        work();
        reference.pause();
        let exact = value(&reference.counts(), "instructions");
        let mut b = Bracketed::start(set);
        b.resume();
        work();
        b.pause();
        let counts = b.counts();
        let instr = counts.iter().find(|c| c.event == "instructions").unwrap();
        assert!(instr.estimated && instr.running_ratio < 0.9, "{instr:?}");
        let v = instr.value.unwrap();
        eprintln!(
            "instructions: {v:.0} estimated at running ratio {:.3}, {exact:.0} counted alone",
            instr.running_ratio
        );
        assert!(
            (v / exact - 1.0).abs() < 0.1,
            "estimate {v} against {exact}"
        );
    }

    #[test]
    fn exact_leaves_out_what_does_not_fit_and_names_it() {
        let mut c = config(&NINE, Coverage::CallingThread);
        c.exact = true;
        let set = CounterSet::open(&c, &System::probe());
        if set.is_empty() || !set.absent.is_empty() {
            skip::skip(
                "pmu",
                format!("no hardware counters here: {:?}", set.absent),
            );
            return;
        }
        assert_eq!(set.pmu_groups(), 1);
        // Whether nine fit is this PMU's to say (they do on cores with eight general
        // counters and three fixed ones): the same events opened without `exact` tell.
        let shared = CounterSet::open(&config(&NINE, Coverage::CallingThread), &System::probe());
        let fit = shared.pmu_groups() == 1;
        assert_eq!(set.dropped.is_empty(), fit, "{:?}", set.dropped);
        assert!(set
            .dropped
            .iter()
            .all(|d| d.reason.contains("--perf-exact")));
        drop(shared);
        let mut b = Bracketed::start(set);
        b.resume();
        std::hint::black_box((0..1_000_000u64).sum::<u64>());
        b.pause();
        let counts = b.counts();
        let instr = counts.iter().find(|c| c.event == "instructions").unwrap();
        assert!(!instr.estimated, "{instr:?}");
        assert!(counts.iter().all(|c| !c.estimated), "{counts:?}");
        let left_out = counts
            .iter()
            .filter(|c| {
                c.value.is_none() && c.reason.as_deref().unwrap_or("").contains("--perf-exact")
            })
            .count();
        assert_eq!(left_out == 0, fit, "{counts:?}");
    }

    /// Both read paths count the same work within 2%. In a VM a guest counter is a host
    /// perf event, which the host can leave unscheduled: a read(2) set, enabled and
    /// disabled by ioctl at every bracket, then counts nothing but what the hypervisor
    /// emulates. Seen here in about 1 run in 4 with the lib's tests in parallel: "rdpmc
    /// 829955652 and read(2) 20", the 20 being the 2 rdpmc per bracket KVM emulated, and
    /// once 573721311 with running equal to enabled. So the measurement is made up to 5
    /// times, each with sets opened anew; paths that disagree every time fail.
    #[test]
    fn rdpmc_reads_agree_with_read_2_on_the_same_work() {
        let c = config(&["instructions:u"], Coverage::CallingThread);
        let mut disagreements = Vec::new();
        for _ in 0..5 {
            let set = CounterSet::open(&c, &System::probe());
            if set.is_empty() {
                skip::skip(
                    "pmu",
                    format!("no hardware counters here: {:?}", set.absent),
                );
                return;
            }
            if set.read_path != ReadPath::Rdpmc {
                skip::skip("rdpmc", format!("rdpmc not allowed: {:?}", set.read_reason));
                return;
            }
            let plain = CounterSet::open(
                &CounterConfig {
                    rdpmc: false,
                    ..c.clone()
                },
                &System::probe(),
            );
            assert_eq!(plain.read_path, ReadPath::Read);
            let mut fast = Bracketed::start(set);
            let mut slow = Bracketed::start(plain);
            for _ in 0..10 {
                slow.resume();
                fast.resume();
                let mut x = 0u64;
                for i in 0..1_000_000u64 {
                    x = std::hint::black_box(x ^ i);
                }
                fast.pause();
                slow.pause();
            }
            let (f, s) = (
                value(&fast.counts(), "instructions:u"),
                value(&slow.counts(), "instructions:u"),
            );
            assert!(f > 1e7, "ten million iterations: {f} instructions");
            if (f / s - 1.0).abs() < 0.02 {
                return;
            }
            eprintln!("rdpmc {f} and read(2) {s} disagree");
            disagreements.push((f, s));
        }
        panic!("rdpmc and read(2) disagree in every try: {disagreements:?}");
    }
}
