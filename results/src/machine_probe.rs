//! The machine probe: a fixed reference loop timed beside the cases of every run, so a
//! comparison with a saved baseline can tell a changed machine from changed code.
//!
//! The loop is the same code in every build (integer arithmetic on registers: no memory
//! traffic, no allocation), so where its time per iteration moved between the baseline's
//! run and this one, the machine's speed moved, and every verdict of that comparison is
//! marked rather than trusted.

use serde::{Deserialize, Serialize};

use crate::stats::{compare, Change, Verdict};

/// Dependent multiply-add-xorshift steps per probe iteration: a few µs on a current core.
const STEPS: u32 = 4096;

/// One probe iteration: a chain of `STEPS` dependent integer steps from `seed`. Public
/// for a case whose work is the probe's own code (`sparkles history --normalize probe`
/// takes out exactly the machine's share of such a case's time).
#[inline(never)]
pub fn reference_loop(seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..STEPS {
        x = x
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(0x632B_E59B_D9B4_E019);
        x ^= x >> 29;
    }
    x
}

/// The probe's timing in one run, as the environment record stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineProbe {
    /// Per-iteration ns of each probe sample, in the order taken.
    pub samples_ns: Vec<f64>,
    /// Their median.
    pub median_ns: f64,
    /// The 10th percentile of the samples each less its run-queue wait, where the kernel
    /// said the waits (`/proc/thread-self/schedstat`): the machine's speed in the statistic
    /// the history's times follow, so that a step the probe took too is told as the
    /// machine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub less_wait_p10_ns: Option<f64>,
}

impl MachineProbe {
    /// The record of `samples_ns`; none when there are none (or one is NaN).
    pub fn of(samples_ns: Vec<f64>) -> Option<MachineProbe> {
        let median_ns = crate::stats::Summary::of(&samples_ns)?.median;
        Some(MachineProbe {
            samples_ns,
            median_ns,
            less_wait_p10_ns: None,
        })
    }

    /// This record with [`MachineProbe::less_wait_p10_ns`] from each sample's run-queue
    /// wait, ns an iteration in the samples' order; left without it where the waits are
    /// not one a sample.
    pub fn with_waits(mut self, waits: Option<&[f64]>) -> MachineProbe {
        self.less_wait_p10_ns = waits
            .and_then(|w| crate::stats::less_waits(&self.samples_ns, w))
            .filter(|less| !less.is_empty())
            .map(|mut less| {
                less.sort_by(f64::total_cmp);
                crate::stats::quantile_sorted(&less, crate::stats::LESS_WAIT_QUANTILE)
            });
        self
    }
}

/// What the probe says about a comparison with a baseline.
#[derive(Debug, Clone, PartialEq)]
pub enum MachineCheck {
    /// The probe moved beyond its own noise: the machine ran `shift_pct` percent slower
    /// (negative: faster) than when the baseline was saved.
    Moved {
        /// The probe's change of median, percent.
        shift_pct: f64,
        /// The probe's whole comparison.
        change: Change,
    },
    /// The probe's interval contains zero, or its move is smaller than [`MIN_MOVE_PCT`]
    /// and the probes' own spread: the machine's speed did not measurably move.
    Steady {
        /// The probe's whole comparison.
        change: Change,
    },
    /// The machine's speed could not be checked, for the reason given.
    Unknown(&'static str),
}

/// The smallest move of the probe that says the machine moved, percent: an interval that
/// excludes zero at a few tenths is the probe's precision, not the machine.
pub const MIN_MOVE_PCT: f64 = 2.0;

/// A probe's own spread: its samples' interquartile range over their median, percent (a
/// probe whose samples fell on several levels, a scheduler slice inside some, spreads
/// wide).
fn spread_pct(p: &MachineProbe) -> f64 {
    crate::stats::Summary::of(&p.samples_ns)
        .filter(|s| s.median > 0.0)
        .map_or(0.0, |s| s.iqr / s.median * 100.0)
}

/// Compares this run's probe with the baseline's: moved where the change's interval
/// excludes zero and the change is at least [`MIN_MOVE_PCT`] and the wider probe's own
/// spread.
pub fn check(baseline: Option<&MachineProbe>, now: Option<&MachineProbe>) -> MachineCheck {
    let Some(baseline) = baseline else {
        return MachineCheck::Unknown(
            "the baseline has no machine probe (saved before sparkles timed one)",
        );
    };
    let Some(now) = now else {
        return MachineCheck::Unknown("this run timed no machine probe");
    };
    match compare(&baseline.samples_ns, &now.samples_ns) {
        None => MachineCheck::Unknown("a probe's samples are empty or not positive"),
        Some(change) => match change.verdict {
            Verdict::Regression | Verdict::Improvement
                if change.delta_pct.abs()
                    >= MIN_MOVE_PCT.max(spread_pct(baseline)).max(spread_pct(now)) =>
            {
                MachineCheck::Moved {
                    shift_pct: change.delta_pct,
                    change,
                }
            }
            Verdict::Regression | Verdict::Improvement => MachineCheck::Steady { change },
            Verdict::InsideTheNoise => MachineCheck::Steady { change },
            Verdict::Underpowered => MachineCheck::Unknown("fewer than 6 probe samples on a side"),
        },
    }
}

impl MachineCheck {
    /// The shift to mark every verdict with, where the machine moved.
    pub fn shift_pct(&self) -> Option<f64> {
        match self {
            MachineCheck::Moved { shift_pct, .. } => Some(*shift_pct),
            _ => None,
        }
    }

    /// The warning (machine moved) or note (not checked) for a comparison with baseline
    /// `name`; none where the machine held steady.
    pub fn message(&self, name: &str) -> Option<String> {
        match self {
            MachineCheck::Moved { shift_pct, .. } => Some(moved_warning(*shift_pct, name)),
            MachineCheck::Steady { .. } => None,
            MachineCheck::Unknown(why) => Some(format!(
                "note: the machine's speed could not be checked against baseline {name}: {why}"
            )),
        }
    }
}

/// `warning: the machine ran 12.3% slower than when baseline NAME was saved …`.
pub fn moved_warning(shift_pct: f64, name: &str) -> String {
    format!(
        "warning: the machine ran {:.1}% {} than when baseline {name} was saved (a reference loop timed in both runs): verdicts here compare two machine states; `sparkles compare --base REV` measures both revisions in one run",
        shift_pct.abs(),
        if shift_pct > 0.0 { "slower" } else { "faster" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(center: f64) -> MachineProbe {
        MachineProbe::of(
            (0..12)
                .map(|i| center + (i % 3) as f64 * 0.01 * center)
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn a_probe_that_moved_marks_the_comparison_with_its_shift() {
        let check = check(Some(&probe(1000.0)), Some(&probe(1300.0)));
        let shift = check.shift_pct().unwrap();
        assert!((shift - 30.0).abs() < 0.5, "{shift}");
        let text = check.message("main").unwrap();
        assert!(
            text.contains("30.0% slower than when baseline main was saved")
                && text.contains("sparkles compare --base REV"),
            "{text}"
        );
        let faster = super::check(Some(&probe(1000.0)), Some(&probe(700.0)));
        assert!(faster.message("main").unwrap().contains("30.0% faster"));
    }

    /// A probe of twelve samples within ±0.05% of `center`.
    fn tight(center: f64) -> MachineProbe {
        MachineProbe::of(
            (0..12)
                .map(|i| center * (1.0 + 0.0005 * ((i % 3) as f64 - 1.0)))
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn a_move_needs_a_size_as_well_as_an_interval() {
        // 3% with tight probes: moved.
        let c = check(Some(&tight(1000.0)), Some(&tight(1030.0)));
        assert!((c.shift_pct().unwrap() - 3.0).abs() < 0.1, "{c:?}");
        // 0.3%: the interval excludes zero, the size is the probe's precision.
        let c = check(Some(&tight(1000.0)), Some(&tight(1003.0)));
        let MachineCheck::Steady { change } = &c else {
            panic!("{c:?}")
        };
        assert_eq!(change.verdict, Verdict::Regression, "{change:?}");
        assert_eq!(c.shift_pct(), None);
        assert_eq!(c.message("main"), None);
        // 3% where a probe's samples spread over 10% (preemption inside some): steady.
        let wide = MachineProbe::of(
            (0..12)
                .map(|i| 1030.0 * [1.0, 1.12, 1.0, 1.12, 0.95, 1.0][i % 6])
                .collect(),
        )
        .unwrap();
        assert!(spread_pct(&wide) > 3.0, "{}", spread_pct(&wide));
        assert_eq!(check(Some(&tight(1000.0)), Some(&wide)).shift_pct(), None);
    }

    #[test]
    fn a_steady_probe_marks_nothing_and_says_nothing() {
        let check = check(Some(&probe(1000.0)), Some(&probe(1000.0)));
        assert!(matches!(check, MachineCheck::Steady { .. }), "{check:?}");
        assert_eq!(check.shift_pct(), None);
        assert_eq!(check.message("main"), None);
    }

    #[test]
    fn an_absent_or_short_probe_is_a_note_never_a_shift() {
        for check in [
            check(None, Some(&probe(1000.0))),
            check(Some(&probe(1000.0)), None),
            check(
                Some(&MachineProbe::of(vec![1000.0; 3]).unwrap()),
                Some(&MachineProbe::of(vec![2000.0; 3]).unwrap()),
            ),
        ] {
            assert_eq!(check.shift_pct(), None);
            let text = check.message("old").unwrap();
            assert!(
                text.starts_with("note: the machine's speed could not be checked"),
                "{text}"
            );
        }
        assert!(MachineProbe::of(Vec::new()).is_none());
    }

    #[test]
    fn the_reference_loop_is_the_same_function_of_its_seed() {
        assert_eq!(reference_loop(7), reference_loop(7));
        assert_ne!(reference_loop(7), reference_loop(8));
    }
}
