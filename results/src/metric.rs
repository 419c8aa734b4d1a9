//! What a metric is: its id, how it is shown, which tier produces it and whether it can
//! on this machine. Every tier describes its metrics with these; the catalog gathers them.

use std::borrow::Cow;

/// Whether a metric is safe to headline or only explains one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricClass {
    /// Near-zero perturbation: safe to headline.
    Quantitative,
    /// Perturbs what it measures: explains a result, never headlines it.
    Diagnostic,
}

impl MetricClass {
    /// The class as listed.
    pub fn label(self) -> &'static str {
        match self {
            MetricClass::Quantitative => "quantitative",
            MetricClass::Diagnostic => "diagnostic",
        }
    }
}

/// How a metric's value is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricFormat {
    /// A count per iteration.
    Count,
    /// A dimensionless ratio.
    Ratio,
    /// A percentage, 0–100.
    Percent,
    /// Bytes per second.
    BytesPerSecond,
    /// Elements per second.
    PerSecond,
}

/// Where a metric's value comes from: which tier must be open to produce it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// Computed from what the case declared (throughput) against the timed median.
    Client,
    /// getrusage(2) and /proc/self/io: always available, no privilege.
    Tier0,
    /// The `--profile` pass: samples and losses of the case's capture.
    Profile,
    /// perf_event counters (`--perf`): hardware and software events.
    Perf,
    /// Syscall tracepoints (`--syscalls`).
    Syscalls,
    /// callgrind's exact counts (`--instructions`), from a pass of its own in a child
    /// process under valgrind.
    Valgrind,
    /// The counting allocator (`sparkles_bench::alloc::Counting`, when installed).
    Alloc,
}

impl Source {
    /// The source as listed.
    pub fn label(self) -> &'static str {
        match self {
            Source::Client => "client",
            Source::Tier0 => "tier0",
            Source::Profile => "profile",
            Source::Perf => "perf",
            Source::Syscalls => "syscall",
            Source::Valgrind => "valgrind",
            Source::Alloc => "alloc",
        }
    }

    /// Whether the source is a counting tier that needs the second (counting) pass.
    pub fn needs_counting_pass(self) -> bool {
        matches!(
            self,
            Source::Tier0 | Source::Perf | Source::Syscalls | Source::Alloc
        )
    }
}

/// Whether a metric can be produced on this run, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// The metric is produced.
    Available,
    /// The metric is absent; the reason says what a user can do about it.
    Unavailable(String),
}

/// One catalog entry.
#[derive(Debug, Clone)]
pub struct MetricDescriptor {
    /// Stable id: the JSON key and what `--metrics` globs match.
    pub id: Cow<'static, str>,
    /// Column label.
    pub header: Cow<'static, str>,
    /// One line saying what it counts.
    pub description: Cow<'static, str>,
    /// How the value is printed.
    pub format: MetricFormat,
    /// Quantitative or diagnostic.
    pub class: MetricClass,
    /// Which tier produces it.
    pub source: Source,
    /// Shown without a `--metrics` filter.
    pub default_visible: bool,
    /// Producible on this run.
    pub availability: Availability,
}

/// One rendered value: a metric id and its value, `None` where the tier could not produce
/// it for this case (rendered as an em dash, serialized as null).
pub type MetricValue = (Cow<'static, str>, Option<f64>);

/// One metric's per-iteration value in every bracket of a counting pass, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSeries {
    /// The metric's id.
    pub id: String,
    /// Its value in each bracket.
    pub values: Vec<f64>,
}
