//! `sparkles compare`: two revisions of a package's sparkles benches measured side by side
//! in one run. The base is built at `--base` (a worktree), the variant from the working
//! tree (or `--variant`); each side runs in `--processes` fresh processes (base A1, A2, …,
//! variant B1, B2, …, each with a layout of its own), one running at a time, round by
//! round over every case, the order within a round turned each round; per case the
//! variant's processes against the base's, and the nulls, each side's processes against
//! each other, beside every verdict ([`sparkles_results::paired`]).

mod revs;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use sparkles_report::diff::Diff;
use sparkles_results::paired::{paired, PairedChange, Round};
use sparkles_results::profile::ProfileSummary;
use sparkles_results::row::{BenchRow, Timing, TimingStatistic};
use sparkles_results::serve::protocol::Counted;
use sparkles_results::serve::{Executable, Served, Sides};
use sparkles_results::stats::Verdict;
use sparkles_results::units::format_ns;

use crate::error::Error;
use revs::{BenchExe, Side};

/// `sparkles compare` flags.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The base: any git revision (a commit, a branch, a tag, HEAD~1).
    #[arg(long, value_name = "REV")]
    base: String,
    /// The variant: a revision; default, the working tree as it is.
    #[arg(long, value_name = "REV")]
    variant: Option<String>,
    /// Only this bench target (as `cargo bench --bench NAME`); repeatable. Default: every
    /// bench target of the package that serves (a sparkles bench).
    #[arg(long = "bench", value_name = "NAME")]
    benches: Vec<String>,
    /// The package whose benches to compare, in a workspace (cargo's `-p`).
    #[arg(short = 'p', long, value_name = "PACKAGE")]
    package: Option<String>,
    /// Measurement time per case: rounds are taken until the cases' times are spent (a
    /// budget of time, never a look at the results).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = sparkles_results::units::parse_duration)]
    time: Duration,
    /// How long one sample runs (iterations calibrated once, on the base, for every side).
    #[arg(long, value_name = "DURATION", default_value = "1ms", value_parser = sparkles_results::units::parse_duration)]
    sample_time: Duration,
    /// Consecutive samples each process takes of a case in a round; the round keeps the
    /// fastest of them (a busy machine only adds time to a sample: a preemption, an
    /// interrupt), so one interruption does not decide a round.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    per_round: u32,
    /// Processes each side runs in (two at least: what one process's layout costs is
    /// told from the code only by another process of the same code).
    #[arg(long, value_name = "N", default_value_t = sparkles_results::paired::PROCESSES_PER_SIDE, value_parser = processes)]
    processes: usize,
    /// Exit with status 1 when a case's verdict is a regression (`regression`), or any
    /// change (`change`): a CI job's gate. The files are written first.
    #[arg(long, value_name = "WHAT")]
    fail_on: Option<sparkles_results::comparison::FailOn>,
    /// Changes smaller than this many percent are inside the noise whatever the
    /// intervals say (two builds of the same code differ by their layout alone).
    #[arg(long, value_name = "PCT", default_value_t = sparkles_results::paired::NOISE_THRESHOLD_PCT)]
    noise_threshold: f64,
    /// After the rounds, profile every case in base A1, base A2 and variant B1 and print
    /// each case's hot-function diff, B1 against A1 (`sparkles diff`'s test), a mover
    /// kept only where it moved by more than A2 against A1 moved it; captures, profiles
    /// and flamegraphs under `target/sparkles/compare/<bench>/{base,null,profile}/<case>/`,
    /// A2's and the variant's with `diff.json` and `diff.svg`.
    #[arg(long)]
    profile: bool,
    /// How long each side's body runs under the sampler with `--profile`.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = sparkles_results::units::parse_seconds)]
    profile_time: Duration,
    /// Write one `sparkles.compare/1` JSON object a case, a line each, to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the variant's `sparkles.bench/1` rows (docs/schemas/bench.md), a line a
    /// case, each with its `comparison` against the base (`paired`, `base_rev`,
    /// `variant_rev`, the metrics of both sides' counting passes and the explanation).
    #[arg(long, value_name = "FILE")]
    bench_json: Option<PathBuf>,
    /// Skip the counting pass on both sides (the metrics and the explanation).
    #[arg(long)]
    no_count: bool,
    /// Write no run report page (`target/sparkles/compare/<bench>/report/index.html`).
    #[arg(long)]
    no_report: bool,
    /// Append nothing to the suites' history (`target/sparkles/history/<bench>.jsonl`, a
    /// line marked `"source": "compare"` with each case's change, interval and noise,
    /// which `sparkles history` shows as measured side by side).
    #[arg(long)]
    no_history: bool,
    /// Only cases whose names contain one of these (the harness's filters).
    filters: Vec<String>,
    /// Flags for the bench processes, after `--`.
    #[arg(last = true)]
    harness_args: Vec<String>,
}

/// One case compared.
#[derive(Debug)]
struct Compared {
    bench: String,
    case: String,
    iterations: u64,
    rounds: Vec<Round>,
    result: Option<PairedChange>,
    /// With `--profile`: the hot-function diff, or why there is none.
    profiled: Option<Result<Profiled, String>>,
    /// The counting passes' answers (`count`), base A1's and the variant's.
    counted: Option<(Counted, Counted)>,
}

/// Both sides' profiles of a case and their diff.
#[derive(Debug)]
struct Profiled {
    base_capture: PathBuf,
    variant_capture: PathBuf,
    /// Each side's profile as a row carries it (the variant's with its movers).
    base: ProfileSummary,
    variant: ProfileSummary,
    diff_path: PathBuf,
    diff: Diff,
    /// A2 against A1 (the same code in two processes), where it was profiled.
    null_diff: Option<PathBuf>,
}

/// Runs the comparison.
pub fn compare(args: &CompareArgs) -> Result<(), Error> {
    let here = std::env::current_dir().map_err(|source| Error::Io {
        path: PathBuf::from("."),
        source,
    })?;
    let (root, within) = revs::repository(&here)?;
    let target = revs::target_dir(&here)?;
    let revs_dir = target.join("sparkles").join("revs");
    let base = revs::checkout(&root, &within, &revs_dir, &args.base, "--base")?;
    let variant = match &args.variant {
        Some(rev) => revs::checkout(&root, &within, &revs_dir, rev, "--variant")?,
        None => revs::working_tree(&root, &within)?,
    };
    eprintln!(
        "compare: base {}, variant {}",
        base.describe(),
        variant.describe()
    );
    if variant.commit == base.commit && !variant.dirty {
        eprintln!("compare: both sides are the same commit: every difference is noise");
    }
    for (flag, path) in [("--json", &args.json), ("--bench-json", &args.bench_json)] {
        if let Some(path) = path {
            writable(flag, path)?;
        }
    }
    let base_exes = revs::build(
        &base,
        &target,
        "base",
        args.package.as_deref(),
        &args.benches,
    )?;
    let variant_exes = revs::build(
        &variant,
        &target,
        "variant",
        args.package.as_deref(),
        &args.benches,
    )?;
    let mut all = Vec::new();
    for b in &base_exes {
        let Some(v) = variant_exes.iter().find(|v| v.name == b.name) else {
            eprintln!("compare: bench {}: only in the base: not compared", b.name);
            continue;
        };
        match compare_bench(args, b, v, &target) {
            Ok(compared) => all.extend(compared),
            // A bench that does not serve (criterion's, a plain main) when none was named.
            Err(e) if args.benches.is_empty() => eprintln!(
                "compare: bench {}: left out: it does not serve as a sparkles bench does (criterion's, or a plain main?): {e}",
                b.name
            ),
            Err(e) => return Err(e),
        }
    }
    for v in variant_exes
        .iter()
        .filter(|v| !base_exes.iter().any(|b| b.name == v.name))
    {
        eprintln!(
            "compare: bench {}: only in the variant: not compared",
            v.name
        );
    }
    if all.is_empty() {
        return Err(Error::Input(
            "no case was compared: no bench target serves on both sides".into(),
        ));
    }
    let rows: Vec<(BenchRow, BenchRow)> = all.iter().map(|c| rows_of(c, &base, &variant)).collect();
    print_table(&all, &rows, &base, &variant);
    if let Some(path) = &args.json {
        let mut text = String::new();
        for (c, (_, row)) in all.iter().zip(&rows) {
            text.push_str(&json_line(c, row, &base, &variant).to_string());
            text.push('\n');
        }
        sparkles_perf_data::atomic_write::write_atomically(path, text.as_bytes())?;
        eprintln!("compare: {} cases written to {}", all.len(), path.display());
    }
    if let Some(path) = &args.bench_json {
        let variant_rows: Vec<BenchRow> = rows.iter().map(|(_, v)| v.clone()).collect();
        let text = sparkles_results::row::to_json_lines(&variant_rows);
        sparkles_perf_data::atomic_write::write_atomically(path, text.as_bytes())?;
        eprintln!(
            "compare: {} sparkles.bench/1 rows written to {}",
            variant_rows.len(),
            path.display()
        );
    }
    if !args.no_report {
        write_reports(&all, &rows, &base, &variant, &target);
    }
    if !args.no_history {
        append_history(&all, &rows, &variant, &target);
    }
    let tally = sparkles_results::comparison::Tally::of(
        all.iter().filter_map(|c| c.result.map(|r| r.verdict)),
    );
    println!("compare: {}", tally.line());
    match args.fail_on {
        Some(on) if tally.fails(on) => Err(Error::CommandFailed(1)),
        _ => Ok(()),
    }
}

/// Appends each bench's variant rows to its suite's history, as a line of `source`
/// `compare` (its medians per-round minima; its cases' side-by-side results kept). A line
/// that cannot be appended is said; the comparison stands.
fn append_history(all: &[Compared], rows: &[(BenchRow, BenchRow)], variant: &Side, target: &Path) {
    let dir = target.join("sparkles").join("history");
    let mut benches: Vec<&str> = all.iter().map(|c| c.bench.as_str()).collect();
    benches.dedup();
    for bench in benches {
        let variant_rows: Vec<BenchRow> = all
            .iter()
            .zip(rows)
            .filter(|(c, _)| c.bench == bench)
            .map(|(_, (_, v))| v.clone())
            .collect();
        let mut environment = sparkles_results::environment::Environment::current(bench);
        environment.git_commit = Some(variant.commit.clone());
        environment.git_dirty = Some(variant.dirty);
        let mut run = sparkles_results::history::Run::of(bench, &variant_rows, &environment);
        run.source = Some(sparkles_results::history::COMPARE_SOURCE.to_string());
        let path = sparkles_results::history::path(&dir, bench);
        let appended = std::fs::create_dir_all(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))
            .and_then(|()| {
                sparkles_results::history::append(&path, &run).map_err(|e| e.to_string())
            });
        match appended {
            Ok(_) => eprintln!(
                "compare: {} cases appended to the history {} (measured side by side)",
                run.cases.len(),
                path.display()
            ),
            Err(e) => eprintln!("compare: history not appended: {e}"),
        }
    }
}

/// `--processes`: 2 to 16.
fn processes(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (2..=16).contains(&n) => Ok(n),
        _ => Err(format!(
            "'{text}' is not a number of processes from 2 to 16 (one process a side cannot tell the code from its layout)"
        )),
    }
}

/// A file `flag` names must be one that can be written: its folder exists. Said before
/// anything is built or measured.
fn writable(flag: &str, path: &Path) -> Result<(), Error> {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if path.is_dir() {
        return Err(Error::Usage {
            flag: flag.to_string(),
            message: format!("{} is a folder, not a file", path.display()),
        });
    }
    if !folder.is_dir() {
        return Err(Error::Usage {
            flag: flag.to_string(),
            message: format!(
                "{}: its folder {} does not exist",
                path.display(),
                folder.display()
            ),
        });
    }
    Ok(())
}

/// Where a bench target's comparison keeps its files: the processes' logs, the profiles
/// (`base/<case>/`, `profile/<case>/`) and the run report.
fn bench_dir(target: &Path, bench: &str) -> PathBuf {
    target.join("sparkles").join("compare").join(bench)
}

/// One run report page per bench target, both sides on it: the variant's rows against
/// the base's.
fn write_reports(
    all: &[Compared],
    rows: &[(BenchRow, BenchRow)],
    base: &Side,
    variant: &Side,
    target: &Path,
) {
    let mut benches: Vec<&str> = all.iter().map(|c| c.bench.as_str()).collect();
    benches.dedup();
    let sides = format!(
        "base {} against variant {}",
        base.describe(),
        variant.describe()
    );
    for bench in benches {
        let (base_rows, variant_rows): (Vec<BenchRow>, Vec<BenchRow>) = all
            .iter()
            .zip(rows)
            .filter(|(c, _)| c.bench == bench)
            .map(|(_, r)| r.clone())
            .unzip();
        let dir = bench_dir(target, bench);
        let path = sparkles_results::run_report::path_in(&dir);
        let page = sparkles_results::run_report::RunReport {
            suite: bench,
            rows: &variant_rows,
            baseline: Some(&base_rows),
            baseline_name: Some(&sides),
            machine_warning: None,
            profile_dir: &dir.join("profile"),
            kept: &[],
            trends: &[],
            // Both sides were profiled into fresh folders by this run (annotated where their
            // builds annotate).
            profiles_read: true,
            annotates: true,
        };
        match page.write(&path) {
            Ok(()) => eprintln!("report: {}", path.display()),
            Err(e) => eprintln!("report: {bench}: not written: {e}"),
        }
    }
}

/// A case's rows (`sparkles.bench/1`): the base's (each round's mean of its two
/// samples, base A1's counting pass and profile) and the variant's, compared with it
/// (the paired verdict, the metrics of both counting passes, the explanation).
fn rows_of(c: &Compared, base: &Side, variant: &Side) -> (BenchRow, BenchRow) {
    let profiled = c.profiled.as_ref().and_then(|p| p.as_ref().ok());
    let row =
        |samples: Vec<f64>, count: Option<&Counted>, profile: Option<&ProfileSummary>| BenchRow {
            schema: sparkles_results::row::SCHEMA.to_string(),
            case: c.case.clone(),
            slug: sparkles_results::row::slug(&c.case),
            ok: true,
            error: None,
            iterations: c.iterations,
            timing: Timing::from_samples(samples).map(|t| Timing {
                statistic: TimingStatistic::RoundMin,
                ..t
            }),
            metrics: count.map(|c| c.metrics.clone()).unwrap_or_default(),
            metric_samples: count.map(|c| c.metric_samples.clone()).unwrap_or_default(),
            comparison: None,
            reference: None,
            threads: None,
            counting: count.and_then(|c| c.counting.clone()),
            profile: profile.cloned(),
        };
    let base_row = row(
        c.rounds.iter().map(Round::base_mean).collect(),
        c.counted.as_ref().map(|(b, _)| b),
        profiled.map(|p| &p.base),
    );
    let mut variant_row = row(
        c.rounds.iter().map(Round::variant_mean).collect(),
        c.counted.as_ref().map(|(_, v)| v),
        profiled.map(|p| &p.variant),
    );
    if let Some(result) = &c.result {
        let mut comparison = sparkles_results::row::Comparison::from(result);
        comparison.base_rev = Some(base.rev());
        comparison.variant_rev = Some(variant.rev());
        let unavailable = c.counted.as_ref().map(|(_, v)| &v.unavailable);
        sparkles_results::baseline::set_comparison(
            &mut variant_row,
            &base_row,
            comparison,
            &|id| unavailable.and_then(|u| u.get(id)).cloned(),
            // Side by side, the way to a profile is compare's own flag.
            "not profiled (sparkles compare --profile profiles both sides)",
        );
    }
    (base_row, variant_row)
}

/// The three processes of one bench target, and its cases compared.
fn compare_bench(
    args: &CompareArgs,
    base: &BenchExe,
    variant: &BenchExe,
    target: &Path,
) -> Result<Vec<Compared>, Error> {
    let mut harness: Vec<String> = args.harness_args.clone();
    harness.extend(args.filters.iter().cloned());
    let logs = bench_dir(target, &base.name);
    let exe = |e: &BenchExe| Executable {
        path: e.path.clone(),
        dir: e.dir.clone(),
    };
    let mut sides = Sides::start(&exe(base), &exe(variant), args.processes, &harness, &logs)?;
    let cases = sides.cases()?;
    for c in &cases.only_base {
        eprintln!(
            "compare: {}: {c}: only in the base: not compared",
            base.name
        );
    }
    for c in &cases.only_variant {
        eprintln!(
            "compare: {}: {c}: only in the variant: not compared",
            base.name
        );
    }
    let mut timed = Vec::new();
    for case in &cases.common {
        timed.push(sides.prepare(case, args.sample_time)?);
    }
    // Rounds until every case's time is spent: a budget, decided before any result.
    let budget = args.time.saturating_mul(timed.len() as u32);
    sides.take_rounds(&mut timed, budget, args.per_round)?;
    let mut compared = Vec::new();
    for t in timed {
        let mut c = Compared {
            bench: base.name.clone(),
            result: paired(&t.rounds, args.noise_threshold),
            case: t.case,
            iterations: t.iterations,
            rounds: t.rounds,
            profiled: None,
            counted: None,
        };
        if args.profile {
            c.profiled = Some(profile_both(&mut sides, &c.case, &logs, args.profile_time));
        }
        // After the profile: its figures are among the metrics where asked for.
        if !args.no_count {
            c.counted = Some((
                sides.base[0].count(&c.case, c.iterations)?,
                sides.variant[0].count(&c.case, c.iterations)?,
            ));
        }
        sides.finish(&c.case);
        compared.push(c);
    }
    sides.quit();
    Ok(compared)
}

/// Profiles `case` on the base (A1, into `<dir>/base/<case>/`), a second base process
/// (A2, into `<dir>/null/<case>/`) and the variant (B1, into `<dir>/profile/<case>/`),
/// each of the latter two diffed against A1 by its own process (`diff.json`, `diff.svg`).
/// A mover of B1 against A1 stays a finding only where it moved by more than A2 against
/// A1 moved it: the variant's `diff.json` is rewritten with the others held back and said.
/// An error says why there is no diff (the kernel refused sampling, say).
fn profile_both(
    sides: &mut Sides,
    case: &str,
    dir: &Path,
    time: Duration,
) -> Result<Profiled, String> {
    let slug = sparkles_results::row::slug(case);
    let side = |s: &mut Served,
                folder: &Path,
                against: Option<&Path>|
     -> Result<(PathBuf, ProfileSummary), String> {
        // Nothing of an earlier comparison is left to be read as this one's.
        match std::fs::remove_dir_all(folder) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("{}: {e}", folder.display()))
            }
            _ => {}
        }
        let capture = folder.join("capture.perf.data");
        let summary = s
            .profile(case, time, &capture, against)
            .map_err(|e| e.to_string())?
            .profile;
        if let Some(error) = &summary.error {
            return Err(format!("{}: no capture: {error}", s.name));
        }
        Ok((capture, summary))
    };
    let read_diff = |folder: &Path, summary: &ProfileSummary| -> Result<Diff, String> {
        let path = folder.join("diff.json");
        std::fs::read(&path)
            .map_err(|e| {
                let why = summary
                    .notes
                    .iter()
                    .find(|n| n.contains("diff"))
                    .cloned()
                    .unwrap_or_else(|| format!("{}: {e}", path.display()));
                format!("no hot-function diff: {why}")
            })
            .and_then(|bytes| {
                serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
            })
    };
    let base_dir = dir.join("base").join(&slug);
    let null_dir = dir.join("null").join(&slug);
    let variant_dir = dir.join("profile").join(&slug);
    let (base_capture, base) = side(&mut sides.base[0], &base_dir, None)?;
    let null = match sides.base.get_mut(1) {
        Some(a2) => side(a2, &null_dir, Some(&base_dir))
            .and_then(|(_, summary)| read_diff(&null_dir, &summary)),
        None => Err("one process a side".to_string()),
    };
    let (variant_capture, mut variant) =
        side(&mut sides.variant[0], &variant_dir, Some(&base_dir))?;
    let diff_path = variant_dir.join("diff.json");
    let mut diff = read_diff(&variant_dir, &variant)?;
    match &null {
        Ok(null) => {
            let held = diff.hold_to_null(null);
            for m in variant.movers.iter_mut() {
                if held.iter().any(|(name, _)| *name == m.name) {
                    m.significant = false;
                }
            }
            for (_, line) in &held {
                eprintln!("compare: {case}: hot-function mover not confirmed: {line}");
                variant.notes.push(format!("not confirmed: {line}"));
            }
            if !held.is_empty() {
                let text = serde_json::to_string_pretty(&diff).map_err(|e| e.to_string())?;
                sparkles_perf_data::atomic_write::write_atomically(&diff_path, text.as_bytes())
                    .map_err(|e| format!("{}: {e}", diff_path.display()))?;
            }
        }
        Err(why) => {
            let line = format!("movers not held to a second base process: {why}");
            diff.warnings.push(line.clone());
            variant.notes.push(line);
        }
    }
    Ok(Profiled {
        base_capture,
        variant_capture,
        base,
        variant,
        null_diff: null.is_ok().then(|| null_dir.join("diff.json")),
        diff_path,
        diff,
    })
}

fn signed(pct: f64) -> String {
    format!("{pct:+.1}%")
}

fn interval(low: Option<f64>, high: Option<f64>) -> String {
    match (low, high) {
        (Some(l), Some(h)) => format!("[{l:+.1}, {h:+.1}]"),
        _ => "—".to_string(),
    }
}

fn print_table(all: &[Compared], rows: &[(BenchRow, BenchRow)], base: &Side, variant: &Side) {
    println!(
        "base {} against variant {}",
        base.describe(),
        variant.describe()
    );
    let width = all.iter().map(|c| c.case.len()).max().unwrap_or(4).max(4);
    println!(
        "{:<width$}  {:>10}  {:>10}  {:>7}  {:>16}  {:>7}  {:>16}  {:>6}  {:>6}  verdict",
        "case", "base", "variant", "change", "95% CI", "null", "null 95% CI", "noise", "rounds"
    );
    for c in all {
        let Some(r) = &c.result else {
            println!("{:<width$}  no samples", c.case);
            continue;
        };
        println!(
            "{:<width$}  {:>10}  {:>10}  {:>7}  {:>16}  {:>7}  {:>16}  {:>6}  {:>6}  {}",
            c.case,
            format_ns(r.base_ns),
            format_ns(r.variant_ns),
            signed(r.change_pct),
            interval(r.ci_low_pct, r.ci_high_pct),
            signed(r.null_change_pct),
            interval(r.null_ci_low_pct, r.null_ci_high_pct),
            format!("±{:.1}%", r.noise_pct),
            r.rounds,
            r.verdict.label()
        );
    }
    println!(
        "(change: the variant's processes against the base's, round by round; null: base A1 against base A2, the same code twice; a verdict clears zero, the size of either side's null whatever its sign, and the floor)"
    );
    // What moved with a verdict's time: the counting passes' metrics, the profiles.
    for (_, row) in rows {
        let Some(c) = &row.comparison else { continue };
        let change = matches!(c.verdict, Verdict::Regression | Verdict::Improvement);
        if let (true, Some(e)) = (change, &c.explanation) {
            println!("{}: why: {}", row.case, e.text);
        }
    }
    for c in all {
        match &c.profiled {
            None => {}
            Some(Err(why)) => println!("\n{}: not profiled: {why}", c.case),
            Some(Ok(p)) => {
                println!(
                    "\n{}: hot functions, base against variant ({}):",
                    c.case,
                    p.diff_path.display()
                );
                print!("{}", sparkles_report::diff::table(&p.diff, 5));
            }
        }
    }
}

fn json_line(c: &Compared, row: &BenchRow, base: &Side, variant: &Side) -> Value {
    let r = c.result.as_ref();
    let comparison = row.comparison.as_ref();
    json!({
        "schema": "sparkles.compare/1",
        "bench": c.bench,
        "case": c.case,
        "base_rev": base.rev(),
        "variant_rev": variant.rev(),
        "iterations": c.iterations,
        "base_median_ns": r.map(|r| r.base_ns),
        "median_ns": r.map(|r| r.variant_ns),
        "delta_pct": r.map(|r| r.change_pct),
        "ci_low_pct": r.and_then(|r| r.ci_low_pct),
        "ci_high_pct": r.and_then(|r| r.ci_high_pct),
        "verdict": r.map(|r| r.verdict),
        // The row's own account of the rounds and nulls (docs/schemas/bench.md).
        "paired": comparison.and_then(|c| c.paired.as_ref()),
        "method": "paired",
        "samples": c.rounds,
        "explanation": comparison.and_then(|c| c.explanation.as_ref()),
        "metrics": comparison.map(|c| &c.metrics),
        "profile": match &c.profiled {
            None => serde_json::Value::Null,
            Some(Err(why)) => json!({"error": why}),
            Some(Ok(p)) => json!({
                "base_capture": p.base_capture,
                "variant_capture": p.variant_capture,
                "diff": p.diff_path,
                "null_diff": p.null_diff,
                "movers": p.diff.findings().map(|m| m.name.clone()).collect::<Vec<_>>(),
            }),
        },
    })
}
