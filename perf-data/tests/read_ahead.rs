//! Records read ahead on another thread (`PerfData::for_each_record_read_ahead`) arrive
//! as the plain pass delivers them: the same events in the same order, the same stats,
//! and, on a damaged file, the same events before the same error. On captures written
//! here (thousands of records in rounds, out of time order within each, stored as they
//! are and zstd-compressed) and on every real recording in `../shared/fixtures/`, whole,
//! cut short and with bytes flipped.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

mod support;

use std::path::Path;

use sparkles_perf_data::attr::{sample_type as st, Attr};
use sparkles_perf_data::record::kind;
use sparkles_perf_data::writer::{CaptureWriter, Compression};
use sparkles_perf_data::{Error, PerfData};

/// Every event as text, and how the pass ended (its stats, or its error).
fn delivered(data: &PerfData, read_ahead: bool) -> (Vec<String>, String) {
    let mut events = Vec::new();
    let visit = |e: &sparkles_perf_data::Event<'_>| {
        events.push(format!("{e:?}"));
        Ok::<(), Error>(())
    };
    let end = if read_ahead {
        data.for_each_record_read_ahead(visit)
    } else {
        data.for_each_record(visit)
    };
    let end = match end {
        Ok(stats) => format!("{stats:?}"),
        Err(e) => format!("error: {e}"),
    };
    (events, end)
}

fn same_either_way(data: &PerfData, what: &str) -> usize {
    let (plain, plain_end) = delivered(data, false);
    let (ahead, ahead_end) = delivered(data, true);
    assert_eq!(
        plain.len(),
        ahead.len(),
        "{what}: {plain_end} / {ahead_end}"
    );
    for (i, (a, b)) in plain.iter().zip(&ahead).enumerate() {
        assert_eq!(a, b, "{what}: event {i}");
    }
    assert_eq!(plain_end, ahead_end, "{what}");
    plain.len()
}

/// A capture of `n` samples (ip, tid, time, a callchain, period), a FINISHED_ROUND after
/// every 300, each round's samples out of time order.
fn capture(dir: &Path, n: u64, compression: Compression) -> std::path::PathBuf {
    capture_of(dir, n, compression, 2)
}

/// [`capture`] with callchains at least `min_depth` deep (a deep one fills a batch by its
/// bytes before its count).
fn capture_of(dir: &Path, n: u64, compression: Compression, min_depth: u64) -> std::path::PathBuf {
    let attr = Attr {
        type_: 1,
        config: 0,
        sample_period_or_freq: 4000,
        sample_type: st::IP | st::TID | st::TIME | st::CALLCHAIN | st::PERIOD,
        ..Attr::default()
    };
    let mut w = CaptureWriter::new(attr, vec![1], "cpu-clock".into());
    w.compression = compression;
    for i in 0..n {
        let round = i / 300;
        // Within a round, times run backwards in pairs.
        let time = 1_000_000 + round * 1_000_000 + (i % 300) * 1000 - (i % 2) * 1500;
        let depth = min_depth + i % 7;
        let mut body = Vec::new();
        body.extend_from_slice(&(0x40_1000 + i % 97).to_le_bytes());
        body.extend_from_slice(&(7u32).to_le_bytes());
        body.extend_from_slice(&(7u32 + (i % 3) as u32).to_le_bytes());
        body.extend_from_slice(&time.to_le_bytes());
        body.extend_from_slice(&250_000u64.to_le_bytes());
        body.extend_from_slice(&depth.to_le_bytes());
        for d in 0..depth {
            body.extend_from_slice(&(0x40_2000 + d * 16 + i % 5).to_le_bytes());
        }
        w.push_body(kind::SAMPLE, 2, &body);
        if i % 300 == 299 {
            w.push_body(kind::FINISHED_ROUND, 0, &[]);
        }
    }
    let path = dir.join(format!("{n}-{compression:?}-{min_depth}.perf.data"));
    w.write(&path).unwrap();
    path
}

#[test]
fn written_captures_arrive_alike() {
    let tmp = tempfile::tempdir().unwrap();
    for compression in [Compression::Off, Compression::Zstd { level: 1 }] {
        // Batches end at 4,096 records or at 1 MiB: around the first, and past the
        // second with 5 KiB records.
        for (n, depth) in [
            (0, 2),
            (1, 2),
            (4_095, 2),
            (4_096, 2),
            (4_097, 2),
            (9_000, 2),
            (700, 600),
        ] {
            let path = capture_of(tmp.path(), n, compression, depth);
            let data = PerfData::open(&path).unwrap();
            let count = same_either_way(&data, &format!("{n} {compression:?}"));
            assert!(count as u64 >= n, "{n} samples, {count} events");
            // Damaged: a record's size set to 4 (less than its header) partway in, and
            // the file cut short; whatever the reader makes of it, it makes alike.
            let bytes = std::fs::read(&path).unwrap();
            let start = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
            let size = u64::from_le_bytes(bytes[48..56].try_into().unwrap()) as usize;
            if size > 64 {
                let mut bad = bytes.clone();
                let at = start + size / 2;
                bad[at..at + 8].copy_from_slice(&[0, 0, 0, 0, 0, 0, 4, 0]);
                if let Ok(data) = PerfData::from_bytes(bad) {
                    same_either_way(&data, &format!("{n} {compression:?} damaged"));
                }
                for flip in [start + 3, start + size / 3, start + size - 2] {
                    let mut copy = bytes.clone();
                    copy[flip] ^= 0xff;
                    if let Ok(data) = PerfData::from_bytes(copy) {
                        same_either_way(&data, &format!("{n} {compression:?} flip {flip}"));
                    }
                }
            }
        }
    }
}

#[test]
fn the_visitors_error_ends_it_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let path = capture(tmp.path(), 2_000, Compression::Off);
    let data = PerfData::open(&path).unwrap();
    let mut seen = 0;
    let end = data.for_each_record_read_ahead(|_| {
        seen += 1;
        if seen == 700 {
            return Err(Stop("stop".to_string()));
        }
        Ok(())
    });
    assert_eq!(end.unwrap_err().0, "stop");
    assert_eq!(seen, 700, "no event after the visitor's error");
}

/// A visitor's own error.
#[derive(Debug)]
struct Stop(String);

impl From<Error> for Stop {
    fn from(e: Error) -> Stop {
        Stop(e.to_string())
    }
}

#[test]
fn every_fixture_arrives_alike() {
    let Some(root) = support::fixtures() else {
        return;
    };
    let files = support::perf_data_files(&root);
    assert!(!files.is_empty());
    for path in files {
        let what = path.display().to_string();
        let data = PerfData::open(&path).unwrap();
        same_either_way(&data, &what);
        let bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        for i in 1..8 {
            let at = i * n / 8;
            if let Ok(data) = PerfData::from_bytes(bytes[..at].to_vec()) {
                same_either_way(&data, &format!("{what} cut at {at}"));
            }
            let mut copy = bytes.clone();
            copy[at] ^= 0xff;
            if let Ok(data) = PerfData::from_bytes(copy) {
                same_either_way(&data, &format!("{what} flipped at {at}"));
            }
        }
    }
}

/// This process's mapped file pages (`RssFile` in /proc/self/status), in bytes.
#[cfg(target_os = "linux")]
fn rss_file() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("RssFile:"))
        .expect("RssFile in /proc/self/status");
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap();
    kb * 1024
}

/// A reading ahead of a mapped capture gives back the pages it is done with: through a
/// 96 MB file it holds a window of it (the input since the earliest record waiting for
/// its round, what is read ahead, and up to 16 MiB read since it last gave pages back),
/// not the whole file; and it delivers what the plain reading delivers.
#[cfg(target_os = "linux")]
#[test]
fn a_long_reading_ahead_holds_a_window_of_the_file_not_all_of_it() {
    let tmp = tempfile::tempdir().unwrap();
    // 20,000 samples of about 4.8 KB (callchains 600 deep), a round each 300.
    let path = capture_of(tmp.path(), 20_000, Compression::Off, 600);
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 90 << 20, "{size}");
    let summed = |read_ahead: bool| {
        let data = PerfData::open(&path).unwrap();
        let before = rss_file();
        let (mut n, mut ips, mut peak) = (0u64, 0u64, 0u64);
        let visit = |e: &sparkles_perf_data::Event<'_>| {
            n += 1;
            if let sparkles_perf_data::Record::Sample(s) = &e.record {
                ips = ips.wrapping_add(
                    s.ip.unwrap_or(0) + s.callchain.map_or(0, |c| c.iter().sum::<u64>()),
                );
            }
            if n % 200 == 0 {
                peak = peak.max(rss_file().saturating_sub(before));
            }
            Ok::<(), Error>(())
        };
        if read_ahead {
            data.for_each_record_read_ahead(visit).unwrap();
        } else {
            data.for_each_record(visit).unwrap();
        }
        (n, ips, peak)
    };
    let (n, ips, plain_peak) = summed(false);
    let (ahead_n, ahead_ips, ahead_peak) = summed(true);
    eprintln!("{size}-byte file: read ahead {ahead_peak} bytes of it mapped in at most, plain {plain_peak}");
    assert_eq!((ahead_n, ahead_ips), (n, ips));
    assert!(n >= 20_000, "{n}");
    // The plain reading borrows every record from the map: the whole file comes in.
    assert!(
        plain_peak > 80 << 20,
        "plain reading: {plain_peak} bytes of the file mapped in"
    );
    assert!(
        ahead_peak < 48 << 20,
        "read ahead: {ahead_peak} bytes of the {size}-byte file mapped in at once"
    );
}
