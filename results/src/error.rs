//! The results' error type, which the harness shares: each variant names the flag, file,
//! line or process at fault.

use std::path::PathBuf;

/// Everything that stops a run before or after measuring; a failing case is not an error
/// (it is reported `ok: false` and the other cases still run).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A flag's value is wrong.
    #[error("{flag}: {message}")]
    Usage {
        /// The flag at fault, as spelled on the command line.
        flag: &'static str,
        /// What is wrong with its value.
        message: String,
    },
    /// A baseline could not be found or read.
    #[error("baseline {}{}: {message}", path.display(), line.map(|l| format!(", line {l}")).unwrap_or_default())]
    Baseline {
        /// The baseline file.
        path: PathBuf,
        /// The 1-based line at fault, where one is.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// A file (a baseline, the JSON rows) could not be written whole.
    #[error(transparent)]
    File(#[from] sparkles_perf_data::Error),
    /// A SIGINT or SIGTERM stopped the run where every file is whole (exit status
    /// [`Interrupt::exit_status`](sparkles_perf_data::atomic_write::Interrupt::exit_status)).
    #[error("interrupted by {signal}: {kept}")]
    Interrupted {
        /// The signal.
        signal: sparkles_perf_data::atomic_write::Interrupt,
        /// What the run left: which files are as they were, which were written whole.
        kept: String,
    },
    /// A serve process could not be started, asked, or understood (naming the process).
    #[error("{0}")]
    Serve(String),
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
