//! `--profile=alloc`: where the bytes come from. While a case's allocation profile pass
//! runs, the [`Counting`](super::Counting) allocator samples allocations by bytes, as
//! tcmalloc and jemalloc do: each thread counts down a random, exponentially distributed
//! number of bytes (mean [`Plan::mean`]); an allocation that crosses one or more of those
//! points is a sample standing for `points x mean` bytes, so every byte has the same
//! chance and the estimate of each site's bytes is unbiased.
//!
//! A sample is taken in the allocating thread as perf's user stack dump takes one: the
//! registers the unwinder starts from and a copy of the stack above the stack pointer,
//! written as a perf SAMPLE record (period = the bytes it stands for, addr = the block)
//! into an arena mapped before the pass, so sampling never allocates. After the pass the
//! records, the process's mappings and threads become a perf.data capture that the
//! pipeline unwinds, names and reports as it does any other: event `sparkles:alloc`
//! (every sample) and `sparkles:alloc-live` (the samples whose block was still live when
//! its iteration ended: the frees are matched to the samples through a table of the
//! sampled blocks).

use sparkles_perf_data::writer::Compression;

/// The default mean of bytes between samples, as tcmalloc's.
pub const DEFAULT_MEAN: u64 = 512 * 1024;

/// The two events of an allocation capture.
pub const EVENT: &str = sparkles_results::profile::ALLOC_EVENT;
/// The samples whose block outlived its iteration.
pub const LIVE_EVENT: &str = sparkles_results::profile::ALLOC_LIVE_EVENT;

/// One allocation profile pass's sampling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Mean bytes between samples.
    pub mean: u64,
    /// Most bytes of stack copied per sample.
    pub stack: u32,
    /// How the capture's records are stored.
    pub compression: Compression,
}

/// The registers a sample carries, in perf's order for the architecture (their mask
/// bits ascending): x86_64 BP, SP, IP; aarch64 X29, X30 (LR), SP, PC.
#[cfg(target_arch = "x86_64")]
pub(crate) const REGS_MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8);
#[cfg(target_arch = "aarch64")]
pub(crate) const REGS_MASK: u64 = (1 << 29) | (1 << 30) | (1 << 31) | (1 << 32);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) const REGS_MASK: u64 = 0;
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) const NREGS: usize = REGS_MASK.count_ones() as usize;

/// Why allocation profiles cannot be taken here, where they cannot.
pub const UNAVAILABLE: Option<&str> = if cfg!(not(target_os = "linux")) {
    Some("allocation profiles are taken on Linux only")
} else if REGS_MASK == 0 {
    Some("allocation profiles capture registers on x86_64 and aarch64 only")
} else {
    None
};

/// What one pass sampled.
#[derive(Debug, Default)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) struct Taken {
    /// Samples taken.
    pub samples: u64,
    /// Of them, whose block was live when its iteration ended.
    pub live: u64,
    /// Whose fate is unknown (the table was full).
    pub untracked: u64,
    /// With no room in the arena.
    pub dropped: u64,
    /// Bytes they stand for.
    pub bytes: u64,
    /// Bytes of the blocks live at their iteration's end.
    pub live_bytes: u64,
}

#[cfg(target_os = "linux")]
#[path = "sampling_linux.rs"]
mod imp;

/// Elsewhere nothing is sampled: [`start`] says why, and the hooks are never reached.
#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{Plan, Taken, UNAVAILABLE};

    pub(crate) fn on_alloc(_p: *mut u8, _size: usize) {}
    pub(crate) fn on_free(_p: *mut u8) {}
    pub(crate) fn start(_plan: &Plan) -> Result<(), String> {
        Err(UNAVAILABLE.unwrap_or_default().to_string())
    }
    pub(crate) fn pause(_paused: bool) {}
    pub(crate) fn stop() {}
    pub(crate) fn next_iteration() {}
    pub(crate) fn arena_full() -> bool {
        false
    }
    pub(crate) fn finish(_plan: &Plan, _path: &std::path::Path) -> Result<(Taken, u64), String> {
        Err(UNAVAILABLE.unwrap_or_default().to_string())
    }
}

pub(crate) use imp::{arena_full, finish, next_iteration, on_alloc, on_free, pause, start, stop};
