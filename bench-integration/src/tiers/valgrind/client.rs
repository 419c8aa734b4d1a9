//! Client requests: what the bench process asks of callgrind (collect on and off, zero,
//! dump with a label, instrument), no-ops where it does not run under valgrind.

/// Client requests: the instruction sequence valgrind.h documents, which valgrind's JIT
/// recognizes and a CPU runs as a no-op (the rotations sum to whole turns).
use std::ffi::{CStr, CString};

pub(super) mod request {
    /// `VG_USERREQ__RUNNING_ON_VALGRIND`.
    pub const RUNNING_ON_VALGRIND: u64 = 0x1001;
    /// callgrind's requests: `VG_USERREQ_TOOL_BASE('C', 'T')` and on.
    const CALLGRIND: u64 = ((b'C' as u64) << 24) | ((b'T' as u64) << 16);
    pub const ZERO_STATS: u64 = CALLGRIND + 1;
    pub const TOGGLE_COLLECT: u64 = CALLGRIND + 2;
    pub const DUMP_STATS_AT: u64 = CALLGRIND + 3;
    pub const START_INSTRUMENTATION: u64 = CALLGRIND + 4;
    pub const STOP_INSTRUMENTATION: u64 = CALLGRIND + 5;

    /// Whether client requests are implemented for this target.
    pub const SUPPORTED: bool = cfg!(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ));

    /// Issues request `code` with `args`; `default` where not under valgrind.
    #[inline(always)]
    pub fn send(code: u64, args: [u64; 5], default: u64) -> u64 {
        let block: [u64; 6] = [code, args[0], args[1], args[2], args[3], args[4]];
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        {
            let result: u64;
            // SAFETY: the sequence only rotates rdi by whole turns and exchanges rbx with
            // itself; valgrind reads `block` (alive across the asm) and writes rdx.
            unsafe {
                std::arch::asm!(
                    "rol rdi, 3",
                    "rol rdi, 13",
                    "rol rdi, 61",
                    "rol rdi, 51",
                    "xchg rbx, rbx",
                    in("rax") block.as_ptr(),
                    inlateout("rdx") default => result,
                    options(nostack),
                );
            }
            result
        }
        #[cfg(all(target_os = "linux", target_arch = "aarch64"))]
        {
            let result: u64;
            // SAFETY: as above: x12 rotated by whole turns, x10 or-ed with itself.
            unsafe {
                std::arch::asm!(
                    "ror x12, x12, #3",
                    "ror x12, x12, #13",
                    "ror x12, x12, #51",
                    "ror x12, x12, #61",
                    "orr x10, x10, x10",
                    in("x4") block.as_ptr(),
                    inlateout("x3") default => result,
                    options(nostack),
                );
            }
            result
        }
        #[cfg(not(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        )))]
        {
            let _ = block;
            default
        }
    }
}

/// Whether this process runs under valgrind.
pub fn running_on_valgrind() -> bool {
    request::send(request::RUNNING_ON_VALGRIND, [0; 5], 0) != 0
}

/// Turns callgrind's collection on where it is off, off where it is on (this thread's).
#[inline(always)]
pub fn toggle_collect() {
    request::send(request::TOGGLE_COLLECT, [0; 5], 0);
}

/// Starts callgrind's instrumentation (`--instr-atstart=no` leaves the process's start
/// and the case's setup running at valgrind's bare speed, several times faster).
pub fn start_instrumentation() {
    request::send(request::START_INSTRUMENTATION, [0; 5], 0);
}

/// Stops callgrind's instrumentation: the next case's setup runs at bare speed again.
pub fn stop_instrumentation() {
    request::send(request::STOP_INSTRUMENTATION, [0; 5], 0);
}

/// Zeroes callgrind's counts since the last dump.
pub fn zero_stats() {
    request::send(request::ZERO_STATS, [0; 5], 0);
}

/// Dumps callgrind's counts since the last dump to a file of its own, labelled `label`
/// (made before the runs: nothing is allocated between two collected runs, see
/// [`dump_labels`]).
pub fn dump_stats_at(label: &CStr) {
    request::send(
        request::DUMP_STATS_AT,
        [label.as_ptr() as u64, 0, 0, 0, 0],
        0,
    );
}

/// The label of case `case`'s bracket `bracket`: its full run (`n + 1` iterations) or its
/// base run (1), as dumped.
pub fn dump_label(case: u32, bracket: u32, full: bool) -> String {
    format!(
        "sparkles {case} {bracket} {}",
        if full { "full" } else { "base" }
    )
}

/// Each bracket's labels, base run's then full run's, made before any run is collected.
/// A label made between two runs (a `String`, then its `CString`, both freed) left the
/// allocator's small-block caches in another state before every collected run but the
/// first: the first bracket read 30 to 200 instructions off the rest in base64's cases
/// whose work allocates, so that they took every bracket.
pub fn dump_labels(case: u32, brackets: std::ops::Range<u32>) -> Vec<[CString; 2]> {
    brackets
        .map(|b| {
            [false, true].map(|full| CString::new(dump_label(case, b, full)).unwrap_or_default())
        })
        .collect()
}
