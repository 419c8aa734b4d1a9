//! `sparkles record`: sample a command started here, or a running process.

use std::path::PathBuf;
use std::time::Duration;

use sparkles_perf_data::writer::{Compression, DEFAULT_ZSTD_LEVEL};
use sparkles_sampler::events::EventResolver;
use sparkles_sampler::session::{
    choose_event, CallGraph, Rate, SamplingConfig, DEFAULT_STACK_BYTES,
};
use sparkles_sampler::system::System;

use crate::error::Error;

#[cfg(target_os = "linux")]
mod live;

/// Where perf_event is not, `record` has said why before it would attach.
#[cfg(not(target_os = "linux"))]
mod live {
    pub(super) fn record(
        _args: &super::RecordArgs,
        _duration: Option<super::Duration>,
        _config: &super::SamplingConfig,
        _note: &str,
        _system: &super::System,
    ) -> Result<(), super::Error> {
        Err(sparkles_sampler::Error::Unavailable("perf_event is Linux-only").into())
    }
}

/// `sparkles record`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct RecordArgs {
    /// Event to sample (any spelling `sparkles event` takes); default: cycles at the
    /// highest precise level, else cpu-clock, with the reason.
    #[arg(long, short = 'e')]
    event: Option<String>,
    /// Samples per second.
    #[arg(long, short = 'F', default_value_t = 4000)]
    freq: u64,
    /// Events between samples (instead of --freq).
    #[arg(long, short = 'c')]
    period: Option<u64>,
    /// `dwarf[,BYTES]` (user registers and stack copies, default 16384) or `fp`.
    #[arg(long, default_value = "dwarf", value_parser = parse_call_graph)]
    call_graph: CallGraph,
    /// Stop after this many seconds.
    #[arg(long)]
    duration: Option<f64>,
    /// Output file.
    #[arg(short, long, default_value = "sparkles.perf.data")]
    output: PathBuf,
    /// Attach to a running process and its threads.
    #[arg(short, long)]
    pid: Option<u32>,
    /// Keep stack copies at their full size (no compaction).
    #[arg(long)]
    no_compact: bool,
    /// Store the records as they are: by default they are zstd-compressed as
    /// `perf record -z` stores them (perf 6.1 reads both).
    #[arg(long, conflicts_with = "compression_level")]
    no_compress: bool,
    /// zstd level of the compressed records (1, perf's default, to 22).
    #[arg(long, short = 'z', value_parser = clap::value_parser!(i32).range(1..=22))]
    compression_level: Option<i32>,
    /// Sample memory accesses: the machine's precise memory event (AMD IBS, Intel
    /// PEBS load latency) with data addresses, else page faults with their data
    /// addresses (first-touch placement), the pages' nodes asked while it runs and
    /// written to OUTPUT.pages.json.
    #[arg(long)]
    mem: bool,
    /// Capture off-CPU time too: every sampled thread's context switches, and where the
    /// kernel allows it a `sched:sched_switch` sample (stack and state) at each
    /// switch-out; `sparkles report` then accounts for the whole wall time (its
    /// `offcpu` section, `--wall` for the wall-clock flamegraph).
    #[arg(long)]
    off_cpu: bool,
    /// The command to run and sample.
    #[arg(last = true)]
    command: Vec<String>,
}

/// Why a `--call-graph` value is not one.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadCallGraph(String);

/// Parses `dwarf[,BYTES]` or `fp`.
fn parse_call_graph(text: &str) -> Result<CallGraph, BadCallGraph> {
    match text.split_once(',') {
        None if text == "dwarf" => Ok(CallGraph::Dwarf(DEFAULT_STACK_BYTES)),
        None if text == "fp" => Ok(CallGraph::FramePointer),
        Some(("dwarf", size)) => {
            let bytes: u32 = size
                .parse()
                .map_err(|_| BadCallGraph(format!("'{size}' is not a byte count")))?;
            if bytes == 0 || !bytes.is_multiple_of(8) || bytes > 65528 {
                return Err(BadCallGraph(format!(
                    "stack size {bytes} must be a multiple of 8 up to 65528"
                )));
            }
            Ok(CallGraph::Dwarf(bytes))
        }
        _ => Err(BadCallGraph(format!("'{text}' is not dwarf[,BYTES] or fp"))),
    }
}

/// `sparkles record`: the sampling planned, the target attached (a running process, or a
/// command forked here and let go once its events are open), sampled until it ends (or
/// the duration passes, or Ctrl-C), and the capture written.
pub fn record(args: &RecordArgs) -> Result<(), Error> {
    if args.pid.is_some() != args.command.is_empty() {
        return Err(Error::usage(
            "record",
            "give either -p PID or -- COMMAND ARGS…",
        ));
    }
    let duration =
        match args.duration {
            Some(s) => Some(Duration::try_from_secs_f64(s).map_err(|_| {
                Error::usage("--duration", format!("{s} is not a number of seconds"))
            })?),
            None => None,
        };
    let system = System::probe();
    let (config, note) = sampling(args, &system)?;
    if let Some(why) = sparkles_sampler::UNAVAILABLE {
        return Err(sparkles_sampler::Error::Unavailable(why).into());
    }
    live::record(args, duration, &config, &note, &system)
}

/// The sampling asked for: the event (or, with `--mem`, the machine's memory plan), the
/// rate, the call graph; and the line that says which event and why.
fn sampling(args: &RecordArgs, system: &System) -> Result<(SamplingConfig, String), Error> {
    let resolver = EventResolver::live()?;
    let (event, note) = choose_event(&resolver, system, args.event.as_deref())?;
    let rate = args
        .period
        .map(Rate::Period)
        .unwrap_or(Rate::Frequency(args.freq));
    let mut config = SamplingConfig {
        // The session shrinks buffers to fit an unprivileged user's perf_event_mlock_kb.
        buffer_pages: 128,
        compact_stacks: !args.no_compact,
        compression: if args.no_compress {
            Compression::Off
        } else {
            Compression::Zstd {
                level: args.compression_level.unwrap_or(DEFAULT_ZSTD_LEVEL),
            }
        },
        // Streamed to the output as it is taken: memory holds the ring buffers and a
        // chunk, however long the record.
        stream_to: Some(args.output.clone()),
        ..SamplingConfig::new(vec![event.into()], rate, args.call_graph)
    };
    let note = if args.off_cpu {
        let source = sparkles_sampler::off_cpu::add_off_cpu(&mut config, &resolver);
        format!("{note}\n{source}")
    } else {
        note
    };
    if !args.mem {
        return Ok((config, note));
    }
    if args.event.is_some() {
        return Err(Error::usage(
            "--mem",
            "chooses its own event (the machine's precise memory event, else page faults): leave out -e",
        ));
    }
    let plan = sparkles_sampler::mem_events::live_plan(&resolver, system)?;
    let note = plan.apply(&mut config);
    Ok((config, note))
}
