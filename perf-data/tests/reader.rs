//! The pull reader: a pipe-mode capture read as a stream that trickles in gives the same
//! records as the file mapped; a record cut by the end of one COMPRESSED record continues
//! in the next; the decompressed bytes held never exceed one COMPRESSED record's worth
//! and a partial record.

#![cfg(feature = "zstd")] // every capture here is compressed
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

mod support;

use std::io::{Read, Write};

use sparkles_perf_data::attr::{flag, sample_type as st, Attr};
use sparkles_perf_data::reader::RecordReader;
use sparkles_perf_data::record::{kind, parse_record, Record};
use sparkles_perf_data::{Error, PerfData, SampleFormat};
use support::fixtures;

/// A stream that gives at most a few bytes per read, as a pipe may.
struct Trickle {
    bytes: Vec<u8>,
    at: usize,
    step: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.step = self.step % 13 + 1;
        let n = self.step.min(buf.len()).min(self.bytes.len() - self.at);
        buf[..n].copy_from_slice(&self.bytes[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Where a record was, its type, time and attr.
type Seen = (u64, u32, Option<u64>, Option<usize>);

/// What every record was, and the samples counted.
fn records(data: &PerfData) -> (Vec<Seen>, u64) {
    let mut records = data.records().unwrap();
    let mut out = Vec::new();
    while let Some(e) = records.next_record().unwrap() {
        out.push((e.offset, e.header.type_, e.time, e.attr));
    }
    (out, records.stats().samples)
}

#[test]
fn a_pipe_capture_streamed_in_pieces_reads_as_the_mapped_file_does() {
    let Some(root) = fixtures() else { return };
    let path = root.join("format/sleep.compressed.pipe.data");
    let mapped = PerfData::open(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let stream = PerfData::from_stream(
        "sleep.compressed.pipe.data",
        Trickle {
            bytes,
            at: 0,
            step: 0,
        },
    )
    .unwrap();
    assert_eq!(stream.attrs, mapped.attrs);
    assert_eq!(stream.features, mapped.features);
    let (from_stream, samples) = records(&stream);
    let (from_file, file_samples) = records(&mapped);
    assert!(samples > 0);
    assert_eq!((from_stream, samples), (from_file, file_samples));
    // A stream is read once; a second pass says so rather than giving nothing.
    let again = stream.records().unwrap_err();
    assert!(matches!(again, Error::StreamReadTwice { .. }), "{again}");
}

#[test]
fn a_file_mode_capture_given_as_a_stream_reads_whole() {
    let Some(root) = fixtures() else { return };
    let path = root.join("format/sleep.compressed.data");
    let bytes = std::fs::read(&path).unwrap();
    let stream = PerfData::from_stream(
        "sleep.compressed.data",
        Trickle {
            bytes,
            at: 0,
            step: 0,
        },
    )
    .unwrap();
    let mapped = PerfData::open(&path).unwrap();
    assert_eq!(records(&stream), records(&mapped));
}

/// A record of `type_` with an 8-byte-aligned body.
fn record(type_: u32, body: &[u8]) -> Vec<u8> {
    let mut r = Vec::new();
    r.extend_from_slice(&type_.to_le_bytes());
    r.extend_from_slice(&0u16.to_le_bytes());
    r.extend_from_slice(&((8 + body.len()) as u16).to_le_bytes());
    r.extend_from_slice(body);
    r
}

/// COMM records, 40 bytes each with the trailer, named by their number.
fn comms(attr: &Attr, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| sparkles_perf_data::synth::comm(attr, 1, i as u32, i as u32, &format!("t{i:05}")))
        .collect()
}

/// The records compressed as perf compresses them: one zstd stream, flushed (not ended)
/// after every `per_chunk` bytes of input, each flush a COMPRESSED record.
fn compressed(records: &[Vec<u8>], per_chunk: usize) -> (Vec<u8>, usize) {
    let all: Vec<u8> = records.concat();
    let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
    let mut section = Vec::new();
    let mut chunks = 0;
    for piece in all.chunks(per_chunk) {
        encoder.write_all(piece).unwrap();
        encoder.flush().unwrap();
        let data = std::mem::take(encoder.get_mut());
        let mut body = data.clone();
        body.resize(body.len().next_multiple_of(8), 0);
        // COMPRESSED2 says how much of the body is data.
        let mut b2 = (data.len() as u64).to_le_bytes().to_vec();
        b2.extend_from_slice(&body);
        section.extend(record(kind::COMPRESSED2, &b2));
        chunks += 1;
    }
    (section, chunks)
}

#[test]
fn records_cut_by_compressed_records_arrive_whole_and_memory_stays_bounded() {
    let attr = Attr {
        sample_type: st::TID | st::TIME,
        flags: flag::SAMPLE_ID_ALL,
        ..Attr::default()
    };
    let format = SampleFormat::of(&attr);
    let originals = comms(&attr, 3000);
    // 1000-byte chunks cut most records (40 bytes each) somewhere inside.
    let (section, chunks) = compressed(&originals, 1000);
    assert!(chunks > 100);
    let mut reader = RecordReader::from_bytes(&section, 0, section.len());
    let mut seen = 0;
    let mut most = 0;
    while let Some(raw) = reader.advance().unwrap() {
        assert!(raw.decompressed_at.is_some());
        assert_eq!(
            reader.current(),
            originals[seen].as_slice(),
            "record {seen}"
        );
        let (rec, _) = parse_record(
            raw.header,
            &reader.current()[8..],
            raw.offset,
            Some(&format),
        )
        .unwrap();
        assert!(matches!(rec, Record::Comm { pid, .. } if pid as usize == seen));
        most = most.max(reader.buffered());
        seen += 1;
    }
    assert_eq!(seen, originals.len());
    // One chunk's records and the part of a record carried over, never the whole stream.
    assert!(
        most < 1000 + originals[0].len(),
        "{most} bytes held at most"
    );
    assert_eq!(reader.counts().compressed_records, chunks as u64);
    assert_eq!(
        reader.counts().decompressed_bytes,
        originals.iter().map(|r| r.len() as u64).sum::<u64>()
    );
}

#[test]
fn compressed_data_ending_inside_a_record_is_an_error_at_its_offset() {
    let attr = Attr::default();
    let mut originals = comms(&attr, 3);
    // The last record's header claims more bytes than the stream has.
    let last = originals.last_mut().unwrap();
    last[6..8].copy_from_slice(&200u16.to_le_bytes());
    let (section, _) = compressed(&originals, 64);
    let mut reader = RecordReader::from_bytes(&section, 0, section.len());
    let mut whole = 0;
    let e = loop {
        match reader.advance() {
            Ok(Some(_)) => whole += 1,
            Ok(None) => panic!("the cut record was not reported"),
            Err(e) => break e,
        }
    };
    assert_eq!(whole, 2);
    assert!(
        e.message
            .contains("cut off at the end of the compressed data"),
        "{e}"
    );
    // The offset is the last COMPRESSED record's.
    assert!(e.offset > 0 && (e.offset as usize) < section.len(), "{e}");
}
