//! How the counting tiers counted a case (the row's `counting` key): the perf_event
//! tiers' threads, read path and estimates, and callgrind's pass. The tiers fill these;
//! the row carries them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How one event of a tier was counted (the row's `counting.<tier>.events.<id>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventDetail {
    /// Whether the value is scaled from the time its group ran.
    pub estimated: bool,
    /// Running over enabled time of its groups during the pass.
    pub running_ratio: f64,
    /// Why there is no value, where there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A thread the counters covered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadInfo {
    /// Thread id.
    pub tid: i32,
    /// Thread name.
    pub name: String,
}

/// How one tier counted one case (the row's `counting.perf` or `counting.syscalls`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TierReport {
    /// `read(2)` or `rdpmc`.
    pub read: String,
    /// Why rdpmc was not used, where it was a candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_reason: Option<String>,
    /// Groups per thread (software events are in groups of their own).
    pub groups_per_thread: usize,
    /// Of those, the groups of hardware counters: more than one took turns on the PMU.
    #[serde(default)]
    pub pmu_groups: usize,
    /// Whether threads started during the pass were counted (inherit).
    pub inherit: bool,
    /// Threads counted from the start of the pass, each by its own counters.
    pub threads: Vec<ThreadInfo>,
    /// Threads alive at the end that started during the pass (counted through inherit
    /// when `inherit`); threads that started and ended within it are counted but not
    /// listed.
    pub threads_started: Vec<ThreadInfo>,
    /// Per metric id: estimated or not, and the running ratio.
    pub events: BTreeMap<String, EventDetail>,
    /// Anything else a reader should know (threads not counted, inherit refused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The counting tiers' account of one case (the row's `counting` key).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CountingReport {
    /// Hardware and software counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf: Option<TierReport>,
    /// Syscall tracepoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls: Option<TierReport>,
    /// callgrind's pass (`--instructions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valgrind: Option<ValgrindReport>,
}

impl CountingReport {
    /// Whether `id`'s value is an estimate, and its running ratio.
    pub fn estimate(&self, id: &str) -> Option<f64> {
        [&self.perf, &self.syscalls]
            .into_iter()
            .flatten()
            .find_map(|t| t.events.get(id))
            .filter(|d| d.estimated)
            .map(|d| d.running_ratio)
    }
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
    /// A thread sweep's case: the threads whose instructions were counted (all of the
    /// sweep's: the case's thread and its helpers, each collecting while it runs the
    /// body). Absent for a case of one thread (its own alone: threads it starts are not
    /// counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
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
