//! The `sparkles.bench/1` JSON row: one per case, written by `--bench-json` and stored as
//! baselines. docs/schemas/bench.md describes it; keys are only ever added.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::stats::Summary;

pub use crate::comparison::{BetweenRunNoise, Comparison, Method, PairedNull};

/// The schema name every row carries.
pub const SCHEMA: &str = "sparkles.bench/1";

/// A case's name as one path component: every character outside `[A-Za-z0-9._-]` becomes
/// `_`, so `json/parse/twitter` becomes `json_parse_twitter`.
pub fn slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRow {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The case's name.
    pub case: String,
    /// The case's name as one path component.
    pub slug: String,
    /// Whether the case ran to completion.
    pub ok: bool,
    /// The failed case's error or panic message.
    pub error: Option<String>,
    /// Iterations per timing sample (0 when the case failed before calibrating).
    pub iterations: u64,
    /// Per-iteration timing; null when the case failed.
    pub timing: Option<Timing>,
    /// Selected metrics by id; null where not produced. A counted metric's value is its
    /// median over the counting pass's brackets.
    pub metrics: BTreeMap<String, Option<f64>>,
    /// Each counted metric's per-iteration value in every bracket of the counting pass
    /// (what `comparison.metrics` compares), by id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metric_samples: BTreeMap<String, Vec<f64>>,
    /// The comparison against `--baseline`, present only when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// Against its group's reference case, measured in the same rounds of this run
    /// (`Group::reference`; the reference's own row holds itself against itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<crate::paired::AgainstReference>,
    /// A thread sweep's case: the threads its body ran on at once (its time is per
    /// iteration per thread; its rate counts the calls of all of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// How the perf_event counting tiers counted (threads covered, read path, estimates),
    /// present only when one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counting: Option<crate::counting::CountingReport>,
    /// The `--profile` pass, present only when one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::ProfileSummary>,
}

/// Per-iteration timing of one case, in nanoseconds: the unit, the summary statistics
/// (`min`, `mean`, `max`, `p25`, `median`, `p75`, `iqr`, `mad`) and the samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Always "ns".
    pub unit: String,
    /// The summary of `samples`.
    #[serde(flatten)]
    pub summary: Summary,
    /// Every per-iteration sample, in the order taken.
    pub samples: Vec<f64>,
    /// What each sample is (rows written before it was said hold sample means).
    #[serde(default)]
    pub statistic: TimingStatistic,
    /// Each sample's run-queue wait per iteration, ns, in the same order: how long the
    /// case's thread was ready to run but waited for a CPU inside the sample's timed
    /// regions (Linux's schedstat), the time a busy machine's other work took from it.
    /// Absent where the kernel did not say for every sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_queue_wait: Option<Vec<f64>>,
}

/// What a row's timing samples are (`timing.statistic`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimingStatistic {
    /// Each sample is one timed sample's mean time per iteration (a harness run).
    #[default]
    SampleMean,
    /// Each sample is a round's fastest of several samples, per iteration (`sparkles
    /// compare`'s rows): faster than a run's sample means by construction.
    RoundMin,
}

impl Timing {
    /// The timing block for `samples` (per-iteration ns, each a sample's mean); `None` for
    /// an empty series.
    pub fn from_samples(samples: Vec<f64>) -> Option<Timing> {
        Some(Timing {
            unit: "ns".to_string(),
            summary: Summary::of(&samples)?,
            samples,
            statistic: TimingStatistic::SampleMean,
            run_queue_wait: None,
        })
    }

    /// Each sample's time less its run-queue wait, in the order taken: the time the case
    /// took where no other work held it off a CPU; `None` where the waits are not known
    /// for every sample.
    pub fn samples_less_wait(&self) -> Option<Vec<f64>> {
        crate::stats::less_waits(&self.samples, self.run_queue_wait.as_deref()?)
    }
}

/// Serializes rows as JSON lines.
pub fn to_json_lines(rows: &[BenchRow]) -> String {
    let mut out = String::new();
    for row in rows {
        // Serializing these plain structs cannot fail: every map key is a string.
        out.push_str(&serde_json::to_string(row).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// Parses JSON lines of rows; `path` names the file in errors, with the line at fault.
pub fn parse_json_lines(text: &str, path: &Path) -> Result<Vec<BenchRow>, Error> {
    let mut rows = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let fail = |message: String| Error::Baseline {
            path: path.to_path_buf(),
            line: Some(index + 1),
            message,
        };
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| fail(format!("not JSON: {e}")))?;
        match value.get("schema").and_then(|s| s.as_str()) {
            Some(SCHEMA) => {}
            Some(other) => return Err(fail(format!("schema is '{other}', expected '{SCHEMA}'"))),
            None => return Err(fail(format!("no \"schema\" key; expected '{SCHEMA}'"))),
        }
        let row: BenchRow =
            serde_json::from_value(value).map_err(|e| fail(format!("not a {SCHEMA} row: {e}")))?;
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(Error::Baseline {
            path: path.to_path_buf(),
            line: None,
            message: "holds no rows".to_string(),
        });
    }
    Ok(rows)
}

/// An ok row of `case` with these timing samples (tests of the modules that read rows).
#[cfg(test)]
pub(crate) fn ok_row(case: &str, samples: Vec<f64>) -> BenchRow {
    BenchRow {
        schema: SCHEMA.to_string(),
        case: case.to_string(),
        slug: slug(case),
        ok: true,
        error: None,
        iterations: 10,
        timing: Timing::from_samples(samples),
        metrics: BTreeMap::new(),
        metric_samples: BTreeMap::new(),
        comparison: None,
        reference: None,
        threads: None,
        counting: None,
        profile: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_replaces_everything_outside_the_safe_set() {
        assert_eq!(slug("json/parse/twitter"), "json_parse_twitter");
        assert_eq!(slug("a b:c*d?e"), "a_b_c_d_e");
        assert_eq!(slug("v1.2-x_y"), "v1.2-x_y");
        assert_eq!(slug("größe"), "gr__e");
    }

    fn row() -> BenchRow {
        BenchRow {
            schema: SCHEMA.to_string(),
            case: "json/parse/twitter".to_string(),
            slug: "json_parse_twitter".to_string(),
            ok: true,
            error: None,
            iterations: 4096,
            timing: Timing::from_samples(vec![3.0, 1.0, 2.0]),
            metrics: BTreeMap::from([("io.syscr".to_string(), None)]),
            metric_samples: BTreeMap::new(),
            comparison: None,
            reference: None,
            threads: None,
            counting: None,
            profile: None,
        }
    }

    #[test]
    fn layout_is_the_documented_one() {
        let line = to_json_lines(&[row()]);
        let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "schema",
                "case",
                "slug",
                "ok",
                "error",
                "iterations",
                "timing",
                "metrics"
            ]
        );
        let timing: Vec<_> = v["timing"].as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            timing,
            [
                "unit",
                "min",
                "mean",
                "max",
                "p25",
                "median",
                "p75",
                "iqr",
                "mad",
                "samples",
                "statistic"
            ]
        );
        assert_eq!(v["timing"]["samples"], serde_json::json!([3.0, 1.0, 2.0]));
        assert!(v["metrics"]["io.syscr"].is_null());
    }

    #[test]
    fn round_trips() {
        let text = to_json_lines(&[row(), row()]);
        let rows = parse_json_lines(&text, Path::new("x.jsonl")).unwrap();
        assert_eq!(rows, vec![row(), row()]);
    }

    #[test]
    fn corrupt_input_names_file_and_line() {
        let good = to_json_lines(&[row()]);
        let text = format!("{good}{{\"schema\": \"sparkles.bench/1\", \"case\": 3}}\n");
        let e = parse_json_lines(&text, Path::new("b/demo.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("b/demo.jsonl") && e.contains("line 2"), "{e}");
        let e = parse_json_lines("garbage\n", Path::new("f"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1") && e.contains("not JSON"), "{e}");
        let e = parse_json_lines("{\"schema\":\"other/2\"}", Path::new("f"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("other/2"), "{e}");
        let e = parse_json_lines("\n", Path::new("f"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no rows"), "{e}");
    }
}
