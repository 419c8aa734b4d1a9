//! The run report: one self-contained HTML page per bench run
//! (`target/sparkles/report/index.html`): a sortable summary of every case with its
//! verdict against the baseline and the line that explains it, then per case the
//! distribution of its timing samples with the baseline's overlaid, the samples in run
//! order, its metrics, and, where it was profiled, its flamegraph, hottest functions and
//! the hot-function movers with the differential flamegraph. Nothing is fetched from
//! elsewhere: CSS, script and charts are inline, and each flamegraph is a frame whose
//! source is the SVG file beside the case's capture (`../profile/<slug>/…`, loaded when
//! scrolled near), so that it keeps its own zoom and search script and the page of a
//! large suite stays light.

use std::path::Path;

use maud::{html, Markup, PreEscaped, DOCTYPE};
use plotters::prelude::*;

use crate::error::Error;
use crate::profile::ViewerFormat;
use crate::row::BenchRow;
use crate::stats::Verdict;
use crate::units::format_ns;

/// The page's path under the output folder.
pub fn path_in(out_dir: &Path) -> std::path::PathBuf {
    out_dir.join("report").join("index.html")
}

/// A case the page keeps from an earlier run (`report/cases.json`): a run that ran some
/// cases only (a filter, another bench target) still lists the others, marked with their
/// run's time.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct KeptCase {
    /// When its run ended (RFC 3339, UTC).
    pub run_at: String,
    /// Its suite.
    pub suite: String,
    /// Its row as that run wrote it.
    pub row: BenchRow,
}

/// The store of kept cases under the output folder.
pub fn kept_path(out_dir: &Path) -> std::path::PathBuf {
    out_dir.join("report").join("cases.json")
}

/// Reads the kept cases at `path` (none where there is no store yet; an unreadable store
/// is said and started afresh: it only lists earlier cases), returns those of earlier
/// runs that this run did not run, and writes the store anew with this run's rows; with
/// them, where the store could not be written, `PATH: why` (an output the run was asked
/// for, not written).
pub fn keep_cases(path: &Path, suite: &str, rows: &[BenchRow]) -> (Vec<KeptCase>, Option<String>) {
    let earlier: Vec<KeptCase> = match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            eprintln!(
                "report: {}: earlier cases not listed ({e}); the store is written anew",
                path.display()
            );
            Vec::new()
        }),
        Err(_) => Vec::new(),
    };
    let ran = |k: &KeptCase| k.suite == suite && rows.iter().any(|r| r.case == k.row.case);
    let kept: Vec<KeptCase> = earlier.into_iter().filter(|k| !ran(k)).collect();
    let run_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let mut store = kept.clone();
    store.extend(rows.iter().map(|row| KeptCase {
        run_at: run_at.clone(),
        suite: suite.to_string(),
        row: row.clone(),
    }));
    let written = serde_json::to_vec(&store)
        .map_err(|e| e.to_string())
        .and_then(|bytes| {
            sparkles_perf_data::atomic_write::write_atomically(path, &bytes)
                .map_err(|e| e.to_string())
        });
    (
        kept,
        written.err().map(|e| format!("{}: {e}", path.display())),
    )
}

/// What the page is made from.
#[derive(Debug)]
pub struct RunReport<'a> {
    /// The suite.
    pub suite: &'a str,
    /// This run's rows.
    pub rows: &'a [BenchRow],
    /// The baseline's rows, where the run was compared.
    pub baseline: Option<&'a [BenchRow]>,
    /// The baseline's name or path, as given.
    pub baseline_name: Option<&'a str>,
    /// What the machine probe said of the comparison (the machine moved, or its speed
    /// could not be checked), where it said anything.
    pub machine_warning: Option<&'a str>,
    /// Where each case's profile artifacts are (`<out>/profile/<slug>/`).
    pub profile_dir: &'a Path,
    /// Cases of earlier runs that this run did not run.
    pub kept: &'a [KeptCase],
    /// Each case's series over the suite's history (this run its last point), with its
    /// change points.
    pub trends: &'a [crate::history::Trend],
    /// Whether the build that ran read its captures (the harness's `profile` feature):
    /// only then are the flamegraphs, lines and diffs beside a capture this run's.
    pub profiles_read: bool,
    /// Whether it annotated the hot functions (the harness's `annotate` feature); where
    /// it did not, the page says how to get the source and instruction views.
    pub annotates: bool,
}

const CSS: &str = r#"
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em 2em; color: #1d1d1f; }
table.sweep div.bar { height: 0.8em; background: #4a90d9; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-top: 1px solid #ddd; padding-top: 1em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { padding: 3px 7px; text-align: right; border-bottom: 1px solid #eee; white-space: nowrap; }
td.case { white-space: normal; overflow-wrap: break-word; min-width: 12em; max-width: 30em; }
th { cursor: pointer; background: #f5f5f7; }
td.name, th.name, td.text { text-align: left; }
td.text { white-space: normal; overflow-wrap: anywhere; min-width: 14em; max-width: 26em; }
td.fn { white-space: normal; overflow-wrap: anywhere; min-width: 8em; max-width: 14em; }
table:not(#summary) td.name { white-space: normal; overflow-wrap: anywhere; max-width: 48em; }
.regression { color: #b00020; font-weight: 600; } .improvement { color: #107c10; font-weight: 600; }
.inside_the_noise, .underpowered { color: #6e6e73; }
.why { color: #333; font-style: italic; }
p.machine { color: #8a4b00; font-weight: 600; }
tr.kept td { color: #555; background: #fafafa; } p.kept { color: #555; }
iframe { width: 100%; border: 1px solid #ddd; }
p.note { color: #555; }
.charts svg { margin-right: 1em; }
"#;

/// The styles of the hot functions' source and instruction views, where they are drawn.
const ANNOTATE_CSS: &str = sparkles_report::html::ANNOTATE_CSS;

/// Sorts a summary table by the clicked column (numbers by value, text as text).
const SORT_JS: &str = r#"
document.querySelectorAll('table.sortable th').forEach(function (th, col) {
  th.addEventListener('click', function () {
    var body = th.closest('table').tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var dir = th.dataset.dir === 'asc' ? -1 : 1;
    th.dataset.dir = dir === 1 ? 'asc' : 'desc';
    rows.sort(function (a, b) {
      var x = a.cells[col].dataset.v || a.cells[col].textContent;
      var y = b.cells[col].dataset.v || b.cells[col].textContent;
      var nx = parseFloat(x), ny = parseFloat(y);
      if (!isNaN(nx) && !isNaN(ny)) return dir * (nx - ny);
      return dir * x.localeCompare(y);
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"#;

impl RunReport<'_> {
    /// Writes the page to `path`, whole or not at all.
    pub fn write(&self, path: &Path) -> Result<(), Error> {
        let page = self.page().into_string();
        sparkles_perf_data::atomic_write::write_atomically(path, page.as_bytes())?;
        Ok(())
    }

    fn base_of(&self, case: &str) -> Option<&BenchRow> {
        self.baseline?.iter().find(|b| b.case == case && b.ok)
    }

    /// The whole page.
    pub fn page(&self) -> Markup {
        html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    title { "sparkles: " (self.suite) }
                    style { (PreEscaped(CSS)) (PreEscaped(ANNOTATE_CSS)) }
                }
                body {
                    h1 { "sparkles: suite " (self.suite) }
                    p {
                        (self.rows.len()) " cases"
                        @if let Some(b) = self.baseline_name {
                            @if self.rows.iter().any(|r| r.comparison.as_ref().is_some_and(|c| c.paired.is_some())) {
                                ", measured side by side (paired: both builds in fresh processes, rounds interleaved): " (b)
                            } @else { ", compared with baseline " code { (b) } " (unpaired: two runs apart in time; a verdict clears the case's between-run noise)" }
                        }
                        @if !self.kept.is_empty() { "; " a href="#earlier" { (self.kept.len()) " more from earlier runs" } }
                        "."
                    }
                    @if let Some(w) = self.machine_warning { @for line in w.lines() { p.machine { (line) } } }
                    @for part in self.unavailable() { p.note { "On this machine " (part) " (said once here, not in each case's line)." } }
                    (self.summary())
                    (sweeps_section(self.rows))
                    @for row in self.rows { (self.case(row, None)) }
                    @if !self.kept.is_empty() {
                        h2 #earlier { "Cases from earlier runs" }
                        p { "Not run this time; each as its own run left it." }
                        @for k in self.kept { (self.case(&k.row, Some(k))) }
                    }
                    script { (PreEscaped(SORT_JS)) }
                }
            }
        }
    }

    /// What the explanations of this page's rows say is unavailable on the machine, each
    /// once.
    fn unavailable(&self) -> Vec<String> {
        let mut parts: Vec<String> = Vec::new();
        let rows = self.rows.iter().chain(self.kept.iter().map(|k| &k.row));
        for e in rows.filter_map(|r| r.comparison.as_ref()?.explanation.as_ref()) {
            for part in without_unavailable(&e.text).1 {
                if !parts.contains(&part) {
                    parts.push(part);
                }
            }
        }
        parts
    }

    fn summary(&self) -> Markup {
        let all = || self.rows.iter().chain(self.kept.iter().map(|k| &k.row));
        let compared = all().any(|r| r.comparison.is_some());
        let paired = all().any(|r| r.comparison.as_ref().is_some_and(|c| c.paired.is_some()));
        let profiled = all().any(|r| r.profile.is_some());
        let earlier = !self.kept.is_empty();
        html! {
            table.sortable #summary {
                thead { tr {
                    th.name { "case" } @if earlier { th.name { "run" } } th { "median" } th { "MAD" } th { "throughput" }
                    @if compared { th { (if paired { "base" } else { "baseline" }) } th { "change" } th { "95% CI" }
                        @if paired { th { "null" } th { "null 95% CI" } th { "rounds" } }
                        th.name { "verdict" } th.name { "why" } }
                    @if profiled { th.name { "top function" } th title="samples (lost, throttled)" { "samples" } }
                } }
                tbody {
                    @for row in self.rows { (self.summary_row(row, None, compared, paired, profiled)) }
                    @for k in self.kept { (self.summary_row(&k.row, Some(k), compared, paired, profiled)) }
                }
            }
        }
    }

    fn summary_row(
        &self,
        row: &BenchRow,
        kept: Option<&KeptCase>,
        compared: bool,
        paired: bool,
        profiled: bool,
    ) -> Markup {
        let t = row.timing.as_ref().map(|t| &t.summary);
        let throughput = ["throughput.bytes_per_sec", "throughput.elements_per_sec"]
            .iter()
            .find_map(|id| row.metrics.get(*id).copied().flatten().map(|v| (id, v)))
            .map(|(id, v)| {
                if id.contains("bytes") {
                    format!("{:.3} GB/s", v / 1e9)
                } else {
                    format!("{:.3} M/s", v / 1e6)
                }
            })
            .unwrap_or_else(|| "—".into());
        html! {
            tr class=[kept.map(|_| "kept")] {
                td.name.case { a href=(format!("#{}", anchor(row, kept))) { (breakable(&row.case)) } }
                @if !self.kept.is_empty() {
                    td.name { (kept.map(|k| format!("{} ({})", k.run_at, k.suite)).unwrap_or_else(|| "this run".into())) }
                }
                @match t {
                    Some(t) => {
                        td data-v=(t.median) { (format_ns(t.median)) }
                        td data-v=(t.mad) { "±" (format_ns(t.mad)) }
                    }
                    None => { td.regression { "failed" } td { "—" } }
                }
                td { (throughput) }
                @if compared {
                    @match &row.comparison {
                        Some(c) => {
                            td data-v=(c.baseline_median_ns) { (format_ns(c.baseline_median_ns)) }
                            td data-v=(c.delta_pct) { (format!("{:+.1}%", c.delta_pct)) }
                            td { (ci(c.ci_low_pct, c.ci_high_pct)) }
                            @if paired {
                                @match &c.paired {
                                    Some(p) => {
                                        td data-v=(p.null_change_pct) { (format!("{:+.1}%", p.null_change_pct)) }
                                        td { (ci(p.null_ci_low_pct, p.null_ci_high_pct)) }
                                        td { (p.rounds) }
                                    }
                                    None => { td { "—" } td { "—" } td { "—" } }
                                }
                            }
                            td class=(format!("name {}", verdict_class(c.verdict))) { (c.verdict.label()) @if c.machine_shift_pct.is_some() { " *" } }
                            // The verdict, change and interval have their cells: the line's rest.
                            td.text.why { (c.explanation.as_ref().map(|e| {
                                let (text, _) = without_unavailable(&e.text);
                                text.split_once(": ").map_or(text.clone(), |(_, rest)| rest.to_string())
                            }).unwrap_or_default()) }
                        }
                        None => {
                            td { "—" } td { "—" } td { "—" }
                            @if paired { td { "—" } td { "—" } td { "—" } }
                            td.name { "not in baseline" } td {}
                        }
                    }
                }
                @if profiled {
                    @match &row.profile {
                        Some(p) => {
                            td.name.fn { (p.top.first().map(|h| h.name.as_str()).unwrap_or("—")) }
                            td data-v=(p.samples) { (p.samples)
                                @if p.lost + p.lost_samples > 0 || p.throttled.count > 0 {
                                    " (" (p.lost + p.lost_samples) " lost, " (p.throttled.count) " throttled)"
                                } }
                        }
                        None => { td {} td {} }
                    }
                }
            }
        }
    }

    fn case(&self, row: &BenchRow, kept: Option<&KeptCase>) -> Markup {
        // A kept case was compared (if at all) in its own run, against that run's baseline.
        let base = kept.is_none().then(|| self.base_of(&row.case)).flatten();
        let samples = row
            .timing
            .as_ref()
            .map(|t| t.samples.as_slice())
            .unwrap_or(&[]);
        let base_samples = base
            .and_then(|b| b.timing.as_ref())
            .map(|t| t.samples.as_slice());
        let dir = self.profile_dir.join(&row.slug);
        let frame = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
        // What a build that reads profiles drew beside the capture; elsewhere a file there
        // is an earlier run's, and is not shown.
        let drawn = |name: &str| frame(name).filter(|_| self.profiles_read);
        // A flamegraph's text (for its height) and its URL from the page.
        let file = |text: Option<String>, name: &str| text.map(|t| (t, beside_capture(row, name)));
        html! {
            h2 id=(anchor(row, kept)) { (row.case) }
            @if let Some(k) = kept { p.kept { "From the run at " (k.run_at) ", suite " code { (k.suite) } "." } }
            @if let Some(e) = &row.error { p.regression { "failed: " (e) } }
            @if let Some(c) = &row.comparison {
                p {
                    span class=(verdict_class(c.verdict)) { (c.verdict.label()) }
                    " " (format!("{:+.1}%", c.delta_pct)) " " (ci(c.ci_low_pct, c.ci_high_pct))
                    @if let Some(p) = &c.paired {
                        "; null (base against base) " (format!("{:+.1}%", p.null_change_pct)) " " (ci(p.null_ci_low_pct, p.null_ci_high_pct))
                        @if let Some(n) = p.noise_pct { ", noise ±" (format!("{n:.1}%")) }
                        @if let (Some(a), Some(b)) = (p.base_processes, p.variant_processes) { ", " (a) "+" (b) " processes" }
                        ", " (p.rounds) " rounds"
                    }
                    @if let Some(n) = &c.between_run_noise {
                        "; between-run noise ±" (format!("{:.1}%", n.pct)) " (" (n.source) ")"
                    }
                    @if let Some(e) = &c.explanation { br; span.why { (without_unavailable(&e.text).0) } }
                }
            }
            @if let Some(r) = &row.reference {
                @if r.case == row.case {
                    p.note { "The reference of its group: its twin (the same code on a thread of its own) against it in the same rounds " (format!("{:.3}x", r.null_ratio)) " " (ratio_ci(r.null_ci_low, r.null_ci_high)) ", " (r.rounds) " rounds." }
                } @else {
                    p {
                        span class=(verdict_class(r.verdict)) { (format!("{:.2}x", r.ratio)) }
                        " " (ratio_ci(r.ci_low, r.ci_high)) " against " code { (r.case) } " in the same rounds; the reference's twin against it "
                        (format!("{:.3}x", r.null_ratio)) " " (ratio_ci(r.null_ci_low, r.null_ci_high))
                        ", noise ±" (format!("{:.1}%", r.noise_pct)) ", " (r.rounds) " rounds: "
                        (r.verdict_word()) "."
                    }
                }
            }
            @if !samples.is_empty() {
                div.charts {
                    (PreEscaped(distribution_svg(samples, base_samples)))
                    (PreEscaped(run_order_svg(samples)))
                }
            }
            @if kept.is_none() { (self.trend(&row.case)) }
            (self.metrics(row))
            (instructions(row, kept.is_none().then(|| file(frame("flamegraph-instructions.svg"), "flamegraph-instructions.svg")).flatten()))
            @if let Some(p) = &row.profile {
                // An allocation profile's files have their own names beside the capture.
                @let (json, svg, diff, suffix) = if p.alloc.is_some() || p.event == crate::profile::ALLOC_EVENT {
                    ("profile-alloc.json", "flamegraph-alloc.svg", "diff-alloc.svg", "-alloc")
                } else {
                    ("profile.json", "flamegraph.svg", "diff.svg", "")
                };
                @if suffix.is_empty() {
                    h3 { "Profile" }
                    p { (p.samples) " samples of " (p.event) ", " (p.lost + p.lost_samples) " lost, throttled " (p.throttled.count) " times"
                        @if let Some(e) = &p.error { " — no capture: " (e) } }
                } @else {
                    h3 { "Allocations (sampled)" }
                    p { @match &p.alloc {
                            Some(a) => { (crate::profile::describe_alloc(a, p.samples)) "; weights are bytes." }
                            None => { "No allocation samples" }
                        }
                        @if let Some(e) = &p.error { " — no capture: " (e) } }
                }
                @if !p.top.is_empty() {
                    table { thead { tr { th { "self" } th { "total" } th.name { "function" } } }
                        tbody { @for h in &p.top { tr { td { (format!("{:.1}%", h.self_pct)) } td { (format!("{:.1}%", h.total_pct)) } td.name { (h.name) } } } } }
                }
                (movers(p))
                (memory_sections(p))
                // The files beside the capture are the case's latest profile: an earlier
                // run's case shows its own numbers above, not frames that may be newer.
                (offcpu_line(p))
                @if let Some(a) = p.alloc.as_ref().filter(|a| !a.live_top.is_empty()) {
                    p { "Still live when their iteration ended (" (crate::units::format_bytes(a.live_bytes_per_iteration)) " an iteration):" }
                    table { thead { tr { th { "self" } th { "total" } th.name { "function" } } }
                        tbody { @for h in &a.live_top { tr { td { (format!("{:.1}%", h.self_pct)) } td { (format!("{:.1}%", h.total_pct)) } td.name { (h.name) } } } } }
                }
                @if kept.is_none() {
                    (top_lines(drawn(json)))
                    @if suffix.is_empty() {
                        @if self.annotates { (annotated(drawn("annotate.json"))) }
                        @else if p.capture.is_some() { p.note { (NOT_ANNOTATED) } }
                    }
                    (self.viewer_links(row, suffix))
                    (flame_frame(format!("flamegraph of {}", row.case), file(drawn(svg), svg)))
                    @let wall = file(drawn("flamegraph-wall.svg").filter(|_| has_offcpu(p)), "flamegraph-wall.svg");
                    @if wall.is_some() {
                        h3 { "Wall clock: on and off CPU" }
                    }
                    (flame_frame(format!("wall-clock flamegraph of {}", row.case), wall))
                    @let diff = file(drawn(diff), diff);
                    @if diff.is_some() {
                        h3 { "Against the baseline's profile" }
                    }
                    (flame_frame(format!("differential flamegraph of {}", row.case), diff))
                }
            }
        }
    }

    /// The case's trend over the history, where it has run before: the plot, and each
    /// change point in words (its commit, step and p-value, and a machine change there).
    fn trend(&self, case: &str) -> Markup {
        let Some(trend) = self.trends.iter().find(|t| t.series.case == case) else {
            return html! {};
        };
        let series = &trend.series;
        html! {
            @if series.runs.len() >= 2 {
                div.charts.trend { (PreEscaped(trend_svg(series, true))) }
                p.note { "History: " (series.runs.len()) " runs"
                    @if series.change_points.is_empty() {
                        @match &series.too_few_runs {
                            Some(few) => { "; " (few.line()) "." }
                            None => { "; no change point." }
                        }
                    }
                    @else { "; change points: "
                        @for (i, c) in series.change_points.iter().enumerate() {
                            @if i > 0 { ", " }
                            code { (crate::history::short_commit(c.commit.as_deref(), series.runs[c.index].dirty)) } " " (format!("{:+.1}%", c.change_pct)) " (p " (crate::history::changes::p_text(c.p_value)) ")"
                            @if !c.machine_change.is_empty() { " at a machine change (" (c.machine_change.join("; ")) ")" }
                        }
                        "."
                    }
                    " " code { "sparkles history" } " shows every run." }
                @if let Some(machine) = series.machine_steps_line() {
                    p.note { "Steps " (machine) "." }
                }
            }
            @for e in trend.exact.iter().filter(|e| e.series.runs.len() >= 2) {
                p.note { "Exact count " code { (e.metric) } " over " (e.series.runs.len()) " runs: change points " (e.series.change_points_line()) "." }
            }
            @if let Some(line) = series.side_by_side_line() {
                p.note { "Side by side: " (line) "." }
            }
        }
    }

    /// Links to the case's files for interactive viewers (`--profile-format`), where this
    /// run wrote them (not older than its capture: an earlier run's are not offered).
    fn viewer_links(&self, row: &BenchRow, suffix: &str) -> Markup {
        let dir = self.profile_dir.join(&row.slug);
        let modified = |name: &str| {
            std::fs::metadata(dir.join(name))
                .and_then(|m| m.modified())
                .ok()
        };
        let capture = modified(if suffix.is_empty() {
            "capture.perf.data"
        } else {
            crate::profile::ALLOC_CAPTURE
        });
        let files: Vec<(String, &str)> = [ViewerFormat::Speedscope, ViewerFormat::Firefox]
            .into_iter()
            .map(|v| (v.file_name_with(suffix), v.viewer()))
            .filter(|(name, _)| matches!((modified(name), capture), (Some(f), Some(c)) if f >= c))
            .collect();
        html! {
            @if !files.is_empty() {
                p.viewers { "Open in: "
                    @for (i, (name, viewer)) in files.iter().enumerate() {
                        @if i > 0 { ", " }
                        a href=(beside_capture(row, name)) { (viewer) }
                        " (" code { (name) } ")"
                    }
                }
            }
        }
    }

    fn metrics(&self, row: &BenchRow) -> Markup {
        let changes = row
            .comparison
            .as_ref()
            .map(|c| c.metrics.as_slice())
            .unwrap_or(&[]);
        html! {
            @if !row.metrics.is_empty() {
                table.metrics {
                    thead { tr { th.name { "metric" } th { "per iteration" } th { "brackets" }
                        @if !changes.is_empty() { th { "baseline" } th { "change" } th.name { "verdict" } } } }
                    tbody {
                        @for (id, value) in &row.metrics {
                            @let change = changes.iter().find(|m| &m.id == id);
                            @let estimated = row.counting.as_ref().and_then(|c| c.estimate(id)).is_some();
                            tr {
                                td.name { (id) @if estimated { " (estimated: scaled from the time its group ran)" } }
                                @let spread = row.metric_samples.get(id).and_then(|s| crate::stats::Summary::of(s)).map(|s| s.mad);
                                td { (value.map(|v| metric_value(v, spread)).unwrap_or_else(|| "—".into())) }
                                td { (row.metric_samples.get(id).map(Vec::len).unwrap_or(0)) }
                                @if !changes.is_empty() {
                                    @match change {
                                        Some(m) => {
                                            @let base_spread = self.base_of(&row.case).and_then(|b| b.metric_samples.get(id)).and_then(|s| crate::stats::Summary::of(s)).map(|s| s.mad);
                                            td { (metric_value(m.base, base_spread)) }
                                            td { (m.change_pct.map(|p| format!("{p:+.1}%")).unwrap_or_else(|| "from 0".into())) }
                                            td.name { (m.verdict.label()) }
                                        }
                                        None => { td {} td {} td {} }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The case's instruction profile (`--profile=instructions`): its hottest functions by
/// self instructions, the exact movers against the baseline's, and its flamegraph
/// (`svg`, this run's).
fn instructions(row: &BenchRow, svg: Option<(String, String)>) -> Markup {
    let Some(v) = row.counting.as_ref().and_then(|c| c.valgrind.as_ref()) else {
        return html! {};
    };
    if v.top.is_empty() && v.movers.is_empty() && v.notes.is_empty() {
        return html! {};
    }
    let per = |x: f64| format!("{x:.0}");
    html! {
        h3 { "Instructions (callgrind)" }
        p { "Counted exactly under valgrind over " (v.iterations * u64::from(v.brackets)) " iterations: no sampling noise, every change real."
            @for n in &v.notes { br; (n) } }
        @if !v.top.is_empty() {
            table { thead { tr { th { "self" } th { "total" } th.name { "function" } } }
                tbody { @for h in &v.top { tr { td { (format!("{:.1}%", h.self_pct)) } td { (format!("{:.1}%", h.total_pct)) } td.name { (h.name) } } } } }
        }
        @if !v.movers.is_empty() {
            table { thead { tr { th.name { "moved (self instructions/iter)" } th { "baseline" } th { "now" } th { "change" } } }
                tbody { @for m in &v.movers { tr {
                    td.name { (m.name) } td { (per(m.base)) } td { (per(m.new)) }
                    td { (m.delta_pct.map(|p| format!("{p:+.2}%")).unwrap_or_else(|| "new".into())) }
                } } } }
        }
        (flame_frame(format!("instruction flamegraph of {}", row.case), svg))
    }
}

fn movers(p: &crate::profile::ProfileSummary) -> Markup {
    html! {
        @if !p.movers.is_empty() {
            table { thead { tr { th.name { "mover" } th { "baseline" } th { "now" } th { "change" } th { "t" } th.name { "verdict" } } }
                tbody { @for m in &p.movers { tr {
                    td.name { (m.name) }
                    td { (format!("{:.1}%", m.base_pct)) } td { (format!("{:.1}%", m.new_pct)) }
                    td { (format!("{:+.1} pp", m.change_pp)) } td { (format!("{:.1}", m.z)) }
                    td class=(if m.significant { "name regression" } else { "name inside_the_noise" }) { (if m.significant { "moved" } else { "noise" }) }
                } } } }
        }
    }
}

/// Where a `--profile=wall` case's threads waited: the shares and the longest wait.
fn offcpu_line(p: &crate::profile::ProfileSummary) -> Markup {
    html! {
        @if let Some(o) = &p.offcpu { p.offcpu { (o.line()) } }
    }
}

/// Whether this run's profile of the case has an off-CPU section (so that a wall-clock
/// flamegraph beside its capture is this run's, not an earlier `--profile=wall` run's).
fn has_offcpu(p: &crate::profile::ProfileSummary) -> bool {
    {
        p.offcpu.is_some()
    }
}

/// The hottest source lines from the case's `profile.json` (its `lines` view).
fn top_lines(profile_json: Option<String>) -> Markup {
    let lines: Vec<serde_json::Value> = profile_json
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|v| v.get("lines").and_then(|l| l.as_array()).cloned())
        .unwrap_or_default();
    let text = |v: &serde_json::Value, k: &str| match v.get(k) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Number(n)) => n.to_string(),
        _ => "?".to_string(),
    };
    html! {
        @if !lines.is_empty() {
            table.lines { thead { tr { th { "self" } th.name { "line" } th.name { "function" } } }
                tbody { @for l in lines.iter().take(5) { tr {
                    td { (format!("{:.1}%", l.get("self_pct").and_then(|p| p.as_f64()).unwrap_or(0.0))) }
                    td.name { (text(l, "file")) ":" (text(l, "line")) }
                    td.name { (text(l, "function")) }
                } } } }
        }
    }
}

/// Inside the case's hottest functions (annotate.json beside the capture,
/// `sparkles.annotate/1`): each one's source lines shaded by their share of its samples
/// (the inlined callees' lines under them, against a baseline their change), hottest
/// first, its whole source, and its instructions, each with its share and line; the
/// event's precision said, as perf annotate's header says it.
#[cfg(feature = "annotate")]
fn annotated(json: Option<String>) -> Markup {
    match json
        .and_then(|text| serde_json::from_str::<sparkles_report::annotate::Annotation>(&text).ok())
    {
        Some(a) => sparkles_report::annotate::sections(&a, 3),
        None => html! {},
    }
}

/// Without sparkles-results' `annotate` feature no annotation is drawn.
#[cfg(not(feature = "annotate"))]
fn annotated(_: Option<String>) -> Markup {
    html! {}
}

/// Where the build that ran did not annotate: how to get the source and instruction views.
const NOT_ANNOTATED: &str = "The hot functions' source and instruction views need sparkles-bench's `annotate` feature (features = [\"annotate\"] in your dev-dependency), or run `sparkles annotate` on the capture.";

/// The memory and NUMA sections, where the capture has them.
fn memory_sections(p: &crate::profile::ProfileSummary) -> Markup {
    sparkles_report::html::memory_sections(p.memory.as_ref(), p.numa.as_ref(), 5)
}

/// A case's name that wraps after its `/`s (and `::`s) only, never inside a word: a
/// summary of many columns wrapped `overflow-wrap: anywhere` names every 6 characters.
fn breakable(name: &str) -> Markup {
    html! {
        @for (i, part) in name.split_inclusive(['/', ':']).enumerate() {
            @if i > 0 { wbr; }
            (part)
        }
    }
}

/// An explanation's line without its parts that say what the machine lacks
/// (`instructions and cycles unavailable: …`: the same in every row of a run, said once
/// above the summary), and those parts.
fn without_unavailable(text: &str) -> (String, Vec<String>) {
    let (head, rest) = text.split_once(": ").unwrap_or((text, ""));
    let (kept, gone): (Vec<&str>, Vec<&str>) = rest
        .split("; ")
        .partition(|part| !part.starts_with("instructions and cycles unavailable: "));
    let text = if rest.is_empty() {
        head.to_string()
    } else {
        format!("{head}: {}", kept.join("; "))
    };
    (text, gone.into_iter().map(str::to_string).collect())
}

/// The URL from the page (`<out>/report/index.html`) of the file `name` beside the case's
/// capture (`<out>/profile/<slug>/`).
fn beside_capture(row: &BenchRow, name: &str) -> String {
    format!("../profile/{}/{name}", row.slug)
}

/// A flamegraph beside the case's capture (`svg`: its text and its URL relative to the
/// page), in a frame whose source is that file, loaded when scrolled near: a page of 88
/// profiled cases carried each SVG inline, 25-35 MB.
fn flame_frame(title: String, svg: Option<(String, String)>) -> Markup {
    html! {
        @if let Some((svg, src)) = svg {
            (sparkles_report::html::svg_file_frame(&title, &svg, &src))
        }
    }
}

/// A case's anchor: its slug, or for a kept case its suite's and slug.
fn anchor(row: &BenchRow, kept: Option<&KeptCase>) -> String {
    match kept {
        Some(k) => format!("earlier-{}-{}", k.suite, row.slug),
        None => row.slug.clone(),
    }
}

/// A metric's value to the digits its noise supports: to the leading digit of `spread`
/// (its brackets' MAD) where they vary, a whole count as a whole number, else four
/// significant figures.
fn metric_value(v: f64, spread: Option<f64>) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let decimals = match spread.filter(|s| *s > 0.0 && s.is_finite()) {
        Some(s) => (-s.log10().floor()).max(0.0),
        None if v == v.trunc() => 0.0,
        None => (3.0 - v.abs().log10().floor()).max(0.0),
    };
    format!("{v:.prec$}", prec = (decimals as usize).min(6))
}

fn ci(lo: Option<f64>, hi: Option<f64>) -> String {
    match (lo, hi) {
        (Some(lo), Some(hi)) => format!("[{lo:+.1}%, {hi:+.1}%]"),
        _ => "—".to_string(),
    }
}

/// The thread sweeps among `rows`: for each, its thread counts with the time per call per
/// thread and the throughput of all threads against the first count's, a bar each.
fn sweeps_section(rows: &[BenchRow]) -> Markup {
    let sweeps = crate::sweep::sweeps(rows);
    html! {
        @if !sweeps.is_empty() {
            h2 #sweeps { "Thread sweeps" }
            p.note { "Each count of threads ran the body on that many threads at once, released together each sample: the time is per call per thread, the throughput that of all threads against the first count's." }
            @for sweep in &sweeps {
                h3 { code { (sweep.name) } }
                @let widest = sweep.points.iter().map(|p| p.scaling).fold(1.0, f64::max);
                table.sweep {
                    tr { th { "threads" } th { "per call per thread" } th { "throughput of all" } th {} }
                    @for p in &sweep.points {
                        tr {
                            td { (p.threads) }
                            td { (crate::units::format_ns(p.per_thread_ns)) }
                            td { (format!("{:.2}x", p.scaling)) }
                            td { div.bar style=(format!("width: {:.0}px", 200.0 * p.scaling / widest)) {} }
                        }
                    }
                }
            }
        }
    }
}

/// `[0.981, 1.020]`, or nothing where underpowered.
fn ratio_ci(low: Option<f64>, high: Option<f64>) -> String {
    crate::paired::ratio_interval(low, high).unwrap_or_default()
}

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Regression => "regression",
        Verdict::Improvement => "improvement",
        Verdict::InsideTheNoise => "inside_the_noise",
        Verdict::Underpowered => "underpowered",
    }
}

type Drawn = Result<(), Box<dyn std::error::Error>>;

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// An SVG chart of `size` drawn by `draw` (a chart that cannot be drawn is left blank).
fn svg_sized(size: (u32, u32), draw: impl FnOnce(Area<'_>) -> Drawn) -> String {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        let _ = draw(root);
    }
    out
}

/// A chart of the usual size.
fn svg(draw: impl FnOnce(Area<'_>) -> Drawn) -> String {
    svg_sized((560, 240), draw)
}

/// Value range of `values` with a margin.
/// An axis label for a time in a chart spanning `range` ns: its unit from the largest
/// value, and as many decimals as the span's tenth needs to tell ticks apart.
fn axis_ns(range: &std::ops::Range<f64>) -> impl Fn(&f64) -> String {
    let (scale, unit) = crate::units::time_unit(range.end.abs().max(range.start.abs()));
    let step = ((range.end - range.start) / 10.0 / scale).max(1e-12);
    let decimals = (-step.log10().floor()).clamp(0.0, 6.0) as usize;
    move |v: &f64| format!("{:.decimals$} {unit}", v / scale)
}

fn range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
    let lo = if lo.is_finite() { lo } else { 0.0 };
    let pad = ((hi - lo) * 0.05).max(hi * 0.001).max(1e-9);
    (lo - pad)..(hi + pad)
}

/// A Gaussian kernel density estimate of `values` at `points` (Silverman's bandwidth;
/// a floor keeps identical samples from dividing by zero), scaled so its peak is 1.
fn density(values: &[f64], points: &[f64]) -> Vec<f64> {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let sd = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let q = |p: f64| sorted[((sorted.len() - 1) as f64 * p).round() as usize];
    let iqr = (q(0.75) - q(0.25)) / 1.34;
    let spread = if iqr > 0.0 { sd.min(iqr) } else { sd };
    let h = (0.9 * spread * n.powf(-0.2))
        .max(mean.abs() * 1e-4)
        .max(1e-9);
    let d: Vec<f64> = points
        .iter()
        .map(|&x| {
            values
                .iter()
                .map(|v| (-0.5 * ((x - v) / h).powi(2)).exp())
                .sum()
        })
        .collect();
    let peak = d.iter().copied().fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    d.into_iter().map(|v| v / peak).collect()
}

/// The timing samples' distribution as violins along the time axis (this run above, the
/// baseline's below), each with its raw samples as points and its median as a line.
fn distribution_svg(samples: &[f64], base: Option<&[f64]>) -> String {
    svg(|root| {
        root.fill(&WHITE)?;
        let x = range(samples.iter().chain(base.unwrap_or(&[])).copied());
        let points: Vec<f64> = (0..=120)
            .map(|i| x.start + (x.end - x.start) * i as f64 / 120.0)
            .collect();
        let caption = if base.is_some() {
            "per-iteration time: this run (blue) above, the baseline (red) below"
        } else {
            "per-iteration time: distribution and samples"
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(caption, ("sans-serif", 14))
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(10)
            .build_cartesian_2d(x.clone(), 0.0..2.0)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_label_formatter(&axis_ns(&x))
            .draw()?;
        let jitter = |i: usize| ((i.wrapping_mul(2654435761) % 1000) as f64 / 1000.0 - 0.5) * 0.3;
        let series = [(samples, 1.5, BLUE)]
            .into_iter()
            .chain(base.map(|b| (b, 0.5, RED)));
        for (values, y, colour) in series {
            if values.is_empty() {
                continue;
            }
            let d = density(values, &points);
            let outline: Vec<(f64, f64)> = points
                .iter()
                .zip(&d)
                .map(|(&px, &dy)| (px, y + 0.45 * dy))
                .chain(
                    points
                        .iter()
                        .zip(&d)
                        .rev()
                        .map(|(&px, &dy)| (px, y - 0.45 * dy)),
                )
                .collect();
            chart.draw_series([Polygon::new(outline, colour.mix(0.18).filled())])?;
            chart.draw_series(
                values
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| Circle::new((v, y + jitter(i)), 2, colour.mix(0.7).filled())),
            )?;
            if let Some(s) = crate::stats::Summary::of(values) {
                chart.draw_series(LineSeries::new(
                    [(s.median, y - 0.45), (s.median, y + 0.45)],
                    colour.stroke_width(2),
                ))?;
            }
        }
        root.present()?;
        Ok(())
    })
}

/// The timing samples in the order they were taken: a drifting machine shows as a slope.
/// A case's trend over its history: each run's median with its interval, in run order,
/// the change points as vertical lines labelled with their step, machine changes as grey
/// ticks, and the last run (this one, where `last_is_this_run`) in red.
pub fn trend_svg(series: &crate::history::Series, last_is_this_run: bool) -> String {
    // The latest runs, as many as the plot tells apart.
    let from = series.runs.len().saturating_sub(TREND_RUNS);
    let runs = &series.runs[from..];
    svg_sized((560, 200), |root| {
        root.fill(&WHITE)?;
        let y = range(
            runs.iter()
                .flat_map(|p| [p.ci_low.unwrap_or(p.median), p.ci_high.unwrap_or(p.median)]),
        );
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{} per run, the last {} (change points in orange)",
                    series.statistic,
                    runs.len()
                ),
                ("sans-serif", 14),
            )
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..(runs.len().max(2) - 1) as f64 + 0.5, y.clone())?;
        chart
            .configure_mesh()
            .y_label_formatter(&axis_ns(&y))
            .x_desc("run")
            .x_label_formatter(&|v: &f64| format!("{v:.0}"))
            .draw()?;
        for (i, p) in runs.iter().enumerate() {
            if !p.machine_change.is_empty() {
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(i as f64 - 0.5, y.start), (i as f64 - 0.5, y.end)],
                    RGBColor(170, 170, 170).stroke_width(1),
                )))?;
            }
        }
        for c in series.change_points.iter().filter(|c| c.index >= from) {
            let at = (c.index - from) as f64 - 0.5;
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(at, y.start), (at, y.end)],
                RGBColor(200, 120, 0).stroke_width(2),
            )))?;
            chart.draw_series(std::iter::once(Text::new(
                format!("{:+.1}%", c.change_pct),
                (at + 0.1, y.end - (y.end - y.start) * 0.02),
                ("sans-serif", 12).into_font().color(&RGBColor(200, 120, 0)),
            )))?;
        }
        chart.draw_series(runs.iter().enumerate().filter_map(|(i, p)| {
            Some(PathElement::new(
                vec![(i as f64, p.ci_low?), (i as f64, p.ci_high?)],
                BLUE.mix(0.4).stroke_width(1),
            ))
        }))?;
        chart.draw_series(LineSeries::new(
            runs.iter().enumerate().map(|(i, p)| (i as f64, p.median)),
            BLUE.stroke_width(1),
        ))?;
        chart.draw_series(runs.iter().enumerate().map(|(i, p)| {
            let this = last_is_this_run && i + 1 == runs.len();
            let colour = if this { RED } else { BLUE };
            Circle::new(
                (i as f64, p.median),
                if this { 4 } else { 2 },
                colour.filled(),
            )
        }))?;
        root.present()?;
        Ok(())
    })
}

/// The most runs a trend plot shows.
const TREND_RUNS: usize = 60;

fn run_order_svg(samples: &[f64]) -> String {
    svg(|root| {
        root.fill(&WHITE)?;
        let y = range(samples.iter().copied());
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "per-iteration time of the samples in run order",
                ("sans-serif", 14),
            )
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(60)
            .build_cartesian_2d(0usize..samples.len().max(2), y.clone())?;
        chart
            .configure_mesh()
            .y_label_formatter(&axis_ns(&y))
            .x_desc("sample")
            .draw()?;
        chart.draw_series(LineSeries::new(
            samples.iter().copied().enumerate(),
            BLUE.stroke_width(1),
        ))?;
        chart.draw_series(
            samples
                .iter()
                .enumerate()
                .map(|(i, &v)| Circle::new((i, v), 2, BLUE.filled())),
        )?;
        root.present()?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use super::*;

    fn row(case: &str, samples: Vec<f64>) -> BenchRow {
        crate::row::ok_row(case, samples)
    }

    /// The page of `rows` whose profiles' files are under `profile_dir`.
    fn page_of_profiles(rows: &[BenchRow], profile_dir: &Path) -> String {
        page_with(rows, &[], profile_dir)
    }

    fn page(rows: &[BenchRow], kept: &[KeptCase]) -> String {
        page_with(rows, kept, Path::new("/nonexistent"))
    }

    /// The page of `rows` and `kept`, with no baseline, its profiles under `profile_dir`.
    fn page_with(rows: &[BenchRow], kept: &[KeptCase], profile_dir: &Path) -> String {
        RunReport {
            suite: "s",
            rows,
            baseline: None,
            baseline_name: None,
            machine_warning: None,
            profile_dir,
            kept,
            trends: &[],
            profiles_read: true,
            annotates: true,
        }
        .page()
        .into_string()
    }

    #[test]
    fn a_run_keeps_the_cases_it_did_not_run_with_their_time() {
        let dir = tempfile::tempdir().unwrap();
        let store = kept_path(dir.path());
        let (a, b) = (row("a", vec![1.0, 2.0]), row("b", vec![3.0, 4.0]));
        assert_eq!(
            keep_cases(&store, "s", &[a.clone(), b.clone()]),
            (vec![], None)
        );
        // Only `a` runs: `b` is kept from the first run.
        let (kept, not_written) = keep_cases(&store, "s", std::slice::from_ref(&a));
        assert_eq!(not_written, None);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].row, b);
        assert!(kept[0].run_at.ends_with('Z'), "{}", kept[0].run_at);
        // Another suite's run lists both of the first suite's latest cases.
        let (other, _) = keep_cases(&store, "t", &[row("a", vec![5.0, 6.0])]);
        let names: Vec<_> = other
            .iter()
            .map(|k| (k.suite.as_str(), k.row.case.as_str()))
            .collect();
        assert_eq!(names, [("s", "b"), ("s", "a")]);
        let html = page(&[row("c", vec![1.0, 1.5, 2.0])], &other);
        assert!(html.contains("Cases from earlier runs"));
        assert!(html.contains(&format!("{} (s)", other[0].run_at)));
        assert!(html.contains("id=\"earlier-s-b\""));
        // A store that cannot be read is started afresh (and said), never an error.
        std::fs::write(&store, b"{not json").unwrap();
        assert_eq!(
            keep_cases(&store, "s", std::slice::from_ref(&a)),
            (vec![], None)
        );
        let again: Vec<KeptCase> = serde_json::from_slice(&std::fs::read(&store).unwrap()).unwrap();
        assert_eq!(again.len(), 1);
        // A store that cannot be written: said, with its path, for the run to fail on;
        // the earlier cases still listed.
        let blocked = dir.path().join("a-file");
        std::fs::write(&blocked, b"").unwrap();
        let (kept, not_written) = keep_cases(&blocked.join("cases.json"), "s", &[a]);
        assert!(kept.is_empty());
        let why = not_written.unwrap();
        assert!(
            why.starts_with(&blocked.join("cases.json").display().to_string()),
            "{why}"
        );
    }

    #[test]
    fn axis_labels_have_units_and_tell_ticks_apart() {
        let f = axis_ns(&(7_400_000.0..7_600_000.0));
        assert_eq!(f(&7_420_000.0), "7.42 ms");
        let f = axis_ns(&(1295.0..1305.0));
        assert_eq!(f(&1300.0), "1.300 µs");
        assert_eq!(axis_ns(&(10.0..90.0))(&42.0), "42 ns");
    }

    #[test]
    fn metric_values_carry_the_digits_their_noise_supports() {
        assert_eq!(metric_value(619193052.7888, Some(12_000.0)), "619193053");
        assert_eq!(metric_value(1.23456, Some(0.02)), "1.23");
        assert_eq!(metric_value(256.0, None), "256");
        assert_eq!(metric_value(0.123456, None), "0.1235");
        assert_eq!(metric_value(1234.5678, None), "1235");
        assert_eq!(metric_value(3.5, Some(0.0)), "3.500");
    }

    #[test]
    fn a_thread_sweep_shows_its_counts_side_by_side() {
        let mut one = row("lock/threads=1", vec![100.0; 3]);
        one.threads = Some(1);
        let mut two = row("lock/threads=2", vec![200.0; 3]);
        two.threads = Some(2);
        let html = page(&[one, two, row("plain", vec![5.0; 3])], &[]);
        assert!(
            html.contains(r#"<h2 id="sweeps">Thread sweeps</h2>"#),
            "{html}"
        );
        assert!(html.contains("<h3><code>lock</code></h3>"), "{html}");
        assert!(
            html.contains("<td>2</td><td>200 ns</td><td>1.00x</td>"),
            "{html}"
        );
        // No sweep, no section.
        assert!(!page(&[row("plain", vec![5.0; 3])], &[]).contains("Thread sweeps"));
    }

    #[test]
    fn a_case_held_to_its_groups_reference_shows_its_ratio_and_the_twins_null() {
        let turns =
            |f: f64| -> Vec<f64> { (0..12).map(|i| f * (100.0 + f64::from(i % 3))).collect() };
        let twin: Vec<f64> = (0..12).map(|i| 100.2 + f64::from(i % 3)).collect();
        let mut reference = row("g/old", turns(1.0));
        let mut new = row("g/new", turns(0.8));
        new.reference = crate::paired::against_reference("g/old", &turns(1.0), &twin, &turns(0.8));
        reference.reference = crate::paired::against_reference("g/old", &turns(1.0), &twin, &twin);
        let found = new.reference.clone().unwrap();
        assert_eq!(found.verdict, Verdict::Improvement);
        let html = page(&[reference, new], &[]);
        assert!(
            html.contains("The reference of its group: its twin"),
            "{html}"
        );
        assert!(
            html.contains(&format!(
                r#"<span class="improvement">{:.2}x</span>"#,
                found.ratio
            )),
            "{html}"
        );
        assert!(
            html.contains("<code>g/old</code> in the same rounds"),
            "{html}"
        );
        assert!(html.contains(": faster."), "{html}");
    }

    #[test]
    fn a_side_by_side_comparison_shows_both_sides_and_the_null() {
        let base = row("c", vec![100.0, 101.0, 102.0, 100.0, 101.0, 102.0]);
        let mut variant = row("c", vec![110.0, 111.0, 112.0, 110.0, 111.0, 112.0]);
        let rounds: Vec<crate::paired::Round> = (0..12)
            .map(|i| crate::paired::Round {
                base: vec![100.0 + f64::from(i % 3), 100.5 + f64::from(i % 3)],
                variant: vec![110.0 + f64::from(i % 3), 110.2 + f64::from(i % 3)],
            })
            .collect();
        let change = crate::paired::paired(&rounds, 0.5).unwrap();
        crate::baseline::set_comparison(
            &mut variant,
            &base,
            (&change).into(),
            &|_| None,
            crate::baseline::NOT_PROFILED,
        );
        let rows = [variant];
        let html = RunReport {
            suite: "s",
            rows: &rows,
            baseline: Some(std::slice::from_ref(&base)),
            baseline_name: Some("base 1111111 against variant 2222222"),
            machine_warning: None,
            profile_dir: Path::new("/nonexistent"),
            kept: &[],
            trends: &[],
            profiles_read: true,
            annotates: true,
        }
        .page()
        .into_string();
        assert!(html.contains("measured side by side"), "{html}");
        // The verdict's cell carries its colour's class (one class attribute).
        assert!(
            html.contains(r#"<td class="name regression">regression"#),
            "{html}"
        );
        assert!(
            html.contains("<th>null</th><th>null 95% CI</th><th>rounds</th>"),
            "{html}"
        );
        let null = format!("{:+.1}%", change.null_change_pct);
        assert!(
            html.contains(&format!("null (base against base) {null}")),
            "{html}"
        );
        assert!(html.contains("<td>12</td>"), "{html}");
        // The explanation quotes the null too; the size a change had to clear and the
        // processes beside it.
        assert!(html.contains(&format!("(null {null}")), "{html}");
        assert!(
            html.contains("paired: both builds in fresh processes"),
            "{html}"
        );
        assert!(
            html.contains(&format!(", noise ±{:.1}%, 2+2 processes", change.noise_pct)),
            "{html}"
        );
    }

    #[test]
    fn a_cases_trend_says_its_exact_counts_change_points_and_its_side_by_side_results() {
        use crate::history::{changes, ExactSeries, Point, Series, SideBySide, SideBySidePoint};
        let point = |i: usize, v: f64| Point {
            commit: Some(format!("{i:02}").repeat(20).into()),
            dirty: Some(false),
            branch: None,
            time: 1_800_000_000 + i as u64 * 60,
            median: v,
            ci_low: None,
            ci_high: None,
            as_measured: None,
            machine_change: Vec::new(),
            probe: None,
            probe_less_wait: None,
        };
        let series = |statistic: &str, runs: Vec<Point>| {
            let change_points =
                changes::find(&runs, &changes::Options::default().for_exact_counts());
            Series {
                case: "c".to_string(),
                statistic: statistic.to_string(),
                runs,
                change_points,
                machine_steps: Vec::new(),
                too_few_runs: None,
                side_by_side: Vec::new(),
            }
        };
        // The times flat, the instructions 1% more from the 7th run on.
        let times = (0..12).map(|i| point(i, 100.0 + (i % 3) as f64)).collect();
        let counts = (0..12)
            .map(|i| point(i, if i >= 6 { 1_010_000.0 } else { 1_000_000.0 } + i as f64))
            .collect();
        let mut trend = crate::history::Trend {
            series: series(crate::history::LOW_LESS_WAIT, times),
            exact: vec![ExactSeries {
                metric: "valgrind.instructions".to_string(),
                series: series("valgrind.instructions", counts),
            }],
        };
        trend.series.side_by_side.push(SideBySidePoint {
            commit: Some("ab".repeat(20).into()),
            dirty: Some(false),
            time: 1_800_000_000,
            by: "compare",
            found: SideBySide {
                base_rev: None,
                change_pct: 4.2,
                ci_low_pct: Some(3.1),
                ci_high_pct: Some(5.0),
                noise_pct: Some(1.5),
                verdict: crate::stats::Verdict::Regression,
            },
        });
        let rows = vec![row("c", vec![100.0, 101.0, 102.0])];
        let html = RunReport {
            suite: "s",
            rows: &rows,
            baseline: None,
            baseline_name: None,
            machine_warning: None,
            profile_dir: Path::new("/nonexistent"),
            kept: &[],
            trends: std::slice::from_ref(&trend),
            profiles_read: true,
            annotates: true,
        }
        .page()
        .into_string();
        assert!(
            html.contains("History: 12 runs; no change point."),
            "{html}"
        );
        assert!(
            html.contains("10th percentile less run-queue wait per run, the last 12"),
            "{html}"
        );
        assert!(
            html.contains(
                "Exact count <code>valgrind.instructions</code> over 12 runs: change points 0606060606 +1.0% (p "
            ),
            "{html}"
        );
        assert!(
            html.contains("Side by side: 1 measured side by side (1 by compare, 0 by a paired --baseline); the latest, abababab"),
            "{html}"
        );
        assert!(
            html.contains(": +4.2% [+3.1, +5.0] regression (noise ±1.5%)."),
            "{html}"
        );
    }

    #[test]
    fn an_unpaired_comparison_says_so_with_its_between_run_noise() {
        let base = row("c", vec![100.0, 101.0, 102.0, 100.0, 101.0, 102.0]);
        let mut rows = vec![row("c", vec![110.0, 111.0, 112.0, 110.0, 111.0, 112.0])];
        let baseline = crate::baseline::Baseline {
            path: "b.jsonl".into(),
            rows: vec![base.clone()],
            environment: None,
        };
        crate::baseline::compare_rows(&mut rows, &baseline, &|_| None);
        crate::baseline::hold_to_between_run_noise(&mut rows, None);
        let html = RunReport {
            suite: "s",
            rows: &rows,
            baseline: Some(std::slice::from_ref(&base)),
            baseline_name: Some("main"),
            machine_warning: Some("busy: other work ran beside this run: x\nsecond line"),
            profile_dir: Path::new("/nonexistent"),
            kept: &[],
            trends: &[],
            profiles_read: true,
            annotates: true,
        }
        .page()
        .into_string();
        assert!(html.contains("(unpaired: two runs apart in time"), "{html}");
        assert!(
            html.contains("between-run noise ±5.0% (default: 0 moves"),
            "{html}"
        );
        // Each warning line a paragraph of its own.
        assert!(html.contains(r#"<p class="machine">busy: other work ran beside this run: x</p><p class="machine">second line</p>"#), "{html}");
    }

    #[test]
    fn viewer_files_of_this_run_are_linked() {
        let dir = tempfile::tempdir().unwrap();
        let case = dir.path().join("v");
        std::fs::create_dir_all(&case).unwrap();
        // An earlier run's Firefox file, then this run's capture and speedscope file.
        std::fs::write(case.join("profile.firefox.json.gz"), b"old").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(case.join("capture.perf.data"), b"x").unwrap();
        std::fs::write(case.join("profile.speedscope.json"), b"{}").unwrap();
        let mut r = row("v", vec![1.0, 2.0]);
        r.profile = Some(Default::default());
        let html = page_of_profiles(std::slice::from_ref(&r), dir.path());
        assert!(
            html.contains("href=\"../profile/v/profile.speedscope.json\""),
            "{html}"
        );
        assert!(
            !html.contains("profile.firefox.json.gz"),
            "an earlier run's file is offered"
        );
    }

    #[test]
    fn what_the_machine_lacks_is_said_once_and_names_wrap_at_their_slashes() {
        let (text, gone) = without_unavailable(
            "regression +25.0% [+23.0, +27.0]: where: extra_fnv +24.3 pp; no counted cause moved; instructions and cycles unavailable: ENOENT: no PMU",
        );
        assert_eq!(
            text,
            "regression +25.0% [+23.0, +27.0]: where: extra_fnv +24.3 pp; no counted cause moved"
        );
        assert_eq!(
            gone,
            ["instructions and cycles unavailable: ENOENT: no PMU"]
        );
        assert_eq!(
            without_unavailable("inside the noise").0,
            "inside the noise"
        );

        let base = row("json/parse/value", vec![100.0; 6]);
        let mut rows = Vec::new();
        for case in ["json/parse/value", "json/parse/typed"] {
            let mut r = row(case, vec![125.0; 6]);
            r.comparison = Some(crate::comparison::Comparison {
                explanation: Some(crate::comparison::Explanation {
                    kind: crate::comparison::Cause::MovedFunctions,
                    text: "regression +25.0% [+23.0, +27.0]: no counted cause moved; instructions and cycles unavailable: ENOENT: no PMU".into(),
                }),
                ..serde_json::from_value(serde_json::json!({
                    "baseline_median_ns": 100.0, "median_ns": 125.0, "delta_pct": 25.0,
                    "ci_low_pct": 23.0, "ci_high_pct": 27.0, "confidence": 0.95,
                    "verdict": "regression"
                }))
                .unwrap()
            });
            rows.push(r);
        }
        let html = RunReport {
            suite: "s",
            rows: &rows,
            baseline: Some(std::slice::from_ref(&base)),
            baseline_name: Some("b"),
            machine_warning: None,
            profile_dir: Path::new("/nonexistent"),
            kept: &[],
            trends: &[],
            profiles_read: true,
            annotates: true,
        }
        .page()
        .into_string();
        assert_eq!(html.matches("ENOENT: no PMU").count(), 1, "{html}");
        assert!(
            html.contains("On this machine instructions and cycles unavailable: ENOENT: no PMU"),
            "{html}"
        );
        assert!(html.contains("json/<wbr>parse/<wbr>typed</a>"), "{html}");
    }

    #[test]
    fn flamegraphs_are_frames_of_their_files_loaded_when_scrolled_to() {
        let dir = tempfile::tempdir().unwrap();
        let case = dir.path().join("v");
        std::fs::create_dir_all(&case).unwrap();
        let svg = format!(
            r#"<svg height="300" width="1200">{}</svg>"#,
            "<g/>".repeat(100_000)
        );
        std::fs::write(case.join("flamegraph.svg"), &svg).unwrap();
        let mut r = row("v", vec![1.0, 2.0]);
        r.profile = Some(Default::default());
        let html = page_of_profiles(std::slice::from_ref(&r), dir.path());
        assert!(
            html.contains(r#"<iframe title="flamegraph of v" style="height: 304px" loading="lazy" src="../profile/v/flamegraph.svg">"#),
            "{html}"
        );
        // The SVG's 400 KB are the file's, not the page's.
        assert!(html.len() < svg.len() / 4, "{} bytes", html.len());
        assert!(!html.contains("data:image/svg+xml"));
    }

    #[test]
    fn density_peaks_where_the_samples_are() {
        let values = [10.0, 10.5, 11.0, 10.2, 30.0];
        let points: Vec<f64> = (0..=40).map(f64::from).collect();
        let d = density(&values, &points);
        let peak = d
            .iter()
            .copied()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        assert!((9..=11).contains(&peak.0), "peak at {}", peak.0);
        assert!((peak.1 - 1.0).abs() < 1e-12);
        assert!(d[30] > d[20], "the outlier has its own bump");
        // Identical samples neither divide by zero nor vanish.
        let flat = density(&[5.0; 4], &[4.0, 5.0, 6.0]);
        assert!(flat.iter().all(|v| v.is_finite()) && flat[1] == 1.0);
    }

    #[test]
    fn memory_levels_and_numa_placement_are_drawn_where_the_capture_has_them() {
        let memory: sparkles_report::memory::Memory = serde_json::from_value(serde_json::json!({
            "samples": 10, "weight_total": 500, "weight": "latency (WEIGHT)",
            "levels": [
                {"level": "L1 hit", "samples": 7, "share": 0.7, "weight_total": 70,
                 "weight_mean": 10.0, "weight_p90": 12, "weight_share": 0.14},
                {"level": "Remote node, same socket RAM hit", "samples": 3, "share": 0.3,
                 "weight_total": 430, "weight_mean": 143.3, "weight_p90": 200, "weight_share": 0.86}],
            "code": [{"function": "chase", "file": "demo.rs", "line": 42, "module": "demo",
                      "samples": 9, "weight_total": 480, "weight_mean": 53.3, "share": 0.9,
                      "top_level": "L1 hit"}],
            "data_objects": [], "ops": [], "tlb": [], "snoop": [],
            "locked": 0, "remote": 3, "hitm": 0, "without_address": 0
        }))
        .unwrap();
        let numa: sparkles_report::numa::Numa = serde_json::from_value(serde_json::json!({
            "source": "phys_addr",
            "nodes": [{"node": 0, "cpus": "0-1", "memory_kb": null, "distances": [10, 21]},
                      {"node": 1, "cpus": "2-3", "memory_kb": null, "distances": [21, 10]}],
            "matrix": [{"cpu_node": 0, "mem_node": 0, "samples": 613, "weight_total": 0},
                       {"cpu_node": 0, "mem_node": 1, "samples": 287, "weight_total": 0}],
            "local_share": 0.681, "samples": 900, "unplaced": {"no data address": 4},
            "code": [], "data_objects": [], "remote_code": [], "remote_data": []
        }))
        .unwrap();
        let mut r = row("mem", vec![1.0, 2.0, 3.0]);
        r.profile = Some(crate::profile::ProfileSummary {
            event: "ibs_op".into(),
            samples: 10,
            memory: Some(memory),
            numa: Some(numa),
            ..Default::default()
        });
        let html = page(&[r], &[]);
        for needed in [
            "Memory levels",
            "<td class=\"name\">L1 hit</td>",
            "Remote node, same socket RAM hit",
            "86.0%",
            "chase",
            "demo.rs",
            "NUMA placement",
            "68.1% on the CPU",
            "CPU ↓ memory →",
            "4 unplaced: no data address",
            ">613</td>",
            ">287</td>",
        ] {
            assert!(html.contains(needed), "the page lacks {needed:?}");
        }
        // Without memory samples neither section appears; nor the instruction section
        // without an instruction profile.
        let mut counted = row("counted", vec![1.0, 2.0]);
        counted.counting = Some(crate::counting::CountingReport {
            valgrind: Some(crate::counting::ValgrindReport {
                iterations: 4,
                brackets: 8,
                top: vec![crate::profile::HotFunction {
                    name: "mycrate::spin".into(),
                    self_pct: 97.5,
                    total_pct: 97.5,
                    inlined_into: None,
                }],
                movers: vec![crate::counting::InstructionChange {
                    name: "mycrate::spin".into(),
                    base: 140_000.0,
                    new: 141_400.0,
                    delta_pct: Some(1.0),
                }],
                ..Default::default()
            }),
            ..Default::default()
        });
        let html = page(&[counted], &[]);
        for needed in [
            "Instructions (callgrind)",
            "over 32 iterations",
            "97.5%",
            "mycrate::spin",
            "141400",
            "+1.00%",
        ] {
            assert!(html.contains(needed), "the page lacks {needed:?}");
        }
        assert!(!page(&[row("plain", vec![1.0])], &[]).contains("Instructions (callgrind)"));
        let mut plain = row("plain", vec![1.0, 2.0]);
        plain.profile = Some(Default::default());
        let html = page(&[plain], &[]);
        assert!(!html.contains("Memory levels") && !html.contains("NUMA placement"));
    }

    #[test]
    fn an_allocation_profile_has_its_own_section_with_the_live_sites() {
        let mut r = row("parse", vec![1.0, 2.0]);
        let hot = |name: &str, pct: f64| crate::profile::HotFunction {
            name: name.into(),
            self_pct: pct,
            total_pct: pct,
            inlined_into: None,
        };
        r.profile = Some(crate::profile::ProfileSummary {
            event: crate::profile::ALLOC_EVENT.into(),
            samples: 412,
            top: vec![hot("serde_json::de::parse_object", 61.5)],
            alloc: Some(crate::profile::AllocProfile {
                mean_bytes: 512 * 1024,
                bytes_per_iteration: 1.5 * 1024.0 * 1024.0,
                live_samples: 3,
                live_bytes_per_iteration: 2048.0,
                live_top: vec![hot("mycrate::cache_insert", 100.0)],
                ..Default::default()
            }),
            ..Default::default()
        });
        let html = page(&[r], &[]);
        for needed in [
            "Allocations (sampled)",
            "1.5 MiB an iteration by 412 samples (one per 512 KiB on average;",
            "serde_json::de::parse_object",
            "Still live when their iteration ended (2 KiB an iteration)",
            "mycrate::cache_insert",
        ] {
            assert!(html.contains(needed), "the page lacks {needed:?}");
        }
        assert!(!html.contains("<h3>Profile</h3>"));
    }
}
