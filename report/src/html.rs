//! One capture's profile as a self-contained HTML page (`sparkles report FILE --format
//! html`): what was sampled and how well it unwound, the notes, the hottest functions and
//! symbols, and the flamegraph in a frame whose source is the SVG itself (its zoom and
//! search script runs; nothing is fetched).

use maud::{html, Markup, PreEscaped, DOCTYPE};

use crate::error::Error;
use crate::memory::{CodeRow, DataRow, Memory};
use crate::numa::Numa;
use crate::profile::{Entry, Folded, Profile};

pub(crate) const CSS: &str = r#"
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em 2em; color: #1d1d1f; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.5em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { padding: 3px 10px; text-align: right; border-bottom: 1px solid #eee; }
th { background: #f5f5f7; } td.name, th.name { text-align: left; }
iframe { width: 100%; border: 1px solid #ddd; }
"#;

/// The styles of the annotation's sections (`annotate::sections`): the run report's and
/// this page's.
pub const ANNOTATE_CSS: &str = r#"
details.annotate { margin: .4em 0; } details.annotate summary { cursor: pointer; }
table.source code, table.asm code { white-space: pre; font-size: 12px; }
tr.inlined td.name { padding-left: 2em; color: #444; }
tr.gone td { color: #777; font-style: italic; }
td.up { color: #b00020; } td.down { color: #107c10; } td.noise { color: #999; }
p.note { color: #555; }
"#;

/// An SVG document as a `data:` URL.
pub fn svg_data_url(svg: &str) -> String {
    use base64::Engine;
    format!(
        "data:image/svg+xml;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(svg)
    )
}

/// The height an SVG document asks for, in pixels (its root element's `height`).
fn svg_height(svg: &str) -> Option<u32> {
    let root = &svg[svg.find("<svg")?..];
    let root = &root[..root.find('>')?];
    let at = root.find(" height=\"")? + " height=\"".len();
    let value = &root[at..];
    let value = &value[..value.find('"')?];
    value
        .trim_end_matches("px")
        .parse::<f64>()
        .ok()
        .map(|h| h.ceil() as u32)
}

/// A flamegraph in a frame of its own height (a tall flamegraph is drawn from the bottom:
/// a shorter frame would show its empty top), its source the SVG itself, so that its zoom
/// and search script runs.
pub fn svg_frame(title: &str, svg: &str) -> Markup {
    let height = svg_height(svg).unwrap_or(620).max(120) + 4;
    html! {
        iframe title=(title) style=(format!("height: {height}px")) src=(svg_data_url(svg)) {}
    }
}

/// A frame whose source is an SVG file at `src` (a URL relative to the page), sized to
/// the height `svg` (the file's text) asks for, loaded only when scrolled near: a page
/// of many flamegraphs stays light.
pub fn svg_file_frame(title: &str, svg: &str, src: &str) -> Markup {
    let height = svg_height(svg).unwrap_or(620).max(120) + 4;
    html! {
        iframe title=(title) style=(format!("height: {height}px")) loading="lazy" src=(src) {}
    }
}

fn view(title: &str, entries: &[Entry], n: usize) -> Markup {
    html! {
        h2 { (title) }
        table {
            thead { tr { th { "self" } th { "total" } th.name { "name" } th.name { "module" } } }
            tbody {
                @for e in entries.iter().take(n) {
                    tr {
                        td { (format!("{:.2}%", e.self_pct)) }
                        td { (format!("{:.2}%", e.total_pct)) }
                        td.name { (e.name) }
                        td.name { (e.module.as_deref().unwrap_or("")) }
                    }
                }
            }
        }
    }
}

/// The page of profile `p` with its folded stacks' flamegraph, and `inside` (the hot
/// functions' source and instructions, `annotate::sections`) after its flat views.
pub fn page(p: &Profile, folded: &Folded, inside: Option<Markup>) -> Result<String, Error> {
    let svg = crate::flame::svg(p, folded)?;
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "sparkles: " (p.case) }
                style { (PreEscaped(CSS)) (PreEscaped(ANNOTATE_CSS)) }
            }
            body {
                h1 { (p.case) }
                p {
                    (p.samples) " samples of " (p.event) "; " (p.lost_records) " records and "
                    (p.lost_samples) " samples lost; throttled " (p.throttled.count) " times ("
                    (format!("{:.3}", p.throttled.seconds)) " s); unwinding " (p.unwinding.mode)
                    ", " (format!("{:.1}", p.unwinding.truncated_pct)) "% truncated"
                }
                @if !p.notes.is_empty() {
                    ul { @for n in &p.notes { li { (n) } } }
                }
                (svg_frame(&format!("flamegraph of {}", p.case), &svg))
                (view("Functions (inlined frames their own)", &p.functions, 25))
                (view("Symbols (as perf report --no-children)", &p.symbols, 25))
                @if let Some(inside) = inside { (inside) }
                (memory_sections(p.memory.as_ref(), p.numa.as_ref(), 15))
            }
        }
    };
    Ok(markup.into_string())
}

/// A horizontal bar `share` (0–1) of the cell wide, in `colour`.
fn bar(share: f64, colour: &str) -> Markup {
    let width = (share.clamp(0.0, 1.0) * 100.0).max(0.3);
    html! {
        div style=(format!("height: .55em; width: {width:.1}%; background: {colour}; margin: 1px 0")) {}
    }
}

/// The memory sections of a profile whose samples carry a data source (which level served
/// the sampled accesses: each level's share of the samples and of their weight as bars;
/// the heaviest code and data), and its NUMA placement (samples by CPU node and memory
/// node as a shaded grid, local on the diagonal; the code and data behind the remote
/// accesses). `rows` code and data rows each. Nothing where the capture has neither.
pub fn memory_sections(memory: Option<&Memory>, numa: Option<&Numa>, rows: usize) -> Markup {
    html! {
        @if let Some(m) = memory {
            h3 { "Memory levels" }
            p { (m.samples) " samples carry a data source; weight: " (m.weight)
                "; remote " (m.remote) ", HITM " (m.hitm) ", locked " (m.locked) "." }
            table.levels {
                thead { tr {
                    th.name { "level" } th { "samples" } th { "share" } th { "weight share" }
                    th { "mean weight" } th { "p90" }
                    th.name style="width: 22em" { "share of samples (blue), of weight (orange)" }
                } }
                tbody { @for l in &m.levels { tr {
                    td.name { (l.level) } td { (l.samples) }
                    td { (format!("{:.1}%", l.share * 100.0)) }
                    td { (format!("{:.1}%", l.weight_share * 100.0)) }
                    td { (format!("{:.1}", l.weight_mean)) } td { (l.weight_p90) }
                    td.name { (bar(l.share, "#3367d6")) (bar(l.weight_share, "#e6781e")) }
                } } }
            }
            (code_and_data(&m.code, &m.data_objects, rows))
        }
        @if let Some(n) = numa {
            h3 { "NUMA placement" }
            p { (n.samples) " samples placed (" (n.source) "); "
                (format!("{:.1}%", n.local_share * 100.0)) " on the CPU's own node"
                @for (why, count) in &n.unplaced { "; " (count) " unplaced: " (why) } "." }
            (numa_grid(n))
            @if !n.remote_code.is_empty() || !n.remote_data.is_empty() {
                p { "Behind the remote accesses:" }
                (code_and_data(&n.remote_code, &n.remote_data, rows))
            }
        }
    }
}

fn code_and_data(code: &[CodeRow], data: &[DataRow], rows: usize) -> Markup {
    html! {
        @if !code.is_empty() {
            table { thead { tr { th { "samples" } th { "weight" } th.name { "code" } th.name { "where" } } }
                tbody { @for c in code.iter().take(rows) { tr {
                    td { (c.samples) } td { (c.weight_total) } td.name { (c.function) }
                    td.name { (c.file.as_deref().unwrap_or("")) @if let Some(l) = c.line { ":" (l) } }
                } } } }
        }
        @if !data.is_empty() {
            table { thead { tr { th { "samples" } th { "weight" } th.name { "data" } th.name { "kind" } } }
                tbody { @for d in data.iter().take(rows) { tr {
                    td { (d.samples) } td { (d.weight_total) } td.name { (d.name) } td.name { (d.kind) }
                } } } }
        }
    }
}

/// Samples by (CPU node, memory node): darker is more; local accesses on the diagonal.
fn numa_grid(n: &Numa) -> Markup {
    let nodes: std::collections::BTreeSet<u32> = n
        .matrix
        .iter()
        .flat_map(|c| [c.cpu_node, c.mem_node])
        .chain(n.nodes.iter().map(|r| r.node))
        .collect();
    let most = n.matrix.iter().map(|c| c.samples).max().unwrap_or(1).max(1) as f64;
    let cell = |cpu: u32, mem: u32| {
        n.matrix
            .iter()
            .find(|c| c.cpu_node == cpu && c.mem_node == mem)
            .map_or(0, |c| c.samples)
    };
    html! {
        table.numa {
            caption { "samples by the node of the CPU (rows) and of the memory (columns)" }
            thead { tr { th { "CPU ↓ memory →" } @for m in &nodes { th { "node " (m) } } } }
            tbody { @for c in &nodes { tr {
                th { "node " (c) }
                @for m in &nodes {
                    @let samples = cell(*c, *m);
                    @let alpha = if samples == 0 { 0.0 } else { 0.12 + 0.6 * samples as f64 / most };
                    td style=(format!("min-width: 5em; text-align: center; background: rgba(0, 90, 200, {alpha:.2}){}",
                        if c == m { "; font-weight: 600" } else { "" })) { (samples) }
                }
            } } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flamegraph_frame_is_as_tall_as_its_svg() {
        let tall = r#"<?xml version="1.0"?><svg version="1.1" width="1200" height="3518" xmlns="http://www.w3.org/2000/svg"><rect height="17"/></svg>"#;
        let frame = svg_frame("f", tall).into_string();
        assert!(frame.contains(r#"style="height: 3522px""#), "{frame}");
        // An SVG that says no height gets the old frame.
        let frame = svg_frame("f", "<svg><g/></svg>").into_string();
        assert!(frame.contains(r#"style="height: 624px""#), "{frame}");
    }
}
