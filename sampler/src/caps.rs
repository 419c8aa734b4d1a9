//! The capability report: each of the seven concerns probed for real (a perf_event_open
//! where that is the only honest test) and reported available, partial or absent, with
//! reasons a user can act on.

use std::time::{Duration, Instant};

use serde::Serialize;
use sparkles_perf_data::writer::Compression;

use crate::events::EventResolver;
use crate::open::{open_or_user_only, OpenMode, Opened};
use crate::system::System;

/// The schema name of the report.
pub const SCHEMA: &str = "sparkles.caps/1";

/// How available a concern is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Everything the concern covers works.
    Available,
    /// Some of it works; `reasons` says what does not.
    Partial,
    /// None of it works; `reasons` says why.
    Absent,
}

impl Status {
    /// The status as printed.
    pub fn label(self) -> &'static str {
        match self {
            Status::Available => "available",
            Status::Partial => "partial",
            Status::Absent => "absent",
        }
    }
}

/// One attempt a probe made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attempt {
    /// What was tried.
    pub what: String,
    /// Whether it worked.
    pub ok: bool,
    /// What happened.
    pub result: String,
    /// Set when it worked only in part (user mode only, say), and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limited: Option<String>,
}

/// One concern's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Concern {
    /// Stable id.
    pub id: &'static str,
    /// Readable name.
    pub name: &'static str,
    /// How available it is.
    pub status: Status,
    /// One sentence on what works.
    pub detail: String,
    /// Every attempt, in order.
    pub tried: Vec<Attempt>,
    /// Why something does not work, each a thing a user can act on.
    pub reasons: Vec<String>,
}

/// A PMU as the environment lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PmuSummary {
    /// Its name.
    pub name: String,
    /// Its type number.
    #[serde(rename = "type")]
    pub type_: u32,
}

/// What the probes ran on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapsEnvironment {
    /// Kernel release.
    pub kernel: Option<String>,
    /// `kernel.perf_event_paranoid`.
    pub perf_event_paranoid: i32,
    /// What that level forbids.
    pub perf_event_paranoid_meaning: &'static str,
    /// Running under a hypervisor.
    pub hypervisor: bool,
    /// Which one, where the system says.
    pub hypervisor_vendor: Option<String>,
    /// Running as root.
    pub root: bool,
    /// `kernel.kptr_restrict`.
    pub kptr_restrict: Option<i32>,
    /// PMUs in sysfs.
    pub pmus: Vec<PmuSummary>,
    /// The tracefs folder, or null.
    pub tracefs: Option<String>,
    /// NUMA nodes online.
    pub numa_nodes: usize,
}

/// The whole report (`sparkles.caps/1`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapsReport {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    /// What the probes ran on.
    pub environment: CapsEnvironment,
    /// The seven concerns, in the seed's order.
    pub concerns: Vec<Concern>,
    /// Things the probe did that the user should know (such as mounting tracefs).
    pub notes: Vec<String>,
}

impl CapsReport {
    /// The concern with `id`.
    pub fn concern(&self, id: &str) -> Option<&Concern> {
        self.concerns.iter().find(|c| c.id == id)
    }
}

/// Busy work for a counter to count.
fn spin(d: Duration) -> u64 {
    let start = Instant::now();
    let mut x = 1u64;
    while start.elapsed() < d {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    x
}

struct Probe<'a> {
    resolver: &'a EventResolver,
    system: &'a System,
}

impl Probe<'_> {
    /// Resolves `spec` and opens it; where the paranoid level refuses kernel mode, opens
    /// it again for user mode only (as the counter layer always did), saying so.
    fn open(&self, spec: &str, mode: OpenMode) -> Result<(Opened, Option<String>), String> {
        let attr = match self.resolver.resolve(spec) {
            Ok(a) if !a.is_empty() => a[0].clone(),
            Ok(_) => return Err("resolved to no event".into()),
            Err(e) => return Err(e.to_string()),
        };
        open_or_user_only(&attr, mode, self.system)
            .map(|(o, user)| (o, user.map(|u| u.reason)))
            .map_err(|e| e.reason)
    }

    /// Opens `spec` as a counter around a short busy loop; Ok(count) only if it counted.
    fn count(&self, spec: &str, work: impl FnOnce()) -> Attempt {
        let what = format!("count {spec}");
        let (mut opened, restricted) = match self.open(spec, OpenMode::Counting) {
            Ok(o) => o,
            Err(reason) => return fail(what, reason),
        };
        let c = &mut opened.counter;
        if let Err(e) = c.enable() {
            return fail(what, format!("enable failed: {e}"));
        }
        work();
        let _ = c.disable();
        match c.count_and_time() {
            Ok(r) if r.time_running == 0 => fail(
                what,
                "opened, but the PMU never scheduled it (time_running 0): the counter exists but does not count here".into(),
            ),
            Ok(r) if r.count == 0 => fail(what, "opened, but counted 0 during busy work".into()),
            Ok(r) => Attempt {
                limited: restricted,
                ..success(
                    what,
                    format!(
                        "counted {} (running {:.0}% of enabled time)",
                        r.count,
                        100.0 * r.time_running as f64 / r.time_enabled.max(1) as f64
                    ),
                )
            },
            Err(e) => fail(what, format!("read failed: {e}")),
        }
    }

    /// Opens `spec` for overflow sampling and checks that samples reach the ring buffer.
    fn sample(&self, spec: &str, period: u64) -> Attempt {
        let what = format!("sample {spec} every {period}");
        let (opened, restricted) = match self.open(spec, OpenMode::Sampling { period }) {
            Ok(o) => o,
            Err(reason) => return fail(what, reason),
        };
        let mut ring = match opened.counter.into_ring(64 * 1024) {
            Ok(s) => s,
            Err(e) => return fail(what, format!("mmap of the ring buffer failed: {e}")),
        };
        if let Err(e) = ring.enable() {
            return fail(what, format!("enable failed: {e}"));
        }
        spin(Duration::from_millis(20));
        let _ = ring.disable();
        let mut samples = 0;
        ring.drain(|type_, _, _| {
            if type_ == PERF_RECORD_SAMPLE {
                samples += 1;
            }
        });
        if samples == 0 {
            fail(
                what,
                "opened, but no sample reached the ring buffer in 20 ms of busy work".into(),
            )
        } else {
            Attempt {
                limited: restricted,
                ..success(
                    what,
                    format!(
                        "{samples} samples in 20 ms of busy work (precise level {})",
                        opened.precise_ip
                    ),
                )
            }
        }
    }
}

const PERF_RECORD_SAMPLE: u32 = 9;

fn fail(what: String, result: String) -> Attempt {
    Attempt {
        what,
        ok: false,
        result,
        limited: None,
    }
}

fn success(what: String, result: String) -> Attempt {
    Attempt {
        what,
        ok: true,
        result,
        limited: None,
    }
}

/// Why attempts failed or worked only in part.
fn reasons_of(attempts: &[Attempt]) -> Vec<String> {
    attempts
        .iter()
        .filter_map(|a| match (&a.limited, a.ok) {
            (_, false) => Some(format!("{}: {}", a.what, a.result)),
            (Some(why), true) => Some(format!("{}: {why}", a.what)),
            (None, true) => None,
        })
        .collect()
}

/// Available becomes partial when an attempt it rests on worked only in part.
fn limited_by(status: Status, attempts: &[Attempt]) -> Status {
    if status == Status::Available && attempts.iter().any(|a| a.ok && a.limited.is_some()) {
        Status::Partial
    } else {
        status
    }
}

fn numa_nodes() -> Vec<u32> {
    let mut nodes: Vec<u32> = std::fs::read_dir("/sys/devices/system/node")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    nodes.sort_unstable();
    nodes
}

/// Runs every probe on this machine.
pub fn probe() -> CapsReport {
    let system = System::probe();
    let mut notes = Vec::new();
    let resolver = EventResolver::live().unwrap_or_else(|e| {
        notes.push(format!(
            "sysfs PMUs unreadable ({e}): only generic names resolve"
        ));
        EventResolver::empty("/")
    });
    let tracefs = resolver.tracefs().ok().cloned();
    if let Some(note) = tracefs.as_ref().and_then(|t| t.mounted_note.clone()) {
        notes.push(note);
    }
    let probe = Probe {
        resolver: &resolver,
        system: &system,
    };
    let nodes = numa_nodes();
    let mut concerns = vec![
        scalar_counting(&probe),
        overflow_sampling(&probe),
        precise_data_source(&probe),
        symbolization(&system),
        event_space(&probe),
        numa_topology(&nodes),
        event_naming(&resolver),
    ];
    if let Some(why) = crate::UNAVAILABLE {
        // Each attempt failed for this reason first: say it before the rest.
        notes.push(why.to_string());
        for c in concerns
            .iter_mut()
            .filter(|c| c.status != Status::Available)
        {
            c.reasons.insert(0, why.to_string());
        }
    }
    CapsReport {
        schema: SCHEMA,
        environment: CapsEnvironment {
            kernel: system.kernel.clone(),
            perf_event_paranoid: system.perf_event_paranoid,
            perf_event_paranoid_meaning: system.paranoid_meaning(),
            hypervisor: system.hypervisor,
            hypervisor_vendor: system.hypervisor_vendor.clone(),
            root: system.is_root,
            kptr_restrict: system.kptr_restrict,
            pmus: resolver
                .pmus()
                .iter()
                .map(|p| PmuSummary {
                    name: p.name.clone(),
                    type_: p.type_,
                })
                .collect(),
            tracefs: tracefs.map(|t| t.dir.display().to_string()),
            numa_nodes: nodes.len(),
        },
        concerns,
        notes,
    }
}

fn hypervisor_reason(system: &System) -> Option<String> {
    system.hypervisor.then(|| {
        format!(
            "running under a hypervisor{}: hardware counters are whatever it virtualizes",
            system
                .hypervisor_vendor
                .as_ref()
                .map(|v| format!(" ({v})"))
                .unwrap_or_default()
        )
    })
}

fn scalar_counting(p: &Probe<'_>) -> Concern {
    let work = || {
        spin(Duration::from_millis(2));
    };
    let tried = vec![
        p.count("task-clock", work),
        p.count("page-faults", || {
            std::hint::black_box(vec![1u8; 1 << 20]);
        }),
        p.count("cycles", work),
        p.count("instructions", work),
    ];
    let software = tried[0].ok;
    let hardware = tried[2].ok && tried[3].ok;
    let mut reasons = reasons_of(&tried);
    let (status, detail) = match (software, hardware) {
        (_, true) => (
            Status::Available,
            "hardware counters (cycles, instructions) and software counters count".to_string(),
        ),
        (true, false) => {
            if let Some(h) = hypervisor_reason(p.system) {
                reasons.push(format!("no PMU: {h}"));
            }
            (
                Status::Partial,
                "software counters only (task-clock, page-faults, context-switches); no hardware counters".to_string(),
            )
        }
        (false, false) => (Status::Absent, "no counter opens".to_string()),
    };
    Concern {
        id: "scalar_counting",
        name: "Scalar counting",
        status: limited_by(status, &tried),
        detail,
        tried,
        reasons,
    }
}

fn overflow_sampling(p: &Probe<'_>) -> Concern {
    let tried = vec![p.sample("cycles", 100_000), p.sample("cpu-clock", 100_000)];
    let (hardware, software) = (tried[0].ok, tried[1].ok);
    let mut reasons = reasons_of(&tried);
    let (status, detail) = match (hardware, software) {
        (true, _) => (
            Status::Available,
            "overflow sampling of hardware cycles into the mmap ring buffer".to_string(),
        ),
        (false, true) => {
            if let Some(h) = hypervisor_reason(p.system) {
                reasons.push(format!("no hardware sampling: {h}"));
            }
            (
                Status::Available,
                "overflow sampling of the software clock (cpu-clock) into the mmap ring buffer; cycles cannot be sampled".to_string(),
            )
        }
        (false, false) => (Status::Absent, "no event can be sampled".to_string()),
    };
    Concern {
        id: "overflow_sampling",
        name: "Overflow sampling",
        status: limited_by(status, &tried),
        detail,
        tried,
        reasons,
    }
}

/// Loads that miss the first cache levels for `d`: strided reads over 16 MiB written
/// first (untouched pages would all read the one zero page). Returns their sum.
pub fn load_misses(d: Duration) -> u64 {
    let buffer = vec![1u8; 16 << 20];
    let start = Instant::now();
    let mut sum = 0u64;
    let mut at = 0usize;
    while start.elapsed() < d {
        for _ in 0..4096 {
            // A page and a line apart: neither the prefetcher nor one TLB entry helps.
            at = (at + 4096 + 64) % buffer.len();
            sum = sum.wrapping_add(u64::from(std::hint::black_box(buffer[at])));
        }
    }
    sum
}

/// What `--profile=mem` opens on this machine (the memory plan's events, any group
/// leader with them), sampled for 20 ms of loads that miss: whether samples come, and
/// how many carry a data source; where the plan falls back to first-touch placement,
/// why.
pub fn memory_probe(resolver: &EventResolver, system: &System) -> Attempt {
    use crate::session::{CallGraph, Rate, SamplingConfig, Session, Target};
    let plan = match crate::mem_events::live_plan(resolver, system) {
        Ok(plan) if plan.first_touch => {
            return fail("choose --profile=mem's events".into(), plan.note)
        }
        Ok(plan) => plan,
        Err(e) => return fail("choose --profile=mem's events".into(), e.to_string()),
    };
    let names: Vec<String> = plan.events.iter().map(|e| e.spelling()).collect();
    // A frequency, not a period: the kernel keeps the interrupts at this rate whatever
    // the events count.
    let what = format!(
        "sample {} at 1000 Hz for 20 ms (what --profile=mem opens)",
        names.join(", ")
    );
    let mut config = SamplingConfig {
        buffer_pages: 64,
        compact_stacks: false,
        compression: Compression::Off,
        ..SamplingConfig::new(Vec::new(), Rate::Frequency(1000), CallGraph::FramePointer)
    };
    plan.apply(&mut config);
    // The probe samples its own loads: no page-table queries.
    if let Some(m) = config.memory.as_mut() {
        m.resolve_pages = false;
    }
    let session = match Session::start(&config, Target::CurrentThread, system) {
        Ok(s) => s,
        Err(e) => return fail(what, e.to_string()),
    };
    load_misses(Duration::from_millis(20));
    let capture = session.finish();
    let data = match sparkles_perf_data::PerfData::from_bytes(capture.writer.to_bytes()) {
        Ok(d) => d,
        Err(e) => return fail(what, format!("the capture does not read back: {e}")),
    };
    let (mut samples, mut sourced) = (0u64, 0u64);
    let _ = data.for_each_record(|e| {
        if let sparkles_perf_data::Record::Sample(s) = &e.record {
            samples += 1;
            sourced += u64::from(
                s.data_src
                    .is_some_and(|d| !sparkles_perf_data::DataSource::new(d).is_na()),
            );
        }
        Ok::<(), sparkles_perf_data::Error>(())
    });
    let limits: Vec<String> = capture
        .restrictions
        .iter()
        .chain(&capture.uncovered)
        .map(ToString::to_string)
        .collect();
    let result =
        format!("{samples} samples in 20 ms of loads that miss, {sourced} with a data source");
    if sourced == 0 {
        fail(what, result)
    } else {
        Attempt {
            limited: (!limits.is_empty()).then(|| limits.join("; ")),
            ..success(what, result)
        }
    }
}

fn precise_data_source(p: &Probe<'_>) -> Concern {
    let r = p.resolver;
    let mut tried = Vec::new();
    let mut reasons = Vec::new();
    let ibs = r.pmu("ibs_op").is_some();
    let mem_loads = r.core_pmus().any(|c| c.aliases.contains_key("mem-loads"));
    if ibs || mem_loads {
        tried.push(memory_probe(p.resolver, p.system));
    }
    // What the kernel says to a precise request, whatever sysfs claims.
    tried.push(p.sample("cycles:pp", 100_000));
    let any = tried.iter().any(|a| a.ok);
    if !ibs && !mem_loads {
        let core_precise = r
            .core_pmus()
            .filter_map(|c| c.max_precise)
            .max()
            .unwrap_or(0);
        reasons.push(format!(
            "no precise memory PMU in sysfs: no ibs_op (AMD IBS) and no mem-loads event (Intel PEBS); core PMU caps/max_precise is {core_precise}"
        ));
        if let Some(h) = hypervisor_reason(p.system) {
            reasons.push(format!(
                "{h}; IBS and PEBS are rarely passed through to guests"
            ));
        }
    }
    reasons.extend(reasons_of(&tried));
    let status = if any {
        Status::Available
    } else {
        Status::Absent
    };
    let detail = if any {
        "precise samples with data addresses and data sources".to_string()
    } else {
        "no precise (IBS/PEBS) sampling: data-source levels cannot be measured here".to_string()
    };
    Concern {
        id: "precise_data_source",
        name: "Precise data source (IBS/PEBS)",
        status,
        detail,
        tried,
        reasons,
    }
}

fn symbolization(system: &System) -> Concern {
    let mut tried = Vec::new();
    let mut reasons = Vec::new();
    let exe = std::env::current_exe().ok();
    let user = match exe.as_ref().map(std::fs::read) {
        Some(Ok(bytes)) => {
            use object::Object;
            match object::File::parse(&*bytes) {
                Ok(file) => {
                    let has = |name: &str| file.section_by_name(name).is_some();
                    let symtab = has(".symtab");
                    let lines = has(".debug_line");
                    let cfi = has(".eh_frame") || has(".debug_frame");
                    let result = format!(
                        ".symtab {}, .debug_line {}, unwind tables {}",
                        yes(symtab),
                        yes(lines),
                        yes(cfi)
                    );
                    if !lines {
                        reasons.push(
                            "this binary has no line tables: names from .symtab only (set [profile.bench] debug = \"line-tables-only\")".to_string(),
                        );
                    }
                    if !symtab {
                        reasons
                            .push("this binary is stripped: names from .dynsym only".to_string());
                    }
                    tried.push(Attempt {
                        limited: None,
                        what: format!(
                            "read ELF sections of {}",
                            exe.as_ref()
                                .map(|p| p.display().to_string())
                                .unwrap_or_default()
                        ),
                        ok: symtab || lines,
                        result,
                    });
                    symtab || lines
                }
                Err(e) => {
                    tried.push(fail("parse this executable as ELF".into(), e.to_string()));
                    false
                }
            }
        }
        Some(Err(e)) => {
            tried.push(fail("read /proc/self/exe".into(), e.to_string()));
            false
        }
        None => false,
    };
    let kallsyms = std::fs::read_to_string("/proc/kallsyms");
    let kernel = match &kallsyms {
        Ok(text) => {
            let nonzero = text.lines().take(1000).any(|l| {
                l.split_whitespace()
                    .next()
                    .is_some_and(|a| !a.trim_start_matches('0').is_empty())
            });
            if nonzero {
                tried.push(success(
                    "read /proc/kallsyms".into(),
                    "kernel symbol addresses visible".into(),
                ));
            } else {
                let msg = match system.kptr_restrict {
                    Some(0) => format!(
                        "kernel symbol addresses are hidden: kernel.kptr_restrict is 0, which shows them only with perf_event_paranoid <= 1 (it is {}) or CAP_SYSLOG",
                        system.perf_event_paranoid
                    ),
                    Some(1) => "kernel.kptr_restrict is 1: kernel symbol addresses need CAP_SYSLOG (run as root, or sysctl kernel.kptr_restrict=0)".to_string(),
                    Some(level) => format!("kernel.kptr_restrict is {level}: kernel symbol addresses are hidden from everyone (sysctl kernel.kptr_restrict=0)"),
                    None => "kernel symbol addresses read as 0 (kernel.kptr_restrict unreadable)".to_string(),
                };
                tried.push(fail(
                    "read /proc/kallsyms".into(),
                    "every address is 0".into(),
                ));
                reasons.push(msg);
            }
            nonzero
        }
        Err(e) => {
            tried.push(fail("read /proc/kallsyms".into(), e.to_string()));
            reasons.push(format!(
                "/proc/kallsyms unreadable ({e}): kernel frames stay unnamed"
            ));
            false
        }
    };
    let status = match (user, kernel) {
        (true, true) if reasons.is_empty() => Status::Available,
        (false, false) => Status::Absent,
        _ => Status::Partial,
    };
    Concern {
        id: "symbolization",
        name: "Symbolization",
        status,
        detail: format!(
            "user symbols {}, kernel symbols {}",
            if user { "readable" } else { "unavailable" },
            if kernel { "readable" } else { "hidden" }
        ),
        tried,
        reasons,
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "present"
    } else {
        "absent"
    }
}

fn event_space(p: &Probe<'_>) -> Concern {
    let mut tried = Vec::new();
    let mut reasons = Vec::new();
    match p.resolver.tracefs() {
        Ok(t) => tried.push(success(
            "locate tracefs".into(),
            t.dir.display().to_string(),
        )),
        Err(e) => {
            tried.push(fail("locate tracefs".into(), e.to_string()));
            reasons.push(e.to_string());
        }
    }
    let syscalls = p.count("raw_syscalls:sys_enter", || {
        for _ in 0..100 {
            // getpid(2) each time: glibc caches no pid.
            std::hint::black_box(std::process::id());
        }
    });
    let tracepoints = syscalls.ok;
    tried.push(syscalls);
    let probes: Vec<&str> = ["kprobe", "uprobe", "breakpoint"]
        .into_iter()
        .filter(|n| p.resolver.pmu(n).is_some())
        .collect();
    tried.push(Attempt {
        limited: None,
        what: "find kprobe, uprobe and breakpoint PMUs".into(),
        ok: !probes.is_empty(),
        result: if probes.is_empty() {
            "none in sysfs".into()
        } else {
            probes.join(", ")
        },
    });
    reasons.extend(reasons_of(&tried[1..2]));
    let status = match (tracepoints, probes.is_empty()) {
        (true, _) => Status::Available,
        (false, false) => Status::Partial,
        (false, true) => Status::Absent,
    };
    Concern {
        id: "event_space",
        name: "Event space (tracepoints, probes)",
        status,
        detail: if tracepoints {
            format!(
                "tracepoints count (raw_syscalls:sys_enter); PMUs: {}",
                probes.join(", ")
            )
        } else {
            "tracepoints cannot be counted".to_string()
        },
        tried,
        reasons,
    }
}

fn numa_topology(nodes: &[u32]) -> Concern {
    let mut tried = Vec::new();
    let mut reasons = Vec::new();
    tried.push(Attempt {
        limited: None,
        what: "read /sys/devices/system/node".into(),
        ok: !nodes.is_empty(),
        result: format!("{} node(s): {:?}", nodes.len(), nodes),
    });
    // move_pages with a null node list asks where each page lives.
    let page = vec![1u8; 4096 * 2];
    let pages = [page.as_ptr() as u64 + (4096 - (page.as_ptr() as u64 % 4096))];
    let mut status_out = [-1i32];
    let asked = crate::sys::move_pages(0, &pages, &mut status_out);
    let move_pages_ok = asked.is_ok() && status_out[0] >= 0;
    tried.push(match asked {
        Ok(()) => Attempt {
            limited: None,
            what: "move_pages (query the node of a page)".into(),
            ok: move_pages_ok,
            result: format!("status {}", status_out[0]),
        },
        Err(e) => fail(
            "move_pages (query the node of a page)".into(),
            e.to_string(),
        ),
    });
    drop(page);
    if !move_pages_ok {
        reasons.push(
            "move_pages does not answer: the node of sampled pages cannot be asked live".into(),
        );
    }
    if nodes.len() == 1 {
        reasons.push("one NUMA node: every access is local".into());
    }
    let status = match (nodes.is_empty(), move_pages_ok) {
        (false, true) => Status::Available,
        (true, false) => Status::Absent,
        _ => Status::Partial,
    };
    Concern {
        id: "numa_topology",
        name: "NUMA and topology",
        status,
        detail: format!(
            "{} NUMA node(s); page-to-node queries {}",
            nodes.len(),
            if move_pages_ok { "work" } else { "fail" }
        ),
        tried,
        reasons,
    }
}

fn event_naming(r: &EventResolver) -> Concern {
    let core: Vec<_> = r.core_pmus().collect();
    let aliases: usize = r.pmus().iter().map(|p| p.aliases.len()).sum();
    let formats: usize = core.iter().map(|p| p.formats.len()).sum();
    let tried = vec![Attempt {
        limited: None,
        what: format!(
            "read {}",
            crate::events::pmu::devices_dir(r.root()).display()
        ),
        ok: !r.pmus().is_empty(),
        result: format!(
            "{} PMUs, {} core ({}), {formats} core format terms, {aliases} aliases",
            r.pmus().len(),
            core.len(),
            core.iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }];
    let mut reasons = Vec::new();
    let status = if core.is_empty() {
        reasons.push(
            "no core PMU in sysfs: only generic, software and tracepoint names resolve".into(),
        );
        Status::Partial
    } else if formats == 0 {
        reasons.push(
            "the core PMU lists no format terms: PMU/term=value/ spellings cannot be encoded"
                .into(),
        );
        Status::Partial
    } else {
        Status::Available
    };
    Concern {
        id: "event_naming",
        name: "Event naming",
        status,
        detail:
            "perf's spellings: generic, cache, software, PMU/term/, sysfs aliases, raw, tracepoints"
                .to_string(),
        tried,
        reasons,
    }
}

/// The report as a short table.
pub fn render(report: &CapsReport) -> String {
    let e = &report.environment;
    let mut out = format!(
        "kernel {}, perf_event_paranoid {} ({}), {}{}, {} NUMA node(s), tracefs {}\n",
        e.kernel.as_deref().unwrap_or("unknown"),
        e.perf_event_paranoid,
        e.perf_event_paranoid_meaning,
        if e.hypervisor {
            "under a hypervisor"
        } else {
            "bare metal"
        },
        if e.root { ", root" } else { "" },
        e.numa_nodes,
        e.tracefs.as_deref().unwrap_or("not mounted"),
    );
    out.push_str(&format!(
        "PMUs: {}\n\n",
        e.pmus
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let width = report
        .concerns
        .iter()
        .map(|c| c.name.len())
        .max()
        .unwrap_or(10);
    for c in &report.concerns {
        out.push_str(&format!(
            "{:<width$}  {:<9}  {}\n",
            c.name,
            c.status.label(),
            c.detail
        ));
        for reason in &c.reasons {
            out.push_str(&format!("{:<width$}  {:<9}  - {reason}\n", "", ""));
        }
    }
    for note in &report.notes {
        out.push_str(&format!("note: {note}\n"));
    }
    out
}
