//! The `sparkles` command: perf_event events and capabilities through the sampler, and
//! perf.data captures recorded, printed, profiled, diffed and symbolized through the
//! libraries. Each subcommand's flags are a `clap::Args` struct turned into the
//! libraries' options in its module; errors are put into words for people here.

mod addr2line;
mod compare;
mod error;
mod events;
mod history;
mod record;
mod report;
mod script;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::error::Error;

/// sparkles: perf_event events, capabilities, and profiles of perf.data captures.
#[derive(Debug, Parser)]
#[command(name = "sparkles", version, about)]
struct Cli {
    /// The command.
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
enum Command {
    /// List the events this machine exposes, each marked openable or not, with the reason.
    List {
        /// Print JSON (`sparkles.list/1`).
        #[arg(long)]
        json: bool,
        /// Read PMUs from this root's sys/bus/event_source (a fake tree): nothing is opened.
        #[arg(long, value_name = "DIR")]
        sysfs_root: Option<PathBuf>,
        /// Only events whose name contains this.
        filter: Option<String>,
    },
    /// Resolve event spellings into perf_event_attr fields, and say whether each opens here.
    Event {
        /// Event spellings, as perf accepts them (`cycles:u`, `cpu/event=0x3c/`, `sched:sched_switch`).
        #[arg(required = true)]
        names: Vec<String>,
        /// Print JSON (`sparkles.event/1`).
        #[arg(long)]
        json: bool,
        /// Read PMUs from this root's sys/bus/event_source (a fake tree): nothing is opened.
        #[arg(long, value_name = "DIR")]
        sysfs_root: Option<PathBuf>,
    },
    /// Print every record of a perf.data file in time order (like `perf script -D`, readable).
    Script(script::ScriptArgs),
    /// A profile of any perf.data file (ours or `perf record`'s): stacks unwound, named
    /// and aggregated into the `functions` and `symbols` views, a flamegraph, or JSON.
    Report(report::ReportArgs),
    /// The hot-function diff of two profiles: each function's share before and now, the
    /// change, and whether it is outside the sampling noise.
    Diff(report::DiffArgs),
    /// Inside the hot functions: their source lines and instructions with the samples
    /// that landed on them (as perf annotate), the event's precision said.
    Annotate(report::AnnotateArgs),
    /// Sample a command (or a running process) into a perf.data file.
    Record(record::RecordArgs),
    /// Two revisions of a package's sparkles benches measured side by side, sample by
    /// sample in three processes (base, variant, base again), with the null beside the
    /// verdict.
    Compare(compare::CompareArgs),
    /// Each bench case's runs over commits, from the history `cargo bench` runs wrote:
    /// median and interval per run, the change points across them, machine changes marked.
    History(history::HistoryArgs),
    /// Source locations of addresses in an ELF file, in binutils addr2line's format.
    Addr2line(addr2line::Addr2lineArgs),
    /// Probe the seven capabilities (counting, sampling, precise data source, symbolization,
    /// event space, NUMA, event naming) with real perf_event_open calls.
    Caps {
        /// Print JSON (`sparkles.caps/1`).
        #[arg(long)]
        json: bool,
    },
}

fn run(command: &Command) -> Result<(), Error> {
    match command {
        Command::List {
            json,
            sysfs_root,
            filter,
        } => events::list(*json, sysfs_root.as_ref(), filter.as_deref()),
        Command::Event {
            names,
            json,
            sysfs_root,
        } => events::event(names, *json, sysfs_root.as_ref()),
        Command::Caps { json } => events::caps(*json),
        Command::Script(args) => script::script(args),
        Command::Report(args) => report::report(args),
        Command::Diff(args) => report::diff(args),
        Command::Annotate(args) => report::annotate(args),
        Command::Record(args) => record::record(args),
        Command::Compare(args) => compare::compare(args),
        Command::Addr2line(args) => addr2line::addr2line(args),
        Command::History(args) => history::history(args),
    }
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            std::process::exit(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match run(&cli.command) {
        Ok(()) => {}
        Err(e @ Error::Interrupted { signal, .. }) => {
            eprintln!("sparkles: {e}");
            std::process::exit(signal.exit_status());
        }
        Err(Error::CommandFailed(status)) => std::process::exit(status),
        Err(e @ Error::CannotRun { .. }) => {
            eprintln!("error: {e}");
            let not_found = matches!(&e, Error::CannotRun { source, .. } if source.kind() == std::io::ErrorKind::NotFound);
            std::process::exit(if not_found { 127 } else { 126 });
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
