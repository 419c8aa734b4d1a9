//! The command's one error type: every library's errors, and the command's own (a flag, an
//! input line, the output), each put into words for people here.

use std::path::PathBuf;

/// Why a command failed (exit status 2; an interrupted one, 128 + the signal's number).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag's value is wrong, or flags do not go together.
    #[error("{flag}: {message}")]
    Usage {
        /// The flag, as spelled on the command line.
        flag: String,
        /// What is wrong.
        message: String,
    },
    /// An input (an address, a document) is not what the command takes.
    #[error("{0}")]
    Input(String),
    /// A capture could not be read or written.
    #[error(transparent)]
    Capture(#[from] sparkles_perf_data::Error),
    /// A profile, diff or export could not be made.
    #[error(transparent)]
    Report(#[from] sparkles_report::Error),
    /// Sampling could not start.
    #[error(transparent)]
    Sampler(#[from] sparkles_sampler::Error),
    /// An event spelling did not resolve.
    #[error(transparent)]
    Event(#[from] sparkles_sampler::EventError),
    /// A serve process, a row or a history failed (the results' own words).
    #[error(transparent)]
    Results(#[from] sparkles_results::Error),
    /// A module could not be loaded.
    #[error(transparent)]
    Symbolize(#[from] sparkles_symbolize::Error),
    /// A file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The operating system refused a step (a pipe, a fork).
    #[cfg(target_os = "linux")]
    #[error("{what}: {source}")]
    Os {
        /// The step.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// A SIGINT or SIGTERM stopped the command where its files are whole (exit status
    /// 130 or 143).
    #[error("interrupted by {signal}: {kept}")]
    Interrupted {
        /// The signal.
        signal: sparkles_perf_data::atomic_write::Interrupt,
        /// What the command left: the file written whole, or as it was.
        kept: String,
    },
    /// The recorded command could not be started (exit status 127 where it was not
    /// found, 126 otherwise, as a shell gives).
    #[error("cannot run '{command}': {source}")]
    CannotRun {
        /// The command, as given.
        command: String,
        /// Why exec failed.
        source: std::io::Error,
    },
    /// The recorded command failed: its exit status (128 + N for signal N), passed on.
    /// Already said where it happened.
    #[error("the command failed (status {0})")]
    CommandFailed(i32),
    /// Standard output could not be written.
    #[error("writing the output: {0}")]
    Output(std::io::Error),
}

impl Error {
    /// A wrong value of `flag`.
    pub fn usage(flag: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Usage {
            flag: flag.into(),
            message: message.into(),
        }
    }
}

/// Writing to standard output: a reader that went away (`| head`) ends the output
/// quietly, not the command with an error.
pub fn output(result: std::io::Result<()>) -> Result<(), Error> {
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Output(e)),
        _ => Ok(()),
    }
}
