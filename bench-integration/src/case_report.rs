//! What one case produced in this process: its timing samples, counted values, counting
//! account and profile, before they become its row.

use sparkles_results::counting::CountingReport;
use sparkles_results::metric::{MetricSeries, MetricValue};
use sparkles_results::profile::ProfileSummary;
use sparkles_results::throughput::Throughput;

/// What one case produced.
#[derive(Debug, Clone)]
pub(crate) struct CaseReport {
    pub name: String,
    pub slug: String,
    pub ok: bool,
    pub error: Option<String>,
    /// Iterations per timing sample.
    pub iterations: u64,
    /// Per-iteration ns, in the order taken.
    pub samples: Vec<f64>,
    /// Each sample's run-queue wait, per-iteration ns, in the same order; `None` where the
    /// kernel did not say for every sample (not Linux, no schedstat).
    pub waits: Option<Vec<f64>>,
    pub throughput: Option<Throughput>,
    /// Values from the counting pass: each metric's median over the brackets.
    pub counted: Vec<MetricValue>,
    /// Each metric's per-iteration value in every bracket, in order.
    pub counted_brackets: Vec<MetricSeries>,
    /// How the perf_event tiers counted, where they did.
    pub counting: Option<CountingReport>,
    /// The profile pass's outcome.
    pub profile: Option<ProfileSummary>,
    /// A thread sweep's case: the threads its body ran on at once.
    pub threads: Option<usize>,
}

impl CaseReport {
    /// A case's report before anything was measured.
    pub(crate) fn new(name: String) -> CaseReport {
        CaseReport {
            slug: crate::suite::slug(&name),
            name,
            ok: true,
            error: None,
            iterations: 0,
            samples: Vec::new(),
            waits: Some(Vec::new()),
            throughput: None,
            counted: Vec::new(),
            counted_brackets: Vec::new(),
            counting: None,
            profile: None,
            threads: None,
        }
    }

    /// Each sample less its run-queue wait, where every wait is known.
    pub(crate) fn samples_less_wait(&self) -> Option<Vec<f64>> {
        sparkles_results::stats::less_waits(&self.samples, self.waits.as_deref()?)
    }

    /// Keeps a timed sample of `iterations`: its time and its run-queue wait per
    /// iteration (the waits forgotten, all of them, where one is unknown).
    pub(crate) fn keep_sample(
        &mut self,
        iterations: u64,
        elapsed: std::time::Duration,
        wait: Option<std::time::Duration>,
    ) {
        let per = |d: std::time::Duration| d.as_nanos() as f64 / iterations as f64;
        self.samples.push(per(elapsed));
        self.waits = match (self.waits.take(), wait) {
            (Some(mut waits), Some(w)) => {
                waits.push(per(w.min(elapsed)));
                Some(waits)
            }
            _ => None,
        };
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use super::*;
    use std::time::Duration;

    fn report() -> CaseReport {
        CaseReport {
            iterations: 4,
            ..CaseReport::new("c".to_string())
        }
    }

    #[test]
    fn each_samples_wait_is_kept_per_iteration_and_all_are_forgotten_once_one_is_unknown() {
        let mut r = report();
        r.keep_sample(
            4,
            Duration::from_nanos(400),
            Some(Duration::from_nanos(100)),
        );
        // A wait longer than its sample (clocks read apart) is held to the sample.
        r.keep_sample(
            4,
            Duration::from_nanos(800),
            Some(Duration::from_nanos(900)),
        );
        assert_eq!(r.samples, [100.0, 200.0]);
        assert_eq!(r.waits, Some(vec![25.0, 200.0]));
        r.keep_sample(4, Duration::from_nanos(400), None);
        r.keep_sample(4, Duration::from_nanos(400), Some(Duration::ZERO));
        assert_eq!(r.samples.len(), 4);
        assert_eq!(r.waits, None);
    }
}
