//! What weakens a profile is counted and said: THROTTLE/UNTHROTTLE records (how often,
//! for how long), LOST and LOST_SAMPLES records, in `profile.json`; and a diff with either
//! side throttled, lossy or truncated says so in its table, its JSON and its warnings.
//! The captures are built byte by byte from the kernel's record layouts.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use sparkles_perf_data::attr::{sample_type as st, Attr};
use sparkles_perf_data::record::kind;
use sparkles_perf_data::writer::CaptureWriter;
use sparkles_report::capture::profile_capture;
use sparkles_report::diff::{diff, table};
use sparkles_report::stacks::StackOptions;

fn u64s(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A capture of `samples` samples (IP, TID, TIME; one a millisecond), throttled as
/// `throttles` says (`(throttled, time_ms)`, event id 1), with `lost` LOST records of
/// `lost` each and one LOST_SAMPLES of `lost`.
fn capture(
    dir: &std::path::Path,
    samples: u64,
    throttles: &[(bool, u64)],
    lost: u64,
) -> std::path::PathBuf {
    let attr = Attr {
        type_: 1,
        size: 128,
        sample_period_or_freq: 1000,
        sample_type: st::IP | st::TID | st::TIME,
        ..Attr::default()
    };
    let mut w = CaptureWriter::new(attr, vec![1], "cpu-clock".into());
    let ms = 1_000_000u64;
    let mut throttles = throttles.iter().peekable();
    for i in 0..samples {
        let time = 1_000 * ms + i * ms;
        while let Some(&&(throttled, at)) = throttles.peek() {
            if 1_000 * ms + at * ms > time {
                break;
            }
            let kind = if throttled {
                kind::THROTTLE
            } else {
                kind::UNTHROTTLE
            };
            w.push_body(kind, 0, &u64s(&[1_000 * ms + at * ms, 1, 1]));
            throttles.next();
        }
        // ip, pid|tid, time
        let ip = 0x40_1000 + (i % 7) * 0x10;
        let mut body = u64s(&[ip]);
        body.extend_from_slice(&42u32.to_le_bytes());
        body.extend_from_slice(&42u32.to_le_bytes());
        body.extend_from_slice(&time.to_le_bytes());
        w.push_body(kind::SAMPLE, 2, &body); // PERF_RECORD_MISC_USER
    }
    if lost > 0 {
        w.push_body(kind::LOST, 0, &u64s(&[1, lost]));
        w.push_body(kind::LOST_SAMPLES, 0, &u64s(&[lost]));
    }
    let path = dir.join(format!("c{samples}-{}-{lost}.data", throttles.len()));
    w.write(&path).unwrap();
    path
}

#[test]
fn throttling_and_loss_are_counted_in_the_profile() {
    let tmp = tempfile::tempdir().unwrap();
    // Throttled at 100 ms for 4 ms, at 300 ms for 2 ms, and from 900 ms to the end (999).
    let path = capture(
        tmp.path(),
        1000,
        &[
            (true, 100),
            (false, 104),
            (true, 300),
            (false, 302),
            (true, 900),
        ],
        5,
    );
    let (p, _) = profile_capture(&path, "c", &StackOptions::default()).unwrap();
    assert_eq!(p.samples, 1000);
    assert_eq!(p.throttled.count, 3);
    assert!(
        (p.throttled.seconds - 0.105).abs() < 1e-9,
        "{:?}",
        p.throttled
    );
    assert_eq!((p.lost_records, p.lost_samples, p.lost), (5, 5, 10));
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["throttled"]["count"], 3);
    assert!(json["throttled"]["seconds"].is_f64());
    assert_eq!(json["lost"], 10);
}

#[test]
fn a_diff_says_what_weakens_it_on_either_side() {
    let tmp = tempfile::tempdir().unwrap();
    let clean = capture(tmp.path(), 1000, &[], 0);
    let weak = capture(tmp.path(), 1000, &[(true, 10), (false, 12)], 3);
    let options = StackOptions::default();
    let (mut a, _) = profile_capture(&clean, "clean", &options).unwrap();
    let (mut b, _) = profile_capture(&weak, "weak", &options).unwrap();
    // These samples have no mappings, so every stack ends at once: truncation is
    // tested on its own below.
    a.unwinding.truncated_pct = 0.0;
    b.unwinding.truncated_pct = 0.0;
    let same = diff("clean", &a, &a);
    assert!(same.warnings.is_empty(), "{:?}", same.warnings);
    let d = diff("weak", &a, &b);
    assert_eq!(d.quality.new.throttled.count, 1);
    assert_eq!(d.quality.new.lost, 6);
    assert_eq!(d.quality.base.lost, 0);
    let said = d.warnings.join("\n");
    assert!(said.contains("new was throttled 1 times"), "{said}");
    assert!(said.contains("new lost 6"), "{said}");
    assert!(!said.contains("base "), "{said}");
    assert!(table(&d, 5).starts_with("warning: new was throttled"));
    let json = serde_json::to_value(&d).unwrap();
    assert_eq!(json["quality"]["new"]["throttled"]["count"], 1);
    assert_eq!(json["quality"]["base"]["lost"], 0);
    assert!(json["quality"]["new"]["truncated_pct"].is_f64());
    // More than 5% of stacks truncated on one side: said, for that side.
    b.unwinding.truncated_pct = 26.6;
    let d = diff("truncated", &a, &b);
    assert!(
        d.warnings
            .iter()
            .any(|w| w.starts_with("new truncated 26.6% of its stacks")),
        "{:?}",
        d.warnings
    );
}
