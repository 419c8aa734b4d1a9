//! Record decoding throughput over a perf.data capture of at least 50 MB, against
//! `perf script` on the same file in the same run, reported as a ratio.
//!
//! - `decode/records`: `PerfData::open` and every record decoded and delivered in time
//!   order (the reader every report is built on).
//! - `decode/script_text`: the same plus `sparkles script`'s text line per record, written
//!   to a sink: the work `perf script` does short of symbol lookup.
//! - `decode/perf_script`: `perf script -G -F tid,time,ip,period,event` on the file,
//!   output to /dev/null (the peer; needs perf).
//! - `decode/records_zstd` and `decode/perf_script_zstd`: the same on a capture of the same
//!   workload recorded with `perf record -z` (zstd-compressed records, as sparkles writes
//!   its own captures by default): decompression included.
//!
//! The capture is recorded once with `perf record --call-graph dwarf` (large samples
//! make 50 MB in a few seconds) into `target/sparkles/bench-data/`. Smoke mode (`cargo
//! test`) records a small one instead.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::Parser;
use sparkles_bench::{HarnessArgs, Suite, Throughput};
use sparkles_perf_data::{script, PerfData};

mod perf_capture;
use perf_capture::{perf_available, record_capture};

const BIG: u64 = 50 << 20;

fn decode_all(path: &Path) -> Result<u64, String> {
    let data = PerfData::open(path).map_err(|e| e.to_string())?;
    let mut records = data.records().map_err(|e| e.to_string())?;
    let mut n = 0u64;
    while records.next_record().map_err(|e| e.to_string())?.is_some() {
        n += 1;
    }
    Ok(n)
}

fn script_text(path: &Path) -> Result<u64, String> {
    let data = PerfData::open(path).map_err(|e| e.to_string())?;
    let mut out = std::io::BufWriter::new(std::io::sink());
    let mut records = data.records().map_err(|e| e.to_string())?;
    while let Some(e) = records.next_record().map_err(|e| e.to_string())? {
        script::write_text(&mut out, &e).map_err(|e| e.to_string())?;
    }
    Ok(records.stats().records)
}

fn perf_script(path: &Path) -> Result<(), String> {
    let status = Command::new("perf")
        .args(["script", "-G", "-F", "tid,time,ip,period,event", "-i"])
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    status
        .success()
        .then_some(())
        .ok_or(format!("perf script failed ({status})"))
}

fn main() {
    let args = HarnessArgs::parse();
    let out_dir = sparkles_bench::output::out_dir(args.out_dir.as_deref()).join("bench-data");
    let measuring = args.bench && !args.list;
    let (capture, seconds, min_bytes): (PathBuf, u32, u64) = if measuring {
        (out_dir.join("decode-dwarf.perf.data"), 2, BIG)
    } else {
        (out_dir.join("decode-smoke.perf.data"), 1, 1)
    };
    let mut suite = Suite::new("decode");
    // Each iteration reads the whole capture (tens of ms to seconds).
    suite.default_samples(8);
    let perf = perf_available();
    let mut records = 0u64;
    let capture_z = capture.with_file_name(format!(
        "{}-zstd.perf.data",
        capture
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("decode")
            .trim_end_matches(".perf")
    ));
    let ready = if perf {
        record_capture(&capture, seconds, min_bytes, &[])
            .and_then(|()| record_capture(&capture_z, seconds, 1, &["-z"]))
    } else {
        Err("perf is not installed: it records the capture and is the peer".to_string())
    };
    match ready {
        Ok(()) => {
            let bytes = std::fs::metadata(&capture).map(|m| m.len()).unwrap_or(0);
            records = decode_all(&capture).unwrap_or(0);
            eprintln!(
                "decode: capture {} ({:.1} MB, {records} records)",
                capture.display(),
                bytes as f64 / 1e6
            );
            suite.group("decode", |g| {
                let path = capture.clone();
                g.case("records", move |b| -> Result<(), String> {
                    b.throughput(Throughput::Bytes(bytes));
                    b.try_iter(|| decode_all(&path));
                    Ok(())
                });
                let path = capture.clone();
                g.case("script_text", move |b| {
                    b.throughput(Throughput::Bytes(bytes));
                    b.try_iter(|| script_text(&path));
                });
                let path = capture.clone();
                g.case("perf_script", move |b| {
                    b.throughput(Throughput::Bytes(bytes));
                    b.try_iter(|| perf_script(&path));
                });
                if !sparkles_perf_data::ZSTD {
                    eprintln!("decode: this build reads no perf -z capture (libzstd, the `zstd` feature, is off): no zstd cases");
                    return;
                }
                let path = capture_z.clone();
                g.case("records_zstd", move |b| -> Result<(), String> {
                    b.try_iter(|| decode_all(&path));
                    Ok(())
                });
                let path = capture_z.clone();
                g.case("perf_script_zstd", move |b| {
                    b.try_iter(|| perf_script(&path));
                });
            });
        }
        Err(why) => eprintln!("decode: no capture, nothing to measure: {why}"),
    }
    let outcome = sparkles_bench::run_or_exit(suite, &args);
    let median = |case: &str| outcome.median(case);
    for (ours, peer) in [
        ("decode/records", "decode/perf_script"),
        ("decode/script_text", "decode/perf_script"),
        ("decode/records_zstd", "decode/perf_script_zstd"),
    ] {
        if let (Some(theirs), Some(m)) = (median(peer), median(ours)) {
            println!(
                "{ours}: {:.1}x faster than {} on the same file",
                theirs / m,
                peer.trim_start_matches("decode/")
            );
        }
    }
    if let Some(m) = median("decode/records") {
        println!("decode/records: {:.2}M records/s", records as f64 / m * 1e3);
    }
    std::process::exit(if outcome.all_ok() { 0 } else { 1 });
}
