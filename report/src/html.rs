//! One capture's profile as a self-contained HTML page (`sparkles report FILE --format
//! html`): what was sampled and how well it unwound, the notes, the hottest functions and
//! symbols, and the flamegraph in a frame whose source is the SVG itself (its zoom and
//! search script runs; nothing is fetched).

use maud::{html, Markup, PreEscaped, DOCTYPE};

use crate::error::Error;
use crate::profile::{Entry, Folded, Profile};

const CSS: &str = r#"
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em 2em; color: #1d1d1f; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.5em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { padding: 3px 10px; text-align: right; border-bottom: 1px solid #eee; }
th { background: #f5f5f7; } td.name, th.name { text-align: left; }
iframe { width: 100%; height: 620px; border: 1px solid #ddd; }
"#;

/// An SVG document as a `data:` URL.
pub fn svg_data_url(svg: &str) -> String {
    use base64::Engine;
    format!(
        "data:image/svg+xml;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(svg)
    )
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

/// The page of profile `p` with its folded stacks' flamegraph.
pub fn page(p: &Profile, folded: &Folded) -> Result<String, Error> {
    let svg = crate::flame::svg(p, folded)?;
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "sparkles: " (p.case) }
                style { (PreEscaped(CSS)) }
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
                iframe title=(format!("flamegraph of {}", p.case)) src=(svg_data_url(&svg)) {}
                (view("Functions (inlined frames their own)", &p.functions, 25))
                (view("Symbols (as perf report --no-children)", &p.symbols, 25))
            }
        }
    };
    Ok(markup.into_string())
}
