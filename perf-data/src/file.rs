//! A perf.data file: its header (file or pipe mode, every attr layout, features) read on
//! open, its records pulled one at a time ([`PerfData::records`]) in time order, as perf
//! report orders them, or in file order.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

use crate::attr::Attr;
use crate::bytes::Cursor;
use crate::error::{DataError, Error};
use crate::features::Features;
use crate::order::{Order, Place};
use crate::reader::{RawRecord, RecordReader};
use crate::record::{kind, kind_name, parse_record, Record, RecordHeader, SampleId};
use crate::sample::SampleFormat;

/// "PERFILE2", little-endian.
const MAGIC: u64 = u64::from_le_bytes(*b"PERFILE2");
/// "PERFILE2" as a big-endian machine writes it.
const MAGIC_BE: u64 = u64::from_be_bytes(*b"PERFILE2");
/// "PERFFILE": the version-1 header of perf <= 3.3, the same layout; its bytes are the
/// same in either byte order, so perf tells the order by the sizes that follow.
const MAGIC_V1: u64 = u64::from_le_bytes(*b"PERFFILE");
/// The file-mode header: magic, size, attr_size, attrs, data, event_types, features.
const FILE_HEADER_SIZE: u64 = 104;
/// The file-mode header before the feature bitmap was added (perf still reads it).
const FILE_HEADER_SIZE_NO_FEATURES: u64 = 72;
/// The pipe-mode header: magic and size.
const PIPE_HEADER_SIZE: u64 = 16;

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
    /// What decoding its records needs, worked out once.
    pub format: SampleFormat,
    /// Its name, from EVENT_DESC.
    pub name: Option<String>,
}

/// A header feature that could not be parsed (and was skipped).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("feature {feature}: {error}")]
pub struct FeatureProblem {
    /// The feature, as perf names it.
    pub feature: String,
    /// Where and what.
    pub error: DataError,
}

// Written as its message: `sparkles script --header` lists them as strings.
impl Serialize for FeatureProblem {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A record, decoded.
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

/// Counts of a pass, kept by record type number (no string per record); made into
/// [`Stats`] when asked.
#[derive(Debug, Clone)]
struct Counts {
    records: u64,
    /// Records per type below 128 (every type the kernel and perf define), by type.
    by_small_type: [u64; 128],
    /// Records of any other type.
    by_type: HashMap<u32, u64>,
    samples: u64,
    lost: u64,
    lost_samples: u64,
}

impl Default for Counts {
    fn default() -> Counts {
        Counts {
            records: 0,
            by_small_type: [0; 128],
            by_type: HashMap::new(),
            samples: 0,
            lost: 0,
            lost_samples: 0,
        }
    }
}

impl Counts {
    fn count(&mut self, event: &Event<'_>) {
        self.records += 1;
        let type_ = event.header.type_;
        match self.by_small_type.get_mut(type_ as usize) {
            Some(n) => *n += 1,
            None => *self.by_type.entry(type_).or_default() += 1,
        }
        match event.record {
            Record::Sample(_) => self.samples += 1,
            Record::Lost { lost, .. } => self.lost += lost,
            Record::LostSamples { lost } => self.lost_samples += lost,
            _ => {}
        }
    }

    fn stats(&self) -> Stats {
        let mut stats = Stats {
            records: self.records,
            samples: self.samples,
            lost: self.lost,
            lost_samples: self.lost_samples,
            ..Stats::default()
        };
        let small = (0u32..).zip(self.by_small_type).filter(|&(_, n)| n > 0);
        for (type_, n) in small.chain(self.by_type.iter().map(|(&t, &n)| (t, n))) {
            match kind_name(type_) {
                "unknown" => *stats.unknown_types.entry(type_).or_default() += n,
                name => *stats.by_type.entry(name.to_string()).or_default() += n,
            }
        }
        stats
    }
}

enum Storage {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
    /// A pipe-mode stream: the records read while reading its header, and the rest,
    /// until [`PerfData::records`] takes it.
    Stream {
        prefix: Vec<u8>,
        rest: Mutex<Option<Box<dyn Read + Send>>>,
    },
}

/// A perf.data file, its header read.
pub struct PerfData {
    storage: Storage,
    path: PathBuf,
    /// File or pipe mode.
    pub mode: Mode,
    /// The events, in file order.
    pub attrs: Vec<AttrEntry>,
    /// Header features.
    pub features: Features,
    /// Header features that are malformed (skipped, not fatal).
    pub feature_problems: Vec<FeatureProblem>,
    data_start: usize,
    data_end: usize,
    id_to_attr: HashMap<u64, usize>,
}

impl std::fmt::Debug for PerfData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PerfData")
            .field("path", &self.path)
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

/// The timestamp a record is queued by, if any: perf passes 0 and ~0 straight through.
fn queue_time(time: Option<u64>) -> Option<u64> {
    time.filter(|&t| t != 0 && t != u64::MAX)
}

impl PerfData {
    /// Opens `path`: a regular file is mapped; anything else (a pipe, a terminal) is read
    /// as a pipe-mode stream, its records pulled as they come.
    pub fn open(path: impl AsRef<Path>) -> Result<PerfData, Error> {
        let path = path.as_ref();
        let io = |source| Error::io(path, source);
        let file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return PerfData::from_stream(path, file);
        }
        // An empty file cannot be mapped.
        let storage = if meta.len() > 0 {
            // SAFETY: the map is read-only; a file truncated under us can fault, as with
            // every mmap reader (perf's included).
            Storage::Mapped(unsafe { memmap2::Mmap::map(&file) }.map_err(io)?)
        } else {
            Storage::Owned(Vec::new())
        };
        PerfData::from_storage(path.to_path_buf(), storage)
    }

    /// Reads a file held in memory (named `(in memory)` in errors).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<PerfData, Error> {
        PerfData::from_storage(PathBuf::from("(in memory)"), Storage::Owned(bytes))
    }

    /// Reads a stream named `path` in errors: of a pipe-mode capture, its header records
    /// (attrs, features) now and the rest as [`PerfData::records`] pulls them; a
    /// file-mode capture (whose header points anywhere in it) is read whole.
    pub fn from_stream(
        path: impl AsRef<Path>,
        mut stream: impl Read + Send + 'static,
    ) -> Result<PerfData, Error> {
        let path = path.as_ref().to_path_buf();
        let data_error = |source| Error::Data {
            path: path.clone(),
            source,
        };
        let mut head = [0u8; 16];
        let got =
            crate::reader::read_full(&mut stream, &mut head).map_err(|e| Error::io(&path, e))?;
        let mut c = Cursor::new(&head[..got], 0);
        let size = check_magic(&mut c).map_err(data_error)?;
        if size != PIPE_HEADER_SIZE {
            // A file-mode capture's header points anywhere in it: read it whole.
            let mut bytes = head[..got].to_vec();
            stream
                .read_to_end(&mut bytes)
                .map_err(|e| Error::io(&path, e))?;
            return PerfData::from_storage(path, Storage::Owned(bytes));
        }
        // The records before the first kernel record (attrs, features, time conversion)
        // describe the stream; they are kept and delivered again with the rest.
        let mut prefix = head.to_vec();
        let mut data = PerfData::empty(path.clone(), Mode::Pipe);
        data.data_start = PIPE_HEADER_SIZE as usize;
        {
            let mut reader = RecordReader::from_stream(&mut stream, PIPE_HEADER_SIZE);
            while let Some(raw) = reader.advance_in_file().map_err(data_error)? {
                let bytes = reader.current();
                prefix.extend_from_slice(bytes);
                // A payload after the record (tracing data) was skipped: its place is
                // kept, its bytes (which nothing reads) are not.
                let payload =
                    crate::reader::trailing_payload(raw.header, &bytes[8..], u64::MAX, raw.offset)
                        .map_err(data_error)?;
                prefix.resize(prefix.len() + payload as usize, 0);
                if raw.header.type_ < kind::HEADER_ATTR
                    || matches!(raw.header.type_, kind::COMPRESSED | kind::COMPRESSED2)
                {
                    break;
                }
                data.header_record(raw, bytes).map_err(data_error)?;
            }
        }
        data.data_end = prefix.len();
        data.finish_header();
        data.storage = Storage::Stream {
            prefix,
            rest: Mutex::new(Some(Box::new(stream))),
        };
        Ok(data)
    }

    fn empty(path: PathBuf, mode: Mode) -> PerfData {
        PerfData {
            storage: Storage::Owned(Vec::new()),
            path,
            mode,
            attrs: Vec::new(),
            features: Features::default(),
            feature_problems: Vec::new(),
            data_start: 0,
            data_end: 0,
            id_to_attr: HashMap::new(),
        }
    }

    /// Where the data section (the records) lies in [`PerfData::bytes`].
    pub fn data_section(&self) -> std::ops::Range<usize> {
        self.data_start..self.data_end
    }

    /// The file (`(in memory)` for bytes, the name given for a stream).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole file, where it is in memory (a stream's are not).
    pub fn bytes(&self) -> &[u8] {
        match &self.storage {
            Storage::Mapped(m) => m,
            Storage::Owned(v) => v,
            Storage::Stream { prefix, .. } => prefix,
        }
    }

    fn from_storage(path: PathBuf, storage: Storage) -> Result<PerfData, Error> {
        let mut data = PerfData::empty(path, Mode::File);
        data.storage = storage;
        let read = {
            let bytes = data.bytes();
            let mut header = PerfData::empty(PathBuf::new(), Mode::File);
            header.read_header(bytes).map(|()| header)
        };
        match read {
            Ok(header) => Ok(PerfData {
                storage: data.storage,
                path: data.path,
                ..header
            }),
            Err(source) => Err(Error::Data {
                path: data.path,
                source,
            }),
        }
    }

    fn read_header(&mut self, bytes: &[u8]) -> Result<(), DataError> {
        let mut c = Cursor::new(bytes, 0);
        let header_size = check_magic(&mut c)?;
        if header_size == PIPE_HEADER_SIZE {
            self.mode = Mode::Pipe;
            self.data_start = PIPE_HEADER_SIZE as usize;
            self.data_end = bytes.len();
            self.scan_pipe_header(bytes)?;
        } else if header_size >= FILE_HEADER_SIZE || header_size == FILE_HEADER_SIZE_NO_FEATURES {
            self.read_file_header(bytes, &mut c, header_size >= FILE_HEADER_SIZE)?;
        } else {
            return Err(DataError::new(
                8,
                format!(
                    "header size {header_size} is neither a pipe (16) nor a file header (72 or >= 104)"
                ),
            ));
        }
        self.finish_header();
        Ok(())
    }

    /// Names the attrs from EVENT_DESC and indexes them by id.
    fn finish_header(&mut self) {
        if let Some(descs) = &self.features.event_desc {
            for entry in &mut self.attrs {
                // By id first: two events may have the same attr (a capture's second
                // view of the same samples, say).
                entry.name = descs
                    .iter()
                    .find(|d| d.ids.iter().any(|id| entry.ids.contains(id)))
                    .or_else(|| descs.iter().find(|d| d.attr == entry.attr))
                    .map(|d| d.name.clone());
            }
        }
        for (index, entry) in self.attrs.iter().enumerate() {
            for &id in &entry.ids {
                self.id_to_attr.entry(id).or_insert(index);
            }
        }
    }

    fn read_file_header(
        &mut self,
        bytes: &[u8],
        c: &mut Cursor<'_>,
        has_features: bool,
    ) -> Result<(), DataError> {
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
        if has_features {
            for word in &mut bitmap {
                *word = c.u64("feature bitmap")?;
            }
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
                Err(error) => {
                    self.feature_problems.push(FeatureProblem {
                        feature: crate::features::feature_name(bit),
                        error,
                    });
                    break;
                }
            };
            self.parse_feature(bit, &bytes[start..end], start as u64);
        }
        Ok(())
    }

    fn parse_feature(&mut self, bit: u32, data: &[u8], offset: u64) {
        if let Err(error) = self.features.parse_one(bit, data, offset) {
            self.feature_problems.push(FeatureProblem {
                feature: crate::features::feature_name(bit),
                error,
            });
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

    /// Takes what a pipe-mode header record says (an attr, a feature).
    fn header_record(&mut self, raw: RawRecord, bytes: &[u8]) -> Result<(), DataError> {
        if !matches!(raw.header.type_, kind::HEADER_ATTR | kind::HEADER_FEATURE) {
            return Ok(());
        }
        match parse_record(raw.header, &bytes[8..], raw.offset, None)?.0 {
            Record::HeaderAttr { attr, ids } => self.push_attr(attr, ids.iter().collect()),
            Record::HeaderFeature { feature, data } => {
                self.parse_feature(feature as u32, data, raw.offset + 16)
            }
            _ => {}
        }
        Ok(())
    }

    /// Pipe mode keeps attrs and features in the stream: one pass over the record headers
    /// collects them.
    fn scan_pipe_header(&mut self, bytes: &[u8]) -> Result<(), DataError> {
        let mut reader = RecordReader::from_bytes(bytes, self.data_start, self.data_end);
        // Only the file's own records: a header record is never compressed. Bytes that
        // are no record end the scan; the records pass meets them again, after
        // delivering every record before them.
        while let Ok(Some(raw)) = reader.advance_in_file() {
            self.header_record(raw, reader.current())?;
        }
        Ok(())
    }

    /// The attr of a record, and its timestamp, without decoding it.
    fn locate(&self, type_: u32, body: &[u8]) -> (Option<usize>, Option<u64>) {
        if type_ >= kind::HEADER_ATTR {
            return (None, None);
        }
        let index = match self.attrs.as_slice() {
            [] => return (None, None),
            [_] => Some(0),
            // perf.data requires every attr to keep the id at the same place.
            [first, ..] => first
                .format
                .id_of(type_, body)
                .and_then(|id| self.id_to_attr.get(&id).copied()),
        };
        let time = index.and_then(|i| self.attrs[i].format.time_of(type_, body));
        (index, time)
    }

    /// The records in time order, pulled one at a time.
    pub fn records(&self) -> Result<Records<'_>, Error> {
        self.reader(true)
    }

    /// The records in file order (no queue: what `perf script --no-ordering` would show).
    pub fn records_in_file_order(&self) -> Result<Records<'_>, Error> {
        self.reader(false)
    }

    fn reader(&self, ordered: bool) -> Result<Records<'_>, Error> {
        let raw = match &self.storage {
            Storage::Stream { prefix, rest } => {
                let rest = rest.lock().ok().and_then(|mut r| r.take()).ok_or_else(|| {
                    Error::StreamReadTwice {
                        path: self.path.clone(),
                    }
                })?;
                let stream = std::io::Cursor::new(&prefix[self.data_start..]).chain(rest);
                RecordReader::from_stream(stream, self.data_start as u64)
            }
            _ => RecordReader::from_bytes(self.bytes(), self.data_start, self.data_end),
        };
        Ok(Records {
            data: self,
            raw,
            order: Order::default(),
            ordered,
            ended: false,
            failed: None,
            counts: Counts::default(),
        })
    }

    /// Delivers every record to `visit` in time order (a loop over
    /// [`PerfData::records`]); the first error, the input's or the visitor's, ends it.
    pub fn for_each_record<E: From<Error>>(
        &self,
        mut visit: impl FnMut(&Event<'_>) -> Result<(), E>,
    ) -> Result<Stats, E> {
        let mut records = self.records()?;
        while let Some(event) = records.next_record()? {
            visit(&event)?;
        }
        Ok(records.stats())
    }

    /// [`PerfData::for_each_record`], the records read, decompressed and put in time
    /// order on another thread while this one decodes them and calls `visit`: the same
    /// events in the same order, the same first error (after every record before it),
    /// on two cores where there are two.
    pub fn for_each_record_read_ahead<E: From<Error>>(
        &self,
        mut visit: impl FnMut(&Event<'_>) -> Result<(), E>,
    ) -> Result<Stats, E> {
        use std::sync::mpsc;
        std::thread::scope(|scope| {
            let (full, filled) = mpsc::sync_channel::<Result<Batch, Error>>(4);
            let (give_back, given_back) = mpsc::channel::<Batch>();
            let reader = scope.spawn(move || {
                let mut records = match self.records() {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = full.send(Err(e));
                        return None;
                    }
                };
                let mut read = ReadInput::default();
                loop {
                    records.release_read_input(&mut read);
                    let mut batch = given_back.try_recv().unwrap_or_default();
                    batch.bytes.clear();
                    batch.records.clear();
                    let mut failed = None;
                    let mut ended = false;
                    while batch.records.len() < BATCH_RECORDS && batch.bytes.len() < BATCH_BYTES {
                        match records.locate_next() {
                            Ok(Some(l)) => {
                                let bytes = held_bytes(&records.raw, &records.order, l.held);
                                batch.records.push((batch.bytes.len(), bytes.len(), l));
                                batch.bytes.extend_from_slice(bytes);
                            }
                            Ok(None) => {
                                ended = true;
                                break;
                            }
                            Err(e) => {
                                failed = Some(e);
                                break;
                            }
                        }
                    }
                    if !batch.records.is_empty() && full.send(Ok(batch)).is_err() {
                        return None;
                    }
                    if let Some(e) = failed {
                        let _ = full.send(Err(e));
                        return None;
                    }
                    if ended {
                        return Some(records.raw.counts());
                    }
                }
            });
            let mut counts = Counts::default();
            for batch in filled.iter() {
                let batch = batch?;
                for &(at, len, l) in &batch.records {
                    let event = self.decode_located(&batch.bytes[at..at + len], &l)?;
                    counts.count(&event);
                    visit(&event)?;
                }
                let _ = give_back.send(batch);
            }
            let read = reader.join().ok().flatten().unwrap_or_default();
            Ok(Stats {
                data_bytes: read.data_bytes,
                compressed_records: read.compressed_records,
                decompressed_bytes: read.decompressed_bytes,
                ..counts.stats()
            })
        })
    }

    /// The record `bytes` that `l` located, decoded; an error names this file.
    #[inline]
    fn decode_located<'b>(&self, bytes: &'b [u8], l: &Located) -> Result<Event<'b>, Error> {
        decode(self, bytes, l.offset, l.decompressed_at, l.attr, l.time).map_err(|source| {
            Error::Data {
                path: self.path.clone(),
                source,
            }
        })
    }

    /// The attr entry at `index`.
    pub fn attr(&self, index: usize) -> Option<&AttrEntry> {
        self.attrs.get(index)
    }

    /// Size of the data section in bytes (of a stream: what its header records took).
    pub fn data_size(&self) -> usize {
        self.data_end - self.data_start
    }
}

/// Whether `bytes` begin as a perf.data file does (either magic, either byte order).
pub fn has_perf_data_magic(bytes: &[u8]) -> bool {
    bytes.get(..8).is_some_and(|m| {
        let m = u64::from_le_bytes([m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]]);
        [MAGIC, MAGIC_BE, MAGIC_V1, MAGIC_V1.swap_bytes()].contains(&m)
    })
}

/// Reads the magic (version 2, "PERFILE2", or version 1, "PERFFILE") and the header size.
fn check_magic(c: &mut Cursor<'_>) -> Result<u64, DataError> {
    let magic = c.u64("perf.data magic")?;
    if magic == MAGIC_BE {
        return Err(DataError::new(
            0,
            "big-endian perf.data (recorded on a big-endian machine): not supported",
        ));
    }
    if magic == MAGIC_V1 {
        return check_v1_size(c);
    }
    if magic != MAGIC {
        let shown = String::from_utf8_lossy(&magic.to_le_bytes()).into_owned();
        return Err(DataError::new(
            0,
            format!(
                "not a perf.data file: magic is {shown:?}, expected \"PERFILE2\" (or \"PERFFILE\", perf <= 3.3)"
            ),
        ));
    }
    c.u64("header size")
}

/// The header size of a version-1 header, whose magic is the same in either byte order:
/// perf (check_magic_endian) knows a big-endian one by sizes that read right only
/// byte-swapped.
fn check_v1_size(c: &mut Cursor<'_>) -> Result<u64, DataError> {
    let size = c.u64("header size")?;
    let known = [
        PIPE_HEADER_SIZE,
        FILE_HEADER_SIZE_NO_FEATURES,
        FILE_HEADER_SIZE,
    ];
    if !known.contains(&size) && known.contains(&size.swap_bytes()) {
        return Err(DataError::new(
            0,
            "big-endian version-1 perf.data (\"PERFFILE\", recorded by perf <= 3.3 on a big-endian machine): not supported",
        ));
    }
    Ok(size)
}

/// What to deliver next.
/// A record located, not yet decoded ([`Records::locate_next`]).
#[derive(Debug, Clone, Copy)]
struct Located {
    held: Held,
    offset: u64,
    decompressed_at: Option<u64>,
    attr: Option<usize>,
    time: Option<u64>,
}

/// Where a located record's bytes are: the raw reader's current record, a place in the
/// input, or in the ordering queue's arena (`(start, length)`).
#[derive(Debug, Clone, Copy)]
enum Held {
    Current,
    Input(usize, usize),
    Arena(usize, usize),
}

/// The bytes `held` names.
fn held_bytes<'r>(raw: &'r RecordReader<'_>, order: &'r Order, held: Held) -> &'r [u8] {
    match held {
        Held::Current => raw.current(),
        Held::Input(at, len) => {
            let input = raw.input_bytes().unwrap_or_default();
            &input[at..at + len]
        }
        Held::Arena(at, len) => &order.arena()[at..at + len],
    }
}

/// Records read ahead on another thread, handed over in order.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    /// Each record: where its bytes start in `bytes`, their length, and what locating it
    /// found.
    records: Vec<(usize, usize, Located)>,
}

/// How much of a mapped input a read-ahead reading has given back to the kernel, and
/// where it next looks for more ([`Records::release_read_input`]).
#[derive(Debug, Default)]
struct ReadInput {
    /// The input before this byte is given back.
    released: usize,
    /// Where the reading looks again.
    next_look: usize,
}

/// How far the reading goes between looks for input to give back: a look walks the
/// records waiting for their round.
const RELEASE_STEP: usize = 16 << 20;
/// Given back in whole pieces of this size (a multiple of every page size).
const RELEASE_ALIGN: usize = 64 << 10;

/// Records per batch read ahead, and bytes: a batch handed over can wake the reader
/// (a futex wake, dear in a VM: with 256 records a batch that was a tenth of the
/// decoding thread's time), and its bytes should still be in cache when decoded.
const BATCH_RECORDS: usize = 4096;
const BATCH_BYTES: usize = 1 << 20;

enum Next {
    /// The record the raw reader is at.
    Current(RawRecord, Option<usize>, Option<u64>),
    /// A released queued record.
    Queued(crate::order::Queued),
}

/// A capture's records, pulled with [`Records::next_record`]: in time order (queued until
/// their round ends, as perf report orders them), or in file order.
pub struct Records<'a> {
    data: &'a PerfData,
    raw: RecordReader<'a>,
    order: Order,
    ordered: bool,
    ended: bool,
    /// An error of the input, held until the records queued before it are delivered.
    failed: Option<DataError>,
    counts: Counts,
}

impl std::fmt::Debug for Records<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("ordered", &self.ordered)
            .field("records", &self.counts.records)
            .finish()
    }
}

impl Records<'_> {
    /// The next record; `None` after the last.
    pub fn next_record(&mut self) -> Result<Option<Event<'_>>, Error> {
        let Some(l) = self.locate_next()? else {
            return Ok(None);
        };
        let bytes = held_bytes(&self.raw, &self.order, l.held);
        let event = self.data.decode_located(bytes, &l)?;
        self.counts.count(&event);
        Ok(Some(event))
    }

    /// The next record in order, where its bytes are, its attr and its time: all but
    /// decoding it.
    fn locate_next(&mut self) -> Result<Option<Located>, Error> {
        let next = self.next().map_err(|source| Error::Data {
            path: self.data.path.clone(),
            source,
        })?;
        Ok(match next {
            None => None,
            Some(Next::Current(raw, attr, time)) => Some(Located {
                held: Held::Current,
                offset: raw.offset,
                decompressed_at: raw.decompressed_at,
                attr,
                time,
            }),
            Some(Next::Queued(q)) => Some(Located {
                held: match q.place() {
                    Place::Input(at) => Held::Input(at, q.len()),
                    Place::Arena(at) => Held::Arena(at, q.len()),
                },
                offset: q.offset,
                decompressed_at: q.decompressed_at(),
                attr: q.attr(),
                time: Some(q.time),
            }),
        })
    }

    /// Gives back to the kernel the pages of a mapped input that no record still needs
    /// (those before the earliest record waiting for its round and the reader's place):
    /// a capture read front to back then holds a window of its file in memory, not the
    /// whole file (a 670 MB capture's pages were most of a report's peak memory). Only
    /// for a reading that copies each record out as it goes (read ahead): a record
    /// delivered by [`Records::next_record`] borrows the input.
    fn release_read_input(&mut self, read: &mut ReadInput) {
        let Storage::Mapped(map) = &self.data.storage else {
            return;
        };
        let Some(at) = self.raw.input_position() else {
            return;
        };
        if at < read.next_look {
            return;
        }
        read.next_look = at + RELEASE_STEP;
        let keep = self.order.lowest_input_place().map_or(at, |q| q.min(at));
        let end = keep & !(RELEASE_ALIGN - 1);
        if end > read.released {
            // SAFETY: the map is read-only: a page given back comes back from the file as
            // it was when touched again, and the read-ahead reading holds no reference
            // into the input before `keep` (it copies each record into a batch).
            let _ = unsafe {
                map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    read.released,
                    end - read.released,
                )
            };
            read.released = end;
        }
    }

    /// What the records so far held.
    pub fn stats(&self) -> Stats {
        let read = self.raw.counts();
        Stats {
            data_bytes: read.data_bytes,
            compressed_records: read.compressed_records,
            decompressed_bytes: read.decompressed_bytes,
            ..self.counts.stats()
        }
    }

    fn next(&mut self) -> Result<Option<Next>, DataError> {
        self.order.compact();
        loop {
            if let Some(q) = self.order.pop() {
                return Ok(Some(Next::Queued(q)));
            }
            if self.ended {
                return match self.failed.take() {
                    Some(e) => Err(e),
                    None => Ok(None),
                };
            }
            // An input that fails part way still delivers every record before the
            // failure, queued ones included, as perf does; then the error.
            let advanced = self.raw.advance().unwrap_or_else(|e| {
                self.failed = Some(e);
                None
            });
            let Some(raw) = advanced else {
                self.ended = true;
                self.order.finish();
                continue;
            };
            let bytes = self.raw.current();
            let (attr, time) = self.data.locate(raw.header.type_, &bytes[8..]);
            match queue_time(time) {
                Some(t) if self.ordered => {
                    self.order.push(
                        t,
                        attr,
                        raw.input_at,
                        bytes,
                        raw.offset,
                        raw.decompressed_at,
                    );
                }
                _ => {
                    if self.ordered && raw.header.type_ == kind::FINISHED_ROUND {
                        // Delivered now; the round's records follow it.
                        self.order.round();
                    }
                    return Ok(Some(Next::Current(raw, attr, time)));
                }
            }
        }
    }
}

/// Decodes the record `bytes` (header included).
#[inline]
fn decode<'b>(
    data: &PerfData,
    bytes: &'b [u8],
    offset: u64,
    decompressed_at: Option<u64>,
    attr: Option<usize>,
    time: Option<u64>,
) -> Result<Event<'b>, DataError> {
    let inner = || -> Result<Event<'b>, DataError> {
        let header = RecordHeader::parse(bytes, offset)?;
        let body = &bytes[8..usize::from(header.size)];
        if header.type_ == kind::SAMPLE && attr.is_none() {
            return Err(DataError::new(
                offset,
                "sample matches no attr (its id is in no attr's id list)",
            ));
        }
        let format = attr.map(|i| &data.attrs[i].format);
        let (record, sample_id) = parse_record(header, body, offset, format)?;
        Ok(Event {
            offset,
            decompressed: decompressed_at.is_some(),
            header,
            record,
            attr,
            sample_id,
            time,
        })
    };
    inner().map_err(|e| match decompressed_at {
        None => e,
        Some(at) => DataError::new(
            offset,
            format!(
                "in data decompressed from the COMPRESSED record here, at decompressed byte {at}: {}",
                e.message
            ),
        ),
    })
}
