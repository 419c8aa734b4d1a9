//! Every record type the kernel writes into the ring buffer and perf writes into files,
//! decoded from a header and body, with the sample_id trailer of non-sample records.

use serde::Serialize;

use crate::attr::{sample_type as st, Attr};
use crate::bytes::{Cursor, U64s};
use crate::error::DataError;
use crate::sample::{ReadValues, Sample, SampleFormat};

pub use crate::record_kind::{kind, kind_name, misc};

/// The 8-byte header of every record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// `type`.
    pub type_: u32,
    /// `misc`.
    pub misc: u16,
    /// Total size, header included.
    pub size: u16,
}

impl RecordHeader {
    /// Reads a header and checks its size against the minimum and `available` bytes.
    #[inline]
    pub fn parse(bytes: &[u8], offset: u64) -> Result<RecordHeader, DataError> {
        let Some(b) = bytes.get(..8) else {
            return Err(RecordHeader::malformed(bytes, offset));
        };
        let h = RecordHeader {
            type_: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            misc: u16::from_le_bytes([b[4], b[5]]),
            size: u16::from_le_bytes([b[6], b[7]]),
        };
        if (h.size as usize) < 8 || h.size as usize > bytes.len() {
            return Err(RecordHeader::malformed(bytes, offset));
        }
        Ok(h)
    }

    /// Why the header at `bytes` does not parse (kept out of the fast path).
    #[cold]
    #[inline(never)]
    fn malformed(bytes: &[u8], offset: u64) -> DataError {
        if let Some(text) = RecordHeader::text_instead(bytes, offset) {
            return text;
        }
        let mut c = Cursor::new(bytes, offset);
        let h = match (
            c.u32("record header type"),
            c.u16("record header misc"),
            c.u16("record header size"),
        ) {
            (Ok(type_), Ok(misc), Ok(size)) => RecordHeader { type_, misc, size },
            (Err(e), ..) | (_, Err(e), _) | (.., Err(e)) => return e,
        };
        if (h.size as usize) < 8 {
            return DataError::new(
                offset,
                format!(
                    "record of type {} claims size {} (< 8, the header alone)",
                    h.type_, h.size
                ),
            );
        }
        DataError::new(
            offset,
            format!(
                "{} record of {} bytes is cut off: {} bytes left",
                kind_name(h.type_),
                h.size,
                bytes.len()
            ),
        )
    }

    /// Printable text where a record header should be, said as such: most often perf
    /// record's own messages (its stderr) sent into the capture with `-o - > file 2>&1`.
    /// No record type is printable (every one is below 128), so this never hides a record.
    #[cold]
    pub(crate) fn text_instead(bytes: &[u8], offset: u64) -> Option<DataError> {
        let printable = |b: &u8| matches!(b, b' '..=b'~' | b'\t' | b'\n' | b'\r');
        if bytes.len() < 8 || !bytes[..8].iter().all(printable) {
            return None;
        }
        let run = bytes.iter().take_while(|b| printable(b)).count();
        let shown = String::from_utf8_lossy(&bytes[..run.min(80)]);
        let more = if run > 80 { "…" } else { "" };
        let whose = if shown.starts_with("[ perf ") {
            "perf's own messages (its stderr, sent into the capture as by `perf record -o - > file 2>&1`)"
        } else {
            "text"
        };
        Some(DataError::new(
            offset,
            format!(
                "{whose} where a record should start, not a record: {shown:?}{more}; every record before this offset is whole"
            ),
        ))
    }
}

/// The sample_id trailer of a non-sample record (fields the attr's sample_type asks for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct SampleId {
    /// Process id.
    pub pid: Option<u32>,
    /// Thread id.
    pub tid: Option<u32>,
    /// Timestamp.
    pub time: Option<u64>,
    /// Event id (ID or IDENTIFIER).
    pub id: Option<u64>,
    /// Stream id.
    pub stream_id: Option<u64>,
    /// CPU.
    pub cpu: Option<u32>,
}

impl SampleId {
    /// Decodes the trailer at the end of `body`, whose size the format knows.
    pub fn parse(body: &[u8], offset: u64, f: &SampleFormat) -> Result<SampleId, DataError> {
        let size = f.sample_id_size;
        let start = body.len().checked_sub(size).ok_or_else(|| {
            DataError::new(
                offset,
                format!(
                    "record body of {} bytes has no room for its {size}-byte sample_id",
                    body.len()
                ),
            )
        })?;
        let mut c = Cursor::new(&body[start..], offset + start as u64);
        let t = f.sample_type;
        let mut s = SampleId::default();
        if t & st::TID != 0 {
            s.pid = Some(c.u32("sample_id pid")?);
            s.tid = Some(c.u32("sample_id tid")?);
        }
        if t & st::TIME != 0 {
            s.time = Some(c.u64("sample_id time")?);
        }
        if t & st::ID != 0 {
            s.id = Some(c.u64("sample_id id")?);
        }
        if t & st::STREAM_ID != 0 {
            s.stream_id = Some(c.u64("sample_id stream_id")?);
        }
        if t & st::CPU != 0 {
            s.cpu = Some(c.u32("sample_id cpu")?);
            c.u32("sample_id cpu reserved")?;
        }
        if t & st::IDENTIFIER != 0 {
            s.id = Some(c.u64("sample_id identifier")?);
        }
        Ok(s)
    }
}

/// MMAP and MMAP2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mmap<'a> {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Start address.
    pub addr: u64,
    /// Length.
    pub len: u64,
    /// File offset of `addr`.
    pub pgoff: u64,
    /// MMAP2 inode form: `(maj, min, ino, ino_generation)`.
    pub inode: Option<(u32, u32, u64, u64)>,
    /// MMAP2 build-id form: the build id.
    pub build_id: Option<&'a [u8]>,
    /// MMAP2 `prot`.
    pub prot: Option<u32>,
    /// MMAP2 `flags`.
    pub flags: Option<u32>,
    /// The mapped file (or `[anon]`, `//anon`, `[vdso]`, …).
    pub filename: &'a [u8],
}

/// FORK and EXIT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Task {
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// Thread id.
    pub tid: u32,
    /// Parent thread id.
    pub ptid: u32,
    /// When.
    pub time: u64,
}

/// A decoded record.
// Samples are nearly every record of a capture: boxing the large variant would cost an
// allocation per sample on the hot path.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record<'a> {
    /// PERF_RECORD_SAMPLE.
    Sample(Sample<'a>),
    /// MMAP or MMAP2.
    Mmap(Mmap<'a>),
    /// COMM.
    Comm {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// The new name.
        comm: &'a [u8],
        /// Set when the name changed because of an exec.
        exec: bool,
    },
    /// FORK.
    Fork(Task),
    /// EXIT.
    Exit(Task),
    /// LOST: the ring buffer dropped records.
    Lost {
        /// Event id.
        id: u64,
        /// Records lost.
        lost: u64,
    },
    /// LOST_SAMPLES: samples the PMU dropped.
    LostSamples {
        /// Samples lost.
        lost: u64,
    },
    /// THROTTLE (`throttled`) or UNTHROTTLE.
    Throttle {
        /// Whether throttled (else unthrottled).
        throttled: bool,
        /// When.
        time: u64,
        /// Event id.
        id: u64,
        /// Stream id.
        stream_id: u64,
    },
    /// SWITCH and SWITCH_CPU_WIDE.
    Switch {
        /// Switching out, else in.
        out: bool,
        /// Out because preempted.
        preempt: bool,
        /// SWITCH_CPU_WIDE: the next (out) or previous (in) pid and tid.
        next_prev: Option<(u32, u32)>,
    },
    /// NAMESPACES.
    Namespaces {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// `(dev, inode)` pairs.
        namespaces: U64s<'a>,
    },
    /// KSYMBOL.
    Ksymbol {
        /// Address.
        addr: u64,
        /// Length.
        len: u32,
        /// `PERF_RECORD_KSYMBOL_TYPE_*`.
        ksym_type: u16,
        /// Flags (bit 0: unregister).
        flags: u16,
        /// Name.
        name: &'a [u8],
    },
    /// BPF_EVENT.
    BpfEvent {
        /// `PERF_BPF_EVENT_*`.
        event_type: u16,
        /// Flags.
        flags: u16,
        /// Program id.
        id: u32,
        /// Program tag.
        tag: &'a [u8],
    },
    /// CGROUP.
    Cgroup {
        /// cgroup id.
        id: u64,
        /// Path.
        path: &'a [u8],
    },
    /// TEXT_POKE.
    TextPoke {
        /// Address.
        addr: u64,
        /// Old bytes.
        old: &'a [u8],
        /// New bytes.
        new: &'a [u8],
    },
    /// AUX.
    Aux {
        /// Offset in the AUX area.
        offset: u64,
        /// Size.
        size: u64,
        /// Flags.
        flags: u64,
    },
    /// ITRACE_START.
    ItraceStart {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
    },
    /// READ.
    Read {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// Values.
        values: ReadValues<'a>,
    },
    /// AUX_OUTPUT_HW_ID.
    AuxOutputHwId {
        /// Hardware id.
        hw_id: u64,
    },
    /// HEADER_ATTR (pipe mode).
    HeaderAttr {
        /// The attr.
        attr: Attr,
        /// Its ids.
        ids: U64s<'a>,
    },
    /// HEADER_BUILD_ID (a build id perf recorded for a file).
    BuildId {
        /// Process id (-1 for the kernel).
        pid: i32,
        /// The build id.
        build_id: &'a [u8],
        /// The file.
        filename: &'a [u8],
    },
    /// FINISHED_ROUND.
    FinishedRound,
    /// FINISHED_INIT.
    FinishedInit,
    /// ID_INDEX: `(id, idx, cpu, tid)` per entry.
    IdIndex {
        /// Four u64s per entry.
        entries: U64s<'a>,
    },
    /// TIME_CONV.
    TimeConv {
        /// Shift.
        time_shift: u64,
        /// Multiplier.
        time_mult: u64,
        /// Zero.
        time_zero: u64,
    },
    /// HEADER_FEATURE (pipe mode): one header feature's data.
    HeaderFeature {
        /// Feature id.
        feature: u64,
        /// Its data.
        data: &'a [u8],
    },
    /// COMPRESSED or COMPRESSED2: zstd frames holding further records.
    Compressed {
        /// The zstd data.
        data: &'a [u8],
    },
    /// A type decoded only by size: perf's stat, map and tracing records, and types
    /// newer than this decoder. Named in the stats, never an error.
    Other {
        /// The type.
        type_: u32,
        /// The body.
        body: &'a [u8],
    },
}

fn name(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    &bytes[..end]
}

/// A `u64` count of `per`-word entries, checked before it sizes anything.
fn entries<'a>(c: &mut Cursor<'a>, per: u64, what: &str) -> Result<U64s<'a>, DataError> {
    let nr = c.u64(what)?;
    let count = nr
        .checked_mul(per)
        .ok_or_else(|| c.error(format!("{what}: {nr} entries overflow")))?;
    c.u64s(count, what)
}

/// A `size`-prefixed run of bytes that must lie inside the record.
fn sized<'a>(c: &mut Cursor<'a>, size: u64, what: &str) -> Result<&'a [u8], DataError> {
    let len = usize::try_from(size)
        .ok()
        .filter(|&n| n <= c.remaining())
        .ok_or_else(|| c.error(format!("{what} of {size} bytes exceeds the record")))?;
    c.bytes(len, what)
}

impl<'a> Mmap<'a> {
    /// MMAP: pid, tid, addr, len, pgoff, filename.
    fn parse_mmap(c: &mut Cursor<'a>) -> Result<Mmap<'a>, DataError> {
        Ok(Mmap {
            pid: c.u32("mmap pid")?,
            tid: c.u32("mmap tid")?,
            addr: c.u64("mmap addr")?,
            len: c.u64("mmap len")?,
            pgoff: c.u64("mmap pgoff")?,
            inode: None,
            build_id: None,
            prot: None,
            flags: None,
            filename: c.c_str_rest(),
        })
    }

    /// MMAP2: as MMAP, then the inode or (`MMAP_BUILD_ID`) the build id, prot and flags.
    fn parse_mmap2(c: &mut Cursor<'a>, misc: u16) -> Result<Mmap<'a>, DataError> {
        let pid = c.u32("mmap2 pid")?;
        let tid = c.u32("mmap2 tid")?;
        let addr = c.u64("mmap2 addr")?;
        let len = c.u64("mmap2 len")?;
        let pgoff = c.u64("mmap2 pgoff")?;
        let (inode, build_id) = if misc & misc::MMAP_BUILD_ID != 0 {
            let size = c.u8("mmap2 build_id_size")?;
            c.skip(3, "mmap2 reserved")?;
            let id = c.bytes(20, "mmap2 build_id")?;
            (None, Some(&id[..usize::from(size).min(20)]))
        } else {
            let maj = c.u32("mmap2 maj")?;
            let min = c.u32("mmap2 min")?;
            let ino = c.u64("mmap2 ino")?;
            let generation = c.u64("mmap2 ino_generation")?;
            (Some((maj, min, ino, generation)), None)
        };
        Ok(Mmap {
            pid,
            tid,
            addr,
            len,
            pgoff,
            inode,
            build_id,
            prot: Some(c.u32("mmap2 prot")?),
            flags: Some(c.u32("mmap2 flags")?),
            filename: c.c_str_rest(),
        })
    }
}

impl Task {
    /// FORK and EXIT: pid, ppid, tid, ptid, time.
    fn parse(c: &mut Cursor<'_>) -> Result<Task, DataError> {
        Ok(Task {
            pid: c.u32("task pid")?,
            ppid: c.u32("task ppid")?,
            tid: c.u32("task tid")?,
            ptid: c.u32("task ptid")?,
            time: c.u64("task time")?,
        })
    }
}

impl<'a> Record<'a> {
    fn comm(c: &mut Cursor<'a>, misc: u16) -> Result<Record<'a>, DataError> {
        Ok(Record::Comm {
            pid: c.u32("comm pid")?,
            tid: c.u32("comm tid")?,
            comm: c.c_str_rest(),
            exec: misc & misc::COMM_EXEC != 0,
        })
    }

    fn lost(c: &mut Cursor<'a>) -> Result<Record<'a>, DataError> {
        Ok(Record::Lost {
            id: c.u64("lost id")?,
            lost: c.u64("lost count")?,
        })
    }

    fn lost_samples(c: &mut Cursor<'a>) -> Result<Record<'a>, DataError> {
        Ok(Record::LostSamples {
            lost: c.u64("lost samples")?,
        })
    }

    fn throttle(c: &mut Cursor<'a>, throttled: bool) -> Result<Record<'a>, DataError> {
        Ok(Record::Throttle {
            throttled,
            time: c.u64("throttle time")?,
            id: c.u64("throttle id")?,
            stream_id: c.u64("throttle stream_id")?,
        })
    }

    fn switch(c: &mut Cursor<'a>, misc: u16, cpu_wide: bool) -> Result<Record<'a>, DataError> {
        let next_prev = if cpu_wide {
            Some((
                c.u32("switch next_prev_pid")?,
                c.u32("switch next_prev_tid")?,
            ))
        } else {
            None
        };
        Ok(Record::Switch {
            out: misc & misc::SWITCH_OUT != 0,
            preempt: misc & misc::SWITCH_OUT_PREEMPT != 0,
            next_prev,
        })
    }

    fn namespaces(c: &mut Cursor<'a>) -> Result<Record<'a>, DataError> {
        Ok(Record::Namespaces {
            pid: c.u32("namespaces pid")?,
            tid: c.u32("namespaces tid")?,
            namespaces: entries(c, 2, "namespaces")?,
        })
    }

    fn ksymbol(c: &mut Cursor<'a>) -> Result<Record<'a>, DataError> {
        Ok(Record::Ksymbol {
            addr: c.u64("ksymbol addr")?,
            len: c.u32("ksymbol len")?,
            ksym_type: c.u16("ksymbol type")?,
            flags: c.u16("ksymbol flags")?,
            name: c.c_str_rest(),
        })
    }

    fn bpf_event(c: &mut Cursor<'a>) -> Result<Record<'a>, DataError> {
        Ok(Record::BpfEvent {
            event_type: c.u16("bpf_event type")?,
            flags: c.u16("bpf_event flags")?,
            id: c.u32("bpf_event id")?,
            tag: c.bytes(8, "bpf_event tag")?,
        })
    }

    fn cgroup(c: &mut Cursor<'a>) -> Result<Record<'a>, DataError> {
        Ok(Record::Cgroup {
            id: c.u64("cgroup id")?,
            path: c.c_str_rest(),
        })
    }

    fn text_poke(c: &mut Cursor<'a>) -> Result<Record<'a>, DataError> {
        let addr = c.u64("text_poke addr")?;
        let old_len = c.u16("text_poke old_len")?;
        let new_len = c.u16("text_poke new_len")?;
        Ok(Record::TextPoke {
            addr,
            old: c.bytes(usize::from(old_len), "text_poke old bytes")?,
            new: c.bytes(usize::from(new_len), "text_poke new bytes")?,
        })
    }

    fn aux(c: &mut Cursor<'a>) -> Result<Record<'a>, DataError> {
        Ok(Record::Aux {
            offset: c.u64("aux offset")?,
            size: c.u64("aux size")?,
            flags: c.u64("aux flags")?,
        })
    }

    fn itrace_start(c: &mut Cursor<'a>) -> Result<Record<'a>, DataError> {
        Ok(Record::ItraceStart {
            pid: c.u32("itrace_start pid")?,
            tid: c.u32("itrace_start tid")?,
        })
    }

    fn read(c: &mut Cursor<'a>, read_format: u64) -> Result<Record<'a>, DataError> {
        Ok(Record::Read {
            pid: c.u32("read pid")?,
            tid: c.u32("read tid")?,
            values: ReadValues::parse(c, read_format)?,
        })
    }

    fn aux_output_hw_id(c: &mut Cursor<'a>) -> Result<Record<'a>, DataError> {
        Ok(Record::AuxOutputHwId {
            hw_id: c.u64("aux_output_hw_id")?,
        })
    }

    /// HEADER_ATTR: the attr is as long as its own size field says; its ids fill the rest.
    fn header_attr(c: &mut Cursor<'a>) -> Result<Record<'a>, DataError> {
        let mut peek = *c;
        peek.u32("attr type")?;
        let size = match peek.u32("attr size")? as usize {
            0 => crate::attr::ATTR_SIZE_VER0 as usize,
            size => size,
        };
        let attr = Attr::parse(c, size)?;
        let n = c.remaining() / 8;
        Ok(Record::HeaderAttr {
            attr,
            ids: c.u64s(n as u64, "header_attr ids")?,
        })
    }

    fn build_id(c: &mut Cursor<'a>, misc: u16) -> Result<Record<'a>, DataError> {
        let pid = c.u32("build_id pid")? as i32;
        let raw = c.bytes(24, "build_id")?;
        let size = if misc & misc::BUILD_ID_SIZE != 0 {
            usize::from(raw[20]).min(20)
        } else {
            20
        };
        Ok(Record::BuildId {
            pid,
            build_id: &raw[..size],
            filename: name(c.c_str_rest()),
        })
    }

    fn id_index(c: &mut Cursor<'a>) -> Result<Record<'a>, DataError> {
        Ok(Record::IdIndex {
            entries: entries(c, 4, "id_index entries")?,
        })
    }

    fn time_conv(c: &mut Cursor<'a>) -> Result<Record<'a>, DataError> {
        Ok(Record::TimeConv {
            time_shift: c.u64("time_conv shift")?,
            time_mult: c.u64("time_conv mult")?,
            time_zero: c.u64("time_conv zero")?,
        })
    }

    fn header_feature(c: &mut Cursor<'a>) -> Result<Record<'a>, DataError> {
        Ok(Record::HeaderFeature {
            feature: c.u64("header_feature id")?,
            data: c.bytes(c.remaining(), "header_feature data")?,
        })
    }

    fn compressed(c: &mut Cursor<'a>) -> Result<Record<'a>, DataError> {
        Ok(Record::Compressed {
            data: c.bytes(c.remaining(), "compressed data")?,
        })
    }

    /// COMPRESSED2 says how many of its bytes are data (the rest pads to 8).
    fn compressed2(c: &mut Cursor<'a>) -> Result<Record<'a>, DataError> {
        let size = c.u64("compressed2 data_size")?;
        Ok(Record::Compressed {
            data: sized(c, size, "compressed2 data")?,
        })
    }
}

/// Decodes a record's body. `format` is the sample format of the record's attr (for
/// samples and the sample_id trailer).
#[inline]
pub fn parse_record<'a>(
    header: RecordHeader,
    body: &'a [u8],
    offset: u64,
    format: Option<&SampleFormat>,
) -> Result<(Record<'a>, Option<SampleId>), DataError> {
    let body_offset = offset + 8;
    if header.type_ == kind::SAMPLE {
        let format =
            format.ok_or_else(|| DataError::new(offset, "sample record matches no attr"))?;
        return Ok((
            Record::Sample(Sample::parse(body, body_offset, format)?),
            None,
        ));
    }
    // Kernel records end with the sample_id trailer when the attr asks for it.
    let (sample_id, trailer) = match format {
        Some(f) if header.type_ < kind::HEADER_ATTR && f.sample_id_size > 0 => (
            Some(SampleId::parse(body, body_offset, f)?),
            f.sample_id_size,
        ),
        _ => (None, 0),
    };
    let mut c = Cursor::new(&body[..body.len() - trailer], body_offset);
    let c = &mut c;
    let misc = header.misc;
    let record = match header.type_ {
        kind::MMAP => Record::Mmap(Mmap::parse_mmap(c)?),
        kind::MMAP2 => Record::Mmap(Mmap::parse_mmap2(c, misc)?),
        kind::COMM => Record::comm(c, misc)?,
        kind::FORK => Record::Fork(Task::parse(c)?),
        kind::EXIT => Record::Exit(Task::parse(c)?),
        kind::LOST => Record::lost(c)?,
        kind::LOST_SAMPLES => Record::lost_samples(c)?,
        kind::THROTTLE => Record::throttle(c, true)?,
        kind::UNTHROTTLE => Record::throttle(c, false)?,
        kind::SWITCH => Record::switch(c, misc, false)?,
        kind::SWITCH_CPU_WIDE => Record::switch(c, misc, true)?,
        kind::NAMESPACES => Record::namespaces(c)?,
        kind::KSYMBOL => Record::ksymbol(c)?,
        kind::BPF_EVENT => Record::bpf_event(c)?,
        kind::CGROUP => Record::cgroup(c)?,
        kind::TEXT_POKE => Record::text_poke(c)?,
        kind::AUX => Record::aux(c)?,
        kind::ITRACE_START => Record::itrace_start(c)?,
        kind::READ => Record::read(c, format.map_or(0, |f| f.read_format))?,
        kind::AUX_OUTPUT_HW_ID => Record::aux_output_hw_id(c)?,
        kind::HEADER_ATTR => Record::header_attr(c)?,
        kind::HEADER_BUILD_ID => Record::build_id(c, misc)?,
        kind::FINISHED_ROUND => Record::FinishedRound,
        kind::FINISHED_INIT => Record::FinishedInit,
        kind::ID_INDEX => Record::id_index(c)?,
        kind::TIME_CONV => Record::time_conv(c)?,
        kind::HEADER_FEATURE => Record::header_feature(c)?,
        kind::COMPRESSED => Record::compressed(c)?,
        kind::COMPRESSED2 => Record::compressed2(c)?,
        other => Record::Other { type_: other, body },
    };
    Ok((record, sample_id))
}
