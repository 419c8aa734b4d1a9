//! A case's change against its baseline, explained: every metric both rows have is compared
//! as timing is (the ratio of medians over the counting pass's brackets, with a bootstrap
//! interval), and one line names the leading cause, with its numbers, and, where both runs
//! were profiled, where the time went.
//!
//! A wall-time regression whose instruction count moved with it is more work; one whose
//! instructions stayed flat while cycles rose is the same work done slower. Where the
//! machine has no PMU, instructions and cycles are unavailable and the line says so: it
//! never takes a time change for more work.

pub use crate::comparison::{Cause, Explanation, MetricChange, MetricVerdict, MissingMetric};
use crate::row::BenchRow;
use crate::stats::{compare, Summary, Verdict, MIN_SAMPLES_FOR_VERDICT};

/// The samples of `id` in `row`: its brackets where counted in brackets, else its one
/// value (a baseline saved before brackets).
fn samples_of(row: &BenchRow, id: &str) -> Option<Vec<f64>> {
    match row.metric_samples.get(id) {
        Some(v) if !v.is_empty() => Some(v.clone()),
        _ => row.metrics.get(id).copied().flatten().map(|v| vec![v]),
    }
}

/// `new` against `base`, as timing is compared; a zero baseline (a count that was 0) is
/// compared by whether the new values are all above it. Exact counts, too few for a
/// bootstrap (callgrind's, which take two brackets where they repeat to the
/// instruction: every value of each side the same, two at least a side), compare exactly:
/// the change is the difference, its interval that point, higher or lower wherever they
/// differ.
pub fn compare_metric(id: &str, base: &[f64], new: &[f64]) -> Option<MetricChange> {
    let b = Summary::of(base)?;
    let n = Summary::of(new)?;
    let underpowered = base.len() < MIN_SAMPLES_FOR_VERDICT || new.len() < MIN_SAMPLES_FOR_VERDICT;
    let repeats = |v: &[f64]| v.len() >= 2 && v.iter().all(|x| x.to_bits() == v[0].to_bits());
    if underpowered && repeats(base) && repeats(new) {
        let pct = if b.median != 0.0 {
            Some((n.median / b.median - 1.0) * 100.0)
        } else {
            (n.median == 0.0).then_some(0.0)
        };
        let verdict = match n.median.total_cmp(&b.median) {
            std::cmp::Ordering::Greater => MetricVerdict::Higher,
            std::cmp::Ordering::Less => MetricVerdict::Lower,
            std::cmp::Ordering::Equal => MetricVerdict::InsideTheNoise,
        };
        return Some(MetricChange {
            id: id.to_string(),
            base: b.median,
            new: n.median,
            change_pct: pct,
            ci_low_pct: pct,
            ci_high_pct: pct,
            verdict,
        });
    }
    let change = |change_pct, lo, hi, verdict| MetricChange {
        id: id.to_string(),
        base: b.median,
        new: n.median,
        change_pct,
        ci_low_pct: lo,
        ci_high_pct: hi,
        verdict,
    };
    if b.median <= 0.0 {
        let verdict = if underpowered {
            MetricVerdict::Underpowered
        } else if n.min > b.max {
            MetricVerdict::Higher
        } else {
            MetricVerdict::InsideTheNoise
        };
        let pct = (n.median == b.median).then_some(0.0);
        return Some(change(pct, None, None, verdict));
    }
    let c = compare(base, new)?;
    let verdict = match c.verdict {
        Verdict::Regression => MetricVerdict::Higher,
        Verdict::Improvement => MetricVerdict::Lower,
        Verdict::InsideTheNoise => MetricVerdict::InsideTheNoise,
        Verdict::Underpowered => MetricVerdict::Underpowered,
    };
    Some(change(
        Some(c.delta_pct),
        c.ci_low_pct,
        c.ci_high_pct,
        verdict,
    ))
}

/// Every metric of `new` and `base` compared; those one side lacks, with why
/// (`unavailable` tells why this run has no value for a metric, where it knows).
pub fn compare_metrics(
    base: &BenchRow,
    new: &BenchRow,
    unavailable: &dyn Fn(&str) -> Option<String>,
) -> (Vec<MetricChange>, Vec<MissingMetric>) {
    let mut ids: Vec<&String> = new.metrics.keys().chain(base.metrics.keys()).collect();
    ids.sort();
    ids.dedup();
    let mut changes = Vec::new();
    let mut missing = Vec::new();
    for id in ids {
        match (samples_of(base, id), samples_of(new, id)) {
            (Some(b), Some(n)) => changes.extend(compare_metric(id, &b, &n)),
            (None, None) => {}
            (Some(_), None) => missing.push(MissingMetric {
                id: id.clone(),
                reason: match unavailable(id) {
                    Some(why) => format!("not measured in this run: {why}"),
                    None => "not measured in this run (not selected)".to_string(),
                },
            }),
            (None, Some(_)) => missing.push(MissingMetric {
                id: id.clone(),
                reason: "not measured in the baseline".to_string(),
            }),
        }
    }
    (changes, missing)
}

/// Metrics that tell page faults, syscalls and I/O, with the smallest per-iteration
/// change that counts as a cause (exact counts wobble by fractions where the kernel
/// batches work).
const FAULTS: &[&str] = &["rusage.minor_faults", "rusage.major_faults", "page-faults"];
const SYSCALLS: &[&str] = &["syscalls", "io.syscr", "io.syscw"];
const IO: &[&str] = &["io.rchar", "io.wchar", "io.read_bytes", "io.write_bytes"];
const ALLOCS: &[&str] = &["alloc.count"];

/// A metric moved in direction `up` (true: higher) by at least `min_pct` and `min_abs`.
fn moved(c: &MetricChange, up: bool, min_pct: f64, min_abs: f64) -> bool {
    let direction = if up {
        MetricVerdict::Higher
    } else {
        MetricVerdict::Lower
    };
    c.verdict == direction
        && (c.new - c.base).abs() >= min_abs
        && c.change_pct.is_none_or(|p| p.abs() >= min_pct)
}

fn pct(c: &MetricChange) -> String {
    match c.change_pct {
        Some(p) => format!("{p:+.1}%"),
        None => format!("{} -> {}", short(c.base), short(c.new)),
    }
}

fn short(v: f64) -> String {
    if v.abs() >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The explanation of `row`'s change (its `comparison` set, its metrics compared):
/// `instructions_missing` says why instructions and cycles are unavailable, where they
/// are; `movers` are the profile's significant movers (`name`, change in points), and
/// `where_missing` says why there are none where the profile could not say (a baseline
/// saved without `--profile`, a run without it).
pub fn explain(
    comparison: &crate::row::Comparison,
    instructions_missing: Option<&str>,
    movers: &[(String, f64)],
    where_missing: Option<&str>,
) -> Explanation {
    let metric = |id: &str| comparison.metrics.iter().find(|m| m.id == id);
    let interval = |pct: f64, low: Option<f64>, high: Option<f64>| match (low, high) {
        (Some(lo), Some(hi)) => format!("{pct:+.1}% [{lo:+.1}, {hi:+.1}]"),
        _ => format!("{pct:+.1}%"),
    };
    let mut head = format!(
        "{} {}",
        comparison.verdict.label(),
        interval(
            comparison.delta_pct,
            comparison.ci_low_pct,
            comparison.ci_high_pct
        )
    );
    // Side by side, the null beside the verdict: the base against itself.
    if let Some(p) = &comparison.paired {
        head.push_str(&format!(
            " (null {})",
            interval(p.null_change_pct, p.null_ci_low_pct, p.null_ci_high_pct)
        ));
    }
    let up = match comparison.verdict {
        Verdict::Regression => true,
        Verdict::Improvement => false,
        Verdict::InsideTheNoise | Verdict::Underpowered => {
            // Where the work was counted and did not move, the line says so: the time
            // moved inside the noise with the same work (never a cause).
            let flat = match metric("instructions") {
                Some(i) => Some((i, "")),
                None => metric("valgrind.instructions").map(|i| (i, "valgrind; ")),
            }
            .filter(|(i, _)| i.verdict == MetricVerdict::InsideTheNoise)
            .map(|(i, by)| format!("; instructions/iter {} ({by}flat): the same work", pct(i)))
            .unwrap_or_default();
            return Explanation {
                kind: Cause::None,
                text: format!("{head}: nothing to explain{flat}"),
            };
        }
    };
    let time = comparison.delta_pct.abs();
    let mut causes: Vec<(Cause, String)> = Vec::new();
    // Work: instructions per iteration moving with the time (a third of its change at
    // least), else cycles moving with instructions flat. perf's count where the PMU gave
    // one, else callgrind's (`--instructions`), and the line says which.
    let (instructions, counted_by) = match metric("instructions") {
        Some(i) => (Some(i), ""),
        None => (metric("valgrind.instructions"), "valgrind; "),
    };
    match (instructions, metric("cycles")) {
        (Some(i), _) if moved(i, up, (time / 3.0).max(0.5), 0.0) => {
            let ipc = metric("ipc")
                .map(|m| match m.verdict {
                    MetricVerdict::InsideTheNoise => ", IPC flat".to_string(),
                    _ => format!(", IPC {}", pct(m)),
                })
                .unwrap_or_default();
            causes.push((
                if up { Cause::MoreWork } else { Cause::LessWork },
                format!(
                    "instructions/iter {} ({counted_by}{}){ipc}",
                    pct(i),
                    if up { "more work" } else { "less work" }
                ),
            ));
        }
        (Some(i), Some(c)) if moved(c, up, (time / 3.0).max(0.5), 0.0) => {
            let ipc = metric("ipc")
                .map(|m| format!("IPC {}", pct(m)))
                .unwrap_or_else(|| "IPC".into());
            causes.push((
                if up {
                    Cause::SlowerPerInstruction
                } else {
                    Cause::FasterPerInstruction
                },
                format!(
                    "{ipc} (cycles/iter {}, instructions/iter {}: the same work {})",
                    pct(c),
                    match i.verdict {
                        MetricVerdict::InsideTheNoise => "flat".to_string(),
                        _ => pct(i),
                    },
                    if up { "done slower" } else { "done faster" }
                ),
            ));
        }
        // No cycles counted (no PMU), the instruction count flat: the time moved with
        // the same work.
        (Some(i), None) if i.verdict == MetricVerdict::InsideTheNoise => {
            causes.push((
                if up {
                    Cause::SlowerPerInstruction
                } else {
                    Cause::FasterPerInstruction
                },
                format!(
                    "instructions/iter {} ({counted_by}flat): the same work {}",
                    pct(i),
                    if up { "done slower" } else { "done faster" }
                ),
            ));
        }
        _ => {}
    }
    for (ids, min_abs, what, more, less) in [
        (
            FAULTS,
            0.5,
            "faults/iter",
            Cause::MoreFaults,
            Cause::FewerFaults,
        ),
        (
            SYSCALLS,
            0.5,
            "syscalls/iter",
            Cause::MoreSyscalls,
            Cause::FewerSyscalls,
        ),
        (IO, 64.0, "bytes/iter", Cause::MoreIo, Cause::LessIo),
        (
            ALLOCS,
            0.5,
            "allocations/iter",
            Cause::MoreAllocations,
            Cause::FewerAllocations,
        ),
    ] {
        if let Some(m) = ids
            .iter()
            .filter_map(|id| metric(id))
            .find(|m| moved(m, up, 5.0, min_abs))
        {
            causes.push((
                if up { more } else { less },
                match m.change_pct {
                    Some(_) => format!(
                        "{} {what} {} ({} -> {})",
                        m.id,
                        pct(m),
                        short(m.base),
                        short(m.new)
                    ),
                    None => format!("{} {what} {}", m.id, pct(m)),
                },
            ));
        }
    }
    let shown: Vec<String> = movers
        .iter()
        .take(3)
        .map(|(name, pp)| format!("{name} {pp:+.1} pp"))
        .collect();
    let kind = match causes.as_slice() {
        [] if !shown.is_empty() => Cause::MovedFunctions,
        [] => Cause::Unexplained,
        [(k, _)] => *k,
        _ => Cause::Mixed,
    };
    let mut parts: Vec<String> = causes.into_iter().map(|(_, t)| t).collect();
    let where_part = if shown.is_empty() {
        where_missing.map(|why| format!("where: {why}"))
    } else {
        Some(format!("where: {}", shown.join(", ")))
    };
    // With no counted cause, where the time went leads the line.
    if kind == Cause::MovedFunctions {
        parts.extend(where_part.clone());
    }
    if parts.is_empty() || kind == Cause::MovedFunctions {
        let clock = metric("task-clock")
            .map(|m| format!(" (task-clock/iter {})", pct(m)))
            .unwrap_or_default();
        parts.push(format!("no counted cause moved{clock}"));
    }
    if let Some(why) = instructions_missing {
        parts.push(format!("instructions and cycles unavailable: {why}"));
    }
    if kind != Cause::MovedFunctions {
        parts.extend(where_part);
    }
    Explanation {
        kind,
        text: format!("{head}: {}", parts.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::Comparison;

    fn change(id: &str, base: f64, new: f64) -> MetricChange {
        let b: Vec<f64> = (0..8)
            .map(|i| base * (1.0 + 0.001 * f64::from(i % 3)))
            .collect();
        let n: Vec<f64> = (0..8)
            .map(|i| new * (1.0 + 0.001 * f64::from(i % 3)))
            .collect();
        compare_metric(id, &b, &n).unwrap()
    }

    fn regression(delta: f64, metrics: Vec<MetricChange>) -> Comparison {
        Comparison {
            baseline_median_ns: 100.0,
            median_ns: 100.0 + delta,
            delta_pct: delta,
            ci_low_pct: Some(delta - 2.0),
            ci_high_pct: Some(delta + 2.0),
            confidence: 0.95,
            verdict: if delta > 0.0 {
                Verdict::Regression
            } else {
                Verdict::Improvement
            },
            metrics,
            metrics_missing: Vec::new(),
            explanation: None,
            machine_shift_pct: None,
            paired: None,
            method: None,
            between_run_noise: None,
            base_rev: None,
            variant_rev: None,
        }
    }

    #[test]
    fn exact_counts_in_three_brackets_compare_exactly_and_scattered_few_do_not() {
        // callgrind's count repeated in three brackets a side: 1% higher exactly.
        let c = compare_metric("valgrind.instructions", &[1000.0; 3], &[1010.0; 3]).unwrap();
        assert_eq!(c.verdict, MetricVerdict::Higher);
        let pct = c.change_pct.unwrap();
        assert!((pct - 1.0).abs() < 1e-9, "{c:?}");
        assert_eq!((c.ci_low_pct, c.ci_high_pct), (Some(pct), Some(pct)));
        // The same count: inside the noise, a change of exactly 0; against a baseline of
        // eight brackets too.
        let same = compare_metric("valgrind.instructions", &[1000.0; 8], &[1000.0; 3]).unwrap();
        assert_eq!(same.verdict, MetricVerdict::InsideTheNoise);
        assert_eq!(same.change_pct, Some(0.0));
        let lower = compare_metric("valgrind.instructions", &[1000.0; 3], &[990.0; 3]).unwrap();
        assert_eq!(lower.verdict, MetricVerdict::Lower);
        // Three that scatter are too few for a verdict, as before; so is one value a side.
        let few = compare_metric("x", &[1000.0, 1001.0, 999.0], &[1010.0; 3]).unwrap();
        assert_eq!(few.verdict, MetricVerdict::Underpowered);
        let one = compare_metric("x", &[1000.0], &[1010.0]).unwrap();
        assert_eq!(one.verdict, MetricVerdict::Underpowered);
    }

    #[test]
    fn a_time_inside_the_noise_names_no_cause_and_says_the_work_was_flat() {
        // The same code, a busy machine: the time moved, inside the noise; the exact
        // instruction count did not.
        let mut c = regression(3.0, vec![change("valgrind.instructions", 1000.0, 1000.0)]);
        c.verdict = Verdict::InsideTheNoise;
        let e = explain(&c, Some("no PMU"), &[], None);
        assert_eq!(e.kind, Cause::None, "{}", e.text);
        assert_eq!(
            e.text,
            "inside the noise +3.0% [+1.0, +5.0]: nothing to explain; instructions/iter +0.0% (valgrind; flat): the same work"
        );
        // Without a count, nothing is said of the work.
        let mut c = regression(3.0, vec![]);
        c.verdict = Verdict::InsideTheNoise;
        let e = explain(&c, Some("no PMU"), &[], None);
        assert_eq!(e.kind, Cause::None);
        assert_eq!(
            e.text,
            "inside the noise +3.0% [+1.0, +5.0]: nothing to explain"
        );
    }

    #[test]
    fn exact_counts_find_small_changes_and_zero_baselines() {
        assert_eq!(
            change("i", 1000.0, 1000.0).verdict,
            MetricVerdict::InsideTheNoise
        );
        assert_eq!(change("i", 1000.0, 1010.0).verdict, MetricVerdict::Higher);
        let from_zero = compare_metric("sc", &[0.0; 8], &[3.0; 8]).unwrap();
        assert_eq!(
            (from_zero.verdict, from_zero.change_pct),
            (MetricVerdict::Higher, None)
        );
        let zero = compare_metric("sc", &[0.0; 8], &[0.0; 8]).unwrap();
        assert_eq!(
            (zero.verdict, zero.change_pct),
            (MetricVerdict::InsideTheNoise, Some(0.0))
        );
        assert_eq!(
            compare_metric("old", &[5.0], &[6.0; 8]).unwrap().verdict,
            MetricVerdict::Underpowered
        );
    }

    #[test]
    fn each_planted_cause_is_named() {
        let work = regression(
            12.0,
            vec![
                change("instructions", 1e6, 1.12e6),
                change("cycles", 1e6, 1.12e6),
                change("ipc", 1.0, 1.0),
            ],
        );
        let e = explain(&work, None, &[("mix_bits".into(), 9.3)], None);
        assert_eq!(e.kind, Cause::MoreWork, "{}", e.text);
        assert!(
            e.text
                .contains("instructions/iter +12.0% (more work), IPC flat"),
            "{}",
            e.text
        );
        assert!(e.text.ends_with("where: mix_bits +9.3 pp"), "{}", e.text);

        let slower = regression(
            20.0,
            vec![
                change("instructions", 1e6, 1e6),
                change("cycles", 1e6, 1.2e6),
                change("ipc", 1.0, 0.83),
            ],
        );
        assert_eq!(
            explain(&slower, None, &[], None).kind,
            Cause::SlowerPerInstruction
        );

        let faults = regression(30.0, vec![change("rusage.minor_faults", 0.0, 1024.0)]);
        let e = explain(&faults, Some("ENOENT: no PMU"), &[], None);
        assert_eq!(e.kind, Cause::MoreFaults, "{}", e.text);
        assert!(
            e.text
                .contains("instructions and cycles unavailable: ENOENT"),
            "{}",
            e.text
        );

        let syscalls = regression(50.0, vec![change("syscalls", 2.0, 52.0)]);
        assert_eq!(
            explain(&syscalls, None, &[], None).kind,
            Cause::MoreSyscalls
        );

        let io = regression(50.0, vec![change("io.rchar", 4096.0, 1048576.0)]);
        assert_eq!(explain(&io, None, &[], None).kind, Cause::MoreIo);

        let allocs = regression(30.0, vec![change("alloc.count", 3.0, 4.0)]);
        let e = explain(&allocs, None, &[], None);
        assert_eq!(e.kind, Cause::MoreAllocations, "{}", e.text);
        assert!(
            e.text.contains("alloc.count allocations/iter +33.3%"),
            "{}",
            e.text
        );

        let both = regression(
            40.0,
            vec![
                change("syscalls", 2.0, 52.0),
                change("rusage.minor_faults", 1.0, 100.0),
            ],
        );
        assert_eq!(explain(&both, None, &[], None).kind, Cause::Mixed);
    }

    #[test]
    fn where_leads_when_no_counted_cause_moved_and_its_absence_is_said() {
        let clock = regression(25.0, vec![change("task-clock", 1e6, 1.25e6)]);
        let movers = [("extra_fnv".to_string(), 24.3)];
        let e = explain(&clock, Some("ENOENT: no PMU"), &movers, None);
        assert_eq!(e.kind, Cause::MovedFunctions, "{}", e.text);
        assert_eq!(
            e.text,
            "regression +25.0% [+23.0, +27.0]: where: extra_fnv +24.3 pp; no counted cause moved (task-clock/iter +25.0%); instructions and cycles unavailable: ENOENT: no PMU"
        );
        // No movers: why there are none ends the line, and the cause stays unexplained.
        let e = explain(&clock, None, &[], Some("the baseline has no profile"));
        assert_eq!(e.kind, Cause::Unexplained, "{}", e.text);
        assert!(
            e.text.ends_with("; where: the baseline has no profile"),
            "{}",
            e.text
        );
        // A counted cause leads; where follows it.
        let faults = regression(30.0, vec![change("rusage.minor_faults", 0.0, 1024.0)]);
        let e = explain(&faults, None, &movers, None);
        assert_eq!(e.kind, Cause::MoreFaults, "{}", e.text);
        assert!(
            e.text.ends_with("; where: extra_fnv +24.3 pp"),
            "{}",
            e.text
        );
        assert!(!e.text.contains("no counted cause"), "{}", e.text);
    }

    #[test]
    fn a_side_by_side_verdict_quotes_its_null() {
        let mut c = regression(5.0, vec![change("rusage.minor_faults", 0.0, 64.0)]);
        c.paired = Some(crate::row::PairedNull {
            rounds: 40,
            null_change_pct: -0.3,
            null_ci_low_pct: Some(-0.9),
            null_ci_high_pct: Some(0.4),
            ..Default::default()
        });
        let e = explain(&c, None, &[], None);
        assert!(
            e.text
                .starts_with("regression +5.0% [+3.0, +7.0] (null -0.3% [-0.9, +0.4]): "),
            "{}",
            e.text
        );
        c.verdict = Verdict::InsideTheNoise;
        let e = explain(&c, None, &[], None);
        assert_eq!(
            e.text,
            "inside the noise +5.0% [+3.0, +7.0] (null -0.3% [-0.9, +0.4]): nothing to explain"
        );
    }

    #[test]
    fn without_a_pmu_time_alone_is_never_more_work() {
        let clock = regression(25.0, vec![change("task-clock", 1e6, 1.25e6)]);
        let e = explain(&clock, Some("ENOENT: no PMU for this event"), &[], None);
        assert_eq!(e.kind, Cause::Unexplained, "{}", e.text);
        assert!(e.text.contains("task-clock/iter +25.0%"), "{}", e.text);
        assert!(
            e.text.contains("instructions and cycles unavailable"),
            "{}",
            e.text
        );
    }

    #[test]
    fn without_a_pmu_callgrinds_count_decides_and_is_named() {
        let constant = |v: f64| vec![v; 8];
        let count = |base: f64, new: f64| {
            compare_metric("valgrind.instructions", &constant(base), &constant(new)).unwrap()
        };
        let work = regression(98.0, vec![count(6.0e5, 1.2e6)]);
        let e = explain(&work, None, &[], None);
        assert_eq!(e.kind, Cause::MoreWork, "{}", e.text);
        assert!(
            e.text
                .starts_with("regression +98.0% [+96.0, +100.0]: instructions/iter +100.0% (valgrind; more work)"),
            "{}",
            e.text
        );
        // The same instructions, slower: the same work done slower, said as such.
        let slower = regression(30.0, vec![count(6.0e5, 6.0e5)]);
        let e = explain(&slower, None, &[], None);
        assert_eq!(e.kind, Cause::SlowerPerInstruction, "{}", e.text);
        assert!(
            e.text
                .contains("instructions/iter +0.0% (valgrind; flat): the same work done slower"),
            "{}",
            e.text
        );
        // perf's count, where there is one, comes first.
        let both = regression(
            20.0,
            vec![change("instructions", 1e6, 1.2e6), count(6.0e5, 6.0e5)],
        );
        let e = explain(&both, None, &[], None);
        assert_eq!(e.kind, Cause::MoreWork, "{}", e.text);
        assert!(e.text.contains("(more work)"), "{}", e.text);
    }

    #[test]
    fn the_same_code_explains_nothing() {
        let mut same = regression(0.0, vec![change("instructions", 1e6, 1e6)]);
        same.verdict = Verdict::InsideTheNoise;
        assert_eq!(explain(&same, None, &[], None).kind, Cause::None);
    }
}
