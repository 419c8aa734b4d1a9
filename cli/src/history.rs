//! `sparkles history`: each case's runs over commits, from the history the harness wrote
//! (`target/sparkles/history/SUITE.jsonl`), with the change points across them and the
//! machine changes marked; as a table, `sparkles.history/1` JSON, or a page of trends.

use std::path::{Path, PathBuf};

use maud::{html, PreEscaped, DOCTYPE};
use serde::Serialize;
use sparkles_results::history::{self, changes, Series};

use crate::error::Error;

/// `sparkles.history/1`.
pub const SCHEMA: &str = "sparkles.history/1";

/// Output of `sparkles history`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HistoryFormat {
    /// Per case its runs, first and latest median, and change points.
    Table,
    /// `sparkles.history/1` (docs/schemas/history.md).
    Json,
    /// A page: per case its trend, change points marked.
    Html,
}

/// `sparkles history`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct HistoryArgs {
    /// Only cases whose names contain one of these.
    filters: Vec<String>,
    /// The suite (its history file's name); default: every suite in the history.
    #[arg(long, value_name = "S")]
    suite: Option<String>,
    /// `table`, `json` (`sparkles.history/1`) or `html`.
    #[arg(long, value_enum, default_value = "table")]
    format: HistoryFormat,
    /// The history folder; default: `sparkles/history` in CARGO_TARGET_DIR, else in the
    /// nearest `target/` at or above the current directory.
    #[arg(long, value_name = "DIR")]
    history_dir: Option<PathBuf>,
    /// Write here (whole, or not at all) instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: Option<PathBuf>,
    /// The largest p-value of a change point: its permutation test, the largest energy
    /// statistic over every split of the runs in random order, so the search is in it
    /// (six runs against six reach about 0.003).
    #[arg(long, value_name = "P", default_value_t = sparkles_results::history::changes::MAX_P)]
    max_p: f64,
    /// The smallest step called a change point, percent; default: 4 times how far the
    /// runs scatter from one another (successive runs' differences; more for a short
    /// series), at least 1%.
    #[arg(long, value_name = "PCT")]
    min_change: Option<f64>,
    /// `probe`: each run's times scaled by how fast its machine probe (a fixed loop timed
    /// beside the cases) ran against the runs' median probe, so that a run a busy machine
    /// slowed, its cases and probe alike, does not look like a change. Default: as
    /// measured.
    #[arg(long, value_name = "HOW", value_parser = ["probe"])]
    normalize: Option<String>,
    /// Only the runs made on this branch (git's name for it, or the CI's for a detached
    /// checkout): runs of several branches in one series make steps of their own.
    #[arg(long, value_name = "NAME")]
    branch: Option<String>,
    /// Follow this stored metric instead of the median time (`valgrind.instructions`,
    /// `alloc.count`, `rusage.minflt`, …; each run's line keeps every metric it measured).
    /// Exact counts (valgrind's, the counting allocator's) are held to steps of 0.1% at
    /// least, times to 1%.
    #[arg(long, value_name = "ID")]
    metric: Option<String>,
}

/// The JSON document.
#[derive(Debug, Serialize)]
struct Document {
    schema: &'static str,
    /// The history files read.
    files: Vec<String>,
    cases: Vec<Case>,
    /// Lines skipped, each with its file and number.
    warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Case {
    suite: String,
    #[serde(flatten)]
    series: Series,
    /// The smallest step this case's change points had to be, percent.
    min_change_pct: f64,
    /// What `runs[].median` holds where not the median time: `--metric`'s id.
    #[serde(skip_serializing_if = "Option::is_none")]
    metric: Option<String>,
    /// Without `--metric`: the series of each exact count its runs stored
    /// (`valgrind.instructions`, `alloc.count`, …), with their change points: a count that
    /// moved at a commit is the strongest evidence there is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    exact: Vec<history::ExactSeries>,
}

/// Where the history is: `--history-dir`, else CARGO_TARGET_DIR's, else the nearest
/// `target/sparkles/history` at or above the current directory.
fn history_dir(explicit: Option<&Path>) -> Result<PathBuf, Error> {
    if let Some(dir) = explicit {
        return if dir.is_dir() {
            Ok(dir.to_path_buf())
        } else {
            Err(Error::usage(
                format!("--history-dir {}", dir.display()),
                "not a folder",
            ))
        };
    }
    let mut looked = Vec::new();
    if let Some(target) = std::env::var_os("CARGO_TARGET_DIR").filter(|t| !t.is_empty()) {
        let dir = PathBuf::from(target).join("sparkles/history");
        if dir.is_dir() {
            return Ok(dir);
        }
        looked.push(dir);
    }
    let cwd = std::env::current_dir().map_err(|source| Error::Io {
        path: ".".into(),
        source,
    })?;
    for at in cwd.ancestors() {
        let dir = at.join("target/sparkles/history");
        if dir.is_dir() {
            return Ok(dir);
        }
    }
    looked.push(cwd.join("target/sparkles/history"));
    Err(Error::usage(
        "--history-dir",
        format!(
            "no history found (looked for {} and above): a `cargo bench` run of a sparkles suite writes one; --history-dir DIR reads another",
            looked
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}

/// The suites' history files in `dir`: `--suite`'s, or every one.
fn files(dir: &Path, suite: Option<&str>) -> Result<Vec<(String, PathBuf)>, Error> {
    let mut all: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .map_err(|source| Error::Io {
            path: dir.to_path_buf(),
            source,
        })?
        .filter_map(|e| {
            let path = e.ok()?.path();
            let name = path
                .file_name()?
                .to_str()?
                .strip_suffix(".jsonl")?
                .to_string();
            Some((name, path))
        })
        .collect();
    all.sort();
    match suite {
        None if all.is_empty() => Err(Error::usage(
            "--history-dir",
            format!("{} holds no history (SUITE.jsonl)", dir.display()),
        )),
        None => Ok(all),
        Some(s) => {
            let path = history::path(dir, s);
            if path.is_file() {
                Ok(vec![(s.to_string(), path)])
            } else {
                Err(Error::usage(
                    format!("--suite {s}"),
                    format!(
                        "no history of it in {} (suites there: {})",
                        dir.display(),
                        if all.is_empty() {
                            "none".to_string()
                        } else {
                            all.iter()
                                .map(|(n, _)| n.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        }
                    ),
                ))
            }
        }
    }
}

/// `sparkles history`.
pub fn history(args: &HistoryArgs) -> Result<(), Error> {
    if !(args.max_p > 0.0 && args.max_p <= 1.0) {
        return Err(Error::usage(
            "--max-p",
            format!("{} is not a p-value in (0, 1]", args.max_p),
        ));
    }
    if let Some(m) = args.min_change.filter(|m| !(m.is_finite() && *m >= 0.0)) {
        return Err(Error::usage(
            "--min-change",
            format!("{m} is not a percentage ≥ 0"),
        ));
    }
    let dir = history_dir(args.history_dir.as_deref())?;
    let options = changes::Options {
        max_p: args.max_p,
        min_change_pct: args.min_change,
        ..changes::Options::default()
    };
    let keep = |case: &str| {
        args.filters.is_empty() || args.filters.iter().any(|f| case.contains(f.as_str()))
    };
    let mut doc = Document {
        schema: SCHEMA,
        files: Vec::new(),
        cases: Vec::new(),
        warnings: Vec::new(),
    };
    let exact_options = options.for_exact_counts();
    let mut metric_seen = false;
    let mut metrics_stored: std::collections::BTreeSet<String> = Default::default();
    for (suite, path) in files(&dir, args.suite.as_deref())? {
        // Every metric only where one is followed; else the exact counts alone.
        let read = if args.metric.is_some() {
            history::read(&path)
        } else {
            history::read_timing(&path)
        };
        let mut h = read.map_err(|e| Error::Input(e.to_string()))?;
        doc.warnings.extend(h.warnings.iter().cloned());
        if let Some(branch) = &args.branch {
            let on = h.on_branch(branch);
            if on.runs.is_empty() {
                doc.warnings.push(format!(
                    "{}: no run on branch {branch} (its runs' branches: {})",
                    path.display(),
                    h.branches()
                        .iter()
                        .map(|(b, n)| format!("{b} {n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            h = on;
        }
        doc.files.push(path.display().to_string());
        let scale = match args.normalize.as_deref() {
            Some("probe") => history::Scale::PerProbe,
            _ => history::Scale::AsMeasured,
        };
        if let Some(id) = &args.metric {
            for r in &h.runs {
                for c in &r.cases {
                    metrics_stored.extend(c.metrics.keys().cloned());
                }
            }
            let options = if history::exact_metric(id) {
                &exact_options
            } else {
                &options
            };
            for series in history::series_of(&h, keep, options, scale, history::Value::Metric(id)) {
                metric_seen = true;
                doc.cases.push(Case {
                    suite: suite.clone(),
                    min_change_pct: changes::min_change_pct(&series.runs, options),
                    series,
                    metric: Some(id.clone()),
                    exact: Vec::new(),
                });
            }
            continue;
        }
        for trend in history::trends(&h, keep, &options, scale) {
            doc.cases.push(Case {
                suite: suite.clone(),
                min_change_pct: changes::min_change_pct(&trend.series.runs, &options),
                series: trend.series,
                metric: None,
                exact: trend.exact,
            });
        }
    }
    if let (Some(id), false) = (&args.metric, metric_seen) {
        return Err(Error::usage(
            format!("--metric {id}"),
            format!(
                "no run in the history stored it (metrics stored: {})",
                if metrics_stored.is_empty() {
                    "none".to_string()
                } else {
                    metrics_stored.into_iter().collect::<Vec<_>>().join(", ")
                }
            ),
        ));
    }
    for w in &doc.warnings {
        eprintln!("warning: {w}");
    }
    let bytes = match args.format {
        HistoryFormat::Json => {
            // One line (a long history's document is tens of megabytes: pretty printing
            // would double it); `jq .` indents it.
            json_document(&doc)?
        }
        HistoryFormat::Table => table(&doc).into_bytes(),
        HistoryFormat::Html => page(&doc).into_bytes(),
    };
    crate::report::emit(args.output.as_deref(), &bytes)
}

/// The document as one line of JSON, its cases serialized on every core (a long
/// history's is a hundred megabytes), in order: the same bytes `serde_json::to_vec` gives.
fn json_document(doc: &Document) -> Result<Vec<u8>, Error> {
    let json = |v: &dyn erased::Json| v.to_json().map_err(|e| Error::Output(e.into()));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = doc.cases.len().div_ceil(threads).max(1);
    let parts: Vec<Result<Vec<u8>, Error>> = std::thread::scope(|scope| {
        let handles: Vec<_> = doc
            .cases
            .chunks(per)
            .map(|chunk| {
                scope.spawn(move || {
                    let mut out = Vec::new();
                    for (i, c) in chunk.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        out.extend(json(c)?);
                    }
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Ok(Vec::new())))
            .collect()
    });
    let mut out = Vec::new();
    out.extend(br#"{"schema":"#);
    out.extend(json(&doc.schema)?);
    out.extend(br#","files":"#);
    out.extend(json(&doc.files)?);
    out.extend(br#","cases":["#);
    for (i, part) in parts.into_iter().enumerate() {
        let part = part?;
        if i > 0 && !part.is_empty() {
            out.push(b',');
        }
        out.extend(part);
    }
    out.extend(br#"],"warnings":"#);
    out.extend(json(&doc.warnings)?);
    out.extend(b"}\n");
    Ok(out)
}

/// Serializing a value of any of the document's types.
mod erased {
    pub trait Json: Sync {
        fn to_json(&self) -> serde_json::Result<Vec<u8>>;
    }

    impl<T: serde::Serialize + Sync + ?Sized> Json for T {
        fn to_json(&self) -> serde_json::Result<Vec<u8>> {
            serde_json::to_vec(self)
        }
    }
}

fn table(doc: &Document) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let width = doc
        .cases
        .iter()
        .flat_map(|c| {
            std::iter::once(c.series.case.len()).chain(c.exact.iter().map(|e| e.metric.len() + 2))
        })
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        out,
        "{:<width$}  {:>5}  {:>10}  {:>10}  change points (commit where the step starts, its size, p)",
        "case", "runs", "first", "latest"
    );
    for c in &doc.cases {
        let runs = &c.series.runs;
        let side_by_side = c.series.side_by_side_line();
        let (Some(first), Some(last)) = (runs.first(), runs.last()) else {
            if let Some(line) = side_by_side {
                let _ = writeln!(out, "{:<width$}  {:>5}  {line}", c.series.case, 0);
            }
            continue;
        };
        let value = |v: f64| match &c.metric {
            None => sparkles_results::units::format_ns(v),
            Some(_) if v.abs() >= 100.0 => format!("{v:.0}"),
            Some(_) => format!("{v:.4}"),
        };
        let _ = writeln!(
            out,
            "{:<width$}  {:>5}  {:>10}  {:>10}  {}",
            c.series.case,
            runs.len(),
            value(first.median),
            value(last.median),
            c.series.change_points_line()
        );
        if let Some(line) = side_by_side {
            let _ = writeln!(out, "{:<width$}  {line}", "  side by side");
        }
        for e in &c.exact {
            let _ = writeln!(
                out,
                "{:<width$}  {:>5}  {:>10}  {:>10}  {}",
                format!("  {}", e.metric),
                e.series.runs.len(),
                e.series.runs.first().map_or(0.0, |p| p.median).round(),
                e.series.runs.last().map_or(0.0, |p| p.median).round(),
                e.series.change_points_line()
            );
        }
    }
    let measured: Vec<&str> = doc
        .cases
        .iter()
        .filter(|c| c.metric.is_none() && c.series.statistic == history::MEDIAN)
        .map(|c| c.series.case.as_str())
        .collect();
    if doc.cases.iter().any(|c| c.metric.is_none()) {
        const LESS_WAIT: &str = "each run's fastest tenth (10th percentile) of its samples, each less its run-queue wait (the time the case's thread was held off a CPU by other work)";
        let _ = match measured.len() {
            0 => writeln!(out, "\ntimes: {LESS_WAIT}"),
            n if n == doc.cases.len() => writeln!(
                out,
                "\ntimes: each run's median as measured (a run did not know its run-queue waits: not Linux, or made before they were kept)"
            ),
            _ => writeln!(
                out,
                "\ntimes: {LESS_WAIT}; as measured for {} (a run of each did not know its waits)",
                measured.join(", ")
            ),
        };
    }
    let _ = writeln!(
        out,
        "\nchange points: e-divisive means, permutation test (docs/design.md); {} run{} of {} case{} from {}",
        doc.cases.iter().map(|c| c.series.runs.len()).max().unwrap_or(0),
        if doc.cases.iter().map(|c| c.series.runs.len()).max() == Some(1) { "" } else { "s" },
        doc.cases.len(),
        if doc.cases.len() == 1 { "" } else { "s" },
        doc.files.join(", ")
    );
    out
}

fn page(doc: &Document) -> String {
    const CSS: &str = r#"
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em 2em; color: #1d1d1f; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { padding: 3px 10px; text-align: right; border-bottom: 1px solid #eee; }
th { background: #f5f5f7; } td.name, th.name { text-align: left; }
p.note { color: #555; }
"#;
    html! {
        (DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; title { "sparkles history" } style { (PreEscaped(CSS)) } }
            body {
                h1 { "History" }
                p.note { (doc.files.join(", ")) "; change points by e-divisive means, each with its permutation test (the largest energy statistic over every split of the runs in random order)." }
                @for w in &doc.warnings { p.note { "warning: " (w) } }
                @for c in &doc.cases {
                    h2 { (c.series.case) " " span.note { "(" (c.suite) ", " (c.series.runs.len()) " runs, " (c.series.statistic) ")" } }
                    (PreEscaped(sparkles_results::run_report::trend_svg(&c.series, false)))
                    @if c.series.change_points.is_empty() {
                        p.note { "No change point (steps of at least " (format!("{:.1}%", c.min_change_pct)) " were looked for)."
                            @if let Some(few) = &c.series.too_few_runs { " " (few.line()) "." } }
                    } @else {
                        table { thead { tr { th.name { "commit" } th.name { "when" } th { "step" } th { "before" } th { "after" } th { "p" } th.name { "machine" } } }
                            tbody { @for p in &c.series.change_points { tr {
                                td.name { code { (history::short_commit(p.commit.as_deref(), c.series.runs[p.index].dirty)) } }
                                td.name { (history::when(p.time)) }
                                td { (format!("{:+.1}%", p.change_pct)) }
                                td { (sparkles_results::units::format_ns(p.before)) }
                                td { (sparkles_results::units::format_ns(p.after)) }
                                td { (changes::p_text(p.p_value)) }
                                td.name { (p.machine_change.join("; ")) }
                            } } } }
                    }
                    @if let Some(machine) = c.series.machine_steps_line() {
                        p.note { "Steps " (machine) "." }
                    }
                    @for e in &c.exact {
                        p.note { code { (e.metric) } " (exact, " (e.series.runs.len()) " runs): change points " (e.series.change_points_line()) "." }
                    }
                }
            }
        }
    }
    .into_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use super::*;

    #[test]
    fn the_document_is_the_bytes_serde_json_writes_whole() {
        let point = |m: f64| history::Point {
            commit: Some("ab".repeat(20).into()),
            dirty: Some(false),
            branch: None,
            time: 1,
            median: m,
            ci_low: Some(m - 1.0),
            ci_high: None,
            as_measured: None,
            machine_change: vec!["kernel: 'a' → 'b'".to_string()],
            probe: Some(2.0),
            probe_less_wait: Some(1.5),
        };
        let case = |name: &str| Case {
            suite: "s".to_string(),
            series: Series {
                case: name.to_string(),
                statistic: history::LOW_LESS_WAIT.to_string(),
                runs: vec![point(1.0), point(2.5)],
                change_points: Vec::new(),
                machine_steps: Vec::new(),
                too_few_runs: None,
                side_by_side: Vec::new(),
            },
            min_change_pct: 1.0,
            metric: None,
            exact: Vec::new(),
        };
        for n in [0, 1, 2, 3, 7] {
            let doc = Document {
                schema: SCHEMA,
                files: vec!["h.jsonl".to_string()],
                cases: (0..n).map(|i| case(&format!("c{i}"))).collect(),
                warnings: vec!["h.jsonl, line 2: \"x\"".to_string()],
            };
            let mut whole = serde_json::to_vec(&doc).unwrap();
            whole.push(b'\n');
            assert_eq!(json_document(&doc).unwrap(), whole, "{n} cases");
        }
    }
}
