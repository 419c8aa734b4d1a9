//! `--baseline NAME` side by side: the baseline's saved bench executable and this one run
//! again together after this run's timing, each in several serve processes, rounds
//! interleaved (the coordinator is [`sparkles_results::serve::Sides`], what the rounds say
//! [`sparkles_results::paired`]'s), so a verdict compares measurements taken side by side,
//! never two runs an afternoon apart.
//!
//! `--save-baseline NAME` keeps a copy of the executable beside the rows
//! (`baselines/NAME/SUITE.bench`, with `SUITE.bench.json` saying where it runs). Where it
//! cannot run again (a baseline saved by an older version, a rows file, a suite re-executed
//! from a test function, a copy that does not start or answers another protocol,
//! `--baseline-unpaired`) the comparison is unpaired, and says why.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sparkles_results::baseline::{self, Baseline};
use sparkles_results::paired::paired;
use sparkles_results::row::{BenchRow, Comparison};
use sparkles_results::serve::{Executable, Sides};

use crate::error::Error;
use crate::suite::Reexec;

/// The schema of `SUITE.bench.json`.
pub(crate) const SAVED_SCHEMA: &str = "sparkles.saved-bench/1";

/// Samples a process takes of a case in a round; the round keeps the fastest (a busy
/// machine only adds time to a sample).
const PER_ROUND: u32 = 3;

/// Where a saved executable runs, beside its copy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct SavedBench {
    /// Always [`SAVED_SCHEMA`].
    schema: String,
    /// The serve protocol it answers.
    serve: String,
    /// The folder it ran in when saved (its package's, as `cargo bench` runs it).
    dir: PathBuf,
    /// The executable it was copied from.
    source: PathBuf,
}

/// The copy of the executable beside a baseline's rows file.
pub(crate) fn executable_path(rows: &Path) -> PathBuf {
    baseline::beside(rows, "bench")
}

/// Where the copy runs (`SUITE.bench.json`).
fn record_path(rows: &Path) -> PathBuf {
    baseline::beside(rows, "bench.json")
}

/// Keeps a copy of this executable beside the baseline rows at `rows`, and where it runs,
/// where it is a bench target's main (`reexec` given: one that serves the suite when asked
/// with `--bench --serve`); a suite run from a test function keeps none (said on stderr:
/// its comparisons will be unpaired). Both files are written whole or not at all.
pub(crate) fn save_executable(rows: &Path, reexec: Option<&Reexec>) -> Result<(), Error> {
    if reexec.is_none_or(|r| r.args.is_some()) {
        eprintln!(
            "note: baseline {}: no executable kept (the suite runs from a test function, not a bench target's main): comparisons with it will be unpaired",
            rows.display()
        );
        return Ok(());
    }
    let source = std::env::current_exe().map_err(|e| Error::io(PathBuf::from("."), e))?;
    let dir = std::env::current_dir().map_err(|e| Error::io(PathBuf::from("."), e))?;
    let exe = executable_path(rows);
    let bytes = std::fs::read(&source).map_err(|e| Error::io(&source, e))?;
    let record = SavedBench {
        schema: SAVED_SCHEMA.to_string(),
        serve: sparkles_results::serve::protocol::SCHEMA.to_string(),
        dir,
        source,
    };
    let json = serde_json::to_string_pretty(&record).unwrap_or_default() + "\n";
    sparkles_perf_data::atomic_write::write_all_atomically(&[
        (&exe, &bytes),
        (&record_path(rows), json.as_bytes()),
    ])?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| Error::io(&exe, e))?;
    }
    Ok(())
}

/// This executable's identity: its ELF build id (Mach-O: its UUID), hex; `None` where it
/// has none or cannot be read. Runs of one build are what the between-run noise is
/// learned from.
pub(crate) fn build_id() -> Option<String> {
    use object::Object;
    let exe = std::env::current_exe().ok()?;
    // Read where the headers and the note are, not the whole file (a test binary is
    // 150 MB).
    let cache = object::ReadCache::new(std::fs::File::open(exe).ok()?);
    let obj = object::File::parse(&cache).ok()?;
    let id: Vec<u8> = match obj.build_id() {
        Ok(Some(id)) => id.to_vec(),
        _ => obj.mach_uuid().ok().flatten()?.to_vec(),
    };
    Some(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// Profiles `case` side by side for `duration` in each of base A1, base A2 and variant
/// B1 (this build), A2 and B1 each diffed against A1: the paired diff (B1 against A1) and
/// the null (A2 against A1), how far the hot functions' shares move between two processes
/// of unchanged code.
fn side_by_side_profiles(
    sides: &mut Sides,
    case: &str,
    duration: Duration,
    logs: &Path,
) -> Result<(sparkles_report::diff::Diff, sparkles_report::diff::Diff), String> {
    let dir = logs
        .join("profiles")
        .join(sparkles_results::row::slug(case));
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("{}: {e}", dir.display()))
        }
        _ => {}
    }
    let a1 = dir.join("a1");
    let profile = |s: &mut sparkles_results::serve::Served,
                   folder: &Path,
                   against: Option<&Path>|
     -> Result<(), String> {
        let summary = s
            .profile(case, duration, &folder.join("capture.perf.data"), against)
            .map_err(|e| e.to_string())?
            .profile;
        match summary.error {
            Some(error) => Err(format!("{}: no capture: {error}", s.name)),
            None => Ok(()),
        }
    };
    profile(&mut sides.base[0], &a1, None)?;
    profile(&mut sides.base[1], &dir.join("a2"), Some(&a1))?;
    profile(&mut sides.variant[0], &dir.join("b1"), Some(&a1))?;
    let diff = |side: &str| -> Result<sparkles_report::diff::Diff, String> {
        let path = dir.join(side).join("diff.json");
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    };
    Ok((diff("b1")?, diff("a2")?))
}

/// How a run compares with its baseline.
#[derive(Debug)]
pub(crate) enum Pairing {
    /// Side by side with the saved executable.
    Paired(Executable),
    /// This run's samples against the saved ones, and why.
    Unpaired(String),
}

/// Whether `base` can run side by side with this executable.
pub(crate) fn pairing(base: &Baseline, unpaired_asked: bool) -> Pairing {
    if unpaired_asked {
        return Pairing::Unpaired("--baseline-unpaired".to_string());
    }
    let exe = executable_path(&base.path);
    let record = record_path(&base.path);
    let text = match std::fs::read_to_string(&record) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Pairing::Unpaired(format!(
                "no executable kept beside {} (saved by an older version, or not saved with --save-baseline)",
                base.path.display()
            ))
        }
        Err(e) => return Pairing::Unpaired(format!("{}: {e}", record.display())),
    };
    let saved: SavedBench = match serde_json::from_str(&text) {
        Ok(s) => s,
        Err(e) => {
            return Pairing::Unpaired(format!(
                "{}: not a {SAVED_SCHEMA} record: {e}",
                record.display()
            ))
        }
    };
    if saved.schema != SAVED_SCHEMA {
        return Pairing::Unpaired(format!(
            "{}: {} is not {SAVED_SCHEMA}",
            record.display(),
            saved.schema
        ));
    }
    if !exe.is_file() {
        return Pairing::Unpaired(format!("{}: no such file", exe.display()));
    }
    // The folder it ran in may be gone (a temporary checkout): this run's own then.
    let dir = if saved.dir.is_dir() {
        saved.dir
    } else {
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
    };
    Pairing::Paired(Executable { path: exe, dir })
}

/// How the side-by-side measurement runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan<'a> {
    /// Processes a side.
    pub processes: usize,
    /// Measurement time per case.
    pub time: Duration,
    /// How long a sample runs (its iterations calibrated once).
    pub sample: Duration,
    /// Where the processes' logs go (and the side-by-side profiles, `profiles/<case>/{a1,a2,b1}/`).
    pub logs: &'a Path,
    /// With `--profile`: how long base A1, A2 and variant B1 each profile a case whose
    /// profile has significant movers, so that each mover is confirmed side by side and
    /// held to the processes' own disagreement.
    pub profile_null: Option<Duration>,
}

/// What the side-by-side measurement did.
#[derive(Debug)]
pub(crate) struct Measured {
    /// Cases compared side by side.
    pub cases: usize,
    /// Its wall time.
    pub elapsed: Duration,
    /// Where the time went: starting the processes, setting every case up and
    /// calibrating it (with each process's warm-up sample), the rounds, and the
    /// side-by-side profiles.
    pub phases: [Duration; 4],
}

impl Measured {
    /// `start 0.3 s, set-up 2.1 s, rounds 10.2 s` (the profiles where there were any).
    pub fn phases_line(&self) -> String {
        let [start, setup, rounds, profiles] = self.phases;
        let mut line = format!(
            "start {:.1} s, set-up {:.1} s, rounds {:.1} s",
            start.as_secs_f64(),
            setup.as_secs_f64(),
            rounds.as_secs_f64()
        );
        if profiles >= Duration::from_millis(50) {
            line.push_str(&format!(", profiles {:.1} s", profiles.as_secs_f64()));
        }
        line
    }
}

/// Measures every compared row's case side by side as `plan` says: `saved` and this
/// executable, `plan.processes` each, a change held to `floor(case)` besides its nulls
/// (what the case's earlier nulls teach); each row's comparison becomes the paired one (its
/// metrics and explanation against the baseline row, as before). An error (the saved
/// executable does not start, or answers another protocol) leaves the rows as they were.
pub(crate) fn measure(
    rows: &mut [BenchRow],
    base: &Baseline,
    saved: &Executable,
    plan: &Plan<'_>,
    floor: &dyn Fn(&str) -> f64,
    unavailable: &dyn Fn(&str) -> Option<String>,
) -> Result<Measured, Error> {
    let Plan {
        processes: k,
        time,
        sample,
        logs,
        profile_null,
    } = *plan;
    // The cases whose profile named a mover: those the null profiles are made for.
    let with_movers: Vec<String> = rows
        .iter()
        .filter(|r| {
            r.profile
                .as_ref()
                .is_some_and(|p| !p.significant_movers().is_empty())
        })
        .map(|r| r.case.clone())
        .collect();
    let started = Instant::now();
    let this = Executable {
        path: std::env::current_exe().map_err(|e| Error::io(PathBuf::from("."), e))?,
        dir: std::env::current_dir().map_err(|e| Error::io(PathBuf::from("."), e))?,
    };
    let wanted: Vec<String> = rows
        .iter()
        .filter(|r| r.ok && r.comparison.is_some())
        .map(|r| r.case.clone())
        .collect();
    let mut phases = [Duration::ZERO; 4];
    let mut lap = Instant::now();
    let mut phase = |i: usize| {
        phases[i] += lap.elapsed();
        lap = Instant::now();
    };
    let mut sides = Sides::start(saved, &this, k, &[], logs)?;
    let result = (|| {
        let matched = sides.cases()?;
        phase(0);
        let mut timed = Vec::new();
        for case in matched.common.iter().filter(|c| wanted.contains(c)) {
            timed.push(sides.prepare(case, sample)?);
        }
        phase(1);
        let budget = time.saturating_mul(timed.len() as u32);
        sides.take_rounds(&mut timed, budget, PER_ROUND)?;
        phase(2);
        let mut nulls = Vec::new();
        for t in &timed {
            if let (Some(duration), true, true) = (
                profile_null,
                with_movers.contains(&t.case),
                sides.base.len() >= 2,
            ) {
                nulls.push((
                    t.case.clone(),
                    side_by_side_profiles(&mut sides, &t.case, duration, logs),
                ));
            }
            sides.finish(&t.case);
        }
        phase(3);
        Ok::<_, Error>((timed, nulls))
    })();
    sides.quit();
    let (timed, nulls) = result?;
    for (case, null) in nulls {
        let Some(row) = rows.iter_mut().find(|r| r.case == case) else {
            continue;
        };
        let Some(profile) = row.profile.as_mut() else {
            continue;
        };
        match null {
            Ok((paired, null)) => {
                for line in profile.confirm_movers(&paired, &null) {
                    eprintln!("{case}: hot-function mover not confirmed side by side: {line}");
                }
            }
            Err(why) => profile
                .notes
                .push(format!("movers not confirmed side by side: {why}")),
        }
    }
    for t in &timed {
        let Some(change) = paired(&t.rounds, floor(&t.case)) else {
            continue;
        };
        let Some(row) = rows.iter_mut().find(|r| r.case == t.case) else {
            continue;
        };
        let Some(base_row) = base.rows.iter().find(|b| b.case == t.case && b.ok) else {
            continue;
        };
        // Both sides measured now: how the machine moved since the baseline was saved
        // marks nothing.
        baseline::set_comparison(
            row,
            base_row,
            Comparison::from(&change),
            unavailable,
            baseline::NOT_PROFILED,
        );
    }
    Ok(Measured {
        cases: timed.len(),
        elapsed: started.elapsed(),
        phases,
    })
}
