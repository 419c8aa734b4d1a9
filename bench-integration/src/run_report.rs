//! The run report: one self-contained HTML page per bench run
//! (`target/sparkles/report/index.html`): a sortable summary of every case with its
//! verdict against the baseline and the line that explains it, then per case the
//! distribution of its timing samples with the baseline's overlaid, the samples in run
//! order, its metrics, and, where it was profiled, its flamegraph, hottest functions and
//! the hot-function movers with the differential flamegraph. Nothing is fetched: CSS,
//! script and charts are inline, and each flamegraph is a frame whose source is the SVG
//! itself (a `data:` URL), so that it keeps its own zoom and search script.

use std::path::Path;

use maud::{html, Markup, PreEscaped, DOCTYPE};
use plotters::prelude::*;

use crate::error::Error;
use crate::record::BenchRow;
use crate::stats::Verdict;
use crate::table::format_ns;

/// The page's path under the output folder.
pub fn path_in(out_dir: &Path) -> std::path::PathBuf {
    out_dir.join("report").join("index.html")
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
    /// Where each case's profile artifacts are (`<out>/profile/<slug>/`).
    pub profile_dir: &'a Path,
}

const CSS: &str = r#"
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em 2em; color: #1d1d1f; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-top: 1px solid #ddd; padding-top: 1em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { padding: 3px 10px; text-align: right; border-bottom: 1px solid #eee; white-space: nowrap; }
th { cursor: pointer; background: #f5f5f7; }
td.name, th.name, td.text { text-align: left; }
td.text { white-space: normal; min-width: 24em; max-width: 46em; }
.regression { color: #b00020; font-weight: 600; } .improvement { color: #107c10; font-weight: 600; }
.inside_the_noise, .underpowered { color: #6e6e73; }
.why { color: #333; font-style: italic; }
iframe { width: 100%; height: 520px; border: 1px solid #ddd; }
.charts svg { margin-right: 1em; }
"#;

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
                    style { (PreEscaped(CSS)) }
                }
                body {
                    h1 { "sparkles: suite " (self.suite) }
                    p {
                        (self.rows.len()) " cases"
                        @if let Some(b) = self.baseline_name { ", compared with baseline " code { (b) } }
                        "."
                    }
                    (self.summary())
                    @for row in self.rows { (self.case(row)) }
                    script { (PreEscaped(SORT_JS)) }
                }
            }
        }
    }

    fn summary(&self) -> Markup {
        let compared = self.rows.iter().any(|r| r.comparison.is_some());
        let profiled = self.rows.iter().any(|r| r.profile.is_some());
        html! {
            table.sortable #summary {
                thead { tr {
                    th.name { "case" } th { "median" } th { "MAD" } th { "throughput" }
                    @if compared { th { "baseline" } th { "change" } th { "95% CI" } th.name { "verdict" } th.name { "why" } }
                    @if profiled { th.name { "top function" } th { "samples" } th { "lost" } th { "throttled" } }
                } }
                tbody {
                    @for row in self.rows { (self.summary_row(row, compared, profiled)) }
                }
            }
        }
    }

    fn summary_row(&self, row: &BenchRow, compared: bool, profiled: bool) -> Markup {
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
            tr {
                td.name { a href=(format!("#{}", row.slug)) { (row.case) } }
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
                            td.name class=(verdict_class(c.verdict)) { (c.verdict.label()) }
                            td.text.why { (c.explanation.as_ref().map(|e| e.text.as_str()).unwrap_or("")) }
                        }
                        None => { td { "—" } td { "—" } td { "—" } td.name { "not in baseline" } td {} }
                    }
                }
                @if profiled {
                    @match &row.profile {
                        Some(p) => {
                            td.name { (p.top.first().map(|h| h.name.as_str()).unwrap_or("—")) }
                            td { (p.samples) }
                            td { (p.lost + p.lost_samples) }
                            td { (p.throttled.count) }
                        }
                        None => { td {} td {} td {} td {} }
                    }
                }
            }
        }
    }

    fn case(&self, row: &BenchRow) -> Markup {
        let base = self.base_of(&row.case);
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
        html! {
            h2 id=(row.slug) { (row.case) }
            @if let Some(e) = &row.error { p.regression { "failed: " (e) } }
            @if let Some(c) = &row.comparison {
                p {
                    span class=(verdict_class(c.verdict)) { (c.verdict.label()) }
                    " " (format!("{:+.1}%", c.delta_pct)) " " (ci(c.ci_low_pct, c.ci_high_pct))
                    @if let Some(e) = &c.explanation { br; span.why { (e.text) } }
                }
            }
            @if !samples.is_empty() {
                div.charts {
                    (PreEscaped(distribution_svg(samples, base_samples)))
                    (PreEscaped(run_order_svg(samples)))
                }
            }
            (self.metrics(row))
            @if let Some(p) = &row.profile {
                h3 { "Profile" }
                p { (p.samples) " samples of " (p.event) ", " (p.lost + p.lost_samples) " lost, throttled " (p.throttled.count) " times"
                    @if let Some(e) = &p.error { " — no capture: " (e) } }
                @if !p.top.is_empty() {
                    table { thead { tr { th { "self" } th { "total" } th.name { "function" } } }
                        tbody { @for h in &p.top { tr { td { (format!("{:.1}%", h.self_pct)) } td { (format!("{:.1}%", h.total_pct)) } td.name { (h.name) } } } } }
                }
                (flame_frame(format!("flamegraph of {}", row.case), frame("flamegraph.svg")))
                (movers(p))
                @let diff = frame("diff.svg");
                @if diff.is_some() && cfg!(feature = "profile") {
                    h3 { "Against the baseline's profile" }
                }
                (flame_frame(format!("differential flamegraph of {}", row.case), diff))
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
                                td { (value.map(|v| format!("{v:.4}")).unwrap_or_else(|| "—".into())) }
                                td { (row.metric_samples.get(id).map(Vec::len).unwrap_or(0)) }
                                @if !changes.is_empty() {
                                    @match change {
                                        Some(m) => {
                                            td { (format!("{:.4}", m.base)) }
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

#[cfg(feature = "profile")]
fn movers(p: &crate::profile::ProfileSummary) -> Markup {
    html! {
        @if !p.movers.is_empty() {
            table { thead { tr { th.name { "mover" } th { "baseline" } th { "now" } th { "change" } th { "t" } th.name { "verdict" } } }
                tbody { @for m in &p.movers { tr {
                    td.name { (m.name) }
                    td { (format!("{:.1}%", m.base_pct)) } td { (format!("{:.1}%", m.new_pct)) }
                    td { (format!("{:+.1} pp", m.change_pp)) } td { (format!("{:.1}", m.z)) }
                    td.name class=(if m.significant { "regression" } else { "inside_the_noise" }) { (if m.significant { "moved" } else { "noise" }) }
                } } } }
        }
    }
}

#[cfg(not(feature = "profile"))]
fn movers(_: &crate::profile::ProfileSummary) -> Markup {
    html! {}
}

/// A flamegraph beside the case's capture, in a frame whose source is the SVG itself.
/// Flamegraphs are drawn only where profiles are read (the `profile` feature): without
/// it a file there is an earlier run's, and is not shown.
#[cfg(feature = "profile")]
fn flame_frame(title: String, svg: Option<String>) -> Markup {
    html! {
        @if let Some(svg) = svg {
            iframe title=(title) src=(sparkles_report::html::svg_data_url(&svg)) {}
        }
    }
}

#[cfg(not(feature = "profile"))]
fn flame_frame(_: String, _: Option<String>) -> Markup {
    html! {}
}

fn ci(lo: Option<f64>, hi: Option<f64>) -> String {
    match (lo, hi) {
        (Some(lo), Some(hi)) => format!("[{lo:+.1}%, {hi:+.1}%]"),
        _ => "—".to_string(),
    }
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

/// An SVG chart of `size` drawn by `draw` (a chart that cannot be drawn is left blank).
fn svg(draw: impl FnOnce(DrawingArea<SVGBackend<'_>, plotters::coord::Shift>) -> Drawn) -> String {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (560, 220)).into_drawing_area();
        let _ = draw(root);
    }
    out
}

/// Value range of `values` with a margin.
fn range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
    let lo = if lo.is_finite() { lo } else { 0.0 };
    let pad = ((hi - lo) * 0.05).max(hi * 0.001).max(1e-9);
    (lo - pad)..(hi + pad)
}

/// The timing samples as points along the time axis (this run above, the baseline's
/// below), with each median as a line.
fn distribution_svg(samples: &[f64], base: Option<&[f64]>) -> String {
    svg(|root| {
        root.fill(&WHITE)?;
        let x = range(samples.iter().chain(base.unwrap_or(&[])).copied());
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "per-iteration time (ns): this run above, the baseline below",
                ("sans-serif", 14),
            )
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(10)
            .build_cartesian_2d(x, 0.0..2.0)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .draw()?;
        let jitter = |i: usize| (i.wrapping_mul(2654435761) % 1000) as f64 / 1000.0 * 0.6;
        let series = [(samples, 1.2, BLUE)]
            .into_iter()
            .chain(base.map(|b| (b, 0.2, RED)));
        for (values, y, colour) in series {
            chart.draw_series(
                values
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| Circle::new((v, y + jitter(i)), 3, colour.mix(0.6).filled())),
            )?;
            if let Some(s) = crate::stats::Summary::of(values) {
                chart.draw_series(LineSeries::new(
                    [(s.median, y - 0.1), (s.median, y + 0.7)],
                    colour.stroke_width(2),
                ))?;
            }
        }
        root.present()?;
        Ok(())
    })
}

/// The timing samples in the order they were taken: a drifting machine shows as a slope.
fn run_order_svg(samples: &[f64]) -> String {
    svg(|root| {
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("samples in run order (ns)", ("sans-serif", 14))
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(60)
            .build_cartesian_2d(0usize..samples.len().max(2), range(samples.iter().copied()))?;
        chart.configure_mesh().draw()?;
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
