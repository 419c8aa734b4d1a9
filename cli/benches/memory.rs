//! Memory attribution of 1,000,000 data-source samples, against `perf mem report
//! --stdio` on the same file, medians in the same run, reported as a ratio.
//!
//! The capture is synthetic, built from a real one: the Skylake-SP PEBS recording in
//! `../shared/fixtures/pebs/skx-ldlat-weight_struct.perf.data` (its attr, its 12,950
//! sideband records, its build ids and kernel release), with its 14 load-latency samples
//! repeated to 1,000,000 (smoke mode: 20,000) in time order, each sample's data address
//! moved within its own page (so the samples touch as many distinct addresses as a real
//! capture does, without leaving their mappings).
//!
//! - `memory/sparkles_report`: `sparkles report FILE --format json` (decode, name the
//!   code, place the data, the memory section, JSON), output discarded.
//! - `memory/perf_mem_report`: `perf mem report -i FILE --stdio`, output discarded.
//! - `memory/attribute`: [`MemoryBuilder`] alone over 1,000,000 in-memory samples (the
//!   decode and aggregation, no file, no symbolization).
//!
//! Without the fixtures or perf it says so and measures what it can.

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::rc::Rc;

use clap::Parser;
use sparkles_bench::{HarnessArgs, Suite};
use sparkles_perf_data::writer::{CaptureWriter, HostInfo};
use sparkles_perf_data::{PerfData, Record};
use sparkles_report::memory::{MemoryBuilder, MemorySample};
use sparkles_report::names::Names;
use sparkles_report::stacks::NamedFrame;
use sparkles_symbolize::symbolizer::{DataKind, DataObject};

mod support;

fn fixture() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/pebs/skx-ldlat-weight_struct.perf.data");
    p.is_file().then_some(p)
}

/// The synthetic capture of `n` samples, written once into `dir`.
fn synthetic_capture(real: &Path, n: usize, dir: &Path) -> Result<PathBuf, String> {
    let path = dir.join(format!("memory-{n}.perf.data"));
    if path.is_file() {
        return Ok(path);
    }
    let data = PerfData::open(real).map_err(|e| e.to_string())?;
    let entry = data.attrs.first().ok_or("the fixture has no attr")?;
    let bytes = data.bytes();
    let mut sideband: Vec<Vec<u8>> = Vec::new();
    let mut samples: Vec<Vec<u8>> = Vec::new();
    let mut last_time = 0u64;
    let mut records = data.records().map_err(|e| e.to_string())?;
    while let Some(e) = records.next_record().map_err(|e| e.to_string())? {
        if e.decompressed {
            return Err("compressed records: not expected in this fixture".to_string());
        }
        let at = e.offset as usize;
        let record = bytes[at..at + e.header.size as usize].to_vec();
        last_time = last_time.max(e.time.unwrap_or(0));
        match e.record {
            Record::Sample(_) => samples.push(record),
            _ => sideband.push(record),
        }
    }
    if samples.is_empty() {
        return Err("the fixture has no samples".into());
    }
    let f = &data.features;
    let mut w = CaptureWriter::new(
        entry.attr.clone(),
        entry.ids.clone(),
        entry.name.clone().unwrap_or_default(),
    );
    w.host = HostInfo {
        hostname: f.hostname.clone().unwrap_or_default(),
        osrelease: f.osrelease.clone().unwrap_or_default(),
        arch: f.arch.clone().unwrap_or_default(),
        ..HostInfo::default()
    };
    w.build_ids = f
        .build_ids
        .iter()
        .map(|b| {
            let id = (0..b.build_id.len() / 2)
                .filter_map(|i| u8::from_str_radix(&b.build_id[2 * i..2 * i + 2], 16).ok())
                .collect();
            (b.pid, id, b.filename.clone())
        })
        .collect();
    for r in &sideband {
        w.push(r);
    }
    // IP | TID | TIME | ADDR | ID | CPU | DATA_SRC | WEIGHT_STRUCT: time at byte 24 of
    // the record, the data address at 32.
    for i in 0..n {
        let mut r = samples[i % samples.len()].clone();
        let time = last_time + 1 + i as u64 * 1000;
        r[24..32].copy_from_slice(&time.to_le_bytes());
        let addr = u64::from_le_bytes(r[32..40].try_into().map_err(|_| "short sample")?);
        let moved = (addr & !0xfff) | ((addr + (i as u64 / 14) * 8) & 0xff8);
        r[32..40].copy_from_slice(&moved.to_le_bytes());
        w.push(&r);
    }
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    w.write(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

fn main() {
    let args = HarnessArgs::parse();
    let mut suite = Suite::new("memory");
    suite.default_samples(3);
    let measuring = args.bench && !args.list;
    let n = if measuring { 1_000_000 } else { 20_000 };
    let dir = sparkles_bench::output::out_dir(args.out_dir.as_deref()).join("bench-data");
    let have_perf = Command::new("perf")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    suite.group("memory", |g| {
        match fixture().map(|f| synthetic_capture(&f, n, &dir)) {
            Some(Ok(path)) => {
                eprintln!("memory: {} ({n} samples)", path.display());
                let file = path.to_string_lossy().into_owned();
                let sparkles = env!("CARGO_BIN_EXE_sparkles").to_string();
                let f = file.clone();
                g.case("sparkles_report", move |bench| {
                    bench.try_iter(|| {
                        support::shell(&format!("'{sparkles}' report '{f}' --format json"))
                    })
                });
                if have_perf {
                    g.case("perf_mem_report", move |bench| {
                        bench.try_iter(|| {
                            support::shell(&format!(
                                "perf mem report -i '{file}' --stdio 2>/dev/null"
                            ))
                        })
                    });
                } else {
                    eprintln!("memory: perf is not installed: no perf_mem_report case");
                }
            }
            Some(Err(why)) => eprintln!("memory: no synthetic capture: {why}"),
            None => eprintln!("memory: ../shared/fixtures is absent: no capture cases"),
        }
        g.case("attribute", |bench| {
            // The attribution alone: 1,000,000 samples over the fixture's six data sources,
            // two code frames and three data objects.
            let sources = [
                0x0102_6810_0142_u64,
                0x0118_6810_0242,
                0x0104_6810_0442,
                0x0106_6810_0842,
                0x0102_6a10_0142,
                0x0106_5010_0842,
            ];
            let mut names = Names::new();
            let mut frame = |name: &str, line| NamedFrame {
                addr: 0x1000,
                function: Some(names.intern(name)),
                module: Some(names.intern("/bin/app")),
                file: Some(names.intern("app.rs")),
                line: Some(line),
                inlined: false,
                symbol: None,
                symbol_offset: None,
                missing: None,
            };
            let frames = [frame("app::walk", 10), frame("app::sum", 20)];
            let object = |kind, start| DataObject {
                kind,
                mapping: Some(Rc::from("//anon")),
                mapping_start: start,
                symbol: None,
            };
            let objects = [
                object(DataKind::Anon, 0x7f00_0000_0000),
                object(DataKind::Heap, 0x5600_0000_0000),
                object(DataKind::Stack, 0x7ffe_0000_0000),
            ];
            bench.iter(|| {
                let mut b = MemoryBuilder::new();
                for i in 0..1_000_000usize {
                    b.add(&MemorySample {
                        data_src: sources[i % sources.len()],
                        weight: (i % 300) as u64,
                        ins_lat: Some(0),
                        weight_struct: Some(true),
                        code: Some(&frames[i % 2]),
                        ip: Some(0x1000),
                        data: Some(&objects[i % 3]),
                    });
                }
                b.finish().weight_total
            })
        });
    });
    let outcome = sparkles_bench::run_or_exit(suite, &args);
    if let (Some(ours), Some(perf)) = (
        outcome.median("memory/sparkles_report"),
        outcome.median("memory/perf_mem_report"),
    ) {
        println!(
            "memory/sparkles_report: {:.1}x faster than memory/perf_mem_report ({n} samples)",
            perf / ours
        );
    }
    std::process::exit(if outcome.all_ok() { 0 } else { 1 });
}
