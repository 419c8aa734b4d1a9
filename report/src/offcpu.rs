//! Off-CPU time: where the sampled threads waited, and why, from a capture with
//! SWITCH records (`sparkles record --off-cpu`, `--profile=wall`).
//!
//! Each thread runs from a switch-in to its next switch-out and waits from a switch-out
//! to its next switch-in (a wait still open when the capture ends is closed there; a
//! thread first seen waiting is not counted before its first switch-in). Each wait goes
//! to a blocking stack and a reason:
//! - with `sched:sched_switch` samples, the stack at the switch-out and the state the
//!   tracepoint gives (`prev_state`, read at the offset the capture's TRACING_DATA says):
//!   `preempted` (runnable: preempted, or yielded), `sleep` (interruptible: a lock, a
//!   channel, a sleep, a poll), `io` (uninterruptible: disk, page-in), `other` (stopped,
//!   traced, dead);
//! - with switch records only, the thread's last on-CPU sample's stack, under a frame
//!   `[last on-CPU stack]`, and `preempted` where the record says so, else `blocked`
//!   (sleep and I/O cannot be told apart there).
//!
//! The syscall a wait is in comes from the kernel frames of its stack
//! (`__x64_sys_futex` → `futex`), else from the libc function it was called through.
//! The function a wait is charged to is the innermost frame of the program's own code
//! (not the kernel, not a library, not std): a lock's call site, the function that
//! sleeps.
//!
//! The wall-clock profile weighs every stack in nanoseconds of thread time: an on-CPU
//! sample its share of its thread's measured on-CPU time, a wait its length, under a
//! frame `[off-cpu: REASON]`.

use std::rc::Rc;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::stacks::{kind_of, Kind};
use crate::stacks::{NamedFrame, NamedStack, StackNamer};

pub use crate::stacks::LAST_ON_CPU;

/// Where the off-CPU stacks came from.
pub const SOURCE_SCHED_SWITCH: &str = "sched_switch";
/// Switch records only.
pub const SOURCE_SWITCH_RECORDS: &str = "switch_records";

/// Time spent for one reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasonRow {
    /// `preempted`, `sleep`, `io`, `blocked`, `other`.
    pub reason: String,
    /// Thread-seconds.
    pub seconds: f64,
    /// Of all thread time (on- and off-CPU), 0–1.
    pub share: f64,
}

/// Off-CPU time in one syscall.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyscallRow {
    /// Its name (`futex`, `clock_nanosleep`, `read`).
    pub syscall: String,
    /// Thread-seconds.
    pub seconds: f64,
    /// Of all thread time, 0–1.
    pub share: f64,
}

/// Off-CPU time charged to one function (the innermost frame of the program's code).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitFunction {
    /// The function.
    pub name: String,
    /// Its module.
    pub module: Option<String>,
    /// Its source file.
    pub file: Option<String>,
    /// The line it waited at (the call that blocked), the longest-waited one.
    pub line: Option<u32>,
    /// Thread-seconds.
    pub seconds: f64,
    /// Of all thread time, 0–1.
    pub share: f64,
}

/// A profile's `offcpu` section (pinned keys: `source`, `on_cpu_seconds`,
/// `off_cpu_seconds`, `reasons`, `functions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffCpu {
    /// `sched_switch` or `switch_records`.
    pub source: String,
    /// Thread-seconds on a CPU.
    pub on_cpu_seconds: f64,
    /// Thread-seconds waiting.
    pub off_cpu_seconds: f64,
    /// `off / (on + off)`.
    pub off_cpu_share: f64,
    /// By reason, longest first.
    pub reasons: Vec<ReasonRow>,
    /// By function, longest first (at most [`FUNCTIONS`]).
    pub functions: Vec<WaitFunction>,
    /// By syscall, where known, longest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub syscalls: Vec<SyscallRow>,
    /// Waits counted.
    pub waits: u64,
    /// Threads that ran or waited.
    pub threads: u64,
}

/// The section without its functions: what a bench row's `profile.offcpu` carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffCpuRow {
    /// `sched_switch` or `switch_records`.
    pub source: String,
    /// Thread-seconds on a CPU.
    pub on_cpu_seconds: f64,
    /// Thread-seconds waiting.
    pub off_cpu_seconds: f64,
    /// `off / (on + off)`.
    pub off_cpu_share: f64,
    /// By reason, longest first.
    pub reasons: Vec<ReasonRow>,
    /// By syscall, where known, longest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub syscalls: Vec<SyscallRow>,
    /// The function waited in longest, where there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_wait: Option<String>,
}

impl From<&OffCpu> for OffCpuRow {
    fn from(o: &OffCpu) -> OffCpuRow {
        OffCpuRow {
            source: o.source.clone(),
            on_cpu_seconds: o.on_cpu_seconds,
            off_cpu_seconds: o.off_cpu_seconds,
            off_cpu_share: o.off_cpu_share,
            reasons: o.reasons.clone(),
            syscalls: o.syscalls.iter().take(5).cloned().collect(),
            top_wait: o.functions.first().map(|f| f.name.clone()),
        }
    }
}

impl OffCpuRow {
    /// The line under a bench row: `off-CPU 41.2% of 1.02 s thread time: sleep 40.1%, …;
    /// longest in sleep_ms (clock_nanosleep)`.
    pub fn line(&self) -> String {
        let reasons = leading_reasons(&self.reasons);
        let mut line = format!(
            "off-CPU {:.1}% of {:.3} s thread time",
            self.off_cpu_share * 100.0,
            self.on_cpu_seconds + self.off_cpu_seconds
        );
        if !reasons.is_empty() {
            line.push_str(&format!(": {}", reasons.join(", ")));
        }
        if let Some(f) = &self.top_wait {
            if self.source == SOURCE_SWITCH_RECORDS {
                line.push_str(&format!("; longest after {f} (its last on-CPU stack)"));
            } else {
                line.push_str(&format!("; longest in {f}"));
            }
            if let Some(c) = self.syscalls.first() {
                line.push_str(&format!(" ({})", c.syscall));
            }
        }
        line
    }
}

/// The three leading reasons with their shares: `sleep 40.1%`.
fn leading_reasons(reasons: &[ReasonRow]) -> Vec<String> {
    reasons
        .iter()
        .take(3)
        .map(|r| format!("{} {:.1}%", r.reason, r.share * 100.0))
        .collect()
}

/// Functions kept in the section.
pub const FUNCTIONS: usize = 50;

/// What a thread is doing, as far as the records say.
#[derive(Debug, Clone)]
enum State {
    /// Running since.
    On(u64),
    /// Waiting since, with what blocked it.
    Off(u64, Blocked),
}

/// Where and why a thread blocked.
#[derive(Debug, Clone)]
struct Blocked {
    stack: Option<Rc<NamedStack>>,
    /// The stack is the thread's last on-CPU sample's.
    last_on_cpu: bool,
    reason: &'static str,
}

#[derive(Debug, Default)]
struct Thread {
    state: Option<State>,
    on_ns: u64,
    /// The last on-CPU sample's stack.
    last: Option<Rc<NamedStack>>,
    /// A sched_switch sample taken at the coming switch-out: its stack and reason.
    pending: Option<(Rc<NamedStack>, &'static str)>,
    /// On-CPU samples' periods summed (what their share of `on_ns` is by).
    periods: u64,
}

/// One wait, for the wall-clock profile.
#[derive(Debug, Clone)]
pub struct Wait {
    /// When it ended.
    pub time: u64,
    /// Its length, ns.
    pub ns: u64,
    /// Its reason.
    pub reason: &'static str,
    /// Its blocking stack (innermost first), where one is known.
    pub stack: Option<Rc<NamedStack>>,
    /// The stack is the thread's last on-CPU one.
    pub last_on_cpu: bool,
}

/// One on-CPU sample, for the wall-clock profile.
#[derive(Debug, Clone, Copy)]
pub struct OnSample {
    /// Its thread.
    pub tid: u32,
    /// Its time.
    pub time: u64,
    /// Its namer's stack number.
    pub id: usize,
    /// Its period.
    pub period: u64,
}

/// What a function was charged: its frame (the first wait's), waited ns, and ns per line
/// where it blocked and where it was preempted.
#[derive(Default)]
struct Charged<'a> {
    frame: Option<&'a NamedFrame>,
    ns: u64,
    blocked: FxHashMap<u32, u64>,
    preempted: FxHashMap<u32, u64>,
}

/// Accumulates threads' switches, waits and on-CPU samples in time order.
#[derive(Debug)]
pub struct OffCpuBuilder {
    source: &'static str,
    threads: FxHashMap<u32, Thread>,
    /// Every wait, in order.
    pub waits: Vec<Wait>,
    /// Every on-CPU sample, in order.
    pub on_samples: Vec<OnSample>,
    /// The stacks on-CPU samples named, by number.
    pub stacks: FxHashMap<usize, Rc<NamedStack>>,
    last_time: u64,
}

/// A `prev_state` as a reason (Linux ≥ 4.14's report encoding: 0 running, bit 0 S,
/// bit 1 D, bit 7 I, 0x100 preempted).
pub fn reason_of_state(state: i64) -> &'static str {
    let s = state as u64;
    if s == 0 || s & 0x100 != 0 {
        "preempted"
    } else if s & 0x1 != 0 || s & 0x80 != 0 {
        "sleep"
    } else if s & 0x2 != 0 {
        "io"
    } else {
        "other"
    }
}

impl OffCpuBuilder {
    /// A builder for a capture whose waits are named by `source`
    /// ([`SOURCE_SCHED_SWITCH`] or [`SOURCE_SWITCH_RECORDS`]).
    pub fn new(source: &'static str) -> OffCpuBuilder {
        OffCpuBuilder {
            source,
            threads: FxHashMap::default(),
            waits: Vec::new(),
            on_samples: Vec::new(),
            stacks: FxHashMap::default(),
            last_time: 0,
        }
    }

    fn saw(&mut self, time: u64) {
        self.last_time = self.last_time.max(time);
    }

    /// An on-CPU sample of `tid` at `time`: its stack is the thread's latest.
    pub fn on_cpu_sample(
        &mut self,
        tid: u32,
        time: u64,
        id: usize,
        stack: &Rc<NamedStack>,
        period: u64,
    ) {
        self.saw(time);
        let t = self.threads.entry(tid).or_default();
        if t.state.is_none() {
            t.state = Some(State::On(time));
        }
        t.last = Some(stack.clone());
        t.periods += period;
        self.stacks.entry(id).or_insert_with(|| stack.clone());
        self.on_samples.push(OnSample {
            tid,
            time,
            id,
            period,
        });
    }

    /// A `sched:sched_switch` sample of `tid` (taken as it switches out): its stack and
    /// the state it left in.
    pub fn switch_sample(
        &mut self,
        tid: u32,
        time: u64,
        stack: &Rc<NamedStack>,
        state: Option<i64>,
    ) {
        self.saw(time);
        let reason = state.map_or("blocked", reason_of_state);
        let t = self.threads.entry(tid).or_default();
        match &mut t.state {
            // Its switch-out record came first: the wait it opened gets this stack.
            Some(State::Off(_, b)) if b.last_on_cpu || b.stack.is_none() => {
                b.stack = Some(stack.clone());
                b.last_on_cpu = false;
                if b.reason != "preempted" {
                    b.reason = reason;
                }
            }
            _ => t.pending = Some((stack.clone(), reason)),
        }
    }

    /// A SWITCH record of `tid`: out (and whether preempted) or in.
    pub fn switch(&mut self, tid: u32, time: u64, out: bool, preempt: bool) {
        self.saw(time);
        let t = self.threads.entry(tid).or_default();
        if out {
            if let Some(State::On(since)) = t.state {
                t.on_ns += time.saturating_sub(since);
            }
            let blocked = match t.pending.take() {
                Some((stack, reason)) => Blocked {
                    stack: Some(stack),
                    last_on_cpu: false,
                    reason: if preempt { "preempted" } else { reason },
                },
                None => Blocked {
                    stack: t.last.clone(),
                    last_on_cpu: true,
                    reason: if preempt { "preempted" } else { "blocked" },
                },
            };
            t.state = Some(State::Off(time, blocked));
        } else {
            if let Some(State::Off(since, b)) = t.state.take() {
                self.waits.push(Wait {
                    time,
                    ns: time.saturating_sub(since),
                    reason: b.reason,
                    stack: b.stack,
                    last_on_cpu: b.last_on_cpu,
                });
            }
            t.state = Some(State::On(time));
        }
    }

    /// `tid` exited at `time`.
    pub fn exit(&mut self, tid: u32, time: u64) {
        self.saw(time);
        if let Some(t) = self.threads.get_mut(&tid) {
            if let Some(State::On(since)) = t.state.take() {
                t.on_ns += time.saturating_sub(since);
            }
        }
    }

    /// Closes every thread at the capture's last timestamp: running ones count their
    /// time on CPU, waiting ones their wait.
    fn close(&mut self) {
        let end = self.last_time;
        let mut waits = Vec::new();
        for t in self.threads.values_mut() {
            match t.state.take() {
                Some(State::On(since)) => t.on_ns += end.saturating_sub(since),
                Some(State::Off(since, b)) => waits.push(Wait {
                    time: end,
                    ns: end.saturating_sub(since),
                    reason: b.reason,
                    stack: b.stack,
                    last_on_cpu: b.last_on_cpu,
                }),
                None => {}
            }
        }
        self.waits.extend(waits);
    }

    /// Each on-CPU sample's weight in ns: its period's share of its thread's measured
    /// on-CPU time.
    pub fn on_cpu_ns(&self, s: &OnSample) -> u64 {
        match self.threads.get(&s.tid) {
            Some(t) if t.periods > 0 => {
                (u128::from(t.on_ns) * u128::from(s.period) / u128::from(t.periods)) as u64
            }
            _ => 0,
        }
    }

    /// The section, with the waits and samples kept for the wall-clock profile.
    pub fn finish(&mut self) -> OffCpu {
        self.close();
        let on: u64 = self.threads.values().map(|t| t.on_ns).sum();
        let off: u64 = self.waits.iter().map(|w| w.ns).sum();
        let all = (on + off).max(1) as f64;
        let secs = |ns: u64| ns as f64 / 1e9;
        let mut reasons: FxHashMap<&str, u64> = FxHashMap::default();
        let mut syscalls: FxHashMap<String, u64> = FxHashMap::default();
        // By function: its waited ns, and per line.
        let mut functions: FxHashMap<String, Charged<'_>> = FxHashMap::default();
        for w in &self.waits {
            *reasons.entry(w.reason).or_default() += w.ns;
            let frames = w.stack.as_deref().map_or(&[][..], |s| s.frames.as_slice());
            if !w.last_on_cpu {
                if let Some(name) = syscall_of(frames) {
                    *syscalls.entry(name).or_default() += w.ns;
                }
            }
            let f = waiting_frame(frames);
            let name = f
                .and_then(|f| f.function.as_deref())
                .map_or_else(|| "[unknown]".to_string(), crate::names::normalize);
            let e = functions.entry(name).or_insert_with(|| Charged {
                frame: f,
                ..Charged::default()
            });
            e.ns += w.ns;
            if let Some(line) = f.and_then(|f| f.line) {
                // The line a function waited at is where it blocked: a preemption (on a
                // busy machine, inside any call, a futex wake's included) is charged to
                // the function but names its line only where it never blocked.
                let lines = if w.reason == "preempted" {
                    &mut e.preempted
                } else {
                    &mut e.blocked
                };
                *lines.entry(line).or_default() += w.ns;
            }
        }
        let reasons: Vec<ReasonRow> = longest_first(reasons)
            .into_iter()
            .map(|(reason, ns)| ReasonRow {
                reason: reason.to_string(),
                seconds: secs(ns),
                share: ns as f64 / all,
            })
            .collect();
        let syscalls: Vec<SyscallRow> = longest_first(syscalls)
            .into_iter()
            .map(|(syscall, ns)| SyscallRow {
                syscall,
                seconds: secs(ns),
                share: ns as f64 / all,
            })
            .collect();
        let mut functions: Vec<WaitFunction> = functions
            .into_iter()
            .map(|(name, c)| WaitFunction {
                module: c
                    .frame
                    .and_then(|f| f.module.as_deref().map(str::to_string)),
                file: c.frame.and_then(|f| f.file.as_deref().map(str::to_string)),
                line: if c.blocked.is_empty() {
                    &c.preempted
                } else {
                    &c.blocked
                }
                .iter()
                .max_by_key(|(line, ns)| (**ns, std::cmp::Reverse(**line)))
                .map(|(l, _)| *l),
                name,
                seconds: secs(c.ns),
                share: c.ns as f64 / all,
            })
            .collect();
        functions.sort_by(|a, b| b.seconds.total_cmp(&a.seconds).then(a.name.cmp(&b.name)));
        functions.truncate(FUNCTIONS);
        OffCpu {
            source: self.source.to_string(),
            on_cpu_seconds: secs(on),
            off_cpu_seconds: secs(off),
            off_cpu_share: off as f64 / all,
            reasons,
            functions,
            syscalls,
            waits: self.waits.len() as u64,
            threads: self
                .threads
                .values()
                .filter(|t| t.on_ns > 0 || t.periods > 0)
                .count() as u64,
        }
    }

    /// A wait's frames for the wall-clock profile (innermost first): `[off-cpu: REASON]`,
    /// `[last on-CPU stack]` where that is what the stack is, then the stack.
    pub fn wait_frames(namer: &mut StackNamer, w: &Wait) -> Vec<NamedFrame> {
        let mut frames = vec![pseudo_frame(namer, &format!("[off-cpu: {}]", w.reason))];
        if w.last_on_cpu {
            frames.push(pseudo_frame(namer, LAST_ON_CPU));
        }
        if let Some(s) = &w.stack {
            frames.extend(s.frames.iter().cloned());
        }
        frames
    }
}

impl OffCpu {
    /// One line: the shares of thread time on and off CPU, and the leading reasons.
    pub fn summary(&self) -> String {
        let reasons = leading_reasons(&self.reasons);
        format!(
            "off-CPU {:.1}% of {:.3} s thread time (on-CPU {:.3} s, {} waits{}{})",
            self.off_cpu_share * 100.0,
            self.on_cpu_seconds + self.off_cpu_seconds,
            self.on_cpu_seconds,
            self.waits,
            if reasons.is_empty() { "" } else { ": " },
            reasons.join(", ")
        )
    }
}

/// The section as text: the summary, by syscall, and the top `n` waiting functions.
pub fn table(o: &OffCpu, n: usize) -> String {
    let mut out = format!("\noff-CPU ({})\n{}\n", o.source, o.summary());
    if !o.syscalls.is_empty() {
        let calls: Vec<String> = o
            .syscalls
            .iter()
            .take(5)
            .map(|c| format!("{} {:.1}%", c.syscall, c.share * 100.0))
            .collect();
        out.push_str(&format!("in syscalls: {}\n", calls.join(", ")));
    }
    if !o.functions.is_empty() {
        let heading = if o.source == SOURCE_SWITCH_RECORDS {
            "waiting after (the thread's last on-CPU stack: where it blocked is not known)"
        } else {
            "waiting in"
        };
        out.push_str(&format!("{:>7} {:>9}  {heading}\n", "share", "seconds"));
        for f in o.functions.iter().take(n) {
            let at = match (&f.file, f.line) {
                (Some(file), Some(line)) => format!("  {file}:{line}"),
                _ => String::new(),
            };
            out.push_str(&format!(
                "{:>6.2}% {:>9.4}  {}{at}\n",
                f.share * 100.0,
                f.seconds,
                f.name
            ));
        }
    }
    out
}

/// Time per key, longest first (ties by key).
fn longest_first<K: Ord>(by: FxHashMap<K, u64>) -> Vec<(K, u64)> {
    let mut rows: Vec<(K, u64)> = by.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    rows
}

fn pseudo_frame(namer: &mut StackNamer, name: &str) -> NamedFrame {
    NamedFrame {
        addr: 0,
        function: Some(namer.intern(name)),
        module: None,
        file: None,
        line: None,
        inlined: false,
        symbol: None,
        symbol_offset: None,
        missing: None,
    }
}

/// The frame a wait is charged to: the innermost of the program's own code, else the
/// innermost outside the kernel, else the innermost.
pub fn waiting_frame(frames: &[NamedFrame]) -> Option<&NamedFrame> {
    frames
        .iter()
        .find(|f| kind_of(f) == Kind::User)
        .or_else(|| {
            frames
                .iter()
                .find(|f| !matches!(kind_of(f), Kind::Kernel | Kind::Unknown))
        })
        .or(frames.first())
}

/// Kernel entry points of syscalls, by architecture, and what they are prefixed with.
const SYSCALL_PREFIXES: [&str; 5] = [
    "__x64_sys_",
    "__arm64_sys_",
    "__ia32_sys_",
    "__do_sys_",
    "__se_sys_",
];

/// libc functions that are one syscall each, as a wait's innermost library frame names
/// them (after `__GI___`, `__libc_`, leading underscores).
const LIBC_SYSCALLS: [&str; 22] = [
    "clock_nanosleep",
    "nanosleep",
    "read",
    "write",
    "pread64",
    "pwrite64",
    "readv",
    "writev",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "epoll_wait",
    "epoll_pwait",
    "recv",
    "recvfrom",
    "recvmsg",
    "accept",
    "accept4",
    "connect",
    "wait4",
    "pause",
];

/// The syscall a blocking stack is in: its kernel entry point, else its innermost libc
/// function where that is one syscall (a futex wait by any of glibc's names).
pub fn syscall_of(frames: &[NamedFrame]) -> Option<String> {
    for f in frames {
        let Some(name) = f.function.as_deref() else {
            continue;
        };
        if let Some(rest) = SYSCALL_PREFIXES.iter().find_map(|p| name.strip_prefix(p)) {
            return Some(rest.to_string());
        }
    }
    let lib = frames.iter().find(|f| kind_of(f) == Kind::Library)?;
    let name = lib.function.as_deref()?;
    let bare = name
        .trim_start_matches("__GI_")
        .trim_start_matches("__libc_")
        .trim_start_matches('_');
    let bare = bare.split('@').next().unwrap_or(bare);
    if bare.contains("futex") {
        return Some("futex".into());
    }
    LIBC_SYSCALLS
        .iter()
        .find(|s| bare == **s || bare.strip_suffix("64") == Some(s))
        .map(|s| s.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use super::*;

    #[test]
    fn states_are_reasons_as_the_kernel_reports_them() {
        assert_eq!(reason_of_state(0), "preempted");
        assert_eq!(reason_of_state(0x100), "preempted"); // R+
        assert_eq!(reason_of_state(1), "sleep"); // S
        assert_eq!(reason_of_state(2), "io"); // D
        assert_eq!(reason_of_state(0x80), "sleep"); // I
        assert_eq!(reason_of_state(4), "other"); // T
    }

    #[test]
    fn waits_run_from_switch_out_to_switch_in_and_threads_close_at_the_end() {
        let mut b = OffCpuBuilder::new(SOURCE_SWITCH_RECORDS);
        let stack = Rc::new(NamedStack::default());
        b.on_cpu_sample(7, 1_000, 0, &stack, 10);
        b.switch(7, 1_500, true, false); // on 500
        b.switch(7, 2_500, false, false); // off 1000, blocked
        b.switch(7, 3_000, true, true); // on 500
        b.switch(7, 3_200, false, false); // off 200, preempted
        b.on_cpu_sample(7, 3_500, 0, &stack, 10);
        // Thread 8 is first seen switching in: nothing before counts.
        b.switch(8, 3_000, false, false);
        b.switch(8, 3_400, true, false); // on 400; waits until the end (4_000): 600
        b.exit(7, 4_000); // on 800
        let s = b.finish();
        let ns = |s: f64| (s * 1e9).round() as u64;
        assert_eq!(ns(s.on_cpu_seconds), 2_200, "{s:?}");
        assert_eq!(ns(s.off_cpu_seconds), 1_800, "{s:?}");
        assert!((s.off_cpu_share - 0.45).abs() < 1e-12);
        let reasons: Vec<_> = s
            .reasons
            .iter()
            .map(|r| (r.reason.as_str(), ns(r.seconds)))
            .collect();
        assert_eq!(reasons, [("blocked", 1_600), ("preempted", 200)]);
        assert_eq!(s.waits, 3);
        // Each sample of thread 7 is half its 1800 ns on CPU.
        assert_eq!(b.on_cpu_ns(&b.on_samples[0]), 900);
    }

    #[test]
    fn a_function_waits_at_the_line_it_blocked_at_not_where_it_was_preempted() {
        let mut names = crate::names::Names::default();
        let mut frame =
            |function: &str, line: u32| crate::stacks::test_frame(&mut names, function, line);
        let stack = |f: NamedFrame| {
            Some(Rc::new(NamedStack {
                frames: vec![f],
                truncated: None,
            }))
        };
        let wait = |ns: u64, reason: &'static str, f: NamedFrame| Wait {
            time: 0,
            ns,
            reason,
            stack: stack(f),
            last_on_cpu: false,
        };
        let mut b = OffCpuBuilder::new(SOURCE_SWITCH_RECORDS);
        // take_lock blocked at its lock (line 39) for 10 µs; a busy machine preempted it
        // at its unlock's futex wake (line 41) for longer.
        b.waits
            .push(wait(10_000, "blocked", frame("take_lock", 39)));
        b.waits
            .push(wait(30_000, "preempted", frame("take_lock", 41)));
        // spin_us never blocked: its preemptions name its line.
        b.waits.push(wait(5_000, "preempted", frame("spin_us", 24)));
        let s = b.finish();
        let line = |name: &str| s.functions.iter().find(|f| f.name == name).unwrap().line;
        assert_eq!(line("take_lock"), Some(39), "{s:?}");
        assert_eq!(line("spin_us"), Some(24), "{s:?}");
        // The function is charged every wait, preempted or not.
        let take = s.functions.iter().find(|f| f.name == "take_lock").unwrap();
        assert_eq!((take.seconds * 1e9).round() as u64, 40_000);
    }
}
