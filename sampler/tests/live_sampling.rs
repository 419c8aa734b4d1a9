//! Live sampling on this machine: every thread of a target is covered, and the capture is
//! a perf.data file our reader (and perf, where installed) reads. Skips, saying why, where
//! the kernel refuses perf_event_open.

#![cfg(target_os = "linux")] // perf_event is Linux's: elsewhere this file is empty
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sparkles_perf_data::writer::Compression;
use sparkles_perf_data::{PerfData, Record};
use sparkles_sampler::session::{CallGraph, Rate, Restriction, SamplingConfig, Session, Target};
use sparkles_sampler::system::System;
use sparkles_sampler::EventResolver;

/// Sessions attach to every thread of the process: one test at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

fn spin_until(stop: &AtomicBool) {
    let mut x = 1u64;
    while !stop.load(Ordering::Relaxed) {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

fn config(stack: u32) -> SamplingConfig {
    let resolver = EventResolver::live().unwrap();
    // The software clock samples on every machine that allows sampling at all.
    let mut event = resolver.resolve("cpu-clock").unwrap().remove(0);
    event.name = "cpu-clock".into();
    let call_graph = if stack == 0 {
        CallGraph::FramePointer
    } else {
        CallGraph::Dwarf(stack)
    };
    SamplingConfig {
        buffer_pages: 64,
        ..SamplingConfig::new(vec![event.into()], Rate::Frequency(1000), call_graph)
    }
}

/// A session of `config` over `ms` milliseconds of busy work on this thread, or `None`
/// (saying why) where the kernel refuses sampling.
fn busy_capture(config: &SamplingConfig, ms: u64) -> Option<sparkles_sampler::session::Capture> {
    let session = match Session::start(config, Target::CurrentThread, &System::probe()) {
        Ok(s) => s,
        Err(reason) => {
            skip::skip(
                "perf_event",
                format!("the kernel refuses sampling here: {reason}"),
            );
            return None;
        }
    };
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(ms) {
        std::hint::black_box(start.elapsed());
    }
    Some(session.finish())
}

#[test]
fn threads_started_before_and_during_sampling_are_all_sampled() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let before = {
        let stop = stop.clone();
        let tx = tx.clone();
        std::thread::spawn(move || {
            tx.send(gettid()).unwrap();
            spin_until(&stop)
        })
    };
    let before_tid = rx.recv().unwrap();
    let system = System::probe();
    let session = match Session::start(&config(2048), Target::CurrentThread, &system) {
        Ok(s) => s,
        Err(reason) => {
            skip::skip(
                "perf_event",
                format!("the kernel refuses sampling here: {reason}"),
            );
            stop.store(true, Ordering::Relaxed);
            before.join().unwrap();
            return;
        }
    };
    let during = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            tx.send(gettid()).unwrap();
            spin_until(&stop)
        })
    };
    let during_tid = rx.recv().unwrap();
    let me = gettid();
    let start = Instant::now();
    let mut x = 1u64;
    while start.elapsed() < Duration::from_millis(400) {
        x = std::hint::black_box(x.wrapping_add(1));
    }
    stop.store(true, Ordering::Relaxed);
    before.join().unwrap();
    during.join().unwrap();
    let capture = session.finish();
    assert!(capture.uncovered.is_empty(), "{:?}", capture.uncovered);
    let data = PerfData::from_bytes(capture.writer.to_bytes()).unwrap();
    let mut tids = BTreeSet::new();
    let mut with_stack = 0;
    let stats = data
        .for_each_record(|e| {
            if let Record::Sample(s) = &e.record {
                tids.insert(s.tid.unwrap());
                if s.stack_user.is_some() && s.regs_user.is_some() {
                    with_stack += 1;
                }
            }
            Ok::<(), sparkles_perf_data::Error>(())
        })
        .unwrap();
    for (who, tid) in [
        ("the sampling thread", me),
        ("a thread started before", before_tid),
        ("a thread started during", during_tid),
    ] {
        assert!(
            tids.contains(&tid),
            "no sample from {who} ({tid}); sampled {tids:?}"
        );
    }
    assert!(with_stack > 0);
    // A busy machine may keep the drain waiting past what the buffers hold: whatever was
    // lost is counted, in the capture and in the session's restrictions.
    assert_eq!(
        (capture.lost, capture.lost_samples),
        (stats.lost, stats.lost_samples)
    );
    let said = capture
        .restrictions
        .iter()
        .any(|r| matches!(r, sparkles_sampler::session::Restriction::Lost { .. }));
    assert_eq!(
        said,
        capture.lost + capture.lost_samples > 0,
        "{:?}",
        capture.restrictions
    );
}

#[test]
fn a_capture_is_a_perf_data_file_with_header_features() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mut capture) = busy_capture(&config(0), 100) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.perf.data");
    capture.writer.write(&path).unwrap();
    let data = PerfData::open(&path).unwrap();
    let f = &data.features;
    assert!(f.hostname.is_some() && f.osrelease.is_some() && f.arch.is_some());
    assert!(f.nrcpus.is_some() && f.cmdline.is_some() && f.cpu_topology.is_some());
    assert_eq!(data.attrs.len(), 1);
    assert_eq!(
        data.attrs[0].attr.size, 128,
        "perf 6.1 reads attrs of at most 128 bytes"
    );
    assert_eq!(data.attrs[0].name.as_deref(), Some("cpu-clock"));
    let stats = data
        .for_each_record(|_| Ok::<(), sparkles_perf_data::Error>(()))
        .unwrap();
    assert_eq!(stats.samples, capture.samples);
    // Synthesized records describe this process before sampling began.
    assert!(stats.by_type.get("mmap2").copied().unwrap_or(0) > 0);
    assert!(stats.by_type.get("comm").copied().unwrap_or(0) > 0);
    // perf reads it without complaint, where installed.
    if let Ok(out) = std::process::Command::new("perf")
        .args(["report", "--stdio", "-i"])
        .arg(&path)
        .output()
    {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "perf report failed: {err}");
        assert!(!err.to_lowercase().contains("warning"), "{err}");
    }
}

/// A session streamed to its file: compressed as it goes (many chunks of DWARF stacks),
/// nothing at the path until it is whole, an older file there untouched by a failed run,
/// and the file read back the same by sparkles and by perf.
#[test]
fn a_streamed_capture_is_compressed_as_it_goes_and_reads_back_whole() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("streamed.perf.data");
    std::fs::write(&path, b"an older capture").unwrap();
    let streamed = SamplingConfig {
        stream_to: Some(path.clone()),
        // Full stack copies: a chunk of records fills in a fraction of a second.
        compact_stacks: false,
        ..config(8192)
    };
    // A session dropped unfinished (a panicking body) leaves the older file alone and no
    // temporary file behind.
    let Some(abandoned) = busy_capture(&streamed, 50) else {
        return;
    };
    drop(abandoned);
    assert_eq!(std::fs::read(&path).unwrap(), b"an older capture");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    // libzstd's one stream where built with it (the workspace's tests are), and ruzstd's
    // frame a chunk (every build's otherwise): sparkles and perf read both.
    for compression in [Compression::default(), Compression::ZstdRust] {
        let streamed = SamplingConfig {
            compression,
            ..streamed.clone()
        };
        if !streamed_capture_reads_back(&streamed, &path, dir.path()) {
            return;
        }
    }
}

/// One streamed capture at `path` (alone in `dir`), read back whole by sparkles and by
/// perf; false where perf is absent or reads no compressed capture (said).
fn streamed_capture_reads_back(streamed: &SamplingConfig, path: &Path, dir: &Path) -> bool {
    let Some(mut capture) = busy_capture(streamed, 400) else {
        return false;
    };
    assert!(capture.writer.data.len() < sparkles_perf_data::writer::CHUNK);
    let written = capture.writer.write(path).unwrap();
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), 1);
    assert_eq!(std::fs::metadata(path).unwrap().len(), written.bytes);
    assert!(
        written.compressed_records > 1 && written.record_bytes > 8 * written.bytes,
        "{:?} {written:?}: stack copies compress well",
        streamed.compression
    );
    let data = PerfData::open(path).unwrap();
    let stats = data
        .for_each_record(|_| Ok::<(), sparkles_perf_data::Error>(()))
        .unwrap();
    assert_eq!(stats.samples, capture.samples);
    assert_eq!(stats.decompressed_bytes, written.record_bytes);
    assert!(stats.by_type.get("mmap2").copied().unwrap_or(0) > 0);
    // perf 6.1 (built with zstd) reads every sample of it.
    let Ok(out) = std::process::Command::new("perf")
        .args(["script", "-G", "-F", "ip", "-i"])
        .arg(path)
        .output()
    else {
        skip::skip("perf", "perf is not installed");
        return false;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "perf script failed: {err}");
    if err.contains("zstd") || err.contains("ompress") {
        skip::skip(
            "perf",
            format!("this perf reads no compressed captures: {err}"),
        );
        return false;
    }
    let lines = String::from_utf8_lossy(&out.stdout).lines().count() as u64;
    assert_eq!(
        lines, capture.samples,
        "perf script of {:?}: {err}",
        streamed.compression
    );
    true
}

fn drain_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .filter(|c| c.trim() == "sparkles-drain")
        .count()
}

#[test]
fn a_session_dropped_without_finish_stops_its_drain() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let session = match Session::start(&config(0), Target::CurrentThread, &System::probe()) {
        Ok(s) => s,
        Err(reason) => {
            skip::skip(
                "perf_event",
                format!("the kernel refuses sampling here: {reason}"),
            );
            return;
        }
    };
    assert_eq!(drain_threads(), 1);
    // What a panicking profiled body does: the session unwinds away.
    drop(session);
    assert_eq!(drain_threads(), 0, "the drain thread outlived its session");
}

/// A session of several events: a sampling event led by a counting-only leader (the
/// shape of Sapphire Rapids' `{mem-loads-aux, mem-loads}`), and a second sampling event,
/// here software events that every kernel allowing sampling has.
#[test]
fn several_events_share_one_ring_buffer_and_the_capture_names_each() {
    use sparkles_perf_data::attr::flag;
    use sparkles_sampler::session::SampledEvent;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let resolver = EventResolver::live().unwrap();
    let named = |spelling: &str| {
        let mut e = resolver.resolve(spelling).unwrap().remove(0);
        e.name = spelling.into();
        e
    };
    let mut config = config(0);
    config.events = vec![
        SampledEvent {
            attr: named("page-faults"),
            leader: Some(named("dummy")),
            cpus: None,
            period: None,
        },
        named("cpu-clock").into(),
    ];
    let session = match Session::start(&config, Target::CurrentThread, &System::probe()) {
        Ok(s) => s,
        Err(reason) => {
            skip::skip(
                "perf_event",
                format!("the kernel refuses sampling here: {reason}"),
            );
            return;
        }
    };
    // Fresh pages fault; the loop takes CPU time.
    let start = Instant::now();
    let mut kept = Vec::new();
    while start.elapsed() < Duration::from_millis(300) {
        let mut block = vec![0u8; 1 << 20];
        for page in block.chunks_mut(4096) {
            page[0] = 1;
        }
        kept.push(std::hint::black_box(block));
        if kept.len() > 64 {
            kept.clear();
        }
    }
    let mut capture = session.finish();
    assert!(capture.uncovered.is_empty(), "{:?}", capture.uncovered);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("group.perf.data");
    capture.writer.write(&path).unwrap();
    let data = PerfData::open(&path).unwrap();
    let names: Vec<&str> = data
        .attrs
        .iter()
        .map(|a| a.name.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(names, ["dummy", "page-faults", "cpu-clock"]);
    let (leader, faults, clock) = (&data.attrs[0], &data.attrs[1], &data.attrs[2]);
    // The leader only counts; only the first sampling event tracks mappings and tasks.
    assert_eq!(leader.attr.sample_period_or_freq, 0);
    assert_eq!(leader.attr.flags & (flag::FREQ | flag::MMAP), 0);
    assert_ne!(faults.attr.flags & flag::MMAP, 0);
    assert_eq!(clock.attr.flags & (flag::MMAP | flag::COMM | flag::TASK), 0);
    assert_eq!(leader.attr.sample_type, faults.attr.sample_type);
    assert_eq!(clock.attr.sample_type, faults.attr.sample_type);
    // One instance of each per CPU (the calling thread, inherited), each with its id.
    for a in &data.attrs {
        assert!(!a.ids.is_empty(), "{:?} has no ids", a.name);
    }
    // No GROUP_DESC: perf report's group view would show the group by its leader's
    // samples, of which a counting leader has none.
    assert!(data.features.group_desc.is_none());
    let mut per_attr = [0u64; 3];
    let mut mmaps = BTreeSet::new();
    let mut repeated = 0;
    data.for_each_record(|e| {
        match &e.record {
            Record::Sample(_) => per_attr[e.attr.unwrap()] += 1,
            Record::Mmap(m)
                if !mmaps.insert((m.pid, m.addr, m.len, m.pgoff, m.filename.to_vec())) =>
            {
                repeated += 1;
            }
            _ => {}
        }
        Ok::<(), sparkles_perf_data::Error>(())
    })
    .unwrap();
    assert_eq!(per_attr[0], 0, "the counting leader sampled");
    assert!(
        per_attr[1] > 0 && per_attr[2] > 0,
        "samples per event: {per_attr:?}"
    );
    assert_eq!(per_attr.iter().sum::<u64>(), capture.samples);
    assert_eq!(repeated, 0, "a mapping was recorded twice");
    // perf reports the samples of both sampling events, where installed.
    if let Ok(out) = std::process::Command::new("perf")
        .args(["report", "--stdio", "--sort", "dso", "-i"])
        .arg(&path)
        .output()
    {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for (name, n) in [("page-faults", per_attr[1]), ("cpu-clock", per_attr[2])] {
            let line = format!("# Samples: {n}  of event '{name}'");
            assert!(text.contains(&line), "perf report lacks {line:?}:\n{text}");
        }
    }
}

/// `:P` asks for the highest precise level the PMU takes: the session probes downwards
/// as perf does, and the capture records the level that opened (the one a plain open
/// finds), where hardware cycles can be sampled at all.
#[test]
fn a_precise_max_event_opens_at_the_level_the_kernel_takes() {
    use sparkles_perf_data::attr::flag;
    use sparkles_sampler::open::{open, OpenMode};
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let system = System::probe();
    let resolver = EventResolver::live().unwrap();
    let Ok(mut cycles) = resolver.resolve("cycles:P").map(|mut a| a.remove(0)) else {
        skip::skip("pmu", "no cycles event here");
        return;
    };
    cycles.name = "cycles:P".into();
    let expected = match open(&cycles, OpenMode::Sampling { period: 100_000 }, &system) {
        Ok(o) => o.precise_ip,
        Err(e) => {
            skip::skip("pmu", format!("cycles cannot be sampled here: {e}"));
            return;
        }
    };
    let mut config = config(0);
    config.events = vec![cycles.into()];
    let capture = busy_capture(&config, 50).unwrap();
    let level = (capture.writer.attr.flags >> flag::PRECISE_SHIFT) & 3;
    assert_eq!(level, u64::from(expected));
}

/// An event the kernel refuses is left out with its reason, and the others still sample.
#[test]
fn a_refused_event_is_named_and_the_others_still_sample() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let resolver = EventResolver::live().unwrap();
    let mut bogus = resolver.resolve("cpu-clock").unwrap().remove(0);
    // A tracepoint id no kernel has.
    bogus.type_ = 2;
    bogus.config = 0xffff_fff0;
    bogus.name = "no-such-tracepoint".into();
    let mut config = config(0);
    let clock = config.events.remove(0);
    config.events = vec![bogus.clone().into(), clock];
    let Some(capture) = busy_capture(&config, 50) else {
        return;
    };
    assert!(
        capture.restrictions.iter().any(
            |r| matches!(r, Restriction::NotSampled { event, .. } if event == "no-such-tracepoint")
        ),
        "{:?}",
        capture.restrictions
    );
    assert!(capture.uncovered.is_empty(), "{:?}", capture.uncovered);
    assert_eq!(capture.writer.event_name, "cpu-clock");
    assert!(capture.writer.more_events.is_empty());
    assert!(capture.samples > 0);
    // Alone, the refused event is the session's error, with the kernel's reason.
    config.events = vec![bogus.into()];
    let err = Session::start(&config, Target::CurrentThread, &System::probe()).unwrap_err();
    match &err {
        sparkles_sampler::Error::NotOpened { reasons, .. } => {
            assert_eq!(reasons.len(), 1, "{err}");
            assert!(!reasons[0].is_empty());
        }
        other => panic!("not the kernel's refusal: {other}"),
    }
    assert!(
        !err.to_string().contains("no event could be opened"),
        "{err}"
    );
}

/// The memory plan `--profile=mem` makes on Sapphire Rapids (`{mem-loads-aux,
/// mem-loads}` and `mem-stores`), opened on this kernel's own hardware PMU: a counting
/// leader in a group with its sampling member, and a second hardware event writing into
/// the same ring buffers. Only where this machine's own plan is the same events (a
/// Sapphire Rapids, or a later Intel core with the same codes): elsewhere the codes mean
/// something else or nothing, and it skips saying so.
#[test]
fn the_sapphire_rapids_memory_plan_opens_as_a_hardware_group_here() {
    use sparkles_perf_data::attr::flag;
    use sparkles_sampler::mem_events::live_plan;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/sysfs/intel-sapphire-rapids");
    if !root.is_dir() {
        skip::skip("fixtures", format!("{} is absent", root.display()));
        return;
    }
    let resolver = EventResolver::new(&root).unwrap();
    let system = System::probe();
    let plan = live_plan(&resolver, &system).unwrap();
    assert!(!plan.first_touch, "{}", plan.note);
    let codes = |events: &[sparkles_sampler::session::SampledEvent]| -> Vec<(u32, u64, u64)> {
        events
            .iter()
            .flat_map(|e| e.leader.iter().chain(std::iter::once(&e.attr)))
            .map(|a| (a.type_, a.config, a.config1))
            .collect()
    };
    let here = EventResolver::live()
        .ok()
        .and_then(|live| live_plan(&live, &system).ok());
    match &here {
        Some(own) if !own.first_touch && codes(&own.events) == codes(&plan.events) => {}
        _ => {
            skip::skip(
                "sapphire_rapids",
                format!(
                    "this machine's memory plan is not Sapphire Rapids's ({}): its codes are not opened here",
                    here.map_or("none".to_string(), |p| p.note)
                ),
            );
            return;
        }
    }
    // A low frequency: these raw codes may count anything on this PMU, and a period
    // would let them interrupt so often that the kernel lowers its sampling limit.
    let mut config = config(0);
    config.rate = Rate::Frequency(200);
    plan.apply(&mut config);
    if let Some(m) = config.memory.as_mut() {
        m.resolve_pages = false;
    }
    let session = match Session::start(&config, Target::CurrentThread, &system) {
        Ok(s) => s,
        Err(reason) => {
            skip::skip(
                "pmu",
                format!("this kernel's PMU refuses the plan's events: {reason}"),
            );
            return;
        }
    };
    std::hint::black_box(sparkles_sampler::caps::load_misses(Duration::from_millis(
        100,
    )));
    let capture = session.finish();
    let data = PerfData::from_bytes(capture.writer.to_bytes()).unwrap();
    let names: Vec<&str> = data
        .attrs
        .iter()
        .map(|a| a.name.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        [
            "cpu/mem-loads-aux/P",
            "cpu/mem-loads,ldlat=30/P",
            "cpu/mem-stores/P"
        ],
        "refused: {:?}",
        capture.restrictions
    );
    let aux = &data.attrs[0].attr;
    assert_eq!((aux.config, aux.sample_period_or_freq), (0x8203, 0));
    assert_eq!((aux.flags >> flag::PRECISE_SHIFT) & 3, 0);
    let mut per_attr = [0u64; 3];
    data.for_each_record(|e| {
        if let Record::Sample(_) = &e.record {
            per_attr[e.attr.unwrap()] += 1;
        }
        Ok::<(), sparkles_perf_data::Error>(())
    })
    .unwrap();
    assert_eq!(per_attr[0], 0, "the counting leader sampled");
    assert!(per_attr[1] + per_attr[2] > 0, "no samples: {per_attr:?}");
    eprintln!(
        "samples per event: {per_attr:?}; {:?}",
        capture.restrictions
    );
    // `sparkles caps` opens the same plan and says what came of it: samples counted,
    // and available only where some carry a data source.
    let probe = sparkles_sampler::caps::memory_probe(&resolver, &system);
    assert_eq!(
        probe.what,
        "sample {cpu/mem-loads-aux/P,cpu/mem-loads,ldlat=30/P}, cpu/mem-stores/P at 1000 Hz for 20 ms (what --profile=mem opens)"
    );
    assert!(
        probe
            .result
            .contains(" samples in 20 ms of loads that miss, "),
        "{probe:?}"
    );
    assert_eq!(probe.ok, !probe.result.ends_with(", 0 with a data source"));
}

/// A frequency above half of kernel.perf_event_max_sample_rate (the kernel refuses one
/// above the limit, throttles near it, and lowers it by itself after slow sampling
/// interrupts) samples at that half, saying so, and the capture counts its throttling.
#[test]
fn a_frequency_above_half_the_kernel_limit_samples_at_half() {
    use sparkles_perf_data::attr::flag;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(max) = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
    else {
        skip::skip(
            "perf_event",
            "kernel.perf_event_max_sample_rate is unreadable",
        );
        return;
    };
    let half = (max / 2).max(1);
    let mut config = config(0);
    config.rate = Rate::Frequency(max + 1);
    let Some(capture) = busy_capture(&config, 20) else {
        return;
    };
    assert!(
        capture.restrictions.contains(&Restriction::RateClamped {
            asked: max + 1,
            limit: max
        }),
        "{:?}",
        capture.restrictions
    );
    let note = format!("sampling at {half} Hz, not {}: half of", max + 1);
    assert!(capture
        .restrictions
        .iter()
        .any(|r| r.to_string().starts_with(&note)));
    assert_ne!(capture.writer.attr.flags & flag::FREQ, 0);
    assert_eq!(capture.writer.attr.sample_period_or_freq, half);
    // At half the limit a 20 ms capture is throttled for at most a few ticks.
    assert!(capture.throttled.seconds < 0.02, "{:?}", capture.throttled);
}

/// An event opened only on some CPUs (a hybrid PMU's) leaves the other CPUs' buffers to
/// the next event, which then records mappings and tasks there: both attrs say they
/// track, and no mapping is recorded twice.
#[test]
fn an_event_on_some_cpus_leaves_tracking_elsewhere_to_the_next() {
    use sparkles_perf_data::attr::flag;
    use sparkles_sampler::session::SampledEvent;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if online.trim() == "0" {
        skip::skip("cpus", "one CPU online");
        return;
    }
    let resolver = EventResolver::live().unwrap();
    let mut config = config(0);
    let clock = config.events.remove(0);
    let mut faults = resolver.resolve("page-faults").unwrap().remove(0);
    faults.name = "page-faults".into();
    config.events = vec![
        SampledEvent {
            cpus: Some(vec![0]),
            ..clock
        },
        faults.into(),
    ];
    // The last online CPU is not CPU 0: a thread pinned there faults pages during the
    // session, so the faults event's buffer there has samples to give.
    let last_cpu = sparkles_perf_data::topology::parse_list(online.trim())
        .into_iter()
        .max()
        .unwrap_or(0) as usize;
    let session = match Session::start(&config, Target::CurrentThread, &System::probe()) {
        Ok(s) => s,
        Err(reason) => {
            skip::skip(
                "perf_event",
                format!("the kernel refuses sampling here: {reason}"),
            );
            return;
        }
    };
    let pinned = std::thread::spawn(move || {
        // SAFETY: a zeroed cpu_set_t with one CPU set, for the calling thread.
        let pinned = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(last_cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        };
        let mut map = memmap2::MmapMut::map_anon(256 * 4096).unwrap();
        for page in map.chunks_mut(4096) {
            page[0] = 1;
        }
        pinned
    });
    let pinned = pinned.join().unwrap();
    let capture = session.finish();
    let data = PerfData::from_bytes(capture.writer.to_bytes()).unwrap();
    assert_eq!(data.attrs.len(), 2);
    for a in &data.attrs {
        assert_ne!(a.attr.flags & flag::MMAP, 0, "{:?} does not track", a.name);
    }
    let faults_ids = &data.attrs[1].ids;
    let mut mmaps = BTreeSet::new();
    let mut repeated = 0;
    let mut faults_on_last_cpu = 0;
    data.for_each_record(|e| {
        match &e.record {
            Record::Mmap(m)
                if !mmaps.insert((m.pid, m.addr, m.len, m.pgoff, m.filename.to_vec())) =>
            {
                repeated += 1;
            }
            Record::Sample(s)
                if s.cpu == Some(last_cpu as u32)
                    && s.id.is_some_and(|id| faults_ids.contains(&id)) =>
            {
                faults_on_last_cpu += 1;
            }
            _ => {}
        }
        Ok::<(), sparkles_perf_data::Error>(())
    })
    .unwrap();
    assert!(!mmaps.is_empty(), "no mapping recorded");
    assert_eq!(repeated, 0, "a mapping was recorded twice");
    if pinned {
        assert!(
            faults_on_last_cpu > 0,
            "no page-fault sample from CPU {last_cpu}, where only page-faults samples"
        );
    } else {
        eprintln!("not checked: could not pin a thread to CPU {last_cpu}");
    }
}
