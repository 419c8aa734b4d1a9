//! The run's results in the formats CI services read (`--bench-format`): Bencher Metric
//! Format JSON, github-action-benchmark's `customSmallerIsBetter` JSON, and libtest's
//! bench lines. docs/guide.md shows the CI recipes.

use serde_json::{json, Map, Value};

use crate::row::BenchRow;
use crate::units::format_ns;
use clap::ValueEnum;

/// A results format CI services read, for `--bench-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchFormat {
    /// Bencher Metric Format JSON (`bencher run --adapter json`): per case its
    /// `latency` (ns, the interval as `lower_value`/`upper_value`), `throughput` where
    /// declared, and each metric as its own measure.
    Bmf,
    /// github-action-benchmark's `customSmallerIsBetter` JSON array.
    #[value(name = "github-action")]
    GithubAction,
    /// libtest's bench lines (`test NAME ... bench: N ns/iter (+/- M)`), which
    /// github-action-benchmark's `cargo` tool and others parse.
    Libtest,
}

/// The rows as `format` writes them.
pub fn render(format: BenchFormat, rows: &[BenchRow]) -> String {
    match format {
        BenchFormat::Bmf => pretty(&bmf(rows)),
        BenchFormat::GithubAction => pretty(&github_action(rows)),
        BenchFormat::Libtest => libtest(rows),
    }
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

/// A metric id as a Bencher measure slug: lowercase letters, digits and hyphens
/// (`rusage.max_rss_bytes` → `rusage-max-rss-bytes`).
pub fn measure_slug(id: &str) -> String {
    let mut slug = String::with_capacity(id.len());
    for c in id.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    slug.trim_matches('-').to_string()
}

/// The Bencher testbed this machine is: its CPU model, its cores and its host name, as a
/// slug (`amd-epyc-7b13-2c-ci-runner-4`), the same every run on this machine, so that
/// Bencher's testbeds and thresholds keep machines apart (`bencher run --testbed NAME`).
pub fn testbed(environment: &crate::environment::Environment, cores: usize) -> String {
    measure_slug(&format!(
        "{}-{cores}c-{}",
        environment.cpu_model.as_deref().unwrap_or("unknown-cpu"),
        environment.hostname.as_deref().unwrap_or("unknown-host")
    ))
}

/// Bencher Metric Format: `{CASE: {"latency": {"value", "lower_value", "upper_value"},
/// "throughput": {"value"}, METRIC: {"value"}}}`, latency in ns per iteration with the
/// median's 95% interval, throughput in elements or bytes a second where the case
/// declared it, each other metric the row has as a measure of its own (its id as a slug).
/// A case that failed has no entry.
pub fn bmf(rows: &[BenchRow]) -> Value {
    let mut out = Map::new();
    for r in rows {
        let Some(t) = &r.timing else { continue };
        let mut measures = Map::new();
        let mut latency = Map::new();
        latency.insert("value".into(), json!(t.summary.median));
        if let Some((lo, hi)) = crate::stats::median_ci(&t.samples) {
            latency.insert("lower_value".into(), json!(lo));
            latency.insert("upper_value".into(), json!(hi));
        }
        measures.insert("latency".into(), Value::Object(latency));
        for (id, value) in &r.metrics {
            let Some(v) = value.filter(|v| v.is_finite()) else {
                continue;
            };
            let name = match id.as_str() {
                crate::throughput::BYTES_PER_SEC | crate::throughput::ELEMENTS_PER_SEC => {
                    "throughput".to_string()
                }
                _ => measure_slug(id),
            };
            measures
                .entry(name)
                .or_insert_with(|| json!({ "value": v }));
        }
        out.insert(r.case.clone(), Value::Object(measures));
    }
    Value::Object(out)
}

/// github-action-benchmark's `customSmallerIsBetter`: `[{"name", "unit": "ns", "value",
/// "range", "extra"}]`, the median per iteration, `range` the half-width of its 95%
/// interval (`± N`), `extra` the interval and samples in words. A case that failed has no
/// entry.
pub fn github_action(rows: &[BenchRow]) -> Value {
    let entries: Vec<Value> = rows
        .iter()
        .filter_map(|r| {
            let t = r.timing.as_ref()?;
            let ci = crate::stats::median_ci(&t.samples);
            let mut entry = json!({
                "name": r.case,
                "unit": "ns",
                "value": t.summary.median,
            });
            let extra = match ci {
                Some((lo, hi)) => {
                    entry["range"] = json!(format!("± {}", round_sig((hi - lo) / 2.0)));
                    format!(
                        "median {} (95% interval {} to {}), {} samples of {} iterations",
                        format_ns(t.summary.median),
                        format_ns(lo),
                        format_ns(hi),
                        t.samples.len(),
                        r.iterations
                    )
                }
                None => format!(
                    "median {}, {} samples of {} iterations (too few for an interval)",
                    format_ns(t.summary.median),
                    t.samples.len(),
                    r.iterations
                ),
            };
            entry["extra"] = json!(extra);
            Some(entry)
        })
        .collect();
    Value::Array(entries)
}

/// Three significant digits, as a number's text.
fn round_sig(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".to_string();
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

/// libtest's bench lines, as `cargo bench` prints them for `#[bench]` (library/test's
/// `fmt_bench_samples`): `test NAME ... bench: N ns/iter (+/- M)`, the names padded to
/// the longest, N the median and M the range of the samples after libtest's 5%
/// winsorizing (`stats::winsorize(samples, 5.0)`, then max − min: the 95th percentile
/// less the 5th, both interpolated as libtest's `percentile_of_sorted` does), in ns
/// with two decimals and thousands separators; `test NAME ... FAILED` for a case that
/// failed; then libtest's result line.
pub fn libtest(rows: &[BenchRow]) -> String {
    use std::fmt::Write;
    let width = rows.iter().map(|r| r.case.len()).max().unwrap_or(0);
    let mut out = format!("\nrunning {} tests\n", rows.len());
    let mut failed = 0;
    for r in rows {
        match &r.timing {
            Some(t) => {
                let _ = writeln!(
                    out,
                    "test {:<width$} ... bench: {:>14} ns/iter (+/- {})",
                    r.case,
                    thousands(t.summary.median),
                    thousands(winsorized_range(&t.samples))
                );
            }
            None => {
                failed += 1;
                let _ = writeln!(out, "test {:<width$} ... FAILED", r.case);
            }
        }
    }
    let _ = writeln!(
        out,
        "\ntest result: {}. 0 passed; {failed} failed; 0 ignored; {} measured; 0 filtered out\n",
        if failed == 0 { "ok" } else { "FAILED" },
        rows.len() - failed
    );
    out
}

/// max − min of `samples` after libtest's 5% winsorizing: each sample clamped to the
/// 5th and 95th percentiles (linear between the order statistics, libtest's
/// `percentile_of_sorted`), so the range is the 95th less the 5th.
fn winsorized_range(samples: &[f64]) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    crate::stats::quantile_sorted(&sorted, 0.95) - crate::stats::quantile_sorted(&sorted, 0.05)
}

/// Two decimals with `,` every three digits of the whole part, as libtest's
/// `fmt_thousands_sep` prints them (`11,430.52`; without its carry slip, where 999.999
/// comes out `1000.00`).
fn thousands(v: f64) -> String {
    let fixed = format!("{:.2}", v.max(0.0));
    let (whole, frac) = fixed.split_once('.').unwrap_or((&fixed, "00"));
    let mut out = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{out}.{frac}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use super::*;

    #[test]
    fn libtests_plus_minus_is_its_range_after_winsorizing_five_percent() {
        // libtest clamps to the 5th and 95th percentiles (h = 19 * 0.05 = 0.95: 1.95;
        // h = 18.05: 19.05), then takes max - min: 17.1, where the raw range is 19.
        let x: Vec<f64> = (1..=20).map(f64::from).collect();
        assert!((winsorized_range(&x) - 17.1).abs() < 1e-9);
        // One slow sample moves it by a twentieth of its excess (19 + 0.05 * 981).
        let mut y = x.clone();
        y[19] = 1000.0;
        assert!((winsorized_range(&y) - (68.05 - 1.95)).abs() < 1e-9);
        assert_eq!(winsorized_range(&[]), 0.0);
        assert_eq!(winsorized_range(&[5.0]), 0.0);
    }

    #[test]
    fn a_testbed_is_the_machine_as_a_slug() {
        let mut e = crate::environment::Environment::current("s");
        e.cpu_model = Some("AMD EPYC 7B13 64-Core Processor".into());
        e.hostname = Some("CI_Runner.4".into());
        assert_eq!(
            super::testbed(&e, 2),
            "amd-epyc-7b13-64-core-processor-2c-ci-runner-4"
        );
        e.cpu_model = None;
        assert_eq!(super::testbed(&e, 16), "unknown-cpu-16c-ci-runner-4");
    }

    #[test]
    fn slugs_and_separators() {
        assert_eq!(measure_slug("rusage.max_rss_bytes"), "rusage-max-rss-bytes");
        assert_eq!(measure_slug("syscalls:total"), "syscalls-total");
        assert_eq!(
            measure_slug("perf.L1-dcache-load-misses"),
            "perf-l1-dcache-load-misses"
        );
        assert_eq!(thousands(1234567.404), "1,234,567.40");
        assert_eq!(thousands(11430.52), "11,430.52");
        assert_eq!(thousands(999.999), "1,000.00");
        assert_eq!(thousands(0.25), "0.25");
        assert_eq!(round_sig(12.345), "12.3");
        assert_eq!(round_sig(0.012345), "0.0123");
        assert_eq!(round_sig(12345.0), "12345");
    }
}
