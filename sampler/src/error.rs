//! The sampler's error types: each variant names the event, term, file, thread or errno
//! at fault.

use std::path::PathBuf;

/// Why a sampling session could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An event spelling did not resolve.
    #[error(transparent)]
    Event(#[from] EventError),
    /// The operating system refused a step (a thread, enabling an event).
    #[error("{what}: {source}")]
    Os {
        /// The step.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// This build opens no perf event ([`crate::UNAVAILABLE`] says why).
    #[error("{0}")]
    Unavailable(&'static str),
    /// The configuration names no event.
    #[error("no event to sample")]
    NoEvents,
    /// The process to sample has no threads (it exited).
    #[error("process {pid} has no threads to sample (has it exited?)")]
    NoThreads {
        /// The process.
        pid: u32,
    },
    /// The kernel refused every event on every target: each refusal, explained.
    #[error("{}", not_opened(*pid, reasons))]
    NotOpened {
        /// The process.
        pid: u32,
        /// Each refusal (the event's name first where there were several events).
        reasons: Vec<String>,
    },
    /// The ring buffer of the thread that asked could not be mapped.
    #[error("thread {tid}: {reason}")]
    RingBuffer {
        /// The thread.
        tid: u32,
        /// Why, with what a user can do.
        reason: String,
    },
    /// The capture's file could not be started.
    #[error("capture: {0}")]
    Capture(#[from] sparkles_perf_data::Error),
    /// The drain thread ended before sampling started.
    #[error("the drain thread ended before sampling started")]
    DrainEnded,
}

fn not_opened(pid: u32, reasons: &[String]) -> String {
    match reasons {
        [one] => one.clone(),
        many => format!(
            "no event could be opened for process {pid}: {}",
            many.join("; ")
        ),
    }
}

/// A sysfs format file (`config:0-7,32-35`) that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("format '{text}': {problem}")]
pub struct FormatError {
    /// The file's text.
    pub text: String,
    /// What is wrong with it.
    pub problem: String,
}

fn did_you_mean(suggestions: &[String]) -> String {
    match suggestions {
        [] => String::new(),
        [one] => format!("; did you mean '{one}'?"),
        many => format!(
            "; did you mean one of: {}?",
            many.iter()
                .map(|s| format!("'{s}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Why an event spelling does not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EventError {
    /// No event, PMU or tracepoint of that name.
    #[error("unknown {what} '{name}'{}", did_you_mean(.suggestions))]
    Unknown {
        /// `event`, `PMU` or `tracepoint`.
        what: &'static str,
        /// The name as given.
        name: String,
        /// The closest known names.
        suggestions: Vec<String>,
    },
    /// A term the PMU's format does not define and that is no alias of it.
    #[error("PMU '{pmu}' has no term '{term}'{}", did_you_mean(.suggestions))]
    UnknownTerm {
        /// The PMU.
        pmu: String,
        /// The term as given.
        term: String,
        /// The closest terms and aliases of that PMU.
        suggestions: Vec<String>,
    },
    /// A value wider than its format field.
    #[error("{pmu}/{term}={value:#x}/: the value does not fit {field} ({bits} bits)")]
    ValueTooBig {
        /// The PMU.
        pmu: String,
        /// The term.
        term: String,
        /// The value given.
        value: u64,
        /// The field's format, e.g. `config:0-7,32-35`.
        field: String,
        /// How many bits it holds.
        bits: u32,
    },
    /// The spelling does not follow perf's event grammar.
    #[error("event '{spec}': {message}")]
    Syntax {
        /// The whole spelling.
        spec: String,
        /// What is wrong with it.
        message: String,
    },
    /// A sysfs or tracefs file could not be read or parsed.
    #[error("{}: {message}", path.display())]
    Sysfs {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Tracepoints were asked for and tracefs is not available.
    #[error("tracepoint '{name}': {reason}")]
    NoTracefs {
        /// The tracepoint.
        name: String,
        /// Why tracefs is unavailable.
        reason: TracefsUnavailable,
    },
}

/// Why tracefs (and so tracepoints) cannot be used, with what a user can do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TracefsUnavailable {
    /// It is there, but this user may not read it.
    #[error("tracefs at {} is not readable by this user (root only here): run as root or chmod it", dir.display())]
    NotReadable {
        /// The folder.
        dir: std::path::PathBuf,
    },
    /// A fake root has none.
    #[error("tracefs not found under {} (looked in {looked})", root.display())]
    NotFound {
        /// The root looked under.
        root: std::path::PathBuf,
        /// The folders looked in, under it.
        looked: String,
    },
    /// Tracefs is Linux's: this system has none.
    #[error("tracefs is Linux's: this system has no tracepoints")]
    NotLinux,
    /// Not mounted, and only root may mount it.
    #[error("tracefs not mounted (mount -t tracefs nodev /sys/kernel/tracing, as root)")]
    NotMounted,
    /// Not mounted, and mounting it failed.
    #[error("tracefs not mounted, and mounting it at {} failed: {reason}", target.display())]
    MountFailed {
        /// Where it was to be mounted.
        target: std::path::PathBuf,
        /// The error mount(2) gave.
        reason: String,
    },
}
