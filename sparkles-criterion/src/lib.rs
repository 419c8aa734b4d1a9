//! sparkles-criterion: the sparkles sampling profiler behind criterion's profiler hook.
//!
//! ```no_run
//! use criterion::{criterion_group, criterion_main, Criterion};
//! use sparkles_criterion::SparklesProfiler;
//!
//! fn fib(n: u64) -> u64 {
//!     if n < 2 { n } else { fib(n - 1) + fib(n - 2) }
//! }
//!
//! fn bench(c: &mut Criterion) {
//!     c.bench_function("fib 20", |b| b.iter(|| fib(std::hint::black_box(20))));
//! }
//!
//! criterion_group! {
//!     name = benches;
//!     config = Criterion::default().with_profiler(SparklesProfiler::default());
//!     targets = bench
//! }
//! criterion_main!(benches);
//! ```
//!
//! `cargo bench --bench NAME -- --profile-time 5` then runs each benchmark's routine for
//! five seconds under perf_event overflow sampling (the harness's sampler: every thread
//! of the process, DWARF stack copies, compressed streaming capture) and writes, in the
//! folder criterion gives each benchmark (`target/criterion/<id>/profile/`):
//! `capture.perf.data`, `flamegraph.svg`, `folded.txt` and `profile.json` (the
//! `sparkles.profile/1` schema of the harness), with the stacks rooted at the benchmark
//! (criterion's own frames and those around them folded into one root frame named after
//! it); and prints its hottest functions. Where sampling is unavailable (no perf_event,
//! a refusing kernel, another OS) it prints why and the benchmark runs on unprofiled.

use std::path::{Path, PathBuf};

use sparkles_report::stacks::StackOptions;
use sparkles_sampler::session::{
    choose_event, CallGraph, Rate, SamplingConfig, Session, Target, DEFAULT_STACK_BYTES,
};
use sparkles_sampler::system::System;
use sparkles_sampler::EventResolver;

/// The capture's file name in a benchmark's profile folder.
pub const CAPTURE: &str = "capture.perf.data";

/// criterion's `Profiler` backed by the sparkles sampler.
#[derive(Debug)]
pub struct SparklesProfiler {
    event: Option<String>,
    frequency: u64,
    stack_bytes: u32,
    top: usize,
    running: Option<Running>,
}

#[derive(Debug)]
struct Running {
    session: Session,
    capture: PathBuf,
}

impl Default for SparklesProfiler {
    /// The default event (cycles at the highest precise level, else cpu-clock) at 4 kHz
    /// with 16 KiB stack copies.
    fn default() -> SparklesProfiler {
        SparklesProfiler {
            event: None,
            frequency: 4000,
            stack_bytes: DEFAULT_STACK_BYTES,
            top: 5,
            running: None,
        }
    }
}

impl SparklesProfiler {
    /// Samples this event (any spelling `sparkles event` takes: `cpu-clock`,
    /// `cycles:u`, `cpu/mem-loads,ldlat=30/P`).
    pub fn event(mut self, event: impl Into<String>) -> SparklesProfiler {
        self.event = Some(event.into());
        self
    }

    /// Samples per second (at most half the kernel's limit, which the sampler says).
    pub fn frequency(mut self, hz: u64) -> SparklesProfiler {
        self.frequency = hz.max(1);
        self
    }

    /// Bytes of user stack copied per sample for DWARF unwinding; 0 for frame pointers
    /// (the kernel's callchain) only.
    pub fn stack_size(mut self, bytes: u32) -> SparklesProfiler {
        self.stack_bytes = bytes;
        self
    }

    /// How many of the hottest functions to print after each benchmark (0: none).
    pub fn top(mut self, n: usize) -> SparklesProfiler {
        self.top = n;
        self
    }

    fn config(&self, capture: &Path) -> Result<(SamplingConfig, String), String> {
        let system = System::probe();
        let resolver = EventResolver::live().map_err(|e| e.to_string())?;
        let (event, note) =
            choose_event(&resolver, &system, self.event.as_deref()).map_err(|e| e.to_string())?;
        let call_graph = if self.stack_bytes == 0 {
            CallGraph::FramePointer
        } else {
            CallGraph::Dwarf(self.stack_bytes.next_multiple_of(8).min(65528))
        };
        let config = SamplingConfig {
            stream_to: Some(capture.to_path_buf()),
            ..SamplingConfig::new(
                vec![event.into()],
                Rate::Frequency(self.frequency),
                call_graph,
            )
        };
        Ok((config, note))
    }

    /// Reads the capture and writes its artifacts beside it; the lines to print.
    fn report(&self, id: &str, capture: &Path) -> Result<Vec<String>, String> {
        let dir = capture.parent().unwrap_or(Path::new("."));
        let options = StackOptions {
            root_at_case: true,
            ..StackOptions::default()
        };
        let (profile, folded) = sparkles_report::capture::profile_capture(capture, id, &options)
            .map_err(|e| e.to_string())?;
        let write = |name: &str, bytes: &[u8]| {
            sparkles_perf_data::atomic_write::write_atomically(&dir.join(name), bytes)
                .map_err(|e| e.to_string())
        };
        let json = serde_json::to_vec_pretty(&profile).map_err(|e| e.to_string())?;
        write("profile.json", &json)?;
        write("folded.txt", folded.text().as_bytes())?;
        match sparkles_report::flame::svg(&profile, &folded) {
            Ok(svg) => write("flamegraph.svg", svg.as_bytes())?,
            Err(e) => return Err(format!("flamegraph.svg not written: {e}")),
        }
        let mut lines = vec![format!(
            "{} samples of {}, {} lost; {}",
            profile.samples,
            profile.event,
            profile.lost,
            dir.display()
        )];
        lines.extend(profile.symbols.iter().take(self.top).map(|e| {
            format!(
                "{:>5.1}% self {:>5.1}% total  {}",
                e.self_pct, e.total_pct, e.name
            )
        }));
        lines.extend(profile.notes.iter().map(|n| format!("note: {n}")));
        Ok(lines)
    }
}

/// `SparklesProfiler` as criterion `$krate`'s `Profiler` (one impl a criterion version the
/// crate's features name: criterion-08, criterion-05).
#[allow(unused_macros)] // with neither criterion feature on, no hook is built
macro_rules! profiler_hook {
    ($krate:ident) => {
        impl $krate::profiler::Profiler for SparklesProfiler {
            fn start_profiling(&mut self, benchmark_id: &str, benchmark_dir: &Path) {
                self.start_profiling(benchmark_id, benchmark_dir);
            }

            fn stop_profiling(&mut self, benchmark_id: &str, benchmark_dir: &Path) {
                self.stop_profiling(benchmark_id, benchmark_dir);
            }
        }
    };
}

#[cfg(feature = "criterion-08")]
profiler_hook!(criterion);
#[cfg(feature = "criterion-05")]
profiler_hook!(criterion05);

impl SparklesProfiler {
    /// The hook's start, whichever criterion calls it: sampling the benchmark's thread
    /// into `benchmark_dir`'s capture.
    pub fn start_profiling(&mut self, benchmark_id: &str, benchmark_dir: &Path) {
        self.running = None;
        if let Err(e) = std::fs::create_dir_all(benchmark_dir) {
            eprintln!(
                "sparkles: {benchmark_id}: not profiled: {}: {e}",
                benchmark_dir.display()
            );
            return;
        }
        let capture = benchmark_dir.join(CAPTURE);
        let (config, note) = match self.config(&capture) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("sparkles: {benchmark_id}: not profiled: {e}");
                return;
            }
        };
        match Session::start(&config, Target::CurrentThread, &System::probe()) {
            Ok(session) => {
                eprintln!("sparkles: {benchmark_id}: {note}");
                for r in session.restrictions.iter().chain(&session.uncovered) {
                    eprintln!("sparkles: {benchmark_id}: {r}");
                }
                self.running = Some(Running { session, capture });
            }
            Err(e) => eprintln!("sparkles: {benchmark_id}: not profiled: {e}"),
        }
    }

    /// The hook's stop: the capture written and reported.
    pub fn stop_profiling(&mut self, benchmark_id: &str, _benchmark_dir: &Path) {
        let Some(Running { session, capture }) = self.running.take() else {
            return;
        };
        let mut taken = session.finish();
        if let Err(e) = taken.writer.write(&capture) {
            eprintln!("sparkles: {benchmark_id}: capture not written: {e}");
            return;
        }
        match self.report(benchmark_id, &capture) {
            Ok(lines) => {
                for l in lines {
                    eprintln!("sparkles: {benchmark_id}: {l}");
                }
            }
            Err(e) => eprintln!("sparkles: {benchmark_id}: no profile: {e}"),
        }
    }
}
