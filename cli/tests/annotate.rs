//! `sparkles annotate` as a user runs it: on a capture `perf record` made of a C program
//! with a known hot loop (testdata/report/hotspots.c, built here with gcc -O2 -g), its
//! per-instruction shares against `perf annotate --stdio` on the same capture, and the hot
//! line the loop's. Skipped, with the reason, where gcc or perf is missing or sampling is
//! refused.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/commands.rs"]
mod commands;
#[path = "../../testdata/support/skip.rs"]
mod skip;
mod support;

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::Value;
use support::sparkles;

/// `perf annotate --stdio`'s instruction lines: address to percent.
fn perf_shares(text: &str) -> HashMap<u64, f64> {
    text.lines()
        .filter_map(|l| {
            let (pct, rest) = l.split_once(':')?;
            let pct: f64 = pct.trim().parse().ok()?;
            let (addr, _) = rest.trim().split_once(':')?;
            Some((u64::from_str_radix(addr.trim(), 16).ok()?, pct))
        })
        .collect()
}

#[test]
fn annotate_agrees_with_perf_annotate_on_the_hot_loop() {
    let tmp = tempfile::tempdir().unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/report/hotspots.c");
    let source = std::fs::read_to_string(&src).unwrap();
    let Some(_) = commands::run_in(
        tmp.path(),
        &["gcc", "-O2", "-g", "-o", "hot", src.to_str().unwrap()],
    ) else {
        return;
    };
    let Some(data) = commands::perf_record(tmp.path(), "fp", "hot.data", "./hot", 0.5) else {
        return;
    };
    let data = data.to_str().unwrap();
    let out = sparkles(&["annotate", data, "--symbol", "eight", "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(a["schema"], "sparkles.annotate/1");
    let f = &a["functions"][0];
    assert_eq!(f["name"], "eight");
    assert!(f["samples"].as_u64().unwrap() > 50, "{f}");
    // The hot line is the loop's, inlined from `work` into `eight`'s own line: both found
    // in the source by their text, not by number.
    let line_of =
        |needle: &str| source.lines().position(|l| l.contains(needle)).unwrap() as u64 + 1;
    let loop_line = line_of("x = x * 6364136223846793005ul + i");
    let eight_line = line_of("static unsigned long eight(");
    assert_eq!(f["lines"][0]["line"], eight_line, "{}", f["lines"]);
    assert_eq!(
        f["lines"][0]["inlined"][0]["line"], loop_line,
        "{}",
        f["lines"]
    );
    let instructions = f["instructions"].as_array().unwrap();
    let hottest = instructions
        .iter()
        .max_by(|a, b| {
            a["share"]
                .as_f64()
                .unwrap()
                .total_cmp(&b["share"].as_f64().unwrap())
        })
        .unwrap();
    assert_eq!(hottest["line"], loop_line, "{hottest}");
    let Some(theirs) = commands::run_in(
        tmp.path(),
        &["perf", "annotate", "--stdio", "-i", data, "-s", "eight"],
    ) else {
        return;
    };
    let perf = perf_shares(&theirs);
    assert!(!perf.is_empty(), "{theirs}");
    // Every instruction either tool lists: the same share to within 0.1 point (perf prints
    // two decimals of the same counts).
    let ours: HashMap<u64, f64> = instructions
        .iter()
        .map(|i| {
            let addr = i["address"].as_str().unwrap().trim_start_matches("0x");
            (
                u64::from_str_radix(addr, 16).unwrap(),
                i["share"].as_f64().unwrap(),
            )
        })
        .collect();
    let mut worst = (0u64, 0.0f64);
    for addr in ours.keys().chain(perf.keys()) {
        let (a, b) = (
            ours.get(addr).copied().unwrap_or(0.0),
            perf.get(addr).copied().unwrap_or(0.0),
        );
        if (a - b).abs() > worst.1 {
            worst = (*addr, (a - b).abs());
        }
        assert!(
            (a - b).abs() <= 0.1,
            "{addr:#x}: sparkles {a:.2}% against perf annotate {b:.2}%\n{theirs}"
        );
    }
    eprintln!(
        "annotate: {} instructions, the largest difference from perf {:.3} point at {:#x}",
        ours.len(),
        worst.1,
        worst.0
    );
    // The text view says the event and whether it was precise.
    let text = sparkles(&["annotate", data, "--top", "2"]);
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("precise"), "{text}");
    assert!(text.contains("eight") && text.contains("four"), "{text}");

    // The whole function's source: `eight`'s own file from its first line to its last,
    // every line of it with the text of the file, the hot one with its samples.
    let src_view = &f["source"];
    assert_eq!(src_view["file"].as_str(), f["lines"][0]["file"].as_str());
    let listed = src_view["lines"].as_array().unwrap();
    assert!(listed.iter().any(|l| l["line"] == eight_line
        && l["samples"] == f["lines"][0]["samples"]
        && l["text"]
            .as_str()
            .unwrap()
            .contains("static unsigned long eight(")));
    for l in listed {
        let n = l["line"].as_u64().unwrap() as usize;
        assert_eq!(
            l["text"].as_str().unwrap(),
            source.lines().nth(n - 1).unwrap().trim_end()
        );
    }

    // The page: the lines shaded, the whole function, the instructions; nothing fetched.
    let page = tmp.path().join("eight.html");
    let out = sparkles(&[
        "annotate",
        data,
        "--symbol",
        "eight",
        "--format",
        "html",
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    for needle in [
        "Inside the hot functions",
        "whole function: hotspots.c",
        "x = x * 6364136223846793005ul + i",
        "instructions</summary>",
        "background: rgba(220, 80, 40,",
    ] {
        assert!(html.contains(needle), "no {needle:?} on the page");
    }
    for fetch in ["src=\"http", "href=\"http", "<link"] {
        assert!(!html.contains(fetch), "the page fetches something: {fetch}");
    }

    // Against a baseline: another capture of the same program, or this one's annotation
    // as JSON; each line's share there is what that annotation gives it, and its change
    // the difference.
    let Some(again) = commands::perf_record(tmp.path(), "fp", "hot2.data", "./hot", 0.5) else {
        return;
    };
    let base_json = tmp.path().join("base.json");
    std::fs::write(&base_json, out_json(data)).unwrap();
    for base in [data, base_json.to_str().unwrap()] {
        let out = sparkles(&[
            "annotate",
            again.to_str().unwrap(),
            "--symbol",
            "eight",
            "--baseline",
            base,
            "--format",
            "json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let now: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            now["baseline"]["samples"], a["samples"],
            "{}",
            now["baseline"]
        );
        let g = &now["functions"][0];
        assert_eq!(g["base"]["samples"], f["samples"]);
        let then: HashMap<(String, u64), f64> = f["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    (
                        l["file"].as_str().unwrap().to_string(),
                        l["line"].as_u64().unwrap(),
                    ),
                    l["share"].as_f64().unwrap(),
                )
            })
            .collect();
        for l in g["lines"].as_array().unwrap() {
            let key = (
                l["file"].as_str().unwrap().to_string(),
                l["line"].as_u64().unwrap(),
            );
            let was = then.get(&key).copied().unwrap_or(0.0);
            assert!(
                (l["base_share"].as_f64().unwrap() - was).abs() < 1e-9,
                "{l}"
            );
            let change = l["change"].as_f64().unwrap();
            assert!(
                (change - (l["share"].as_f64().unwrap() - was)).abs() < 1e-9,
                "{l}"
            );
            assert!(l["noise"].as_f64().unwrap() > 0.0, "{l}");
        }
    }
    // Neither a capture nor an annotation: said, naming the flag and the file.
    let out = sparkles(&["annotate", data, "--baseline", src.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--baseline") && err.contains("hotspots.c"),
        "{err}"
    );

    // `sparkles report --format html` has the same views of its hottest functions.
    let out = sparkles(&["report", data, "--format", "html"]);
    assert!(out.status.success());
    let html = String::from_utf8_lossy(&out.stdout);
    assert!(
        html.contains("Inside the hot functions") && html.contains("whole function: hotspots.c")
    );
}

/// `sparkles annotate FILE --symbol eight --format json`'s output.
fn out_json(file: &str) -> Vec<u8> {
    let out = sparkles(&["annotate", file, "--symbol", "eight", "--format", "json"]);
    assert!(out.status.success());
    out.stdout
}

#[test]
fn annotate_says_what_is_wrong_with_its_arguments() {
    let out = sparkles(&["annotate", "/nonexistent/perf.data"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/perf.data"));
    let out = sparkles(&["annotate", "x.data", "--source-root", "/nonexistent/dir"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--source-root"));
}
