//! Report generation end to end (decode, unwind, symbolize, aggregate, SVG) from a
//! capture of at least 100,000 samples with DWARF stacks, against `perf report --stdio`
//! and against `perf script | inferno-collapse-perf | inferno-flamegraph` on the same
//! file, medians in the same run, reported as ratios.
//!
//! - `report/sparkles_svg`: `sparkles report FILE --format svg`, output discarded.
//! - `report/perf_report`: `perf report -i FILE --stdio`, output discarded.
//! - `report/perf_inferno`: `perf script -i FILE | inferno-collapse-perf |
//!   inferno-flamegraph`, where `cargo install inferno` put the two tools.
//! - `report/sparkles_annotate`: `sparkles annotate FILE --top 5` (the five hottest
//!   functions' lines and instructions), against `sparkles_svg` (goal: under 2x).
//! - `report/sparkles_annotate_one` and `report/perf_annotate`: the hottest function
//!   alone, `sparkles annotate FILE --symbol NAME` against `perf annotate -i FILE --stdio -s
//!   NAME` (goal: faster).
//! - `report/read_once` and `report/read_three_times`: a case's profile, annotation and
//!   time line made in-process from one reading of the capture (the harness's
//!   `--profile`), and from three readings (as it was before; each decoded, unwound and
//!   named every sample again): the time the one reading saves.
//! - `report/sparkles_firefox` and `report/samply_import`: `sparkles report FILE --format
//!   firefox` against `samply import FILE --save-only` (the Firefox Profiler's file from a
//!   perf.data, both), where `cargo install samply` put samply (goal: 2x faster).
//! - After timing, `sparkles report FILE --format svg`'s peak resident memory (wait4's
//!   `ru_maxrss`) on the DWARF capture, and `samply import`'s where samply is installed
//!   (goal: at most 2x).
//! - `annotate1m/…`: `sparkles_svg` and the three annotate cases on a capture of
//!   1,000,000 samples (the program's frame-pointer capture, `perf record -F 20000 -g`,
//!   its samples repeated; smoke mode: 1,000).
//!
//! The capture: `testdata/unwind/callchains.c` built with `gcc -O2 -g` and recorded with
//! `perf record -F 20000 --call-graph dwarf,2048` into `target/sparkles/bench-data/`
//! (smoke mode: a short one). Needs gcc and perf; without them it says so.

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};

use clap::Parser;
use sparkles_bench::{HarnessArgs, Suite};

mod support;

fn samples_in(path: &Path) -> Result<u64, String> {
    let data = sparkles_perf_data::PerfData::open(path).map_err(|e| e.to_string())?;
    let stats = data
        .for_each_record(|_| Ok::<(), sparkles_perf_data::Error>(()))
        .map_err(|e| format!("{e:?}"))?;
    Ok(stats.samples)
}

fn main() {
    let args = HarnessArgs::parse();
    let mut suite = Suite::new("report");
    suite.default_samples(3);
    let measuring = args.bench && !args.list;
    let dir = sparkles_bench::output::out_dir(args.out_dir.as_deref()).join("bench-data");
    let inferno = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cargo/bin"))
        .filter(|b| {
            b.join("inferno-collapse-perf").is_file() && b.join("inferno-flamegraph").is_file()
        });
    // samply, where `cargo install samply` put it (or on the PATH).
    let samply = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".cargo/bin/samply"))
        .filter(|p| p.is_file())
        .or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join("samply"))
                    .find(|p| p.is_file())
            })
        });
    let mut dwarf_capture = None;
    match support::callchains_capture(&dir, "report", if measuring { 60 } else { 0 }, 20000, 2048) {
        Ok(path) => {
            dwarf_capture = Some(path.clone());
            let n = samples_in(&path).unwrap_or(0);
            eprintln!("report: {} ({n} samples)", path.display());
            if measuring && n < 100_000 {
                eprintln!("report: warning: fewer than 100,000 samples ({n})");
            }
            let file = path.to_string_lossy().into_owned();
            suite.group("report", |g| {
                let sparkles = env!("CARGO_BIN_EXE_sparkles").to_string();
                let f = file.clone();
                let svg = sparkles.clone();
                g.case("sparkles_svg", move |bench| {
                    bench.try_iter(|| support::shell(&format!("'{svg}' report '{f}' --format svg")))
                });
                let f = file.clone();
                g.case("perf_report", move |bench| {
                    bench.try_iter(|| support::shell(&format!("perf report -i '{f}' --stdio 2>/dev/null")))
                });
                annotate_cases(g, &sparkles, &file);
                reading_cases(g, &path);
                let (f, ours) = (file.clone(), sparkles.clone());
                g.case("sparkles_firefox", move |bench| {
                    bench.try_iter(|| {
                        support::shell(&format!(
                            "'{ours}' report '{f}' --format firefox -o /dev/null"
                        ))
                    })
                });
                match &samply {
                    Some(samply) => {
                        let (f, samply) = (file.clone(), samply.display().to_string());
                        g.case("samply_import", move |bench| {
                            bench.try_iter(|| {
                                support::shell(&format!(
                                    "'{samply}' import '{f}' --save-only --no-open -o /dev/null"
                                ))
                            })
                        });
                    }
                    None => eprintln!(
                        "report: samply is not installed (cargo install samply): no samply_import case"
                    ),
                }
                match &inferno {
                    Some(bin) => {
                        let f = file.clone();
                        let bin = bin.display().to_string();
                        g.case("perf_inferno", move |bench| {
                            bench.try_iter(|| {
                                support::shell(&format!(
                                    "perf script -i '{f}' 2>/dev/null | '{bin}/inferno-collapse-perf' | '{bin}/inferno-flamegraph'"
                                ))
                            })
                        });
                    }
                    None => eprintln!(
                        "report: inferno's tools are not installed (cargo install inferno): no perf_inferno case"
                    ),
                }
            });
        }
        Err(why) => eprintln!("report: no capture, nothing to measure: {why}"),
    }
    // A million samples (smoke mode: a thousand): the frame-pointer capture of the same
    // program, its samples repeated (annotate reads each sample's IP, not its stack).
    let n = if measuring { 1_000_000 } else { 1_000 };
    let big = dir.join(format!("report-annotate-{n}.perf.data"));
    match support::callchains_fp_capture(&dir, "report", 20000)
        .and_then(|fp| support::synthesized(&fp, n, &big))
    {
        Ok(()) => {
            let file = big.display().to_string();
            eprintln!("report: {file} ({n} samples)");
            suite.group("annotate1m", |g| {
                let sparkles = env!("CARGO_BIN_EXE_sparkles").to_string();
                let (f, s) = (file.clone(), sparkles.clone());
                g.case("sparkles_svg", move |bench| {
                    bench.try_iter(|| support::shell(&format!("'{s}' report '{f}' --format svg")))
                });
                annotate_cases(g, &sparkles, &file);
            });
        }
        Err(why) => eprintln!("report: no capture of {n} samples: {why}"),
    }
    let outcome = sparkles_bench::run_or_exit(suite, &args);
    // After timing: `sparkles report`'s peak resident memory on the DWARF capture (its
    // mapped file's pages counted: a reading gives back those it is done with).
    if let Some(path) = dwarf_capture.as_ref().filter(|_| measuring) {
        let sparkles = Path::new(env!("CARGO_BIN_EXE_sparkles"));
        let file = path.to_string_lossy();
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        let ours = match support::peak_memory(sparkles, &["report", &file, "--format", "svg"]) {
            Ok(kib) => kib,
            Err(e) => {
                eprintln!("report: no peak memory: {e}");
                None
            }
        };
        if let Some(kib) = ours {
            println!(
                "report/sparkles_svg: peak resident memory {:.1} MiB on the {:.0} MB capture",
                kib as f64 / 1024.0,
                size as f64 / 1e6
            );
        }
        let import = [
            "import",
            &file,
            "--save-only",
            "--no-open",
            "-o",
            "/dev/null",
        ];
        let theirs = samply
            .as_ref()
            .and_then(|s| support::peak_memory(s, &import).ok().flatten());
        if let (Some(ours), Some(theirs)) = (ours, theirs) {
            println!(
                "report/samply_import: peak resident memory {:.1} MiB: sparkles report's is {:.2}x it (goal: at most 2x)",
                theirs as f64 / 1024.0,
                ours as f64 / theirs as f64
            );
        }
    }
    if let (Some(ours), Some(theirs)) = (
        outcome.median("report/sparkles_firefox"),
        outcome.median("report/samply_import"),
    ) {
        println!(
            "report/sparkles_firefox: {:.2}x faster than report/samply_import (goal: 2x)",
            theirs / ours
        );
    }
    if let Some(ours) = outcome.median("report/sparkles_svg") {
        for peer in ["report/perf_report", "report/perf_inferno"] {
            if let Some(p) = outcome.median(peer) {
                println!("report/sparkles_svg: {:.1}x faster than {peer}", p / ours);
            }
        }
    }
    if let (Some(once), Some(apart)) = (
        outcome.median("report/read_once"),
        outcome.median("report/read_three_times"),
    ) {
        println!(
            "report/read_once: {:.2}x the time of report/read_three_times ({:.0} ms saved a capture)",
            once / apart,
            (apart - once) / 1e6
        );
    }
    for group in ["report", "annotate1m"] {
        let median = |case: &str| outcome.median(&format!("{group}/{case}"));
        if let (Some(annotate), Some(report)) =
            (median("sparkles_annotate"), median("sparkles_svg"))
        {
            println!(
                "{group}/sparkles_annotate: {:.2}x the time of {group}/sparkles_svg (goal: under 2x)",
                annotate / report
            );
        }
        if let (Some(one), Some(perf)) = (median("sparkles_annotate_one"), median("perf_annotate"))
        {
            println!(
                "{group}/sparkles_annotate_one: {:.1}x faster than {group}/perf_annotate",
                perf / one
            );
        }
    }
    std::process::exit(if outcome.all_ok() { 0 } else { 1 });
}

/// What `--profile` makes of each case's capture (its profile, the annotation of its three
/// hottest functions, its time line for `--profile-format`), in-process: in one reading
/// (`read_once`, the harness's way), and as three readings (`read_three_times`, the
/// harness's way before: each decoded the records and found the stacks again).
fn reading_cases(g: &mut sparkles_bench::Group<'_>, capture: &Path) {
    use sparkles_report::annotate::{annotate, Select};
    use sparkles_report::capture::profiles_of_capture;
    use sparkles_report::export::Timeline;
    use sparkles_report::reading::{read_capture, Wants};
    use sparkles_report::stacks::StackOptions;
    let select = Select {
        top: 3,
        ..Default::default()
    };
    let options = StackOptions::default();
    let (path, o, sel) = (capture.to_path_buf(), options.clone(), select.clone());
    g.case("read_once", move |bench| {
        bench.try_iter(|| {
            let wants = Wants {
                profiles: vec![&o],
                annotate: Some((&o, &sel)),
                timeline: Some(&o),
            };
            let read = read_capture(&path, "c", &o, wants, |_| {}).map_err(|e| e.to_string())?;
            let made = read.profiles.iter().all(Result::is_ok)
                && read.annotation.as_ref().is_some_and(Result::is_ok)
                && read.timeline.as_ref().is_some_and(Result::is_ok);
            made.then_some(())
                .ok_or("a part of the reading failed".to_string())
        })
    });
    let path = capture.to_path_buf();
    g.case("read_three_times", move |bench| {
        bench.try_iter(|| {
            profiles_of_capture(&path, "c", &options, |_| {}).map_err(|e| e.to_string())?;
            annotate(&path, &options, &select).map_err(|e| e.to_string())?;
            Timeline::of_capture(&path, "c", &options).map_err(|e| e.to_string())?;
            Ok::<(), String>(())
        })
    });
}

/// `sparkles_annotate` (`--top 5`), and the hottest function alone by `sparkles annotate
/// --symbol` and `perf annotate --stdio -s` (`sparkles_annotate_one`, `perf_annotate`).
fn annotate_cases(g: &mut sparkles_bench::Group<'_>, sparkles: &str, file: &str) {
    let (f, ours) = (file.to_string(), sparkles.to_string());
    g.case("sparkles_annotate", move |bench| {
        bench.try_iter(|| support::shell(&format!("'{ours}' annotate '{f}' --top 5")))
    });
    // The hottest function, by sparkles annotate itself.
    let hottest = std::process::Command::new(sparkles)
        .args(["annotate", file, "--top", "1", "--format", "json"])
        .output()
        .ok()
        .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
        .and_then(|a| a["functions"][0]["name"].as_str().map(str::to_string));
    let Some(name) = hottest else {
        eprintln!("report: no function to annotate in {file}: no perf_annotate case");
        return;
    };
    let (f, ours, n) = (file.to_string(), sparkles.to_string(), name.clone());
    g.case("sparkles_annotate_one", move |bench| {
        bench.try_iter(|| support::shell(&format!("'{ours}' annotate '{f}' --symbol '{n}'")))
    });
    let f = file.to_string();
    g.case("perf_annotate", move |bench| {
        bench.try_iter(|| {
            support::shell(&format!(
                "perf annotate -i '{f}' --stdio -s '{name}' 2>/dev/null"
            ))
        })
    });
}
