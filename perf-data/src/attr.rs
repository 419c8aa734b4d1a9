//! `perf_event_attr` as perf.data stores it: any size from the first published layout
//! (64 bytes) to whatever newer kernels add (unknown tail ignored).

use serde::Serialize;

use crate::bytes::Cursor;
use crate::error::DataError;

/// `PERF_SAMPLE_*` bits of `sample_type`.
pub mod sample_type {
    /// Instruction pointer.
    pub const IP: u64 = 1 << 0;
    /// pid and tid.
    pub const TID: u64 = 1 << 1;
    /// Timestamp.
    pub const TIME: u64 = 1 << 2;
    /// Data address.
    pub const ADDR: u64 = 1 << 3;
    /// Counter values (read_format).
    pub const READ: u64 = 1 << 4;
    /// Callchain.
    pub const CALLCHAIN: u64 = 1 << 5;
    /// Event id.
    pub const ID: u64 = 1 << 6;
    /// CPU.
    pub const CPU: u64 = 1 << 7;
    /// Sample period.
    pub const PERIOD: u64 = 1 << 8;
    /// Stream id.
    pub const STREAM_ID: u64 = 1 << 9;
    /// Raw tracepoint data.
    pub const RAW: u64 = 1 << 10;
    /// Branch stack (LBR).
    pub const BRANCH_STACK: u64 = 1 << 11;
    /// User registers.
    pub const REGS_USER: u64 = 1 << 12;
    /// User stack bytes.
    pub const STACK_USER: u64 = 1 << 13;
    /// u64 weight.
    pub const WEIGHT: u64 = 1 << 14;
    /// Data source.
    pub const DATA_SRC: u64 = 1 << 15;
    /// Event id, first in every record.
    pub const IDENTIFIER: u64 = 1 << 16;
    /// TSX transaction flags.
    pub const TRANSACTION: u64 = 1 << 17;
    /// Interrupt registers.
    pub const REGS_INTR: u64 = 1 << 18;
    /// Physical data address.
    pub const PHYS_ADDR: u64 = 1 << 19;
    /// AUX area snapshot.
    pub const AUX: u64 = 1 << 20;
    /// cgroup id.
    pub const CGROUP: u64 = 1 << 21;
    /// Data page size.
    pub const DATA_PAGE_SIZE: u64 = 1 << 22;
    /// Code page size.
    pub const CODE_PAGE_SIZE: u64 = 1 << 23;
    /// Weight as {u32 latency, u16 instruction latency, u16}.
    pub const WEIGHT_STRUCT: u64 = 1 << 24;
}

/// `PERF_FORMAT_*` bits of `read_format`.
pub mod read_format {
    /// Time the event was enabled.
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    /// Time the event was running.
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    /// Event id per value.
    pub const ID: u64 = 1 << 2;
    /// Whole group in one read.
    pub const GROUP: u64 = 1 << 3;
    /// Lost samples per value.
    pub const LOST: u64 = 1 << 4;
}

/// `PERF_SAMPLE_BRANCH_HW_INDEX`: branch stacks carry the hardware index.
pub const BRANCH_HW_INDEX: u64 = 1 << 17;

/// The size of the first published attr layout (`PERF_ATTR_SIZE_VER0`).
pub const ATTR_SIZE_VER0: u32 = 64;

/// The attr fields the decoder and reports use, from any layout version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Attr {
    /// `type`.
    #[serde(rename = "type")]
    pub type_: u32,
    /// `size` as stored.
    pub size: u32,
    /// `config`.
    pub config: u64,
    /// `sample_period` or `sample_freq` (see `freq`).
    pub sample_period_or_freq: u64,
    /// `sample_type` bits.
    pub sample_type: u64,
    /// `read_format` bits.
    pub read_format: u64,
    /// The flag word (disabled, inherit, …, sample_id_all, …).
    pub flags: u64,
    /// `wakeup_events` or `wakeup_watermark`.
    pub wakeup: u32,
    /// `bp_type`.
    pub bp_type: u32,
    /// `config1` (`bp_addr`).
    pub config1: u64,
    /// `config2` (`bp_len`).
    pub config2: u64,
    /// `branch_sample_type`.
    pub branch_sample_type: u64,
    /// `sample_regs_user` mask.
    pub sample_regs_user: u64,
    /// `sample_stack_user` bytes.
    pub sample_stack_user: u32,
    /// `clockid`.
    pub clockid: i32,
    /// `sample_regs_intr` mask.
    pub sample_regs_intr: u64,
    /// `aux_watermark`.
    pub aux_watermark: u32,
    /// `sample_max_stack`.
    pub sample_max_stack: u16,
    /// `aux_sample_size`.
    pub aux_sample_size: u32,
    /// `sig_data`.
    pub sig_data: u64,
    /// `config3`.
    pub config3: u64,
}

/// Bits of [`Attr::flags`].
pub mod flag {
    /// Starts disabled.
    pub const DISABLED: u64 = 1 << 0;
    /// Children inherit it.
    pub const INHERIT: u64 = 1 << 1;
    /// Always on the PMU (`:D`).
    pub const PINNED: u64 = 1 << 2;
    /// Alone on the PMU (`:e`).
    pub const EXCLUSIVE: u64 = 1 << 3;
    /// Exclude user mode.
    pub const EXCLUDE_USER: u64 = 1 << 4;
    /// Exclude kernel mode.
    pub const EXCLUDE_KERNEL: u64 = 1 << 5;
    /// Exclude the hypervisor.
    pub const EXCLUDE_HV: u64 = 1 << 6;
    /// Exclude the idle task.
    pub const EXCLUDE_IDLE: u64 = 1 << 7;
    /// MMAP records.
    pub const MMAP: u64 = 1 << 8;
    /// COMM records.
    pub const COMM: u64 = 1 << 9;
    /// `sample_freq` instead of a period.
    pub const FREQ: u64 = 1 << 10;
    /// TASK (FORK/EXIT) records.
    pub const TASK: u64 = 1 << 13;
    /// `wakeup_watermark` instead of events.
    pub const WATERMARK: u64 = 1 << 14;
    /// Shift of the two precise_ip bits.
    pub const PRECISE_SHIFT: u32 = 15;
    /// sample_id_all: non-sample records carry the id trailer.
    pub const SAMPLE_ID_ALL: u64 = 1 << 18;
    /// `exclude_callchain_user`: no user frames in the kernel's callchain.
    pub const EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
    /// `mmap_data`: MMAP records for data mappings too.
    pub const MMAP_DATA: u64 = 1 << 17;
    /// Exclude the host.
    pub const EXCLUDE_HOST: u64 = 1 << 19;
    /// Exclude guests.
    pub const EXCLUDE_GUEST: u64 = 1 << 20;
    /// MMAP2 records.
    pub const MMAP2: u64 = 1 << 23;
    /// COMM records on exec.
    pub const COMM_EXEC: u64 = 1 << 24;
    /// `clockid` is used.
    pub const USE_CLOCKID: u64 = 1 << 25;
    /// SWITCH records.
    pub const CONTEXT_SWITCH: u64 = 1 << 26;
    /// MMAP2 records carry build ids.
    pub const BUILD_ID: u64 = 1 << 34;
}

impl Attr {
    /// Parses an attr of `len` bytes (its own `size` field says the layout; fields past
    /// the smaller of the two are zero).
    pub fn parse(c: &mut Cursor<'_>, len: usize) -> Result<Attr, DataError> {
        if len < ATTR_SIZE_VER0 as usize {
            return Err(c.error(format!(
                "perf_event_attr of {len} bytes is smaller than the first layout ({ATTR_SIZE_VER0})"
            )));
        }
        let start = c.offset();
        let bytes = c.bytes(len, "perf_event_attr")?;
        let mut r = Cursor::new(bytes, start);
        let mut a = Attr {
            type_: r.u32("attr.type")?,
            size: r.u32("attr.size")?,
            config: r.u64("attr.config")?,
            sample_period_or_freq: r.u64("attr.sample_period")?,
            sample_type: r.u64("attr.sample_type")?,
            read_format: r.u64("attr.read_format")?,
            flags: r.u64("attr flags")?,
            wakeup: r.u32("attr.wakeup_events")?,
            bp_type: r.u32("attr.bp_type")?,
            config1: r.u64("attr.config1")?,
            ..Attr::default()
        };
        // Later fields exist only as far as both the stored bytes and `size` reach.
        let limit = len.min(a.size.max(ATTR_SIZE_VER0) as usize);
        let at = |r: &Cursor<'_>| (r.offset() - start) as usize;
        macro_rules! field {
            ($name:ident, $read:ident, $bytes:expr) => {
                if at(&r) + $bytes <= limit {
                    a.$name = r.$read(stringify!($name))? as _;
                } else {
                    return Ok(a);
                }
            };
        }
        field!(config2, u64, 8);
        field!(branch_sample_type, u64, 8);
        field!(sample_regs_user, u64, 8);
        field!(sample_stack_user, u32, 4);
        field!(clockid, u32, 4);
        field!(sample_regs_intr, u64, 8);
        field!(aux_watermark, u32, 4);
        field!(sample_max_stack, u16, 2);
        if at(&r) + 2 <= limit {
            r.u16("attr reserved")?;
        }
        field!(aux_sample_size, u32, 4);
        if at(&r) + 4 <= limit {
            r.u32("attr reserved")?;
        }
        field!(sig_data, u64, 8);
        field!(config3, u64, 8);
        Ok(a)
    }

    /// Whether non-sample records carry the sample_id trailer.
    pub fn sample_id_all(&self) -> bool {
        self.flags & flag::SAMPLE_ID_ALL != 0
    }

    /// `precise_ip`, 0–3.
    pub fn precise_ip(&self) -> u8 {
        ((self.flags >> flag::PRECISE_SHIFT) & 3) as u8
    }

    /// Whether `sample_period_or_freq` is a frequency.
    pub fn freq(&self) -> bool {
        self.flags & flag::FREQ != 0
    }
}
