//! The parent's side of the pass: every case counted in a child under callgrind, after
//! all timing; each case's counts returned for the runner to merge into its report.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sparkles_report::callgrind::{parse_dump, Dump};
use sparkles_results::counting::ValgrindReport;
use sparkles_results::metric::{MetricSeries, MetricValue};

use super::child::{marker, ChildCase, ChildRequest, CHILD_ENV};
use super::dumps::{brackets_of, CostSums, Costs};
use crate::progress::Progress;
use crate::suite::Reexec;

/// Native time the collected runs of one case take together (all brackets): under
/// callgrind's cache and branch simulation, about 50 to 100 times longer.
const COLLECTED_BUDGET: Duration = Duration::from_millis(10);

/// Time under callgrind a bracket's full run may take, where an iteration is slow there
/// (what the native budget gives is cut to it): [`sized_by_cost`].
const FULL_RUN_UNDER_VALGRIND: Duration = Duration::from_millis(40);

/// The name callgrind's dumps of a child take, each with `.N` after it (the child's
/// own look at its first brackets' dumps reads the same names).
pub(crate) const DUMP_FILE: &str = "callgrind.out";

/// Brackets every case is counted in first. Where their instruction counts agree to the
/// instruction (as a body that does the same work every time does), that is the count,
/// exactly: no more brackets are taken (the simulated misses, which may differ by a few
/// where the heap's blocks land, keep these two). A case whose counts differ is counted
/// again in the rest of `--count-brackets`, for a median and a spread. Two show it: a
/// count that scatters (the allocator's state, a hash seed) differs between two brackets
/// of several iterations, and the comparison takes two equal values a side as exact.
pub(crate) const EXACT_BRACKETS: u32 = 2;

/// The iterations a full run adds, at most `asked`, and fewer where one iteration under
/// callgrind (`one`, timed with instrumentation on) makes the run longer than
/// [`FULL_RUN_UNDER_VALGRIND`].
pub(crate) fn sized_by_cost(asked: u64, one: Option<Duration>) -> u64 {
    match one {
        Some(t) if !t.is_zero() => {
            let fit = FULL_RUN_UNDER_VALGRIND.as_nanos() / t.as_nanos();
            asked.min(u64::try_from(fit).unwrap_or(u64::MAX)).max(1)
        }
        _ => asked.max(1),
    }
}

/// Whether every bracket counted the same instructions an iteration (two brackets at
/// least).
pub(crate) fn exact(brackets: &[MetricSeries]) -> bool {
    brackets
        .iter()
        .find(|s| s.id == "valgrind.instructions")
        .is_some_and(|s| {
            s.values.len() >= 2
                && s.values
                    .iter()
                    .all(|v| v.to_bits() == s.values[0].to_bits())
        })
}

/// The parent's side of the pass: valgrind, and how long a case may take under it.
pub(crate) struct Pass {
    pub program: PathBuf,
    pub timeout: Duration,
    /// Children counting at once (at least one).
    pub jobs: usize,
    pub brackets: u32,
    /// What callgrind simulates beside the instruction count.
    pub simulation: super::Simulation,
    pub suite: String,
    pub reexec: Reexec,
    /// Read each case's per-function costs too (`--profile=instructions`).
    pub profile: bool,
}

/// A valgrind option's `--name=yes` or `--name=no`.
fn yes_no(name: &str, on: bool) -> String {
    format!("{name}={}", if on { "yes" } else { "no" })
}

/// What one case gave under callgrind.
pub(crate) struct Counted {
    /// Each metric's value per bracket.
    pub brackets: Vec<MetricSeries>,
    /// From the child's start of the case to its end, setup included.
    pub wall: Duration,
    /// Its instruction costs over all brackets, where the pass reads profiles.
    pub costs: Option<Costs>,
    /// The iterations each full run added (what the child took: at most those asked).
    pub iterations: u64,
    /// The brackets the child counted.
    pub brackets_taken: u32,
}

/// Iterations a bracket's full run adds to its base run: those of all brackets take about
/// [`COLLECTED_BUDGET`] natively, at the timed median `ns_per_iter`.
pub(crate) fn iterations_for(ns_per_iter: f64, brackets: u32) -> u64 {
    let per_run = COLLECTED_BUDGET.as_nanos() as f64 / f64::from(brackets.max(1));
    if ns_per_iter.is_finite() && ns_per_iter > 0.0 {
        ((per_run / ns_per_iter) as u64).clamp(1, 1 << 32)
    } else {
        1
    }
}

impl Pass {
    /// Counts `cases` (`(name, n, ns)`: the iterations a full run adds at most, and the
    /// timed median per iteration) under callgrind, each case in a child of its own (its
    /// heap fresh: a case counted after others in one process read what they left behind,
    /// up to 0.15% more instructions on base64's 30 MiB string built by `realloc`s, so a
    /// count depended on which cases ran before it), [`Pass::jobs`] children at once.
    /// Children take the slowest cases first (by `ns`: a case of one slow iteration costs
    /// seconds under callgrind, one sized to the budget about the same as the next), so
    /// that no long case starts last and runs alone. Each case's values, or why there are
    /// none, in order: in [`EXACT_BRACKETS`] brackets where their instruction counts
    /// agree, else in all the pass's (the child decides, from its own dumps, and says how
    /// many in the case's `brackets` marker).
    pub(crate) fn count_all(&self, cases: &[(String, u64, f64)]) -> Vec<Result<Counted, String>> {
        let asked: Vec<ChildCase> = slowest_first(cases)
            .into_iter()
            .map(|i| ChildCase {
                index: i as u32,
                name: cases[i].0.clone(),
                iterations: cases[i].1,
                size_by_cost: true,
            })
            .collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut results: Vec<Option<Result<Counted, String>>> =
            cases.iter().map(|_| None).collect();
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..self.jobs.clamp(1, asked.len().max(1)))
                .map(|_| {
                    scope.spawn(|| {
                        let mut counted = Vec::new();
                        while sparkles_perf_data::atomic_write::interrupted().is_none() {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(case) = asked.get(i) else {
                                break;
                            };
                            counted.push((case.index as usize, self.count_case(case)));
                        }
                        counted
                    })
                })
                .collect();
            for w in workers {
                match w.join() {
                    Ok(counted) => {
                        for (i, r) in counted {
                            results[i] = Some(r);
                        }
                    }
                    Err(p) => std::panic::resume_unwind(p),
                }
            }
        });
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err("interrupted".to_string())))
            .collect()
    }

    /// Counts `case` in a child of its own and a folder of its own: its values, or why
    /// there are none (the child died, hung, or the case failed).
    fn count_case(&self, case: &ChildCase) -> Result<Counted, String> {
        let dir = tempfile_dir()?;
        let counted = self.run_child(dir.path(), case)?;
        let mut sums = CostSums::default();
        let dumps = self.read_dumps(dir.path(), &mut sums)?;
        let brackets = brackets_of(
            &dumps,
            case.index,
            counted.brackets_taken,
            counted.iterations,
        )?;
        Ok(Counted {
            brackets,
            costs: sums.take(case.index),
            ..counted
        })
    }

    /// Runs one child for `case`: what it took (its values are read from the dumps
    /// afterwards), or why it gave nothing.
    fn run_child(&self, dir: &Path, case: &ChildCase) -> Result<Counted, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find the bench executable to rerun: {e}"))?;
        let request = ChildRequest {
            suite: self.suite.clone(),
            case: case.clone(),
            brackets: self.brackets,
            dir: dir.to_path_buf(),
        };
        let log = dir.join("child.log");
        let log_file =
            std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let args = self
            .reexec
            .args
            .clone()
            .unwrap_or_else(|| std::env::args_os().skip(1).collect());
        let mut command = Command::new(&self.program);
        command
            .arg("--tool=callgrind")
            .arg("--instr-atstart=no")
            .arg("--collect-atstart=no")
            .arg(yes_no("--cache-sim", self.simulation.cache))
            .arg(yes_no("--branch-sim", self.simulation.branch))
            // Source lines only for the instruction profile's line view.
            .arg(if self.profile {
                "--dump-line=yes"
            } else {
                "--dump-line=no"
            })
            .arg(format!(
                "--callgrind-out-file={}",
                dir.join(DUMP_FILE).display()
            ))
            .arg(&exe)
            .args(&args)
            .envs(self.reexec.envs.iter().map(|(k, v)| (k, v)))
            .env(
                CHILD_ENV,
                serde_json::to_string(&request).unwrap_or_default(),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file);
        // A case that crashes its child leaves no vgcore file behind in the working folder.
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and
            // exec.
            unsafe {
                command.pre_exec(|| {
                    let none = libc::rlimit {
                        rlim_cur: 0,
                        rlim_max: 0,
                    };
                    libc::setrlimit(libc::RLIMIT_CORE, &none);
                    Ok(())
                });
            }
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.program.display()))?;
        let kill = |child: &mut std::process::Child| {
            let _ = child.kill();
            let _ = child.wait();
        };
        let log_tail = || last_lines(&std::fs::read_to_string(&log).unwrap_or_default());
        let mut started: Option<Instant> = None;
        loop {
            // The case's markers as the child leaves them.
            if started.is_none() && marker(dir, case.index, "started").exists() {
                started = Some(Instant::now());
            }
            if let Ok(text) = std::fs::read_to_string(marker(dir, case.index, "done")) {
                // The child exits once the case is done: nothing is left of it to wait for.
                let _ = child.wait();
                if !text.is_empty() {
                    return Err(format!("the case failed under valgrind: {text}"));
                }
                // What the child took, where it said (at most what was asked).
                let said = |what, most: u64| {
                    std::fs::read_to_string(marker(dir, case.index, what))
                        .ok()
                        .and_then(|t| t.trim().parse().ok())
                        .filter(|n| (1..=most).contains(n))
                        .unwrap_or(most)
                };
                return Ok(Counted {
                    brackets: Vec::new(),
                    wall: started.map_or(Duration::ZERO, |t| t.elapsed()),
                    costs: None,
                    iterations: said("iterations", case.iterations),
                    brackets_taken: said("brackets", u64::from(self.brackets)) as u32,
                });
            }
            let status = match child.try_wait() {
                Ok(s) => s,
                Err(e) => {
                    kill(&mut child);
                    return Err(format!("waiting for valgrind: {e}"));
                }
            };
            if let Some(status) = status {
                // A done marker written just before the exit is read first, above.
                if marker(dir, case.index, "done").exists() {
                    continue;
                }
                return Err(match started {
                    None => format!(
                        "valgrind ended ({status}) before counting the case{}",
                        log_tail()
                    ),
                    Some(_) => format!(
                        "the child under valgrind ended ({status}) while counting the case{}",
                        log_tail()
                    ),
                });
            }
            if started.is_some_and(|t| t.elapsed() >= self.timeout) {
                kill(&mut child);
                return Err(format!(
                    "timed out after {} s under valgrind (--valgrind-timeout)",
                    self.timeout.as_secs()
                ));
            }
            if sparkles_perf_data::atomic_write::interrupted().is_some() {
                kill(&mut child);
                return Err("interrupted".to_string());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Every dump the child wrote; with profiles, their costs added to `sums`.
    fn read_dumps(&self, dir: &Path, sums: &mut CostSums) -> Result<Vec<Dump>, String> {
        let prefix = format!("{DUMP_FILE}.");
        let mut dumps = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            let is_dump = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix));
            if is_dump {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let dump = parse_dump(&text, &path).map_err(|e| e.to_string())?;
                if self.profile {
                    sums.add(&dump.trigger, &text, &path)?;
                }
                dumps.push(dump);
            }
        }
        Ok(dumps)
    }
}

/// The indices of `cases` (`(name, n, ns per iteration)`), the slowest iteration first
/// (a median that is not a number last), the suite's order among equals.
pub(crate) fn slowest_first(cases: &[(String, u64, f64)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..cases.len()).collect();
    let key = |i: usize| Some(cases[i].2).filter(|ns| ns.is_finite()).unwrap_or(-1.0);
    order.sort_by(|&a, &b| key(b).total_cmp(&key(a)));
    order
}

/// The last few lines of a child's log, valgrind's own warnings left out, as `: ...`.
fn last_lines(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| !l.starts_with("--") && !l.starts_with("==") && !l.trim().is_empty())
        .collect();
    let tail = &lines[lines.len().saturating_sub(3)..];
    if tail.is_empty() {
        return String::new();
    }
    let mut s = String::from(": ");
    for (i, l) in tail.iter().enumerate() {
        if i > 0 {
            s.push_str(" / ");
        }
        let _ = write!(s, "{}", l.trim());
    }
    s
}

/// A temporary folder for one child's dumps, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempfile_dir() -> Result<TempDir, String> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "sparkles-valgrind-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(TempDir(dir))
}

/// What the pass gave one case: its account (why it has no counts, where it has none),
/// each metric's values per bracket, and with profiles its instruction costs.
pub(crate) struct CaseCount {
    pub account: ValgrindReport,
    pub brackets: Vec<MetricSeries>,
    pub costs: Option<Costs>,
}

/// Counts each case `(name, timed median ns per iteration)` under callgrind: one
/// [`CaseCount`] a case, in order, for the runner to merge into its report.
pub(crate) fn count_cases(cases: &[(String, f64)], pass: &Pass) -> Vec<CaseCount> {
    let progress = Progress::new();
    progress.pass("valgrind", None);
    progress.show(&format!("valgrind: {} cases under callgrind", cases.len()));
    let start = Instant::now();
    let asked: Vec<(String, u64, f64)> = cases
        .iter()
        .map(|(name, median)| {
            (
                name.clone(),
                iterations_for(*median, pass.brackets),
                *median,
            )
        })
        .collect();
    let results = pass.count_all(&asked);
    progress.clear();
    let mut slowest: Option<(String, f64)> = None;
    let mut counted = 0;
    let mut exact_cases = 0;
    let mut counts = Vec::new();
    for ((name, n, _), result) in asked.into_iter().zip(results) {
        let mut count = CaseCount {
            account: ValgrindReport {
                program: pass.program.display().to_string(),
                iterations: n,
                brackets: pass.brackets,
                ..ValgrindReport::default()
            },
            brackets: Vec::new(),
            costs: None,
        };
        match result {
            Ok(c) => {
                count.account.wall_s = c.wall.as_secs_f64();
                count.account.iterations = c.iterations;
                count.account.brackets = c.brackets.first().map_or(0, |s| s.values.len() as u32);
                if exact(&c.brackets) {
                    exact_cases += 1;
                }
                count.brackets = c.brackets;
                count.costs = c.costs;
                counted += 1;
                if slowest
                    .as_ref()
                    .is_none_or(|(_, s)| count.account.wall_s > *s)
                {
                    slowest = Some((name.clone(), count.account.wall_s));
                }
            }
            Err(why) => {
                eprintln!("note: {name}: valgrind metrics absent: {why}");
                count.account.error = Some(why);
            }
        }
        counts.push(count);
    }
    if let Some((case, seconds)) = slowest {
        eprintln!(
            "counting: valgrind: {counted} case{} counted under callgrind ({}) in {:.1} s ({} at once), the slowest {case} ({seconds:.1} s); {exact_cases} exact in {} brackets, {} in {}",
            if counted == 1 { "" } else { "s" },
            pass.program.display(),
            start.elapsed().as_secs_f64(),
            match pass.jobs.clamp(1, cases.len().max(1)) {
                1 => "one child".to_string(),
                n => format!("{n} children"),
            },
            pass.brackets.clamp(1, EXACT_BRACKETS),
            counted - exact_cases,
            pass.brackets
        );
    }
    counts
}

/// Each metric's median over `brackets`, as the counting pass gives its values.
pub(crate) fn medians(brackets: &[MetricSeries]) -> Vec<MetricValue> {
    brackets
        .iter()
        .map(|s| {
            (
                std::borrow::Cow::Owned(s.id.clone()),
                sparkles_results::stats::Summary::of(&s.values).map(|s| s.median),
            )
        })
        .collect()
}
