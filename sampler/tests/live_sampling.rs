//! Live sampling on this machine: every thread of a target is covered, and the capture is
//! a perf.data file our reader (and perf, where installed) reads. Skips, saying why, where
//! the kernel refuses perf_event_open.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sparkles_sampler::perf_data::{PerfData, Record};
use sparkles_sampler::session::{CallGraph, Rate, SamplingConfig, Session, Target};
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
    SamplingConfig {
        event,
        rate: Rate::Frequency(1000),
        call_graph: if stack == 0 {
            CallGraph::FramePointer
        } else {
            CallGraph::Dwarf(stack)
        },
        buffer_pages: 64,
        compact_stacks: true,
        memory: None,
    }
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
            eprintln!("skipped: the kernel refuses sampling here: {reason}");
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
    data.for_each_record(|e| {
        if let Record::Sample(s) = &e.record {
            tids.insert(s.tid.unwrap());
            if s.stack_user.is_some() && s.regs_user.is_some() {
                with_stack += 1;
            }
        }
        Ok::<(), ()>(())
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
    assert_eq!(capture.lost, 0);
}

#[test]
fn a_capture_is_a_perf_data_file_with_header_features() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let system = System::probe();
    let session = match Session::start(&config(0), Target::CurrentThread, &system) {
        Ok(s) => s,
        Err(reason) => {
            eprintln!("skipped: the kernel refuses sampling here: {reason}");
            return;
        }
    };
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(100) {
        std::hint::black_box(start.elapsed());
    }
    let capture = session.finish();
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
    let stats = data.for_each_record(|_| Ok::<(), ()>(())).unwrap();
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
            eprintln!("skipped: the kernel refuses sampling here: {reason}");
            return;
        }
    };
    assert_eq!(drain_threads(), 1);
    // What a panicking profiled body does: the session unwinds away.
    drop(session);
    assert_eq!(drain_threads(), 0, "the drain thread outlived its session");
}
