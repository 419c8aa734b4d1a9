//! How big a session's ring buffers are: sized from the data rate (samples a second ×
//! bytes a sample, stack copy included) so that each holds a stretch of samples long
//! enough to outlast a drain thread kept waiting on a busy machine, within what the
//! kernel lets the user pin.
//!
//! Pure arithmetic over what the session knows (its sample layout, its rate, how many
//! buffers it opens) and the limits read from the system ([`Allowance::read`]).

use sparkles_perf_data::attr::sample_type as st;

/// Bytes of a page (the ring buffer's unit; every Linux target sparkles samples on).
pub const PAGE: usize = 4096;

/// The most one ring buffer is made (pages): 128 MiB holds 250 ms of 64 KiB stack copies
/// at 4 kHz.
pub const MAX_PAGES: usize = 32 * 1024;

/// Kernel frames a DWARF-mode sample carries (user frames come from the stack copy):
/// deep syscall paths run to 40; a page fault in a syscall to 60.
const KERNEL_FRAMES: u64 = 64;

/// Samples a second assumed for an event sampled by period whose rate is unknown ahead
/// (a tracepoint at each hit, a page fault every N): the default profile frequency.
pub const UNKNOWN_RATE_HZ: u64 = 4000;

/// What the kernel lets this process pin in ring buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowance {
    /// Not limited by the kernel (root, CAP_IPC_LOCK, or perf_event_paranoid -1): the
    /// session keeps to `budget` bytes in all, a share of the machine's memory.
    Budget {
        /// Bytes for all buffers together.
        budget: usize,
    },
    /// An unprivileged user: `perf_event_mlock_kb` per online CPU, then what
    /// RLIMIT_MEMLOCK allows the process to pin beyond it.
    Locked {
        /// `kernel.perf_event_mlock_kb`.
        mlock_kb: usize,
        /// Online CPUs (the kernel multiplies the sysctl by them).
        cpus: usize,
        /// The soft RLIMIT_MEMLOCK, bytes (`None`: unlimited).
        memlock: Option<usize>,
    },
}

impl Allowance {
    /// The allowance of this process: for root (`privileged`), a sixteenth of the
    /// machine's memory and 1 GiB at most; otherwise the user's locked-memory limits.
    pub fn read(privileged: bool, cpus: usize) -> Allowance {
        if privileged {
            let total = std::fs::read_to_string("/proc/meminfo")
                .ok()
                .and_then(|t| mem_total(&t))
                .unwrap_or(4 << 30);
            return Allowance::Budget {
                budget: (total / 16).clamp(16 << 20, 1 << 30),
            };
        }
        let mlock_kb = std::fs::read_to_string("/proc/sys/kernel/perf_event_mlock_kb")
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(516);
        Allowance::Locked {
            mlock_kb,
            cpus: cpus.max(1),
            memlock: crate::sys::memlock_limit(),
        }
    }

    /// Bytes all buffers (each with its control page) may take together. Of
    /// RLIMIT_MEMLOCK only half is counted: the process may pin other memory against it.
    fn bytes(self) -> usize {
        match self {
            Allowance::Budget { budget } => budget,
            Allowance::Locked {
                mlock_kb,
                cpus,
                memlock,
            } => (mlock_kb * 1024 * cpus).saturating_add(memlock.map_or(1 << 30, |m| m / 2)),
        }
    }
}

/// `MemTotal` of /proc/meminfo, bytes.
fn mem_total(meminfo: &str) -> Option<usize> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Bytes one sample record takes at most (header, fields, callchain, registers, stack
/// copy), for `sample_type` with `regs_user` registers and `stack_user` stack bytes;
/// `max_stack`: the frames a callchain may hold (perf_event_max_stack).
pub fn sample_bytes(sample_type: u64, regs_user: u64, stack_user: u32, max_stack: u64) -> u64 {
    let words = [
        st::IDENTIFIER,
        st::IP,
        st::TID,
        st::TIME,
        st::ADDR,
        st::ID,
        st::STREAM_ID,
        st::CPU,
        st::PERIOD,
        st::WEIGHT,
        st::WEIGHT_STRUCT,
        st::DATA_SRC,
        st::TRANSACTION,
        st::PHYS_ADDR,
        st::CGROUP,
        st::DATA_PAGE_SIZE,
        st::CODE_PAGE_SIZE,
    ]
    .iter()
    .filter(|&&bit| sample_type & bit != 0)
    .count() as u64;
    let mut bytes = 8 + 8 * words;
    if sample_type & st::CALLCHAIN != 0 {
        // The frames, and a context marker before each run of kernel and user frames.
        let frames = if sample_type & st::STACK_USER != 0 {
            KERNEL_FRAMES
        } else {
            max_stack
        };
        bytes += 8 + 8 * (frames + 2);
    }
    if sample_type & st::RAW != 0 {
        // A sched_switch's fields: 68 bytes, in a u32-sized, 8-aligned block.
        bytes += 128;
    }
    if sample_type & st::REGS_USER != 0 {
        bytes += 8 + 8 * u64::from(regs_user.count_ones());
    }
    if sample_type & st::STACK_USER != 0 {
        bytes += 8 + u64::from(stack_user) + 8;
    }
    bytes
}

/// The ring buffers a session makes, and why they are smaller than its rate wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferPlan {
    /// Data pages per buffer (a power of two).
    pub pages: usize,
    /// How long one buffer holds samples at the session's rate, ms.
    pub hold_ms: u64,
    /// What kept the buffers smaller than the rate wants, where something did.
    pub limited_by: Option<Allowance>,
}

/// Buffers for `buffers` of them, each written at `bytes_per_second`, that hold
/// `hold_ms` of samples and at least `min_pages`, within `allowance`.
pub fn plan(
    bytes_per_second: u64,
    hold_ms: u64,
    min_pages: usize,
    buffers: usize,
    allowance: Allowance,
) -> BufferPlan {
    let wanted = bytes_per_second.saturating_mul(hold_ms) / 1000;
    let wanted = usize::try_from(wanted).unwrap_or(usize::MAX);
    let pages = wanted
        .div_ceil(PAGE)
        .max(min_pages)
        .max(1)
        .checked_next_power_of_two()
        .unwrap_or(MAX_PAGES)
        .min(MAX_PAGES.max(min_pages.next_power_of_two()));
    // Each buffer also maps its control page.
    let fit = (allowance.bytes() / buffers.max(1) / PAGE).saturating_sub(1);
    let fit = if fit == 0 {
        1
    } else {
        1 << (usize::BITS - 1 - fit.leading_zeros())
    };
    let (pages, limited_by) = if fit < pages {
        (fit, Some(allowance))
    } else {
        (pages, None)
    };
    let hold_ms = match bytes_per_second {
        0 => u64::MAX,
        r => (pages * PAGE) as u64 * 1000 / r,
    };
    BufferPlan {
        pages,
        hold_ms,
        limited_by,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DWARF: u64 = st::IP
        | st::TID
        | st::TIME
        | st::PERIOD
        | st::CPU
        | st::CALLCHAIN
        | st::IDENTIFIER
        | st::REGS_USER
        | st::STACK_USER;

    const ROOT: Allowance = Allowance::Budget { budget: 1 << 30 };

    #[test]
    fn a_sample_is_its_stack_copy_and_its_fields() {
        // 8 header, 6 words, callchain of 64 + 2, 17 registers, 16 KiB of stack.
        let bytes = sample_bytes(DWARF, 0xff0fff, 16384, 127);
        assert_eq!(bytes, 8 + 48 + 8 + 8 * 66 + 8 + 8 * 20 + 8 + 16384 + 8);
        // Frame pointers: the callchain holds every frame perf_event_max_stack allows.
        let fp = DWARF & !(st::REGS_USER | st::STACK_USER);
        assert_eq!(sample_bytes(fp, 0, 0, 127), 8 + 48 + 8 + 8 * 129);
    }

    #[test]
    fn buffers_hold_a_quarter_second_at_the_rate() {
        // 4 kHz of 16 KiB stacks: about 68 MB/s, so 17 MB, so 32 MiB (a power of two).
        let rate = 4000 * sample_bytes(DWARF, 0xff0fff, 16384, 127);
        let p = plan(rate, 250, 256, 2, ROOT);
        assert_eq!(p.pages, 8192);
        assert!(p.hold_ms >= 250, "{p:?}");
        assert_eq!(p.limited_by, None);
        // Frame pointers at 4 kHz want far less than the floor asked for.
        let p = plan(4000 * 1100, 250, 256, 2, ROOT);
        assert_eq!(p.pages, 512);
        let p = plan(4000 * 100, 250, 256, 2, ROOT);
        assert_eq!(p.pages, 256);
    }

    #[test]
    fn many_buffers_share_the_budget_and_say_so() {
        let rate = 4000 * sample_bytes(DWARF, 0xff0fff, 16384, 127);
        // 64 CPUs: 64 buffers of 32 MiB would pin 2 GiB; 1 GiB gives 8 MiB each (the
        // control pages leave less than 16 MiB).
        let p = plan(rate, 250, 256, 64, ROOT);
        assert_eq!(p.pages, 2048);
        assert_eq!(p.limited_by, Some(ROOT));
        assert!(p.hold_ms < 250 && p.hold_ms > 100, "{p:?}");
    }

    #[test]
    fn an_unprivileged_user_gets_what_mlock_and_memlock_allow() {
        let rate = 4000 * sample_bytes(DWARF, 0xff0fff, 16384, 127);
        // 516 KiB × 2 CPUs and half of 8 MiB, in 3 buffers: 1.7 MiB each, so 256 pages.
        let user = Allowance::Locked {
            mlock_kb: 516,
            cpus: 2,
            memlock: Some(8 << 20),
        };
        let p = plan(rate, 250, 256, 3, user);
        assert_eq!(p.pages, 256);
        assert_eq!(p.limited_by, Some(user));
        // Without RLIMIT_MEMLOCK room, the sysctl alone: 344 KiB each, so 64 pages.
        let tight = Allowance::Locked {
            mlock_kb: 516,
            cpus: 2,
            memlock: Some(0),
        };
        assert_eq!(plan(rate, 250, 256, 3, tight).pages, 64);
        // Never less than a page.
        let none = Allowance::Locked {
            mlock_kb: 0,
            cpus: 1,
            memlock: Some(0),
        };
        assert_eq!(plan(rate, 250, 256, 3, none).pages, 1);
    }

    #[test]
    fn a_floor_above_the_rate_is_kept_and_the_cap_holds() {
        assert_eq!(plan(0, 250, 8, 1, ROOT).pages, 8);
        assert_eq!(plan(u64::MAX, 250, 8, 1, ROOT).pages, MAX_PAGES);
        assert_eq!(plan(1_000_000, 0, 8, 1, ROOT).pages, 8);
    }

    #[test]
    fn memory_total_is_read_from_meminfo() {
        let text = "MemTotal:       24576000 kB\nMemFree:        100 kB\n";
        assert_eq!(mem_total(text), Some(24576000 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
    }
}
