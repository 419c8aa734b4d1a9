//! The report's errors: each names the capture (or the input) and what is wrong with it.

use std::path::PathBuf;

/// Why a profile, diff or export could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The capture could not be read.
    #[error(transparent)]
    Capture(#[from] sparkles_perf_data::Error),
    /// Samples were to be weighed by their weight field, and they carry none.
    #[error("{}: its samples carry no weight (no event of it samples WEIGHT or WEIGHT_STRUCT)", path.display())]
    NoWeight {
        /// The capture.
        path: PathBuf,
    },
    /// One event's samples were asked for, and the capture has no event of that name.
    #[error("{} has no event named '{wanted}'; its events: {}", path.display(), events.join(", "))]
    NoSuchEvent {
        /// The capture.
        path: PathBuf,
        /// The name asked for.
        wanted: String,
        /// The capture's events, by name.
        events: Vec<String>,
    },
    /// A line of folded stacks is not `stack weight`.
    #[error("folded stacks, line {line}: not `stack weight`")]
    Folded {
        /// The 1-based line.
        line: usize,
    },
    /// There are no samples to draw or export.
    #[error("no samples: nothing to draw")]
    Empty,
    /// Rendering (inferno, gzip) failed.
    #[error("{what}: {source}")]
    Render {
        /// What was being rendered.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// An export (speedscope, Firefox Profiler) could not be encoded.
    #[error("{what} export: {reason}")]
    Export {
        /// Which export.
        what: &'static str,
        /// Why.
        reason: String,
    },
}
