//! The crate's errors: malformed bytes (where, and what was expected there), and the
//! files a reader or writer could not use.

use std::path::PathBuf;

/// Malformed perf.data or ring-buffer bytes: where, and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at offset {offset} ({offset:#x}): {message}")]
pub struct DataError {
    /// Absolute byte offset in the file (or buffer) where the problem is.
    pub offset: u64,
    /// What was expected, or what is wrong.
    pub message: String,
}

impl DataError {
    /// An error at `offset`.
    pub fn new(offset: u64, message: impl Into<String>) -> DataError {
        DataError {
            offset,
            message: message.into(),
        }
    }
}

/// Why a capture, or a file written beside one, could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be opened, read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The capture's bytes are malformed.
    #[error("{}: {source}", path.display())]
    Data {
        /// The capture (`(in memory)` for bytes given to [`crate::PerfData::from_bytes`]).
        path: PathBuf,
        /// Where and what.
        source: DataError,
    },
    /// A document written beside a capture (its page table) is not what it should be.
    #[error("{}: not a {schema} document: {what}", path.display())]
    Document {
        /// The file.
        path: PathBuf,
        /// The schema it should follow.
        schema: &'static str,
        /// What is wrong with it.
        what: String,
    },
    /// This build cannot do what was asked.
    #[error("{what}")]
    Unsupported {
        /// What, and why not.
        what: &'static str,
    },
    /// A stream was asked for its records a second time.
    #[error("{}: a stream's records can be read once", path.display())]
    StreamReadTwice {
        /// The stream.
        path: PathBuf,
    },
}

impl Error {
    /// Where and what, when the bytes were malformed.
    pub fn as_data(&self) -> Option<&DataError> {
        match self {
            Error::Data { source, .. } => Some(source),
            _ => None,
        }
    }

    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
