//! Tier 0: what the operating system counts for every process, read with no privilege
//! and no perf_event: on Linux getrusage(2) and /proc/self/io; on macOS getrusage and
//! `proc_pid_rusage` (instructions and cycles among them); on Windows the process's
//! times, cycle times, page faults and I/O counters; elsewhere on Unix getrusage alone.
//! Each OS's calls are one small module of their own ([`Counters`]).
//!
//! The sources are process-wide (but the calling thread's cycle time on Windows), so
//! threads a case body starts are counted too. Reading them costs something of its own
//! (reading /proc/self/io is itself a read syscall of a few hundred bytes), so the tier
//! measures an empty bracket when it opens and subtracts that cost, clamped at zero, from
//! every bracketed region: a body that does no I/O reads about zero.

use sparkles_results::metric::{
    Availability, MetricClass, MetricDescriptor, MetricFormat, MetricValue, Source,
};

#[cfg(target_os = "linux")]
mod proc_io;
#[cfg(unix)]
mod rusage;
#[cfg(target_os = "macos")]
mod rusage_info;
#[cfg(windows)]
mod windows;

/// One counter of tier 0, as the catalog lists it.
#[derive(Debug)]
pub(crate) struct Field {
    /// Metric id.
    pub id: &'static str,
    /// Column label.
    pub header: &'static str,
    /// What it counts, per iteration, and where it comes from.
    pub description: &'static str,
    /// Shown in the table without `--metrics`.
    pub default_visible: bool,
}

/// One OS facility tier 0 reads.
pub(crate) trait Counters: std::fmt::Debug {
    /// Its counters, in reading order.
    fn fields(&self) -> &'static [Field];
    /// Reads every counter into `out` (one slot per field, in order): `None` where one
    /// could not be read.
    fn read(&mut self, out: &mut [Option<u64>]);
    /// Why `field` reads nothing here.
    fn why_not(&self, field: &Field) -> String;
}

/// This OS's facilities, opened.
fn sources() -> Vec<Box<dyn Counters>> {
    vec![
        #[cfg(unix)]
        Box::new(rusage::Rusage),
        #[cfg(target_os = "linux")]
        Box::new(proc_io::ProcIo::open()),
        #[cfg(target_os = "macos")]
        Box::new(rusage_info::RusageInfo::default()),
        #[cfg(windows)]
        Box::new(windows::Process::open()),
    ]
}

/// The most counters any OS's tier 0 has.
const MAX_FIELDS: usize = 12;

/// Empty brackets measured at open; their per-field median is the tier's own cost.
const CALIBRATION_BRACKETS: usize = 9;

/// The tier's catalog entries, with availability probed on this machine (one reading).
pub fn descriptors() -> Vec<MetricDescriptor> {
    let mut out = Vec::new();
    for mut source in sources() {
        let fields = source.fields();
        let mut read = vec![None; fields.len()];
        source.read(&mut read);
        for (field, value) in fields.iter().zip(read) {
            out.push(MetricDescriptor {
                id: field.id.into(),
                header: field.header.into(),
                description: field.description.into(),
                format: MetricFormat::Count,
                class: MetricClass::Quantitative,
                source: Source::Tier0,
                default_visible: field.default_visible,
                availability: match value {
                    Some(_) => Availability::Available,
                    None => Availability::Unavailable(source.why_not(field)),
                },
            });
        }
    }
    out
}

/// One reading of every counter; `None` where one cannot be read.
#[derive(Debug, Clone, Copy)]
struct Snapshot {
    fields: [Option<u64>; MAX_FIELDS],
}

/// The tier, open on the thread that runs the counting pass.
#[derive(Debug)]
pub struct Tier0 {
    sources: Vec<Box<dyn Counters>>,
    /// Every source's field ids, in reading order.
    ids: Vec<&'static str>,
    started: Option<Snapshot>,
    /// Sum of bracketed deltas per field; `None` once a field failed to read.
    accumulated: [Option<u64>; MAX_FIELDS],
    brackets: u64,
    self_cost: [u64; MAX_FIELDS],
}

impl Tier0 {
    /// Opens the tier and measures its own bracketing cost.
    pub fn open() -> Tier0 {
        let sources = sources();
        let ids: Vec<&'static str> = sources
            .iter()
            .flat_map(|s| s.fields().iter().map(|f| f.id))
            .collect();
        assert!(ids.len() <= MAX_FIELDS, "tier 0 has {} fields", ids.len());
        let mut tier = Tier0 {
            sources,
            ids,
            started: None,
            accumulated: [Some(0); MAX_FIELDS],
            brackets: 0,
            self_cost: [0; MAX_FIELDS],
        };
        let mut deltas: Vec<[u64; MAX_FIELDS]> = Vec::with_capacity(CALIBRATION_BRACKETS);
        for _ in 0..CALIBRATION_BRACKETS {
            let a = tier.snapshot();
            let b = tier.snapshot();
            let mut d = [0u64; MAX_FIELDS];
            for (i, slot) in d.iter_mut().enumerate() {
                *slot = match (a.fields[i], b.fields[i]) {
                    (Some(x), Some(y)) => y.saturating_sub(x),
                    _ => 0,
                };
            }
            deltas.push(d);
        }
        for i in 0..MAX_FIELDS {
            let mut column: Vec<u64> = deltas.iter().map(|d| d[i]).collect();
            column.sort_unstable();
            tier.self_cost[i] = column[column.len() / 2];
        }
        tier
    }

    fn snapshot(&mut self) -> Snapshot {
        let mut snap = Snapshot {
            fields: [None; MAX_FIELDS],
        };
        let mut at = 0;
        for source in &mut self.sources {
            let n = source.fields().len();
            source.read(&mut snap.fields[at..at + n]);
            at += n;
        }
        snap
    }

    /// Starts a bracketed region.
    pub fn resume(&mut self) {
        self.started = Some(self.snapshot());
    }

    /// Ends a bracketed region and adds its deltas.
    pub fn pause(&mut self) {
        let end = self.snapshot();
        let Some(start) = self.started.take() else {
            return;
        };
        for i in 0..self.ids.len() {
            self.accumulated[i] = match (self.accumulated[i], start.fields[i], end.fields[i]) {
                (Some(acc), Some(a), Some(b)) => Some(acc + b.saturating_sub(a)),
                _ => None,
            };
        }
        self.brackets += 1;
    }

    /// Per-iteration values over everything bracketed so far, the tier's own cost removed.
    pub fn values(&self, iterations: u64) -> Vec<MetricValue> {
        self.ids
            .iter()
            .enumerate()
            .map(|(i, &id)| {
                let value = self.accumulated[i].filter(|_| iterations > 0).map(|acc| {
                    let own = self.self_cost[i].saturating_mul(self.brackets);
                    acc.saturating_sub(own) as f64 / iterations as f64
                });
                (id.into(), value)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counters are the whole process's, and other tests of this binary run in
    /// parallel threads (reading fixtures, faulting pages): a bracket they fall into
    /// reads their work. So the claim is that some of a few tries reads zero: a self
    /// cost left in would show in every one.
    #[test]
    fn empty_bracket_reads_zero_after_self_cost() {
        let mut last = Vec::new();
        for _ in 0..20 {
            let mut tier = Tier0::open();
            for _ in 0..5 {
                tier.resume();
                tier.pause();
            }
            last = tier
                .values(5)
                .into_iter()
                // Cycles and instructions are never zero: the bracket itself runs.
                .filter(|(id, _)| !id.contains("cycles") && !id.contains("instructions"))
                .filter(|(_, v)| v.is_some_and(|v| v >= 1.0))
                .collect();
            if last.is_empty() {
                return;
            }
        }
        panic!("an empty bracket read {last:?} in every try");
    }

    #[test]
    fn the_catalog_lists_each_counter_once_in_reading_order() {
        let d = descriptors();
        let tier = Tier0::open();
        let ids: Vec<&str> = d.iter().map(|m| m.id.as_ref()).collect();
        assert_eq!(ids, tier.ids);
        let mut unique = ids.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ids.len());
        // Every OS with a tier 0 here counts page faults of some kind.
        if cfg!(any(unix, windows)) {
            assert!(
                d.iter().any(|m| m.id.contains("faults")
                    && matches!(m.availability, Availability::Available)),
                "{ids:?}"
            );
        }
    }
}
