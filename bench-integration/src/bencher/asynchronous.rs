//! Async bodies, spelled as criterion spells them so that benches port unchanged:
//! `b.to_async(&runtime).iter(|| async { … })`.
//!
//! The case builds its runtime once, outside the timing, and hands it to
//! [`Bencher::to_async`]. Each timed sample is one [`AsyncExecutor::block_on`] of a future
//! that starts its clock inside, awaits the body its iterations' count of times and stops
//! the clock before it returns: what a runtime does to enter and leave `block_on` (its
//! start, a multi-thread runtime's hand-off to the calling thread) is outside every
//! sample, and the timing covers the awaited bodies alone. The counting tiers bracket the
//! same region, and the profile samples the case's thread as it runs them (with a
//! multi-thread runtime, a task the body spawns runs on the runtime's workers, which the
//! case's thread does not include: await it in the body, or use a current-thread
//! runtime).

use std::future::Future;
use std::hint::black_box;
use std::time::{Duration, Instant};

use super::{in_batches, BatchSize, Bencher, Meter, Routine};

/// An executor that runs a future to completion on the calling thread: what
/// [`Bencher::to_async`] needs (criterion's trait of the same name and shape). tokio's
/// `Runtime` has it with the harness's `tokio` feature; any other is a few lines:
///
/// ```
/// struct Pollster;
/// impl sparkles_bench::AsyncExecutor for Pollster {
///     fn block_on<T>(&self, future: impl std::future::Future<Output = T>) -> T {
///         pollster::block_on(future) // or smol::block_on, futures::executor::block_on, …
///     }
/// }
/// fn case(b: &mut sparkles_bench::Bencher) {
///     b.to_async(Pollster).iter(|| async { std::hint::black_box(2 + 2) });
/// }
/// ```
pub trait AsyncExecutor {
    /// Runs `future` to completion on this thread and returns its output.
    fn block_on<T>(&self, future: impl Future<Output = T>) -> T;
}

impl<E: AsyncExecutor> AsyncExecutor for &E {
    fn block_on<T>(&self, future: impl Future<Output = T>) -> T {
        (**self).block_on(future)
    }
}

#[cfg(feature = "tokio")]
impl AsyncExecutor for tokio::runtime::Runtime {
    fn block_on<T>(&self, future: impl Future<Output = T>) -> T {
        tokio::runtime::Runtime::block_on(self, future)
    }
}

/// A [`Bencher`] whose body is async, run by an executor ([`Bencher::to_async`]).
#[derive(Debug)]
pub struct AsyncBencher<'b, A> {
    bencher: &'b mut Bencher,
    executor: A,
}

impl Bencher {
    /// The async forms of the `iter` methods, their bodies run by `executor` (built once
    /// by the case, outside the timing: `b.to_async(&runtime).iter(|| async { … })`).
    pub fn to_async<A: AsyncExecutor>(&mut self, executor: A) -> AsyncBencher<'_, A> {
        AsyncBencher {
            bencher: self,
            executor,
        }
    }
}

impl<A: AsyncExecutor> AsyncBencher<'_, A> {
    /// Measures the future `body` makes: every call of it, awaited, is one iteration.
    pub fn iter<O, F, R>(self, body: R)
    where
        R: FnMut() -> F,
        F: Future<Output = O>,
    {
        self.bencher.serve(
            &mut AsyncPlain {
                executor: self.executor,
                body,
            },
            false,
        );
    }

    /// Measures a body that can fail: the first `Err` stops the case, reported
    /// `ok: false` with the error's message.
    pub fn try_iter<O, E, F, R>(self, body: R)
    where
        R: FnMut() -> F,
        F: Future<Output = Result<O, E>>,
        E: std::fmt::Display,
    {
        self.bencher.serve(
            &mut AsyncFallible {
                executor: self.executor,
                body,
            },
            false,
        );
    }

    /// Measures `routine`'s futures alone: `setup` makes each iteration's input and
    /// `release` receives each output, both outside the timed region (and outside
    /// `block_on`).
    pub fn iter_batched<I, O, F, S, R, D>(self, setup: S, routine: R, release: D)
    where
        S: FnMut() -> I,
        R: FnMut(I) -> F,
        F: Future<Output = O>,
        D: FnMut(O),
    {
        self.iter_batched_sized(BatchSize::DEFAULT, setup, routine, release);
    }

    /// [`AsyncBencher::iter_batched`] with an explicit bound on the inputs prepared at
    /// once.
    pub fn iter_batched_sized<I, O, F, S, R, D>(
        self,
        batch: BatchSize,
        setup: S,
        routine: R,
        release: D,
    ) where
        S: FnMut() -> I,
        R: FnMut(I) -> F,
        F: Future<Output = O>,
        D: FnMut(O),
    {
        self.bencher.serve(
            &mut AsyncBatched {
                executor: self.executor,
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
}

struct AsyncPlain<A, R> {
    executor: A,
    body: R,
}

impl<A: AsyncExecutor, O, F: Future<Output = O>, R: FnMut() -> F> Routine for AsyncPlain<A, R> {
    fn run(&mut self, iterations: u64, meter: &mut Meter) -> Result<Duration, String> {
        let body = &mut self.body;
        self.executor.block_on(async move {
            meter.resume();
            let start = Instant::now();
            for _ in 0..iterations {
                black_box(body().await);
            }
            let elapsed = start.elapsed();
            meter.pause();
            Ok(elapsed)
        })
    }
}

struct AsyncFallible<A, R> {
    executor: A,
    body: R,
}

impl<A, O, E, F, R> Routine for AsyncFallible<A, R>
where
    A: AsyncExecutor,
    E: std::fmt::Display,
    F: Future<Output = Result<O, E>>,
    R: FnMut() -> F,
{
    fn run(&mut self, iterations: u64, meter: &mut Meter) -> Result<Duration, String> {
        let body = &mut self.body;
        self.executor.block_on(async move {
            meter.resume();
            let start = Instant::now();
            for _ in 0..iterations {
                if let Err(e) = black_box(body().await) {
                    meter.pause();
                    return Err(e.to_string());
                }
            }
            let elapsed = start.elapsed();
            meter.pause();
            Ok(elapsed)
        })
    }
}

struct AsyncBatched<A, I, O, S, R, D> {
    executor: A,
    setup: S,
    routine: R,
    release: D,
    batch: BatchSize,
    inputs: Vec<I>,
    outputs: Vec<O>,
}

impl<A, I, O, F, S, R, D> Routine for AsyncBatched<A, I, O, S, R, D>
where
    A: AsyncExecutor,
    S: FnMut() -> I,
    R: FnMut(I) -> F,
    F: Future<Output = O>,
    D: FnMut(O),
{
    fn run(&mut self, iterations: u64, meter: &mut Meter) -> Result<Duration, String> {
        let (executor, routine) = (&self.executor, &mut self.routine);
        Ok(in_batches(
            iterations,
            self.batch,
            (&mut self.inputs, &mut self.outputs),
            &mut self.setup,
            &mut self.release,
            |inputs, outputs| {
                executor.block_on(async {
                    meter.resume();
                    let start = Instant::now();
                    for input in inputs.drain(..) {
                        outputs.push(black_box(routine(black_box(input)).await));
                    }
                    let elapsed = start.elapsed();
                    meter.pause();
                    elapsed
                })
            },
        ))
    }
}
