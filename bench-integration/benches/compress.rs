//! Capture compression: the records of the demo's `--profile` captures compressed as
//! every build of the harness compresses them (ruzstd, pure Rust: a zstd frame a 1 MiB
//! chunk) against libzstd at level 1 (`perf record -z`'s, and the `zstd` feature's), in
//! one run: each case's throughput over the records' bytes, then both encoders' sizes and
//! the ratios between them.
//!
//! - `compress/<capture>/ruzstd` and `compress/<capture>/libzstd_1`: the capture's records,
//!   decompressed once beforehand, stored again as COMPRESSED records
//!   (`CaptureWriter::encode`).
//!
//! The inputs are the captures under `target/sparkles/profile/*/capture.perf.data` (run
//! `cargo bench -p sparkles-bench --bench demo -- --profile` first); without them, one
//! `perf record --call-graph dwarf,8192 -F 4000` of a second of `sha1sum /dev/zero`
//! (said). Smoke mode (`cargo test`) takes the first 2 MiB of records of two of them.
//! libzstd needs `sparkles-perf-data`'s `zstd` feature, which the workspace's build turns
//! on (sparkles-cli, a dev-dependency); without it the libzstd cases are left out, said.

use std::path::{Path, PathBuf};

use clap::Parser;
use sparkles_bench::{HarnessArgs, Suite, Throughput};
use sparkles_perf_data::reader::RecordReader;
use sparkles_perf_data::writer::{CaptureWriter, Compression};
use sparkles_perf_data::PerfData;

mod perf_capture;
use perf_capture::{perf_available, record_capture};

/// A capture's records, decompressed, and its first event.
struct Input {
    name: String,
    entry: sparkles_perf_data::file::AttrEntry,
    records: Vec<u8>,
}

impl Input {
    /// A writer of the records, to store them as `compression` says.
    fn writer(&self, compression: Compression) -> CaptureWriter {
        let mut w = CaptureWriter::new(
            self.entry.attr.clone(),
            self.entry.ids.clone(),
            "compress".into(),
        );
        w.data = self.records.clone();
        w.compression = compression;
        w
    }
}

fn records_of(path: &Path, limit: usize) -> Result<Input, String> {
    let data = PerfData::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let range = data.data_section();
    let mut reader = RecordReader::from_bytes(data.bytes(), range.start, range.end);
    let mut records = Vec::new();
    while reader
        .advance()
        .map_err(|e| format!("{}: {e}", path.display()))?
        .is_some()
    {
        if records.len() >= limit {
            break;
        }
        records.extend_from_slice(reader.current());
    }
    let entry = data
        .attr(0)
        .ok_or(format!("{}: no event", path.display()))?
        .clone();
    let name = path
        .parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .unwrap_or("capture")
        .to_string();
    Ok(Input {
        name,
        entry,
        records,
    })
}

/// The demo's captures, largest first; else one recorded by perf (why said).
fn inputs(out_dir: &Path, smoke: bool) -> Result<Vec<PathBuf>, String> {
    let mut found: Vec<(u64, PathBuf)> = std::fs::read_dir(out_dir.join("profile"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("capture.perf.data"))
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.len(), p)))
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    if !found.is_empty() {
        eprintln!(
            "compress: {} captures of the demo's --profile run under {}",
            found.len(),
            out_dir.join("profile").display()
        );
        let take = if smoke { 2 } else { found.len() };
        return Ok(found.into_iter().take(take).map(|(_, p)| p).collect());
    }
    let path = out_dir.join("bench-data/compress-dwarf.perf.data");
    eprintln!(
        "compress: no demo captures under {} (run the demo with --profile first): recording {} with perf",
        out_dir.join("profile").display(),
        path.display()
    );
    if !perf_available() {
        return Err("perf is not installed".to_string());
    }
    record_capture(&path, 1, 1, &[])?;
    Ok(vec![path])
}

fn main() {
    let args = HarnessArgs::parse();
    let out_dir = sparkles_bench::output::out_dir(args.out_dir.as_deref());
    let smoke = !args.bench || args.list;
    let limit = if smoke { 2 << 20 } else { usize::MAX };
    let mut suite = Suite::new("compress");
    suite.default_samples(6);
    let libzstd = Compression::Zstd { level: 1 };
    let have_libzstd = libzstd.in_this_build() == libzstd;
    if !have_libzstd {
        eprintln!("compress: this build has no libzstd (sparkles-perf-data's `zstd` feature): ruzstd's cases alone");
    }
    let mut sizes = Vec::new();
    match inputs(&out_dir, smoke) {
        Ok(paths) => {
            for path in paths {
                let input = match records_of(&path, limit) {
                    Ok(i) => i,
                    Err(why) => {
                        eprintln!("compress: {why}: left out");
                        continue;
                    }
                };
                let raw = input.records.len() as u64;
                let size = |c: Compression| -> Option<u64> {
                    input
                        .writer(c)
                        .encode()
                        .ok()
                        .map(|(_, written)| written.bytes)
                };
                sizes.push((
                    input.name.clone(),
                    raw,
                    size(Compression::ZstdRust),
                    have_libzstd.then(|| size(libzstd)).flatten(),
                ));
                let mut encoders = vec![("ruzstd", Compression::ZstdRust)];
                if have_libzstd {
                    encoders.push(("libzstd_1", libzstd));
                }
                suite.group(input.name.clone(), |g| {
                    for (name, compression) in encoders {
                        let w = input.writer(compression);
                        g.case(name, move |b| {
                            b.throughput(Throughput::Bytes(raw));
                            b.try_iter(|| w.encode().map(|(_, written)| written.bytes));
                        });
                    }
                });
            }
        }
        Err(why) => eprintln!("compress: no capture, nothing to measure: {why}"),
    }
    let outcome = sparkles_bench::run_or_exit(suite, &args);
    let mb = |b: u64| b as f64 / 1e6;
    let (mut all_raw, mut all_rust, mut all_lib) = (0u64, 0u64, 0u64);
    for (name, raw, rust, lib) in &sizes {
        let (Some(rust), lib) = (rust, lib) else {
            continue;
        };
        all_raw += raw;
        all_rust += rust;
        let mut line = format!(
            "compress/{name}: {:.1} MB of records; ruzstd {:.2} MB ({:.1}x)",
            mb(*raw),
            mb(*rust),
            *raw as f64 / *rust as f64
        );
        if let Some(lib) = lib {
            all_lib += lib;
            line += &format!(
                ", libzstd 1 {:.2} MB ({:.1}x): ruzstd's {:.2}x libzstd's size",
                mb(*lib),
                *raw as f64 / *lib as f64,
                *rust as f64 / *lib as f64
            );
        }
        let median = |enc: &str| outcome.median(&format!("{name}/{enc}"));
        if let (Some(r), Some(l)) = (median("ruzstd"), median("libzstd_1")) {
            line += &format!(", {:.2}x its speed", l / r);
        }
        println!("{line}");
    }
    if all_raw > 0 {
        let mut line = format!(
            "compress: all {:.1} MB of records; ruzstd {:.1} MB",
            mb(all_raw),
            mb(all_rust)
        );
        if all_lib > 0 {
            line += &format!(", libzstd 1 {:.1} MB", mb(all_lib));
        }
        println!("{line}");
    }
    std::process::exit(if outcome.all_ok() { 0 } else { 1 });
}
