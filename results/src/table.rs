//! The table a run prints: one aligned row per case, units scaled, colour on a terminal.

use crate::metric::MetricDescriptor;
use crate::row::BenchRow;
use crate::stats::Verdict;
use crate::units::{format_metric, format_ns};

fn format_pct(v: f64) -> String {
    format!("{v:+.1}%")
}

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

struct Cell {
    text: String,
    colour: Option<&'static str>,
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell { text, colour: None }
    }
}

/// Renders the run's rows with the selected metric columns; a column no row has a value
/// for is left out (the JSON keeps it as null).
pub fn render(rows: &[BenchRow], metrics: &[MetricDescriptor], colour: bool) -> String {
    let shown: Vec<&MetricDescriptor> = metrics
        .iter()
        .filter(|m| {
            rows.iter()
                .any(|r| r.metrics.get(m.id.as_ref()).copied().flatten().is_some())
        })
        .collect();
    let compared = rows.iter().any(|r| r.comparison.is_some());
    let mut header: Vec<String> = ["case", "median", "mad", "min", "max", "iters"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    header.extend(shown.iter().map(|m| m.header.to_string()));
    if compared {
        header.extend(["baseline", "change", "95% CI", "verdict"].map(String::from));
    }
    let mut body: Vec<Vec<Cell>> = Vec::new();
    // Lines printed under a row: a profiled case's hottest functions.
    let mut under: Vec<Vec<String>> = Vec::new();
    let mut failures = Vec::new();
    let mut lowest_ratio = f64::INFINITY;
    for row in rows {
        let Some(t) = row.timing.as_ref().filter(|_| row.ok).map(|t| &t.summary) else {
            failures.push(row);
            continue;
        };
        // A change against the baseline: what moved with it, and where.
        let why = row
            .comparison
            .as_ref()
            .and_then(|c| c.explanation.as_ref())
            .filter(|e| e.kind != crate::explain::Cause::None)
            .map(|e| format!("    why: {} ({})\n", e.text, e.kind.label()));
        under.push(
            why.into_iter()
                .chain(
                    row.profile
                        .iter()
                        .flat_map(|p| p.lines_under_row())
                        .map(|l| format!("    {l}\n")),
                )
                .collect(),
        );
        let mut cells: Vec<Cell> = vec![
            row.case.clone().into(),
            format_ns(t.median).into(),
            format!("±{}", format_ns(t.mad)).into(),
            format_ns(t.min).into(),
            format_ns(t.max).into(),
            row.iterations.to_string().into(),
        ];
        for m in &shown {
            let text = format_metric(row.metrics.get(m.id.as_ref()).copied().flatten(), m.format);
            // A scaled count is marked: the reader must not take it for a measured one.
            match row.counting.as_ref().and_then(|c| c.estimate(&m.id)) {
                Some(ratio) if text != "—" => {
                    lowest_ratio = lowest_ratio.min(ratio);
                    cells.push(format!("~{text}").into());
                }
                _ => cells.push(text.into()),
            }
        }
        if compared {
            match &row.comparison {
                Some(c) => {
                    cells.push(format_ns(c.baseline_median_ns).into());
                    cells.push(format_pct(c.delta_pct).into());
                    cells.push(
                        match (c.ci_low_pct, c.ci_high_pct) {
                            (Some(lo), Some(hi)) => {
                                format!("[{}, {}]", format_pct(lo), format_pct(hi))
                            }
                            _ => "—".to_string(),
                        }
                        .into(),
                    );
                    // A verdict across a machine that changed speed is marked, never trusted.
                    let mark = if c.machine_shift_pct.is_some() {
                        " *"
                    } else {
                        ""
                    };
                    cells.push(Cell {
                        text: format!("{}{mark}", c.verdict.label()),
                        colour: match c.verdict {
                            Verdict::Regression => Some(RED),
                            Verdict::Improvement => Some(GREEN),
                            _ => None,
                        },
                    });
                }
                None => {
                    cells.extend(["—", "—", "—", "not in baseline"].map(|s| s.to_string().into()))
                }
            }
        }
        body.push(cells);
    }
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for cells in &body {
        for (w, c) in widths.iter_mut().zip(cells) {
            *w = (*w).max(c.text.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<Cell>, out: &mut String, bold: bool| {
        let last = cells.len().saturating_sub(1);
        for (i, (cell, w)) in cells.into_iter().zip(&widths).enumerate() {
            let pad = w - cell.text.chars().count();
            let left_aligned = i == 0 || (compared && i == last);
            let (before, after) = if left_aligned { (0, pad) } else { (pad, 0) };
            if i > 0 {
                out.push_str("  ");
            }
            out.push_str(&" ".repeat(before));
            let code = if bold { Some(BOLD) } else { cell.colour };
            match code.filter(|_| colour) {
                Some(code) => {
                    out.push_str(code);
                    out.push_str(&cell.text);
                    out.push_str(RESET);
                }
                None => out.push_str(&cell.text),
            }
            if i < last {
                out.push_str(&" ".repeat(after));
            }
        }
        out.push('\n');
    };
    line(header.into_iter().map(Cell::from).collect(), &mut out, true);
    for (cells, extra) in body.into_iter().zip(under) {
        line(cells, &mut out, false);
        for e in extra {
            out.push_str(&e);
        }
    }
    if lowest_ratio.is_finite() {
        out.push_str(&format!(
            "~ estimate: the counters took turns on the PMU and each count is scaled from the time its group ran (lowest: {:.1}% of the time); --perf-exact counts fewer events exactly\n",
            lowest_ratio * 100.0
        ));
    }
    if let Some(shift) = rows
        .iter()
        .find_map(|r| r.comparison.as_ref()?.machine_shift_pct)
    {
        out.push_str(&format!(
            "* the machine ran {:.1}% {} than when the baseline was saved (a reference loop timed in both runs): every verdict compares two machine states; `sparkles compare --base REV` measures both revisions in one run\n",
            shift.abs(),
            if shift > 0.0 { "slower" } else { "faster" }
        ));
    }
    for row in failures {
        let message = row.error.as_deref().unwrap_or("failed");
        if colour {
            out.push_str(&format!("{}  {RED}FAILED{RESET}: {message}\n", row.case));
        } else {
            out.push_str(&format!("{}  FAILED: {message}\n", row.case));
        }
    }
    out
}
