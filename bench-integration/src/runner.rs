//! The scheduler: starts each case on its thread and drives the passes.
//!
//! Smoke mode runs each body once. Bench mode calibrates each case (iterations per sample
//! double until one sample takes `--bench-min-time`), takes the timing samples with
//! nothing else enabled, in round-robin or blocked order, and then runs one counting pass
//! per case under the counting tiers, so counter bracketing never touches a timing.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use sparkles_perf_data::atomic_write::interrupted;

use crate::args::SampleOrder;
use crate::bencher::{Bencher, Command, CountPlan, ProfilePlan, Reply};
use crate::case_report::CaseReport;
use crate::progress::Progress;
use crate::suite::{slug, Case, CaseFailure};

/// Iterations per sample never exceed this, whatever the body's speed.
const MAX_ITERATIONS: u64 = 1 << 40;

/// Stack of a case's thread: what a main thread usually gets, unless RUST_MIN_STACK says.
const CASE_STACK: usize = 8 << 20;

/// How a bench-mode run measures.
#[derive(Debug, Clone)]
pub(crate) struct Protocol {
    /// The command line's settings, over every case's ([`crate::suite::Settings`]).
    pub flags: crate::suite::Settings,
    /// The suite's, under every group's and case's.
    pub suite_defaults: crate::suite::Settings,
    pub order: SampleOrder,
    pub count_iterations: u64,
    /// Separate runs of the counting pass, each counted on its own.
    pub count_brackets: u32,
    /// The counting pass's tiers; `None` skips the pass.
    pub count_plan: Option<CountPlan>,
    /// The profile pass: its sampling, and the folder of the captures (each case's
    /// duration is its own setting's).
    pub profile: Option<(crate::profiling::plan::ProfileSampling, std::path::PathBuf)>,
}

impl Protocol {
    /// `case`'s settings (its own over its group's) weighed with the command line's and
    /// the suite's.
    pub fn for_case(&self, case: crate::suite::Settings) -> crate::suite::Resolved {
        self.flags.over(case).over(self.suite_defaults).resolve()
    }

    /// The settings of a case with none of its own: the machine probe's and the
    /// header's.
    pub fn suite_wide(&self) -> crate::suite::Resolved {
        self.for_case(crate::suite::Settings::default())
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".to_string()
    }
}

/// A case whose thread is running: the scheduler's and serve mode's handle on it.
pub(crate) struct Running {
    pub report: CaseReport,
    commands: Sender<Command>,
    replies: Receiver<Reply>,
    thread: Option<JoinHandle<()>>,
    /// The thread's kernel id, where it can be pinned.
    thread_id: Option<i32>,
    ended: bool,
}

impl Running {
    /// Starts the case's thread and waits until its setup is done.
    pub fn spawn(case: Case) -> Running {
        let (command_tx, command_rx) = channel();
        let (reply_tx, reply_rx) = channel();
        let name = case.name.clone();
        let mut builder = std::thread::Builder::new().name(slug(&case.name));
        if std::env::var_os("RUST_MIN_STACK").is_none() {
            builder = builder.stack_size(CASE_STACK);
        }
        let body = case.body;
        let threads = case.threads;
        let thread_name = name.clone();
        let spawned = builder.spawn(move || {
            let ended = reply_tx.clone();
            let mut bencher = Bencher::new(thread_name, command_rx, reply_tx, threads);
            let result = catch_unwind(AssertUnwindSafe(|| body(&mut bencher)))
                .map(|r| r.map_err(|CaseFailure(message)| message))
                .unwrap_or_else(|payload| Err(panic_message(payload)));
            drop(bencher);
            let _ = ended.send(Reply::Ended(result));
        });
        let mut report = CaseReport::new(name);
        report.threads = threads;
        let mut running = Running {
            report,
            commands: command_tx,
            replies: reply_rx,
            thread: None,
            thread_id: None,
            ended: false,
        };
        match spawned {
            Ok(handle) => {
                running.thread = Some(handle);
                if let Some(Reply::Ready { throughput, thread }) = running.receive() {
                    running.report.throughput = throughput;
                    running.thread_id = thread;
                } else if running.report.ok {
                    running.fail("case thread answered out of turn".to_string());
                }
            }
            Err(e) => running.fail(format!("could not start the case's thread: {e}")),
        }
        running
    }

    fn fail(&mut self, message: String) {
        if self.report.ok {
            self.report.ok = false;
            self.report.error = Some(message);
        }
    }

    /// The next reply that is not an end or a failure; those fail the case.
    fn receive(&mut self) -> Option<Reply> {
        match self.replies.recv() {
            Ok(Reply::Ended(result)) => {
                self.ended = true;
                self.fail(result.err().unwrap_or_else(|| {
                    "the case function returned before its iter call was done \
                     (does it call b.iter, b.try_iter or b.iter_batched?)"
                        .to_string()
                }));
                None
            }
            Ok(Reply::BodyFailed(message)) => {
                self.fail(message);
                None
            }
            Ok(reply) => Some(reply),
            Err(_) => {
                self.ended = true;
                self.fail("the case's thread ended without answering".to_string());
                None
            }
        }
    }

    /// The case's answer to `command`; none once it failed, or once a SIGINT or SIGTERM
    /// came (the run stops: nothing more is asked of any case).
    fn request(&mut self, command: Command) -> Option<Reply> {
        if !self.report.ok || self.ended || interrupted().is_some() {
            return None;
        }
        // A send fails only once the thread is gone; its Ended reply is still queued.
        let _ = self.commands.send(command);
        self.receive()
    }

    /// The elapsed time of one timed sample of `iterations`.
    pub fn sample(&mut self, iterations: u64) -> Option<Duration> {
        self.sample_and_wait(iterations).map(|(elapsed, _)| elapsed)
    }

    /// The elapsed time of one timed sample of `iterations`, and how long the case's
    /// thread waited for a CPU inside it, where the kernel says.
    fn sample_and_wait(&mut self, iterations: u64) -> Option<(Duration, Option<Duration>)> {
        match self.request(Command::Sample { iterations })? {
            Reply::Sampled { elapsed, wait } => Some((elapsed, wait)),
            _ => {
                self.fail("case thread answered out of turn".to_string());
                None
            }
        }
    }

    /// Runs the body, untimed, for at least `duration` (nothing where it is zero): in
    /// samples of doubling iterations, each at most a tenth of it.
    pub fn warm_up(&mut self, duration: Duration) {
        if duration.is_zero() {
            return;
        }
        let start = std::time::Instant::now();
        let mut iterations = 1u64;
        while start.elapsed() < duration {
            let Some(elapsed) = self.sample(iterations) else {
                return;
            };
            if elapsed < duration / 10 {
                iterations = iterations.saturating_mul(2).min(MAX_ITERATIONS);
            }
        }
    }

    /// Doubles the iterations per sample until one sample takes at least `min_time`: the
    /// iterations chosen, and the time that sample took (none once the case failed).
    pub fn calibrate(&mut self, min_time: Duration) -> Option<(u64, Duration)> {
        let mut iterations = 1u64;
        while let Some(elapsed) = self.sample(iterations) {
            if elapsed >= min_time || iterations >= MAX_ITERATIONS {
                self.report.iterations = iterations;
                return Some((iterations, elapsed));
            }
            iterations = iterations.saturating_mul(2);
        }
        None
    }

    /// One timed sample of `iterations`, kept in the report (its time and its wait per
    /// iteration); its elapsed time.
    pub fn sample_kept(&mut self, iterations: u64) -> Option<Duration> {
        let (elapsed, wait) = self.sample_and_wait(iterations)?;
        self.report.keep_sample(iterations, elapsed, wait);
        Some(elapsed)
    }

    fn take_sample(&mut self) {
        let iterations = self.report.iterations;
        if iterations != 0 {
            self.sample_kept(iterations);
        }
    }

    /// Lets the case's thread run on `cpus` only (all it may run on, to free it);
    /// whether it was pinned.
    fn pin(&self, cpus: &[usize]) -> bool {
        self.thread_id
            .is_some_and(|id| crate::pinning::pin(id, cpus))
    }

    fn count(&mut self, protocol: &Protocol) {
        let Some(plan) = protocol.count_plan.clone() else {
            return;
        };
        self.count_with(
            plan,
            self.report.iterations,
            protocol.count_iterations,
            protocol.count_brackets,
        );
    }

    /// The counting pass under `plan`: `iterations` (a sample's, capped at `cap`) shared
    /// among `brackets` runs, each counted on its own; the values land in the report.
    /// Gives the iterations each bracket ran.
    pub fn count_with(&mut self, plan: CountPlan, iterations: u64, cap: u64, brackets: u32) -> u64 {
        let brackets = brackets.max(1);
        // The pass's iterations shared among its brackets, one at least each.
        let iterations = (iterations.clamp(1, cap.max(1)) / u64::from(brackets)).max(1);
        match self.request(Command::Count {
            iterations,
            brackets,
            plan,
        }) {
            Some(Reply::Counted {
                values,
                brackets,
                report,
            }) => {
                self.report.counted = values;
                self.report.counted_brackets = brackets;
                self.report.counting =
                    (report.perf.is_some() || report.syscalls.is_some()).then_some(*report);
            }
            Some(_) => self.fail("case thread answered out of turn".to_string()),
            None => {}
        }
        iterations
    }

    fn profile(&mut self, protocol: &Protocol, duration: Duration) {
        let Some((sampling, dir)) = &protocol.profile else {
            return;
        };
        let name = match sampling {
            crate::profiling::plan::ProfileSampling::Perf(_) => "capture.perf.data",
            crate::profiling::plan::ProfileSampling::Alloc(_) => {
                sparkles_results::profile::ALLOC_CAPTURE
            }
        };
        let path = dir.join(&self.report.slug).join(name);
        self.profile_with(sampling, duration, path);
    }

    /// The profile pass: the body under `sampling` for `duration`, its capture streamed to
    /// `path`; the summary lands in the report.
    pub fn profile_with(
        &mut self,
        sampling: &crate::profiling::plan::ProfileSampling,
        duration: Duration,
        path: std::path::PathBuf,
    ) {
        let plan = ProfilePlan {
            sampling: sampling.clone(),
            duration,
            iterations: self.report.iterations.max(1),
            path,
        };
        match self.request(Command::Profile(Box::new(plan))) {
            Some(Reply::Profiled(summary)) => self.report.profile = Some(*summary),
            Some(_) => self.fail("case thread answered out of turn".to_string()),
            None => {}
        }
    }

    /// Tells the case it is done, waits for its function to return, and joins its thread.
    pub fn finish(mut self) -> CaseReport {
        if !self.ended {
            let _ = self.commands.send(Command::Finish);
            loop {
                match self.replies.recv() {
                    Ok(Reply::Ended(result)) => {
                        if let Err(message) = result {
                            self.fail(message);
                        }
                        break;
                    }
                    Ok(_) => continue,
                    Err(_) => break,
                }
            }
        }
        if let Some(handle) = self.thread.take() {
            let _ = handle.join();
        }
        self.report
    }
}

/// Runs every case's body once; `on_done` sees each report as it completes.
pub(crate) fn smoke(cases: Vec<Case>, mut on_done: impl FnMut(&CaseReport)) -> Vec<CaseReport> {
    cases
        .into_iter()
        .map(|case| {
            let mut running = Running::spawn(case);
            if let Some(reply) = running.request(Command::Smoke) {
                if !matches!(reply, Reply::Smoked) {
                    running.fail("case thread answered out of turn".to_string());
                }
            }
            let report = running.finish();
            on_done(&report);
            report
        })
        .collect()
}

/// What the timing pass measured: every case's report, and the machine probe's
/// per-iteration ns, one sample a round (empty where the probe failed or nothing ran).
pub(crate) struct Measured {
    pub reports: Vec<CaseReport>,
    /// Each group reference's twin ([`crate::suite::Group::reference`]): the index of
    /// the reference in `reports`, and the twin's report (its samples taken in the same
    /// turns as the reference's).
    pub twins: Vec<(usize, CaseReport)>,
    pub probe_samples: Vec<f64>,
    /// Each probe sample's run-queue wait, ns an iteration, where the kernel said them.
    pub probe_waits: Option<Vec<f64>>,
    /// What the probe's thread used while it ran (its involuntary switches say whether
    /// other work ran beside the run), where the kernel says.
    pub probe_usage: Option<crate::busy::ThreadUsage>,
    /// Where the run's time went, pass by pass.
    pub phases: Phases,
}

/// The wall time of each pass over all cases: setting up, warming up, calibrating and
/// timing; counting; sampling (the profile passes).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Phases {
    pub timing: Duration,
    pub counting: Duration,
    pub sampling: Duration,
}

impl Phases {
    /// Runs `f`, its time added to the pass `pass` picks.
    fn add<T>(&mut self, pass: fn(&mut Phases) -> &mut Duration, f: impl FnOnce() -> T) -> T {
        let start = std::time::Instant::now();
        let out = f();
        *pass(self) += start.elapsed();
        out
    }
}

/// Whether blocked order takes a probe sample after sample `index` of `total` (every
/// case's samples in order): `samples` of them, spread evenly over the timing pass.
fn probe_due(index: u64, total: u64, samples: u64) -> bool {
    total > 0 && (index + 1) * samples / total > index * samples / total
}

/// Measures every case under `protocol`, with the machine probe
/// ([`crate::machine_probe`]) timed beside them: in round-robin order one probe sample a
/// round, in blocked order probe samples spread between the cases' samples, so that
/// either way they span the whole timing pass.
///
/// `references` names each case's group reference (an index into `cases`): in
/// round-robin order the reference, its twin and the cases held to it then take
/// [`REFERENCE_RUN`] samples at a turn, all of them pinned to one CPU a round
/// ([`crate::pinning`]); blocked order has no twins.
pub(crate) fn measure(
    mut cases: Vec<Case>,
    references: &[Option<usize>],
    protocol: &Protocol,
    progress: &Progress,
) -> Measured {
    let total = cases.len();
    let mut phases = Phases::default();
    // The twins of the references some case is held to (in round-robin order only).
    let twin_cases: Vec<(usize, Case)> = cases
        .iter_mut()
        .enumerate()
        .filter_map(|(k, case)| {
            let body = case.twin.take()?;
            (protocol.order == SampleOrder::RoundRobin && references.contains(&Some(k))).then(
                || {
                    (
                        k,
                        Case {
                            name: format!("{} (twin)", case.name),
                            body,
                            settings: case.settings,
                            twin: None,
                            threads: None,
                        },
                    )
                },
            )
        })
        .collect();
    let mut twins_report = Vec::new();
    let (usage_tx, usage_rx) = std::sync::mpsc::channel();
    let mut probe = Running::spawn(crate::machine_probe::case(usage_tx));
    let suite_wide = protocol.suite_wide();
    probe.calibrate(suite_wide.sample_time);
    let reports = match protocol.order {
        SampleOrder::Blocked => {
            let samples = u64::from(suite_wide.samples);
            let all_samples: u64 = cases
                .iter()
                .map(|c| u64::from(protocol.for_case(c.settings).samples))
                .sum();
            let mut index = 0u64;
            cases
                .into_iter()
                .enumerate()
                .map(|(i, case)| {
                    let settings = protocol.for_case(case.settings);
                    let started = std::time::Instant::now();
                    let mut r = Running::spawn(case);
                    progress.show(&format!(
                        "[{}/{total}] calibrating {}",
                        i + 1,
                        r.report.name
                    ));
                    r.warm_up(settings.warm_up);
                    r.calibrate(settings.sample_time);
                    progress.pass("timing", Some(&r.report.name));
                    for s in 0..settings.samples {
                        progress.show(&format!(
                            "[{}/{total}] timing {}/{} {}",
                            i + 1,
                            s + 1,
                            settings.samples,
                            r.report.name
                        ));
                        r.take_sample();
                        if probe_due(index, all_samples, samples) {
                            probe.take_sample();
                        }
                        index += 1;
                    }
                    phases.timing += started.elapsed();
                    if protocol.count_plan.is_some() {
                        progress.pass("counting", Some(&r.report.name));
                    }
                    progress.show(&format!("[{}/{total}] counting {}", i + 1, r.report.name));
                    phases.add(|p| &mut p.counting, || r.count(protocol));
                    if protocol.profile.is_some() {
                        progress.pass("profile", Some(&r.report.name));
                    }
                    progress.show(&format!("[{}/{total}] profiling {}", i + 1, r.report.name));
                    phases.add(
                        |p| &mut p.sampling,
                        || r.profile(protocol, settings.profile_time),
                    );
                    r.finish()
                })
                .collect()
        }
        SampleOrder::RoundRobin => {
            let settings: Vec<crate::suite::Resolved> = cases
                .iter()
                .map(|c| protocol.for_case(c.settings))
                .collect();
            let started = std::time::Instant::now();
            let mut runs: Vec<Running> = cases
                .into_iter()
                .enumerate()
                .map(|(i, case)| {
                    progress.show(&format!("[{}/{total}] setting up {}", i + 1, case.name));
                    Running::spawn(case)
                })
                .collect();
            let mut twins: Vec<(usize, Running)> = twin_cases
                .into_iter()
                .map(|(k, case)| (k, Running::spawn(case)))
                .collect();
            for (i, r) in runs.iter_mut().enumerate() {
                progress.show(&format!(
                    "[{}/{total}] calibrating {}",
                    i + 1,
                    r.report.name
                ));
                r.warm_up(settings[i].warm_up);
                r.calibrate(settings[i].sample_time);
            }
            // A twin runs the reference's iterations a sample.
            for (k, twin) in &mut twins {
                twin.warm_up(settings[*k].warm_up);
                twin.report.iterations = runs[*k].report.iterations;
            }
            progress.pass("timing", None);
            let members: Vec<bool> = (0..runs.len())
                .map(|k| references[k].is_some() || twins.iter().any(|(r, _)| *r == k))
                .collect();
            // A case of a group with a reference takes its samples in turns of
            // REFERENCE_RUN; any other, one a round. As many rounds as the case with the
            // most; a case whose samples are taken sits the rest out.
            let turns: Vec<u32> = (0..runs.len())
                .map(|k| {
                    if members[k] {
                        settings[k].samples.div_ceil(REFERENCE_RUN as u32)
                    } else {
                        settings[k].samples
                    }
                })
                .collect();
            let rounds = turns.iter().copied().max().unwrap_or(suite_wide.samples);
            let cpus = crate::pinning::allowed_cpus();
            for s in 0..rounds {
                progress.show(&format!("timing round {}/{rounds}", s + 1));
                let order = round_order(runs.len(), &twins, s, !twins.is_empty());
                if !twins.is_empty() {
                    // Every thread held against another this round on one CPU.
                    let cpu = cpus.get(s as usize % cpus.len().max(1)).copied();
                    for k in (0..runs.len()).filter(|&k| members[k]) {
                        runs[k].pin(cpu.as_slice());
                    }
                    for (_, twin) in &twins {
                        twin.pin(cpu.as_slice());
                    }
                }
                for turn in order {
                    match turn {
                        Turn::Probe => probe.take_sample(),
                        Turn::Case(k) if s < turns[k] => {
                            let run = if members[k] { REFERENCE_RUN } else { 1 };
                            for _ in 0..run {
                                runs[k].take_sample();
                            }
                        }
                        Turn::Twin(j) if s < turns[twins[j].0] => {
                            for _ in 0..REFERENCE_RUN {
                                twins[j].1.take_sample();
                            }
                        }
                        _ => {}
                    }
                }
            }
            if !twins.is_empty() {
                for k in (0..runs.len()).filter(|&k| members[k]) {
                    runs[k].pin(&cpus);
                }
            }
            twins_report = twins
                .into_iter()
                .map(|(k, twin)| (k, twin.finish()))
                .collect();
            phases.timing += started.elapsed();
            if protocol.count_plan.is_some() {
                progress.pass("counting", None);
            }
            phases.add(
                |p| &mut p.counting,
                || {
                    for (i, r) in runs.iter_mut().enumerate() {
                        progress.show(&format!("[{}/{total}] counting {}", i + 1, r.report.name));
                        r.count(protocol);
                    }
                },
            );
            if protocol.profile.is_some() {
                progress.pass("profile", None);
            }
            phases.add(
                |p| &mut p.sampling,
                || {
                    for (i, r) in runs.iter_mut().enumerate() {
                        if protocol.profile.is_some() {
                            progress.show(&format!(
                                "[{}/{total}] profiling {}",
                                i + 1,
                                r.report.name
                            ));
                        }
                        r.profile(protocol, settings[i].profile_time);
                    }
                },
            );
            runs.into_iter().map(Running::finish).collect()
        }
    };
    progress.clear();
    let probe = probe.finish();
    Measured {
        reports,
        twins: twins_report,
        probe_waits: if probe.ok { probe.waits } else { None },
        probe_samples: if probe.ok { probe.samples } else { Vec::new() },
        probe_usage: usage_rx.try_recv().ok(),
        phases,
    }
}

/// One sampling turn of a timing round.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Turn {
    Probe,
    /// The case of that index.
    Case(usize),
    /// The twin of that index among the pass's twins.
    Twin(usize),
}

/// The turns of round `s` of `cases` cases with `twins` (each after its reference): the
/// probe's place moves a turn a round, so that it is not always timed right after the
/// same case; with `shuffle`, in an order of its own each round (seeded by `s`). Beside
/// two CPU hogs, a fixed order (even reversed every other round) left a case of the same
/// code as its reference 7% off it, with an interval that excluded one: the turn before
/// a case's, always the same, weighs on it (what the hog on its CPU got to run between).
/// Shuffled, 24 such cases in 4 runs read 0.98x to 1.04x, none outside the noise.
fn round_order<T>(cases: usize, twins: &[(usize, T)], s: u32, shuffle: bool) -> Vec<Turn> {
    let mut order: Vec<Turn> = Vec::with_capacity(cases + twins.len() + 1);
    for k in 0..cases {
        order.push(Turn::Case(k));
        order.extend(
            twins
                .iter()
                .enumerate()
                .filter(|(_, (r, _))| *r == k)
                .map(|(j, _)| Turn::Twin(j)),
        );
    }
    order.insert(s as usize % (order.len() + 1), Turn::Probe);
    if shuffle {
        fastrand::Rng::with_seed(u64::from(s)).shuffle(&mut order);
    }
    order
}

/// Consecutive samples a case of a group with a reference (the reference and its twin
/// included) takes at its turn in a round; the comparison keeps the fastest of each
/// turn (a busy machine only adds time to a sample), the case's timing every one, its
/// samples taken in as many turns as make them up (its count rounded up to a multiple
/// of this).
pub(crate) const REFERENCE_RUN: usize = 3;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::Suite;

    fn protocol(order: SampleOrder) -> Protocol {
        Protocol {
            flags: crate::suite::Settings::default(),
            suite_defaults: crate::suite::Settings::new()
                .samples(5)
                .sample_time(Duration::from_micros(200)),
            order,
            count_iterations: 1000,
            count_brackets: 4,
            count_plan: Some(CountPlan {
                tier0: true,
                ..CountPlan::default()
            }),
            profile: None,
        }
    }

    fn suite() -> Suite {
        let mut s = Suite::new("t");
        s.case("adds", |b| {
            let mut x = 0u64;
            b.iter(|| {
                x = x.wrapping_add(1);
                x
            })
        });
        s.case("panics", |b| b.iter(|| -> u32 { panic!("boom") }));
        s.case("errs", |b| {
            let mut n = 0;
            b.try_iter(|| {
                n += 1;
                if n > 3 {
                    Err("fourth call failed")
                } else {
                    Ok(n)
                }
            })
        });
        s.case("never_iterates", |_b| ());
        s.case("fails_after", |b| -> Result<(), String> {
            b.iter(|| 1);
            Err("verification failed".into())
        });
        s.case("batched", |b| {
            b.iter_batched(
                || vec![3u8, 1, 2],
                |mut v| {
                    v.sort();
                    v
                },
                |v| assert_eq!(v, [1, 2, 3]),
            )
        });
        s
    }

    fn check(reports: &[CaseReport]) {
        let by = |n: &str| reports.iter().find(|r| r.name == n).unwrap();
        let adds = by("adds");
        assert!(adds.ok && adds.iterations > 0 && adds.samples.len() == 5);
        assert!(adds
            .counted
            .iter()
            .any(|(id, v)| *id == "rusage.minor_faults" && v.is_some()));
        let batched = by("batched");
        assert!(batched.ok, "{:?}", batched.error);
        assert_eq!(batched.samples.len(), 5);
        assert!(by("panics").error.as_deref().unwrap().contains("boom"));
        assert!(by("errs")
            .error
            .as_deref()
            .unwrap()
            .contains("fourth call failed"));
        assert!(by("never_iterates")
            .error
            .as_deref()
            .unwrap()
            .contains("iter"));
        assert_eq!(
            by("fails_after").error.as_deref(),
            Some("verification failed")
        );
    }

    #[test]
    fn a_round_takes_every_turn_once_the_probe_moving_and_shuffled_with_twins() {
        let twins = [(1usize, ())];
        let plain = round_order::<()>(3, &[], 2, false);
        assert_eq!(
            plain,
            [Turn::Case(0), Turn::Case(1), Turn::Probe, Turn::Case(2)]
        );
        let with_twin = round_order(3, &twins, 0, false);
        assert_eq!(
            with_twin,
            [
                Turn::Probe,
                Turn::Case(0),
                Turn::Case(1),
                Turn::Twin(0),
                Turn::Case(2)
            ]
        );
        let mut orders = Vec::new();
        for s in 0..8 {
            let mut order = round_order(3, &twins, s, true);
            orders.push(order.clone());
            order.sort_by_key(|t| format!("{t:?}"));
            assert_eq!(
                order,
                [
                    Turn::Case(0),
                    Turn::Case(1),
                    Turn::Case(2),
                    Turn::Probe,
                    Turn::Twin(0)
                ]
            );
        }
        // Shuffled: the reference's place changes from round to round.
        let at = |o: &Vec<Turn>| o.iter().position(|t| *t == Turn::Case(1));
        let firsts: std::collections::BTreeSet<_> = orders.iter().map(at).collect();
        assert!(firsts.len() > 2, "{orders:?}");
        assert_eq!(round_order(3, &twins, 5, true), orders[5]);
    }

    /// The test suite measured in `order`, with no progress shown: its reports checked,
    /// and the machine probe sampled as often as each case (5 samples).
    fn measures_and_isolates_failures(order: SampleOrder) {
        let cases = suite().cases;
        let none = vec![None; cases.len()];
        let measured = measure(
            cases,
            &none,
            &protocol(order),
            &Progress {
                enabled: false,
                passes: false,
            },
        );
        check(&measured.reports);
        assert_eq!(measured.probe_samples.len(), 5);
    }

    #[test]
    fn round_robin_measures_and_isolates_failures() {
        measures_and_isolates_failures(SampleOrder::RoundRobin);
    }

    #[test]
    fn blocked_measures_and_isolates_failures() {
        measures_and_isolates_failures(SampleOrder::Blocked);
    }

    #[test]
    fn blocked_order_spreads_the_probe_samples_over_the_pass() {
        // 3 cases of 4 samples: 4 probe samples, one every third case sample.
        let due: Vec<u64> = (0..12).filter(|&i| probe_due(i, 12, 4)).collect();
        assert_eq!(due, [2, 5, 8, 11]);
        // One case: a probe sample after each of its samples.
        assert_eq!((0..5).filter(|&i| probe_due(i, 5, 5)).count(), 5);
        assert!(!probe_due(0, 0, 5));
    }

    #[test]
    fn smoke_runs_each_body_once() {
        use std::sync::atomic::{AtomicU32, Ordering};
        use std::sync::Arc;
        let calls = Arc::new(AtomicU32::new(0));
        let mut s = Suite::new("t");
        let c = calls.clone();
        s.case("once", move |b| {
            b.iter(|| c.fetch_add(1, Ordering::SeqCst));
        });
        let reports = smoke(s.cases, |_| {});
        assert!(reports[0].ok);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
