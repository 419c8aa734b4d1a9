//! The reader on every real recording in `../shared/fixtures/`: each decodes whole; sample
//! counts and PEBS fields equal what perf 6.1 printed for the files it reads (the
//! `*.perf61-*.txt` goldens beside them); and truncated or bit-flipped copies of every
//! file give an error or a result, never a panic. Skips, saying so, when the fixtures
//! are absent.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

mod support;

use std::path::Path;

use sparkles_perf_data::{PerfData, Record, Stats};
use support::{damaged_copies_never_panic, fixtures, perf_data_files};

fn decode(data: &PerfData) -> Result<Stats, String> {
    data.for_each_record(|_| Ok::<(), sparkles_perf_data::Error>(()))
        .map_err(|e| e.to_string())
}

#[test]
fn every_fixture_decodes_whole() {
    let Some(root) = fixtures() else { return };
    let files = perf_data_files(&root);
    assert!(files.len() >= 9, "{files:?}");
    for path in files {
        let data = PerfData::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let stats = decode(&data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(stats.samples > 0, "{}", path.display());
        // Every byte of the data section is accounted for by a record.
        assert_eq!(
            stats.data_bytes,
            data.data_size() as u64,
            "{}",
            path.display()
        );
        assert!(
            data.feature_problems.is_empty(),
            "{}: {:?}",
            path.display(),
            data.feature_problems
        );
        assert!(
            stats.unknown_types.is_empty(),
            "{}: {:?}",
            path.display(),
            stats.unknown_types
        );
    }
}

/// `(addr, data_src, weight)` per sample line of a `perf script` golden that printed
/// `addr data_src |…|BLK …   weight …`.
fn golden_pebs(path: &Path) -> Vec<(u64, u64, u64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| l.contains("|OP "))
        .map(|line| {
            let (left, _) = line.split_once('|').unwrap();
            let mut words = left.split_whitespace().rev();
            let data_src = u64::from_str_radix(words.next().unwrap(), 16).unwrap();
            let addr = u64::from_str_radix(words.next().unwrap(), 16).unwrap();
            let tail = line.rsplit('|').next().unwrap();
            let after_blk = tail.split("N/A").nth(1).unwrap_or(tail);
            let weight = after_blk
                .split_whitespace()
                .next()
                .unwrap()
                .parse()
                .unwrap();
            (addr, data_src, weight)
        })
        .collect()
}

fn our_pebs(path: &Path) -> Vec<(u64, u64, u64)> {
    let data = PerfData::open(path).unwrap();
    let mut out = Vec::new();
    data.for_each_record(|e| {
        if let Record::Sample(s) = &e.record {
            out.push((
                s.addr.unwrap(),
                s.data_src.unwrap(),
                s.weight.unwrap().latency(),
            ));
        }
        Ok::<(), sparkles_perf_data::Error>(())
    })
    .unwrap();
    out
}

#[test]
fn pebs_samples_equal_perf_script() {
    let Some(root) = fixtures() else { return };
    for name in ["skx-ldlat-weight_struct", "ivb-ep-mem-loads"] {
        let want = golden_pebs(&root.join(format!("pebs/{name}.perf61-script.txt")));
        let got = our_pebs(&root.join(format!("pebs/{name}.perf.data")));
        assert_eq!(want.len(), 14, "{name}: golden sample count");
        assert_eq!(
            got, want,
            "{name}: (addr, data_src, weight) per sample, in time order"
        );
    }
}

#[test]
fn the_skylake_weight_is_a_weight_struct() {
    let Some(root) = fixtures() else { return };
    let data = PerfData::open(root.join("pebs/skx-ldlat-weight_struct.perf.data")).unwrap();
    let mut structs = 0;
    data.for_each_record(|e| {
        if let Record::Sample(s) = &e.record {
            assert!(s.weight.unwrap().ins_lat().is_some());
            assert!(s.cpu.is_some() && s.time.is_some() && s.id.is_some());
            structs += 1;
        }
        Ok::<(), sparkles_perf_data::Error>(())
    })
    .unwrap();
    assert_eq!(structs, 14);
    // The recording's topology came along in its header.
    let numa = data.features.numa_topology.as_ref().unwrap();
    assert!(!numa.is_empty());
    assert!(data.features.cpu_topology.is_some());
    assert_eq!(data.features.nrcpus.as_ref().unwrap().online, 112);
}

/// Samples `perf script` printed, one per sample (`-G -F tid` hides callchains); `None`
/// where perf is missing or refuses the file.
fn perf_sample_count(path: &Path) -> Option<usize> {
    let out = std::process::Command::new("perf")
        .args(["script", "-G", "-F", "tid", "-i"])
        .arg(path)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).lines().count())
}

/// The fixtures perf 6.1 cannot read (a newer attr layout; zstd data a perf built
/// without libzstd refuses): `files_perf_61_refuses_decode_with_consistent_counts`
/// checks them without perf.
const PERF_61_REFUSES: [&str; 3] = [
    "callchain/cpp-inlining.perf-ge6.3.perf.data",
    "format/sleep.data",
    "format/sleep.compressed.data",
];

#[test]
fn sample_counts_equal_perf_scripts_where_perf_reads_the_file() {
    let Some(root) = fixtures() else { return };
    let installed = std::process::Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        skip::skip("perf", "perf is not installed");
        return;
    }
    let mut compared = 0;
    for path in perf_data_files(&root) {
        let data = PerfData::open(&path).unwrap();
        let ours = decode(&data).unwrap().samples as usize;
        match perf_sample_count(&path) {
            Some(theirs) => {
                assert_eq!(ours, theirs, "{}", path.display());
                compared += 1;
            }
            None => {
                // Only a file known to be past perf 6.1 may be refused.
                let rel = path
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                assert!(
                    PERF_61_REFUSES.contains(&rel.as_str()),
                    "perf refused {rel}, which it reads; ours counts {ours} samples"
                );
                eprintln!("{rel}: perf did not read it; {ours} samples by our count");
            }
        }
    }
    assert!(compared > 0, "perf read none of the fixtures");
}

#[test]
fn files_perf_61_refuses_decode_with_consistent_counts() {
    let Some(root) = fixtures() else { return };
    // attr_size 152 (perf >= 6.3) and zstd-compressed files.
    for (name, compressed) in PERF_61_REFUSES.into_iter().zip([true, false, true]) {
        let data = PerfData::open(root.join(name)).unwrap();
        let stats = decode(&data).unwrap();
        assert_eq!(stats.data_bytes, data.data_size() as u64, "{name}");
        assert_eq!(stats.compressed_records > 0, compressed, "{name}");
        let attr = &data.attrs[0].attr;
        assert!(attr.size >= 128, "{name}: attr size {}", attr.size);
        // Every attr id a sample carries belongs to an attr of the file.
        let ids: Vec<u64> = data.attrs.iter().flat_map(|a| a.ids.clone()).collect();
        data.for_each_record(|e| {
            if let Record::Sample(s) = &e.record {
                if let Some(id) = s.id {
                    assert!(ids.contains(&id), "{name}: sample id {id}");
                }
            }
            Ok::<(), sparkles_perf_data::Error>(())
        })
        .unwrap();
    }
    let cpp = PerfData::open(root.join("callchain/cpp-inlining.perf-ge6.3.perf.data")).unwrap();
    assert_eq!(decode(&cpp).unwrap().samples, 539);
}

#[test]
fn records_arrive_in_time_order() {
    let Some(root) = fixtures() else { return };
    for path in perf_data_files(&root) {
        let data = PerfData::open(&path).unwrap();
        let mut last = 0u64;
        data.for_each_record(|e| {
            if let Some(t) = e.time {
                assert!(t >= last, "{}: {t} after {last}", path.display());
                last = t;
            }
            Ok::<(), sparkles_perf_data::Error>(())
        })
        .unwrap();
    }
}

#[test]
fn truncated_and_bit_flipped_fixtures_never_panic() {
    let Some(root) = fixtures() else { return };
    for path in perf_data_files(&root) {
        let bytes = std::fs::read(&path).unwrap();
        damaged_copies_never_panic(&bytes, |data| {
            let _ = decode(data);
        });
    }
}

#[test]
fn errors_name_the_offset() {
    let Some(root) = fixtures() else { return };
    let bytes = std::fs::read(root.join("pebs/ivb-ep-mem-loads.perf.data")).unwrap();
    let data_start = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    // The first record of the data section claims 4 bytes: less than its own header.
    let mut bad = bytes.clone();
    bad[data_start + 6..data_start + 8].copy_from_slice(&4u16.to_le_bytes());
    let data = PerfData::from_bytes(bad).unwrap();
    let e = decode(&data).unwrap_err();
    assert!(
        e.contains(&format!("offset {data_start} ")) && e.contains("size 4"),
        "{e}"
    );
    // A file cut inside its data section: the section lies outside the file.
    let e = PerfData::from_bytes(bytes[..data_start + 100].to_vec()).unwrap_err();
    let e = e.as_data().unwrap();
    assert_eq!(e.offset, 40);
    assert!(e.message.contains("data section"), "{e}");
    let e = PerfData::from_bytes(b"PERFILE9 not this".to_vec()).unwrap_err();
    let e = e.as_data().unwrap();
    assert_eq!(e.offset, 0);
    assert!(e.message.contains("PERFILE2"), "{e}");
    let e = PerfData::from_bytes(bytes[..50].to_vec()).unwrap_err();
    let e = e.as_data().unwrap();
    assert!(e.to_string().contains("offset"), "{e}");
}

#[test]
fn header_features_equal_perf_headers() {
    let Some(root) = fixtures() else { return };
    for (data_file, golden) in [
        (
            "callchain/vector_static_gcc.dwarf.perf.data",
            "callchain/vector_static_gcc.perf61-header.txt",
        ),
        (
            "pebs/skx-ldlat-weight_struct.perf.data",
            "pebs/skx-ldlat-weight_struct.perf61-header.txt",
        ),
        (
            "pebs/ivb-ep-mem-loads.perf.data",
            "pebs/ivb-ep-mem-loads.perf61-header.txt",
        ),
    ] {
        let text = std::fs::read_to_string(root.join(golden)).unwrap();
        let field = |key: &str| {
            text.lines()
                .find_map(|l| {
                    l.strip_prefix("# ")?
                        .strip_prefix(key)?
                        .trim_start()
                        .strip_prefix(": ")
                })
                .map(|v| v.trim_end().to_string())
        };
        let data = PerfData::open(root.join(data_file)).unwrap();
        let f = &data.features;
        assert_eq!(f.hostname, field("hostname"), "{data_file}");
        assert_eq!(f.osrelease, field("os release"), "{data_file}");
        assert_eq!(f.version, field("perf version"), "{data_file}");
        assert_eq!(f.arch, field("arch"), "{data_file}");
        assert_eq!(f.cpudesc, field("cpudesc"), "{data_file}");
        assert_eq!(f.cpuid, field("cpuid"), "{data_file}");
        let nr = f.nrcpus.as_ref().unwrap();
        assert_eq!(
            Some(nr.online.to_string()),
            field("nrcpus online"),
            "{data_file}"
        );
        assert_eq!(
            Some(nr.available.to_string()),
            field("nrcpus avail"),
            "{data_file}"
        );
        assert_eq!(
            field("total memory"),
            f.total_mem_kb.map(|k| format!("{k} kB")),
            "{data_file}"
        );
        assert_eq!(
            field("cmdline"),
            f.cmdline.as_ref().map(|c| c.join(" ")),
            "{data_file}"
        );
        // The event line names the event and its ids.
        let event = field("event").unwrap();
        let desc = &f.event_desc.as_ref().unwrap()[0];
        assert!(
            event.starts_with(&format!("name = {}", desc.name)),
            "{data_file}: {event} vs {}",
            desc.name
        );
        for id in &desc.ids {
            assert!(
                event.contains(&id.to_string()),
                "{data_file}: id {id} not in {event}"
            );
        }
        assert_eq!(data.attrs[0].name.as_deref(), Some(desc.name.as_str()));
    }
}

#[test]
fn build_ids_of_the_recorded_files() {
    let Some(root) = fixtures() else { return };
    let data = PerfData::open(root.join("callchain/vector_static_gcc.dwarf.perf.data")).unwrap();
    let ids: Vec<(&str, &str)> = data
        .features
        .build_ids
        .iter()
        .map(|b| {
            (
                b.build_id.as_str(),
                b.filename.rsplit('/').next().unwrap_or(""),
            )
        })
        .collect();
    // PROVENANCE.md: binary db3f64e2…0120f, kernel 2366ff93…, vdso 48cd6bdd….
    assert!(
        ids.contains(&(
            "db3f64e23e81c62954fcff0388acee879760120f",
            "vector_static_gcc_v9.1.0"
        )),
        "{ids:?}"
    );
    assert!(ids
        .iter()
        .any(|(id, f)| id.starts_with("2366ff93") && *f == "[kernel.kallsyms]"));
    assert!(ids
        .iter()
        .any(|(id, f)| id.starts_with("48cd6bdd") && *f == "[vdso]"));
}
