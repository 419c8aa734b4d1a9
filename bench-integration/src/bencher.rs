//! The [`Bencher`] a case receives, and the protocol between a case's thread and the
//! scheduler.
//!
//! Each case runs on a thread of its own. Its function does its setup once, then calls
//! one of the `iter` methods, which does not return until the scheduler is done with the
//! case: it waits for commands (run once, take a timed sample of N iterations, count N
//! iterations under the counting tiers), answers each, and returns on `Finish`. So setup
//! runs once per case however many samples are taken, and the scheduler can interleave
//! the samples of several cases (round-robin order) while each keeps its state.

mod asynchronous;

pub use asynchronous::{AsyncBencher, AsyncExecutor};

use std::fmt::Display;
use std::hint::black_box;
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

use std::path::PathBuf;

use sparkles_perf_data::atomic_write::interrupted;
use sparkles_sampler::session::{SamplingConfig, Session, Target};

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::tiers::perf::{Tier, TierPlan};
use crate::tiers::tier0::Tier0;
use sparkles_results::counting::CountingReport;
use sparkles_results::metric::{MetricSeries, MetricValue};
use sparkles_results::profile::ProfileSummary;
use sparkles_results::throughput::Throughput;

/// Which counting tiers a counting pass opens.
#[derive(Debug, Clone, Default)]
pub(crate) struct CountPlan {
    /// getrusage(2) and /proc/self/io.
    pub tier0: bool,
    /// perf_event counters.
    pub perf: Option<Arc<TierPlan>>,
    /// Syscall tracepoints.
    pub syscalls: Option<Arc<TierPlan>>,
    /// callgrind's collection, toggled by client requests: in a child under valgrind
    /// only, every bracket a base run and a full one, each dumped under the case's index
    /// in the parent's run ([`crate::tiers::valgrind`]).
    pub valgrind: Option<u32>,
    /// With `valgrind`, the first bracket's number: a case counted again goes on from the
    /// brackets its first count took.
    pub valgrind_from: u32,
    /// The counting allocator ([`crate::tiers::alloc`]).
    pub alloc: bool,
}

/// What the scheduler asks of a case's thread.
#[derive(Debug)]
pub(crate) enum Command {
    /// Run the body once, untimed (smoke mode).
    Smoke,
    /// Time `iterations` iterations with nothing else enabled.
    Sample { iterations: u64 },
    /// Run `iterations` iterations with the tiers in `plan` bracketing the body.
    Count {
        iterations: u64,
        brackets: u32,
        plan: CountPlan,
    },
    /// Re-run the body under the sampler and write the capture.
    Profile(Box<ProfilePlan>),
    /// The scheduler is done with this case: the `iter` call returns.
    Finish,
}

/// One case's profile pass.
#[derive(Debug, Clone)]
pub(crate) struct ProfilePlan {
    /// What to sample.
    pub sampling: crate::profiling::plan::ProfileSampling,
    /// How long the body runs under the sampler.
    pub duration: Duration,
    /// Iterations between checks of the clock.
    pub iterations: u64,
    /// Where the capture goes.
    pub path: PathBuf,
}

/// What a case's thread answers.
#[derive(Debug)]
pub(crate) enum Reply {
    /// The case finished its setup and is serving commands.
    Ready {
        throughput: Option<Throughput>,
        /// The case's thread's kernel id, where it can be pinned ([`crate::pinning`]).
        thread: Option<i32>,
    },
    /// The body ran once.
    Smoked,
    /// A timed sample, and how long the case's thread waited on a run queue for a CPU
    /// inside it (where the kernel says).
    Sampled {
        elapsed: Duration,
        wait: Option<Duration>,
    },
    /// Per-iteration values of the counting pass, and how the perf_event tiers counted.
    Counted {
        values: Vec<MetricValue>,
        brackets: Vec<MetricSeries>,
        report: Box<CountingReport>,
    },
    /// The profile pass's outcome.
    Profiled(Box<ProfileSummary>),
    /// The body returned an error (`try_iter`); the case serves nothing more.
    BodyFailed(String),
    /// The case function returned (`Ok`) or failed (`Err`: its error or panic message).
    Ended(Result<(), String>),
}

/// How many inputs `iter_batched` prepares before timing them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchSize {
    /// Up to this many inputs at once (at least one). Larger batches make the timer's own
    /// cost vanish for small bodies; smaller ones bound the memory held by inputs.
    UpTo(u64),
    /// One input at a time: for inputs too large to hold more than one of. Each
    /// iteration is timed on its own, so the clock's cost (tens of ns) is in the result.
    PerIteration,
}

impl BatchSize {
    /// The default: up to 1024 inputs per timed batch.
    pub const DEFAULT: BatchSize = BatchSize::UpTo(1024);

    fn limit(self) -> u64 {
        match self {
            BatchSize::UpTo(n) => n.max(1),
            BatchSize::PerIteration => 1,
        }
    }

    /// An empty buffer for a batch's inputs or outputs, made to hold one batch (up to
    /// 1024; a larger batch grows it once).
    fn buffer<T>(self) -> Vec<T> {
        Vec::with_capacity(usize::try_from(self.limit()).unwrap_or(1).min(1024))
    }
}

/// The counting tiers open for one counting pass, bracketing only the timed regions.
/// Nested so that each tier's own bracketing stays outside the others' regions as far as
/// it can: tier 0 outermost, the syscall tracepoints innermost.
struct Meter {
    tier0: Option<Tier0>,
    perf: Option<Tier>,
    syscalls: Option<Tier>,
    /// callgrind collects between resume and pause (innermost of all).
    valgrind: bool,
    /// The counting allocator, armed between resume and pause (inside the other tiers:
    /// their own reads allocate nothing it counts).
    alloc: Option<crate::tiers::alloc::AllocMeter>,
    /// A timed sample's run-queue wait (outermost: its reads of /proc are no tier's).
    wait: Option<crate::busy::WaitTally>,
}

impl Meter {
    fn idle() -> Meter {
        Meter {
            tier0: None,
            perf: None,
            syscalls: None,
            valgrind: false,
            alloc: None,
            wait: None,
        }
    }

    /// A timed sample's: its timed regions' run-queue wait, where `clock` reads it.
    fn timing(clock: Option<crate::busy::WaitClock>) -> Meter {
        Meter {
            wait: clock.map(crate::busy::WaitTally::new),
            ..Meter::idle()
        }
    }

    fn open(plan: &CountPlan) -> Meter {
        Meter {
            tier0: plan.tier0.then(Tier0::open),
            perf: plan.perf.as_ref().map(Tier::open),
            syscalls: plan.syscalls.as_ref().map(Tier::open),
            valgrind: plan.valgrind.is_some(),
            alloc: plan.alloc.then(crate::tiers::alloc::AllocMeter::open),
            wait: None,
        }
    }

    #[inline]
    fn resume(&mut self) {
        if let Some(w) = &mut self.wait {
            w.resume();
        }
        if self.valgrind {
            crate::tiers::valgrind::toggle_collect();
        }
        if let Some(t) = &mut self.tier0 {
            t.resume();
        }
        if let Some(t) = &mut self.perf {
            t.resume();
        }
        if let Some(t) = &mut self.syscalls {
            t.resume();
        }
        if let Some(a) = &mut self.alloc {
            a.resume();
        }
    }

    #[inline]
    fn pause(&mut self) {
        if let Some(a) = &mut self.alloc {
            a.pause();
        }
        if let Some(t) = &mut self.syscalls {
            t.pause();
        }
        if let Some(t) = &mut self.perf {
            t.pause();
        }
        if let Some(t) = &mut self.tier0 {
            t.pause();
        }
        if self.valgrind {
            crate::tiers::valgrind::toggle_collect();
        }
        if let Some(w) = &mut self.wait {
            w.pause();
        }
    }

    fn values(&self, iterations: u64) -> (Vec<MetricValue>, CountingReport) {
        let mut values = self
            .tier0
            .as_ref()
            .map(|t| t.values(iterations))
            .unwrap_or_default();
        if let Some(a) = &self.alloc {
            values.extend(a.values(iterations));
        }
        let mut report = CountingReport::default();
        if let Some(t) = &self.perf {
            let (v, r) = t.finish(iterations);
            values.extend(v);
            report.perf = Some(r);
        }
        if let Some(t) = &self.syscalls {
            let (v, r) = t.finish(iterations);
            values.extend(v);
            report.syscalls = Some(r);
        }
        (values, report)
    }
}

/// A body the bencher can run `n` times, returning the time spent in the body alone.
trait Routine {
    fn run(&mut self, iterations: u64, meter: &mut Meter) -> Result<Duration, String>;
}

struct Plain<F>(F);

impl<O, F: FnMut() -> O> Routine for Plain<F> {
    fn run(&mut self, iterations: u64, meter: &mut Meter) -> Result<Duration, String> {
        meter.resume();
        let start = Instant::now();
        for _ in 0..iterations {
            black_box((self.0)());
        }
        let elapsed = start.elapsed();
        meter.pause();
        Ok(elapsed)
    }
}

struct Fallible<F>(F);

impl<O, E: Display, F: FnMut() -> Result<O, E>> Routine for Fallible<F> {
    fn run(&mut self, iterations: u64, meter: &mut Meter) -> Result<Duration, String> {
        meter.resume();
        let start = Instant::now();
        for _ in 0..iterations {
            if let Err(e) = black_box((self.0)()) {
                meter.pause();
                return Err(e.to_string());
            }
        }
        let elapsed = start.elapsed();
        meter.pause();
        Ok(elapsed)
    }
}

/// A thread sweep's body ([`Bencher::iter_threads`]): each run, `threads - 1` helper
/// threads started (untimed, so that the counting tiers' inherited counters and the
/// profile's follow them) and waiting, then released together with the case's thread,
/// every one calling the body `iterations` times; the run's time is from the release to
/// the last thread's end. callgrind collects per thread: each helper toggles its own.
struct Threaded<F> {
    body: F,
    threads: usize,
}

/// Where a sweep's threads meet: how many are waiting to start, whether they go (or
/// give up: a helper could not be started), and how many are done with their share.
/// They wait for the start spinning, yielding their CPU between looks: a thread woken
/// from a sleep is put on the CPU of the thread that woke it, so that two threads
/// released by a condition variable ran one after the other on one CPU for the first
/// milliseconds of each sample (work of each thread's own read 1.8x per thread at two
/// threads on two idle CPUs). The case's thread sleeps on `done` for the end.
#[derive(Default)]
struct Gate {
    ready: std::sync::atomic::AtomicUsize,
    /// 0 wait, 1 go, 2 give up.
    go: std::sync::atomic::AtomicU8,
    /// Helpers done with their share, for the case's thread to sleep on.
    finished: std::sync::Mutex<usize>,
    done: std::sync::Condvar,
}

impl Gate {
    /// A helper is done with its share.
    fn finish(&self) {
        *self.finished.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.done.notify_one();
    }

    /// Sleeps until `helpers` are done with their shares.
    fn wait_finished(&self, helpers: usize) {
        let mut finished = self.finished.lock().unwrap_or_else(|e| e.into_inner());
        while *finished < helpers {
            finished = self.done.wait(finished).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Spins, yielding, until `until` holds.
fn spin_until(until: impl Fn() -> bool) {
    while !until() {
        std::hint::spin_loop();
        std::thread::yield_now();
    }
}

/// One thread's share of a sweep's run: the body `iterations` times. A function of the
/// harness's own, never inlined, so that a profile folds it into the case's root as it
/// does the plain timing loop (the body inlined into it is the case's own time, and its
/// functions the `inlined:` line's), where inlined into `std::thread::scope` and the
/// helpers' thread start it read as those std functions' self time.
#[inline(never)]
fn sweep_share<O, F: Fn() -> O>(body: &F, iterations: u64) {
    for _ in 0..iterations {
        black_box(body());
    }
}

/// A thread's share of a sweep's run: its end, or its panic.
type Share = Result<Instant, Box<dyn std::any::Any + Send>>;

impl<O, F: Fn() -> O + Sync> Routine for Threaded<F> {
    fn run(&mut self, iterations: u64, meter: &mut Meter) -> Result<Duration, String> {
        let body = &self.body;
        let threads = self.threads.max(1);
        let valgrind = meter.valgrind;
        // The case thread's run-queue wait says nothing of a run on several threads.
        if threads > 1 {
            meter.wait = None;
        }
        let share = |collect: bool| -> Share {
            if collect {
                crate::tiers::valgrind::toggle_collect();
            }
            let ran = catch_unwind(AssertUnwindSafe(|| sweep_share(body, iterations)));
            let end = Instant::now();
            if collect {
                crate::tiers::valgrind::toggle_collect();
            }
            ran.map(|()| end)
        };
        use std::sync::atomic::Ordering::SeqCst;
        let gate = Gate::default();
        std::thread::scope(|scope| {
            let mut helpers = Vec::with_capacity(threads - 1);
            let mut failed = None;
            for k in 1..threads {
                let (gate, share) = (&gate, &share);
                let spawned = std::thread::Builder::new()
                    .name(format!("sweep-{k}"))
                    .spawn_scoped(scope, move || -> Option<Share> {
                        gate.ready.fetch_add(1, SeqCst);
                        spin_until(|| gate.go.load(SeqCst) != 0);
                        if gate.go.load(SeqCst) != 1 {
                            return None;
                        }
                        let ran = share(valgrind);
                        gate.finish();
                        Some(ran)
                    });
                match spawned {
                    Ok(h) => helpers.push(h),
                    Err(e) => {
                        failed = Some(format!(
                            "could not start thread {} of the sweep's {threads}: {e}",
                            k + 1
                        ));
                        break;
                    }
                }
            }
            if let Some(why) = failed {
                // The helpers started are told to give up; the scope joins them.
                gate.go.store(2, SeqCst);
                return Err(why);
            }
            let started = helpers.len();
            spin_until(|| gate.ready.load(SeqCst) == started);
            meter.resume();
            let start = Instant::now();
            gate.go.store(1, SeqCst);
            let own = share(false);
            // Done with its share, the case's thread sleeps until the helpers are done
            // with theirs (a thread spinning here took a CPU from them where threads
            // outnumber CPUs), and the tiers stop before the helpers end (their exit is
            // no iteration's); the time is to the last share's end, each taken by its
            // thread.
            gate.wait_finished(started);
            meter.pause();
            let shares: Vec<Option<Share>> = std::iter::once(Some(own))
                .chain(
                    helpers
                        .into_iter()
                        .map(|h| h.join().unwrap_or_else(|p| Some(Err(p)))),
                )
                .collect();
            let mut last = start;
            let mut panicked = None;
            for ran in shares {
                match ran {
                    Some(Ok(end)) => last = last.max(end),
                    Some(Err(p)) => {
                        panicked.get_or_insert(p);
                    }
                    None => {}
                }
            }
            match panicked {
                Some(p) => std::panic::resume_unwind(p),
                None => Ok(last - start),
            }
        })
    }
}

struct Batched<I, O, S, R, D> {
    setup: S,
    routine: R,
    release: D,
    batch: BatchSize,
    inputs: Vec<I>,
    outputs: Vec<O>,
}

impl<I, O, S, R, D> Routine for Batched<I, O, S, R, D>
where
    S: FnMut() -> I,
    R: FnMut(I) -> O,
    D: FnMut(O),
{
    fn run(&mut self, iterations: u64, meter: &mut Meter) -> Result<Duration, String> {
        let routine = &mut self.routine;
        Ok(in_batches(
            iterations,
            self.batch,
            (&mut self.inputs, &mut self.outputs),
            &mut self.setup,
            &mut self.release,
            |inputs, outputs| {
                meter.resume();
                let start = Instant::now();
                for input in inputs.drain(..) {
                    outputs.push(black_box(routine(black_box(input))));
                }
                let elapsed = start.elapsed();
                meter.pause();
                elapsed
            },
        ))
    }
}

/// `iterations` run in batches of at most `batch`: each batch's inputs made by `setup`
/// into `buffers.0`, then `timed` (which drains them into `buffers.1`, its own region
/// timed and metered), then each output handed to `release`; the timed regions' total.
/// At least one batch: a run of no iterations brackets an empty region, as the other
/// routines do.
fn in_batches<I, O>(
    iterations: u64,
    batch: BatchSize,
    buffers: (&mut Vec<I>, &mut Vec<O>),
    setup: &mut impl FnMut() -> I,
    release: &mut impl FnMut(O),
    mut timed: impl FnMut(&mut Vec<I>, &mut Vec<O>) -> Duration,
) -> Duration {
    let (inputs, outputs) = buffers;
    let mut total = Duration::ZERO;
    let mut remaining = iterations;
    loop {
        let k = remaining.min(batch.limit());
        inputs.extend((0..k).map(|_| setup()));
        total += timed(inputs, outputs);
        for output in outputs.drain(..) {
            release(output);
        }
        remaining -= k;
        if remaining == 0 {
            break;
        }
    }
    total
}

/// What a case function receives: declare throughput, then hand the body to one `iter`
/// method.
#[derive(Debug)]
pub struct Bencher {
    case: String,
    commands: Receiver<Command>,
    replies: Sender<Reply>,
    throughput: Option<Throughput>,
    served: bool,
    /// A thread sweep's case ([`crate::Suite::case_threads`]): the threads its body runs
    /// on at once.
    threads: Option<usize>,
}

impl Bencher {
    pub(crate) fn new(
        case: String,
        commands: Receiver<Command>,
        replies: Sender<Reply>,
        threads: Option<usize>,
    ) -> Self {
        Bencher {
            case,
            commands,
            replies,
            throughput: None,
            served: false,
            threads,
        }
    }

    /// The threads the case's body runs on at once: its thread sweep's count, else 1.
    pub fn threads(&self) -> usize {
        self.threads.unwrap_or(1)
    }

    /// Declares how much work one iteration does; the report adds a rate column computed
    /// against the timed median. Call it before `iter`.
    pub fn throughput(&mut self, throughput: Throughput) -> &mut Self {
        self.throughput = Some(throughput);
        self
    }

    /// Measures `body`: every call of it is one iteration, its result kept alive with
    /// [`black_box`].
    pub fn iter<O, F: FnMut() -> O>(&mut self, body: F) {
        self.serve(&mut Plain(body), false);
    }

    /// Measures `body` on [`Bencher::threads`] threads at once (a thread sweep's case,
    /// [`crate::Suite::case_threads`]; one thread in any other case): each sample starts
    /// them, releases them together, and ends when the last is done; every thread calls
    /// the body the sample's iterations' count of times. The time is per iteration per
    /// thread, and the rate column counts the calls of all threads (the declared
    /// throughput times the threads; calls, where none is declared).
    pub fn iter_threads<O, F: Fn() -> O + Sync>(&mut self, body: F) {
        let threads = self.threads();
        if self.threads.is_some() {
            let per_call = self.throughput.unwrap_or(Throughput::Elements(1));
            self.throughput = Some(per_call.times(threads as u64));
        }
        self.serve(&mut Threaded { body, threads }, true);
    }

    /// Measures a body that can fail: the first `Err` stops the case, which is reported
    /// `ok: false` with the error's message.
    pub fn try_iter<O, E: Display, F: FnMut() -> Result<O, E>>(&mut self, body: F) {
        self.serve(&mut Fallible(body), false);
    }

    /// Measures `routine` alone: `setup` makes each iteration's input and `release`
    /// receives each output (to verify, or to drop), both outside the timed region.
    pub fn iter_batched<I, O, S, R, D>(&mut self, setup: S, routine: R, release: D)
    where
        S: FnMut() -> I,
        R: FnMut(I) -> O,
        D: FnMut(O),
    {
        self.iter_batched_sized(BatchSize::DEFAULT, setup, routine, release);
    }

    /// [`Bencher::iter_batched`] with an explicit bound on the inputs prepared at once.
    pub fn iter_batched_sized<I, O, S, R, D>(
        &mut self,
        batch: BatchSize,
        setup: S,
        routine: R,
        release: D,
    ) where
        S: FnMut() -> I,
        R: FnMut(I) -> O,
        D: FnMut(O),
    {
        self.serve(
            &mut Batched {
                setup,
                routine,
                release,
                batch,
                inputs: batch.buffer(),
                outputs: batch.buffer(),
            },
            false,
        );
    }

    /// Serves the scheduler's commands with `routine` (`threaded`: a thread sweep's
    /// form, which a sweep's case must call).
    fn serve(&mut self, routine: &mut dyn Routine, threaded: bool) {
        if self.served {
            eprintln!(
                "sparkles: case '{}' called iter more than once; only the first call is measured",
                self.case
            );
            return;
        }
        self.served = true;
        if let (Some(n), false) = (self.threads, threaded) {
            let _ = self.replies.send(Reply::BodyFailed(format!(
                "case '{}' is a thread sweep's ({n} threads at once): its body must be shared by them, so call b.iter_threads(|| …) (a body that is Fn + Sync) instead of iter, try_iter or iter_batched",
                self.case
            )));
            return;
        }
        if self
            .replies
            .send(Reply::Ready {
                throughput: self.throughput,
                thread: crate::pinning::this_thread(),
            })
            .is_err()
        {
            return;
        }
        // This thread's run-queue wait, read around each timed sample's regions.
        let mut wait_clock = crate::busy::WaitClock::open();
        while let Ok(command) = self.commands.recv() {
            let reply = match command {
                Command::Smoke => match routine.run(1, &mut Meter::idle()) {
                    Ok(_) => Reply::Smoked,
                    Err(e) => Reply::BodyFailed(e),
                },
                Command::Sample { iterations } => {
                    let mut meter = Meter::timing(wait_clock.take());
                    let ran = routine.run(iterations, &mut meter);
                    let wait = meter.wait.take().and_then(|tally| {
                        let (wait, clock) = tally.finish();
                        wait_clock = Some(clock);
                        wait
                    });
                    match ran {
                        Ok(elapsed) => Reply::Sampled { elapsed, wait },
                        Err(e) => Reply::BodyFailed(e),
                    }
                }
                Command::Count {
                    iterations,
                    brackets,
                    plan,
                } => match count_in_brackets(routine, iterations, brackets, &plan) {
                    Ok((values, brackets, report)) => Reply::Counted {
                        values,
                        brackets,
                        report: Box::new(report),
                    },
                    Err(e) => Reply::BodyFailed(e),
                },
                Command::Profile(plan) => match profile_pass(routine, &plan) {
                    Ok(summary) => Reply::Profiled(Box::new(summary)),
                    Err(e) => Reply::BodyFailed(e),
                },
                Command::Finish => return,
            };
            let failed = matches!(reply, Reply::BodyFailed(_));
            if self.replies.send(reply).is_err() || failed {
                return;
            }
        }
    }
}

/// The counting pass: `brackets` runs of `iterations` iterations, each counted by counters
/// of its own. Each metric's per-iteration value per bracket, and their medians; the
/// tiers' account of the first bracket.
fn count_in_brackets(
    routine: &mut dyn Routine,
    iterations: u64,
    brackets: u32,
    plan: &CountPlan,
) -> Result<Counted, String> {
    if let Some(case) = plan.valgrind {
        return count_under_callgrind(routine, iterations, plan.valgrind_from..brackets, case);
    }
    let mut per_metric: Vec<(MetricId, Vec<f64>)> = Vec::new();
    let mut first_report = None;
    for _ in 0..brackets.max(1) {
        // A SIGINT or SIGTERM ends the run, which does not keep these counts.
        if interrupted().is_some() {
            break;
        }
        let mut meter = Meter::open(plan);
        routine.run(iterations, &mut meter)?;
        let (values, report) = meter.values(iterations);
        first_report.get_or_insert(report);
        for (id, value) in values {
            match per_metric.iter_mut().find(|(i, _)| *i == id) {
                Some((_, v)) => v.extend(value),
                None => per_metric.push((id, value.into_iter().collect())),
            }
        }
    }
    let medians = per_metric
        .iter()
        .map(|(id, v)| {
            (
                id.clone(),
                sparkles_results::stats::Summary::of(v).map(|s| s.median),
            )
        })
        .collect();
    let brackets = per_metric
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(id, values)| MetricSeries {
            id: id.to_string(),
            values,
        })
        .collect();
    Ok((medians, brackets, first_report.unwrap_or_default()))
}

/// The valgrind child's counting pass: each bracket of `brackets` a run of one iteration
/// and one of `iterations + 1`, callgrind collecting inside the timed loop only, each run
/// dumped with its label for the parent to read ([`crate::tiers::valgrind::dump_labels`]).
/// The difference is `iterations` iterations exactly, whatever `iterations` is: both runs
/// enter and leave the loop the same way. (A base run of no iteration against a full run
/// of `n`, a third of the cost where `n` is 1, was tried: it read 3 to 6 instructions a
/// run more, so a count depended on `n`, and a build slow enough to take fewer
/// iterations read more instructions for the same code.)
fn count_under_callgrind(
    routine: &mut dyn Routine,
    iterations: u64,
    brackets: std::ops::Range<u32>,
    case: u32,
) -> Result<Counted, String> {
    let plan = CountPlan {
        valgrind: Some(case),
        ..CountPlan::default()
    };
    // Every collected run starts from the same state: the labels are made first, so that
    // nothing allocates between two runs (a label made between them left the allocator's
    // small-block caches otherwise before every run but the first: base64's first
    // brackets read 30 to 200 instructions off the rest, and took every bracket), and
    // one iteration runs uncollected after the command's exchange (the channel's blocks
    // freed on this thread; with a first run collected there, 67 to 1,600 off). A sleep
    // lets the asking thread park first, whose receive spins and yields before it does,
    // under valgrind's one thread at a time. Where a first bracket still differs from the
    // second, the case takes every bracket: a median, not a wrong count.
    let labels = crate::tiers::valgrind::dump_labels(case, brackets);
    std::thread::sleep(Duration::from_millis(30));
    routine.run(1, &mut Meter::idle())?;
    for label in &labels {
        for (full, label) in [false, true].into_iter().zip(label) {
            crate::tiers::valgrind::zero_stats();
            let n = if full { iterations + 1 } else { 1 };
            routine.run(n, &mut Meter::open(&plan))?;
            crate::tiers::valgrind::dump_stats_at(label);
        }
    }
    Ok((Vec::new(), Vec::new(), CountingReport::default()))
}

/// A metric's id as the tiers name it.
type MetricId = std::borrow::Cow<'static, str>;

/// What a counting pass gives: each metric's median, its value per bracket, and the
/// tiers' account.
type Counted = (Vec<MetricValue>, Vec<MetricSeries>, CountingReport);

/// Runs the body under the sampler for the plan's duration. A sampler that cannot start is
/// the summary's error (the case still passes); a body that fails is the case's failure.
fn profile_pass(routine: &mut dyn Routine, plan: &ProfilePlan) -> Result<ProfileSummary, String> {
    let config = match &plan.sampling {
        crate::profiling::plan::ProfileSampling::Perf(config) => config,
        crate::profiling::plan::ProfileSampling::Alloc(alloc) => {
            return alloc_profile_pass(routine, plan, alloc)
        }
    };
    let system = sparkles_sampler::system::System::probe();
    let mut summary = ProfileSummary {
        event: config.name(),
        ..ProfileSummary::default()
    };
    // Streamed to the capture's file as it is taken: memory holds the ring buffers and a
    // chunk of records, however long the pass.
    let sampling = SamplingConfig {
        stream_to: Some(plan.path.clone()),
        ..config.clone()
    };
    let session = match Session::start(&sampling, Target::CurrentThread, &system) {
        Ok(s) => s,
        Err(e) => {
            // The capture's file could not be started: an output asked for, not a
            // capability the machine lacks.
            if matches!(e, sparkles_sampler::Error::Capture(_)) {
                summary.not_written.push(e.to_string());
            }
            summary.error = Some(e.to_string());
            return Ok(summary);
        }
    };
    let start = Instant::now();
    let mut failure = None;
    while start.elapsed() < plan.duration && interrupted().is_none() {
        if let Err(e) = routine.run(plan.iterations, &mut Meter::idle()) {
            failure = Some(e);
            break;
        }
        summary.iterations += plan.iterations;
    }
    summary.seconds = start.elapsed().as_secs_f64();
    let mut capture = session.finish();
    if let Some(e) = failure {
        return Err(e);
    }
    // Interrupted: the capture is dropped unfinished (its temporary file removed), the
    // previous one left as it was, with its page table.
    if let Some(signal) = interrupted() {
        summary.error = Some(format!("interrupted by {signal}: no capture"));
        return Ok(summary);
    }
    summary.samples = capture.samples;
    summary.lost = capture.lost;
    summary.lost_samples = capture.lost_samples;
    summary.throttled = capture.throttled;
    summary.stack_bytes_saved = capture.writer.stack_bytes_saved;
    summary.notes = capture
        .uncovered
        .iter()
        .chain(&capture.restrictions)
        .map(ToString::to_string)
        .collect();
    match capture.writer.write(&plan.path) {
        Ok(written) => {
            summary.bytes = written.bytes;
            summary.record_bytes = written.record_bytes;
            summary.capture = Some(plan.path.display().to_string());
        }
        Err(e) => {
            summary.error = Some(e.to_string());
            summary.not_written.push(e.to_string());
        }
    }
    // The nodes of the sampled data pages, asked while the body ran: beside the capture,
    // where reports find them. An old table of another run must not be taken for this one.
    let _ = std::fs::remove_file(sparkles_perf_data::pages::PageNodes::sidecar(&plan.path));
    if let Some(pages) = &capture.pages {
        if let Err(e) = pages.write_beside(&plan.path) {
            summary.notes.push(format!("page nodes not written: {e}"));
        }
    }
    Ok(summary)
}

/// `--profile=alloc`'s pass: the body for the plan's duration, one iteration at a time
/// (so that a sampled block still live when its iteration ends is told from one freed
/// in it), the counting allocator sampling; then the capture written. An allocator not
/// installed is the summary's error (the case still passes).
fn alloc_profile_pass(
    routine: &mut dyn Routine,
    plan: &ProfilePlan,
    alloc: &crate::tiers::alloc::sampling::Plan,
) -> Result<ProfileSummary, String> {
    use crate::tiers::alloc::sampling;
    let mut summary = ProfileSummary {
        event: sampling::EVENT.to_string(),
        ..ProfileSummary::default()
    };
    if let Err(e) = sampling::start(alloc) {
        summary.error = Some(e);
        return Ok(summary);
    }
    // Ten rounds, each the loop sampled and unsampled for a twentieth of the time: what
    // sampling costs is the median over rounds of the sampled time per iteration over the
    // unsampled, the machine's drift shared by both. Switched between iterations only, so
    // a block freed within its iteration is always seen freed.
    const ROUNDS: u32 = 10;
    let mut failure = None;
    let mut unsampled = 0u64;
    let mut sampled_time = Duration::ZERO;
    let mut full = false;
    // Each round's time per iteration, unsampled and sampled, and their ratios.
    let mut ratios: Vec<f64> = Vec::new();
    'rounds: for round in 0..ROUNDS {
        let mut round_ns = [0.0f64; 2];
        // Which comes first alternates: a body whose time per iteration depends on where
        // in a round it runs (threads handing work over settle) weighs on both alike.
        for sampled in [round % 2 == 1, round % 2 == 0] {
            let slice = plan.duration / (2 * ROUNDS);
            let before = if sampled {
                summary.iterations
            } else {
                unsampled
            };
            sampling::pause(!sampled);
            let start = Instant::now();
            while start.elapsed() < slice && interrupted().is_none() {
                if let Err(e) = routine.run(1, &mut Meter::idle()) {
                    failure = Some(e);
                    break 'rounds;
                }
                if sampled {
                    summary.iterations += 1;
                    sampling::next_iteration();
                    // Samples past the arena's end are dropped: the pass ends with the
                    // iterations its samples cover.
                    if sampling::arena_full() {
                        full = true;
                        sampled_time += start.elapsed();
                        break 'rounds;
                    }
                } else {
                    unsampled += 1;
                }
            }
            let ns = start.elapsed().as_secs_f64() * 1e9;
            if sampled {
                sampled_time += start.elapsed();
                round_ns[1] = ns / (summary.iterations - before).max(1) as f64;
            } else {
                round_ns[0] = ns / (unsampled - before).max(1) as f64;
            }
        }
        if round_ns[0] > 0.0 {
            ratios.push(round_ns[1] / round_ns[0]);
        }
    }
    sampling::pause(true);
    if full {
        summary.notes.push(format!(
            "the allocation pass ended after {} iterations ({:.2} s sampled): the sample arena was full (a larger --profile-alloc-mean takes fewer samples)",
            summary.iterations,
            sampled_time.as_secs_f64()
        ));
    }
    summary.seconds = sampled_time.as_secs_f64();
    // Stopped whatever happened; the capture written only for a whole pass.
    let _ = std::fs::remove_file(&plan.path);
    if let Some(e) = failure {
        sampling::stop();
        return Err(e);
    }
    if let Some(signal) = interrupted() {
        sampling::stop();
        summary.error = Some(format!("interrupted by {signal}: no capture"));
        return Ok(summary);
    }
    match sampling::finish(alloc, &plan.path) {
        Ok((taken, bytes)) => {
            summary.samples = taken.samples;
            summary.bytes = bytes;
            summary.capture = Some(plan.path.display().to_string());
            let per = |b: u64| b as f64 / summary.iterations.max(1) as f64;
            summary.alloc = Some(sparkles_results::profile::AllocProfile {
                mean_bytes: alloc.mean,
                bytes_per_iteration: per(taken.bytes),
                live_samples: taken.live,
                live_bytes_per_iteration: per(taken.live_bytes),
                dropped: taken.dropped,
                untracked: taken.untracked,
                slowdown: sparkles_results::stats::Summary::of(&ratios).map(|s| s.median - 1.0),
                ..Default::default()
            });

            if taken.untracked > 0 {
                summary.notes.push(format!(
                    "{} allocation samples not matched to their frees (the table of sampled blocks was full where they fell): they are in neither live nor freed counts",
                    taken.untracked
                ));
            }
            if taken.samples == 0 {
                summary.notes.push(format!(
                    "no allocation sampled: the body allocated less than one interval ({} on average) in {} iterations",
                    sparkles_results::units::format_bytes(alloc.mean as f64),
                    summary.iterations
                ));
            }
        }
        Err(e) => summary.error = Some(e),
    }
    Ok(summary)
}
