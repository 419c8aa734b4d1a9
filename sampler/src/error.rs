//! The sampler's error types: each variant names the event, term, file or errno at fault.

use std::path::PathBuf;

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
        reason: String,
    },
}
