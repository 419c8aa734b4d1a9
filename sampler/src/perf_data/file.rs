//! The perf.data reader: file and pipe mode, every attr layout, compressed records, and
//! delivery in time order across rounds as perf report orders them.

use std::collections::{BTreeMap, HashMap};
use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::attr::{sample_type as st, Attr};
use super::bytes::Cursor;
use super::features::Features;
use super::record::{kind, kind_name, parse_record, Record, RecordHeader, SampleId};
use super::sample::{Sample, SampleFormat};
use crate::error::DataError;

/// "PERFILE2", little-endian.
const MAGIC: u64 = u64::from_le_bytes(*b"PERFILE2");
/// "PERFILE2" as a big-endian machine writes it.
const MAGIC_BE: u64 = u64::from_be_bytes(*b"PERFILE2");
/// The file-mode header: magic, size, attr_size, attrs, data, event_types, features.
const FILE_HEADER_SIZE: u64 = 104;
/// The pipe-mode header: magic and size.
const PIPE_HEADER_SIZE: u64 = 16;
/// One COMPRESSED record decompresses to at most this much (perf's chunks are a ring
/// buffer's worth; this bounds a malicious frame).
const MAX_DECOMPRESSED_CHUNK: u64 = 256 << 20;

/// How the file was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// `perf record -o file`: header, attr section, data section, feature sections.
    File,
    /// `perf record -o -`: a stream of records, attrs and features among them.
    Pipe,
}

/// One event description of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrEntry {
    /// The attr.
    pub attr: Attr,
    /// Its ids.
    pub ids: Vec<u64>,
    /// Its sample format, precomputed.
    pub format: SampleFormat,
    /// Its name, from EVENT_DESC.
    pub name: Option<String>,
}

/// A record delivered by [`PerfData::for_each_record`].
#[derive(Debug, Clone)]
pub struct Event<'a> {
    /// Offset of the record in the file; for records inside a COMPRESSED record, the
    /// offset of that record.
    pub offset: u64,
    /// Whether it came out of a COMPRESSED record.
    pub decompressed: bool,
    /// Its header.
    pub header: RecordHeader,
    /// The decoded record.
    pub record: Record<'a>,
    /// Index of its attr, where it has one.
    pub attr: Option<usize>,
    /// The sample_id trailer of a non-sample record.
    pub sample_id: Option<SampleId>,
    /// Its timestamp, where it has one.
    pub time: Option<u64>,
}

/// What a pass over the records saw.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Records delivered.
    pub records: u64,
    /// Bytes of the data section walked (records and the payloads that follow some):
    /// equal to the data section's size when the whole section was read.
    pub data_bytes: u64,
    /// Per type name.
    pub by_type: BTreeMap<String, u64>,
    /// Types this decoder does not know, by number: skipped by size.
    pub unknown_types: BTreeMap<u32, u64>,
    /// Samples.
    pub samples: u64,
    /// Records the kernel reported lost (LOST).
    pub lost: u64,
    /// Samples the kernel reported lost (LOST_SAMPLES).
    pub lost_samples: u64,
    /// COMPRESSED records.
    pub compressed_records: u64,
    /// Bytes they decompressed to.
    pub decompressed_bytes: u64,
}

/// Errors of opening a file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Its bytes are malformed.
    #[error("{}: {source}", path.display())]
    Data {
        /// The file.
        path: PathBuf,
        /// Where and what.
        source: DataError,
    },
}

enum Storage {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Storage {
    fn bytes(&self) -> &[u8] {
        match self {
            Storage::Mapped(m) => m,
            Storage::Owned(v) => v,
        }
    }
}

/// A perf.data file, its header read.
pub struct PerfData {
    storage: Storage,
    /// File or pipe mode.
    pub mode: Mode,
    /// The events, in file order.
    pub attrs: Vec<AttrEntry>,
    /// Header features.
    pub features: Features,
    /// Problems with header features (a malformed feature is skipped, not fatal).
    pub feature_problems: Vec<String>,
    data_start: usize,
    data_end: usize,
    id_to_attr: HashMap<u64, usize>,
}

impl std::fmt::Debug for PerfData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerfData")
            .field("mode", &self.mode)
            .field("attrs", &self.attrs.len())
            .field("data", &(self.data_start..self.data_end))
            .finish()
    }
}

fn section(c: &mut Cursor<'_>, what: &str, len: usize) -> Result<(usize, usize), DataError> {
    let at = c.offset();
    let offset = c.u64(what)?;
    let size = c.u64(what)?;
    let end = offset.checked_add(size);
    match end {
        Some(end) if end <= len as u64 => Ok((offset as usize, end as usize)),
        _ => Err(DataError::new(
            at,
            format!("{what} section [{offset}, +{size}) lies outside the {len}-byte file"),
        )),
    }
}

impl PerfData {
    /// Opens and maps `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<PerfData, ReadError> {
        let path = path.as_ref();
        let io = |source| ReadError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        // An empty file cannot be mapped; a non-regular one (a pipe) is read whole.
        let storage = if len > 0 && file.metadata().map_err(io)?.is_file() {
            // SAFETY: the map is read-only; a file truncated under us can fault, as with
            // every mmap reader (perf's included).
            Storage::Mapped(unsafe { memmap2::Mmap::map(&file) }.map_err(io)?)
        } else {
            let mut bytes = Vec::new();
            (&file).read_to_end(&mut bytes).map_err(io)?;
            Storage::Owned(bytes)
        };
        PerfData::from_storage(storage).map_err(|source| ReadError::Data {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Reads a file held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<PerfData, DataError> {
        PerfData::from_storage(Storage::Owned(bytes))
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        self.storage.bytes()
    }

    fn from_storage(storage: Storage) -> Result<PerfData, DataError> {
        let bytes = storage.bytes();
        let mut c = Cursor::new(bytes, 0);
        let magic = c.u64("perf.data magic")?;
        if magic == MAGIC_BE {
            return Err(DataError::new(
                0,
                "big-endian perf.data (recorded on a big-endian machine): not supported",
            ));
        }
        if magic != MAGIC {
            let shown = String::from_utf8_lossy(&bytes[..8.min(bytes.len())]).into_owned();
            return Err(DataError::new(
                0,
                format!("not a perf.data file: magic is {shown:?}, expected \"PERFILE2\""),
            ));
        }
        let header_size = c.u64("header size")?;
        let mut data = PerfData {
            mode: Mode::File,
            attrs: Vec::new(),
            features: Features::default(),
            feature_problems: Vec::new(),
            data_start: 0,
            data_end: 0,
            id_to_attr: HashMap::new(),
            storage: Storage::Owned(Vec::new()),
        };
        if header_size == PIPE_HEADER_SIZE {
            data.mode = Mode::Pipe;
            data.data_start = PIPE_HEADER_SIZE as usize;
            data.data_end = bytes.len();
            data.scan_pipe_header(bytes)?;
        } else if header_size >= FILE_HEADER_SIZE {
            data.read_file_header(bytes, &mut c)?;
        } else {
            return Err(DataError::new(
                8,
                format!(
                    "header size {header_size} is neither a pipe (16) nor a file header (>= 104)"
                ),
            ));
        }
        for (index, entry) in data.attrs.iter().enumerate() {
            for &id in &entry.ids {
                data.id_to_attr.entry(id).or_insert(index);
            }
        }
        data.storage = storage;
        Ok(data)
    }

    fn read_file_header(&mut self, bytes: &[u8], c: &mut Cursor<'_>) -> Result<(), DataError> {
        let at = c.offset();
        let attr_size = c.u64("attr_size")? as usize;
        if attr_size < 64 + 16 {
            return Err(DataError::new(
                at,
                format!(
                    "attr_size {attr_size} is smaller than an attr (64) and its ids section (16)"
                ),
            ));
        }
        let (attrs_start, attrs_end) = section(c, "attrs", bytes.len())?;
        let (data_start, data_end) = section(c, "data", bytes.len())?;
        let _event_types = section(c, "event_types", bytes.len());
        let mut bitmap = [0u64; 4];
        for word in &mut bitmap {
            *word = c.u64("feature bitmap")?;
        }
        self.data_start = data_start;
        self.data_end = data_end;
        let mut a = Cursor::new(&bytes[attrs_start..attrs_end], attrs_start as u64);
        while a.remaining() >= attr_size {
            let attr = Attr::parse(&mut a, attr_size - 16)?;
            let (ids_start, ids_end) = section(&mut a, "attr ids", bytes.len())?;
            let ids = Cursor::new(&bytes[ids_start..ids_end], ids_start as u64)
                .u64s(((ids_end - ids_start) / 8) as u64, "attr ids")?
                .iter()
                .collect();
            self.push_attr(attr, ids);
        }
        // Feature sections follow the data section, one per set bit, in bit order.
        let mut f = Cursor::new(&bytes[data_end.min(bytes.len())..], data_end as u64);
        for bit in 0..256u32 {
            if bitmap[(bit / 64) as usize] & (1 << (bit % 64)) == 0 {
                continue;
            }
            let (start, end) = match section(&mut f, "feature", bytes.len()) {
                Ok(s) => s,
                Err(e) => {
                    self.feature_problems.push(format!(
                        "feature {}: {e}",
                        super::features::feature_name(bit)
                    ));
                    break;
                }
            };
            self.parse_feature(bit, &bytes[start..end], start as u64);
        }
        self.name_attrs();
        Ok(())
    }

    fn parse_feature(&mut self, bit: u32, data: &[u8], offset: u64) {
        if let Err(e) = self.features.parse_one(bit, data, offset) {
            self.feature_problems.push(format!(
                "feature {}: {e}",
                super::features::feature_name(bit)
            ));
        }
    }

    fn push_attr(&mut self, attr: Attr, ids: Vec<u64>) {
        self.attrs.push(AttrEntry {
            format: SampleFormat::of(&attr),
            attr,
            ids,
            name: None,
        });
    }

    fn name_attrs(&mut self) {
        let Some(descs) = &self.features.event_desc else {
            return;
        };
        for entry in &mut self.attrs {
            entry.name = descs
                .iter()
                .find(|d| d.ids.iter().any(|id| entry.ids.contains(id)) || d.attr == entry.attr)
                .map(|d| d.name.clone());
        }
    }

    /// Pipe mode keeps attrs and features in the stream: one pass collects them.
    fn scan_pipe_header(&mut self, bytes: &[u8]) -> Result<(), DataError> {
        let mut pos = self.data_start;
        while pos + 8 <= bytes.len() {
            let header = RecordHeader::parse(&bytes[pos..], pos as u64)?;
            let body = &bytes[pos + 8..pos + header.size as usize];
            match header.type_ {
                kind::HEADER_ATTR => {
                    if let (Record::HeaderAttr { attr, ids }, _) =
                        parse_record(header, body, pos as u64, None)?
                    {
                        self.push_attr(attr, ids.iter().collect());
                    }
                }
                kind::HEADER_FEATURE => {
                    if let (Record::HeaderFeature { feature, data }, _) =
                        parse_record(header, body, pos as u64, None)?
                    {
                        self.parse_feature(feature as u32, data, pos as u64 + 16);
                    }
                }
                _ => {}
            }
            pos += header.size as usize
                + trailing_payload(header, body, bytes.len() - pos, pos as u64)?;
        }
        self.name_attrs();
        Ok(())
    }

    /// The attr of a record, and its timestamp, without decoding it.
    fn locate(&self, header: &RecordHeader, body: &[u8]) -> (Option<usize>, Option<u64>) {
        if self.attrs.is_empty() || header.type_ >= kind::HEADER_ATTR {
            return (None, None);
        }
        let first = &self.attrs[0];
        let read = |at: usize| {
            body.get(at..at + 8)
                .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
        };
        let index = if self.attrs.len() == 1 {
            Some(0)
        } else if header.type_ == kind::SAMPLE {
            first
                .attr
                .id_position_in_sample()
                .and_then(|p| read(p * 8))
                .and_then(|id| self.id_to_attr.get(&id).copied())
        } else {
            first
                .attr
                .id_position_from_end()
                .and_then(|p| body.len().checked_sub(p * 8))
                .and_then(read)
                .and_then(|id| self.id_to_attr.get(&id).copied())
        };
        let Some(index) = index else {
            return (None, None);
        };
        let entry = &self.attrs[index];
        let time = if header.type_ == kind::SAMPLE {
            Sample::time_offset(&entry.format).and_then(read)
        } else if entry.attr.sample_id_all() && entry.attr.sample_type & st::TIME != 0 {
            let t = entry.attr.sample_type;
            let after = [st::ID, st::STREAM_ID, st::CPU, st::IDENTIFIER]
                .iter()
                .filter(|&&b| t & b != 0)
                .count();
            body.len().checked_sub((after + 1) * 8).and_then(read)
        } else {
            None
        };
        (Some(index), time)
    }

    fn decode<'a>(
        &'a self,
        bytes: &'a [u8],
        at: usize,
        offset: u64,
        decompressed: bool,
    ) -> Result<Event<'a>, DataError> {
        let header = RecordHeader::parse(&bytes[at..], offset)?;
        let body = &bytes[at + 8..at + header.size as usize];
        let (attr, time) = self.locate(&header, body);
        if header.type_ == kind::SAMPLE && attr.is_none() {
            return Err(DataError::new(
                offset,
                "sample matches no attr (its id is in no attr's id list)",
            ));
        }
        let pair = attr.map(|i| (&self.attrs[i].attr, &self.attrs[i].format));
        let (record, sample_id) = parse_record(header, body, offset, pair)?;
        Ok(Event {
            offset,
            decompressed,
            header,
            record,
            attr,
            sample_id,
            time,
        })
    }

    /// Delivers every record to `visit` in time order: records with a timestamp are
    /// queued and flushed at each FINISHED_ROUND up to the previous round's latest
    /// timestamp (perf's ordered_events); records without one pass straight through.
    pub fn for_each_record<E>(
        &self,
        mut visit: impl FnMut(&Event<'_>) -> Result<(), E>,
    ) -> Result<Stats, ReadFailure<E>> {
        let bytes = self.bytes();
        let mut stats = Stats::default();
        let mut arena: Vec<u8> = Vec::new();
        let mut inflater: Option<Inflater> = None;
        let mut arena_parsed = 0usize;
        let mut order = Order::default();
        let mut deliver = |event: &Event<'_>, stats: &mut Stats| -> Result<(), ReadFailure<E>> {
            count(stats, event);
            visit(event).map_err(ReadFailure::Visit)
        };
        let mut pos = self.data_start;
        while pos < self.data_end {
            if self.data_end - pos < 8 {
                return Err(DataError::new(
                    pos as u64,
                    format!(
                        "{} stray bytes at the end of the data section",
                        self.data_end - pos
                    ),
                )
                .into());
            }
            let header = RecordHeader::parse(&bytes[pos..self.data_end], pos as u64)?;
            let body = &bytes[pos + 8..pos + header.size as usize];
            let extra = trailing_payload(header, body, self.data_end - pos, pos as u64)?;
            match header.type_ {
                kind::COMPRESSED | kind::COMPRESSED2 => {
                    let event = self.decode(bytes, pos, pos as u64, false)?;
                    let data = match event.record {
                        Record::Compressed { data } => data,
                        _ => {
                            return Err(DataError::new(
                                pos as u64,
                                "COMPRESSED record did not decode as one",
                            )
                            .into())
                        }
                    };
                    let before = arena.len();
                    let at = DataError::new(pos as u64, String::new());
                    let inflater = match &mut inflater {
                        Some(i) => i,
                        None => inflater.insert(Inflater::new().map_err(|m| DataError {
                            message: m,
                            ..at.clone()
                        })?),
                    };
                    inflater
                        .feed(data, &mut arena)
                        .map_err(|m| DataError { message: m, ..at })?;
                    // perf's zstd level compresses about 5-30x; a file expanding far beyond
                    // that is an attack on memory, not a capture.
                    let cap = (bytes.len() as u64).saturating_mul(64).max(1 << 30);
                    if arena.len() as u64 > cap {
                        return Err(DataError::new(
                            pos as u64,
                            format!("compressed records expand past {cap} bytes (64x the file)"),
                        )
                        .into());
                    }
                    stats.compressed_records += 1;
                    stats.decompressed_bytes += (arena.len() - before) as u64;
                    // Whole records only: one may continue in the next COMPRESSED record.
                    while arena.len() - arena_parsed >= 8 {
                        let size =
                            u16::from_le_bytes([arena[arena_parsed + 6], arena[arena_parsed + 7]])
                                as usize;
                        if size < 8 {
                            return Err(DataError::new(pos as u64, format!("in data decompressed from this COMPRESSED record, at decompressed byte {arena_parsed}: record size {size} < 8")).into());
                        }
                        if arena.len() - arena_parsed < size {
                            break;
                        }
                        let h = RecordHeader::parse(&arena[arena_parsed..], pos as u64)?;
                        let (_, time) =
                            self.locate(&h, &arena[arena_parsed + 8..arena_parsed + size]);
                        match queue_time(time) {
                            Some(t) => order.push(t, true, arena_parsed, pos as u64),
                            None => {
                                let event = self
                                    .decode(&arena, arena_parsed, pos as u64, true)
                                    .map_err(|e| in_chunk(e, pos, arena_parsed))?;
                                deliver(&event, &mut stats)?;
                                if h.type_ == kind::FINISHED_ROUND {
                                    let ready = order.round();
                                    self.flush(
                                        ready,
                                        bytes,
                                        &arena,
                                        &mut |e, s| deliver(e, s),
                                        &mut stats,
                                    )?;
                                }
                            }
                        }
                        arena_parsed += size;
                    }
                }
                _ => {
                    let (_, time) = self.locate(&header, body);
                    match queue_time(time) {
                        Some(t) => order.push(t, false, pos, pos as u64),
                        None => {
                            let event = self.decode(bytes, pos, pos as u64, false)?;
                            deliver(&event, &mut stats)?;
                            if header.type_ == kind::FINISHED_ROUND {
                                let ready = order.round();
                                self.flush(
                                    ready,
                                    bytes,
                                    &arena,
                                    &mut |e, s| deliver(e, s),
                                    &mut stats,
                                )?;
                            }
                        }
                    }
                }
            }
            pos += header.size as usize + extra;
            stats.data_bytes += (header.size as usize + extra) as u64;
        }
        if arena_parsed != arena.len() {
            return Err(DataError::new(
                self.data_end as u64,
                format!(
                    "{} bytes of a record cut off at the end of the compressed data",
                    arena.len() - arena_parsed
                ),
            )
            .into());
        }
        let rest = order.rest();
        self.flush(rest, bytes, &arena, &mut |e, s| deliver(e, s), &mut stats)?;
        Ok(stats)
    }

    #[allow(clippy::type_complexity)]
    fn flush<E>(
        &self,
        ready: Vec<Queued>,
        bytes: &[u8],
        arena: &[u8],
        deliver: &mut dyn FnMut(&Event<'_>, &mut Stats) -> Result<(), ReadFailure<E>>,
        stats: &mut Stats,
    ) -> Result<(), ReadFailure<E>> {
        for q in ready {
            let event = if q.arena {
                self.decode(arena, q.at, q.offset, true)
                    .map_err(|e| in_chunk(e, q.offset as usize, q.at))?
            } else {
                self.decode(bytes, q.at, q.offset, false)?
            };
            deliver(&event, stats)?;
        }
        Ok(())
    }

    /// The attr entry at `index`.
    pub fn attr(&self, index: usize) -> Option<&AttrEntry> {
        self.attrs.get(index)
    }

    /// Size of the data section in bytes.
    pub fn data_size(&self) -> usize {
        self.data_end - self.data_start
    }
}

/// The timestamp a record is queued by, if any: perf passes 0 and ~0 straight through.
fn queue_time(time: Option<u64>) -> Option<u64> {
    time.filter(|&t| t != 0 && t != u64::MAX)
}

fn in_chunk(e: DataError, record: usize, at: usize) -> DataError {
    DataError::new(
        record as u64,
        format!(
            "in data decompressed from the COMPRESSED record here, at decompressed byte {at}: {}",
            e.message
        ),
    )
}

/// perf's ordered_events: records with a timestamp wait until a round boundary says no
/// earlier record can still arrive.
#[derive(Debug, Default)]
struct Order {
    queue: Vec<Queued>,
    seq: u64,
    max_time: u64,
    /// Records up to this time may go at the next round boundary: the latest time seen
    /// when the previous round ended.
    next_flush: u64,
}

impl Order {
    fn push(&mut self, time: u64, arena: bool, at: usize, offset: u64) {
        self.max_time = self.max_time.max(time);
        self.queue.push(Queued {
            time,
            seq: self.seq,
            arena,
            at,
            offset,
        });
        self.seq += 1;
    }

    /// At FINISHED_ROUND: the records that may go now, in time order.
    fn round(&mut self) -> Vec<Queued> {
        self.queue.sort_by_key(|q| (q.time, q.seq));
        let n = self.queue.partition_point(|q| q.time <= self.next_flush);
        self.next_flush = self.max_time;
        self.queue.drain(..n).collect()
    }

    /// At the end: everything left, in time order.
    fn rest(&mut self) -> Vec<Queued> {
        self.queue.sort_by_key(|q| (q.time, q.seq));
        std::mem::take(&mut self.queue)
    }
}

/// A queued record: where its bytes are, and its place in time.
#[derive(Debug, Clone, Copy)]
struct Queued {
    time: u64,
    seq: u64,
    arena: bool,
    at: usize,
    offset: u64,
}

/// Why a pass over the records stopped.
#[derive(Debug)]
pub enum ReadFailure<E> {
    /// The data is malformed.
    Data(DataError),
    /// The visitor stopped it.
    Visit(E),
}

impl<E> From<DataError> for ReadFailure<E> {
    fn from(e: DataError) -> Self {
        ReadFailure::Data(e)
    }
}

impl<E: std::fmt::Display> std::fmt::Display for ReadFailure<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadFailure::Data(e) => e.fmt(f),
            ReadFailure::Visit(e) => e.fmt(f),
        }
    }
}

fn count(stats: &mut Stats, event: &Event<'_>) {
    stats.records += 1;
    let name = kind_name(event.header.type_);
    if name == "unknown" {
        *stats.unknown_types.entry(event.header.type_).or_default() += 1;
    } else {
        *stats.by_type.entry(name.to_string()).or_default() += 1;
    }
    match event.record {
        Record::Sample(_) => stats.samples += 1,
        Record::Lost { lost, .. } => stats.lost += lost,
        Record::LostSamples { lost } => stats.lost_samples += lost,
        _ => {}
    }
}

/// Bytes that follow a record outside its size: the tracing data after
/// HEADER_TRACING_DATA and the trace after AUXTRACE (both 8-byte aligned).
fn trailing_payload(
    header: RecordHeader,
    body: &[u8],
    left: usize,
    offset: u64,
) -> Result<usize, DataError> {
    let size = match header.type_ {
        kind::HEADER_TRACING_DATA => body
            .get(..4)
            .map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        kind::AUXTRACE => body
            .get(..8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])),
        _ => return Ok(0),
    };
    let padded = size.and_then(|s| s.checked_add(7)).map(|s| s & !7);
    match padded {
        Some(p) if p <= (left - header.size as usize) as u64 => Ok(p as usize),
        _ => Err(DataError::new(
            offset,
            format!(
                "{} record announces {size:?} bytes of payload beyond the end of the data",
                kind_name(header.type_)
            ),
        )),
    }
}

/// perf compresses every COMPRESSED record of a file with one zstd stream, flushed (not
/// ended) at each record's end: the records are consecutive pieces of that stream and
/// are fed, in file order, to one decoder.
struct Inflater {
    decoder: zstd::stream::raw::Decoder<'static>,
    buf: Vec<u8>,
}

impl Inflater {
    fn new() -> Result<Inflater, String> {
        Ok(Inflater {
            decoder: zstd::stream::raw::Decoder::new().map_err(|e| format!("zstd decoder: {e}"))?,
            buf: vec![0; 1 << 16],
        })
    }

    /// Decompresses one COMPRESSED record's payload onto `out`.
    fn feed(&mut self, mut data: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        use zstd::stream::raw::Operation;
        let start = out.len();
        loop {
            let status = self
                .decoder
                .run_on_buffers(data, &mut self.buf)
                .map_err(|e| format!("COMPRESSED record: zstd data corrupt: {e}"))?;
            out.extend_from_slice(&self.buf[..status.bytes_written]);
            data = &data[status.bytes_read..];
            if (out.len() - start) as u64 > MAX_DECOMPRESSED_CHUNK {
                return Err(format!(
                    "COMPRESSED record decompresses to more than {MAX_DECOMPRESSED_CHUNK} bytes"
                ));
            }
            // Done when the input is used up and the decoder had no more to give.
            if data.is_empty() && status.bytes_written < self.buf.len() {
                return Ok(());
            }
            if status.bytes_read == 0 && status.bytes_written == 0 {
                return Err("COMPRESSED record: zstd decoder makes no progress".to_string());
            }
        }
    }
}
