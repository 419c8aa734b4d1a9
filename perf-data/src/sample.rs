//! PERF_RECORD_SAMPLE bodies, decoded field by field in the order the kernel writes them
//! (kernel/events/core.c `perf_output_sample`), not the order older uapi comments list.

use crate::attr::{read_format as rf, sample_type as st, Attr, BRANCH_HW_INDEX};
use crate::bytes::{Cursor, U64s};
use crate::error::DataError;

/// What decoding a record needs from its attr, worked out once per attr: the sample
/// fields, and where the event id and the timestamp sit in a SAMPLE body and in the
/// sample_id trailer of other records (so neither is recounted per record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleFormat {
    /// `sample_type`.
    pub sample_type: u64,
    /// `read_format`.
    pub read_format: u64,
    /// `sample_regs_user`.
    pub regs_user_mask: u64,
    /// `sample_regs_intr`.
    pub regs_intr_mask: u64,
    /// Whether branch stacks carry `hw_idx`.
    pub branch_hw_idx: bool,
    /// Bytes of the sample_id trailer of non-sample records (0 without sample_id_all).
    pub sample_id_size: usize,
    /// Where the event id sits in a SAMPLE body, in bytes from its start.
    pub id_in_sample: Option<usize>,
    /// Where the event id sits in a non-sample record, in bytes back from its end.
    pub id_from_end: Option<usize>,
    /// Where TIME sits in a SAMPLE body, in bytes from its start.
    pub time_in_sample: Option<usize>,
    /// Where TIME sits in a non-sample record, in bytes back from its end.
    pub time_from_end: Option<usize>,
}

/// Bytes of the `sample_type` fields in `bits` that `t` has (each one u64).
fn words(t: u64, bits: &[u64]) -> usize {
    8 * bits.iter().filter(|&&b| t & b != 0).count()
}

impl SampleFormat {
    /// The format of records of `attr`.
    pub fn of(attr: &Attr) -> SampleFormat {
        let t = attr.sample_type;
        let has = |bit: u64| t & bit != 0;
        // The trailer is TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER, one u64 each.
        let trailer = [
            st::TID,
            st::TIME,
            st::ID,
            st::STREAM_ID,
            st::CPU,
            st::IDENTIFIER,
        ];
        let sample_id_size = if attr.sample_id_all() {
            words(t, &trailer)
        } else {
            0
        };
        let id_in_sample = if has(st::IDENTIFIER) {
            Some(0)
        } else if has(st::ID) {
            // ID follows IP, TID, TIME and ADDR.
            Some(words(t, &[st::IP, st::TID, st::TIME, st::ADDR]))
        } else {
            None
        };
        let id_from_end = if sample_id_size == 0 {
            None
        } else if has(st::IDENTIFIER) {
            Some(8)
        } else if has(st::ID) {
            // ID is followed by STREAM_ID and CPU.
            Some(8 + words(t, &[st::STREAM_ID, st::CPU]))
        } else {
            None
        };
        let time_in_sample = has(st::TIME).then(|| words(t, &[st::IDENTIFIER, st::IP, st::TID]));
        let time_from_end = (sample_id_size > 0 && has(st::TIME))
            .then(|| 8 + words(t, &[st::ID, st::STREAM_ID, st::CPU, st::IDENTIFIER]));
        SampleFormat {
            sample_type: t,
            read_format: attr.read_format,
            regs_user_mask: attr.sample_regs_user,
            regs_intr_mask: attr.sample_regs_intr,
            branch_hw_idx: attr.branch_sample_type & BRANCH_HW_INDEX != 0,
            sample_id_size,
            id_in_sample,
            id_from_end,
            time_in_sample,
            time_from_end,
        }
    }

    fn has(&self, bit: u64) -> bool {
        self.sample_type & bit != 0
    }

    /// The event id of a record of type `type_` with this format, read without decoding
    /// it (`body`: the bytes after the header).
    pub fn id_of(&self, type_: u32, body: &[u8]) -> Option<u64> {
        self.word(type_, body, self.id_in_sample, self.id_from_end)
    }

    /// The timestamp of a record of type `type_` with this format, read without decoding it.
    pub fn time_of(&self, type_: u32, body: &[u8]) -> Option<u64> {
        self.word(type_, body, self.time_in_sample, self.time_from_end)
    }

    fn word(
        &self,
        type_: u32,
        body: &[u8],
        in_sample: Option<usize>,
        from_end: Option<usize>,
    ) -> Option<u64> {
        let at = if type_ == crate::record_kind::kind::SAMPLE {
            in_sample?
        } else if type_ < crate::record_kind::kind::HEADER_ATTR {
            body.len().checked_sub(from_end?)?
        } else {
            return None;
        };
        let b = body.get(at..at.checked_add(8)?)?;
        Some(u64::from_le_bytes([
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
        ]))
    }
}

/// Counter values of a READ field or record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadValues<'a> {
    /// The read_format they follow.
    pub format: u64,
    /// `time_enabled`, when read_format has it.
    pub time_enabled: Option<u64>,
    /// `time_running`, when read_format has it.
    pub time_running: Option<u64>,
    /// Without PERF_FORMAT_GROUP: the one counter's `(value, id, lost)`.
    pub single: Option<(u64, Option<u64>, Option<u64>)>,
    /// With PERF_FORMAT_GROUP: per counter `value`, then `id` and `lost` where
    /// read_format has them.
    pub group: U64s<'a>,
}

impl<'a> ReadValues<'a> {
    /// `(value, id, lost)` per counter.
    pub fn entries(&self) -> Vec<(u64, Option<u64>, Option<u64>)> {
        if let Some(single) = self.single {
            return vec![single];
        }
        let has_id = self.format & rf::ID != 0;
        let has_lost = self.format & rf::LOST != 0;
        let stride = 1 + usize::from(has_id) + usize::from(has_lost);
        (0..self.group.len() / stride)
            .map(|i| {
                let at = |k: usize| self.group.get(i * stride + k).unwrap_or(0);
                (
                    at(0),
                    has_id.then(|| at(1)),
                    has_lost.then(|| at(stride - 1)),
                )
            })
            .collect()
    }

    /// Parses read values in `format`.
    pub fn parse(c: &mut Cursor<'a>, format: u64) -> Result<ReadValues<'a>, DataError> {
        let has_id = format & rf::ID != 0;
        let has_lost = format & rf::LOST != 0;
        let group = format & rf::GROUP != 0;
        let first = c.u64(if group { "read group nr" } else { "read value" })?;
        let time_enabled = (format & rf::TOTAL_TIME_ENABLED != 0)
            .then(|| c.u64("read time_enabled"))
            .transpose()?;
        let time_running = (format & rf::TOTAL_TIME_RUNNING != 0)
            .then(|| c.u64("read time_running"))
            .transpose()?;
        if group {
            let per = 1 + u64::from(has_id) + u64::from(has_lost);
            let count = first
                .checked_mul(per)
                .ok_or_else(|| c.error(format!("read group of {first} counters overflows")))?;
            Ok(ReadValues {
                format,
                time_enabled,
                time_running,
                single: None,
                group: c.u64s(count, "read group values")?,
            })
        } else {
            let id = has_id.then(|| c.u64("read id")).transpose()?;
            let lost = has_lost.then(|| c.u64("read lost")).transpose()?;
            Ok(ReadValues {
                format,
                time_enabled,
                time_running,
                single: Some((first, id, lost)),
                group: U64s::default(),
            })
        }
    }
}

/// Registers sampled at overflow, in the order of the mask's set bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regs<'a> {
    /// `PERF_SAMPLE_REGS_ABI_*` (0: none recorded, 1: 32-bit, 2: 64-bit).
    pub abi: u64,
    /// The attr's register mask.
    pub mask: u64,
    /// One value per set mask bit, lowest bit first.
    pub values: U64s<'a>,
}

impl Regs<'_> {
    /// The value of register number `reg` (an index into the mask), where recorded.
    pub fn get(&self, reg: u32) -> Option<u64> {
        if reg >= 64 || self.mask & (1 << reg) == 0 {
            return None;
        }
        let index = (self.mask & ((1u64 << reg) - 1)).count_ones() as usize;
        self.values.get(index)
    }
}

/// A copy of the user stack from the stack pointer up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackUser<'a> {
    /// The bytes copied (size as requested).
    pub data: &'a [u8],
    /// How many of them are valid (the dynamic size).
    pub dyn_size: u64,
}

impl<'a> StackUser<'a> {
    /// The valid bytes.
    pub fn valid(&self) -> &'a [u8] {
        let n = usize::try_from(self.dyn_size)
            .unwrap_or(usize::MAX)
            .min(self.data.len());
        &self.data[..n]
    }
}

/// A branch stack: `(from, to, flags)` per entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BranchStack<'a> {
    /// The hardware index, with `PERF_SAMPLE_BRANCH_HW_INDEX`.
    pub hw_idx: Option<u64>,
    /// Three u64s per entry.
    pub entries: U64s<'a>,
}

impl BranchStack<'_> {
    /// `(from, to, flags)` per entry.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        (0..self.entries.len() / 3).map(move |i| {
            let get = |k| self.entries.get(i * 3 + k).unwrap_or(0);
            (get(0), get(1), get(2))
        })
    }
}

/// A sample's weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weight {
    /// `PERF_SAMPLE_WEIGHT`.
    Full(u64),
    /// `PERF_SAMPLE_WEIGHT_STRUCT`: latency, instruction latency, a third field.
    Struct {
        /// First field: the access latency (cycles).
        var1: u32,
        /// Second field: the instruction latency.
        var2: u16,
        /// Third field (model-specific).
        var3: u16,
    },
}

impl Weight {
    /// The latency: the u64 weight, or the struct's first field.
    pub fn latency(&self) -> u64 {
        match *self {
            Weight::Full(w) => w,
            Weight::Struct { var1, .. } => u64::from(var1),
        }
    }

    /// The instruction latency, where the struct form carries it.
    pub fn ins_lat(&self) -> Option<u16> {
        match *self {
            Weight::Full(_) => None,
            Weight::Struct { var2, .. } => Some(var2),
        }
    }
}

/// A decoded sample; each field is present when the attr's sample_type asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample<'a> {
    /// IDENTIFIER, or ID.
    pub id: Option<u64>,
    /// Instruction pointer.
    pub ip: Option<u64>,
    /// Process id.
    pub pid: Option<u32>,
    /// Thread id.
    pub tid: Option<u32>,
    /// Timestamp.
    pub time: Option<u64>,
    /// Data address.
    pub addr: Option<u64>,
    /// Stream id.
    pub stream_id: Option<u64>,
    /// CPU.
    pub cpu: Option<u32>,
    /// Period.
    pub period: Option<u64>,
    /// Counter values.
    pub read: Option<ReadValues<'a>>,
    /// Callchain, with PERF_CONTEXT_* markers as the kernel wrote them.
    pub callchain: Option<U64s<'a>>,
    /// Raw tracepoint data.
    pub raw: Option<&'a [u8]>,
    /// Branch stack.
    pub branch_stack: Option<BranchStack<'a>>,
    /// User registers.
    pub regs_user: Option<Regs<'a>>,
    /// User stack.
    pub stack_user: Option<StackUser<'a>>,
    /// Weight.
    pub weight: Option<Weight>,
    /// Data source.
    pub data_src: Option<u64>,
    /// Transaction flags.
    pub transaction: Option<u64>,
    /// Interrupt registers.
    pub regs_intr: Option<Regs<'a>>,
    /// Physical data address.
    pub phys_addr: Option<u64>,
    /// cgroup id.
    pub cgroup: Option<u64>,
    /// Data page size.
    pub data_page_size: Option<u64>,
    /// Code page size.
    pub code_page_size: Option<u64>,
    /// AUX snapshot.
    pub aux: Option<&'a [u8]>,
}

fn regs<'a>(c: &mut Cursor<'a>, mask: u64, what: &str) -> Result<Regs<'a>, DataError> {
    let abi = c.u64(what)?;
    let values = if abi == 0 {
        U64s(&[])
    } else {
        c.u64s(u64::from(mask.count_ones()), what)?
    };
    Ok(Regs { abi, mask, values })
}

impl<'a> Sample<'a> {
    /// Decodes a SAMPLE body (the bytes after the record header) at absolute `offset`.
    #[inline]
    pub fn parse(body: &'a [u8], offset: u64, f: &SampleFormat) -> Result<Sample<'a>, DataError> {
        let mut c = Cursor::new(body, offset);
        let mut s = Sample::default();
        if f.has(st::IDENTIFIER) {
            s.id = Some(c.u64("sample identifier")?);
        }
        if f.has(st::IP) {
            s.ip = Some(c.u64("sample ip")?);
        }
        if f.has(st::TID) {
            s.pid = Some(c.u32("sample pid")?);
            s.tid = Some(c.u32("sample tid")?);
        }
        if f.has(st::TIME) {
            s.time = Some(c.u64("sample time")?);
        }
        if f.has(st::ADDR) {
            s.addr = Some(c.u64("sample addr")?);
        }
        if f.has(st::ID) {
            s.id = Some(c.u64("sample id")?);
        }
        if f.has(st::STREAM_ID) {
            s.stream_id = Some(c.u64("sample stream_id")?);
        }
        if f.has(st::CPU) {
            s.cpu = Some(c.u32("sample cpu")?);
            c.u32("sample cpu reserved")?;
        }
        if f.has(st::PERIOD) {
            s.period = Some(c.u64("sample period")?);
        }
        if f.has(st::READ) {
            s.read = Some(ReadValues::parse(&mut c, f.read_format)?);
        }
        if f.has(st::CALLCHAIN) {
            let nr = c.u64("callchain nr")?;
            s.callchain = Some(c.u64s(nr, "callchain")?);
        }
        if f.has(st::RAW) {
            let size = c.u32("raw size")?;
            s.raw = Some(c.bytes(size as usize, "raw data")?);
        }
        if f.has(st::BRANCH_STACK) {
            let nr = c.u64("branch stack nr")?;
            let hw_idx = if f.branch_hw_idx {
                Some(c.u64("branch stack hw_idx")?)
            } else {
                None
            };
            let count = nr
                .checked_mul(3)
                .ok_or_else(|| c.error(format!("branch stack of {nr} entries overflows")))?;
            s.branch_stack = Some(BranchStack {
                hw_idx,
                entries: c.u64s(count, "branch stack entries")?,
            });
        }
        if f.has(st::REGS_USER) {
            s.regs_user = Some(regs(&mut c, f.regs_user_mask, "user regs")?);
        }
        if f.has(st::STACK_USER) {
            let size = c.u64("user stack size")?;
            let len = usize::try_from(size)
                .ok()
                .filter(|&n| n <= c.remaining())
                .ok_or_else(|| c.error(format!("user stack of {size} bytes exceeds the record")))?;
            let data = c.bytes(len, "user stack")?;
            let dyn_size = if size != 0 {
                c.u64("user stack dyn_size")?
            } else {
                0
            };
            s.stack_user = Some(StackUser { data, dyn_size });
        }
        if f.has(st::WEIGHT) {
            s.weight = Some(Weight::Full(c.u64("sample weight")?));
        } else if f.has(st::WEIGHT_STRUCT) {
            let var1 = c.u32("weight var1")?;
            let var2 = c.u16("weight var2")?;
            let var3 = c.u16("weight var3")?;
            s.weight = Some(Weight::Struct { var1, var2, var3 });
        }
        if f.has(st::DATA_SRC) {
            s.data_src = Some(c.u64("sample data_src")?);
        }
        if f.has(st::TRANSACTION) {
            s.transaction = Some(c.u64("sample transaction")?);
        }
        if f.has(st::REGS_INTR) {
            s.regs_intr = Some(regs(&mut c, f.regs_intr_mask, "interrupt regs")?);
        }
        if f.has(st::PHYS_ADDR) {
            s.phys_addr = Some(c.u64("sample phys_addr")?);
        }
        if f.has(st::CGROUP) {
            s.cgroup = Some(c.u64("sample cgroup")?);
        }
        if f.has(st::DATA_PAGE_SIZE) {
            s.data_page_size = Some(c.u64("sample data_page_size")?);
        }
        if f.has(st::CODE_PAGE_SIZE) {
            s.code_page_size = Some(c.u64("sample code_page_size")?);
        }
        if f.has(st::AUX) {
            let size = c.u64("aux size")?;
            let len = usize::try_from(size)
                .ok()
                .filter(|&n| n <= c.remaining())
                .ok_or_else(|| c.error(format!("aux data of {size} bytes exceeds the record")))?;
            s.aux = Some(c.bytes(len, "aux data")?);
        }
        Ok(s)
    }
}

/// Where the kernel's addresses start (x86_64 and aarch64 with 48-bit user space): an
/// address at or above it is the kernel's.
pub const KERNEL_HALF: u64 = 0xffff_8000_0000_0000;
