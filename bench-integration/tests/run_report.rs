//! The run report in a real browser: a run saved as a baseline, then a run against it,
//! leaves `target/sparkles/report/index.html`; Chromium, headless, renders it from
//! `file://` with nothing fetched; the rendered page names every case and its verdict, the
//! console shows no error, and a screenshot is left under `target/` for a person to look
//! at. Where Chromium is absent the page is still checked as text, and the browser part
//! says it was skipped.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/browser.rs"]
mod browser;
#[path = "../../testdata/support/skip.rs"]
mod skip;
mod support;

use std::hint::black_box;
use std::process::Command;

use sparkles_bench::Suite;

use support::{run, SERIAL};

fn suite() -> Suite {
    let mut s = Suite::new("page");
    s.case("sum/small", |b| {
        b.iter(|| (0..black_box(2_000u64)).sum::<u64>())
    });
    s.case("sum/large", |b| {
        b.iter(|| (0..black_box(20_000u64)).sum::<u64>())
    });
    s
}

/// `browser` run with at most a minute to finish (a browser that hangs fails the test
/// instead of the run).
fn browser_command(browser: &str) -> Command {
    let mut c = Command::new("timeout");
    c.args(["60", browser]);
    c
}

#[test]
fn one_page_tells_the_run_and_renders_in_a_browser_with_nothing_fetched() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let flags = |extra: [&'static str; 2]| {
        let mut f = vec![
            "--bench",
            "--bench-min-time",
            "1ms",
            "--samples",
            "6",
            "--out-dir",
            out,
        ];
        f.extend(extra);
        f
    };
    assert!(run(suite(), &flags(["--save-baseline", "b"])).all_ok());
    let second = run(suite(), &flags(["--baseline", "b"]));
    assert!(second.all_ok());
    let page_path = dir.path().join("report/index.html");
    let page = std::fs::read_to_string(&page_path).unwrap();
    // Self-contained: nothing is loaded from anywhere.
    for attr in [
        "src=\"http",
        "href=\"http",
        "src='http",
        "href='http",
        "<link",
    ] {
        assert!(!page.contains(attr), "the page fetches something: {attr}");
    }
    for row in &second.rows {
        assert!(page.contains(&row.case), "{} is not on the page", row.case);
        let verdict = row.comparison.as_ref().unwrap().verdict.label();
        assert!(page.contains(verdict), "{verdict} is not on the page");
    }
    assert!(page.contains("<svg"), "no charts");
    // No page left behind by --no-report.
    let quiet = tempfile::tempdir().unwrap();
    let q = quiet.path().to_str().unwrap();
    assert!(run(
        suite(),
        &[
            "--bench",
            "--bench-min-time",
            "1ms",
            "--samples",
            "3",
            "--out-dir",
            q,
            "--no-report"
        ]
    )
    .all_ok());
    assert!(!quiet.path().join("report").exists());

    let Some(browser) = browser::chromium() else {
        skip::skip(
            "chromium",
            "no chromium here: the page was checked as text only",
        );
        return;
    };
    let url = format!("file://{}", page_path.display());
    let headless = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--enable-logging=stderr",
        "--v=0",
    ];
    let dom = browser_command(browser)
        .args(headless)
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let rendered = String::from_utf8_lossy(&dom.stdout);
    for row in &second.rows {
        assert!(rendered.contains(&row.case), "{} is not rendered", row.case);
        let verdict = row.comparison.as_ref().unwrap().verdict.label();
        assert!(rendered.contains(verdict), "{verdict} is not rendered");
    }
    // The console: Chromium logs page errors as `CONSOLE` lines (and uncaught ones as
    // `Uncaught`); none may come from the page.
    let log = String::from_utf8_lossy(&dom.stderr);
    let page_errors: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(page_errors.is_empty(), "{page_errors:#?}");
    // A screenshot for a person to look at.
    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/sparkles");
    std::fs::create_dir_all(&target).unwrap();
    let shot = target.join("run-report.png");
    let status = browser_command(browser)
        .args(headless)
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1400,1800")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert!(std::fs::metadata(&shot).unwrap().len() > 10_000);
    eprintln!("screenshot: {}", shot.display());
}

/// The page fits a 1400 px window: a profiled comparison with a long explanation, a long
/// top function (a Rust trait method's path) and hot lines in std's long source paths
/// lays out in Chromium with no horizontal scrollbar, the summary included.
#[test]
fn the_summary_fits_a_1400_px_window() {
    use sparkles_bench::profile::{HotFunction, ProfileSummary};
    use sparkles_bench::record::BenchRow;
    let Some(browser) = browser::chromium() else {
        skip::skip(
            "chromium",
            "no chromium here: the layout cannot be measured",
        );
        return;
    };
    let samples = |centre: f64| {
        (0..12)
            .map(|i| centre + f64::from(i % 4))
            .collect::<Vec<_>>()
    };
    let row = |case: &str, centre: f64| -> BenchRow {
        let line = format!(
            r#"{{"schema":"sparkles.bench/1","case":"{case}","slug":"{}","ok":true,"error":null,"iterations":100,"timing":null,"metrics":{{}}}}"#,
            sparkles_bench::slug(case)
        );
        let mut r: BenchRow = serde_json::from_str(&line).unwrap();
        r.timing = sparkles_bench::record::Timing::from_samples(samples(centre));
        r.metrics
            .insert("throughput.bytes_per_sec".into(), Some(619193052.7888));
        r.profile = Some(ProfileSummary {
            event: "cpu-clock".into(),
            samples: 4000,
            top: vec![HotFunction {
                name: "<sparkles_bench::bencher::Plain<F> as sparkles_bench::bencher::Routine>::run::{{closure}}<demo::regex::find_all_matches_in_a_long_haystack>".into(),
                self_pct: 13.4,
                total_pct: 100.0,
                inlined_into: None,
            }],
            ..Default::default()
        });
        r
    };
    let base: Vec<BenchRow> = [
        "regex/find_all/haystack_of_a_megabyte",
        "json/parse/twitter_with_every_field",
    ]
    .iter()
    .map(|c| row(c, 1000.0))
    .collect();
    let mut rows: Vec<BenchRow> = base.iter().map(|b| row(&b.case, 1300.0)).collect();
    for (r, b) in rows.iter_mut().zip(&base) {
        let change = sparkles_bench::stats::compare(
            &b.timing.as_ref().unwrap().samples,
            &r.timing.as_ref().unwrap().samples,
        )
        .unwrap();
        sparkles_bench::baseline::set_comparison(
            r,
            b,
            change.into(),
            &|_| {
                Some(
                    "ENOENT: no PMU for this event: running under a hypervisor that does not expose it"
                        .into(),
                )
            },
            sparkles_bench::baseline::NOT_PROFILED,
        );
    }
    let dir = tempfile::tempdir().unwrap();
    // Each case's hottest lines, with the long paths std's sources have.
    for r in &rows {
        let case = dir.path().join(&r.slug);
        std::fs::create_dir_all(&case).unwrap();
        let line = serde_json::json!({
            "self_pct": 41.5,
            "file": "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/slice/sort/unstable/quicksort.rs/with/a/longer/path/than/any/window/has/room/for/in/one/line/of/text.rs",
            "line": 1234,
            "function": "<core::iter::adapters::map::Map<I,F> as core::iter::traits::iterator::Iterator>::fold<alloc::vec::Vec<u8>>",
        });
        std::fs::write(
            case.join("profile.json"),
            serde_json::json!({"lines": [line]}).to_string(),
        )
        .unwrap();
    }
    let page = sparkles_bench::run_report::RunReport {
        suite: "wide",
        rows: &rows,
        baseline: Some(&base),
        baseline_name: Some("main"),
        machine_warning: None,
        profile_dir: dir.path(),
        kept: &[],
        trends: &[],
        profiles_read: true,
        annotates: true,
    }
    .page()
    .into_string();
    // The page measures itself once laid out, into an attribute the DOM dump shows.
    let probe = r#"<script>window.addEventListener('load', function () {
  var t = document.getElementById('summary').getBoundingClientRect();
  document.body.setAttribute('data-layout', [Math.ceil(t.right), window.innerWidth, document.documentElement.scrollWidth].join(','));
});</script></body>"#;
    let path = dir.path().join("index.html");
    std::fs::write(&path, page.replacen("</body>", probe, 1)).unwrap();
    let out = browser_command(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--window-size=1400,900",
            "--dump-dom",
        ])
        .arg(format!("file://{}", path.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let layout = dom
        .split("data-layout=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| {
            panic!(
                "no layout measured: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let [right, width, scroll]: [u32; 3] = layout
        .split(',')
        .map(|n| n.parse().unwrap())
        .collect::<Vec<_>>()
        .try_into()
        .unwrap();
    assert!(width > 1000 && width <= 1400, "{layout}");
    assert!(
        right <= width && scroll <= width,
        "the summary is {right} px wide in a {width} px window (page {scroll} px): {layout}"
    );
}
