//! A suite's runs over commits: every `--bench` run appends one line to
//! `target/sparkles/history/SUITE.jsonl` (`--history-dir` moves it, `--no-history` skips
//! it), its cases' timing tagged with the commit, branch, time and environment record;
//! read back as each case's series, with the change points found across it
//! ([`changes`]) and the machine changes marked.
//!
//! A line is one run, written with one `write(2)` to a file opened for appending, after a
//! newline where the file's last line was cut short: a run stopped while writing leaves at
//! most a cut last line, which the reader skips with a warning naming it, as it skips
//! any line it cannot read. Nothing in the file is ever rewritten.

pub mod changes;

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::environment::Environment;
use crate::error::Error;
use crate::row::BenchRow;

/// The schema of a history line: one run.
pub const RUN_SCHEMA: &str = "sparkles.history-run/1";

/// The history folder: `--history-dir`, else `history/` in the run's output folder.
pub fn dir(out_dir: &Path, explicit: Option<&Path>) -> PathBuf {
    explicit.map_or_else(|| out_dir.join("history"), Path::to_path_buf)
}

/// A suite's history file in `dir`.
pub fn path(dir: &Path, suite: &str) -> PathBuf {
    dir.join(format!("{}.jsonl", crate::row::slug(suite)))
}

/// One run of a suite, one line of its history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Always [`RUN_SCHEMA`].
    pub schema: String,
    /// The suite.
    pub suite: String,
    /// `git rev-parse HEAD` where the run was made (the full hex id); null outside a
    /// repository.
    pub commit: Option<String>,
    /// Whether tracked files differed from that commit.
    pub dirty: Option<bool>,
    /// The branch (git's, or the CI service's where the checkout is detached).
    pub branch: Option<String>,
    /// When the run started, seconds since the Unix epoch.
    pub time: u64,
    /// The machine, toolchain and build, as baselines keep it.
    pub environment: Environment,
    /// Each case that was timed.
    pub cases: Vec<CaseRun>,
    /// [`COMPARE_SOURCE`] for a line `sparkles compare` appended: its cases' medians are per-round
    /// minima of the variant's processes, not a timing pass's, so the series of times
    /// leave it out and keep its side-by-side results; absent for a bench run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// [`Run::source`] of a line `sparkles compare` appended.
pub const COMPARE_SOURCE: &str = "compare";

/// A case compared side by side in one run (a paired `--baseline`, `sparkles compare`):
/// its change against the base measured beside it, and the noise it had to clear.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideBySide {
    /// The base's commit (`sparkles compare`'s), where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_rev: Option<String>,
    /// The variant's processes against the base's, percent.
    pub change_pct: f64,
    /// Its 95% interval.
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    /// The size a change had to exceed (the larger null whatever its sign, or the floor).
    pub noise_pct: Option<f64>,
    /// The verdict.
    pub verdict: crate::stats::Verdict,
}

/// One case in one run: its timing's median and interval, and its metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseRun {
    pub case: String,
    /// Median time per iteration, ns.
    pub median: f64,
    /// The median's 95% interval (distribution-free, from the order statistics); null
    /// where the run took too few samples for one.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Timing samples taken.
    pub samples: usize,
    /// The samples each less its run-queue wait (the time the case's thread was held off a
    /// CPU by other work: `timing.run_queue_wait`), where the kernel said for every
    /// sample: their 10th percentile is what the series of times follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub less_wait: Option<LessWait>,
    /// Where the run compared the case side by side (paired): the size of its larger null,
    /// either side's processes against each other, percent. Later runs learn the case's
    /// floor from these ([`crate::baseline::learned_floor`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub null_pct: Option<f64>,
    /// Where the run compared the case side by side: what it found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_by_side: Option<SideBySide>,
    /// Every metric the row has a value of, by id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, f64>,
}

/// A case's time in one run with each sample's run-queue wait taken out: the fastest
/// tenth of its samples (the 10th percentile), what the series of times follow, and their
/// median.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LessWait {
    /// The 10th percentile, ns per iteration.
    pub p10: f64,
    /// Its distribution-free 95% interval (`stats::quantile_ci`): none below 36 samples
    /// (left out of the line then: 30 bytes a case a run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_low: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_high: Option<f64>,
    /// The median, ns per iteration.
    pub median: f64,
}

impl LessWait {
    /// The quantile [`LessWait::p10`] is.
    pub const QUANTILE: f64 = crate::stats::LESS_WAIT_QUANTILE;

    /// Of `samples`, each already less its wait.
    pub fn of(mut samples: Vec<f64>) -> Option<LessWait> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_by(f64::total_cmp);
        let (ci_low, ci_high) = crate::stats::quantile_ci(&samples, Self::QUANTILE).unzip();
        Some(LessWait {
            p10: crate::stats::quantile_sorted(&samples, Self::QUANTILE),
            ci_low,
            ci_high,
            median: crate::stats::quantile_sorted(&samples, 0.5),
        })
    }
}

impl Run {
    /// The run of `rows` (the timed ones) measured in `environment`.
    pub fn of(suite: &str, rows: &[BenchRow], environment: &Environment) -> Run {
        let cases = rows
            .iter()
            .filter_map(|r| {
                let t = r.timing.as_ref()?;
                let (ci_low, ci_high) = crate::stats::median_ci(&t.samples).unzip();
                Some(CaseRun {
                    case: r.case.clone(),
                    median: t.summary.median,
                    ci_low,
                    ci_high,
                    samples: t.samples.len(),
                    less_wait: t.samples_less_wait().and_then(LessWait::of),
                    null_pct: r
                        .comparison
                        .as_ref()
                        .and_then(|c| c.paired.as_ref())
                        .map(|p| {
                            p.null_change_pct
                                .abs()
                                .max(p.variant_null_change_pct.map_or(0.0, f64::abs))
                        }),
                    side_by_side: r.comparison.as_ref().and_then(|c| {
                        (c.method == Some(crate::comparison::Method::Paired)).then(|| SideBySide {
                            base_rev: c.base_rev.clone(),
                            change_pct: c.delta_pct,
                            ci_low_pct: c.ci_low_pct,
                            ci_high_pct: c.ci_high_pct,
                            noise_pct: c.paired.as_ref().and_then(|p| p.noise_pct),
                            verdict: c.verdict,
                        })
                    }),
                    metrics: r
                        .metrics
                        .iter()
                        .filter_map(|(k, v)| Some((k.clone(), (*v)?)))
                        .filter(|(_, v)| v.is_finite())
                        .collect(),
                })
            })
            .collect();
        Run {
            schema: RUN_SCHEMA.to_string(),
            suite: suite.to_string(),
            commit: environment.git_commit.clone(),
            dirty: environment.git_dirty,
            branch: environment.git_branch.clone(),
            time: environment.unix_time,
            environment: environment.clone(),
            cases,
            source: None,
        }
    }
}

/// Appends `run` to the history file at `path` as one line (the folder made where it is
/// not); the bytes it added.
pub fn append(path: &Path, run: &Run) -> Result<usize, Error> {
    let io = |e| Error::io(path, e);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let mut line = serde_json::to_vec(run).map_err(|e| io(e.into()))?;
    line.push(b'\n');
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(path)
        .map_err(io)?;
    // A cut last line (a run stopped while writing) ends here, not in this run's line.
    let len = file.seek(SeekFrom::End(0)).map_err(io)?;
    if len > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(len - 1)).map_err(io)?;
        file.read_exact(&mut last).map_err(io)?;
        if last[0] != b'\n' {
            line.insert(0, b'\n');
        }
    }
    file.write_all(&line).map_err(io)?;
    Ok(line.len())
}

/// A history file read: its runs in time order, and the lines skipped.
#[derive(Debug, Default)]
pub struct History {
    pub runs: Vec<Run>,
    /// `FILE, line N: why` for each line that was not a run.
    pub warnings: Vec<String>,
}

impl History {
    /// The runs made on `branch` (git's name, or the CI's for a detached checkout) alone.
    pub fn on_branch(&self, branch: &str) -> History {
        History {
            runs: self
                .runs
                .iter()
                .filter(|r| r.branch.as_deref() == Some(branch))
                .cloned()
                .collect(),
            warnings: Vec::new(),
        }
    }

    /// Each branch its runs were made on, with how many, most first (`(no branch)` for
    /// runs outside a repository or on a detached checkout).
    pub fn branches(&self) -> Vec<(String, usize)> {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for r in &self.runs {
            *counts
                .entry(r.branch.clone().unwrap_or_else(|| "(no branch)".into()))
                .or_default() += 1;
        }
        let mut all: Vec<(String, usize)> = counts.into_iter().collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        all
    }
}

/// Reads the history at `path`: a line that is not a run (damaged, cut short, of another
/// schema) is skipped with a warning naming it; a missing file is an error naming it.
pub fn read(path: &Path) -> Result<History, Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    Ok(parse(&bytes, &path.display().to_string()))
}

/// [`read`] without the cases' metrics but the exact counts (what the series and their
/// change points need: a long history reads in half the time).
pub fn read_timing(path: &Path) -> Result<History, Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    Ok(parse_as(&bytes, &path.display().to_string(), Lines::Timing))
}

/// How much of each line is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lines {
    Whole,
    Timing,
}

/// A run's line without its cases' metrics (skipped unread).
#[derive(Deserialize)]
struct TimingRun {
    schema: String,
    suite: String,
    commit: Option<String>,
    dirty: Option<bool>,
    branch: Option<String>,
    time: u64,
    environment: Environment,
    cases: Vec<TimingCase>,
    #[serde(default)]
    source: Option<String>,
}

#[derive(Deserialize)]
struct TimingCase {
    case: String,
    median: f64,
    ci_low: Option<f64>,
    ci_high: Option<f64>,
    samples: usize,
    #[serde(default)]
    less_wait: Option<LessWait>,
    #[serde(default)]
    null_pct: Option<f64>,
    #[serde(default)]
    side_by_side: Option<SideBySide>,
    /// The exact counts alone (the other metrics are skipped unread).
    #[serde(default, deserialize_with = "exact_only")]
    metrics: BTreeMap<String, f64>,
}

/// The exact counts ([`exact_metric`]) among a case's metrics, the rest skipped unread.
fn exact_only<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<String, f64>, D::Error> {
    struct Exact;
    impl<'de> serde::de::Visitor<'de> for Exact {
        type Value = BTreeMap<String, f64>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a map of metric ids to values")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some(ExactId(id)) = map.next_key::<ExactId>()? {
                match id {
                    Some(id) => {
                        out.insert(id, map.next_value::<f64>()?);
                    }
                    None => {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
            }
            Ok(out)
        }
    }
    d.deserialize_map(Exact)
}

/// A metric id read where it is exact, and only looked at (not copied) where not: a long
/// history has millions of them.
struct ExactId(Option<String>);

impl<'de> Deserialize<'de> for ExactId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ExactId, D::Error> {
        struct Id;
        impl serde::de::Visitor<'_> for Id {
            type Value = ExactId;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a metric id")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ExactId, E> {
                Ok(ExactId(exact_metric(v).then(|| v.to_string())))
            }
        }
        d.deserialize_str(Id)
    }
}

impl From<TimingRun> for Run {
    fn from(r: TimingRun) -> Run {
        Run {
            schema: r.schema,
            suite: r.suite,
            commit: r.commit,
            dirty: r.dirty,
            branch: r.branch,
            time: r.time,
            environment: r.environment,
            cases: r
                .cases
                .into_iter()
                .map(|c| CaseRun {
                    case: c.case,
                    median: c.median,
                    ci_low: c.ci_low,
                    ci_high: c.ci_high,
                    samples: c.samples,
                    less_wait: c.less_wait,
                    null_pct: c.null_pct,
                    side_by_side: c.side_by_side,
                    metrics: c.metrics,
                })
                .collect(),
            source: r.source,
        }
    }
}

/// [`read`] of the bytes of a history file called `name`.
pub fn parse(bytes: &[u8], name: &str) -> History {
    parse_as(bytes, name, Lines::Whole)
}

/// The lines parsed on every core (a long history is tens of megabytes), in order.
fn parse_as(bytes: &[u8], name: &str, what: Lines) -> History {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    // Chunks that end at line ends, each with the number of its first line.
    let mut chunks: Vec<(usize, &[u8])> = Vec::new();
    let (mut start, mut line) = (0, 1);
    let step = bytes.len() / threads + 1;
    while start < bytes.len() {
        let mut end = (start + step).min(bytes.len());
        if end < bytes.len() {
            end = memchr::memchr(b'\n', &bytes[end..]).map_or(bytes.len(), |i| end + i + 1);
        }
        chunks.push((line, &bytes[start..end]));
        line += memchr::memchr_iter(b'\n', &bytes[start..end]).count();
        start = end;
    }
    let ends_whole = bytes.last().is_none_or(|&b| b == b'\n');
    let last = chunks.len().saturating_sub(1);
    let parsed: Vec<History> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .iter()
            .enumerate()
            .map(|(i, &(first, chunk))| {
                let cut = i == last && !ends_whole;
                scope.spawn(move || parse_lines(chunk, first, cut, name, what))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut history = History::default();
    for h in parsed {
        history.runs.extend(h.runs);
        history.warnings.extend(h.warnings);
    }
    // In time order (a history merged from several machines' files may not be).
    history.runs.sort_by_key(|r| r.time);
    history
}

/// The runs of `bytes` (whole lines, the first numbered `first`); `cut`: its last line has
/// no newline (a run stopped while writing it).
fn parse_lines(bytes: &[u8], first: usize, cut: bool, name: &str, what: Lines) -> History {
    let mut history = History::default();
    let mut lines = bytes.split(|&b| b == b'\n').peekable();
    let mut number = first - 1;
    while let Some(line) = lines.next() {
        number += 1;
        let last = lines.peek().is_none();
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if last && cut {
            history.warnings.push(format!(
                "{name}, line {number}: cut short (a run stopped while writing it?): skipped"
            ));
            continue;
        }
        let run = match what {
            Lines::Whole => serde_json::from_slice::<Run>(line),
            Lines::Timing => serde_json::from_slice::<TimingRun>(line).map(Run::from),
        };
        match run {
            Ok(run) if run.schema == RUN_SCHEMA => history.runs.push(run),
            Ok(run) => history.warnings.push(format!(
                "{name}, line {number}: schema {:?}, not {RUN_SCHEMA}: skipped",
                run.schema
            )),
            Err(e) => {
                // Of another schema, or damaged: said as what it is.
                #[derive(Deserialize)]
                struct Schema {
                    schema: String,
                }
                let why = match serde_json::from_slice::<Schema>(line) {
                    Ok(other) if other.schema != RUN_SCHEMA => {
                        format!("schema {:?}, not {RUN_SCHEMA}", other.schema)
                    }
                    _ => format!("not a run ({e})"),
                };
                history
                    .warnings
                    .push(format!("{name}, line {number}: {why}: skipped"));
            }
        }
    }
    history
}

/// A commit as the history's views show it: its first ten hex digits, a `+` where the tree
/// was dirty.
pub fn short_commit(commit: Option<&str>, dirty: Option<bool>) -> String {
    match commit {
        Some(c) => format!(
            "{}{}",
            c.chars().take(10).collect::<String>(),
            if dirty == Some(true) { "+" } else { "" }
        ),
        None => "(no commit)".to_string(),
    }
}

/// [`Series::statistic`] where each point is its run's median time as measured (some of
/// the case's runs did not know their run-queue waits).
pub const MEDIAN: &str = "median";

/// [`Series::statistic`] where each point is the 10th percentile of its run's samples
/// each less its run-queue wait ([`CaseRun::less_wait`]): what a series of times follows
/// where every run of the case knew its waits. Measured (docs/design.md, "History under
/// load"): beside two CPU hogs on 2 cores a case's medians as measured jump between 1x,
/// 1.75x and 2.5x its time from run to run, and a 30% step was found in 1 of 10 histories
/// of 12 runs; less their waits, in 10 of 10, and the fastest tenth of each run's samples
/// also leaves out the seconds-long slowdowns a quiet virtual machine has (its host's).
pub const LOW_LESS_WAIT: &str = "10th percentile less run-queue wait";

/// One case's series over the history: a point per run that timed it.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub case: String,
    /// What each run's `median` is: [`LOW_LESS_WAIT`], [`MEDIAN`] or the metric's id.
    pub statistic: String,
    pub runs: Vec<Point>,
    pub change_points: Vec<changes::ChangePoint>,
    /// Steps the machine probe took with it, in the runs' own statistic, so that what
    /// is left of the step once the probe's share is taken out is under the smallest step
    /// ([`changes::machine_steps`]): the machine's, not the commit's, and no change point.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub machine_steps: Vec<changes::ChangePoint>,
    /// Where it has none only for want of runs: the step, and the runs it needs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub too_few_runs: Option<changes::TooFewRuns>,
    /// Its comparisons measured side by side (paired `--baseline` runs, `sparkles
    /// compare`), in time order: what each found against the base beside it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub side_by_side: Vec<SideBySidePoint>,
}

/// A side-by-side comparison in a case's series.
#[derive(Debug, Clone, Serialize)]
pub struct SideBySidePoint {
    /// The variant's commit.
    pub commit: Option<Arc<str>>,
    pub dirty: Option<bool>,
    pub time: u64,
    /// `compare` (`sparkles compare`) or `baseline` (a paired `--baseline` run).
    pub by: &'static str,
    #[serde(flatten)]
    pub found: SideBySide,
}

/// A case in one run.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The full hex id; null outside a repository. (Shared by the run's cases.)
    pub commit: Option<Arc<str>>,
    pub dirty: Option<bool>,
    pub branch: Option<Arc<str>>,
    /// Seconds since the Unix epoch.
    pub time: u64,
    /// ns per iteration: the series' statistic ([`Series::statistic`]).
    pub median: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// The run's median time as measured, where `median` is another statistic of its
    /// time (the 10th percentile less its run-queue waits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_measured: Option<f64>,
    /// What changed on the machine since the run before it (`field: 'was' → 'now'`):
    /// a step here is the machine's as much as the commit's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub machine_change: Vec<String>,
    /// The run's machine probe (a fixed loop timed beside the cases, ns an iteration):
    /// how fast the machine was during the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<f64>,
    /// The probe's 10th percentile less its run-queue waits, where the run knew them:
    /// the machine's speed in the statistic [`LOW_LESS_WAIT`] series follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_less_wait: Option<f64>,
}

/// How a series is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scale {
    /// Each run's medians as measured.
    #[default]
    AsMeasured,
    /// Each run's medians (and intervals) scaled by the median probe over the runs
    /// against that run's probe: where a busy machine slowed a run, its cases and its
    /// probe alike, that is taken out (a run without a probe is left as measured).
    PerProbe,
}

/// `case`'s points, its place in `order` taken where it is seen for the first time (its
/// name copied then alone: a long history names each case hundreds of thousands of times).
fn first_seen<'m>(
    order: &mut Vec<String>,
    by_case: &'m mut BTreeMap<String, Vec<Point>>,
    case: &str,
) -> Option<&'m mut Vec<Point>> {
    if !by_case.contains_key(case) {
        order.push(case.to_string());
        by_case.insert(case.to_string(), Vec::new());
    }
    by_case.get_mut(case)
}

/// What a series follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// Each run's median time (scaled as [`Scale`] says).
    Median,
    /// A metric each run stored (`sparkles history --metric ID`); runs without it are
    /// left out of the case's series.
    Metric(&'a str),
}

/// Whether the metric `id` is an exact count (callgrind's, the counting allocator's):
/// the same code gives the same count, so a step of a fraction of a percent is real.
pub fn exact_metric(id: &str) -> bool {
    id.starts_with("valgrind.") || id.starts_with("alloc.")
}

/// Each case's series (those `keep` keeps, in the order they first ran), with its
/// change points.
pub fn series(
    history: &History,
    keep: impl Fn(&str) -> bool,
    options: &changes::Options,
    scale: Scale,
) -> Vec<Series> {
    series_of(history, keep, options, scale, Value::Median)
}

/// [`series`] of `value`.
pub fn series_of(
    history: &History,
    keep: impl Fn(&str) -> bool,
    options: &changes::Options,
    scale: Scale,
    value: Value<'_>,
) -> Vec<Series> {
    let probes: Vec<f64> = history
        .runs
        .iter()
        .filter_map(|r| r.environment.machine_probe.as_ref().map(|p| p.median_ns))
        .filter(|p| p.is_finite() && *p > 0.0)
        .collect();
    let typical_probe = {
        let mut sorted = probes.clone();
        sorted.sort_by(f64::total_cmp);
        (!sorted.is_empty()).then(|| crate::stats::quantile_sorted(&sorted, 0.5))
    };
    // The cases of which some timed run did not know its waits: their series are of the
    // medians as measured (one statistic a series, or its runs could step between them).
    let mut as_measured: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    if value == Value::Median {
        for run in history.runs.iter().filter(|r| r.source.is_none()) {
            for c in run.cases.iter().filter(|c| c.less_wait.is_none()) {
                as_measured.insert(&c.case);
            }
        }
    }
    let mut order: Vec<String> = Vec::new();
    let mut by_case: BTreeMap<String, Vec<Point>> = BTreeMap::new();
    let mut side_by_side: BTreeMap<String, Vec<SideBySidePoint>> = BTreeMap::new();
    let mut previous: Option<&Environment> = None;
    for run in &history.runs {
        let compare = run.source.as_deref() == Some(COMPARE_SOURCE);
        if value == Value::Median {
            for c in run.cases.iter().filter(|c| keep(&c.case)) {
                if let Some(found) = &c.side_by_side {
                    first_seen(&mut order, &mut by_case, &c.case);
                    side_by_side
                        .entry(c.case.clone())
                        .or_default()
                        .push(SideBySidePoint {
                            commit: run.commit.as_deref().map(Arc::from),
                            dirty: run.dirty,
                            time: run.time,
                            by: if compare { COMPARE_SOURCE } else { "baseline" },
                            found: found.clone(),
                        });
                }
            }
        }
        // compare's medians are per-round minima of its processes: no point of the
        // times (nor of a machine change).
        if compare {
            continue;
        }
        let machine_change: Vec<String> = previous
            .map(|then| {
                then.differences(&run.environment)
                    .into_iter()
                    .map(|(field, was, now)| format!("{field}: '{was}' → '{now}'"))
                    .collect()
            })
            .unwrap_or_default();
        previous = Some(&run.environment);
        let probe_by = |f: fn(&crate::machine_probe::MachineProbe) -> Option<f64>| {
            run.environment
                .machine_probe
                .as_ref()
                .and_then(f)
                .filter(|p| p.is_finite() && *p > 0.0)
        };
        let probe = probe_by(|p| Some(p.median_ns));
        let probe_less_wait = probe_by(|p| p.less_wait_p10_ns);
        let factor = match (scale, probe, typical_probe) {
            (Scale::PerProbe, Some(p), Some(t)) => t / p,
            _ => 1.0,
        };
        let commit: Option<Arc<str>> = run.commit.as_deref().map(Arc::from);
        let branch: Option<Arc<str>> = run.branch.as_deref().map(Arc::from);
        for c in run.cases.iter().filter(|c| keep(&c.case)) {
            let (median, ci_low, ci_high, measured) = match (value, c.less_wait) {
                (Value::Median, Some(less)) if !as_measured.contains(c.case.as_str()) => (
                    less.p10 * factor,
                    less.ci_low.map(|v| v * factor),
                    less.ci_high.map(|v| v * factor),
                    Some(c.median * factor),
                ),
                (Value::Median, _) => (
                    c.median * factor,
                    c.ci_low.map(|v| v * factor),
                    c.ci_high.map(|v| v * factor),
                    None,
                ),
                (Value::Metric(id), _) => match c.metrics.get(id) {
                    Some(&v) => (v, None, None, None),
                    None => continue,
                },
            };
            let Some(points) = first_seen(&mut order, &mut by_case, &c.case) else {
                continue;
            };
            points.push(Point {
                commit: commit.clone(),
                dirty: run.dirty,
                branch: branch.clone(),
                time: run.time,
                median,
                ci_low,
                ci_high,
                as_measured: measured,
                machine_change: machine_change.clone(),
                probe,
                probe_less_wait,
            });
        }
    }
    let mut all: Vec<Series> = order
        .into_iter()
        .map(|case| Series {
            statistic: match value {
                Value::Metric(id) => id.to_string(),
                Value::Median if as_measured.contains(case.as_str()) => MEDIAN.to_string(),
                Value::Median => LOW_LESS_WAIT.to_string(),
            },
            runs: by_case.remove(&case).unwrap_or_default(),
            side_by_side: side_by_side.remove(&case).unwrap_or_default(),
            case,
            change_points: Vec::new(),
            machine_steps: Vec::new(),
            too_few_runs: None,
        })
        .collect();
    // Each case's change points on a core of its own share.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = all.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for chunk in all.chunks_mut(per) {
            scope.spawn(move || {
                for s in chunk {
                    let found = changes::find(&s.runs, options);
                    // The probe's share of a step, in the series' own statistic; a series
                    // already scaled by the probe has had it taken out, and an exact
                    // count's does not depend on the machine's speed.
                    let probe: Option<fn(&Point) -> Option<f64>> = match value {
                        Value::Metric(_) => None,
                        Value::Median if scale == Scale::PerProbe => None,
                        Value::Median if s.statistic == LOW_LESS_WAIT => {
                            Some(|p| p.probe_less_wait)
                        }
                        Value::Median => Some(|p| p.probe),
                    };
                    (s.change_points, s.machine_steps) = match probe {
                        Some(probe) => changes::machine_steps(&s.runs, found, probe, options),
                        None => (found, Vec::new()),
                    };
                    if s.change_points.is_empty() && s.machine_steps.is_empty() {
                        s.too_few_runs = changes::too_few_runs(&s.runs, options);
                    }
                }
            });
        }
    });
    all
}

/// A case's series of times, with the series of each exact count its runs stored beside
/// it (`valgrind.instructions`, `alloc.count`, …): a count that moved at a commit is the
/// strongest evidence there is.
#[derive(Debug, Clone, Serialize)]
pub struct Trend {
    #[serde(flatten)]
    pub series: Series,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exact: Vec<ExactSeries>,
}

/// An exact count's series beside a case's times.
#[derive(Debug, Clone, Serialize)]
pub struct ExactSeries {
    pub metric: String,
    #[serde(flatten)]
    pub series: Series,
}

/// Each case's [`Trend`] (those `keep` keeps, in the order they first ran): its times'
/// series under `options`, each exact count's under `options` with the exact counts'
/// floor ([`changes::EXACT_FLOOR_PCT`]).
pub fn trends(
    history: &History,
    keep: impl Fn(&str) -> bool + Copy,
    options: &changes::Options,
    scale: Scale,
) -> Vec<Trend> {
    let exact_options = options.for_exact_counts();
    let exact_ids: std::collections::BTreeSet<&str> = history
        .runs
        .iter()
        .flat_map(|r| r.cases.iter().flat_map(|c| c.metrics.keys()))
        .map(String::as_str)
        .filter(|id| exact_metric(id))
        .collect();
    let mut exact: Vec<(&str, Vec<Series>)> = exact_ids
        .into_iter()
        .map(|id| {
            let all = series_of(history, keep, &exact_options, scale, Value::Metric(id));
            (id, all)
        })
        .collect();
    series(history, keep, options, scale)
        .into_iter()
        .map(|series| {
            let beside = exact
                .iter_mut()
                .filter_map(|(id, all)| {
                    let at = all.iter().position(|s| s.case == series.case)?;
                    Some(ExactSeries {
                        metric: id.to_string(),
                        series: all.swap_remove(at),
                    })
                })
                .collect();
            Trend {
                series,
                exact: beside,
            }
        })
        .collect()
}

/// A time as UTC, to the minute.
pub fn when(unix: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix);
    let mut s = humantime::format_rfc3339_seconds(t).to_string();
    s.truncate(16);
    s.replace('T', " ")
}

impl Series {
    /// Its change points in a line (commit, step, p, when, a machine change there), or
    /// why it has none.
    pub fn change_points_line(&self) -> String {
        let points: Vec<String> = self
            .change_points
            .iter()
            .map(|p| {
                let at = &self.runs[p.index];
                format!(
                    "{} {:+.1}% (p {}, {}){}",
                    short_commit(p.commit.as_deref(), at.dirty),
                    p.change_pct,
                    changes::p_text(p.p_value),
                    when(p.time),
                    if p.machine_change.is_empty() {
                        String::new()
                    } else {
                        format!(" at a machine change: {}", p.machine_change.join("; "))
                    }
                )
            })
            .collect();
        let found = match (&self.too_few_runs, points.is_empty()) {
            (Some(few), true) => few.line(),
            (None, true) => "none".to_string(),
            _ => points.join(", "),
        };
        match self.machine_steps_line() {
            Some(machine) => format!("{found}; {machine}"),
            None => found,
        }
    }

    /// Its steps the machine probe took with it ([`Series::machine_steps`]) in a line;
    /// `None` where it has none.
    pub fn machine_steps_line(&self) -> Option<String> {
        let steps: Vec<String> = self
            .machine_steps
            .iter()
            .map(|p| {
                format!(
                    "{} {:+.1}% with the probe {:+.1}% ({})",
                    short_commit(p.commit.as_deref(), self.runs[p.index].dirty),
                    p.change_pct,
                    p.probe_change_pct.unwrap_or(0.0),
                    when(p.time)
                )
            })
            .collect();
        (!steps.is_empty())
            .then(|| format!("the machine's, not the commits': {}", steps.join(", ")))
    }

    /// Its comparisons measured side by side in a line: how many, and the latest's
    /// change, interval, verdict and noise; `None` where it has none.
    pub fn side_by_side_line(&self) -> Option<String> {
        let latest = self.side_by_side.last()?;
        let f = &latest.found;
        let by = |what: &str| self.side_by_side.iter().filter(|p| p.by == what).count();
        Some(format!(
            "{} measured side by side ({} by compare, {} by a paired --baseline); the latest, {} {}: {:+.1}%{} {}{}",
            self.side_by_side.len(),
            by(COMPARE_SOURCE),
            by("baseline"),
            short_commit(latest.commit.as_deref(), latest.dirty),
            when(latest.time),
            f.change_pct,
            match (f.ci_low_pct, f.ci_high_pct) {
                (Some(l), Some(h)) => format!(" [{l:+.1}, {h:+.1}]"),
                _ => String::new(),
            },
            f.verdict.label(),
            f.noise_pct
                .map(|n| format!(" (noise ±{n:.1}%)"))
                .unwrap_or_default()
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use super::*;
    use crate::stats::Verdict;

    fn run(commit: &str, time: u64, median: f64) -> Run {
        let mut environment = Environment::current("s");
        environment.unix_time = time;
        Run {
            schema: RUN_SCHEMA.to_string(),
            suite: "s".to_string(),
            commit: Some(commit.to_string()),
            dirty: Some(false),
            branch: Some("main".to_string()),
            time,
            environment,
            cases: vec![CaseRun {
                case: "c".to_string(),
                median,
                ci_low: Some(median * 0.99),
                ci_high: Some(median * 1.01),
                samples: 32,
                less_wait: None,
                null_pct: None,
                side_by_side: None,
                metrics: BTreeMap::new(),
            }],
            source: None,
        }
    }

    #[test]
    fn runs_are_appended_whole_and_a_damaged_line_is_skipped_by_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = path(&dir.path().join("history"), "my suite");
        assert!(path.ends_with("history/my_suite.jsonl"));
        append(&path, &run("a", 1, 100.0)).unwrap();
        // A run cut short while writing, then a line of something else.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"{\"schema\":\"sparkles.history-run/1\",\"suite\":\"s\",\"com")
            .unwrap();
        drop(f);
        append(&path, &run("b", 2, 110.0)).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"schema\":\"other/1\"}\n")
            .unwrap();
        append(&path, &run("c", 3, 120.0)).unwrap();
        let h = read(&path).unwrap();
        let commits: Vec<_> = h.runs.iter().map(|r| r.commit.clone().unwrap()).collect();
        assert_eq!(commits, ["a", "b", "c"]);
        assert_eq!(h.runs[1], run("b", 2, 110.0));
        assert_eq!(h.warnings.len(), 2, "{:?}", h.warnings);
        assert!(
            h.warnings[0].contains("line 2: not a run"),
            "{}",
            h.warnings[0]
        );
        assert!(
            h.warnings[1].contains("line 4: schema \"other/1\""),
            "{}",
            h.warnings[1]
        );
        // The last line cut short: skipped, said as cut.
        let bytes = std::fs::read(&path).unwrap();
        let cut = parse(&bytes[..bytes.len() - 10], "h.jsonl");
        assert_eq!(cut.runs.len(), 2);
        assert!(cut.warnings.last().unwrap().contains("line 5: cut short"));
        assert!(read(&dir.path().join("none.jsonl")).is_err());
    }

    #[test]
    fn an_exact_count_that_stepped_1pct_is_found_where_the_times_show_nothing() {
        // Twelve runs, one a commit: the times scatter by 3% and do not move; the 7th
        // commit adds 1% to the instructions (valgrind's counts differ by a few
        // instructions between runs); a 13th run lacks the count.
        let mut rng = fastrand::Rng::with_seed(4);
        let mut runs = Vec::new();
        for i in 0..13u64 {
            let mut r = run(
                &format!("c{i}"),
                i,
                1000.0 * (1.0 + 0.03 * (rng.f64() - 0.5)),
            );
            let base = if i >= 6 { 1_010_000.0 } else { 1_000_000.0 };
            if i != 12 {
                r.cases[0]
                    .metrics
                    .insert("valgrind.instructions".into(), base + rng.f64() * 20.0);
            }
            r.cases[0].metrics.insert("rusage.minflt".into(), 7.0);
            runs.push(r);
        }
        let h = History {
            runs,
            warnings: Vec::new(),
        };
        let times = series(
            &h,
            |_| true,
            &changes::Options::default(),
            Scale::AsMeasured,
        );
        assert!(
            times[0].change_points.is_empty(),
            "{:?}",
            times[0].change_points
        );
        let exact = changes::Options::default().for_exact_counts();
        let counts = series_of(
            &h,
            |_| true,
            &exact,
            Scale::AsMeasured,
            Value::Metric("valgrind.instructions"),
        );
        assert_eq!(counts[0].runs.len(), 12);
        let at: Vec<Option<&str>> = counts[0]
            .change_points
            .iter()
            .map(|c| c.commit.as_deref())
            .collect();
        assert_eq!(at, [Some("c6")]);
        assert!((counts[0].change_points[0].change_pct - 1.0).abs() < 0.01);
        assert!(exact_metric("valgrind.instructions") && exact_metric("alloc.count"));
        assert!(!exact_metric("rusage.minflt"));
        // The history read for timing keeps the exact counts and skips the others.
        let mut text = Vec::new();
        for r in &h.runs {
            text.extend(serde_json::to_vec(r).unwrap());
            text.push(b'\n');
        }
        let timing = parse_as(&text, "h", Lines::Timing);
        assert_eq!(timing.runs.len(), 13);
        let kept: Vec<&String> = timing.runs[0].cases[0].metrics.keys().collect();
        assert_eq!(kept, ["valgrind.instructions"]);
        assert!(timing.runs[12].cases[0].metrics.is_empty());
        // A case's trend: its times, and beside them each exact count (not the others).
        let trends = trends(
            &timing,
            |_| true,
            &changes::Options::default(),
            Scale::AsMeasured,
        );
        assert_eq!(trends.len(), 1);
        assert!(trends[0].series.change_points.is_empty());
        let metrics: Vec<&str> = trends[0].exact.iter().map(|e| e.metric.as_str()).collect();
        assert_eq!(metrics, ["valgrind.instructions"]);
        assert_eq!(
            trends[0].exact[0].series.change_points[0].commit.as_deref(),
            Some("c6")
        );
        assert!(trends[0].exact[0]
            .series
            .change_points_line()
            .starts_with("c6 +1.0% (p "));
    }

    #[test]
    fn a_step_the_machine_probe_took_too_is_said_as_the_machines() {
        // 24 runs, two a commit: from the 10th run (the second of its commit) the machine
        // is 5% slower, its probe and both cases alike; the 13th run's commit makes `b`
        // 30% slower.
        let mut rng = fastrand::Rng::with_seed(9);
        let mut noise = || 1.0 + 0.01 * (rng.f64() - 0.5);
        let mut runs = Vec::new();
        for i in 0..24 {
            let machine = if i >= 9 { 1.05 } else { 1.0 };
            let mut r = run(&format!("c{}", i / 2), i as u64, 0.0);
            let probe = 200.0 * machine * noise();
            r.environment.machine_probe =
                crate::machine_probe::MachineProbe::of(vec![probe * 1.2; 6])
                    .map(|p| p.with_waits(Some(&[probe * 0.2; 6])));
            let b = if i >= 12 { 1.3 } else { 1.0 };
            r.cases.clear();
            for (name, level) in [("a", 1000.0), ("b", 1000.0 * b)] {
                let t = level * machine * noise();
                r.cases.push(CaseRun {
                    case: name.to_string(),
                    median: t * 1.1,
                    ci_low: None,
                    ci_high: None,
                    samples: 16,
                    less_wait: Some(LessWait {
                        p10: t,
                        ci_low: None,
                        ci_high: None,
                        median: t * 1.02,
                    }),
                    null_pct: None,
                    side_by_side: None,
                    metrics: BTreeMap::new(),
                });
            }
            runs.push(r);
        }
        let h = History {
            runs,
            warnings: Vec::new(),
        };
        let options = changes::Options::default();
        let all = series(&h, |_| true, &options, Scale::AsMeasured);
        let (a, b) = (&all[0], &all[1]);
        assert!((a.runs[0].probe_less_wait.unwrap() - 200.0).abs() < 2.0);
        assert!(a.change_points.is_empty(), "{:?}", a.change_points);
        assert_eq!(
            a.machine_steps.iter().map(|c| c.index).collect::<Vec<_>>(),
            [9]
        );
        let line = a.change_points_line();
        assert!(
            line.starts_with("none; the machine's, not the commits': c4 +5."),
            "{line}"
        );
        assert!(line.contains("with the probe +5."), "{line}");
        assert_eq!(
            b.change_points.iter().map(|c| c.index).collect::<Vec<_>>(),
            [12]
        );
        assert!(b.change_points[0].probe_change_pct.is_some());
        // Scaled by the probe, its share is out already: nothing is the machine's.
        let scaled = series(&h, |_| true, &options, Scale::PerProbe);
        assert!(scaled.iter().all(|s| s.machine_steps.is_empty()));
    }

    #[test]
    fn a_case_follows_its_times_less_their_waits_where_every_run_knew_them() {
        // Twelve runs, one a commit, on a machine kept busy: as measured each run's median
        // is 1x, 1.75x or 2.5x the case's time (the share of each sample other work took,
        // as two CPU hogs on 2 cores gave); less their waits, the 7th commit's 30% step
        // stands alone. A second case has one run that did not know its waits.
        let shares = [
            1.75, 1.0, 2.5, 1.75, 1.75, 1.75, 1.0, 1.0, 1.75, 1.0, 1.0, 1.0,
        ];
        let mut rng = fastrand::Rng::with_seed(7);
        let mut runs = Vec::new();
        for (i, share) in shares.iter().enumerate() {
            let time = if i >= 6 { 130.0 } else { 100.0 } * (1.0 + 0.01 * (rng.f64() - 0.5));
            let mut r = run(&format!("c{i}"), i as u64, time * share);
            r.cases[0].less_wait = Some(LessWait {
                p10: time,
                ci_low: Some(time * 0.99),
                ci_high: Some(time * 1.01),
                median: time * 1.02,
            });
            let mut old = r.cases[0].clone();
            old.case = "old".to_string();
            if i == 3 {
                old.less_wait = None;
            }
            r.cases.push(old);
            runs.push(r);
        }
        let h = History {
            runs,
            warnings: Vec::new(),
        };
        let all = series(
            &h,
            |_| true,
            &changes::Options::default(),
            Scale::AsMeasured,
        );
        let (c, old) = (&all[0], &all[1]);
        assert_eq!(c.statistic, LOW_LESS_WAIT);
        for (point, run) in c.runs.iter().zip(&h.runs) {
            let less = run.cases[0].less_wait.unwrap();
            assert_eq!(point.median, less.p10);
            assert_eq!((point.ci_low, point.ci_high), (less.ci_low, less.ci_high));
            assert_eq!(point.as_measured, Some(run.cases[0].median));
        }
        let at: Vec<Option<&str>> = c
            .change_points
            .iter()
            .map(|p| p.commit.as_deref())
            .collect();
        assert_eq!(at, [Some("c6")]);
        assert!((c.change_points[0].change_pct - 30.0).abs() < 2.0);
        // One statistic a series: the case with a run that did not know its waits follows
        // its medians as measured, every run of it.
        assert_eq!(old.statistic, MEDIAN);
        for (point, run) in old.runs.iter().zip(&h.runs) {
            assert_eq!(point.median, run.cases[1].median);
            assert_eq!(point.as_measured, None);
        }
    }

    #[test]
    fn comparisons_side_by_side_are_kept_and_compares_minima_are_no_times() {
        let found = |change_pct: f64, verdict| SideBySide {
            base_rev: Some("b".repeat(40)),
            change_pct,
            ci_low_pct: Some(change_pct - 0.1),
            ci_high_pct: Some(change_pct + 0.1),
            noise_pct: Some(0.5),
            verdict,
        };
        let mut runs = vec![run("c0", 0, 100.0), run("c1", 1, 100.2)];
        // A paired --baseline run: its time is a point, its comparison kept.
        let mut paired = run("c2", 2, 100.1);
        paired.cases[0].side_by_side = Some(found(0.1, Verdict::InsideTheNoise));
        runs.push(paired);
        // compare's line: a per-round minimum far below the runs' medians, no point.
        let mut compared = run("c3", 3, 60.0);
        compared.source = Some("compare".into());
        compared.cases[0].side_by_side = Some(found(2.0, Verdict::Regression));
        runs.push(compared);
        let h = History {
            runs,
            warnings: Vec::new(),
        };
        let s = series(
            &h,
            |_| true,
            &changes::Options::default(),
            Scale::AsMeasured,
        );
        let medians: Vec<f64> = s[0].runs.iter().map(|p| p.median).collect();
        assert_eq!(medians, [100.0, 100.2, 100.1]);
        let kept: Vec<(&str, f64, Verdict)> = s[0]
            .side_by_side
            .iter()
            .map(|p| (p.by, p.found.change_pct, p.found.verdict))
            .collect();
        assert_eq!(
            kept,
            [
                ("baseline", 0.1, Verdict::InsideTheNoise),
                ("compare", 2.0, Verdict::Regression)
            ]
        );
        assert_eq!(s[0].side_by_side[1].commit.as_deref(), Some("c3"));
        // Through a history file and back, as the timing read keeps them.
        let mut text = Vec::new();
        for r in &h.runs {
            text.extend(serde_json::to_vec(r).unwrap());
            text.push(b'\n');
        }
        let read = parse_as(&text, "h", Lines::Timing);
        assert_eq!(read.runs[3].source.as_deref(), Some("compare"));
        assert_eq!(
            read.runs[3].cases[0].side_by_side,
            h.runs[3].cases[0].side_by_side
        );
    }

    #[test]
    fn a_branch_is_a_series_of_its_own() {
        // main flat at 100; a feature branch whose 7th commit makes it 30% slower, its
        // runs between main's.
        let mut runs = Vec::new();
        for i in 0..12u64 {
            runs.push(run(&format!("m{i}"), 2 * i, 100.0 + (i % 3) as f64 * 0.2));
            let level = if i >= 6 { 130.0 } else { 100.0 };
            let mut f = run(&format!("f{i}"), 2 * i + 1, level + (i % 3) as f64 * 0.2);
            f.branch = Some("feature".into());
            runs.push(f);
        }
        let h = History {
            runs,
            warnings: Vec::new(),
        };
        assert_eq!(
            h.branches(),
            [("feature".to_string(), 12), ("main".to_string(), 12)]
        );
        let options = changes::Options::default();
        for branch in ["main", "feature"] {
            let on = h.on_branch(branch);
            assert_eq!(on.runs.len(), 12);
            assert!(on.runs.iter().all(|r| r.branch.as_deref() == Some(branch)));
            let s = series(&on, |_| true, &options, Scale::AsMeasured);
            let at: Vec<Option<&str>> = s[0]
                .change_points
                .iter()
                .map(|c| c.commit.as_deref())
                .collect();
            match branch {
                "main" => assert!(at.is_empty(), "{at:?}"),
                _ => assert_eq!(at, [Some("f6")]),
            }
        }
        assert!(h.on_branch("gone").runs.is_empty());
    }

    #[test]
    fn a_machine_change_is_marked_on_the_run_it_starts() {
        let mut h = History::default();
        for (i, commit) in ["a", "b", "c"].iter().enumerate() {
            h.runs.push(run(commit, i as u64, 100.0));
        }
        h.runs[2].environment.kernel = Some("9.9.9-other".to_string());
        let s = series(
            &h,
            |_| true,
            &changes::Options::default(),
            Scale::AsMeasured,
        );
        assert_eq!(s.len(), 1);
        assert!(s[0].runs[1].machine_change.is_empty());
        assert!(
            s[0].runs[2].machine_change[0].starts_with("kernel: "),
            "{:?}",
            s[0].runs[2].machine_change
        );
    }
}
