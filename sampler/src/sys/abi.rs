//! What both kernel edges (Linux's and none) share: why this build cannot open events,
//! the error every call of the build without the edge returns, whom an event counts, and
//! what a counter reads.

use std::io;

/// Why this build cannot open perf events: `None` where it can (Linux with the sampler's
/// `perf` feature, which is on by default).
pub const UNAVAILABLE: Option<&str> = if cfg!(kernel) {
    None
} else if cfg!(not(target_os = "linux")) {
    Some("perf_event is Linux-only")
} else if cfg!(target_endian = "big") {
    Some("this build of sparkles opens perf events on little-endian Linux only")
} else {
    Some("this build of sparkles has no perf_event support (built without the `perf` feature, as `--no-default-features` builds are)")
};

/// The error every perf_event call of a build without the kernel edge returns.
#[cfg_attr(kernel, allow(dead_code))]
pub(crate) fn unsupported() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        UNAVAILABLE.unwrap_or("perf_event is not available"),
    )
}

/// Whom an event counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenTarget {
    /// This process, on any CPU.
    ThisProcess,
    /// Everything on one CPU (uncore and MSR PMUs count only this way).
    Cpu(usize),
    /// One task (a thread id, or a process id for its main thread), on one CPU or any.
    Task {
        /// The thread.
        tid: i32,
        /// The CPU, or any.
        cpu: Option<usize>,
    },
}

/// A counter's value with the times it was enabled and on the PMU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CountAndTime {
    pub count: u64,
    pub time_enabled: u64,
    pub time_running: u64,
}
