//! The oldest and the newest perf.data that perf writes, real captures in
//! `../testdata/perf-data/` (see its PROVENANCE.md): the version-1 `PERFFILE` header of
//! perf 3.2 and 3.3, and PERF_RECORD_COMPRESSED2 (perf >= 6.16) in pipe and file mode.
//! Each reads with perf 6.1's sample count, per event and per (tid, µs timestamp), and
//! its record count per type, from the `*.perf61-*.txt` goldens beside it, through the
//! plain pass and the read-ahead one alike; damaged copies give errors, never a panic.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use sparkles_perf_data::{Error, PerfData, Record, Stats};
use support::damaged_copies_never_panic;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/perf-data")
}

/// What a pass over a capture saw: per sample its event name and (tid, µs time), the
/// pass's stats, or the error that ended it (after every record before it).
#[derive(Debug, PartialEq, Eq)]
struct Reading {
    samples: Vec<(String, u32, u64)>,
    end: Result<Stats, String>,
}

fn read(data: &PerfData, read_ahead: bool) -> Reading {
    let mut samples = Vec::new();
    let visit = |e: &sparkles_perf_data::Event<'_>| {
        if let Record::Sample(s) = &e.record {
            let name = e
                .attr
                .and_then(|i| data.attrs[i].name.clone())
                .unwrap_or_default();
            samples.push((name, s.tid.unwrap(), s.time.unwrap() / 1000));
        }
        Ok::<(), Error>(())
    };
    let end = if read_ahead {
        data.for_each_record_read_ahead(visit)
    } else {
        data.for_each_record(visit)
    };
    Reading {
        samples,
        end: end.map_err(|e| e.to_string()),
    }
}

/// Reads `name` both ways, asserting they agree.
fn reading(name: &str) -> Reading {
    let data = PerfData::open(dir().join(name)).unwrap();
    let plain = read(&data, false);
    assert_eq!(plain, read(&data, true), "{name}: read ahead vs plain");
    plain
}

/// `perf script -G -F tid,time,event`'s lines as (event, tid, µs time).
fn golden_samples(name: &str) -> Vec<(String, u32, u64)> {
    let text = std::fs::read_to_string(dir().join(name)).unwrap();
    text.lines()
        .map(|line| {
            let mut words = line.split_whitespace();
            let tid = words.next().unwrap().parse().unwrap();
            let time = words.next().unwrap().trim_end_matches(':');
            let (secs, micros) = time.split_once('.').unwrap();
            let micros = secs.parse::<u64>().unwrap() * 1_000_000 + micros.parse::<u64>().unwrap();
            let event = words.next().unwrap().trim_end_matches(':').to_string();
            (event, tid, micros)
        })
        .collect()
}

/// `perf report --stats`'s aggregated counts by record type, lower-cased as our stats name
/// them.
fn golden_record_counts(name: &str) -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(dir().join(name)).unwrap();
    text.lines()
        .skip_while(|l| l.trim() != "Aggregated stats:")
        .skip(1)
        .take_while(|l| !l.ends_with(" stats:"))
        .filter_map(|l| {
            let (kind, rest) = l.trim().split_once(" events:")?;
            let n = rest.split_whitespace().next()?.parse().ok()?;
            (kind != "TOTAL").then(|| (kind.to_lowercase(), n))
        })
        .collect()
}

/// Our samples match perf's, one for one (sorted: perf and we may order samples of the
/// same microsecond differently); events compared by name where the file names them.
fn assert_samples_equal(name: &str, ours: &[(String, u32, u64)], golden: &str) {
    let mut theirs = golden_samples(golden);
    assert!(!theirs.is_empty(), "{golden}");
    let mut ours = ours.to_vec();
    if ours.iter().any(|(event, ..)| event.is_empty()) {
        for s in ours.iter_mut().chain(theirs.iter_mut()) {
            s.0.clear();
        }
    }
    ours.sort();
    theirs.sort();
    assert_eq!(
        ours.len(),
        theirs.len(),
        "{name}: samples, ours vs perf 6.1"
    );
    assert_eq!(ours, theirs, "{name}: (event, tid, µs time) per sample");
}

const PERFFILE_V1: [&str; 3] = [
    "perffile-v1.perf3.2-i686-cycles",
    "perffile-v1.perf3.3-cycles",
    "perffile-v1.perf3.3-multievent",
];

#[test]
fn version_1_headers_read_as_perf_61_reads_them() {
    for base in PERFFILE_V1 {
        let name = format!("{base}.perf.data");
        let bytes = std::fs::read(dir().join(&name)).unwrap();
        assert_eq!(&bytes[..8], b"PERFFILE", "{name} is a version-1 capture");
        let r = reading(&name);
        let stats = r.end.as_ref().unwrap_or_else(|e| panic!("{name}: {e}"));
        // perf 3.2 and 3.3 wrote EVENT_DESC: samples are compared by event name too.
        let named = r.samples.iter().all(|(event, ..)| !event.is_empty());
        assert!(named, "{name}: an event without a name");
        assert_samples_equal(&name, &r.samples, &format!("{base}.perf61-script.txt"));
        let perf = golden_record_counts(&format!("{base}.perf61-stats.txt"));
        assert_eq!(perf.get("sample"), Some(&stats.samples), "{name}");
        for (kind, n) in &perf {
            assert_eq!(stats.by_type.get(kind), Some(n), "{name}: {kind} records");
        }
        let data = PerfData::open(dir().join(&name)).unwrap();
        assert_eq!(stats.data_bytes, data.data_size() as u64, "{name}");
        assert!(stats.unknown_types.is_empty(), "{name}");
        assert!(
            data.feature_problems.is_empty(),
            "{name}: {:?}",
            data.feature_problems
        );
        let version = data.features.version.as_deref().unwrap_or_default();
        assert!(version.starts_with("3."), "{name}: perf {version}");
    }
}

#[test]
fn compressed2_in_a_pipe_reads_as_perf_61_reads_it_as_compressed() {
    // perf 6.1 knows no COMPRESSED2; its goldens are its reading of the same zstd bytes
    // in COMPRESSED records (PROVENANCE.md).
    let name = "fibo.compressed2.pipe.data";
    let r = reading(name);
    let stats = r.end.as_ref().unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_samples_equal(name, &r.samples, "fibo.compressed2.pipe.perf61-script.txt");
    assert_eq!(stats.compressed_records, 146, "{name}");
    assert!(stats.unknown_types.is_empty(), "{name}");
    // Records continue from one COMPRESSED2 record into the next: all are whole.
    assert_eq!(stats.by_type.get("mmap2"), Some(&814), "{name}");
}

#[test]
fn perfs_own_messages_in_a_pipe_capture_are_an_error_after_every_record() {
    // Recorded as `perf record -z -o - sleep 1 > file 2>&1`: perf's two closing lines
    // follow the last record. perf 6.1 prints the samples, then "unexpected end of event
    // stream"; we deliver the same samples, then say what the bytes are and where.
    let name = "sleep.compressed2.pipe.data";
    let r = reading(name);
    assert_samples_equal(name, &r.samples, "sleep.compressed2.pipe.perf61-script.txt");
    let e = r.end.unwrap_err();
    let at = std::fs::read(dir().join(name)).unwrap().len() - 143;
    assert!(
        e.contains(&format!("offset {at:#x}")) || e.contains(&format!("offset {at} ")),
        "{e}"
    );
    assert!(e.contains("perf's own messages"), "{e}");
    assert!(e.contains("[ perf record: Woken up 1 times"), "{e}");
    // Streamed rather than mapped, the same.
    let stream = std::fs::File::open(dir().join(name)).unwrap();
    let data = PerfData::from_stream(name, stream).unwrap();
    let streamed = read(&data, false);
    assert_eq!(streamed.samples.len(), r.samples.len());
    assert!(streamed.end.unwrap_err().contains("perf's own messages"));
}

#[test]
fn compressed2_in_a_file_reads_whole() {
    // perf 6.1 refuses this file (perf_event_attr of 136 bytes); its own count is not
    // known, so the check is that every byte is accounted for.
    let name = "sleep.compressed2.data";
    let r = reading(name);
    let stats = r.end.as_ref().unwrap_or_else(|e| panic!("{name}: {e}"));
    let data = PerfData::open(dir().join(name)).unwrap();
    assert_eq!(stats.data_bytes, data.data_size() as u64, "{name}");
    assert!(stats.compressed_records > 0 && stats.samples > 0, "{name}");
    assert!(stats.unknown_types.is_empty(), "{name}");
}

#[test]
fn a_big_endian_version_1_header_is_refused_by_name() {
    let mut bytes = std::fs::read(dir().join("perffile-v1.perf3.3-cycles.perf.data")).unwrap();
    // Each u64 of the header, byte-swapped, as a big-endian machine wrote it.
    for word in bytes[8..104].chunks_mut(8) {
        word.reverse();
    }
    let e = PerfData::from_bytes(bytes).unwrap_err();
    let e = e.as_data().unwrap();
    assert_eq!(e.offset, 0);
    assert!(e.message.contains("big-endian version-1"), "{e}");
}

#[test]
fn a_header_without_the_feature_bitmap_reads() {
    // Before features, the header ended at the bitmap (72 bytes); perf reads that still.
    let mut bytes = std::fs::read(dir().join("perffile-v1.perf3.3-cycles.perf.data")).unwrap();
    bytes[8..16].copy_from_slice(&72u64.to_le_bytes());
    let data = PerfData::from_bytes(bytes).unwrap();
    assert!(data.features.hostname.is_none());
    let stats = read(&data, false).end.unwrap();
    assert_eq!(stats.samples, 898);
}

#[test]
fn a_version_1_pipe_header_reads() {
    // perf <= 3.3 in pipe mode wrote "PERFFILE" and a size of 16; what follows is records,
    // as now.
    let mut bytes = std::fs::read(dir().join("fibo.compressed2.pipe.data")).unwrap();
    bytes[..8].copy_from_slice(b"PERFFILE");
    let data = PerfData::from_bytes(bytes).unwrap();
    assert_eq!(data.mode, sparkles_perf_data::Mode::Pipe);
    let theirs = golden_samples("fibo.compressed2.pipe.perf61-script.txt");
    assert_eq!(read(&data, false).end.unwrap().samples, theirs.len() as u64);
}

#[test]
fn damaged_captures_give_errors_never_panics() {
    for name in PERFFILE_V1.iter().map(|b| format!("{b}.perf.data")).chain(
        [
            "sleep.compressed2.pipe.data",
            "fibo.compressed2.pipe.data",
            "sleep.compressed2.data",
        ]
        .map(String::from),
    ) {
        let bytes = std::fs::read(dir().join(&name)).unwrap();
        damaged_copies_never_panic(&bytes, |data| {
            let _ = read(data, false);
            let _ = read(data, true);
        });
        // Cut inside its last record (a pipe) or its data section (a file): an error.
        let cut = if name.contains(".pipe.") {
            bytes.len() - 1
        } else {
            let data = PerfData::from_bytes(bytes.clone()).unwrap();
            data.data_section().end - 1
        };
        let failed = match PerfData::from_bytes(bytes[..cut].to_vec()) {
            Err(_) => true,
            Ok(data) => read(&data, false).end.is_err(),
        };
        assert!(failed, "{name} cut at {cut} read without an error");
    }
}
