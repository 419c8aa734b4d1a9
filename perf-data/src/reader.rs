//! Records in file order, one at a time, from a mapped file (no copy) or a stream (one
//! record in memory at a time), COMPRESSED records opened on the way.
//!
//! perf compresses every COMPRESSED record of a file with one zstd stream, flushed (not
//! ended) at each record's end: the records are consecutive pieces of that stream, fed in
//! file order to one decoder, and a record may continue from one COMPRESSED record into
//! the next. Only the decompressed bytes not yet delivered are kept: at most one
//! COMPRESSED record's worth ([`MAX_DECOMPRESSED_CHUNK`]) and the part of a record that
//! continues into the next one.
//!
//! libzstd (the `zstd` feature) reads any such stream. Without it ruzstd (pure Rust)
//! decodes whole blocks as they arrive and gives a frame's last bytes at its end: it
//! reads captures whose frames end before any other record (sparkles' own, a frame a
//! chunk), and says which feature reads one that does not (perf's endless stream).

use std::io::Read;

use crate::error::DataError;
use crate::record::{kind, kind_name, RecordHeader};

/// One COMPRESSED record decompresses to at most this much (perf's chunks are a ring
/// buffer's worth; this bounds a malicious frame).
pub const MAX_DECOMPRESSED_CHUNK: u64 = 256 << 20;

/// Why a capture whose zstd frames do not end cannot be read without libzstd.
const ENDLESS: &str = "perf record -z writes one endless stream, which this build's \
pure-Rust decoder cannot follow (it reads captures whose frames end, as sparkles writes \
them); sparkles-perf-data's `zstd` feature (libzstd) reads it";

/// Where a record was found, and what it is: everything about it but its bytes, which
/// [`RecordReader::current`] gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRecord {
    /// Offset of the record in the input; for a record out of a COMPRESSED record, that
    /// record's offset.
    pub offset: u64,
    /// For a record out of COMPRESSED records, where it starts in the decompressed stream.
    pub decompressed_at: Option<u64>,
    /// Its header.
    pub header: RecordHeader,
    /// Where its bytes lie in the input, when the input is bytes that stay put (a mapped
    /// file): a queue can keep this place instead of a copy.
    pub input_at: Option<usize>,
}

/// Byte counts of a pass over the input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadCounts {
    /// Bytes of the data section walked (records and the payloads that follow some).
    pub data_bytes: u64,
    /// COMPRESSED records opened.
    pub compressed_records: u64,
    /// Bytes they decompressed to.
    pub decompressed_bytes: u64,
}

enum Input<'a> {
    /// A data section in memory: `bytes[pos..end]` not yet read.
    Bytes {
        bytes: &'a [u8],
        pos: usize,
        end: usize,
    },
    /// A stream: the record read last is in `record`.
    Stream {
        reader: Box<dyn Read + 'a>,
        offset: u64,
        record: Vec<u8>,
    },
}

/// The record [`RecordReader::advance`] found, by where its bytes are.
#[derive(Debug, Clone, Copy)]
enum Current {
    None,
    Input(usize, usize),
    Stream,
    Inflated(usize, usize),
}

/// Reads records in file order. [`RecordReader::advance`] moves to the next record and
/// says where it is; [`RecordReader::current`] gives its bytes until the next advance.
pub struct RecordReader<'a> {
    input: Input<'a>,
    inflater: Option<Inflater>,
    /// Decompressed bytes; those before `inflated_at` are delivered.
    inflated: Vec<u8>,
    inflated_at: usize,
    /// Decompressed bytes dropped from the front of `inflated` so far.
    inflated_base: u64,
    /// The COMPRESSED record the decompressed bytes came from.
    compressed_offset: u64,
    /// At most this many bytes decompressed in all (64 times a file in memory).
    inflate_cap: Option<u64>,
    current: Current,
    counts: ReadCounts,
}

impl std::fmt::Debug for RecordReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordReader")
            .field("counts", &self.counts)
            .finish()
    }
}

impl<'a> RecordReader<'a> {
    /// Records of `bytes[start..end]`, a data section in memory (`bytes` is the whole
    /// file, so offsets are the file's).
    pub fn from_bytes(bytes: &'a [u8], start: usize, end: usize) -> RecordReader<'a> {
        let end = end.min(bytes.len());
        RecordReader::new(Input::Bytes {
            bytes,
            pos: start.min(end),
            end,
        })
        .with_inflate_cap((bytes.len() as u64).saturating_mul(64).max(1 << 30))
    }

    /// Records of a stream whose next byte is at `offset` of the input.
    pub fn from_stream(reader: impl Read + 'a, offset: u64) -> RecordReader<'a> {
        RecordReader::new(Input::Stream {
            reader: Box::new(reader),
            offset,
            record: Vec::new(),
        })
    }

    fn new(input: Input<'a>) -> RecordReader<'a> {
        RecordReader {
            input,
            inflater: None,
            inflated: Vec::new(),
            inflated_at: 0,
            inflated_base: 0,
            compressed_offset: 0,
            inflate_cap: None,
            current: Current::None,
            counts: ReadCounts::default(),
        }
    }

    fn with_inflate_cap(mut self, cap: u64) -> RecordReader<'a> {
        self.inflate_cap = Some(cap);
        self
    }

    /// What was read so far.
    pub fn counts(&self) -> ReadCounts {
        self.counts
    }

    /// Decompressed bytes held: those not yet delivered and, until the next COMPRESSED
    /// record is opened, the ones delivered from this one.
    pub fn buffered(&self) -> usize {
        self.inflated.len()
    }

    /// The input's bytes, where the input is bytes in memory.
    pub fn input_bytes(&self) -> Option<&'a [u8]> {
        match self.input {
            Input::Bytes { bytes, .. } => Some(bytes),
            Input::Stream { .. } => None,
        }
    }

    /// Where the input in memory is read to: the next record's first byte. The record
    /// [`RecordReader::current`] gives, where it is the input's, lies before it.
    pub fn input_position(&self) -> Option<usize> {
        match (self.current, &self.input) {
            (Current::Input(at, _), Input::Bytes { .. }) => Some(at),
            (_, Input::Bytes { pos, .. }) => Some(*pos),
            (_, Input::Stream { .. }) => None,
        }
    }

    /// The bytes (header included) of the record the last [`RecordReader::advance`]
    /// found; empty before the first.
    pub fn current(&self) -> &[u8] {
        match (self.current, &self.input) {
            (Current::Input(at, size), Input::Bytes { bytes, .. }) => &bytes[at..at + size],
            (Current::Stream, Input::Stream { record, .. }) => record,
            (Current::Inflated(at, size), _) => &self.inflated[at..at + size],
            _ => &[],
        }
    }

    /// Moves to the next record; `None` at the end of the input.
    pub fn advance(&mut self) -> Result<Option<RawRecord>, DataError> {
        loop {
            if let Some(found) = self.next_inflated()? {
                return Ok(Some(found));
            }
            let Some((offset, header, input_at)) = self.next_from_input()? else {
                self.current = Current::None;
                if self.inflater.as_ref().is_some_and(Inflater::inside_frame) {
                    return Err(DataError::new(
                        self.compressed_offset,
                        format!("the compressed data ends inside a zstd frame: {ENDLESS}"),
                    ));
                }
                let left = self.inflated.len() - self.inflated_at;
                if left > 0 {
                    return Err(DataError::new(
                        self.compressed_offset,
                        format!(
                            "{left} bytes of a record cut off at the end of the compressed data"
                        ),
                    ));
                }
                return Ok(None);
            };
            if matches!(header.type_, kind::COMPRESSED | kind::COMPRESSED2) {
                self.inflate(offset, header)?;
                continue;
            }
            if self.inflater.as_ref().is_some_and(Inflater::inside_frame) {
                return Err(DataError::new(
                    offset,
                    format!(
                        "a {} record inside a zstd frame that has not ended: {ENDLESS}",
                        kind_name(header.type_)
                    ),
                ));
            }
            return Ok(Some(RawRecord {
                offset,
                decompressed_at: None,
                header,
                input_at,
            }));
        }
    }

    /// Moves to the next record of the input itself, COMPRESSED records not opened (a
    /// header scan); `None` at the end of the input.
    pub fn advance_in_file(&mut self) -> Result<Option<RawRecord>, DataError> {
        Ok(self
            .next_from_input()?
            .map(|(offset, header, input_at)| RawRecord {
                offset,
                decompressed_at: None,
                header,
                input_at,
            }))
    }

    /// The next whole record of the decompressed bytes, if one is there.
    fn next_inflated(&mut self) -> Result<Option<RawRecord>, DataError> {
        let rest = &self.inflated[self.inflated_at..];
        if rest.len() < 8 {
            return Ok(None);
        }
        let at_stream = self.inflated_base + self.inflated_at as u64;
        let size = usize::from(u16::from_le_bytes([rest[6], rest[7]]));
        if size < 8 {
            return Err(DataError::new(
                self.compressed_offset,
                format!(
                    "in data decompressed from this COMPRESSED record, at decompressed byte {at_stream}: record size {size} < 8"
                ),
            ));
        }
        if rest.len() < size {
            return Ok(None);
        }
        let header = RecordHeader::parse(rest, self.compressed_offset)?;
        self.current = Current::Inflated(self.inflated_at, size);
        self.inflated_at += size;
        Ok(Some(RawRecord {
            offset: self.compressed_offset,
            decompressed_at: Some(at_stream),
            header,
            input_at: None,
        }))
    }

    /// The next record of the input itself: its offset, header and place in memory.
    #[allow(clippy::type_complexity)]
    fn next_from_input(&mut self) -> Result<Option<(u64, RecordHeader, Option<usize>)>, DataError> {
        match &mut self.input {
            Input::Bytes { bytes, pos, end } => {
                if *pos >= *end {
                    return Ok(None);
                }
                let at = *pos;
                if *end - at < 8 {
                    return Err(DataError::new(
                        at as u64,
                        format!("{} stray bytes at the end of the data section", *end - at),
                    ));
                }
                let header = RecordHeader::parse(&bytes[at..*end], at as u64)?;
                text_is_no_record(header, &bytes[at..*end], at as u64)?;
                let size = usize::from(header.size);
                let extra = trailing_payload(
                    header,
                    &bytes[at + 8..at + size],
                    (*end - at - size) as u64,
                    at as u64,
                )?;
                let step = size + extra as usize;
                *pos += step;
                self.counts.data_bytes += step as u64;
                self.current = Current::Input(at, size);
                Ok(Some((at as u64, header, Some(at))))
            }
            Input::Stream {
                reader,
                offset,
                record,
            } => {
                let at = *offset;
                record.resize(8, 0);
                let got = read_full(reader, &mut record[..8])
                    .map_err(|e| DataError::new(at, format!("reading the stream: {e}")))?;
                match got {
                    0 => return Ok(None),
                    8 => {}
                    n => {
                        return Err(DataError::new(
                            at,
                            format!("{n} stray bytes at the end of the stream"),
                        ))
                    }
                }
                let size = usize::from(u16::from_le_bytes([record[6], record[7]]));
                record.resize(size.max(8), 0);
                let got = read_full(reader, &mut record[8..])
                    .map_err(|e| DataError::new(at, format!("reading the stream: {e}")))?;
                let header = RecordHeader::parse(&record[..8 + got], at)?;
                text_is_no_record(header, &record[..8 + got], at)?;
                let extra = trailing_payload(header, &record[8..], u64::MAX, at)?;
                // The payload after a record (tracing data, an AUX trace) is skipped.
                let skipped = std::io::copy(&mut reader.by_ref().take(extra), &mut std::io::sink())
                    .map_err(|e| DataError::new(at, format!("reading the stream: {e}")))?;
                if skipped < extra {
                    return Err(DataError::new(
                        at,
                        format!(
                            "{} record announces {extra} bytes of payload; the stream ends after {skipped}",
                            kind_name(header.type_)
                        ),
                    ));
                }
                let step = size as u64 + extra;
                *offset += step;
                self.counts.data_bytes += step;
                self.current = Current::Stream;
                Ok(Some((at, header, None)))
            }
        }
    }

    /// Feeds the COMPRESSED record just read to the decoder.
    fn inflate(&mut self, offset: u64, header: RecordHeader) -> Result<(), DataError> {
        let record = match (self.current, &self.input) {
            (Current::Input(at, size), Input::Bytes { bytes, .. }) => &bytes[at..at + size],
            (Current::Stream, Input::Stream { record, .. }) => record.as_slice(),
            _ => &[],
        };
        let data = match crate::record::parse_record(header, &record[8..], offset, None)? {
            (crate::record::Record::Compressed { data }, _) => data,
            _ => {
                return Err(DataError::new(
                    offset,
                    "COMPRESSED record did not decode as one",
                ))
            }
        };
        // Delivered bytes go; a record continuing into this chunk stays at the front.
        self.inflated.drain(..self.inflated_at);
        self.inflated_base += self.inflated_at as u64;
        self.inflated_at = 0;
        let before = self.inflated.len();
        let inflater = match &mut self.inflater {
            Some(i) => i,
            None => self
                .inflater
                .insert(Inflater::new().map_err(|m| DataError::new(offset, m))?),
        };
        inflater
            .feed(data, &mut self.inflated)
            .map_err(|m| DataError::new(offset, m))?;
        self.counts.compressed_records += 1;
        self.counts.decompressed_bytes += (self.inflated.len() - before) as u64;
        // perf's zstd level compresses about 5-30x; a file expanding far beyond that is
        // an attack on time, not a capture.
        if let Some(cap) = self.inflate_cap {
            if self.counts.decompressed_bytes > cap {
                return Err(DataError::new(
                    offset,
                    format!("compressed records expand past {cap} bytes (64x the file)"),
                ));
            }
        }
        self.compressed_offset = offset;
        Ok(())
    }
}

/// Refuses text whose first bytes happen to read as a record that fits (an unknown type
/// would otherwise be skipped by size, into the middle of the text).
#[inline]
fn text_is_no_record(header: RecordHeader, bytes: &[u8], offset: u64) -> Result<(), DataError> {
    // Every byte of a printable type is at least a space.
    if header.type_ < 0x2020_2020 {
        return Ok(());
    }
    match RecordHeader::text_instead(bytes, offset) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Reads until `buf` is full or the stream ends; how many bytes it read.
pub(crate) fn read_full(reader: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Bytes that follow a record outside its size: the tracing data after
/// HEADER_TRACING_DATA and the trace after AUXTRACE (both 8-byte aligned), checked
/// against the `left` bytes after the record.
pub(crate) fn trailing_payload(
    header: RecordHeader,
    body: &[u8],
    left: u64,
    offset: u64,
) -> Result<u64, DataError> {
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
        Some(p) if p <= left => Ok(p),
        _ => Err(DataError::new(
            offset,
            format!(
                "{} record announces {size:?} bytes of payload beyond the end of the data",
                kind_name(header.type_)
            ),
        )),
    }
}

/// One zstd decoder for every COMPRESSED record of a file.
#[cfg(feature = "zstd")]
pub(crate) struct Inflater {
    decoder: zstd::stream::raw::Decoder<'static>,
    buf: Vec<u8>,
}

#[cfg(feature = "zstd")]
impl Inflater {
    pub(crate) fn new() -> Result<Inflater, String> {
        Ok(Inflater {
            decoder: zstd::stream::raw::Decoder::new().map_err(|e| format!("zstd decoder: {e}"))?,
            buf: vec![0; 1 << 16],
        })
    }

    /// Decompresses one COMPRESSED record's payload onto `out`.
    pub(crate) fn feed(&mut self, mut data: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
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

/// Without the `zstd` feature, ruzstd decodes.
#[cfg(not(feature = "zstd"))]
type Inflater = FramesInflater;

#[cfg(feature = "zstd")]
impl Inflater {
    /// libzstd follows a stream across records and frames: nothing is held back.
    fn inside_frame(&self) -> bool {
        false
    }
}

/// A frame may declare a window of at most this many bytes (libzstd's level 1 uses 512
/// KiB, its level 19 8 MiB; ruzstd's fastest 128 KiB).
const MAX_WINDOW: u64 = 128 << 20;

/// zstd frames decoded by ruzstd as their COMPRESSED records arrive: each whole block is
/// decoded when its last byte is in, the bytes no later block can refer to are given at
/// once, and the rest (at most the frame's window) at the frame's end, its checksum
/// checked.
#[cfg_attr(feature = "zstd", allow(dead_code))]
pub(crate) struct FramesInflater {
    decoder: ruzstd::decoding::FrameDecoder,
    /// Compressed bytes not yet decoded: a part of a block, a frame header or a checksum.
    pending: Vec<u8>,
    /// Inside a frame (its header read, its last block not), and whether it ends with a
    /// checksum.
    frame: Option<bool>,
}

#[cfg_attr(feature = "zstd", allow(dead_code))]
impl FramesInflater {
    pub(crate) fn new() -> Result<FramesInflater, String> {
        Ok(FramesInflater {
            decoder: ruzstd::decoding::FrameDecoder::new(),
            pending: Vec::new(),
            frame: None,
        })
    }

    /// Decompresses one COMPRESSED record's payload onto `out`: every byte of the frames
    /// it ends, and of a frame it does not end, what no later block can refer to.
    pub(crate) fn feed(&mut self, data: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        use ruzstd::decoding::BlockDecodingStrategy;
        let start = out.len();
        self.pending.extend_from_slice(data);
        let mut at = 0;
        loop {
            let rest = &self.pending[at..];
            let Some(checksum) = self.frame else {
                match crate::frames::frame_start(rest, MAX_WINDOW)? {
                    crate::frames::FrameStart::More => break,
                    crate::frames::FrameStart::Skip(n) => at += n,
                    crate::frames::FrameStart::Header { len, checksum } => {
                        self.decoder
                            .init(&rest[..len])
                            .map_err(|e| format!("COMPRESSED record: zstd frame header: {e}"))?;
                        self.frame = Some(checksum);
                        at += len;
                    }
                }
                continue;
            };
            let (blocks, len, last) = crate::frames::whole_blocks(rest, checksum)?;
            if blocks == 0 {
                break;
            }
            let mut input = &rest[..len];
            self.decoder
                .decode_blocks(&mut input, BlockDecodingStrategy::UptoBlocks(blocks))
                .map_err(|e| format!("COMPRESSED record: zstd data corrupt: {e}"))?;
            if !input.is_empty() {
                return Err("COMPRESSED record: zstd decoder stopped inside a block".to_string());
            }
            at += len;
            out.extend(self.decoder.collect().unwrap_or_default());
            if last {
                if checksum {
                    let (stored, made) = (
                        self.decoder.get_checksum_from_data(),
                        self.decoder.get_calculated_checksum(),
                    );
                    if stored != made {
                        return Err(format!(
                            "COMPRESSED record: zstd frame's checksum {stored:08x?} is not its data's {made:08x?}"
                        ));
                    }
                }
                self.frame = None;
            }
            if (out.len() - start) as u64 > MAX_DECOMPRESSED_CHUNK {
                return Err(format!(
                    "COMPRESSED record decompresses to more than {MAX_DECOMPRESSED_CHUNK} bytes"
                ));
            }
        }
        self.pending.drain(..at);
        Ok(())
    }

    /// Whether a frame is open: bytes held back until it ends.
    pub(crate) fn inside_frame(&self) -> bool {
        self.frame.is_some() || !self.pending.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A COMPRESSED record (type 81) holding `payload`.
    fn compressed(payload: &[u8]) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&kind::COMPRESSED.to_le_bytes());
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&((8 + payload.len()) as u16).to_le_bytes());
        r.extend_from_slice(payload);
        r
    }

    /// `n` bytes that compress well but not to nothing: records-like.
    fn records_like(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| ((i / 8) as u8).wrapping_mul(31) ^ (i % 251) as u8)
            .collect()
    }

    fn frame(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        ruzstd::encoding::compress(data, &mut out, ruzstd::encoding::CompressionLevel::Fastest);
        out
    }

    #[test]
    fn ruzstd_frames_fed_in_pieces_of_any_size_decode_whole() {
        // Three frames of 400 KiB, 300 KiB (several blocks each) and 10 bytes, back to back.
        let parts = [
            records_like(400 << 10),
            records_like(300 << 10),
            records_like(10),
        ];
        let mut stream = Vec::new();
        for p in &parts {
            stream.extend(frame(p));
        }
        let whole: Vec<u8> = parts.concat();
        for piece in [3, 4096, 65_527, stream.len()] {
            let mut inflater = FramesInflater::new().unwrap();
            let mut out = Vec::new();
            for (k, chunk) in stream.chunks(piece).enumerate() {
                inflater.feed(chunk, &mut out).unwrap();
                // Never more than was compressed so far, in order.
                assert!(whole.starts_with(&out), "piece {piece}, chunk {k}");
            }
            assert!(!inflater.inside_frame(), "piece {piece}");
            assert_eq!(out.len(), whole.len(), "piece {piece}");
            assert!(out == whole, "piece {piece}");
        }
    }

    #[test]
    fn a_frame_not_ended_is_held_and_said() {
        let data = records_like(600 << 10);
        let f = frame(&data);
        let mut inflater = FramesInflater::new().unwrap();
        let mut out = Vec::new();
        inflater.feed(&f[..f.len() / 2], &mut out).unwrap();
        assert!(inflater.inside_frame());
        assert!(out.len() < data.len() && data.starts_with(&out));
        inflater.feed(&f[f.len() / 2..], &mut out).unwrap();
        assert!(!inflater.inside_frame());
        assert!(out == data);
    }

    #[test]
    fn a_damaged_frame_is_an_error_never_other_bytes() {
        let data = records_like(200 << 10);
        let f = frame(&data);
        // The checksum (the frame's last four bytes) of other data.
        let mut bad = f.clone();
        let n = bad.len();
        bad[n - 1] ^= 0x55;
        let e = FramesInflater::new()
            .unwrap()
            .feed(&bad, &mut Vec::new())
            .unwrap_err();
        assert!(e.contains("checksum"), "{e}");
        // A window of 2 GiB: refused before anything is allocated for it.
        let mut huge = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, (21 << 3) as u8];
        huge.extend([1, 0, 0]);
        let e = FramesInflater::new()
            .unwrap()
            .feed(&huge, &mut Vec::new())
            .unwrap_err();
        assert!(e.contains("window"), "{e}");
        // Not a frame at all.
        let e = FramesInflater::new()
            .unwrap()
            .feed(&[1, 2, 3, 4, 5, 6, 7, 8], &mut Vec::new())
            .unwrap_err();
        assert!(e.contains("no zstd frame"), "{e}");
        // Any bit of a frame flipped, or the frame cut anywhere: an error or bytes, never a
        // panic, and never more than the frame's bytes and a block (a flipped block
        // header may say a block of 128 KiB).
        let small = records_like(20_000);
        let f = frame(&small);
        let mut next = crate::frames::tests::xorshift(0x2545_f491_4f6c_dd1d);
        for k in 0..3000 {
            let rng = next();
            let mut bad = f.clone();
            let at = (rng as usize) % bad.len();
            if k % 3 == 0 {
                bad.truncate(at);
            } else {
                bad[at] ^= 1 << (rng >> 60 & 7);
            }
            let mut out = Vec::new();
            let _ = FramesInflater::new().unwrap().feed(&bad, &mut out);
            assert!(out.len() <= small.len() + (128 << 10), "flip {k}");
        }
        // A skippable frame is skipped.
        let mut skip = vec![0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 9, 9, 9];
        skip.extend(frame(b"after"));
        let mut out = Vec::new();
        FramesInflater::new()
            .unwrap()
            .feed(&skip, &mut out)
            .unwrap();
        assert_eq!(out, b"after");
    }

    #[test]
    #[cfg(not(feature = "zstd"))]
    fn without_libzstd_a_record_inside_an_open_frame_names_the_feature() {
        // Half a frame, then a FINISHED_ROUND record (type 68), as perf's endless stream
        // puts one between its COMPRESSED records.
        let f = frame(&records_like(600 << 10));
        let mut bytes = Vec::new();
        for piece in f[..f.len() / 2].chunks(60_000) {
            bytes.extend(compressed(piece));
        }
        let round = bytes.len();
        bytes.extend([68, 0, 0, 0, 0, 0, 8, 0]);
        let mut reader = RecordReader::from_bytes(&bytes, 0, bytes.len());
        let e = loop {
            match reader.advance() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("read to the end"),
                Err(e) => break e,
            }
        };
        assert_eq!(e.offset, round as u64, "{e}");
        assert!(e.message.contains("`zstd` feature"), "{e}");
        // And a file that ends there.
        let mut reader = RecordReader::from_bytes(&bytes, 0, round);
        let e = loop {
            match reader.advance() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("read to the end"),
                Err(e) => break e,
            }
        };
        assert!(e.message.contains("ends inside a zstd frame"), "{e}");
    }

    #[test]
    fn each_piece_of_a_frame_decodes_to_bytes_of_its_own() {
        // perf stops at a COMPRESSED record that decodes to nothing.
        let mut next = crate::frames::tests::xorshift(0x5eed_u64);
        let noise: Vec<u8> = (0..1_000_000).map(|_| next() as u8).collect();
        let half: Vec<u8> = (0..1_000_000)
            .map(|i| if i % 2 == 0 { next() as u8 } else { 0 })
            .collect();
        for bytes in [noise, half] {
            let mut frame = Vec::new();
            crate::frames::compress_frame(&bytes, &mut frame, 1 << 20);
            let max = u16::MAX as usize - 8;
            let pieces = crate::frames::pieces(&frame, max);
            assert!(pieces.len() > 2, "{} pieces", pieces.len());
            assert!(pieces.concat() == frame);
            assert!(pieces.iter().all(|p| p.len() <= max));
            // What perf does: libzstd's stream decoder (which gives what it decodes at
            // once) fed a piece at a time.
            #[cfg(feature = "zstd")]
            {
                let mut inflater = Inflater::new().unwrap();
                let mut out = Vec::new();
                for (k, piece) in pieces.iter().enumerate() {
                    let before = out.len();
                    inflater.feed(piece, &mut out).unwrap();
                    assert!(
                        out.len() > before,
                        "piece {k} of {} gave nothing",
                        pieces.len()
                    );
                }
                assert!(out == bytes);
            }
            let mut inflater = FramesInflater::new().unwrap();
            let mut out = Vec::new();
            for piece in &pieces {
                inflater.feed(piece, &mut out).unwrap();
            }
            assert!(out == bytes);
        }
    }

    #[test]
    fn a_compressed_record_of_garbage_is_an_error_at_its_offset() {
        let mut bytes = vec![0u8; 0];
        bytes.extend(compressed(&[1, 2, 3, 4, 5, 6, 7, 8]));
        let mut reader = RecordReader::from_bytes(&bytes, 0, bytes.len());
        let e = reader.advance().unwrap_err();
        assert_eq!(e.offset, 0);
        assert!(e.message.contains("COMPRESSED"), "{e}");
    }
}
