//! Live overflow sampling: one ring buffer per opened event, drained by a thread while the
//! target runs, written as a perf.data capture.
//!
//! Coverage of a thread and what it starts needs one inherited event per CPU (the kernel
//! refuses `inherit` on a buffer shared by all CPUs); threads that already existed are
//! attached one by one. A thread that could not be attached is listed, never dropped
//! silently.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use sparkles_perf_data::attr::{flag, sample_type as st, Attr};
use sparkles_perf_data::pages::PageNodes;
use sparkles_perf_data::record::{kind, misc, parse_record, Record, RecordHeader};
use sparkles_perf_data::sample::{Sample, SampleFormat};
use sparkles_perf_data::throttle::{Throttled, Throttling};
use sparkles_perf_data::writer::{CaptureWriter, Compression, WrittenEvent};

use crate::buffers::Allowance;
use crate::errno;
use crate::events::{EventAttr, EventResolver};
use crate::open::{explain, kernel_attr, OpenMode, OpenTarget};
use crate::proc_synth::{self, tasks_of};
use crate::sys::{self, Counter, Poll, Ring};
use crate::system::System;
use crate::Error;

/// User registers framehop needs: on x86_64 perf's full mask (AX…R15 without the
/// segment registers), on aarch64 x0–x30, sp and pc.
#[cfg(target_arch = "x86_64")]
pub const USER_REGS_MASK: u64 = 0xff0fff;
/// User registers framehop needs (aarch64: x0–x30, sp, pc).
#[cfg(target_arch = "aarch64")]
pub const USER_REGS_MASK: u64 = (1 << 33) - 1;
/// User registers (no unwinding support on this architecture).
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const USER_REGS_MASK: u64 = 0;

/// Bytes of user stack copied per sample by default: twice perf's 8 KiB, which the demo
/// suite's serde_json cases outgrow (74–82% of their stacks cut short at 8 KiB, none at
/// 16 KiB). Only the valid part of each copy is stored.
pub const DEFAULT_STACK_BYTES: u32 = 16384;

/// How stacks are captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallGraph {
    /// User registers and a copy of the user stack of this many bytes, for DWARF unwinding.
    Dwarf(u32),
    /// The kernel's frame-pointer callchain only.
    FramePointer,
}

/// How often to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    /// Samples per second (the kernel adjusts the period).
    Frequency(u64),
    /// Events between samples.
    Period(u64),
}

/// One event a session samples.
#[derive(Debug, Clone)]
pub struct SampledEvent {
    /// The event.
    pub attr: EventAttr,
    /// A group leader opened just before it that only counts, never samples: an event
    /// that works only on the PMU together with another (Sapphire Rapids' `mem-loads`
    /// needs `mem-loads-aux` as its leader).
    pub leader: Option<EventAttr>,
    /// The CPUs its PMU counts on (a hybrid machine's `cpu_core` or `cpu_atom`); `None`:
    /// every CPU.
    pub cpus: Option<Vec<usize>>,
    /// A sample every this many events, whatever the session's rate (a tracepoint
    /// sampled at each hit: 1).
    pub period: Option<u64>,
}

impl SampledEvent {
    /// Its name, with its leader's as perf spells a group: `{leader,event}`.
    pub fn spelling(&self) -> String {
        match &self.leader {
            Some(l) => format!("{{{},{}}}", l.name, self.attr.name),
            None => self.attr.name.clone(),
        }
    }
}

impl From<EventAttr> for SampledEvent {
    fn from(attr: EventAttr) -> SampledEvent {
        SampledEvent {
            attr,
            leader: None,
            cpus: None,
            period: None,
        }
    }
}

/// What to sample and how.
#[derive(Debug, Clone)]
pub struct SamplingConfig {
    /// The events, at least one. All of them write into one ring buffer per sampled task
    /// and CPU, each sample naming its event (IDENTIFIER); the capture lists them in
    /// this order, each leader before its event.
    pub events: Vec<SampledEvent>,
    /// Sampling rate.
    pub rate: Rate,
    /// Stack capture.
    pub call_graph: CallGraph,
    /// Data pages per ring buffer at least (a power of two); more where
    /// [`SamplingConfig::buffer_hold_ms`] of samples at the rate needs more.
    pub buffer_pages: usize,
    /// Each ring buffer holds this many milliseconds of samples at the session's rate
    /// (stack copies included), within what the user may pin ([`crate::buffers`]): a drain
    /// thread kept waiting this long on a busy machine loses nothing.
    pub buffer_hold_ms: u64,
    /// Cut sample stacks to their valid size when writing.
    pub compact_stacks: bool,
    /// How the capture's records are stored (zstd, as `perf record -z`, by default).
    pub compression: Compression,
    /// Stream the capture to this file as it is taken (finished by
    /// [`CaptureWriter::write`] on [`Capture::writer`]): memory holds a chunk of records,
    /// however long the session. `None`: the records stay in memory.
    pub stream_to: Option<PathBuf>,
    /// Memory sampling: data addresses and what goes with them.
    pub memory: Option<MemorySampling>,
    /// Off-CPU capture: SWITCH records of every sampled thread (`context_switch`), so a
    /// report can tell when each thread ran and waited.
    pub context_switches: bool,
    /// Samples carry their RAW tracepoint data (a `sched:sched_switch` event's
    /// `prev_state`); every event then has the field, so that all share one layout.
    pub raw: bool,
    /// The TRACING_DATA feature for the capture's tracepoints
    /// ([`sparkles_perf_data::tracing::encode`]).
    pub tracing_data: Option<Vec<u8>>,
}

/// What memory sampling adds to a profile's sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemorySampling {
    /// Sample fields beyond the profile's own (ADDR, DATA_SRC, WEIGHT_STRUCT, …).
    pub sample_type: u64,
    /// Ask the kernel (move_pages) which node each sampled data page is on, while the
    /// process runs.
    pub resolve_pages: bool,
    /// Sample fields to leave out of the profile's own.
    pub without: u64,
    /// Wake the drain every this many samples (0: when the buffer is a quarter full), so
    /// pages are asked about soon after they were sampled.
    pub wakeup_events: usize,
}

/// Which tasks to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The calling thread and the threads it starts (one inherited event per CPU), and
    /// every other thread the process already has.
    CurrentThread,
    /// Every thread of a process, and the threads they start.
    Process(u32),
}

/// The event asked for (any spelling the events layer takes), else [`default_event`];
/// with the line saying which, and why.
pub fn choose_event(
    resolver: &EventResolver,
    system: &System,
    spec: Option<&str>,
) -> Result<(EventAttr, String), crate::EventError> {
    match spec {
        Some(spec) => {
            let mut event = resolver.resolve(spec)?.remove(0);
            event.name = spec.to_string();
            Ok((event, format!("event: {spec}")))
        }
        None => Ok(default_event(resolver, system)),
    }
}

/// The event a profile uses by default: `cycles` at the highest precise level the PMU
/// accepts, else `cpu-clock`; the note says which and why.
pub fn default_event(resolver: &EventResolver, system: &System) -> (EventAttr, String) {
    let mut why_not = String::new();
    if let Ok(mut attrs) = resolver.resolve("cycles:P") {
        if let Some(mut cycles) = attrs.drain(..).next() {
            let mode = OpenMode::Sampling { period: 1_000_000 };
            match crate::open::open_or_user_only(&cycles, mode, system) {
                Ok((opened, user)) => {
                    let user_only = user.is_some();
                    if let Some(u) = user {
                        cycles = u.attr;
                    }
                    cycles.precise_ip = opened.precise_ip;
                    cycles.precise_max = false;
                    cycles.name = if user_only { "cycles:u" } else { "cycles" }.to_string();
                    let note = format!(
                        "event: {} (precise_ip {}{})",
                        cycles.name,
                        opened.precise_ip,
                        if user_only {
                            format!(
                                "; user mode only: perf_event_paranoid is {}",
                                system.perf_event_paranoid
                            )
                        } else {
                            String::new()
                        }
                    );
                    return (cycles, note);
                }
                Err(e) => why_not = e.reason,
            }
        }
    }
    let mut clock = resolver
        .resolve("cpu-clock")
        .ok()
        .and_then(|mut a| a.drain(..).next())
        .unwrap_or_else(|| {
            EventResolver::empty("/")
                .resolve("cpu-clock")
                .unwrap_or_default()
                .remove(0)
        });
    clock.name = "cpu-clock".to_string();
    let note = format!("event: cpu-clock (cycles unavailable: {why_not})");
    (clock, note)
}

/// Something a session could not do as asked, with the setting behind it: each is said to
/// the user (its `Display` is the one place it is put into words).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Restriction {
    /// The paranoid level refused kernel mode: the events sample user mode only.
    UserModeOnly {
        /// `kernel.perf_event_paranoid`.
        paranoid: i32,
    },
    /// An event was refused where first tried, and left out of the session.
    NotSampled {
        /// The event.
        event: String,
        /// The kernel's refusal, explained.
        reason: String,
    },
    /// The frequency asked for is above the kernel's limit: sampling is at the limit.
    RateClamped {
        /// The frequency asked for.
        asked: u64,
        /// `kernel.perf_event_max_sample_rate`: the session samples at half of it.
        limit: u64,
    },
    /// The ring buffers hold less than the session's rate wants, to fit what the user may
    /// pin (an unprivileged user's locked-memory limits, or root's share of memory).
    SmallBuffers {
        /// Each buffer's size, KiB.
        kib: usize,
        /// How many buffers.
        buffers: usize,
        /// How long one holds samples at the session's rate, ms.
        hold_ms: u64,
        /// The limit they were fitted to.
        limit: Allowance,
    },
    /// The drain fell behind the ring buffers: records and samples were lost.
    Lost {
        /// Records lost (LOST).
        records: u64,
        /// Samples lost (LOST_SAMPLES).
        samples: u64,
        /// Whether the buffers were made smaller than asked.
        small_buffers: Option<Box<Restriction>>,
    },
    /// A thread (or one event on it) is not sampled.
    Uncovered {
        /// The thread.
        tid: u32,
        /// The event, where only it is missing there.
        event: Option<String>,
        /// Why.
        reason: String,
    },
}

impl std::fmt::Display for Restriction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Restriction::UserModeOnly { paranoid } => write!(
                f,
                "user mode only: perf_event_paranoid is {paranoid} (sysctl kernel.perf_event_paranoid=1, or CAP_PERFMON, to see kernel frames)"
            ),
            Restriction::NotSampled { event, reason } => {
                write!(f, "{event} not sampled: {reason}")
            }
            Restriction::RateClamped { asked, limit } => write!(
                f,
                "sampling at {} Hz, not {asked}: half of kernel.perf_event_max_sample_rate ({limit}), above which the kernel throttles sampling and tilts the profile (it lowers the limit itself when sampling interrupts take too long; sysctl kernel.perf_event_max_sample_rate={} raises it)",
                (limit / 2).max(1),
                asked * 2
            ),
            Restriction::SmallBuffers {
                kib,
                buffers,
                hold_ms,
                limit,
            } => {
                write!(
                    f,
                    "ring buffers limited to {kib} KiB each ({buffers} buffers, {hold_ms} ms of samples at this rate) by "
                )?;
                match limit {
                    Allowance::Locked {
                        mlock_kb, memlock, ..
                    } => {
                        write!(f, "kernel.perf_event_mlock_kb={mlock_kb} and RLIMIT_MEMLOCK ")?;
                        match memlock {
                            Some(b) => write!(f, "{} KiB", b / 1024),
                            None => write!(f, "unlimited"),
                        }
                    }
                    Allowance::Budget { budget } => write!(
                        f,
                        "the {} MiB a profile pins at most (a sixteenth of memory, 1 GiB at most)",
                        budget >> 20
                    ),
                }
            }
            Restriction::Lost {
                records,
                samples,
                small_buffers,
            } => {
                write!(
                    f,
                    "lost {records} records and {samples} samples: the drain fell behind the ring buffers"
                )?;
                if let Some(b) = small_buffers {
                    write!(f, " ({b})")?;
                }
                write!(f, "; lower the frequency or the stack size")?;
                if let Some(Restriction::SmallBuffers {
                    limit: Allowance::Locked { .. },
                    ..
                }) = small_buffers.as_deref()
                {
                    write!(f, ", or raise kernel.perf_event_mlock_kb or `ulimit -l`")?;
                }
                Ok(())
            }
            Restriction::Uncovered {
                tid,
                event: Some(event),
                reason,
            } => write!(f, "thread {tid}: {event}: {reason}"),
            Restriction::Uncovered {
                tid,
                event: None,
                reason,
            } => write!(f, "thread {tid}: {reason}"),
        }
    }
}

/// A running session.
#[derive(Debug)]
pub struct Session {
    stop: Arc<AtomicBool>,
    drain: Option<JoinHandle<DrainResult>>,
    writer_seed: CaptureWriter,
    /// Threads that could not be attached, with the reason.
    pub uncovered: Vec<Restriction>,
    /// Restrictions the kernel imposed (user mode only, …), with the setting behind them.
    pub restrictions: Vec<Restriction>,
    /// Set when the buffers are smaller than asked.
    small_buffers: Option<Restriction>,
    /// The ring buffers made.
    buffers: RingBuffers,
}

/// The ring buffers a session made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RingBuffers {
    /// How many.
    pub count: usize,
    /// Each one's data size, bytes.
    pub bytes: usize,
    /// How long each holds samples at the session's rate, ms.
    pub hold_ms: u64,
}

impl std::fmt::Display for RingBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let size = if self.bytes >= 1 << 20 {
            format!("{} MiB", self.bytes >> 20)
        } else {
            format!("{} KiB", self.bytes >> 10)
        };
        write!(
            f,
            "{} ring buffers of {size} ({} ms of samples each at this rate)",
            self.count, self.hold_ms
        )
    }
}

#[derive(Debug, Default)]
struct DrainResult {
    /// The writer, holding (or having streamed) every record.
    writer: Option<CaptureWriter>,
    modules: HitModules,
    pages: Option<PageNodes>,
    samples: u64,
    lost: u64,
    lost_samples: u64,
    throttled: Throttled,
}

/// What a session captured.
#[derive(Debug)]
pub struct Capture {
    /// The perf.data writer holding every record (or streaming them to
    /// [`SamplingConfig::stream_to`]): [`CaptureWriter::write`] writes the file.
    pub writer: CaptureWriter,
    /// Samples.
    pub samples: u64,
    /// Records the ring buffers dropped (LOST).
    pub lost: u64,
    /// Samples the kernel dropped (LOST_SAMPLES).
    pub lost_samples: u64,
    /// How often and how long the kernel throttled the events (THROTTLE records).
    pub throttled: Throttled,
    /// Threads not covered, with why.
    pub uncovered: Vec<Restriction>,
    /// Restrictions, with the setting behind them.
    pub restrictions: Vec<Restriction>,
    /// With [`MemorySampling::resolve_pages`]: the node of each sampled data page, as
    /// move_pages told while the process ran.
    pub pages: Option<PageNodes>,
    /// The ring buffers the samples passed through.
    pub buffers: RingBuffers,
}

fn gettid() -> u32 {
    sys::gettid() as u32
}

/// `kernel.perf_event_max_sample_rate`: the highest sampling frequency the kernel takes.
pub fn max_sample_rate() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The frequency a request for `hz` samples at here: `hz`, or half the kernel's limit
/// where that is lower. The kernel refuses a frequency above the limit, and lowers the
/// limit itself when sampling interrupts take too long (a VM's virtual PMU); at the limit
/// it throttles the event for the rest of a tick whenever the adjusted period
/// overshoots, and the samples lean toward what follows the tick. At half the limit it
/// hardly throttles (measured: 0 to 4 THROTTLE records per thousand samples, against
/// hundreds at the limit).
pub fn allowed_frequency(hz: u64) -> u64 {
    max_sample_rate()
        .map_or(hz, |max| (max / 2).max(1).min(hz))
        .max(1)
}

fn online_cpus() -> Vec<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    cpus.extend(a..=b);
                }
            }
            None => cpus.extend(part.parse::<usize>().ok()),
        }
    }
    if cpus.is_empty() {
        cpus.push(0);
    }
    cpus
}

impl SamplingConfig {
    /// Sampling of `events` at `rate` with stacks by `call_graph`, as a profile takes it:
    /// ring buffers of 256 pages or 250 ms of samples if larger, stacks compacted, records zstd-compressed (libzstd with `zstd`, else ruzstd), kept in
    /// memory; no memory or off-CPU sampling (set those fields to add them).
    pub fn new(events: Vec<SampledEvent>, rate: Rate, call_graph: CallGraph) -> SamplingConfig {
        SamplingConfig {
            events,
            rate,
            call_graph,
            buffer_pages: 256,
            buffer_hold_ms: 250,
            compact_stacks: true,
            compression: Compression::default(),
            stream_to: None,
            memory: None,
            context_switches: false,
            raw: false,
            tracing_data: None,
        }
    }

    fn sample_type(&self) -> u64 {
        let base = st::IP
            | st::TID
            | st::TIME
            | st::PERIOD
            | st::CPU
            | st::CALLCHAIN
            | st::IDENTIFIER
            | if self.raw { st::RAW } else { 0 }
            | self.memory.map_or(0, |m| m.sample_type);
        let base = base & !self.memory.map_or(0, |m| m.without);
        match self.call_graph {
            CallGraph::Dwarf(_) => base | st::REGS_USER | st::STACK_USER,
            CallGraph::FramePointer => base,
        }
    }

    /// Bytes a second one ring buffer is written at most: each event's samples a second
    /// (its frequency; for a clock sampled by period, ns per second over the period;
    /// otherwise [`crate::buffers::UNKNOWN_RATE_HZ`]) times a sample's size.
    fn bytes_per_second(&self) -> u64 {
        let max_stack = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_stack")
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(127);
        let (regs, stack) = match self.call_graph {
            CallGraph::Dwarf(bytes) => (USER_REGS_MASK, bytes),
            CallGraph::FramePointer => (0, 0),
        };
        let sample = crate::buffers::sample_bytes(self.sample_type(), regs, stack, max_stack);
        let per_period = |e: &SampledEvent, period: u64| {
            // cpu-clock and task-clock count nanoseconds.
            if e.attr.type_ == 1 && e.attr.config <= 1 {
                1_000_000_000 / period.max(1)
            } else {
                crate::buffers::UNKNOWN_RATE_HZ
            }
        };
        let rate: u64 = self
            .events
            .iter()
            .map(|e| match (e.period, self.rate) {
                (Some(p), _) | (None, Rate::Period(p)) => per_period(e, p),
                (None, Rate::Frequency(hz)) => hz,
            })
            .sum();
        rate.saturating_mul(sample)
    }

    /// The events' names, joined: what a profile says it sampled.
    pub fn name(&self) -> String {
        let names: Vec<&str> = self.events.iter().map(|e| e.attr.name.as_str()).collect();
        names.join(", ")
    }

    /// The attr of one sampling event. Only the first event of a ring buffer tracks
    /// mappings, names and tasks: the others would repeat its records.
    fn sampling_attr(
        &self,
        buffer_bytes: usize,
        attr: &EventAttr,
        precise: u8,
        inherit: bool,
        tracking: bool,
        period: Option<u64>,
    ) -> Attr {
        let mode = match (period, self.rate) {
            (Some(p), _) | (None, Rate::Period(p)) => OpenMode::Sampling { period: p },
            (None, Rate::Frequency(_)) => OpenMode::Sampling { period: 1 },
        };
        let mut a = kernel_attr(attr, precise, mode);
        if let (None, Rate::Frequency(hz)) = (period, self.rate) {
            a.flags |= flag::FREQ;
            a.sample_period_or_freq = hz;
        }
        a.flags |= flag::SAMPLE_ID_ALL;
        if tracking {
            a.flags |= flag::MMAP | flag::MMAP2 | flag::COMM | flag::COMM_EXEC | flag::TASK;
            if self.context_switches {
                a.flags |= flag::CONTEXT_SWITCH;
            }
        }
        if inherit {
            a.flags |= flag::INHERIT;
        }
        match self.memory.map(|m| m.wakeup_events).filter(|&n| n > 0) {
            Some(n) => a.wakeup = u32::try_from(n).unwrap_or(u32::MAX),
            None => {
                a.flags |= flag::WATERMARK;
                a.wakeup = u32::try_from(buffer_bytes / 4).unwrap_or(u32::MAX);
            }
        }
        a.sample_type = self.sample_type();
        if tracking && self.memory.is_some() {
            // Data addresses are placed in the mappings of heap, stacks and files.
            a.flags |= flag::MMAP_DATA;
        }
        if let CallGraph::Dwarf(bytes) = self.call_graph {
            // Unwinders read .eh_frame from read-only segments and the stack from
            // [stack]: those mappings must be in the capture too.
            if tracking {
                a.flags |= flag::MMAP_DATA;
            }
            a.sample_regs_user = USER_REGS_MASK;
            a.sample_stack_user = bytes;
            // User frames come from the stack copy; the kernel's user walk would
            // duplicate them.
            a.flags |= flag::EXCLUDE_CALLCHAIN_USER;
        }
        a
    }

    /// The attr of a counting-only group leader: no period, no tracking; the sample
    /// fields of the events it leads, so every event of the capture has the same layout.
    fn leader_attr(&self, attr: &EventAttr, inherit: bool) -> Attr {
        let mut a = kernel_attr(attr, 0, OpenMode::Counting);
        a.flags |= flag::SAMPLE_ID_ALL;
        if inherit {
            a.flags |= flag::INHERIT;
        }
        a.sample_type = self.sample_type();
        if let CallGraph::Dwarf(bytes) = self.call_graph {
            a.sample_regs_user = USER_REGS_MASK;
            a.sample_stack_user = bytes;
            a.flags |= flag::EXCLUDE_CALLCHAIN_USER;
        }
        a
    }
}

impl Session {
    /// Opens every event of `target`, synthesizes what already exists, and starts the
    /// drain thread. Sampling is enabled when this returns.
    pub fn start(
        config: &SamplingConfig,
        target: Target,
        system: &System,
    ) -> Result<Session, Error> {
        if let Some(why) = sys::UNAVAILABLE {
            return Err(Error::Unavailable(why));
        }
        let pid = match target {
            Target::CurrentThread => std::process::id(),
            Target::Process(pid) => pid,
        };
        // The drain thread starts first, so that it is neither inherited by the events
        // opened below nor attached as an existing thread: its work is not the target's.
        let drain = DrainThread::spawn(config, pid)?;
        if config.events.is_empty() {
            return Err(Error::NoEvents);
        }
        let (config, clamped) = within_rate_limit(config);
        let plan = open_plan(target, pid, drain.tid);
        if plan.is_empty() {
            return Err(Error::NoThreads { pid });
        }
        let (plan_of_buffers, small_buffers) = buffer_pages(&config, plan.len(), system);
        let map_bytes = plan_of_buffers.pages * crate::buffers::PAGE;
        let mut events = Opening::new(&config);
        let mut samplers: Vec<Ring> = Vec::new();
        let mut others: Vec<Counter> = Vec::new();
        for (open_target, inherit, tid) in plan {
            if let Some((ring, more)) =
                events.open_target(&config, open_target, inherit, tid, map_bytes, system)?
            {
                samplers.push(ring);
                others.extend(more);
            }
        }
        let Opening {
            events: opened,
            mut restrictions,
            uncovered,
        } = events;
        restrictions.extend(clamped);
        if samplers.is_empty() {
            return Err(not_opened(&config, &opened, uncovered, pid));
        }
        restrictions.dedup();
        let samplers_opened = samplers.len();
        let (mut writer, tracking) = events_writer(&config, &opened);
        writer.compact_stacks = config.compact_stacks;
        writer.compression = config.compression;
        writer.tracing_data = config.tracing_data.clone();
        writer.host = crate::host::probe();
        writer.cmdline = std::env::args().collect();
        if let Some(path) = &config.stream_to {
            writer.stream_to(path)?;
        }
        let format = SampleFormat::of(&writer.attr);
        let mut modules = HitModules::default();
        let dwarf = matches!(config.call_graph, CallGraph::Dwarf(_));
        for record in proc_synth::synthesize_process(&writer.attr, tracking, pid, dwarf) {
            if let Ok(h) = RecordHeader::parse(&record, 0) {
                modules.see(h.type_, h.misc, &record[8..], &format);
            }
            writer.push(&record);
        }
        let enable = |source| Error::Os {
            what: "enabling the events",
            source,
        };
        for s in &mut samplers {
            s.enable().map_err(enable)?;
        }
        for c in &mut others {
            c.enable().map_err(enable)?;
        }
        // The drain appends to the writer holding the synthesized records (and the file
        // it streams to); the session keeps its events, should the drain not return it.
        let mut kept = writer.clone();
        kept.data.clear();
        let (handle, stop) = drain.start(samplers, others, writer, modules)?;
        Ok(Session {
            stop,
            drain: Some(handle),
            writer_seed: kept,
            uncovered,
            restrictions,
            small_buffers,
            buffers: RingBuffers {
                count: samplers_opened,
                bytes: map_bytes,
                hold_ms: plan_of_buffers.hold_ms,
            },
        })
    }

    /// Stops sampling, drains what is left, and returns the capture.
    pub fn finish(mut self) -> Capture {
        self.finish_capture()
    }

    fn finish_capture(&mut self) -> Capture {
        self.stop.store(true, Ordering::Release);
        let result = self
            .drain
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let seed = std::mem::take(&mut self.writer_seed);
        let mut writer = result.writer.unwrap_or(seed);
        writer.build_ids = result.modules.build_ids();
        Capture {
            writer,
            pages: result.pages,
            buffers: self.buffers,
            samples: result.samples,
            lost: result.lost,
            lost_samples: result.lost_samples,
            throttled: result.throttled,
            uncovered: std::mem::take(&mut self.uncovered),
            restrictions: {
                let mut r = std::mem::take(&mut self.restrictions);
                if result.lost + result.lost_samples > 0 {
                    r.push(Restriction::Lost {
                        records: result.lost,
                        samples: result.lost_samples,
                        small_buffers: self.small_buffers.clone().map(Box::new),
                    });
                }
                r
            },
        }
    }
}

/// What the drain thread is handed once the events are open.
type DrainWork = (Vec<Ring>, Vec<Counter>, CaptureWriter, HitModules);

/// The drain thread, started before any event is opened, waiting for its work.
struct DrainThread {
    handle: JoinHandle<DrainResult>,
    work: std::sync::mpsc::Sender<DrainWork>,
    stop: Arc<AtomicBool>,
    /// Its thread id (no event is opened on it).
    tid: u32,
}

impl DrainThread {
    fn spawn(config: &SamplingConfig, pid: u32) -> Result<DrainThread, Error> {
        let (work_tx, work_rx) = std::sync::mpsc::channel::<DrainWork>();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel::<u32>();
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = stop.clone();
        let compact = config.compact_stacks;
        let resolve = config.memory.filter(|m| m.resolve_pages).map(|_| pid);
        let handle = std::thread::Builder::new()
            .name("sparkles-drain".into())
            .spawn(move || {
                let _ = tid_tx.send(gettid());
                match work_rx.recv() {
                    Ok((samplers, others, seed, modules)) => {
                        drain(samplers, others, stop_flag, seed, modules, compact, resolve)
                    }
                    Err(_) => DrainResult::default(),
                }
            })
            .map_err(|source| Error::Os {
                what: "starting the drain thread",
                source,
            })?;
        Ok(DrainThread {
            tid: tid_rx.recv().unwrap_or(0),
            handle,
            work: work_tx,
            stop,
        })
    }

    /// Hands the drain its buffers and counters: from here it drains until `stop`.
    fn start(
        self,
        samplers: Vec<Ring>,
        others: Vec<Counter>,
        seed: CaptureWriter,
        modules: HitModules,
    ) -> Result<(JoinHandle<DrainResult>, Arc<AtomicBool>), Error> {
        self.work
            .send((samplers, others, seed, modules))
            .map_err(|_| Error::DrainEnded)?;
        Ok((self.handle, self.stop))
    }
}

/// `config` at a frequency the kernel samples without throttling: above half of
/// kernel.perf_event_max_sample_rate it samples at that half, and says so.
fn within_rate_limit(
    config: &SamplingConfig,
) -> (std::borrow::Cow<'_, SamplingConfig>, Option<Restriction>) {
    if let Rate::Frequency(hz) = config.rate {
        let rate = allowed_frequency(hz);
        if rate < hz {
            let limited = SamplingConfig {
                rate: Rate::Frequency(rate),
                ..config.clone()
            };
            return (
                std::borrow::Cow::Owned(limited),
                Some(Restriction::RateClamped {
                    asked: hz,
                    limit: max_sample_rate().unwrap_or(rate * 2),
                }),
            );
        }
    }
    (std::borrow::Cow::Borrowed(config), None)
}

/// Where to open the events: for the calling thread one per online CPU with inherit (so
/// the threads it starts are covered), and every other thread of the process already
/// running once (the drain thread left out); for another process, each of its threads
/// per CPU with inherit. `(target, inherit, tid)` each.
fn open_plan(target: Target, pid: u32, drain_tid: u32) -> Vec<(OpenTarget, bool, u32)> {
    let mut plan = Vec::new();
    let on_every_cpu = |plan: &mut Vec<(OpenTarget, bool, u32)>, tid: u32| {
        for cpu in online_cpus() {
            plan.push((
                OpenTarget::Task {
                    tid: tid as i32,
                    cpu: Some(cpu),
                },
                true,
                tid,
            ));
        }
    };
    match target {
        Target::CurrentThread => {
            let me = gettid();
            on_every_cpu(&mut plan, me);
            for tid in tasks_of(pid)
                .into_iter()
                .filter(|&t| t != me && t != drain_tid)
            {
                plan.push((
                    OpenTarget::Task {
                        tid: tid as i32,
                        cpu: None,
                    },
                    false,
                    tid,
                ));
            }
        }
        Target::Process(_) => {
            for tid in tasks_of(pid) {
                on_every_cpu(&mut plan, tid);
            }
        }
    }
    plan
}

/// Pages per ring buffer: the config's floor, or more to hold its `buffer_hold_ms` of
/// samples at its rate; fewer where all `buffers` would not fit in what the user may pin
/// (with the restriction that says so).
fn buffer_pages(
    config: &SamplingConfig,
    buffers: usize,
    system: &System,
) -> (crate::buffers::BufferPlan, Option<Restriction>) {
    // The kernel lets root (CAP_IPC_LOCK) and paranoid -1 pin without limit.
    let privileged = system.is_root || system.perf_event_paranoid < 0;
    let allowance = Allowance::read(privileged, online_cpus().len());
    let rate = config.bytes_per_second();
    let plan = crate::buffers::plan(
        rate,
        config.buffer_hold_ms,
        config.buffer_pages,
        buffers,
        allowance,
    );
    let limited = plan.limited_by.map(|limit| Restriction::SmallBuffers {
        kib: plan.pages * 4,
        buffers,
        hold_ms: plan.hold_ms,
        limit,
    });
    (plan, limited)
}

/// The session's error when no ring buffer opened: every event's refusal (by name where
/// there were several), and why threads were not covered.
fn not_opened(
    config: &SamplingConfig,
    opened: &[EventState],
    uncovered: Vec<Restriction>,
    pid: u32,
) -> Error {
    let mut reasons: Vec<String> = opened
        .iter()
        .filter_map(|s| s.refused.as_ref().map(|r| (s, r)))
        .map(|(s, r)| match config.events.len() {
            1 => r.clone(),
            _ => format!("{}: {r}", s.attr.name),
        })
        .collect();
    reasons.extend(uncovered.iter().map(ToString::to_string));
    Error::NotOpened { pid, reasons }
}

/// One event of a session while its events are opened, task by task.
struct EventState {
    /// The attr as opened: kernel mode dropped where the paranoid level refused it.
    attr: EventAttr,
    /// The precise level: the attr's, or with `:P` the highest the kernel accepted.
    precise: u8,
    /// `:P` and not opened yet: a refusal lowers the level and tries again.
    probing: bool,
    /// Its counting-only group leader, as opened.
    leader: Option<EventAttr>,
    /// The id of each opened instance, and of its leader.
    ids: Vec<u64>,
    leader_ids: Vec<u64>,
    /// Whether it owns a ring buffer somewhere, and so records mappings, names and
    /// tasks there (on a hybrid machine, the first event of each PMU's CPUs).
    tracks: bool,
    /// Why it could not be opened where first tried: it is left out of the session.
    refused: Option<String>,
    /// Its own period, where it has one ([`SampledEvent::period`]).
    period: Option<u64>,
}

/// Opening a session's events on each of its tasks (and CPUs): per task, the first event
/// that opens gets the ring buffer, and the others write into it.
struct Opening {
    events: Vec<EventState>,
    restrictions: Vec<Restriction>,
    uncovered: Vec<Restriction>,
}

/// Whether a refusal is the paranoid level's, which kernel mode alone would lift: then
/// `attr` is switched to user mode only, said once, and the open is tried again.
fn user_mode_only(
    attr: &mut EventAttr,
    errno: i32,
    restrictions: &mut Vec<Restriction>,
    system: &System,
) -> bool {
    if !matches!(errno, errno::EACCES | errno::EPERM) || attr.exclude_kernel {
        return false;
    }
    // paranoid 2 allows user-mode sampling of one's own processes.
    attr.exclude_kernel = true;
    attr.exclude_hv = true;
    restrictions.push(Restriction::UserModeOnly {
        paranoid: system.perf_event_paranoid,
    });
    true
}

/// Opens with `build` at `precise`: where the paranoid level refuses kernel mode, again
/// for user mode only (said once); while `probing` (`:P`), at each lower precise level
/// in turn. The errno of the last refusal.
fn open_retrying(
    attr: &mut EventAttr,
    precise: &mut u8,
    probing: bool,
    restrictions: &mut Vec<Restriction>,
    system: &System,
    mut build: impl FnMut(&EventAttr, u8) -> std::io::Result<Counter>,
) -> Result<Counter, i32> {
    loop {
        let errno = match build(attr, *precise) {
            Ok(c) => return Ok(c),
            Err(e) => sys::errno_of(&e),
        };
        if user_mode_only(attr, errno, restrictions, system) {
            continue;
        }
        if probing && *precise > 0 && !matches!(errno, errno::ESRCH | errno::EMFILE) {
            *precise -= 1;
            continue;
        }
        return Err(errno);
    }
}

impl Opening {
    fn new(config: &SamplingConfig) -> Opening {
        let events = config
            .events
            .iter()
            .map(|e| EventState {
                attr: e.attr.clone(),
                precise: if e.attr.precise_max {
                    e.attr.precise_ip.max(3)
                } else {
                    e.attr.precise_ip
                },
                probing: e.attr.precise_max,
                leader: e.leader.clone(),
                ids: Vec::new(),
                leader_ids: Vec::new(),
                tracks: false,
                refused: None,
                period: e.period,
            })
            .collect();
        Opening {
            events,
            restrictions: Vec::new(),
            uncovered: Vec::new(),
        }
    }

    /// Opens every event that counts on `target`'s CPU: the ring buffer and the other
    /// counters to keep open, or `None` where none opened (the thread exited, or every
    /// event was refused, which is said). An error ends the session.
    fn open_target(
        &mut self,
        config: &SamplingConfig,
        target: OpenTarget,
        inherit: bool,
        tid: u32,
        map_bytes: usize,
        system: &System,
    ) -> Result<Option<(Ring, Vec<Counter>)>, Error> {
        let cpu = match target {
            OpenTarget::Task { cpu, .. } => cpu,
            _ => None,
        };
        let mut ring: Option<Ring> = None;
        let mut more = Vec::new();
        let mut got: Vec<(usize, u64, Option<u64>)> = Vec::new();
        for (i, event) in config.events.iter().enumerate() {
            if let (Some(cpu), Some(cpus)) = (cpu, &event.cpus) {
                if !cpus.contains(&cpu) {
                    continue;
                }
            }
            let state = &mut self.events[i];
            if state.refused.is_some() {
                continue;
            }
            let mut leader = match state.leader.as_mut() {
                None => None,
                Some(l) => {
                    let opened =
                        open_retrying(l, &mut 0, false, &mut self.restrictions, system, |a, _| {
                            Counter::open(&config.leader_attr(a, inherit), target, None)
                        });
                    match opened {
                        Ok(c) => Some(c),
                        Err(errno::ESRCH) => return Ok(None),
                        Err(errno) => {
                            let why = format!(
                                "its group leader {}: {}",
                                l.name,
                                explain(errno, l, 0, OpenMode::Counting, system)
                            );
                            self.refuse(i, inherit, tid, why);
                            continue;
                        }
                    }
                }
            };
            let tracking = ring.is_none();
            let period = event.period;
            let opened = open_retrying(
                &mut state.attr,
                &mut state.precise,
                state.probing,
                &mut self.restrictions,
                system,
                |a, precise| {
                    let attr =
                        config.sampling_attr(map_bytes, a, precise, inherit, tracking, period);
                    Counter::open(&attr, target, leader.as_mut())
                },
            );
            let counter = match opened {
                Ok(c) => c,
                // A thread that exited between listing and opening is not a loss.
                Err(errno::ESRCH) => return Ok(None),
                Err(errno) => {
                    let state = &self.events[i];
                    let why = explain(
                        errno,
                        &state.attr,
                        state.precise,
                        OpenMode::Sampling { period: 1 },
                        system,
                    );
                    self.refuse(i, inherit, tid, why);
                    continue;
                }
            };
            state.probing = false;
            let id = counter.id();
            match ring.as_ref() {
                None => match counter.into_ring(map_bytes) {
                    Ok(s) => ring = Some(s),
                    Err(e) => {
                        let reason = if sys::errno_of(&e) == errno::EPERM {
                            format!(
                                "ring buffer of {} KiB refused: over perf_event_mlock_kb (sysctl kernel.perf_event_mlock_kb, or a smaller --profile buffer)",
                                map_bytes / 1024
                            )
                        } else {
                            format!("ring buffer mmap failed: {e}")
                        };
                        if self.events.iter().all(|e| e.ids.is_empty()) {
                            return Err(Error::RingBuffer { tid, reason });
                        }
                        self.uncovered.push(Restriction::Uncovered {
                            tid,
                            event: None,
                            reason,
                        });
                        return Ok(None);
                    }
                },
                Some(r) => {
                    if let Err(e) = counter.write_into(r) {
                        let why = format!(
                            "its records cannot join the ring buffer (PERF_EVENT_IOC_SET_OUTPUT: {e})"
                        );
                        self.refuse(i, inherit, tid, why);
                        continue;
                    }
                    more.push(counter);
                }
            }
            got.push((i, id, leader.as_ref().map(|l| l.id())));
            more.extend(leader);
        }
        let Some(ring) = ring else {
            return Ok(None);
        };
        // The first event opened here owns the ring buffer.
        if let Some(&(i, _, _)) = got.first() {
            self.events[i].tracks = true;
        }
        for (i, id, leader) in got {
            self.events[i].ids.push(id);
            self.events[i].leader_ids.extend(leader);
        }
        Ok(Some((ring, more)))
    }

    /// An event refused on a task: where it never opened, it is left out of the session
    /// with the reason; else that task is not covered by it.
    fn refuse(&mut self, i: usize, inherit: bool, tid: u32, why: String) {
        let state = &mut self.events[i];
        if inherit && state.ids.is_empty() && state.refused.is_none() {
            self.restrictions.push(Restriction::NotSampled {
                event: state.attr.name.clone(),
                reason: why.clone(),
            });
            state.refused = Some(why);
        } else {
            self.uncovered.push(Restriction::Uncovered {
                tid,
                event: Some(state.attr.name.clone()),
                reason: why,
            });
        }
    }
}

/// The capture writer for the events opened (each leader just before its event), and the
/// id synthesized records carry: the tracking event's.
fn events_writer(config: &SamplingConfig, opened: &[EventState]) -> (CaptureWriter, u64) {
    let mut written: Vec<WrittenEvent> = Vec::new();
    let mut tracking = None;
    for state in opened.iter().filter(|s| !s.ids.is_empty()) {
        if let Some(l) = state
            .leader
            .as_ref()
            .filter(|_| !state.leader_ids.is_empty())
        {
            written.push(WrittenEvent {
                attr: stored_attr(l, 0, None, config, Role::Counting),
                ids: state.leader_ids.clone(),
                name: l.name.clone(),
            });
        }
        let role = if state.tracks {
            tracking = tracking.or(Some(state.ids[0]));
            Role::Tracking
        } else {
            Role::Sampling
        };
        written.push(WrittenEvent {
            attr: stored_attr(&state.attr, state.precise, state.period, config, role),
            ids: state.ids.clone(),
            name: state.attr.name.clone(),
        });
    }
    let first = written.remove(0);
    let mut writer = CaptureWriter::new(first.attr, first.ids, first.name);
    writer.more_events = written;
    (writer, tracking.unwrap_or(0))
}

/// What an event does in a capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Samples, and records mappings, names and tasks.
    Tracking,
    /// Samples.
    Sampling,
    /// Counts only (a group leader).
    Counting,
}

/// The attr as the capture stores it: the event plus the sampling fields.
fn stored_attr(
    e: &EventAttr,
    precise: u8,
    period: Option<u64>,
    config: &SamplingConfig,
    role: Role,
) -> Attr {
    let tracking = role == Role::Tracking;
    let counting = role == Role::Counting;
    let mut flags =
        flag::DISABLED | flag::SAMPLE_ID_ALL | (u64::from(precise) << flag::PRECISE_SHIFT);
    for (set, bit) in [
        (
            tracking,
            flag::MMAP | flag::COMM | flag::TASK | flag::MMAP2 | flag::COMM_EXEC,
        ),
        (e.exclude_user, flag::EXCLUDE_USER),
        (e.exclude_kernel, flag::EXCLUDE_KERNEL),
        (e.exclude_hv, flag::EXCLUDE_HV),
        (e.exclude_guest, flag::EXCLUDE_GUEST),
        (e.exclude_host, flag::EXCLUDE_HOST),
        (
            !counting && period.is_none() && matches!(config.rate, Rate::Frequency(_)),
            flag::FREQ,
        ),
        (tracking && config.context_switches, flag::CONTEXT_SWITCH),
        (
            tracking
                && (config.memory.is_some() || matches!(config.call_graph, CallGraph::Dwarf(_))),
            flag::MMAP_DATA,
        ),
        (
            matches!(config.call_graph, CallGraph::Dwarf(_)),
            flag::EXCLUDE_CALLCHAIN_USER,
        ),
    ] {
        if set {
            flags |= bit;
        }
    }
    Attr {
        type_: e.type_,
        size: 128,
        config: e.config,
        sample_period_or_freq: match (role, period, config.rate) {
            (Role::Counting, _, _) => 0,
            (_, Some(p), _) => p,
            (_, None, Rate::Frequency(hz)) => hz,
            (_, None, Rate::Period(p)) => p,
        },
        sample_type: config.sample_type(),
        flags,
        config1: e.config1,
        config2: e.config2,
        sample_regs_user: if matches!(config.call_graph, CallGraph::Dwarf(_)) {
            USER_REGS_MASK
        } else {
            0
        },
        sample_stack_user: match config.call_graph {
            CallGraph::Dwarf(bytes) => bytes,
            CallGraph::FramePointer => 0,
        },
        ..Attr::default()
    }
}

/// Drains the ring buffers until stopped; `others` (events writing into them, and group
/// leaders) are kept open with them and disabled with them.
fn drain(
    mut samplers: Vec<Ring>,
    mut others: Vec<Counter>,
    stop: Arc<AtomicBool>,
    seed: CaptureWriter,
    mut modules: HitModules,
    compact: bool,
    resolve: Option<u32>,
) -> DrainResult {
    let format = SampleFormat::of(&seed.attr);
    let mut pages = resolve.map(crate::numa::page_table);
    let mut pending: Vec<(u32, u64)> = Vec::new();
    let mut writer = seed;
    writer.compact_stacks = compact;
    // A streamed capture is compressed and written by a thread of its own: the drain only
    // copies records out of the buffers (compacting stacks) and hands them over.
    let mut spool = None;
    if writer.is_streaming() {
        let mut compactor = writer.clone();
        compactor.data.clear();
        match Spool::start(std::mem::replace(&mut writer, compactor)) {
            Ok(s) => spool = Some(s),
            // No thread: the drain writes the file itself.
            Err(streaming) => writer = *streaming,
        }
    } else {
        // Address space only: pages are touched as records arrive.
        writer.data.reserve(256 << 20);
    }
    let mut result = DrainResult::default();
    let mut poll = Poll::new(&samplers);
    let mut throttling = Throttling::default();
    let mut finishing = false;
    loop {
        if !finishing {
            poll.wait(10);
        }
        for s in &mut samplers {
            s.drain(|type_, misc, body| {
                if let (kind::SAMPLE, Some(p)) = (type_, pages.as_mut()) {
                    if let Ok(sample) = Sample::parse(body, 8, &format) {
                        if let (Some(addr), Some(pid)) = (sample.addr, sample.pid) {
                            if addr != 0 && p.want(pid, addr) {
                                pending.push((pid, addr));
                            }
                        }
                    }
                }
                match type_ {
                    kind::SAMPLE => {
                        result.samples += 1;
                        if let Some(at) = format.time_in_sample {
                            throttling.saw(u64_at(body, at));
                        }
                    }
                    kind::LOST => result.lost += u64_at(body, 8),
                    kind::LOST_SAMPLES => result.lost_samples += u64_at(body, 0),
                    // { u64 time, id, stream_id }
                    kind::THROTTLE | kind::UNTHROTTLE => {
                        throttling.record(type_ == kind::THROTTLE, u64_at(body, 0), u64_at(body, 8))
                    }
                    _ => {}
                }
                modules.see(type_, misc, body, &format);
                writer.push_body(type_, misc, body);
            });
        }
        if let Some(s) = spool.as_mut() {
            s.hand_over(&mut writer.data);
        }
        if let Some(p) = pages.as_mut() {
            crate::numa::ask(p, &mut pending);
        }
        if finishing {
            break;
        }
        if stop.load(Ordering::Acquire) {
            for s in &mut samplers {
                let _ = s.disable();
            }
            for c in &mut others {
                let _ = c.disable();
            }
            finishing = true;
        }
    }
    result.pages = pages;
    result.throttled = throttling.finish();
    if let Some(s) = spool {
        let saved = writer.stack_bytes_saved;
        // The spool's thread panicked: the capture is lost, which `write` then says.
        writer = s.finish().unwrap_or(writer);
        writer.stack_bytes_saved += saved;
    }
    result.writer = Some(writer);
    result.modules = modules;
    result
}

/// The thread that compresses and writes a streamed capture's records as the drain hands
/// them over: a drain that waited on zstd or the disk would let the ring buffers fill.
struct Spool {
    records: std::sync::mpsc::SyncSender<Vec<u8>>,
    /// Buffers the thread is done with, to be filled again.
    spare: std::sync::mpsc::Receiver<Vec<u8>>,
    handle: JoinHandle<Option<CaptureWriter>>,
}

/// Batches of records waiting for the spool's thread, at most: a drain that gets this far
/// ahead of the disk waits (and the ring buffers count what they then lose).
const SPOOL_DEPTH: usize = 16;

impl Spool {
    /// Starts the thread with the streaming `writer`; hands it back where no thread starts.
    fn start(writer: CaptureWriter) -> Result<Spool, Box<CaptureWriter>> {
        let (records, incoming) = std::sync::mpsc::sync_channel::<Vec<u8>>(SPOOL_DEPTH);
        let (done, spare) = std::sync::mpsc::channel::<Vec<u8>>();
        // The writer goes over once the thread runs, so a failed start keeps it here.
        let (give, take) = std::sync::mpsc::channel::<CaptureWriter>();
        let started = std::thread::Builder::new()
            .name("sparkles-spool".into())
            .spawn(move || {
                let mut writer = take.recv().ok()?;
                for mut batch in incoming {
                    writer.push_records(&batch);
                    batch.clear();
                    let _ = done.send(batch);
                }
                Some(writer)
            });
        match started {
            Ok(handle) => match give.send(writer) {
                Ok(()) => Ok(Spool {
                    records,
                    spare,
                    handle,
                }),
                Err(e) => Err(Box::new(e.0)),
            },
            Err(_) => Err(Box::new(writer)),
        }
    }

    /// Hands the records in `data` to the thread, leaving `data` an empty buffer.
    fn hand_over(&mut self, data: &mut Vec<u8>) {
        if data.is_empty() {
            return;
        }
        let empty = self.spare.try_recv().unwrap_or_default();
        let batch = std::mem::replace(data, empty);
        let _ = self.records.send(batch);
    }

    /// Waits for every record to be written: the writer, to finish the file.
    fn finish(self) -> Option<CaptureWriter> {
        drop(self.records);
        self.handle.join().ok().flatten()
    }
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map(|s| u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]))
        .unwrap_or(0)
}

/// The file-backed mappings of a capture, and which of them samples hit, seen record by
/// record as they are written (a streamed capture is not read back).
#[derive(Debug, Default)]
struct HitModules {
    /// `(pid, start, end, file)`, in the order mapped.
    maps: Vec<(u32, u64, u64, usize)>,
    files: Vec<String>,
    /// Per file: whether a sample hit it.
    hit: Vec<bool>,
    /// The mapping hit last (samples come in runs).
    last: Option<usize>,
    /// Whether a sample was taken in the kernel.
    kernel: bool,
}

impl HitModules {
    fn see(&mut self, type_: u32, misc_bits: u16, body: &[u8], format: &SampleFormat) {
        match type_ {
            kind::MMAP | kind::MMAP2 => {
                let header = RecordHeader {
                    type_,
                    misc: misc_bits,
                    size: (8 + body.len()) as u16,
                };
                let Ok((Record::Mmap(m), _)) = parse_record(header, body, 0, Some(format)) else {
                    return;
                };
                if m.filename.starts_with(b"[") || m.filename.starts_with(b"//") {
                    return;
                }
                let name = String::from_utf8_lossy(m.filename);
                let file = match self.files.iter().position(|f| *f == name) {
                    Some(i) => i,
                    None => {
                        self.files.push(name.into_owned());
                        self.hit.push(false);
                        self.files.len() - 1
                    }
                };
                self.maps.push((m.pid, m.addr, m.addr + m.len, file));
            }
            kind::SAMPLE if misc_bits & misc::CPUMODE_MASK == 1 => self.kernel = true,
            kind::SAMPLE => {
                let Ok(s) = Sample::parse(body, 8, format) else {
                    return;
                };
                let (Some(pid), Some(ip)) = (s.pid, s.ip) else {
                    return;
                };
                let covers = |m: &(u32, u64, u64, usize)| m.0 == pid && m.1 <= ip && ip < m.2;
                if self.last.is_some_and(|i| covers(&self.maps[i])) {
                    return;
                }
                // The latest mapping of an address is the one in force.
                self.last = self.maps.iter().rposition(covers);
                if let Some(i) = self.last {
                    self.hit[self.maps[i].3] = true;
                }
            }
            _ => {}
        }
    }

    /// `(pid, build id, path)` of every file-backed mapping some sample hit, and of the
    /// kernel when a sample was taken in it.
    fn build_ids(&self) -> Vec<(i32, Vec<u8>, String)> {
        let mut out = Vec::new();
        for (file, _) in self.files.iter().zip(&self.hit).filter(|(_, hit)| **hit) {
            if let Some(id) = file_build_id(file) {
                out.push((-1, id, file.clone()));
            }
        }
        if self.kernel {
            if let Some(id) = sparkles_perf_data::build_id::running_kernel() {
                out.push((-1, id, "[kernel.kallsyms]".to_string()));
            }
        }
        out
    }
}

/// The GNU build id of the ELF file at `path`, where it has one.
pub fn file_build_id(path: &str) -> Option<Vec<u8>> {
    use object::Object;
    let bytes = std::fs::read(path).ok()?;
    let file = object::File::parse(&*bytes).ok()?;
    file.build_id().ok().flatten().map(|b| b.to_vec())
}

/// Polls a condition until it holds or `timeout` passes (for tests and the record loop).
pub fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    while std::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    done()
}

impl Drop for Session {
    /// A session dropped without `finish` (the profiled body panicked) still stops its
    /// events and its drain thread.
    fn drop(&mut self) {
        if self.drain.is_some() {
            let _ = self.finish_capture();
        }
    }
}
