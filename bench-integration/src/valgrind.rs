//! The valgrind tier: exact instruction counts where no PMU counts them.
//!
//! After every timing pass, each selected case is counted once more in a child process of
//! the bench executable run under `valgrind --tool=callgrind --collect-atstart=no` with
//! callgrind's cache and branch simulation. The child runs the case's setup uncollected,
//! one warm-up iteration, then `brackets` brackets, each two collected runs of the timed
//! loop (a base run of 1 iteration and a full run of `n + 1`) toggled on and off by client
//! requests around the loop only, each run dumped on its own (`CALLGRIND_DUMP_STATS_AT`).
//! A bracket's value per iteration is `(full - base) / n`: what the harness costs around
//! a run (the toggles, the clock reads, the loop's entry and exit) is the same in both runs
//! and cancels, so what is left is the body's own cost per iteration and the loop's step,
//! exactly, since callgrind counts every guest instruction, whatever `n` the timing chose.
//! Setup, the harness, other threads and the warm-up are never collected.
//!
//! The child is the bench executable run again with the same arguments (a test harness
//! says how to rerun its test with [`crate::Suite::reexec_with`]); [`CHILD_ENV`] in its
//! environment carries the request, and [`crate::run`] serves it before anything else.

use std::ffi::{CString, OsStr, OsString};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::metric::{
    Availability, MetricClass, MetricDescriptor, MetricFormat, MetricValue, Source,
};

/// Set in the child's environment: the [`ChildRequest`] as JSON.
pub const CHILD_ENV: &str = "SPARKLES_VALGRIND_CHILD";

/// The valgrind program to run, where it is not `valgrind` on `PATH` (a path, or a name
/// looked up on `PATH`).
pub const PROGRAM_ENV: &str = "SPARKLES_VALGRIND";

/// Native time the collected runs of one case take together (all brackets): under
/// callgrind's cache and branch simulation, about 50 to 100 times longer.
const COLLECTED_BUDGET: Duration = Duration::from_millis(10);

/// Client requests: the instruction sequence valgrind.h documents, which valgrind's JIT
/// recognizes and a CPU runs as a no-op (the rotations sum to whole turns).
mod request {
    /// `VG_USERREQ__RUNNING_ON_VALGRIND`.
    pub const RUNNING_ON_VALGRIND: u64 = 0x1001;
    /// callgrind's requests: `VG_USERREQ_TOOL_BASE('C', 'T')` and on.
    const CALLGRIND: u64 = ((b'C' as u64) << 24) | ((b'T' as u64) << 16);
    pub const ZERO_STATS: u64 = CALLGRIND + 1;
    pub const TOGGLE_COLLECT: u64 = CALLGRIND + 2;
    pub const DUMP_STATS_AT: u64 = CALLGRIND + 3;
    pub const START_INSTRUMENTATION: u64 = CALLGRIND + 4;
    pub const STOP_INSTRUMENTATION: u64 = CALLGRIND + 5;

    /// Whether client requests are implemented for this target.
    pub const SUPPORTED: bool = cfg!(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ));

    /// Issues request `code` with `args`; `default` where not under valgrind.
    #[inline(always)]
    pub fn send(code: u64, args: [u64; 5], default: u64) -> u64 {
        let block: [u64; 6] = [code, args[0], args[1], args[2], args[3], args[4]];
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        {
            let result: u64;
            // SAFETY: the sequence only rotates rdi by whole turns and exchanges rbx with
            // itself; valgrind reads `block` (alive across the asm) and writes rdx.
            unsafe {
                std::arch::asm!(
                    "rol rdi, 3",
                    "rol rdi, 13",
                    "rol rdi, 61",
                    "rol rdi, 51",
                    "xchg rbx, rbx",
                    in("rax") block.as_ptr(),
                    inlateout("rdx") default => result,
                    options(nostack),
                );
            }
            result
        }
        #[cfg(all(target_os = "linux", target_arch = "aarch64"))]
        {
            let result: u64;
            // SAFETY: as above: x12 rotated by whole turns, x10 or-ed with itself.
            unsafe {
                std::arch::asm!(
                    "ror x12, x12, #3",
                    "ror x12, x12, #13",
                    "ror x12, x12, #51",
                    "ror x12, x12, #61",
                    "orr x10, x10, x10",
                    in("x4") block.as_ptr(),
                    inlateout("x3") default => result,
                    options(nostack),
                );
            }
            result
        }
        #[cfg(not(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        )))]
        {
            let _ = block;
            default
        }
    }
}

/// Whether this process runs under valgrind.
pub fn running_on_valgrind() -> bool {
    request::send(request::RUNNING_ON_VALGRIND, [0; 5], 0) != 0
}

/// Turns callgrind's collection on where it is off, off where it is on (this thread's).
#[inline(always)]
pub(crate) fn toggle_collect() {
    request::send(request::TOGGLE_COLLECT, [0; 5], 0);
}

/// Starts callgrind's instrumentation (`--instr-atstart=no` leaves the process's start
/// and the case's setup running at valgrind's bare speed, several times faster).
pub(crate) fn start_instrumentation() {
    request::send(request::START_INSTRUMENTATION, [0; 5], 0);
}

/// Stops callgrind's instrumentation: the next case's setup runs at bare speed again.
pub(crate) fn stop_instrumentation() {
    request::send(request::STOP_INSTRUMENTATION, [0; 5], 0);
}

/// Zeroes callgrind's counts since the last dump.
pub(crate) fn zero_stats() {
    request::send(request::ZERO_STATS, [0; 5], 0);
}

/// Dumps callgrind's counts since the last dump to a file of its own, labelled `label`.
pub(crate) fn dump_stats_at(label: &str) {
    let label = CString::new(label).unwrap_or_default();
    request::send(
        request::DUMP_STATS_AT,
        [label.as_ptr() as u64, 0, 0, 0, 0],
        0,
    );
}

/// The label of case `case`'s bracket `bracket`: its full run (`n + 1` iterations) or its
/// base run (1), as dumped.
pub(crate) fn dump_label(case: u32, bracket: u32, full: bool) -> String {
    format!(
        "sparkles {case} {bracket} {}",
        if full { "full" } else { "base" }
    )
}

/// What the parent asks of the child: every case of the run still to count, in order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ChildRequest {
    /// The suite's name: a bench executable may run several.
    pub suite: String,
    /// The cases, each with its index in the parent's run.
    pub cases: Vec<ChildCase>,
    /// Brackets, each a base and a full run.
    pub brackets: u32,
    /// Where the child marks each case started and done ([`marker`]).
    pub dir: PathBuf,
}

/// One case of a [`ChildRequest`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ChildCase {
    /// Its index in the parent's run: its dumps' and markers' key.
    pub index: u32,
    /// The case's exact name.
    pub name: String,
    /// A bracket's full run is this many iterations longer than its base run.
    pub iterations: u64,
}

/// The marker file of case `index`: `started` (empty) when the child begins it, `done`
/// (empty, or why the case failed) when it is over.
pub(crate) fn marker(dir: &Path, index: u32, what: &str) -> PathBuf {
    dir.join(format!("case-{index}.{what}"))
}

/// Writes marker `what` of case `index`, whole (a temporary file renamed into place).
pub(crate) fn write_marker(dir: &Path, index: u32, what: &str, text: &str) {
    let path = marker(dir, index, what);
    let temporary = path.with_extension("partial");
    if std::fs::write(&temporary, text).is_ok() {
        let _ = std::fs::rename(&temporary, &path);
    }
}

/// The request in this process's environment, where it is a child; a malformed one is
/// said and ends the process.
pub(crate) fn child_request() -> Option<ChildRequest> {
    let text = std::env::var_os(CHILD_ENV)?;
    match serde_json::from_str(&text.to_string_lossy()) {
        Ok(r) => Some(r),
        Err(e) => {
            eprintln!("sparkles: {CHILD_ENV} is not a valgrind child request: {e}");
            std::process::exit(3)
        }
    }
}

/// The valgrind program this run would use, or why there is none.
pub fn program() -> Result<PathBuf, String> {
    find_program(
        std::env::var_os(PROGRAM_ENV).as_deref(),
        std::env::var_os("PATH").as_deref(),
    )
}

/// valgrind as [`PROGRAM_ENV`] names it (`named`), else `valgrind` on `path`.
fn find_program(named: Option<&OsStr>, path: Option<&OsStr>) -> Result<PathBuf, String> {
    if !request::SUPPORTED {
        return Err(format!(
            "valgrind client requests are implemented for x86_64 and aarch64 Linux only (this is {} {})",
            std::env::consts::ARCH,
            std::env::consts::OS
        ));
    }
    let (name, from) = match named {
        Some(n) if !n.is_empty() => (PathBuf::from(n), PROGRAM_ENV),
        _ => (PathBuf::from("valgrind"), "PATH"),
    };
    if name.components().count() > 1 {
        return if executable(&name) {
            Ok(name)
        } else {
            Err(format!(
                "{} (from {from}) is not an executable file",
                name.display()
            ))
        };
    }
    path.into_iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(&name))
        .find(|p| executable(p))
        .ok_or_else(|| {
            format!(
                "{} not found on PATH (install valgrind: apt-get install valgrind; or name it in {PROGRAM_ENV})",
                name.display()
            )
        })
}

#[cfg(unix)]
fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn executable(p: &Path) -> bool {
    p.is_file()
}

/// The tier as `--capabilities` lists it.
pub fn capability() -> String {
    match program() {
        Ok(p) => format!(
            "valgrind (--instructions): available: {}: exact instruction counts and simulated cache and branch misses per iteration, each case in a child under callgrind",
            p.display()
        ),
        Err(why) => format!("valgrind (--instructions): absent: {why}"),
    }
}

/// The tier's metrics, available where [`program`] finds valgrind.
pub(crate) fn descriptors() -> Vec<MetricDescriptor> {
    let availability = match program() {
        Ok(_) => Availability::Available,
        Err(why) => Availability::Unavailable(why),
    };
    let d = |id: &'static str, header: &'static str, description: &'static str, class| {
        MetricDescriptor {
            id: id.into(),
            header: header.into(),
            description: description.into(),
            format: MetricFormat::Count,
            class,
            source: Source::Valgrind,
            default_visible: false,
            availability: availability.clone(),
        }
    };
    vec![
        d(
            "valgrind.instructions",
            "vg.instr",
            "instructions executed per iteration, counted exactly by callgrind (Ir)",
            MetricClass::Quantitative,
        ),
        d(
            "valgrind.l1_misses",
            "vg.L1miss",
            "simulated L1 misses per iteration, instruction and data (I1mr + D1mr + D1mw; the cache model is not this machine's)",
            MetricClass::Diagnostic,
        ),
        d(
            "valgrind.ll_misses",
            "vg.LLmiss",
            "simulated last-level cache misses per iteration (ILmr + DLmr + DLmw)",
            MetricClass::Diagnostic,
        ),
        d(
            "valgrind.branch_misses",
            "vg.brmiss",
            "simulated branch mispredictions per iteration, conditional and indirect (Bcm + Bim)",
            MetricClass::Diagnostic,
        ),
        d(
            "valgrind.estimated_cycles",
            "vg.est.cyc",
            "L1 hits + 5 x LL hits + 35 x RAM accesses per iteration, from the simulated caches (gungraun's estimate)",
            MetricClass::Diagnostic,
        ),
    ]
}

/// callgrind's event counts of one dump, by event name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Events(Vec<(String, u64)>);

impl Events {
    /// The count of `event`; 0 where the dump does not list it.
    pub fn get(&self, event: &str) -> u64 {
        self.0
            .iter()
            .find(|(e, _)| e == event)
            .map_or(0, |(_, v)| *v)
    }
}

/// One dump file: its trigger's label and its counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Dump {
    /// What `desc: Trigger:` says, less callgrind's `Client Request: ` prefix.
    pub trigger: String,
    /// The `summary:` line under the `events:` names (callgrind leaves trailing zeros
    /// out).
    pub events: Events,
}

/// Reads a callgrind dump's header: its trigger, event names and summary. `path` names
/// the file in errors.
pub fn parse_dump(text: &str, path: &Path) -> Result<Dump, String> {
    let mut trigger = None;
    let mut names: Option<Vec<&str>> = None;
    let mut summary: Option<&str> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(t) = line.strip_prefix("desc: Trigger:") {
            let t = t.trim();
            trigger = Some(t.strip_prefix("Client Request:").unwrap_or(t).trim());
        } else if let Some(e) = line.strip_prefix("events:") {
            names = Some(e.split_whitespace().collect());
        } else if let Some(s) = line.strip_prefix("summary:") {
            summary = Some(s);
        } else if line.starts_with("fn=") || line.starts_with("totals:") {
            // The header is over: costs follow.
            break;
        }
        if i > 10_000 {
            break;
        }
    }
    let names = names.ok_or_else(|| format!("{}: no 'events:' line", path.display()))?;
    let summary = summary.ok_or_else(|| format!("{}: no 'summary:' line", path.display()))?;
    let values = summary
        .split_whitespace()
        .map(|v| {
            v.parse::<u64>()
                .map_err(|_| format!("{}: summary value '{v}' is not a count", path.display()))
        })
        .collect::<Result<Vec<u64>, String>>()?;
    if values.len() > names.len() {
        return Err(format!(
            "{}: the summary has {} values for {} events",
            path.display(),
            values.len(),
            names.len()
        ));
    }
    Ok(Dump {
        trigger: trigger.unwrap_or_default().to_string(),
        events: Events(
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.to_string(), values.get(i).copied().unwrap_or(0)))
                .collect(),
        ),
    })
}

/// The metrics of `events` (counts of one run), not yet per iteration.
fn metrics_of(e: &Events) -> [(&'static str, f64); 5] {
    let count = |names: &[&str]| names.iter().map(|n| e.get(n)).sum::<u64>() as f64;
    let ir = count(&["Ir"]);
    let l1 = count(&["I1mr", "D1mr", "D1mw"]);
    let ll = count(&["ILmr", "DLmr", "DLmw"]);
    let accesses = count(&["Ir", "Dr", "Dw"]);
    let ram = ll;
    let ll_hits = l1 - ll;
    let l1_hits = accesses - l1;
    [
        ("valgrind.instructions", ir),
        ("valgrind.l1_misses", l1),
        ("valgrind.ll_misses", ll),
        ("valgrind.branch_misses", count(&["Bcm", "Bim"])),
        (
            "valgrind.estimated_cycles",
            l1_hits + 5.0 * ll_hits + 35.0 * ram,
        ),
    ]
}

/// Each metric per iteration from a bracket's base run (1 iteration) and full run
/// (`n + 1`): the difference is `n` iterations' cost, the runs' own overhead cancelled. A
/// simulated miss count the base run has more of (a miss the full run's later iterations
/// no longer take) is 0, not negative.
pub fn per_iteration(base: &Events, full: &Events, n: u64) -> Vec<(&'static str, f64)> {
    metrics_of(full)
        .into_iter()
        .zip(metrics_of(base))
        .map(|((id, f), (_, e))| {
            let v = (f - e) / n.max(1) as f64;
            (
                id,
                if id.ends_with("_misses") {
                    v.max(0.0)
                } else {
                    v
                },
            )
        })
        .collect()
}

/// Each metric's value per bracket of case `case`, in bracket order, from a child's dumps.
pub fn brackets_of(
    dumps: &[Dump],
    case: u32,
    brackets: u32,
    n: u64,
) -> Result<Vec<(String, Vec<f64>)>, String> {
    let mut per_metric: Vec<(String, Vec<f64>)> = Vec::new();
    for b in 0..brackets {
        let find = |full| {
            let label = dump_label(case, b, full);
            dumps
                .iter()
                .find(|d| d.trigger == label)
                .ok_or_else(|| format!("no callgrind dump labelled '{label}'"))
        };
        let (base, full) = (find(false)?, find(true)?);
        for (id, v) in per_iteration(&base.events, &full.events, n) {
            match per_metric.iter_mut().find(|(i, _)| i == id) {
                Some((_, values)) => values.push(v),
                None => per_metric.push((id.to_string(), vec![v])),
            }
        }
    }
    Ok(per_metric)
}

/// How one case was counted under valgrind (the row's `counting.valgrind`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ValgrindReport {
    /// The valgrind program run.
    pub program: String,
    /// Iterations a bracket's full run adds to its base run.
    pub iterations: u64,
    /// Brackets counted.
    pub brackets: u32,
    /// Seconds the child took, valgrind's start and the case's setup included.
    pub wall_s: f64,
    /// Why the case has no valgrind metrics, where it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The instruction profile's hottest functions by self instructions
    /// (`--profile=instructions`), percent of the measured iterations' instructions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top: Vec<crate::profile::HotFunction>,
    /// Against a baseline's instruction profile: the functions whose self instructions
    /// per iteration changed most, exactly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub movers: Vec<InstructionChange>,
    /// Why there is no instruction profile or diff, where one was asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One function's exact change against the baseline's instruction profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstructionChange {
    /// The function.
    pub name: String,
    /// Its self instructions per iteration in the baseline.
    pub base: f64,
    /// In this run.
    pub new: f64,
    /// The change, percent of the baseline's; absent where it had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_pct: Option<f64>,
}

/// A case's instruction costs over its brackets (the full runs less the base runs), for
/// its instruction profile; nothing is read without the `profile` feature.
#[cfg(feature = "profile")]
pub(crate) type Costs = sparkles_report::callgrind::Costs;

/// Without the `profile` feature no instruction profile is read.
#[cfg(not(feature = "profile"))]
#[derive(Debug, Default)]
pub(crate) struct Costs;

/// How the parent reruns the bench executable: the arguments after the program name,
/// and variables added to the environment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Reexec {
    pub args: Option<Vec<OsString>>,
    pub envs: Vec<(OsString, OsString)>,
}

/// The parent's side of the pass: valgrind, and how long a case may take under it.
pub(crate) struct Pass {
    pub program: PathBuf,
    pub timeout: Duration,
    pub brackets: u32,
    pub suite: String,
    pub reexec: Reexec,
    /// Read each case's per-function costs too (`--profile=instructions`).
    pub profile: bool,
}

/// What one case gave under callgrind.
pub(crate) struct Counted {
    /// Each metric's value per bracket.
    pub brackets: Vec<(String, Vec<f64>)>,
    /// From the child's start of the case to its end, setup included.
    pub wall: Duration,
    /// Its instruction costs over all brackets, where the pass reads profiles.
    pub costs: Option<Costs>,
}

/// The case, the bracket and the run of a dump's label ([`dump_label`]).
#[cfg_attr(not(feature = "profile"), allow(dead_code))]
fn label_of(trigger: &str) -> Option<(u32, u32, bool)> {
    let mut words = trigger.strip_prefix("sparkles ")?.split(' ');
    let case = words.next()?.parse().ok()?;
    let bracket = words.next()?.parse().ok()?;
    let full = match words.next()? {
        "full" => true,
        "base" => false,
        _ => return None,
    };
    Some((case, bracket, full))
}

/// Each case's costs, the full runs' added and the base runs' subtracted, as the dumps
/// are read.
#[derive(Default)]
struct CostSums(std::collections::BTreeMap<u32, Costs>);

impl CostSums {
    #[cfg(feature = "profile")]
    fn add(&mut self, trigger: &str, text: &str, path: &Path) -> Result<(), String> {
        let Some((case, _, full)) = label_of(trigger) else {
            return Ok(());
        };
        let costs = Costs::parse(text, path).map_err(|e| e.to_string())?;
        self.0
            .entry(case)
            .or_default()
            .add(&costs, if full { 1 } else { -1 });
        Ok(())
    }

    #[cfg(not(feature = "profile"))]
    fn add(&mut self, _: &str, _: &str, _: &Path) -> Result<(), String> {
        Ok(())
    }

    #[cfg(feature = "profile")]
    fn take(&mut self, case: u32) -> Option<Costs> {
        self.0.remove(&case).map(Costs::positive)
    }

    #[cfg(not(feature = "profile"))]
    fn take(&mut self, case: u32) -> Option<Costs> {
        self.0.remove(&case)
    }
}

/// Iterations a bracket's full run adds to its base run: those of all brackets take about
/// [`COLLECTED_BUDGET`] natively, at the timed median `ns_per_iter`.
pub(crate) fn iterations_for(ns_per_iter: f64, brackets: u32) -> u64 {
    let per_run = COLLECTED_BUDGET.as_nanos() as f64 / f64::from(brackets.max(1));
    if ns_per_iter.is_finite() && ns_per_iter > 0.0 {
        ((per_run / ns_per_iter) as u64).clamp(1, 1 << 32)
    } else {
        1
    }
}

/// How a child run ended for the cases it was given.
enum ChildEnd {
    /// Every case it began, it finished; it began them all.
    Finished,
    /// It was killed (timeout, interrupt) or died in the case it was counting: that case
    /// gets `why`; the cases after it are still to count.
    Lost { case: u32, why: String },
    /// It ended before beginning any case: every case still to count gets `why`.
    NotStarted(String),
}

impl Pass {
    /// Counts `cases` (`(name, n)`: the iterations a full run adds) under callgrind, in
    /// one child for all of them (valgrind's start, most of a case's cost on a quick body,
    /// is paid once), another for the rest where a case hangs or kills its child. Each
    /// case's values, or why there are none, in order.
    pub fn count_all(&self, cases: &[(String, u64)]) -> Vec<Result<Counted, String>> {
        let mut results: Vec<Option<Result<Counted, String>>> =
            cases.iter().map(|_| None).collect();
        let dir = match tempfile_dir() {
            Ok(d) => d,
            Err(e) => return cases.iter().map(|_| Err(e.clone())).collect(),
        };
        let mut dumps = Vec::new();
        let mut sums = CostSums::default();
        let mut attempt = 0;
        loop {
            let pending: Vec<ChildCase> = cases
                .iter()
                .enumerate()
                .filter(|(i, _)| results[*i].is_none())
                .map(|(i, (name, n))| ChildCase {
                    index: i as u32,
                    name: name.clone(),
                    iterations: *n,
                })
                .collect();
            if pending.is_empty() {
                break;
            }
            attempt += 1;
            let end = self.run_child(dir.path(), attempt, &pending, &mut results);
            match self.read_dumps(dir.path(), attempt, &mut sums) {
                Ok(mut d) => dumps.append(&mut d),
                Err(e) => {
                    for r in results.iter_mut().filter(|r| r.is_none()) {
                        *r = Some(Err(e.clone()));
                    }
                }
            }
            match end {
                ChildEnd::Finished => {}
                ChildEnd::Lost { case, why } => results[case as usize] = Some(Err(why)),
                ChildEnd::NotStarted(why) => {
                    for r in results.iter_mut().filter(|r| r.is_none()) {
                        *r = Some(Err(why.clone()));
                    }
                }
            }
            if sparkles_perf_data::atomic_write::interrupted().is_some() {
                break;
            }
        }
        results
            .into_iter()
            .enumerate()
            .map(|(i, r)| match r {
                Some(Ok(c)) => {
                    brackets_of(&dumps, i as u32, self.brackets, cases[i].1).map(|brackets| {
                        Counted {
                            brackets,
                            wall: c.wall,
                            costs: sums.take(i as u32),
                        }
                    })
                }
                Some(Err(why)) => Err(why),
                None => Err("interrupted".to_string()),
            })
            .collect()
    }

    /// Runs one child for `pending`, recording each case it finishes in `results` (its
    /// values are read from the dumps afterwards): how it ended.
    fn run_child(
        &self,
        dir: &Path,
        attempt: u32,
        pending: &[ChildCase],
        results: &mut [Option<Result<Counted, String>>],
    ) -> ChildEnd {
        let exe = match std::env::current_exe() {
            Ok(e) => e,
            Err(e) => {
                return ChildEnd::NotStarted(format!(
                    "cannot find the bench executable to rerun: {e}"
                ))
            }
        };
        let request = ChildRequest {
            suite: self.suite.clone(),
            cases: pending.to_vec(),
            brackets: self.brackets,
            dir: dir.to_path_buf(),
        };
        let log = dir.join(format!("child-{attempt}.log"));
        let log_file = match std::fs::File::create(&log) {
            Ok(f) => f,
            Err(e) => return ChildEnd::NotStarted(format!("{}: {e}", log.display())),
        };
        let args = self
            .reexec
            .args
            .clone()
            .unwrap_or_else(|| std::env::args_os().skip(1).collect());
        let mut command = Command::new(&self.program);
        command
            .arg("--tool=callgrind")
            .arg("--instr-atstart=no")
            .arg("--collect-atstart=no")
            .arg("--cache-sim=yes")
            .arg("--branch-sim=yes")
            // Source lines only for the instruction profile's line view.
            .arg(if self.profile {
                "--dump-line=yes"
            } else {
                "--dump-line=no"
            })
            .arg(format!(
                "--callgrind-out-file={}",
                dir.join(format!("callgrind-{attempt}.out")).display()
            ))
            .arg(&exe)
            .args(&args)
            .envs(self.reexec.envs.iter().map(|(k, v)| (k, v)))
            .env(
                CHILD_ENV,
                serde_json::to_string(&request).unwrap_or_default(),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file);
        // A case that crashes its child leaves no vgcore file behind in the working folder.
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and
            // exec.
            unsafe {
                command.pre_exec(|| {
                    let none = libc::rlimit {
                        rlim_cur: 0,
                        rlim_max: 0,
                    };
                    libc::setrlimit(libc::RLIMIT_CORE, &none);
                    Ok(())
                });
            }
        }
        let mut child = match command.spawn() {
            Ok(c) => c,
            Err(e) => {
                return ChildEnd::NotStarted(format!(
                    "cannot start {}: {e}",
                    self.program.display()
                ))
            }
        };
        let mut current: Option<(usize, Instant)> = None;
        let mut began_any = false;
        let kill = |child: &mut std::process::Child| {
            let _ = child.kill();
            let _ = child.wait();
        };
        loop {
            // Each case's markers as the child leaves them, in order.
            for (k, case) in pending.iter().enumerate() {
                if results[case.index as usize].is_some() {
                    continue;
                }
                if current.is_none_or(|(c, _)| c < k) && marker(dir, case.index, "started").exists()
                {
                    current = Some((k, Instant::now()));
                    began_any = true;
                }
                if let Ok(text) = std::fs::read_to_string(marker(dir, case.index, "done")) {
                    let wall = current
                        .filter(|(c, _)| *c == k)
                        .map_or(Duration::ZERO, |(_, t)| t.elapsed());
                    results[case.index as usize] = Some(if text.is_empty() {
                        Ok(Counted {
                            brackets: Vec::new(),
                            wall,
                            costs: None,
                        })
                    } else {
                        Err(format!("the case failed under valgrind: {text}"))
                    });
                }
            }
            let status = match child.try_wait() {
                Ok(s) => s,
                Err(e) => {
                    kill(&mut child);
                    return ChildEnd::NotStarted(format!("waiting for valgrind: {e}"));
                }
            };
            let open = current.filter(|(k, _)| results[pending[*k].index as usize].is_none());
            if let Some(status) = status {
                // Markers written just before the exit are read above, on this pass.
                return match open {
                    None if began_any => ChildEnd::Finished,
                    None => ChildEnd::NotStarted(format!(
                        "valgrind ended ({status}) before counting a case{}",
                        last_lines(&std::fs::read_to_string(&log).unwrap_or_default())
                    )),
                    Some((k, _)) => ChildEnd::Lost {
                        case: pending[k].index,
                        why: format!(
                            "the child under valgrind ended ({status}) while counting the case{}",
                            last_lines(&std::fs::read_to_string(&log).unwrap_or_default())
                        ),
                    },
                };
            }
            if let Some((k, since)) = open {
                if since.elapsed() >= self.timeout {
                    kill(&mut child);
                    return ChildEnd::Lost {
                        case: pending[k].index,
                        why: format!(
                            "timed out after {} s under valgrind (--valgrind-timeout)",
                            self.timeout.as_secs()
                        ),
                    };
                }
            }
            if sparkles_perf_data::atomic_write::interrupted().is_some() {
                kill(&mut child);
                return ChildEnd::Finished;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Every dump child `attempt` wrote; with profiles, their costs added to `sums`.
    fn read_dumps(
        &self,
        dir: &Path,
        attempt: u32,
        sums: &mut CostSums,
    ) -> Result<Vec<Dump>, String> {
        let prefix = format!("callgrind-{attempt}.out.");
        let mut dumps = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            let is_dump = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix));
            if is_dump {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let dump = parse_dump(&text, &path)?;
                if self.profile {
                    sums.add(&dump.trigger, &text, &path)?;
                }
                dumps.push(dump);
            }
        }
        Ok(dumps)
    }
}

/// The last few lines of a child's log, valgrind's own warnings left out, as `: ...`.
fn last_lines(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| !l.starts_with("--") && !l.starts_with("==") && !l.trim().is_empty())
        .collect();
    let tail = &lines[lines.len().saturating_sub(3)..];
    if tail.is_empty() {
        return String::new();
    }
    let mut s = String::from(": ");
    for (i, l) in tail.iter().enumerate() {
        if i > 0 {
            s.push_str(" / ");
        }
        let _ = write!(s, "{}", l.trim());
    }
    s
}

/// A temporary folder for one child's dumps, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempfile_dir() -> Result<TempDir, String> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "sparkles-valgrind-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(TempDir(dir))
}

/// Counts every case of `reports` that passed its timing pass under callgrind, and adds
/// its values (or why there are none) to its report; with profiles, each counted case's
/// costs (by its index in `reports`).
pub(crate) fn count_reports(
    reports: &mut [crate::runner::CaseReport],
    pass: &Pass,
) -> Vec<(usize, Costs)> {
    let progress = crate::runner::Progress::new();
    progress.pass("valgrind", None);
    progress.show(&format!(
        "valgrind: {} cases under callgrind",
        reports.len()
    ));
    let start = Instant::now();
    let chosen: Vec<usize> = (0..reports.len()).filter(|i| reports[*i].ok).collect();
    let cases: Vec<(String, u64)> = chosen
        .iter()
        .map(|&i| {
            let median =
                crate::stats::Summary::of(&reports[i].samples).map_or(f64::NAN, |s| s.median);
            (
                reports[i].name.clone(),
                iterations_for(median, pass.brackets),
            )
        })
        .collect();
    let results = pass.count_all(&cases);
    progress.clear();
    let mut slowest: Option<(String, f64)> = None;
    let mut counted = 0;
    let mut costs = Vec::new();
    for ((i, (_, n)), result) in chosen.into_iter().zip(&cases).zip(results) {
        let report = &mut reports[i];
        let mut account = ValgrindReport {
            program: pass.program.display().to_string(),
            iterations: *n,
            brackets: pass.brackets,
            ..ValgrindReport::default()
        };
        match result {
            Ok(c) => {
                account.wall_s = c.wall.as_secs_f64();
                report.counted.extend(medians(&c.brackets));
                report.counted_brackets.extend(c.brackets);
                costs.extend(c.costs.map(|k| (i, k)));
                counted += 1;
                if slowest.as_ref().is_none_or(|(_, s)| account.wall_s > *s) {
                    slowest = Some((report.name.clone(), account.wall_s));
                }
            }
            Err(why) => {
                eprintln!("note: {}: valgrind metrics absent: {why}", report.name);
                account.error = Some(why);
            }
        }
        report
            .counting
            .get_or_insert_with(Default::default)
            .valgrind = Some(account);
    }
    if let Some((case, seconds)) = slowest {
        eprintln!(
            "counting: valgrind: {counted} case{} counted under callgrind ({}) in {:.1} s, the slowest {case} ({seconds:.1} s); {} brackets each",
            if counted == 1 { "" } else { "s" },
            pass.program.display(),
            start.elapsed().as_secs_f64(),
            pass.brackets
        );
    }
    costs
}

/// Each metric's median over `brackets`, as the counting pass gives its values.
pub(crate) fn medians(brackets: &[(String, Vec<f64>)]) -> Vec<MetricValue> {
    brackets
        .iter()
        .map(|(id, v)| {
            (
                std::borrow::Cow::Owned(id.clone()),
                crate::stats::Summary::of(v).map(|s| s.median),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = "# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 11019
cmd:  ./vg
part: 1


desc: I1 cache: 32768 B, 64 B, 8-way associative
desc: D1 cache: 49152 B, 64 B, 12-way associative
desc: LL cache: 276824064 B, 64 B, 33-way associative

desc: Timerange: Basic block 0 - 28840
desc: Trigger: Client Request: sparkles 0 0 full

positions: line
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim
summary: 6018 1002 1008 1 0 0 1 0 0 1001 8


ob=(1) /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
fn=(0) 0x000000000001ab70
0 6018 1002 1008 1 0 0 1 0 0 1001 8
totals: 6009 1002 1002 0 0 0 0 0 0 1001 8
";

    #[test]
    fn a_dump_header_gives_its_trigger_and_summary_trailing_zeros_restored() {
        let d = parse_dump(DUMP, Path::new("cg.out.1")).unwrap();
        assert_eq!(d.trigger, "sparkles 0 0 full");
        assert_eq!(d.events.get("Ir"), 6018);
        assert_eq!(d.events.get("Dw"), 1008);
        assert_eq!(d.events.get("Bcm"), 8);
        // Left out of the summary: zero.
        assert_eq!(d.events.get("Bim"), 0);
        assert_eq!(d.events.get("Bi"), 0);
    }

    #[test]
    fn a_malformed_dump_is_named() {
        let e = parse_dump("events: Ir\nsummary: 12 x\n", Path::new("/t/cg.out.3")).unwrap_err();
        assert!(e.contains("/t/cg.out.3") && e.contains("'x'"), "{e}");
        let e = parse_dump("summary: 1\n", Path::new("f")).unwrap_err();
        assert!(e.contains("no 'events:'"), "{e}");
        let e = parse_dump("events: Ir\nsummary: 1 2\n", Path::new("f")).unwrap_err();
        assert!(e.contains("2 values for 1 events"), "{e}");
    }

    fn events(pairs: &[(&str, u64)]) -> Events {
        Events(pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect())
    }

    #[test]
    fn per_iteration_values_cancel_what_both_runs_share() {
        // 1000 iterations more of 6 instructions, 1 load and 1 store each, beside 18
        // instructions of bracketing and one iteration that the base run has too; one
        // cold miss in both.
        let base = events(&[
            ("Ir", 24),
            ("Dr", 3),
            ("Dw", 9),
            ("I1mr", 1),
            ("ILmr", 1),
            ("Bcm", 8),
        ]);
        let full = events(&[
            ("Ir", 6024),
            ("Dr", 1003),
            ("Dw", 1009),
            ("I1mr", 1),
            ("ILmr", 1),
            ("Bcm", 10),
        ]);
        let v = per_iteration(&base, &full, 1000);
        let get = |id: &str| v.iter().find(|(i, _)| *i == id).unwrap().1;
        assert_eq!(get("valgrind.instructions"), 6.0);
        assert_eq!(get("valgrind.l1_misses"), 0.0);
        assert_eq!(get("valgrind.ll_misses"), 0.0);
        assert_eq!(get("valgrind.branch_misses"), 0.002);
        // 8 accesses an iteration, all L1 hits.
        assert_eq!(get("valgrind.estimated_cycles"), 8.0);
        // One fewer misprediction in the full run than in the base one: none, not -1.
        let v = per_iteration(&events(&[("Bcm", 2)]), &events(&[("Bcm", 1)]), 1);
        assert_eq!(v[3], ("valgrind.branch_misses", 0.0));
    }

    #[test]
    fn estimated_cycles_weigh_ll_hits_and_ram_as_gungraun_does() {
        // 100 accesses: 10 miss L1, of which 4 miss LL too.
        let e = events(&[
            ("Ir", 60),
            ("Dr", 30),
            ("Dw", 10),
            ("D1mr", 10),
            ("DLmr", 4),
        ]);
        let m = metrics_of(&e);
        assert_eq!(
            m[4],
            ("valgrind.estimated_cycles", 90.0 + 5.0 * 6.0 + 35.0 * 4.0)
        );
    }

    #[test]
    fn every_bracket_needs_both_its_runs() {
        let dump = |trigger: &str, ir| Dump {
            trigger: trigger.to_string(),
            events: events(&[("Ir", ir)]),
        };
        let dumps = vec![
            dump("sparkles 3 0 base", 10),
            dump("sparkles 3 0 full", 110),
            dump("sparkles 3 1 full", 112),
            dump("sparkles 3 1 base", 10),
            dump("sparkles 4 0 base", 10),
        ];
        let b = brackets_of(&dumps, 3, 2, 10).unwrap();
        assert_eq!(
            b[0],
            ("valgrind.instructions".to_string(), vec![10.0, 10.2])
        );
        let e = brackets_of(&dumps[..3], 3, 2, 10).unwrap_err();
        assert!(e.contains("'sparkles 3 1 base'"), "{e}");
        let e = brackets_of(&dumps, 4, 2, 10).unwrap_err();
        assert!(e.contains("'sparkles 4 0 full'"), "{e}");
    }

    #[test]
    fn the_full_runs_share_the_budget_among_brackets() {
        // 10 ms over 8 brackets of n iterations at 100 ns: n = 12500.
        assert_eq!(iterations_for(100.0, 8), 12500);
        // A body slower than the budget still runs once.
        assert_eq!(iterations_for(1e9, 8), 1);
        assert_eq!(iterations_for(f64::NAN, 8), 1);
    }

    #[test]
    fn not_under_valgrind_the_requests_are_no_ops() {
        if running_on_valgrind() {
            return;
        }
        toggle_collect();
        zero_stats();
        dump_stats_at("sparkles 0 0 base");
        assert!(!running_on_valgrind());
    }

    #[test]
    #[cfg(unix)]
    fn a_missing_program_says_where_it_was_looked_for() {
        if !request::SUPPORTED {
            let e = find_program(None, None).unwrap_err();
            assert!(e.contains("x86_64 and aarch64 Linux"), "{e}");
            return;
        }
        let e = find_program(Some(OsStr::new("/nonexistent/valgrind")), None).unwrap_err();
        assert!(
            e.contains("/nonexistent/valgrind (from SPARKLES_VALGRIND) is not an executable"),
            "{e}"
        );
        let e = find_program(None, Some(OsStr::new("/nonexistent-a:/nonexistent-b"))).unwrap_err();
        assert!(e.contains("valgrind not found on PATH"), "{e}");
        assert!(e.contains("apt-get install valgrind"), "{e}");
        // A program found on the path given.
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("vg-fake");
        std::fs::write(&fake, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let found =
            find_program(Some(OsStr::new("vg-fake")), Some(dir.path().as_os_str())).unwrap();
        assert_eq!(found, fake);
    }
}
