//! The perf_event counting tiers: hardware and software counters (`--perf`, `--events`)
//! and syscall tracepoints (`--syscalls`, `syscalls:*`), both counted as perf_event
//! groups over the counting pass's timed regions (sparkles_sampler::counters).
//!
//! Metric ids are perf's event names (`cycles`, `task-clock`, …, or the spelling given to
//! `--events`) and `syscalls:total` / `syscalls:NAME`. Counts are per iteration. Where
//! the events' groups shared the PMU, a count is scaled from the time its group ran and
//! reported as an estimate with its running ratio (the row's `counting` object), never
//! as a measured number.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

pub use sparkles_results::counting::{CountingReport, EventDetail, ThreadInfo, TierReport};
use sparkles_sampler::counters::{self, Bracketed, CounterConfig, CounterSet, Coverage};
use sparkles_sampler::events::EventResolver;
use sparkles_sampler::system::System;

use sparkles_results::error::Error;
use sparkles_results::metric::{
    Availability, MetricClass, MetricDescriptor, MetricFormat, MetricValue, Source,
};

/// The syscalls counted without `--syscalls`: the ones most programs spend their calls
/// on. Tracefs names (`newfstat` is fstat(2)).
pub const DEFAULT_SYSCALLS: [&str; 16] = [
    "read",
    "write",
    "openat",
    "close",
    "newfstat",
    "statx",
    "lseek",
    "pread64",
    "mmap",
    "munmap",
    "mprotect",
    "madvise",
    "brk",
    "futex",
    "ioctl",
    "clock_nanosleep",
];

/// Id of the total syscall count.
pub const SYSCALLS_TOTAL: &str = "syscalls:total";

/// What `--perf` counts without `--events`, in order (the seed's group plus the software
/// counters that count on any machine): each with its column header, description, and
/// whether the table shows it.
const KNOWN: [(&str, &str, &str, bool); 10] = [
    ("cycles", "cycles", "CPU cycles per iteration", true),
    (
        "instructions",
        "instr",
        "instructions retired per iteration",
        true,
    ),
    (
        "branches",
        "branches",
        "branch instructions per iteration",
        false,
    ),
    (
        "branch-misses",
        "br-miss",
        "mispredicted branches per iteration",
        false,
    ),
    (
        "cache-references",
        "llc-ref",
        "last-level cache references per iteration (perf's cache-references)",
        false,
    ),
    (
        "cache-misses",
        "llc-miss",
        "last-level cache misses per iteration (perf's cache-misses)",
        false,
    ),
    ("page-faults", "faults", "page faults per iteration", true),
    (
        "task-clock",
        "task-ns",
        "ns on a CPU per iteration (all counted threads)",
        true,
    ),
    (
        "context-switches",
        "cs",
        "context switches per iteration",
        true,
    ),
    (
        "cpu-migrations",
        "migr",
        "moves to another CPU per iteration",
        false,
    ),
];

/// A ratio of two counted events, shown beside them.
struct Derived {
    /// Its metric id.
    id: &'static str,
    /// Its column header.
    header: &'static str,
    /// The numerator's metric id.
    numerator: &'static str,
    /// The denominator's.
    denominator: &'static str,
    /// What the ratio is multiplied by (100 for a percent).
    scale: f64,
    format: MetricFormat,
    /// What it is, in words.
    description: &'static str,
}

/// Ratios of two counted events: (id, header, numerator, denominator, scale, description).
const DERIVED: [Derived; 3] = [
    Derived {
        id: "ipc",
        header: "IPC",
        numerator: "instructions",
        denominator: "cycles",
        scale: 1.0,
        format: MetricFormat::Ratio,
        description: "instructions per cycle",
    },
    Derived {
        id: "branch-miss-rate",
        header: "br-miss%",
        numerator: "branch-misses",
        denominator: "branches",
        scale: 100.0,
        format: MetricFormat::Percent,
        description: "mispredicted branches, percent of branches",
    },
    Derived {
        id: "llc-miss-rate",
        header: "llc-miss%",
        numerator: "cache-misses",
        denominator: "cache-references",
        scale: 100.0,
        format: MetricFormat::Percent,
        description: "last-level cache misses, percent of references",
    },
];

/// What the counting tiers count, from the command line.
#[derive(Debug, Clone)]
pub struct CountingOptions {
    /// `--events`, or the ten generic events (cycles … cpu-migrations).
    pub events: Vec<String>,
    /// `--perf-exact`.
    pub exact: bool,
    /// `--perf-threads self`.
    pub calling_thread_only: bool,
    /// `--syscalls`, or [`DEFAULT_SYSCALLS`].
    pub syscalls: Vec<String>,
    /// Whether `--syscalls` named them (unknown names are then an error, not absent).
    pub syscalls_named: bool,
    /// What the valgrind tier simulates (`--valgrind-sim`): its metrics left out are
    /// absent, with the flag as the reason.
    pub valgrind: crate::tiers::valgrind::Simulation,
}

impl CountingOptions {
    /// The threads the counters cover.
    pub fn coverage(&self) -> Coverage {
        if self.calling_thread_only {
            Coverage::CallingThread
        } else {
            Coverage::Process
        }
    }
}

impl Default for CountingOptions {
    fn default() -> Self {
        CountingOptions {
            events: KNOWN.iter().map(|k| k.0.to_string()).collect(),
            exact: false,
            calling_thread_only: false,
            syscalls: DEFAULT_SYSCALLS.iter().map(|s| s.to_string()).collect(),
            valgrind: crate::tiers::valgrind::Simulation::default(),
            syscalls_named: false,
        }
    }
}

/// One counting tier, resolved: what to open and which metric each event feeds.
#[derive(Debug, Clone)]
pub struct TierPlan {
    /// The events to open.
    pub config: CounterConfig,
    /// The metric id of each event, parallel to `config.events`.
    pub ids: Vec<String>,
}

/// Both tiers' plans, with their catalog entries.
#[derive(Debug, Clone, Default)]
pub struct Plans {
    /// Hardware and software counters.
    pub perf: Option<Arc<TierPlan>>,
    /// Syscall tracepoints.
    pub syscalls: Option<Arc<TierPlan>>,
}

/// A per-iteration count of `source`.
fn descriptor(
    id: String,
    header: String,
    description: String,
    source: Source,
    default_visible: bool,
    availability: Availability,
) -> MetricDescriptor {
    MetricDescriptor {
        id: Cow::Owned(id),
        header: Cow::Owned(header),
        description: Cow::Owned(description),
        format: MetricFormat::Count,
        class: MetricClass::Quantitative,
        source,
        default_visible,
        availability,
    }
}

/// The perf tier's catalog entries (one per event, then the derived ratios) and its plan.
/// A spelling the events layer cannot resolve is an error naming `--events`.
pub fn perf_tier(
    options: &CountingOptions,
    resolver: &EventResolver,
    system: &System,
) -> Result<(Vec<MetricDescriptor>, TierPlan), Error> {
    let mut descriptors = Vec::new();
    let mut events = Vec::new();
    let mut ids = Vec::new();
    let mut availability_of: BTreeMap<String, Availability> = BTreeMap::new();
    for spelling in &options.events {
        let attrs = resolver.resolve(spelling).map_err(|e| Error::Usage {
            flag: "--events",
            message: format!("'{spelling}': {e}"),
        })?;
        // Available where every attr it opens as (one per core PMU on hybrids) opens.
        let availability = match attrs.iter().find_map(|a| counters::check(a, system).err()) {
            None => Availability::Available,
            Some(why) => Availability::Unavailable(why.reason),
        };
        let known = KNOWN.iter().find(|k| k.0 == spelling.as_str());
        descriptors.push(descriptor(
            spelling.clone(),
            known.map_or_else(|| spelling.clone(), |k| k.1.to_string()),
            known.map_or_else(|| format!("{spelling} per iteration"), |k| k.2.to_string()),
            Source::Perf,
            known.is_none_or(|k| k.3),
            availability.clone(),
        ));
        availability_of.insert(spelling.clone(), availability);
        for attr in attrs {
            ids.push(spelling.clone());
            events.push(attr);
        }
    }
    for d in &DERIVED {
        let (num, den) = (d.numerator, d.denominator);
        let (Some(a), Some(b)) = (availability_of.get(num), availability_of.get(den)) else {
            continue;
        };
        let availability = match (a, b) {
            (Availability::Unavailable(why), _) | (_, Availability::Unavailable(why)) => {
                Availability::Unavailable(why.clone())
            }
            _ => Availability::Available,
        };
        descriptors.push(MetricDescriptor {
            format: d.format,
            class: MetricClass::Diagnostic,
            ..descriptor(
                d.id.to_string(),
                d.header.to_string(),
                format!("{} ({num} over {den})", d.description),
                Source::Perf,
                true,
                availability,
            )
        });
    }
    let plan = TierPlan {
        config: CounterConfig {
            events,
            coverage: options.coverage(),
            exact: options.exact,
            rdpmc: true,
        },
        ids,
    };
    Ok((descriptors, plan))
}

/// The syscall tier's catalog entries (`syscalls:total`, then one per syscall) and its
/// plan. A name `--syscalls` gives that has no tracepoint is an error naming the flag.
pub fn syscall_tier(
    options: &CountingOptions,
    resolver: &EventResolver,
    system: &System,
) -> Result<(Vec<MetricDescriptor>, TierPlan), Error> {
    // The tier as a whole: tracefs readable and the leader opens.
    let tier = match resolver.resolve("raw_syscalls:sys_enter") {
        Err(e) => Err(format!("raw_syscalls:sys_enter: {e}")),
        Ok(attrs) => match counters::check(&attrs[0], system) {
            Ok(()) => Ok(attrs[0].clone()),
            Err(why) => Err(why.reason),
        },
    };
    let mut descriptors = Vec::new();
    let mut events = Vec::new();
    let mut ids = Vec::new();
    let entry = |id: String, header: String, description: String, availability| {
        descriptor(
            id,
            header,
            description,
            Source::Syscalls,
            false,
            availability,
        )
    };
    let unavailable = |why: &String| Availability::Unavailable(why.clone());
    descriptors.push(entry(
        SYSCALLS_TOTAL.to_string(),
        "syscalls".to_string(),
        "system calls per iteration (raw_syscalls:sys_enter)".to_string(),
        tier.as_ref()
            .map_or_else(unavailable, |_| Availability::Available),
    ));
    if let Ok(leader) = &tier {
        events.push(leader.clone());
        ids.push(SYSCALLS_TOTAL.to_string());
    }
    for name in &options.syscalls {
        let spelling = format!("syscalls:sys_enter_{name}");
        let resolved = match &tier {
            Err(why) => Err(why.clone()),
            Ok(_) => resolver.resolve(&spelling).map_err(|e| e.to_string()),
        };
        let availability = match &resolved {
            Ok(_) => Availability::Available,
            Err(why) if options.syscalls_named && tier.is_ok() => {
                return Err(Error::Usage {
                    flag: "--syscalls",
                    message: format!("'{name}': {why}"),
                })
            }
            Err(why) => Availability::Unavailable(why.clone()),
        };
        let id = format!("syscalls:{name}");
        descriptors.push(entry(
            id.clone(),
            format!("sc:{name}"),
            format!("{name} calls per iteration ({spelling})"),
            availability,
        ));
        if let Ok(attrs) = resolved {
            for attr in attrs {
                events.push(attr);
                ids.push(id.clone());
            }
        }
    }
    let plan = TierPlan {
        config: CounterConfig {
            events,
            coverage: options.coverage(),
            exact: false,
            rdpmc: false,
        },
        ids,
    };
    Ok((descriptors, plan))
}

/// One tier open for a counting pass.
#[derive(Debug)]
pub struct Tier {
    plan: Arc<TierPlan>,
    counting: Bracketed,
}

impl Tier {
    /// Opens the plan's events on the calling thread (and, by its coverage, the rest).
    pub fn open(plan: &Arc<TierPlan>) -> Tier {
        let set = CounterSet::open(&plan.config, &System::probe());
        Tier {
            plan: Arc::clone(plan),
            counting: Bracketed::start(set),
        }
    }

    /// Starts a bracketed region.
    #[inline]
    pub fn resume(&mut self) {
        self.counting.resume();
    }

    /// Ends a bracketed region.
    #[inline]
    pub fn pause(&mut self) {
        self.counting.pause();
    }

    /// Per-iteration values (derived ratios included) and the tier's account.
    pub fn finish(&self, iterations: u64) -> (Vec<MetricValue>, TierReport) {
        let set = self.counting.set();
        let counts = self.counting.counts();
        let mut by_id: BTreeMap<String, (Option<f64>, EventDetail)> = BTreeMap::new();
        for c in &counts {
            let id = self.id_of_spelling(&c.event);
            let per_iter = c.value.map(|v| v / iterations.max(1) as f64);
            let entry = by_id.entry(id).or_insert((
                Some(0.0),
                EventDetail {
                    estimated: false,
                    running_ratio: 1.0,
                    reason: None,
                },
            ));
            entry.0 = match (entry.0, per_iter) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
            entry.1.estimated |= c.estimated;
            entry.1.running_ratio = entry.1.running_ratio.min(c.running_ratio);
            if c.reason.is_some() {
                entry.1.reason = c.reason.clone();
            }
        }
        let mut values: Vec<MetricValue> = by_id
            .iter()
            .map(|(id, (v, _))| (Cow::Owned(id.clone()), *v))
            .collect();
        for d in &DERIVED {
            let (Some((a, da)), Some((b, db))) = (by_id.get(d.numerator), by_id.get(d.denominator))
            else {
                continue;
            };
            let value = match (a, b) {
                (Some(a), Some(b)) if *b > 0.0 => Some(a / b * d.scale),
                _ => None,
            };
            values.push((Cow::Borrowed(d.id), value));
            by_id.insert(
                d.id.to_string(),
                (
                    value,
                    EventDetail {
                        estimated: da.estimated || db.estimated,
                        running_ratio: da.running_ratio.min(db.running_ratio),
                        reason: da.reason.clone().or_else(|| db.reason.clone()),
                    },
                ),
            );
        }
        let info = |t: &counters::Thread| ThreadInfo {
            tid: t.tid,
            name: t.name.clone(),
        };
        let report = TierReport {
            read: set.read_path.label().to_string(),
            read_reason: set.read_reason.clone(),
            groups_per_thread: set.groups_per_thread(),
            pmu_groups: set.pmu_groups(),
            inherit: set.inherit,
            threads: set.threads.iter().map(info).collect(),
            threads_started: counters::started_since(&set.listed)
                .iter()
                .map(info)
                .collect(),
            events: by_id.into_iter().map(|(id, (_, d))| (id, d)).collect(),
            notes: set.notes.clone(),
        };
        (values, report)
    }

    /// The metric id an event's spelling feeds.
    fn id_of_spelling(&self, spelling: &str) -> String {
        self.plan
            .config
            .events
            .iter()
            .position(|e| e.name == spelling)
            .map_or_else(|| spelling.to_string(), |p| self.plan.ids[p].clone())
    }
}
