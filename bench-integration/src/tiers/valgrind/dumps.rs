//! What a child's dumps say: each metric per iteration of every bracket (full runs less
//! base runs), and with profiles each case's per-function costs summed the same way. The
//! dumps are read by sparkles-report's reader of callgrind files.

use std::path::Path;

use sparkles_report::callgrind::{Dump, Events};
use sparkles_results::metric::MetricSeries;

use super::client::dump_label;

/// The metrics of `events` (counts of one run), not yet per iteration: the simulated
/// ones only where the dump has the simulation's events (`--valgrind-sim`), never a miss
/// count of 0 for a cache nobody simulated.
pub(super) fn metrics_of(e: &Events) -> Vec<(&'static str, f64)> {
    let count = |names: &[&str]| names.iter().map(|n| e.get(n)).sum::<u64>() as f64;
    let ir = count(&["Ir"]);
    let l1 = count(&["I1mr", "D1mr", "D1mw"]);
    let ll = count(&["ILmr", "DLmr", "DLmw"]);
    let accesses = count(&["Ir", "Dr", "Dw"]);
    let ram = ll;
    let ll_hits = l1 - ll;
    let l1_hits = accesses - l1;
    let (cache, branch) = (e.has("D1mr"), e.has("Bcm"));
    [
        ("valgrind.instructions", ir, true),
        ("valgrind.l1_misses", l1, cache),
        ("valgrind.ll_misses", ll, cache),
        ("valgrind.branch_misses", count(&["Bcm", "Bim"]), branch),
        (
            "valgrind.estimated_cycles",
            l1_hits + 5.0 * ll_hits + 35.0 * ram,
            cache,
        ),
    ]
    .into_iter()
    .filter_map(|(id, v, simulated)| simulated.then_some((id, v)))
    .collect()
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

/// The child's own dumps of case `case` so far, from its request's folder: what its first
/// brackets counted. A file that cannot be read is left for the parent, which says why.
pub(crate) fn dumps_of_case(dir: &Path, case: u32) -> Vec<Dump> {
    let prefix = format!("sparkles {case} ");
    let file = format!("{}.", super::pass::DUMP_FILE);
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let is_dump = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(&file));
        if !is_dump {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if let Ok(dump) = sparkles_report::callgrind::parse_dump(&text, &path) {
            if dump.trigger.starts_with(&prefix) {
                found.push(dump);
            }
        }
    }
    found
}

/// Each metric's value per bracket of case `case`, in bracket order, from a child's dumps.
pub fn brackets_of(
    dumps: &[Dump],
    case: u32,
    brackets: u32,
    n: u64,
) -> Result<Vec<MetricSeries>, String> {
    let mut per_metric: Vec<MetricSeries> = Vec::new();
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
            match per_metric.iter_mut().find(|s| s.id == id) {
                Some(s) => s.values.push(v),
                None => per_metric.push(MetricSeries {
                    id: id.to_string(),
                    values: vec![v],
                }),
            }
        }
    }
    Ok(per_metric)
}

/// A case's instruction costs over its brackets (the full runs less the base runs), for
/// its instruction profile; nothing is read without the `profile` feature.
#[cfg(feature = "profile")]
pub(crate) type Costs = sparkles_report::callgrind::Costs;

/// Without the `profile` feature no instruction profile is read.
#[cfg(not(feature = "profile"))]
#[derive(Debug, Default)]
pub(crate) struct Costs;

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
pub(super) struct CostSums(std::collections::BTreeMap<u32, Costs>);

impl CostSums {
    #[cfg(feature = "profile")]
    pub(super) fn add(&mut self, trigger: &str, text: &str, path: &Path) -> Result<(), String> {
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
    pub(super) fn add(&mut self, _: &str, _: &str, _: &Path) -> Result<(), String> {
        Ok(())
    }

    #[cfg(feature = "profile")]
    pub(super) fn take(&mut self, case: u32) -> Option<Costs> {
        self.0.remove(&case).map(Costs::positive)
    }

    #[cfg(not(feature = "profile"))]
    pub(super) fn take(&mut self, case: u32) -> Option<Costs> {
        self.0.remove(&case)
    }
}
