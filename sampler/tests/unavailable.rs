//! A build without the kernel edge (off Linux, or `--no-default-features`): the same API,
//! and every way in says why nothing opens, in the same words. Skips, saying so, in a
//! build that opens events (the default one on Linux).

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use sparkles_sampler::caps::{self, Status};
use sparkles_sampler::counters::{Bracketed, CounterConfig, CounterSet, Coverage};
use sparkles_sampler::open::{open, OpenMode};
use sparkles_sampler::session::{CallGraph, Rate, SamplingConfig, Session, Target};
use sparkles_sampler::system::System;
use sparkles_sampler::{Error, EventResolver, UNAVAILABLE};

fn why() -> Option<&'static str> {
    if UNAVAILABLE.is_none() {
        skip::skip(
            "portable",
            "this build opens perf events (the kernel edge is compiled in)",
        );
    }
    UNAVAILABLE
}

fn resolver() -> EventResolver {
    // Generic names resolve without sysfs, as on a machine that has none.
    EventResolver::empty("/nonexistent")
}

#[test]
fn opening_an_event_says_why_not() {
    let Some(why) = why() else { return };
    let attr = resolver().resolve("task-clock").unwrap().remove(0);
    let e = open(&attr, OpenMode::Counting, &System::probe()).unwrap_err();
    assert_eq!(e.errno, sparkles_sampler::errno::ENOSYS);
    assert_eq!(e.reason, why);
}

#[test]
fn a_session_does_not_start_and_says_why() {
    let Some(why) = why() else { return };
    let event = resolver().resolve("cpu-clock").unwrap().remove(0);
    let config = SamplingConfig {
        buffer_pages: 8,
        compact_stacks: false,
        ..SamplingConfig::new(
            vec![event.into()],
            Rate::Frequency(1000),
            CallGraph::FramePointer,
        )
    };
    match Session::start(&config, Target::CurrentThread, &System::probe()) {
        Err(Error::Unavailable(reason)) => assert_eq!(reason, why),
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[test]
fn every_counter_is_absent_with_the_reason_and_counts_none() {
    let Some(why) = why() else { return };
    let r = resolver();
    let events = ["task-clock", "page-faults", "cycles"]
        .iter()
        .flat_map(|s| r.resolve(s).unwrap())
        .collect();
    let config = CounterConfig {
        events,
        coverage: Coverage::Process,
        exact: false,
        rdpmc: true,
    };
    let set = CounterSet::open(&config, &System::probe());
    assert!(set.is_empty());
    assert_eq!(set.absent.len(), 3);
    assert!(
        set.absent.iter().all(|l| l.reason == why),
        "{:?}",
        set.absent
    );
    let mut b = Bracketed::start(set);
    b.resume();
    b.pause();
    let counts = b.counts();
    assert_eq!(counts.len(), 3);
    assert!(counts
        .iter()
        .all(|c| c.value.is_none() && c.reason.as_deref() == Some(why)));
}

#[test]
fn caps_lists_the_seven_concerns_with_the_reason_first() {
    let Some(why) = why() else { return };
    let report = caps::probe();
    assert_eq!(report.concerns.len(), 7);
    for id in [
        "scalar_counting",
        "overflow_sampling",
        "precise_data_source",
    ] {
        let c = report.concern(id).unwrap();
        assert_ne!(c.status, Status::Available, "{id}");
        assert_eq!(c.reasons.first().map(String::as_str), Some(why), "{id}");
    }
    assert!(report.notes.iter().any(|n| n == why));
    assert!(caps::render(&report).contains(why));
}
