//! Two revisions measured side by side: rounds of one sample each from a base process, the
//! variant and a second base process (`sparkles compare`), and what they say.
//!
//! Each round's change is the variant's time over the mean of the two base samples taken
//! around it, so drift that moves the machine within a round moves both sides; the null
//! is the first base process against the second, the disagreement of two runs of the
//! same code (process start, address-space layout, the machine's drift between them
//! included). Both are medians over rounds of per-round log ratios, their 95% intervals
//! percentile bootstraps over rounds (the same resampled rounds for both, fixed seed). A
//! verdict clears zero (the interval excludes it), the null (the change lies outside the
//! null's interval) and a threshold (two builds of the same code differ by their layout
//! alone, which no null of one build can show: [`NOISE_THRESHOLD_PCT`]), or the change is
//! inside the noise.

use serde::{Deserialize, Serialize};

use crate::stats::{
    quantile_sorted, Verdict, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, CONFIDENCE,
    MIN_SAMPLES_FOR_VERDICT,
};

/// Changes smaller than this (percent) are inside the noise whatever the intervals say:
/// the same code built twice (a case added beside it) measured 0.2% apart here, with an
/// interval that excluded zero.
pub const NOISE_THRESHOLD_PCT: f64 = 0.5;

/// One round: a sample of each process, nanoseconds per iteration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// The first base process.
    pub base1: f64,
    /// The variant.
    pub variant: f64,
    /// The second base process.
    pub base2: f64,
}

/// What the rounds say about the variant against the base.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairedChange {
    /// Rounds taken.
    pub rounds: usize,
    /// Median over rounds of the base's time (the mean of its two samples), ns/iter.
    pub base_ns: f64,
    /// Median over rounds of the variant's time, ns/iter.
    pub variant_ns: f64,
    /// The variant against the base, percent (median of the per-round changes).
    pub change_pct: f64,
    /// The 95% interval on `change_pct`; `None` when underpowered.
    pub ci_low_pct: Option<f64>,
    /// Its upper end.
    pub ci_high_pct: Option<f64>,
    /// The first base process against the second, percent.
    pub null_change_pct: f64,
    /// The 95% interval on `null_change_pct`; `None` when underpowered.
    pub null_ci_low_pct: Option<f64>,
    /// Its upper end.
    pub null_ci_high_pct: Option<f64>,
    /// Regression or improvement where the change clears zero and the null; else inside
    /// the noise (underpowered under [`MIN_SAMPLES_FOR_VERDICT`] rounds).
    pub verdict: Verdict,
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_unstable_by(f64::total_cmp);
    quantile_sorted(values, 0.5)
}

fn pct(log_ratio: f64) -> f64 {
    (log_ratio.exp() - 1.0) * 100.0
}

/// The change and the null of `rounds`, a verdict only for a change of at least
/// `threshold_pct`; `None` without a round, or with a time that is not positive.
pub fn paired(rounds: &[Round], threshold_pct: f64) -> Option<PairedChange> {
    if rounds.is_empty()
        || rounds
            .iter()
            .any(|r| !(r.base1 > 0.0 && r.variant > 0.0 && r.base2 > 0.0))
    {
        return None;
    }
    let change: Vec<f64> = rounds
        .iter()
        .map(|r| (r.variant / ((r.base1 + r.base2) / 2.0)).ln())
        .collect();
    let null: Vec<f64> = rounds.iter().map(|r| (r.base1 / r.base2).ln()).collect();
    let mut base: Vec<f64> = rounds.iter().map(|r| (r.base1 + r.base2) / 2.0).collect();
    let mut variant: Vec<f64> = rounds.iter().map(|r| r.variant).collect();
    let change_pct = pct(median(&mut change.clone()));
    let null_change_pct = pct(median(&mut null.clone()));
    let mut out = PairedChange {
        rounds: rounds.len(),
        base_ns: median(&mut base),
        variant_ns: median(&mut variant),
        change_pct,
        ci_low_pct: None,
        ci_high_pct: None,
        null_change_pct,
        null_ci_low_pct: None,
        null_ci_high_pct: None,
        verdict: Verdict::Underpowered,
    };
    if rounds.len() < MIN_SAMPLES_FOR_VERDICT {
        return Some(out);
    }
    let mut rng = fastrand::Rng::with_seed(BOOTSTRAP_SEED);
    let n = rounds.len();
    let mut change_draw = vec![0.0; n];
    let mut null_draw = vec![0.0; n];
    let mut changes = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    let mut nulls = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        for (c, z) in change_draw.iter_mut().zip(null_draw.iter_mut()) {
            let i = rng.usize(..n);
            *c = change[i];
            *z = null[i];
        }
        changes.push(median(&mut change_draw));
        nulls.push(median(&mut null_draw));
    }
    changes.sort_unstable_by(f64::total_cmp);
    nulls.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    let (low, high) = (
        pct(quantile_sorted(&changes, tail)),
        pct(quantile_sorted(&changes, 1.0 - tail)),
    );
    let (null_low, null_high) = (
        pct(quantile_sorted(&nulls, tail)),
        pct(quantile_sorted(&nulls, 1.0 - tail)),
    );
    out.verdict = if low > 0.0 && change_pct > null_high && change_pct >= threshold_pct {
        Verdict::Regression
    } else if high < 0.0 && change_pct < null_low && -change_pct >= threshold_pct {
        Verdict::Improvement
    } else {
        Verdict::InsideTheNoise
    };
    out.ci_low_pct = Some(low);
    out.ci_high_pct = Some(high);
    out.null_ci_low_pct = Some(null_low);
    out.null_ci_high_pct = Some(null_high);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rounds of a base around `base` and a variant `factor` times it, each sample off by
    /// up to ±`noise`, the whole machine drifting by `drift` from first round to last.
    fn rounds(n: usize, factor: f64, noise: f64, drift: f64, seed: u64) -> Vec<Round> {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut jitter = move || 1.0 + noise * (2.0 * rng.f64() - 1.0);
        (0..n)
            .map(|i| {
                let speed = 1.0 + drift * i as f64 / n as f64;
                Round {
                    base1: 1000.0 * speed * jitter(),
                    variant: 1000.0 * factor * speed * jitter(),
                    base2: 1000.0 * speed * jitter(),
                }
            })
            .collect()
    }

    #[test]
    fn a_planted_change_is_found_through_drift() {
        // 2% planted, ±3% noise per sample, the machine 30% slower by the end.
        let c = paired(&rounds(200, 1.02, 0.03, 0.30, 7), NOISE_THRESHOLD_PCT).unwrap();
        assert_eq!(c.verdict, Verdict::Regression, "{c:?}");
        assert!((c.change_pct - 2.0).abs() < 1.0, "{c:?}");
        assert!(c.null_ci_low_pct.unwrap() < 0.0 && c.null_ci_high_pct.unwrap() > 0.0);
        let c = paired(&rounds(200, 0.98, 0.03, 0.30, 8), NOISE_THRESHOLD_PCT).unwrap();
        assert_eq!(c.verdict, Verdict::Improvement, "{c:?}");
    }

    #[test]
    fn no_change_is_inside_the_noise() {
        for seed in 0..20 {
            let c = paired(&rounds(100, 1.0, 0.05, 0.2, seed), NOISE_THRESHOLD_PCT).unwrap();
            assert!(c.change_pct.abs() < 2.0, "{c:?}");
            // The interval holds zero or the change is within the null: never a verdict
            // from noise alone on these seeds.
            assert_eq!(c.verdict, Verdict::InsideTheNoise, "seed {seed}: {c:?}");
        }
    }

    #[test]
    fn a_change_inside_the_null_is_inside_the_noise() {
        // The two base processes disagree by 4% (one of them ran on a slower core): a 2%
        // change clears zero but not the null.
        let mut r = rounds(100, 1.02, 0.005, 0.0, 3);
        for round in &mut r {
            round.base1 *= 1.02;
            round.base2 /= 1.02;
        }
        let c = paired(&r, NOISE_THRESHOLD_PCT).unwrap();
        assert!(c.ci_low_pct.unwrap() > 0.0, "{c:?}");
        assert!(c.null_change_pct > 3.0, "{c:?}");
        assert_eq!(c.verdict, Verdict::InsideTheNoise, "{c:?}");
    }

    #[test]
    fn a_change_below_the_threshold_is_inside_the_noise() {
        // 0.2% with almost no noise: the interval clears zero, the threshold does not.
        let r = rounds(100, 1.002, 0.0005, 0.0, 4);
        let c = paired(&r, NOISE_THRESHOLD_PCT).unwrap();
        assert!(c.ci_low_pct.unwrap() > 0.0, "{c:?}");
        assert_eq!(c.verdict, Verdict::InsideTheNoise, "{c:?}");
        assert_eq!(paired(&r, 0.0).unwrap().verdict, Verdict::Regression);
    }

    #[test]
    fn few_rounds_are_underpowered_and_bad_times_refused() {
        let c = paired(&rounds(5, 1.5, 0.0, 0.0, 1), NOISE_THRESHOLD_PCT).unwrap();
        assert_eq!(c.verdict, Verdict::Underpowered);
        assert!(c.ci_low_pct.is_none());
        assert!((c.change_pct - 50.0).abs() < 1e-9);
        assert!(paired(&[], 0.0).is_none());
        let zero = Round {
            base1: 0.0,
            variant: 1.0,
            base2: 1.0,
        };
        assert!(paired(&[zero], 0.0).is_none());
    }
}
