//! Our attr for every name this machine opens equals the one `perf stat -e NAME -vv true`
//! prints. Skips, saying so, where perf is not installed or tracefs is unavailable.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::collections::BTreeMap;
use std::process::Command;

use sparkles_sampler::{EventAttr, EventResolver};

/// The first `perf_event_attr:` block perf prints, as field → value text.
fn perf_attr(name: &str) -> Option<BTreeMap<String, String>> {
    let out = Command::new("perf")
        .args(["stat", "-e", name, "-vv", "true"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    let block = text.split("perf_event_attr:").nth(1)?;
    let mut fields = BTreeMap::new();
    for line in block.lines().skip(1) {
        if line.starts_with("---") || line.starts_with("sys_perf_event_open") {
            break;
        }
        let mut parts = line.split_whitespace();
        if let (Some(k), Some(v)) = (parts.next(), parts.next()) {
            fields.insert(k.to_string(), v.to_string());
        }
    }
    Some(fields)
}

fn number(fields: &BTreeMap<String, String>, key: &str) -> u64 {
    match fields.get(key) {
        None => 0,
        Some(v) => match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
            None => v.parse().unwrap(),
        },
    }
}

fn ours(a: &EventAttr) -> [u64; 10] {
    [
        u64::from(a.type_),
        a.config,
        a.config1,
        a.config2,
        u64::from(a.precise_ip),
        u64::from(a.exclude_user),
        u64::from(a.exclude_kernel),
        u64::from(a.exclude_hv),
        u64::from(a.exclude_guest),
        u64::from(a.exclude_host),
    ]
}

fn theirs(f: &BTreeMap<String, String>) -> [u64; 10] {
    // perf prints config1/config2 as bp_addr/bp_len (and config1 for raw PMUs).
    let config1 = number(f, "config1").max(number(f, "bp_addr"));
    let config2 = number(f, "config2").max(number(f, "bp_len"));
    [
        number(f, "type"),
        number(f, "config"),
        config1,
        config2,
        number(f, "precise_ip"),
        number(f, "exclude_user"),
        number(f, "exclude_kernel"),
        number(f, "exclude_hv"),
        number(f, "exclude_guest"),
        number(f, "exclude_host"),
    ]
}

#[test]
fn attrs_match_perf_stat_vv() {
    if Command::new("perf").arg("--version").output().is_err() {
        skip::skip("perf", "perf is not installed");
        return;
    }
    let resolver = EventResolver::live().unwrap();
    let mut names: Vec<String> = [
        "cpu-clock",
        "task-clock",
        "page-faults",
        "faults",
        "minor-faults",
        "major-faults",
        "context-switches",
        "cs",
        "cpu-migrations",
        "migrations",
        "alignment-faults",
        "emulation-faults",
        "dummy",
        "cpu-clock:u",
        "page-faults:k",
        "cs:h",
        "task-clock:uk",
        "cpu-clock:G",
        "cpu-clock:H",
        "cycles",
        "instructions:u",
        "L1-dcache-load-misses",
        "LLC-loads",
        "r1234",
        "1:2",
    ]
    .map(String::from)
    .to_vec();
    match resolver.tracefs() {
        Ok(_) => names.extend(
            [
                "sched:sched_switch",
                "raw_syscalls:sys_enter",
                "raw_syscalls:sys_exit:u",
            ]
            .map(String::from),
        ),
        Err(reason) => eprintln!("tracepoints skipped: {reason}"),
    }
    let mut compared = 0;
    for name in &names {
        let Some(fields) = perf_attr(name) else {
            eprintln!("{name}: perf printed no attr; not compared");
            continue;
        };
        let attrs = resolver.resolve(name).unwrap();
        assert_eq!(attrs.len(), 1, "{name}");
        assert_eq!(
            ours(&attrs[0]),
            theirs(&fields),
            "{name}: ours vs perf's {fields:?}"
        );
        compared += 1;
    }
    // perf runs here: a test that compared nothing would prove nothing.
    assert!(compared >= 20, "only {compared} names compared");
}
