//! The run's progress line on stderr.

use std::io::{IsTerminal, Write};

/// One-line progress on stderr when stderr is a terminal; elsewhere (a log, a test
/// watching the run) a line as each pass starts.
#[derive(Debug)]
pub(crate) struct Progress {
    pub(crate) enabled: bool,
    /// Whether pass lines are printed (stderr is no terminal).
    pub(crate) passes: bool,
}

impl Progress {
    pub fn new() -> Progress {
        let terminal = std::io::stderr().is_terminal();
        Progress {
            enabled: terminal,
            passes: !terminal,
        }
    }

    pub fn show(&self, text: &str) {
        if self.enabled {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K{text}");
            let _ = err.flush();
        }
    }

    /// `sparkles: timing pass` (of `case`, in blocked order), in a log.
    pub fn pass(&self, name: &str, case: Option<&str>) {
        if self.passes {
            match case {
                Some(case) => eprintln!("sparkles: {name} pass: {case}"),
                None => eprintln!("sparkles: {name} pass"),
            }
        }
    }

    pub fn clear(&self) {
        if self.enabled {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }
}
