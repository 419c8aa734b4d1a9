//! Captures of several events (what `--profile=mem` records on Sapphire Rapids: a
//! counting-only `mem-loads-aux` leader, `mem-loads` and `mem-stores`), built byte by
//! byte: the profile names the events that sampled, says it mixes them, and one event
//! keeps one; and the memory regions samples name.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

use sparkles_perf_data::attr::{sample_type as st, Attr};
use sparkles_perf_data::writer::{CaptureWriter, WrittenEvent};
use sparkles_report::capture::profile_capture;
use sparkles_report::stacks::StackOptions;

const TYPE: u64 = st::IDENTIFIER
    | st::IP
    | st::TID
    | st::TIME
    | st::ADDR
    | st::CPU
    | st::PERIOD
    | st::WEIGHT
    | st::DATA_SRC;
/// A load that hit L1: mem_op LOAD, mem_lvl HIT | L1.
const LOAD_L1: u64 = ((0x01 | 0x08) << 5) | 0x02;
/// A store that hit L1: mem_op STORE.
const STORE_L1: u64 = ((0x01 | 0x08) << 5) | 0x04;

/// A SAMPLE record in the kernel's field order for [`TYPE`].
fn sample(id: u64, time: u64, data_src: u64) -> Vec<u8> {
    let mut body = Vec::new();
    for v in [
        id,
        0x40_1000,
        (1234u64 << 32) | 1234,
        time,
        0x7f00_0000_1000,
        0,
        1,
        40,
    ] {
        body.extend_from_slice(&v.to_le_bytes());
    }
    body.extend_from_slice(&data_src.to_le_bytes());
    let mut r = 9u32.to_le_bytes().to_vec(); // PERF_RECORD_SAMPLE
    r.extend_from_slice(&2u16.to_le_bytes()); // user
    r.extend_from_slice(&((8 + body.len()) as u16).to_le_bytes());
    r.extend_from_slice(&body);
    r
}

fn attr(config: u64, period: u64) -> Attr {
    Attr {
        type_: 4,
        config,
        sample_period_or_freq: period,
        sample_type: TYPE,
        flags: 1 << 18, // sample_id_all
        ..Attr::default()
    }
}

fn capture(dir: &Path) -> PathBuf {
    let mut w = CaptureWriter::new(attr(0x8203, 0), vec![1], "cpu/mem-loads-aux/P".into());
    w.more_events = vec![
        WrittenEvent {
            attr: attr(0x1cd, 4000),
            ids: vec![7],
            name: "cpu/mem-loads,ldlat=30/P".into(),
        },
        WrittenEvent {
            attr: attr(0x2cd, 4000),
            ids: vec![9],
            name: "cpu/mem-stores/P".into(),
        },
    ];
    for (i, (id, src)) in [
        (7, LOAD_L1),
        (9, STORE_L1),
        (7, LOAD_L1),
        (7, LOAD_L1),
        (9, STORE_L1),
    ]
    .into_iter()
    .enumerate()
    {
        w.push(&sample(id, 1000 + i as u64, src));
    }
    let path = dir.join("events.perf.data");
    w.write(&path).unwrap();
    path
}

fn options(event: Option<&str>) -> StackOptions {
    StackOptions {
        event: event.map(str::to_string),
        ..StackOptions::default()
    }
}

#[test]
fn a_profile_of_several_events_names_those_that_sampled_and_says_it_mixes_them() {
    let tmp = tempfile::tempdir().unwrap();
    let path = capture(tmp.path());
    let (p, _) = profile_capture(&path, "c", &options(None)).unwrap();
    assert_eq!(p.event, "cpu/mem-loads,ldlat=30/P, cpu/mem-stores/P");
    assert_eq!(p.samples, 5);
    assert!(
        p.notes.contains(
            &"samples of 2 events together: cpu/mem-loads,ldlat=30/P (3), cpu/mem-stores/P (2); each can be reported alone by its name"
                .to_string()
        ),
        "{:?}",
        p.notes
    );
    let memory = p.memory.unwrap();
    assert_eq!(memory.samples, 5);
    let ops: Vec<(&str, u64)> = memory
        .ops
        .iter()
        .map(|o| (o.name.as_str(), o.samples))
        .collect();
    assert_eq!(ops, [("LOAD", 3), ("STORE", 2)]);
}

#[test]
fn event_keeps_the_samples_of_the_event_named() {
    let tmp = tempfile::tempdir().unwrap();
    let path = capture(tmp.path());
    let (p, _) = profile_capture(&path, "c", &options(Some("cpu/mem-stores/P"))).unwrap();
    assert_eq!(p.event, "cpu/mem-stores/P");
    assert_eq!(p.samples, 2);
    assert!(
        !p.notes.iter().any(|n| n.contains("together")),
        "{:?}",
        p.notes
    );
    let ops: Vec<(String, u64)> = p
        .memory
        .unwrap()
        .ops
        .into_iter()
        .map(|o| (o.name, o.samples))
        .collect();
    assert_eq!(ops, [("STORE".to_string(), 2)]);
    // The counting leader has no samples: an empty profile, not an error.
    let (p, _) = profile_capture(&path, "c", &options(Some("cpu/mem-loads-aux/P"))).unwrap();
    assert_eq!(p.samples, 0);
}

#[test]
fn an_event_the_capture_lacks_is_an_error_listing_those_it_has() {
    let tmp = tempfile::tempdir().unwrap();
    let path = capture(tmp.path());
    let e = profile_capture(&path, "c", &options(Some("cycles"))).unwrap_err();
    let sparkles_report::Error::NoSuchEvent {
        path: named,
        wanted,
        events,
    } = &e
    else {
        panic!("not the missing event: {e}");
    };
    assert_eq!((named, wanted.as_str()), (&path, "cycles"));
    assert_eq!(
        events,
        &[
            "cpu/mem-loads-aux/P",
            "cpu/mem-loads,ldlat=30/P",
            "cpu/mem-stores/P"
        ]
    );
    let text = e.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(
        text.ends_with(
            "its events: cpu/mem-loads-aux/P, cpu/mem-loads,ldlat=30/P, cpu/mem-stores/P"
        ),
        "{text}"
    );
}

/// `mem_region` (5 bits at 46): the memory section counts the regions the samples name,
/// and has no `regions` key where none does.
#[test]
fn regions_are_counted_where_the_samples_name_them() {
    use sparkles_perf_data::data_src::shift;
    let tmp = tempfile::tempdir().unwrap();
    let path = capture(tmp.path());
    let (p, _) = profile_capture(&path, "c", &options(None)).unwrap();
    let memory = p.memory.unwrap();
    assert!(memory.regions.is_empty());
    assert!(serde_json::to_value(&memory)
        .unwrap()
        .get("regions")
        .is_none());
    let mut w = CaptureWriter::new(attr(0x1cd, 4000), vec![7], "ibs_op//".into());
    for (i, region) in [5u64, 8, 5, 0].into_iter().enumerate() {
        w.push(&sample(
            7,
            1000 + i as u64,
            LOAD_L1 | (region << shift::REGION),
        ));
    }
    let path = tmp.path().join("regions.perf.data");
    w.write(&path).unwrap();
    let (p, _) = profile_capture(&path, "c", &options(None)).unwrap();
    let rows: Vec<(String, u64)> = p
        .memory
        .unwrap()
        .regions
        .into_iter()
        .map(|r| (r.name, r.samples))
        .collect();
    assert_eq!(
        rows,
        [
            ("Other CA shared cache".to_string(), 2),
            ("Memory region 0".to_string(), 1)
        ]
    );
}
