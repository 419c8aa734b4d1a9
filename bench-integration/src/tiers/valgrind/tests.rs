//! The tier's units: the dumps' arithmetic, the requests outside valgrind, the program's
//! lookup.

use std::ffi::OsStr;
use std::path::Path;

use super::client::*;
use super::dumps::*;
use super::pass::*;
use super::program::*;
use super::{parse_dump, Dump, Events};

const DUMP: &str = "# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 11019
cmd:  ./vg
part: 1


desc: I1 cache: 32768 B, 64 B, 8-way associative
desc: D1 cache: 49152 B, 64 B, 12-way associative
desc: LL cache: 276824064 B, 64 B, 33-way associative

desc: Timerange: Basic block 0 - 28840
desc: Trigger: Client Request: sparkles 0 0 full

positions: line
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim
summary: 6018 1002 1008 1 0 0 1 0 0 1001 8


ob=(1) /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
fn=(0) 0x000000000001ab70
0 6018 1002 1008 1 0 0 1 0 0 1001 8
totals: 6009 1002 1002 0 0 0 0 0 0 1001 8
";

#[test]
fn a_dump_header_gives_its_trigger_and_summary_trailing_zeros_restored() {
    let d = parse_dump(DUMP, Path::new("cg.out.1")).unwrap();
    assert_eq!(d.trigger, "sparkles 0 0 full");
    assert_eq!(d.events.get("Ir"), 6018);
    assert_eq!(d.events.get("Dw"), 1008);
    assert_eq!(d.events.get("Bcm"), 8);
    // Left out of the summary: zero.
    assert_eq!(d.events.get("Bim"), 0);
    assert_eq!(d.events.get("Bi"), 0);
}

#[test]
fn a_malformed_dump_is_named() {
    let e = parse_dump("events: Ir\nsummary: 12 x\n", Path::new("/t/cg.out.3"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("/t/cg.out.3") && e.contains("'x'"), "{e}");
    let e = parse_dump("summary: 1\n", Path::new("f"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no 'events:'"), "{e}");
    let e = parse_dump("events: Ir\nsummary: 1 2\n", Path::new("f"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("2 values for 1 events"), "{e}");
}

/// The events callgrind lists with its cache and branch simulation on, those not in
/// `pairs` 0.
fn events(pairs: &[(&str, u64)]) -> Events {
    const SIMULATED: [&str; 13] = [
        "Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw", "Bc", "Bcm", "Bi", "Bim",
    ];
    Events::from(
        SIMULATED
            .iter()
            .map(|n| {
                let v = pairs.iter().find(|(p, _)| p == n).map_or(0, |(_, v)| *v);
                (n.to_string(), v)
            })
            .collect::<Vec<_>>(),
    )
}

#[test]
fn without_a_simulation_its_metrics_are_absent_not_zero() {
    // `--valgrind-sim none`: callgrind lists Ir alone.
    let only_ir = |ir| Events::from(vec![("Ir".to_string(), ir)]);
    let v = per_iteration(&only_ir(24), &only_ir(6024), 1000);
    assert_eq!(v, vec![("valgrind.instructions", 6.0)]);
    // `--valgrind-sim branch`: the branch events, no cache ones.
    let branch = |ir, bcm| {
        Events::from(
            [("Ir", ir), ("Bc", 0), ("Bcm", bcm), ("Bi", 0), ("Bim", 0)]
                .iter()
                .map(|(n, v)| (n.to_string(), *v))
                .collect::<Vec<_>>(),
        )
    };
    let v = per_iteration(&branch(24, 8), &branch(6024, 10), 1000);
    assert_eq!(
        v,
        vec![
            ("valgrind.instructions", 6.0),
            ("valgrind.branch_misses", 0.002)
        ]
    );
    // Both: all five.
    assert_eq!(per_iteration(&events(&[]), &events(&[]), 1).len(), 5);
}

#[test]
fn a_simulation_left_out_makes_its_metrics_unavailable_naming_the_flag() {
    let by_id = |d: &[sparkles_results::metric::MetricDescriptor]| {
        d.iter()
            .map(|d| (d.id.to_string(), d.availability.clone()))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let available = sparkles_results::metric::Availability::Available;
    let none = by_id(&descriptors_where(
        available.clone(),
        Simulation::parse("none").unwrap(),
    ));
    assert_eq!(none["valgrind.instructions"], available);
    for id in [
        "valgrind.l1_misses",
        "valgrind.ll_misses",
        "valgrind.estimated_cycles",
        "valgrind.branch_misses",
    ] {
        match &none[id] {
            sparkles_results::metric::Availability::Unavailable(why) => {
                assert!(why.contains("--valgrind-sim"), "{id}: {why}")
            }
            a => panic!("{id}: {a:?}"),
        }
    }
    let cache = by_id(&descriptors_where(
        available.clone(),
        Simulation::parse("cache").unwrap(),
    ));
    assert_eq!(cache["valgrind.l1_misses"], available);
    assert_eq!(cache["valgrind.estimated_cycles"], available);
    assert_ne!(cache["valgrind.branch_misses"], available);
    // The default simulates both; valgrind absent is the reason over the flag's.
    let both = by_id(&descriptors_where(available.clone(), Simulation::default()));
    assert!(both.values().all(|a| *a == available));
    let absent = sparkles_results::metric::Availability::Unavailable("no valgrind".into());
    let gone = by_id(&descriptors_where(
        absent.clone(),
        Simulation::parse("none").unwrap(),
    ));
    assert!(gone.values().all(|a| *a == absent));
}

#[test]
fn per_iteration_values_cancel_what_both_runs_share() {
    // 1000 iterations more of 6 instructions, 1 load and 1 store each, beside 18
    // instructions of bracketing and one iteration that the base run has too; one
    // cold miss in both.
    let base = events(&[
        ("Ir", 24),
        ("Dr", 3),
        ("Dw", 9),
        ("I1mr", 1),
        ("ILmr", 1),
        ("Bcm", 8),
    ]);
    let full = events(&[
        ("Ir", 6024),
        ("Dr", 1003),
        ("Dw", 1009),
        ("I1mr", 1),
        ("ILmr", 1),
        ("Bcm", 10),
    ]);
    let v = per_iteration(&base, &full, 1000);
    let get = |id: &str| v.iter().find(|(i, _)| *i == id).unwrap().1;
    assert_eq!(get("valgrind.instructions"), 6.0);
    assert_eq!(get("valgrind.l1_misses"), 0.0);
    assert_eq!(get("valgrind.ll_misses"), 0.0);
    assert_eq!(get("valgrind.branch_misses"), 0.002);
    // 8 accesses an iteration, all L1 hits.
    assert_eq!(get("valgrind.estimated_cycles"), 8.0);
    // One fewer misprediction in the full run than in the base one: none, not -1.
    let v = per_iteration(&events(&[("Bcm", 2)]), &events(&[("Bcm", 1)]), 1);
    assert_eq!(v[3], ("valgrind.branch_misses", 0.0));
}

#[test]
fn estimated_cycles_weigh_ll_hits_and_ram_as_gungraun_does() {
    // 100 accesses: 10 miss L1, of which 4 miss LL too.
    let e = events(&[
        ("Ir", 60),
        ("Dr", 30),
        ("Dw", 10),
        ("D1mr", 10),
        ("DLmr", 4),
    ]);
    let m = metrics_of(&e);
    assert_eq!(
        m[4],
        ("valgrind.estimated_cycles", 90.0 + 5.0 * 6.0 + 35.0 * 4.0)
    );
}

#[test]
fn every_bracket_needs_both_its_runs() {
    let dump = |trigger: &str, ir| Dump {
        trigger: trigger.to_string(),
        events: events(&[("Ir", ir)]),
    };
    let dumps = vec![
        dump("sparkles 3 0 base", 10),
        dump("sparkles 3 0 full", 110),
        dump("sparkles 3 1 full", 112),
        dump("sparkles 3 1 base", 10),
        dump("sparkles 4 0 base", 10),
    ];
    let b = brackets_of(&dumps, 3, 2, 10).unwrap();
    assert_eq!(
        b[0],
        sparkles_results::metric::MetricSeries {
            id: "valgrind.instructions".to_string(),
            values: vec![10.0, 10.2]
        }
    );
    let e = brackets_of(&dumps[..3], 3, 2, 10).unwrap_err();
    assert!(e.contains("'sparkles 3 1 base'"), "{e}");
    let e = brackets_of(&dumps, 4, 2, 10).unwrap_err();
    assert!(e.contains("'sparkles 4 0 full'"), "{e}");
}

#[test]
fn the_full_runs_share_the_budget_among_brackets() {
    // 10 ms over 8 brackets of n iterations at 100 ns: n = 12500.
    assert_eq!(iterations_for(100.0, 8), 12500);
    // A body slower than the budget still runs once.
    assert_eq!(iterations_for(1e9, 8), 1);
    assert_eq!(iterations_for(f64::NAN, 8), 1);
}

#[test]
fn a_run_slow_under_callgrind_takes_fewer_iterations_never_more() {
    use std::time::Duration;
    // 2 ms an iteration under callgrind: 40 ms a full run holds 20 of the 12,500 asked.
    assert_eq!(sized_by_cost(12_500, Some(Duration::from_millis(2))), 20);
    // Quick enough: what was asked.
    assert_eq!(sized_by_cost(100, Some(Duration::from_micros(10))), 100);
    // Slower than the whole run, or untimed: one, or what was asked.
    assert_eq!(sized_by_cost(100, Some(Duration::from_secs(1))), 1);
    assert_eq!(sized_by_cost(100, None), 100);
    assert_eq!(sized_by_cost(100, Some(Duration::ZERO)), 100);
}

#[test]
fn a_count_is_exact_where_its_brackets_repeat_it_to_the_instruction() {
    use sparkles_results::metric::MetricSeries;
    let series = |ir: &[f64], misses: &[f64]| {
        vec![
            MetricSeries {
                id: "valgrind.instructions".into(),
                values: ir.to_vec(),
            },
            MetricSeries {
                id: "valgrind.l1_misses".into(),
                values: misses.to_vec(),
            },
        ]
    };
    // The misses may differ where the heap's blocks land: the count is what is exact.
    assert!(exact(&series(&[700.0; 3], &[3.0, 4.0, 3.0])));
    assert!(!exact(&series(&[700.0, 700.0, 701.0], &[3.0; 3])));
    assert!(!exact(&series(&[700.0], &[3.0])));
    assert!(!exact(&[]));
}

#[test]
fn not_under_valgrind_the_requests_are_no_ops() {
    if running_on_valgrind() {
        return;
    }
    toggle_collect();
    zero_stats();
    dump_stats_at(c"sparkles 0 0 base");
    assert!(!running_on_valgrind());
}

#[test]
#[cfg(unix)]
fn a_missing_program_says_where_it_was_looked_for() {
    if !request::SUPPORTED {
        let e = find_program(None, None).unwrap_err().to_string();
        assert!(e.contains("x86_64 and aarch64 Linux"), "{e}");
        return;
    }
    let e = find_program(Some(OsStr::new("/nonexistent/valgrind")), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/nonexistent/valgrind (from SPARKLES_VALGRIND) is not an executable"),
        "{e}"
    );
    let e = find_program(None, Some(OsStr::new("/nonexistent-a:/nonexistent-b")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("valgrind not found on PATH"), "{e}");
    assert!(e.contains("apt-get install valgrind"), "{e}");
    // A program found on the path given.
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("vg-fake");
    std::fs::write(&fake, "#!/bin/sh\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let found = find_program(Some(OsStr::new("vg-fake")), Some(dir.path().as_os_str())).unwrap();
    assert_eq!(found, fake);
}

#[test]
fn valgrind_sim_takes_cache_and_branch_or_none_alone() {
    let both = Simulation::default();
    assert_eq!(Simulation::parse("cache,branch"), Ok(both));
    assert_eq!(Simulation::parse("branch,cache"), Ok(both));
    let none = Simulation {
        cache: false,
        branch: false,
    };
    assert_eq!(Simulation::parse("none"), Ok(none));
    assert_eq!(
        Simulation::parse("branch"),
        Ok(Simulation {
            cache: false,
            branch: true
        })
    );
    // `none` beside a simulation, and names that are none of them, are refused.
    let e = Simulation::parse("none,cache").unwrap_err();
    assert!(e.contains("none") && e.contains("alone"), "{e}");
    let e = Simulation::parse("cahce").unwrap_err();
    assert!(e.contains("'cahce'"), "{e}");
    assert!(Simulation::parse("").is_err());
}

#[test]
fn children_take_the_slowest_cases_first_the_suite_order_among_equals() {
    let case = |ns: f64| (String::new(), 1, ns);
    let cases = [case(10.0), case(2e9), case(f64::NAN), case(10.0), case(5e6)];
    assert_eq!(super::pass::slowest_first(&cases), [1, 4, 0, 3, 2]);
}
