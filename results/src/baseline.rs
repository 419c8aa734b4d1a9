//! Saved runs and the comparison of a run against one.
//!
//! A baseline named NAME of suite SUITE is `baselines/NAME/SUITE.jsonl` (the run's
//! `sparkles.bench/1` rows) beside `baselines/NAME/SUITE.env.json` (where it was measured),
//! under the run's output folder. Suites of one workspace share a name without sharing a
//! file, so `cargo bench -- --save-baseline main` over several bench targets keeps each.

use std::path::{Path, PathBuf};

use crate::environment::Environment;
use crate::error::Error;
use crate::row::{parse_json_lines, to_json_lines, BenchRow};
use crate::stats::compare;

/// A baseline read for comparison.
#[derive(Debug, Clone)]
pub struct Baseline {
    /// The rows file it was read from.
    pub path: PathBuf,
    /// Its rows.
    pub rows: Vec<BenchRow>,
    /// Where it was measured, when it says.
    pub environment: Option<Environment>,
}

/// The folder beside a baseline's rows file (`rows`) where a case's profile is kept
/// (`profile/<case folder>/`): its profile.json and folded.txt, or the wall-clock ones.
pub fn kept_profile_dir(rows: &Path, slug: impl AsRef<std::ffi::OsStr>) -> PathBuf {
    rows.parent()
        .unwrap_or(Path::new("."))
        .join("profile")
        .join(slug.as_ref())
}

impl Baseline {
    /// Whether any of its cases was saved with a profile (rows do not carry it: the
    /// profile is kept beside them, [`kept_profile_dir`]).
    pub fn has_profiles(&self) -> bool {
        self.rows.iter().any(|r| {
            let dir = kept_profile_dir(&self.path, &r.slug);
            crate::profile::Kind::ALL
                .map(|kind| crate::profile::artifact_names(kind).0)
                .iter()
                .any(|json| dir.join(json).is_file())
        })
    }
}

/// A baseline name must be one plain path component.
fn check_name(name: &str, flag: &'static str) -> Result<(), Error> {
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if plain {
        Ok(())
    } else {
        Err(Error::Usage {
            flag,
            message: format!(
                "'{name}' is not a baseline name (use letters, digits, '.', '_', '-')"
            ),
        })
    }
}

/// The file `SUITE.{suffix}` beside a baseline's rows file `SUITE.jsonl` (its environment
/// record, its executable).
pub fn beside(rows_path: &Path, suffix: &str) -> PathBuf {
    let stem = rows_path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    rows_path.with_file_name(format!("{stem}.{suffix}"))
}

fn env_path_of(rows_path: &Path) -> PathBuf {
    beside(rows_path, "env.json")
}

/// The rows file of baseline `name` of `suite`.
pub fn named_path(out_dir: &Path, name: &str, suite: &str) -> PathBuf {
    out_dir
        .join("baselines")
        .join(name)
        .join(format!("{suite}.jsonl"))
}

/// Reads `--baseline NAME|PATH`: a NAME saved by `--save-baseline`, or a PATH to a rows
/// file (such as a `--bench-json` output) or to a folder holding `SUITE.jsonl`.
pub fn load(spec: &str, out_dir: &Path, suite: &str) -> Result<Baseline, Error> {
    let as_path = Path::new(spec);
    let is_path = spec.contains('/') || spec.ends_with(".jsonl") || as_path.exists();
    let path = if !is_path {
        check_name(spec, "--baseline")?;
        named_path(out_dir, spec, suite)
    } else if as_path.is_dir() {
        as_path.join(format!("{suite}.jsonl"))
    } else {
        as_path.to_path_buf()
    };
    let text = std::fs::read_to_string(&path).map_err(|e| Error::Baseline {
        path: path.clone(),
        line: None,
        message: if e.kind() == std::io::ErrorKind::NotFound && !is_path {
            format!(
                "no baseline '{spec}' of suite '{suite}' (save one with --save-baseline {spec})"
            )
        } else {
            e.to_string()
        },
    })?;
    let rows = parse_json_lines(&text, &path)?;
    if let Some(i) = rows.iter().position(|r| {
        r.timing
            .as_ref()
            .is_some_and(|t| t.statistic == crate::row::TimingStatistic::RoundMin)
    }) {
        return Err(Error::Baseline {
            path: path.clone(),
            line: Some(i + 1),
            message: format!(
                "case '{}' holds per-round minima (timing.statistic round_min: `sparkles compare`'s rows), which read faster than a run's sample means by construction: not a baseline for this run (save one with --save-baseline)",
                rows[i].case
            ),
        });
    }
    let env_path = env_path_of(&path);
    let environment = match std::fs::read_to_string(&env_path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::io(&env_path, e)),
        Ok(text) => Some(serde_json::from_str(&text).map_err(|e| Error::Baseline {
            path: env_path.clone(),
            line: Some(e.line()),
            message: format!("not a {} record: {e}", crate::environment::SCHEMA),
        })?),
    };
    Ok(Baseline {
        path,
        rows,
        environment,
    })
}

/// Checks `--save-baseline NAME` and that an existing baseline of that name can be merged
/// into, before anything is measured. Returns the rows file it will write.
pub fn prepare_save(name: &str, out_dir: &Path, suite: &str) -> Result<PathBuf, Error> {
    check_name(name, "--save-baseline")?;
    let path = named_path(out_dir, name, suite);
    existing_rows(&path)?;
    Ok(path)
}

fn existing_rows(path: &Path) -> Result<Vec<BenchRow>, Error> {
    match std::fs::read_to_string(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(Error::io(path, e)),
        Ok(text) => parse_json_lines(&text, path).map_err(|e| Error::Baseline {
            path: path.to_path_buf(),
            line: None,
            message: format!(
                "the existing baseline cannot be merged into ({e}); remove it to save anew"
            ),
        }),
    }
}

/// Saves the ok rows of a run to `path` (from [`prepare_save`]) with its environment.
/// Rows of cases this run did not measure (filtered out, or failed) stay as they were.
pub fn save(path: &Path, rows: &[BenchRow], environment: &Environment) -> Result<(), Error> {
    let mut merged = existing_rows(path)?;
    for row in rows.iter().filter(|r| r.ok) {
        let mut row = row.clone();
        row.comparison = None;
        // The capture under target/sparkles/profile/ is replaced by the next run: a
        // baseline does not point at it.
        row.profile = None;
        match merged.iter_mut().find(|old| old.case == row.case) {
            Some(old) => *old = row,
            None => merged.push(row),
        }
    }
    let env_json = serde_json::to_string_pretty(environment).unwrap_or_default() + "\n";
    // Both temporary files are written before either is renamed: a full disk leaves the
    // old rows and environment as they were, together.
    let rows = to_json_lines(&merged);
    Ok(sparkles_perf_data::atomic_write::write_all_atomically(&[
        (path, rows.as_bytes()),
        (&env_path_of(path), env_json.as_bytes()),
    ])?)
}

/// Adds a comparison to every ok row whose case has an ok row in `baseline`: its timing,
/// every metric both rows have, and the explanation; returns how many rows were compared.
/// `unavailable` says why this run has no value for a metric, where it knows.
pub fn compare_rows(
    rows: &mut [BenchRow],
    baseline: &Baseline,
    unavailable: &dyn Fn(&str) -> Option<String>,
) -> usize {
    let mut compared = 0;
    for row in rows.iter_mut().filter(|r| r.ok) {
        let Some(timing) = &row.timing else { continue };
        let Some(base_row) = baseline.rows.iter().find(|b| b.case == row.case && b.ok) else {
            continue;
        };
        let Some(change) = base_row
            .timing
            .as_ref()
            .and_then(|b| compare(&b.samples, &timing.samples))
        else {
            continue;
        };
        set_comparison(row, base_row, change.into(), unavailable, NOT_PROFILED);
        compared += 1;
    }
    compared
}

/// Why a comparison's line names no function where neither run was profiled, against a
/// baseline ([`set_comparison`]'s `not_profiled`).
pub const NOT_PROFILED: &str =
    "not profiled (run with --profile, against a baseline saved with --profile)";

/// Sets `row`'s comparison against `base_row`: `comparison` (the timing's) with every
/// metric both rows have and the line that explains it (instructions and cycles, the
/// profile's significant movers). `unavailable` says why this run has no value for a
/// metric, where it knows; `not_profiled` is what the line says of where the time went
/// when neither side was profiled (how to profile them: [`NOT_PROFILED`] for a baseline).
pub fn set_comparison(
    row: &mut BenchRow,
    base_row: &BenchRow,
    mut comparison: crate::row::Comparison,
    unavailable: &dyn Fn(&str) -> Option<String>,
    not_profiled: &str,
) {
    // A case that could not be counted under valgrind says why, not the catalog.
    let valgrind = row.counting.as_ref().and_then(|c| c.valgrind.as_ref());
    let valgrind_error = valgrind.and_then(|v| v.error.clone());
    let unavailable = |id: &str| match &valgrind_error {
        Some(why) if id.starts_with("valgrind.") => Some(why.clone()),
        _ => unavailable(id),
    };
    let (mut metrics, mut missing) = crate::explain::compare_metrics(base_row, row, &unavailable);
    // The profile pass's own figures (its sample and loss counts) say how well the case
    // was sampled, not how it ran: not compared.
    metrics.retain(|m| !m.id.starts_with("profile."));
    missing.retain(|m| !m.id.starts_with("profile."));
    // Throughput is the timing inverted: its change, interval and verdict are timing's,
    // never a second verdict from one value a side.
    for m in metrics
        .iter_mut()
        .filter(|m| m.id.starts_with("throughput."))
    {
        let inverted = |pct: f64| (1.0 / (1.0 + pct / 100.0) - 1.0) * 100.0;
        m.change_pct = Some(inverted(comparison.delta_pct));
        m.ci_low_pct = comparison.ci_high_pct.map(inverted);
        m.ci_high_pct = comparison.ci_low_pct.map(inverted);
        m.verdict = match comparison.verdict {
            crate::stats::Verdict::Regression => crate::explain::MetricVerdict::Lower,
            crate::stats::Verdict::Improvement => crate::explain::MetricVerdict::Higher,
            crate::stats::Verdict::InsideTheNoise => crate::explain::MetricVerdict::InsideTheNoise,
            crate::stats::Verdict::Underpowered => crate::explain::MetricVerdict::Underpowered,
        };
    }
    comparison.metrics = metrics;
    comparison.metrics_missing = missing;
    // Instructions and cycles: measured on both sides, or why not.
    let has = |r: &BenchRow, id: &str| r.metrics.get(id).copied().flatten().is_some();
    let both = |id: &str| has(row, id) && has(base_row, id);
    // callgrind's count stands in for perf's where the PMU gives none.
    let instructions_missing =
        (!both("instructions") && !both("valgrind.instructions")).then(|| {
            unavailable("instructions").unwrap_or_else(|| {
                if has(row, "instructions") {
                    "not measured in the baseline".to_string()
                } else {
                    "not counted in this run (--perf counts them where the PMU allows)".to_string()
                }
            })
        });
    let movers = row
        .profile
        .as_ref()
        .map(|p| p.significant_movers())
        .unwrap_or_default();
    // The instruction profile's exact movers, where no sampled profile named any.
    let exact = valgrind.filter(|v| !v.movers.is_empty()).map(|v| {
        let shown: Vec<String> = v
            .movers
            .iter()
            .take(3)
            .map(|m| match m.delta_pct {
                Some(p) => format!("{} {p:+.2}%", m.name),
                None => format!("{} new", m.name),
            })
            .collect();
        format!("{} (self instructions/iter, exact)", shown.join(", "))
    });
    // Why the profile names no function, where it names none.
    let where_missing = match &row.profile {
        _ if !movers.is_empty() => None,
        _ if exact.is_some() => exact,
        None => Some(not_profiled.to_string()),
        Some(p) => Some(
            p.error
                .as_ref()
                .map(|e| format!("no capture: {e}"))
                .or_else(|| {
                    p.notes
                        .iter()
                        .find_map(|n| n.strip_prefix("no profile diff: ").map(String::from))
                })
                .unwrap_or_else(|| "no hot function moved beyond the sampling noise".to_string()),
        ),
    };
    comparison.explanation = Some(crate::explain::explain(
        &comparison,
        instructions_missing.as_deref(),
        &movers,
        where_missing.as_deref(),
    ));
    row.comparison = Some(comparison);
}

/// The between-run noise of an unpaired comparison where no history teaches it, percent:
/// two runs of unchanged code on a busy 2-core machine moved by this much and more
/// (docs/guide.md's table), where one run's samples said a few tenths.
pub const DEFAULT_BETWEEN_RUN_NOISE_PCT: f64 = 5.0;

/// Runs of a case's history the between-run noise is learned from (the latest).
const NOISE_RUNS: usize = 20;

/// How far two runs of `case` apart in time move with nothing changed, from `history`:
/// the moves between successive runs of one build (the environment's `bench_build`: code
/// that changed between two runs would be read as noise, and a save-then-compare loop
/// alternates two builds), the latest [`NOISE_RUNS`] of each build; their median absolute
/// move scaled to a 95% range of one run against another (× 1.96 / 0.6745, the normal's;
/// a median, so an odd run moves it little), at least
/// [`crate::paired::NOISE_THRESHOLD_PCT`]. With fewer than two such moves:
/// [`DEFAULT_BETWEEN_RUN_NOISE_PCT`], said as the default.
pub fn between_run_noise(
    history: Option<&crate::history::History>,
    case: &str,
) -> crate::comparison::BetweenRunNoise {
    let mut builds: std::collections::BTreeMap<&str, Vec<f64>> = Default::default();
    for run in history.map(|h| h.runs.as_slice()).unwrap_or_default() {
        let Some(build) = run.environment.bench_build.as_deref() else {
            continue;
        };
        if let Some(c) = run.cases.iter().find(|c| c.case == case && c.median > 0.0) {
            builds.entry(build).or_default().push(c.median);
        }
    }
    let mut moves: Vec<f64> = builds
        .values()
        .flat_map(|medians| {
            let recent = &medians[medians.len().saturating_sub(NOISE_RUNS)..];
            recent
                .windows(2)
                .map(|w| (w[1] / w[0]).ln().abs())
                .collect::<Vec<_>>()
        })
        .collect();
    if moves.len() < 2 {
        return crate::comparison::BetweenRunNoise {
            pct: DEFAULT_BETWEEN_RUN_NOISE_PCT,
            source: format!(
                "default: {} move{} between runs of one build of this case in its history, 2 are needed to learn it",
                moves.len(),
                if moves.len() == 1 { "" } else { "s" }
            ),
        };
    }
    moves.sort_unstable_by(f64::total_cmp);
    let typical = crate::stats::quantile_sorted(&moves, 0.5);
    let pct =
        (((typical * 1.96 / 0.6745).exp() - 1.0) * 100.0).max(crate::paired::NOISE_THRESHOLD_PCT);
    crate::comparison::BetweenRunNoise {
        pct,
        source: format!(
            "history: {} moves between runs of one build of this case, their median scaled to a 95% range",
            moves.len()
        ),
    }
}

/// Earlier paired runs of a case a floor is learned from, at most (the latest).
const FLOOR_RUNS: usize = 20;

/// The floor a paired change of `case` must clear, from its earlier paired runs in
/// `history` (each run's larger null, [`crate::history::CaseRun::null_pct`]): their
/// median, at least [`crate::paired::NOISE_THRESHOLD_PCT`]. A null is one draw of how far
/// processes of the same code disagree; one run's may be small by luck, and the case's own
/// record says how far they usually do. With fewer than three earlier paired runs, the
/// fixed floor.
pub fn learned_floor(history: Option<&crate::history::History>, case: &str) -> f64 {
    let mut nulls: Vec<f64> = history
        .map(|h| {
            h.runs
                .iter()
                .filter_map(|r| r.cases.iter().find(|c| c.case == case)?.null_pct)
                .filter(|n| n.is_finite())
                .collect()
        })
        .unwrap_or_default();
    let recent = nulls.len().saturating_sub(FLOOR_RUNS);
    let mut nulls = nulls.split_off(recent);
    if nulls.len() < 3 {
        return crate::paired::NOISE_THRESHOLD_PCT;
    }
    nulls.sort_unstable_by(f64::total_cmp);
    crate::stats::quantile_sorted(&nulls, 0.5).max(crate::paired::NOISE_THRESHOLD_PCT)
}

/// Marks every compared row's comparison unpaired (those measured side by side are left
/// as they are): a regression or an improvement only
/// where the change also exceeds the case's between-run noise ([`between_run_noise`]);
/// else inside the noise. One run's samples know nothing of the drift between two runs.
pub fn hold_to_between_run_noise(rows: &mut [BenchRow], history: Option<&crate::history::History>) {
    use crate::stats::Verdict;
    for row in rows.iter_mut() {
        let case = row.case.clone();
        let Some(c) = row.comparison.as_mut() else {
            continue;
        };
        if c.method == Some(crate::comparison::Method::Paired) {
            continue;
        }
        let noise = between_run_noise(history, &case);
        if matches!(c.verdict, Verdict::Regression | Verdict::Improvement)
            && c.delta_pct.abs() <= noise.pct
        {
            // Inside the noise: no cause, whatever the one run's spread suggested.
            c.verdict = Verdict::InsideTheNoise;
            let mut e = crate::explain::explain(c, None, &[], None);
            e.text.push_str(&format!(
                "; inside the between-run noise (±{:.1}%, {})",
                noise.pct, noise.source
            ));
            c.explanation = Some(e);
        }
        c.method = Some(crate::comparison::Method::Unpaired);
        c.between_run_noise = Some(noise);
    }
}

/// Marks every compared row with the machine probe's shift, where it moved (`None`
/// leaves the rows as they are).
pub fn mark_machine_shift(rows: &mut [BenchRow], shift_pct: Option<f64>) {
    let Some(shift) = shift_pct else { return };
    for c in rows.iter_mut().filter_map(|r| r.comparison.as_mut()) {
        c.machine_shift_pct = Some(shift);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Verdict;

    fn row(case: &str, center: f64) -> BenchRow {
        crate::row::ok_row(case, (0..12).map(|i| center + (i % 3) as f64).collect())
    }

    #[test]
    fn save_merges_and_load_compares() {
        let dir = tempfile::tempdir().unwrap();
        let env = Environment::current("demo");
        let path = prepare_save("b", dir.path(), "demo").unwrap();
        save(&path, &[row("a", 100.0), row("b", 100.0)], &env).unwrap();
        // A filtered second save replaces only its own case.
        save(&path, &[row("b", 200.0)], &env).unwrap();
        let base = load("b", dir.path(), "demo").unwrap();
        assert_eq!(base.rows.len(), 2);
        assert_eq!(base.environment.as_ref(), Some(&env));
        let mut rows = vec![row("a", 100.0), row("b", 100.0), row("new", 1.0)];
        assert_eq!(compare_rows(&mut rows, &base, &|_| None), 2);
        let a = rows[0].comparison.as_ref().unwrap();
        assert_eq!(a.verdict, Verdict::InsideTheNoise);
        let b = rows[1].comparison.as_ref().unwrap();
        assert_eq!(b.verdict, Verdict::Improvement);
        assert!(rows[2].comparison.is_none());
    }

    /// A history of `case`'s runs with these medians, each of build `build`.
    fn history_of(case: &str, build: &str, medians: &[f64]) -> crate::history::History {
        let mut env = Environment::current("demo");
        env.bench_build = Some(build.to_string());
        crate::history::History {
            runs: medians
                .iter()
                .map(|&m| crate::history::Run::of("demo", &[row(case, m)], &env))
                .collect(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn unpaired_verdicts_clear_the_between_run_noise() {
        // Two runs apart in time: one run's samples say +2% and +20% with narrow intervals.
        let base = Baseline {
            path: PathBuf::from("b.jsonl"),
            rows: vec![
                row("small", 100.0),
                row("large", 100.0),
                row("fresh", 100.0),
            ],
            environment: None,
        };
        let compared = || {
            let mut rows = vec![
                row("small", 102.0),
                row("large", 120.0),
                row("fresh", 103.0),
            ];
            compare_rows(&mut rows, &base, &|_| None);
            rows
        };
        let mut rows = compared();
        assert!(rows
            .iter()
            .all(|r| r.comparison.as_ref().unwrap().verdict == Verdict::Regression));
        // The history says these cases move ±3% from run to run of one build (the fresh
        // one has none).
        let mut h = history_of("small", "b1", &[101.0, 98.0, 101.0, 98.0, 101.0]);
        h.runs
            .extend(history_of("large", "b1", &[101.0, 98.0, 101.0, 98.0, 101.0]).runs);
        hold_to_between_run_noise(&mut rows, Some(&h));
        let c = |i: usize| rows[i].comparison.clone().unwrap();
        assert_eq!(c(0).verdict, Verdict::InsideTheNoise, "{:?}", c(0));
        assert_eq!(c(1).verdict, Verdict::Regression, "{:?}", c(1));
        // A verdict held back explains nothing, and says what held it.
        let held = c(0).explanation.unwrap();
        assert_eq!(held.kind, crate::explain::Cause::None, "{}", held.text);
        assert!(
            held.text.starts_with("inside the noise +2.0%")
                && held
                    .text
                    .contains("nothing to explain; inside the between-run noise (±"),
            "{}",
            held.text
        );
        let noise = c(0).between_run_noise.unwrap();
        assert!((5.0..15.0).contains(&noise.pct), "{noise:?}");
        assert!(noise.source.starts_with("history: 4 moves"), "{noise:?}");
        // No history of the fresh case: the default, said as such; +3% is inside it.
        assert_eq!(c(2).verdict, Verdict::InsideTheNoise);
        let fresh = c(2).between_run_noise.unwrap();
        assert_eq!(fresh.pct, DEFAULT_BETWEEN_RUN_NOISE_PCT);
        assert!(fresh.source.starts_with("default: 0 moves"), "{fresh:?}");
        assert!(rows.iter().all(|r| {
            r.comparison.as_ref().unwrap().method == Some(crate::comparison::Method::Unpaired)
        }));
        // A save-then-compare loop: two builds 10% apart alternate in the history, each
        // quiet from run to run. Moves between the builds are not noise: a small change
        // gets through; the same history read as one build would hide it.
        let mut rows = compared();
        let mut quiet = crate::history::History::default();
        for wobble in [0.0, 0.2, -0.1, 0.1, 0.0] {
            quiet
                .runs
                .extend(history_of("small", "base", &[100.0 + wobble]).runs);
            quiet
                .runs
                .extend(history_of("small", "new", &[110.0 + wobble]).runs);
        }
        hold_to_between_run_noise(&mut rows, Some(&quiet));
        let small = rows[0].comparison.clone().unwrap();
        assert_eq!(small.verdict, Verdict::Regression, "{small:?}");
        let noise = small.between_run_noise.unwrap();
        assert!(noise.pct < 1.0, "{noise:?}");
        assert!(noise.source.starts_with("history: 8 moves"), "{noise:?}");
        let mut one_build = quiet;
        for r in &mut one_build.runs {
            r.environment.bench_build = Some("same".into());
        }
        assert!(between_run_noise(Some(&one_build), "small").pct > 10.0);
        // Runs that name no build teach nothing.
        for r in &mut one_build.runs {
            r.environment.bench_build = None;
        }
        let none = between_run_noise(Some(&one_build), "small");
        assert_eq!(none.pct, DEFAULT_BETWEEN_RUN_NOISE_PCT);
    }

    #[test]
    fn the_floor_is_learned_from_the_cases_earlier_nulls() {
        let env = crate::environment::Environment::current("s");
        let run = |null: Option<f64>| {
            let mut r =
                crate::history::Run::of("s", &[crate::row::ok_row("c", vec![1.0; 8])], &env);
            r.cases[0].null_pct = null;
            r
        };
        let history = |nulls: &[Option<f64>]| crate::history::History {
            runs: nulls.iter().map(|&n| run(n)).collect(),
            warnings: Vec::new(),
        };
        // Too few paired runs (unpaired ones have none): the fixed floor.
        let h = history(&[Some(3.0), None, Some(2.0), None]);
        assert_eq!(
            learned_floor(Some(&h), "c"),
            crate::paired::NOISE_THRESHOLD_PCT
        );
        assert_eq!(learned_floor(None, "c"), crate::paired::NOISE_THRESHOLD_PCT);
        // A case whose processes usually disagree by 2%: its floor, whatever one run's null.
        let h = history(&[Some(1.5), Some(2.0), Some(2.5), Some(0.1)]);
        assert!((learned_floor(Some(&h), "c") - 1.75).abs() < 1e-9);
        assert_eq!(
            learned_floor(Some(&h), "other"),
            crate::paired::NOISE_THRESHOLD_PCT
        );
        // Quiet processes: never below the fixed floor.
        let h = history(&[Some(0.1), Some(0.2), Some(0.1)]);
        assert_eq!(
            learned_floor(Some(&h), "c"),
            crate::paired::NOISE_THRESHOLD_PCT
        );
        // A 1.5% change with a lucky small null now: a verdict against the fixed floor, none
        // against the learned one.
        let r: Vec<crate::paired::Round> = (0..60)
            .map(|i| {
                let j = 1.0 + 0.001 * f64::from(i % 3);
                crate::paired::Round {
                    base: vec![1000.0 * j, 1000.0 * j],
                    variant: vec![1015.0 * j, 1015.0 * j],
                }
            })
            .collect();
        let fixed = crate::paired::paired(&r, crate::paired::NOISE_THRESHOLD_PCT).unwrap();
        assert_eq!(fixed.verdict, Verdict::Regression, "{fixed:?}");
        let h = history(&[Some(2.0), Some(2.2), Some(1.9)]);
        let c = crate::paired::paired(&r, learned_floor(Some(&h), "c")).unwrap();
        assert_eq!(c.verdict, Verdict::InsideTheNoise, "{c:?}");
        assert!((c.noise_pct - 2.0).abs() < 1e-9, "{c:?}");
    }

    #[test]
    fn rows_of_per_round_minima_are_no_baseline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.jsonl");
        let mut r = row("a", 100.0);
        r.timing.as_mut().unwrap().statistic = crate::row::TimingStatistic::RoundMin;
        std::fs::write(&path, to_json_lines(&[row("b", 1.0), r])).unwrap();
        let e = load(path.to_str().unwrap(), dir.path(), "demo")
            .unwrap_err()
            .to_string();
        assert!(e.contains("rows.jsonl") && e.contains("line 2"), "{e}");
        assert!(e.contains("per-round minima") && e.contains("'a'"), "{e}");
    }

    #[test]
    fn a_baseline_has_profiles_where_one_is_kept_beside_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let env = Environment::current("demo");
        let path = prepare_save("p", dir.path(), "demo").unwrap();
        save(&path, &[row("a/x", 100.0), row("b", 100.0)], &env).unwrap();
        let base = load("p", dir.path(), "demo").unwrap();
        assert!(!base.has_profiles());
        // Saved rows never carry the profile: it is kept beside them, per case folder.
        assert!(base.rows.iter().all(|r| r.profile.is_none()));
        let kept = kept_profile_dir(&path, crate::row::slug("a/x"));
        std::fs::create_dir_all(&kept).unwrap();
        std::fs::write(kept.join("folded.txt"), "a 1\n").unwrap();
        assert!(!base.has_profiles(), "folded stacks alone are no profile");
        std::fs::write(kept.join("profile-wall.json"), "{}").unwrap();
        assert!(base.has_profiles());
    }

    #[test]
    fn throughput_follows_timing_and_profile_counts_are_not_compared() {
        let mut base = row("t", 100.0);
        let mut new = row("t", 125.0);
        for (r, t) in [(&mut base, 1e9), (&mut new, 0.8e9)] {
            r.metrics.insert("throughput.bytes_per_sec".into(), Some(t));
            r.metrics.insert("profile.samples".into(), Some(4000.0));
        }
        new.metrics.insert("profile.samples".into(), Some(3000.0));
        let change = compare(
            &base.timing.as_ref().unwrap().samples,
            &new.timing.as_ref().unwrap().samples,
        )
        .unwrap();
        set_comparison(&mut new, &base, change.into(), &|_| None, NOT_PROFILED);
        let c = new.comparison.unwrap();
        assert_eq!(c.verdict, Verdict::Regression);
        let t = c
            .metrics
            .iter()
            .find(|m| m.id == "throughput.bytes_per_sec")
            .unwrap();
        assert_eq!(t.verdict, crate::explain::MetricVerdict::Lower, "{t:?}");
        let pct = t.change_pct.unwrap();
        assert!(
            (pct - (100.0 / (100.0 + c.delta_pct) - 1.0) * 100.0).abs() < 1e-9,
            "{t:?}"
        );
        assert!(
            t.ci_low_pct.unwrap() <= pct && pct <= t.ci_high_pct.unwrap(),
            "{t:?}"
        );
        assert!(
            c.metrics.iter().all(|m| !m.id.starts_with("profile.")),
            "{:?}",
            c.metrics
        );
    }

    #[test]
    fn callgrinds_movers_say_where_and_its_failure_says_why_a_count_is_missing() {
        let mut base = row("v", 100.0);
        let mut new = row("v", 150.0);
        base.metrics
            .insert("valgrind.instructions".into(), Some(1000.0));
        base.metric_samples
            .insert("valgrind.instructions".into(), vec![1000.0; 8]);
        new.metrics
            .insert("valgrind.instructions".into(), Some(1010.0));
        new.metric_samples
            .insert("valgrind.instructions".into(), vec![1010.0; 8]);
        new.counting = Some(crate::counting::CountingReport {
            valgrind: Some(crate::counting::ValgrindReport {
                movers: vec![crate::counting::InstructionChange {
                    name: "mycrate::spin".into(),
                    base: 990.0,
                    new: 1000.0,
                    delta_pct: Some(1.0101),
                }],
                ..Default::default()
            }),
            ..Default::default()
        });
        let compare_to = |new: &mut BenchRow| {
            let change = compare(
                &base.timing.as_ref().unwrap().samples,
                &new.timing.as_ref().unwrap().samples,
            )
            .unwrap();
            set_comparison(new, &base, change.into(), &|_| None, NOT_PROFILED);
            new.comparison.clone().unwrap()
        };
        let c = compare_to(&mut new);
        let e = c.explanation.unwrap();
        assert!(
            e.text
                .ends_with("; where: mycrate::spin +1.01% (self instructions/iter, exact)"),
            "{}",
            e.text
        );
        // The case failed under valgrind: its counts are missing with that reason.
        new.metrics.insert("valgrind.instructions".into(), None);
        new.metric_samples.remove("valgrind.instructions");
        new.counting = Some(crate::counting::CountingReport {
            valgrind: Some(crate::counting::ValgrindReport {
                error: Some("the case failed under valgrind: boom".into()),
                ..Default::default()
            }),
            ..Default::default()
        });
        let c = compare_to(&mut new);
        let m = c
            .metrics_missing
            .iter()
            .find(|m| m.id == "valgrind.instructions")
            .unwrap();
        assert_eq!(
            m.reason,
            "not measured in this run: the case failed under valgrind: boom"
        );
    }

    #[test]
    fn missing_and_corrupt_baselines_are_clear_errors_and_nothing_is_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let e = load("nosuch", dir.path(), "demo").unwrap_err().to_string();
        assert!(e.contains("nosuch") && e.contains("--save-baseline"), "{e}");
        let path = named_path(dir.path(), "bad", "demo");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{not json\n").unwrap();
        let e = load("bad", dir.path(), "demo").unwrap_err().to_string();
        assert!(e.contains("demo.jsonl") && e.contains("line 1"), "{e}");
        assert!(prepare_save("bad", dir.path(), "demo").is_err());
        assert!(save(&path, &[row("a", 1.0)], &Environment::current("demo")).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{not json\n");
    }

    #[test]
    fn names_must_be_plain() {
        let dir = tempfile::tempdir().unwrap();
        assert!(prepare_save("../x", dir.path(), "demo").is_err());
        assert!(prepare_save("", dir.path(), "demo").is_err());
        assert!(prepare_save("main-2026.12", dir.path(), "demo").is_ok());
    }

    #[test]
    fn a_path_to_a_bench_json_file_is_a_baseline() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("out.jsonl");
        std::fs::write(&file, to_json_lines(&[row("a", 5.0)])).unwrap();
        let base = load(file.to_str().unwrap(), Path::new("/nonexistent"), "demo").unwrap();
        assert_eq!(base.rows.len(), 1);
        assert!(base.environment.is_none());
    }
}
