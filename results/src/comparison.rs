//! A row's comparison with its baseline row (the `comparison` key): the change of its
//! median, every metric's change, what is missing, and the one-line explanation.

use serde::{Deserialize, Serialize};

use crate::stats::{Change, Verdict, CONFIDENCE};

/// A row's change against its baseline row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline row's median, ns.
    pub baseline_median_ns: f64,
    /// This run's median, ns.
    pub median_ns: f64,
    /// Change of the median, percent.
    pub delta_pct: f64,
    /// Lower end of the interval on `delta_pct`; null when underpowered.
    pub ci_low_pct: Option<f64>,
    /// Upper end of the interval on `delta_pct`; null when underpowered.
    pub ci_high_pct: Option<f64>,
    /// Confidence level of the interval.
    pub confidence: f64,
    /// regression, improvement, inside_the_noise or underpowered.
    pub verdict: Verdict,
    /// Every metric both rows have, against the baseline's.
    #[serde(default)]
    pub metrics: Vec<MetricChange>,
    /// Metrics one side lacks, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics_missing: Vec<MissingMetric>,
    /// What changed and where, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
    /// How far the machine probe moved since the baseline was saved, percent (positive:
    /// the machine ran slower); present only where it moved beyond its own noise, and
    /// then on every compared row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_shift_pct: Option<f64>,
    /// Where the two sides were measured side by side (`sparkles compare`): the rounds
    /// and the null, the base against itself, beside the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired: Option<PairedNull>,
    /// `paired` (both sides measured side by side) or `unpaired` (a saved run against this
    /// one); absent in rows written before it was said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<Method>,
    /// For an unpaired comparison: the between-run noise a verdict had to clear, percent,
    /// and where the figure comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between_run_noise: Option<BetweenRunNoise>,
    /// The base's commit, where `sparkles compare` built it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_rev: Option<String>,
    /// The variant's commit (`+dirty`: the working tree with uncommitted changes), where
    /// `sparkles compare` built it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_rev: Option<String>,
}

/// A side-by-side comparison's rounds and null (`comparison.paired`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PairedNull {
    /// Rounds taken (one sample of each process a round).
    pub rounds: usize,
    /// The first base process against the second, percent.
    pub null_change_pct: f64,
    /// The 95% interval on `null_change_pct`; null when underpowered.
    pub null_ci_low_pct: Option<f64>,
    /// Its upper end.
    pub null_ci_high_pct: Option<f64>,
    /// Processes the base ran in (the null above is two of them against each other).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_processes: Option<usize>,
    /// Processes the variant ran in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_processes: Option<usize>,
    /// The variant's processes against each other, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_null_change_pct: Option<f64>,
    /// The size a change had to exceed besides zero: the larger null's whatever its sign,
    /// or the floor, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_pct: Option<f64>,
    /// The change's interval from the processes alone (Student's t on their levels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_ci_low_pct: Option<f64>,
    /// Its upper end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_ci_high_pct: Option<f64>,
}

/// How the two sides of a comparison were measured (`comparison.method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Side by side: processes of both builds, rounds interleaved (`sparkles compare`,
    /// `--baseline` with its saved executable).
    Paired,
    /// Two runs apart in time: a verdict needs a change beyond the between-run noise.
    Unpaired,
}

impl Method {
    /// As the table prints it.
    pub fn label(self) -> &'static str {
        match self {
            Method::Paired => "paired",
            Method::Unpaired => "unpaired",
        }
    }
}

impl From<Change> for Comparison {
    fn from(c: Change) -> Comparison {
        Comparison {
            baseline_median_ns: c.baseline_median,
            median_ns: c.median,
            delta_pct: c.delta_pct,
            ci_low_pct: c.ci_low_pct,
            ci_high_pct: c.ci_high_pct,
            confidence: CONFIDENCE,
            verdict: c.verdict,
            metrics: Vec::new(),
            metrics_missing: Vec::new(),
            explanation: None,
            machine_shift_pct: None,
            paired: None,
            method: None,
            between_run_noise: None,
            base_rev: None,
            variant_rev: None,
        }
    }
}

impl From<&crate::paired::PairedChange> for Comparison {
    /// The comparison of a side-by-side measurement (its revisions not yet named).
    fn from(p: &crate::paired::PairedChange) -> Comparison {
        let mut c = Comparison::from(Change {
            baseline_median: p.base_ns,
            median: p.variant_ns,
            delta_pct: p.change_pct,
            ci_low_pct: p.ci_low_pct,
            ci_high_pct: p.ci_high_pct,
            verdict: p.verdict,
        });
        c.paired = Some(PairedNull {
            rounds: p.rounds,
            null_change_pct: p.null_change_pct,
            null_ci_low_pct: p.null_ci_low_pct,
            null_ci_high_pct: p.null_ci_high_pct,
            base_processes: Some(p.base_processes),
            variant_processes: Some(p.variant_processes),
            variant_null_change_pct: p.variant_null_change_pct,
            noise_pct: Some(p.noise_pct),
            process_ci_low_pct: p.process_ci_low_pct,
            process_ci_high_pct: p.process_ci_high_pct,
        });
        c.method = Some(Method::Paired);
        c
    }
}

/// The between-run noise of an unpaired comparison (`comparison.between_run_noise`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BetweenRunNoise {
    /// A change must exceed this, percent.
    pub pct: f64,
    /// Where the figure comes from (`history: …`, `machine probe: …`, `default: …`).
    pub source: String,
}

/// One metric against the baseline's (`comparison.metrics[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricChange {
    /// The metric's id.
    pub id: String,
    /// The baseline's median.
    pub base: f64,
    /// This run's median.
    pub new: f64,
    /// `(new / base - 1) * 100`; null where the baseline is 0 and this run is not.
    pub change_pct: Option<f64>,
    /// Lower end of the interval on `change_pct`; null when underpowered.
    pub ci_low_pct: Option<f64>,
    /// Upper end of the interval on `change_pct`; null when underpowered.
    pub ci_high_pct: Option<f64>,
    /// What the interval says.
    pub verdict: MetricVerdict,
}

/// What the interval on a metric's change says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricVerdict {
    /// The whole interval lies above zero.
    Higher,
    /// The whole interval lies below zero.
    Lower,
    /// The interval contains zero.
    InsideTheNoise,
    /// Too few brackets on one side (a baseline saved before brackets has one value).
    Underpowered,
}

/// A metric one side lacks (`comparison.metrics_missing[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissingMetric {
    /// The metric's id.
    pub id: String,
    /// Why it cannot be compared.
    pub reason: String,
}

/// The leading cause of a change (`comparison.explanation.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Instructions per iteration moved with the time.
    MoreWork,
    /// Instructions flat, cycles up: IPC fell.
    SlowerPerInstruction,
    /// More page faults per iteration.
    MoreFaults,
    /// More syscalls per iteration.
    MoreSyscalls,
    /// More bytes read or written per iteration.
    MoreIo,
    /// More heap allocations per iteration (the counting allocator's `alloc.count`).
    MoreAllocations,
    /// More time off the CPU (`--profile=wall`; not measured yet).
    MoreOffCpu,
    /// An improvement with fewer instructions per iteration.
    LessWork,
    /// An improvement with instructions flat and fewer cycles: IPC rose.
    FasterPerInstruction,
    /// An improvement with fewer page faults.
    FewerFaults,
    /// An improvement with fewer syscalls.
    FewerSyscalls,
    /// An improvement with fewer bytes read or written.
    LessIo,
    /// An improvement with fewer heap allocations.
    FewerAllocations,
    /// Several of the above at once.
    Mixed,
    /// No counted cause moved, and the profile's hot functions did: where, not why.
    MovedFunctions,
    /// The time moved and no measured cause did (no counter, no profiled function).
    Unexplained,
    /// The time did not move (inside the noise, or too few samples to tell).
    None,
}

impl Cause {
    /// The cause in words, as the table and the run report print it.
    pub fn label(self) -> &'static str {
        match self {
            Cause::MoreWork => "more work",
            Cause::SlowerPerInstruction => "slower per instruction",
            Cause::MoreFaults => "more faults",
            Cause::MoreSyscalls => "more syscalls",
            Cause::MoreIo => "more I/O",
            Cause::MoreAllocations => "more allocations",
            Cause::MoreOffCpu => "more off-CPU time",
            Cause::LessWork => "less work",
            Cause::FasterPerInstruction => "faster per instruction",
            Cause::FewerFaults => "fewer faults",
            Cause::FewerSyscalls => "fewer syscalls",
            Cause::LessIo => "less I/O",
            Cause::FewerAllocations => "fewer allocations",
            Cause::Mixed => "mixed",
            Cause::MovedFunctions => "moved functions",
            Cause::Unexplained => "unexplained",
            Cause::None => "none",
        }
    }
}

impl MetricVerdict {
    /// The verdict in words.
    pub fn label(self) -> &'static str {
        match self {
            MetricVerdict::Higher => "higher",
            MetricVerdict::Lower => "lower",
            MetricVerdict::InsideTheNoise => "inside the noise",
            MetricVerdict::Underpowered => "underpowered",
        }
    }
}

/// One line that says what changed and where (`comparison.explanation`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Explanation {
    /// The leading cause.
    pub kind: Cause,
    /// The line a person reads, with the numbers.
    pub text: String,
}

/// `--fail-on`: which verdicts make the run's exit status 1 (a CI job's gate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// A regression.
    Regression,
    /// A regression or an improvement (any change: a job that pins performance).
    Change,
}

/// The verdicts of a run, counted: its one summary line and its gate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Regressions.
    pub regressions: usize,
    /// Improvements.
    pub improvements: usize,
    /// Inside the noise.
    pub inside_the_noise: usize,
    /// Too few samples for a verdict.
    pub underpowered: usize,
}

impl Tally {
    /// Counts `verdicts`.
    pub fn of(verdicts: impl IntoIterator<Item = Verdict>) -> Tally {
        let mut t = Tally::default();
        for v in verdicts {
            match v {
                Verdict::Regression => t.regressions += 1,
                Verdict::Improvement => t.improvements += 1,
                Verdict::InsideTheNoise => t.inside_the_noise += 1,
                Verdict::Underpowered => t.underpowered += 1,
            }
        }
        t
    }

    /// `1 regression, 0 improvements, 8 inside the noise` (and the underpowered, where
    /// any).
    pub fn line(&self) -> String {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut s = format!(
            "{}, {}, {} inside the noise",
            plural(self.regressions, "regression", "regressions"),
            plural(self.improvements, "improvement", "improvements"),
            self.inside_the_noise
        );
        if self.underpowered > 0 {
            s.push_str(&format!(", {} underpowered", self.underpowered));
        }
        s
    }

    /// Whether the run fails `on`.
    pub fn fails(&self, on: FailOn) -> bool {
        match on {
            FailOn::Regression => self.regressions > 0,
            FailOn::Change => self.regressions + self.improvements > 0,
        }
    }
}

#[cfg(test)]
mod tally_tests {
    use super::*;

    #[test]
    fn the_summary_line_and_the_gate() {
        use Verdict::*;
        let t = Tally::of([Regression, InsideTheNoise, InsideTheNoise, Underpowered]);
        assert_eq!(
            t.line(),
            "1 regression, 0 improvements, 2 inside the noise, 1 underpowered"
        );
        assert!(t.fails(FailOn::Regression) && t.fails(FailOn::Change));
        let t = Tally::of([Improvement, InsideTheNoise]);
        assert_eq!(t.line(), "0 regressions, 1 improvement, 1 inside the noise");
        assert!(!t.fails(FailOn::Regression) && t.fails(FailOn::Change));
        let t = Tally::of([InsideTheNoise]);
        assert!(!t.fails(FailOn::Regression) && !t.fails(FailOn::Change));
    }
}
