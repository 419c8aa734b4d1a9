//! What a series of per-iteration timings says, and whether two series differ.
//!
//! Order statistics throughout (median, quartiles, median absolute deviation): a benchmark
//! series is skewed by interrupts and frequency changes, so a mean and a standard deviation
//! would let one slow sample move the headline figure. Two series are compared by the
//! ratio of their medians with a percentile-bootstrap confidence interval, seeded so the
//! same two series always produce the same report.

use serde::{Deserialize, Serialize};

/// The fewest samples on either side from which a comparison draws a conclusion.
pub const MIN_SAMPLES_FOR_VERDICT: usize = 6;

/// Confidence level of every interval this module reports.
pub const CONFIDENCE: f64 = 0.95;

/// Resamples drawn by the bootstrap; 2000 keeps the 2.5th/97.5th percentiles stable to
/// well under a tenth of a percent for the series sizes a benchmark takes.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// The bootstrap's fixed seed: a report is reproducible from its samples alone.
pub const BOOTSTRAP_SEED: u64 = 0x5EED_5BA8_C1E5_0F0F;

/// Summary of one series, in the series' own unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Smallest sample.
    pub min: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Largest sample.
    pub max: f64,
    /// First quartile (linear interpolation between order statistics).
    pub p25: f64,
    /// Median.
    pub median: f64,
    /// Third quartile.
    pub p75: f64,
    /// Interquartile range, `p75 - p25`.
    pub iqr: f64,
    /// Median absolute deviation from the median (unscaled).
    pub mad: f64,
}

impl Summary {
    /// Summarizes `samples`; `None` for an empty series or one holding a NaN.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|v| v.is_nan()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = quantile_sorted(&sorted, 0.5);
        let p25 = quantile_sorted(&sorted, 0.25);
        let p75 = quantile_sorted(&sorted, 0.75);
        let mut deviations: Vec<f64> = sorted.iter().map(|v| (v - median).abs()).collect();
        deviations.sort_by(f64::total_cmp);
        Some(Summary {
            min: sorted[0],
            mean: sorted.iter().sum::<f64>() / sorted.len() as f64,
            max: sorted[sorted.len() - 1],
            p25,
            median,
            p75,
            iqr: p75 - p25,
            mad: quantile_sorted(&deviations, 0.5),
        })
    }
}

/// The median's 95% interval from the order statistics, distribution-free: the k-th
/// smallest and k-th largest samples for the largest k with P(X₍ₖ₎ ≤ median ≤ X₍ₙ₋ₖ₊₁₎) ≥
/// 0.95 (the binomial(n, ½) tails); `None` for fewer than 6 samples, where no such pair
/// exists.
pub fn median_ci(samples: &[f64]) -> Option<(f64, f64)> {
    // The binomial(n, ½)'s tails are equal: the equal-tailed pair is the symmetric one.
    quantile_ci(samples, 0.5)
}

/// The `q` quantile's 95% interval from the order statistics, distribution-free and
/// equal-tailed: the r-th and s-th smallest samples, r the largest with P(B < r) ≤ 2.5%
/// and s the smallest with P(B ≥ s) ≤ 2.5%, B ~ Binomial(n, q) the count of samples below
/// the quantile; `None` where either end does not exist (the 10th percentile of fewer
/// than 36 samples has no lower end: 0.9³⁶ is the first power under 2.5%).
pub fn quantile_ci(samples: &[f64], q: f64) -> Option<(f64, f64)> {
    let n = samples.len();
    if n == 0 || !(q > 0.0 && q < 1.0) {
        return None;
    }
    // P(B = i), i = 0..=n, in logs (n may be in the thousands).
    let (ln_q, ln_p) = (q.ln(), (1.0 - q).ln());
    let mut ln_choose = 0.0f64;
    let mut pmf = Vec::with_capacity(n + 1);
    for i in 0..=n {
        pmf.push((ln_choose + i as f64 * ln_q + (n - i) as f64 * ln_p).exp());
        ln_choose += ((n - i) as f64).ln() - ((i + 1) as f64).ln();
    }
    // r: P(B < r) ≤ 2.5%, largest (r ≥ 1: the r-th smallest exists).
    let mut below = 0.0;
    let mut r = 0;
    while r < n && below + pmf[r] <= 0.025 {
        below += pmf[r];
        r += 1;
    }
    // s: P(B ≥ s) ≤ 2.5%, smallest (s ≤ n).
    let mut above = 0.0;
    let mut s = n + 1;
    while s > 1 && above + pmf[s - 1] <= 0.025 {
        above += pmf[s - 1];
        s -= 1;
    }
    if r == 0 || s > n || r > s {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some((sorted[r - 1], sorted[s - 1]))
}

/// The quantile of a run's samples, each less its run-queue wait, that the history's times
/// follow ([`crate::history::LessWait`]) and the machine probe keeps beside them.
pub const LESS_WAIT_QUANTILE: f64 = 0.1;

/// `samples` each less its run-queue wait (`waits`, in the same order and unit), never
/// below zero; `None` where the waits are not one a sample.
pub fn less_waits(samples: &[f64], waits: &[f64]) -> Option<Vec<f64>> {
    (waits.len() == samples.len()).then(|| {
        samples
            .iter()
            .zip(waits)
            .map(|(s, w)| (s - w).max(0.0))
            .collect()
    })
}

/// The `q` quantile of an ascending, non-empty series, interpolating linearly between the
/// two nearest order statistics (Hyndman and Fan's type 7, numpy's default).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    debug_assert!(!sorted.is_empty());
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

fn median_of(values: &mut [f64]) -> f64 {
    values.sort_unstable_by(f64::total_cmp);
    quantile_sorted(values, 0.5)
}

/// What an interval on the change in medians says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The whole interval lies above zero: the new series is slower.
    Regression,
    /// The whole interval lies below zero: the new series is faster.
    Improvement,
    /// The interval contains zero: no change this measurement can tell apart.
    InsideTheNoise,
    /// Too few samples on one side to draw any conclusion.
    Underpowered,
}

impl Verdict {
    /// The verdict as the table prints it.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Regression => "regression",
            Verdict::Improvement => "improvement",
            Verdict::InsideTheNoise => "inside the noise",
            Verdict::Underpowered => "underpowered",
        }
    }
}

/// The change from a baseline series to a new one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    /// Median of the baseline series.
    pub baseline_median: f64,
    /// Median of the new series.
    pub median: f64,
    /// `(median / baseline_median - 1) * 100`.
    pub delta_pct: f64,
    /// Lower end of the interval on `delta_pct`; `None` when underpowered.
    pub ci_low_pct: Option<f64>,
    /// Upper end of the interval on `delta_pct`; `None` when underpowered.
    pub ci_high_pct: Option<f64>,
    /// What the interval says.
    pub verdict: Verdict,
}

/// Compares `new` against `baseline` by the ratio of medians, with a percentile-bootstrap
/// interval at [`CONFIDENCE`]; `None` when either series is empty or not positive. Its
/// coverage of the true ratio, simulated by the unit tests (400 pairs each, fixed seed):
/// 94.5% to 97.8% for 6, 8, 12 and 32 samples a side, uniform, lognormal, exponential-
/// tailed and bimodal (50/50 and 70/30, two modes 40% apart) shapes, under the null and a
/// 10% shift; 95.6% to 96.3% pooled at each size.
pub fn compare(baseline: &[f64], new: &[f64]) -> Option<Change> {
    let base_summary = Summary::of(baseline)?;
    let new_summary = Summary::of(new)?;
    if base_summary.median <= 0.0 {
        return None;
    }
    let delta_pct = (new_summary.median / base_summary.median - 1.0) * 100.0;
    if baseline.len() < MIN_SAMPLES_FOR_VERDICT || new.len() < MIN_SAMPLES_FOR_VERDICT {
        return Some(Change {
            baseline_median: base_summary.median,
            median: new_summary.median,
            delta_pct,
            ci_low_pct: None,
            ci_high_pct: None,
            verdict: Verdict::Underpowered,
        });
    }
    let mut rng = fastrand::Rng::with_seed(BOOTSTRAP_SEED);
    let mut base_draw = vec![0.0; baseline.len()];
    let mut new_draw = vec![0.0; new.len()];
    let mut ratios = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        for slot in base_draw.iter_mut() {
            *slot = baseline[rng.usize(..baseline.len())];
        }
        for slot in new_draw.iter_mut() {
            *slot = new[rng.usize(..new.len())];
        }
        let base_median = median_of(&mut base_draw);
        if base_median > 0.0 {
            ratios.push(median_of(&mut new_draw) / base_median);
        }
    }
    ratios.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    let ci_low_pct = (quantile_sorted(&ratios, tail) - 1.0) * 100.0;
    let ci_high_pct = (quantile_sorted(&ratios, 1.0 - tail) - 1.0) * 100.0;
    let verdict = if ci_low_pct > 0.0 {
        Verdict::Regression
    } else if ci_high_pct < 0.0 {
        Verdict::Improvement
    } else {
        Verdict::InsideTheNoise
    };
    Some(Change {
        baseline_median: base_summary.median,
        median: new_summary.median,
        delta_pct,
        ci_low_pct: Some(ci_low_pct),
        ci_high_pct: Some(ci_high_pct),
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn the_median_interval_is_the_order_statistics_the_binomial_gives() {
        assert_eq!(median_ci(&[1.0, 2.0, 3.0, 4.0, 5.0]), None);
        // n = 6: the extremes (coverage 1 - 2/64 = 96.9%).
        assert_eq!(median_ci(&[6.0, 1.0, 5.0, 2.0, 4.0, 3.0]), Some((1.0, 6.0)));
        // n = 32: the 10th and 23rd (coverage 98.0%; the 11th and 22nd give 94.99%).
        let x: Vec<f64> = (1..=32).map(f64::from).collect();
        assert_eq!(median_ci(&x), Some((10.0, 23.0)));
        // n = 100: the 40th and 61st (96.5%; 41st and 60th: 94.3%).
        let x: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(median_ci(&x), Some((40.0, 61.0)));
    }

    #[test]
    fn a_quantiles_interval_covers_it_as_often_as_it_says() {
        // The 10th percentile of 16 samples has no lower end (0.9^16 = 18.5%); of 36 it
        // is the fastest (0.9^35 = 2.503%, 0.9^36 = 2.25%).
        let x: Vec<f64> = (1..=16).map(f64::from).collect();
        assert_eq!(quantile_ci(&x, 0.1), None);
        let x: Vec<f64> = (1..=35).map(f64::from).collect();
        assert_eq!(quantile_ci(&x, 0.1), None);
        let x: Vec<f64> = (1..=36).map(f64::from).collect();
        assert_eq!(quantile_ci(&x, 0.1).map(|c| c.0), Some(1.0));
        // Coverage, simulated (fixed seed): exponential samples (skewed, as times are),
        // whose q quantile is -ln(1 - q).
        let mut rng = fastrand::Rng::with_seed(11);
        for (n, q) in [(36, 0.1), (100, 0.1), (400, 0.1), (100, 0.25), (50, 0.9)] {
            let truth = -(1.0f64 - q).ln();
            let reps = 4000;
            let mut covered = 0;
            for _ in 0..reps {
                let x: Vec<f64> = (0..n).map(|_| -(1.0 - rng.f64()).ln()).collect();
                let (lo, hi) = quantile_ci(&x, q).unwrap();
                covered += usize::from(lo <= truth && truth <= hi);
            }
            let coverage = covered as f64 / f64::from(reps);
            assert!((0.94..0.99).contains(&coverage), "n {n}, q {q}: {coverage}");
        }
    }

    #[test]
    fn summary_of_a_known_series() {
        // Sorted: 1 2 3 4 5 6 7 8 9 100 (n = 10).
        let s = Summary::of(&[9.0, 1.0, 100.0, 3.0, 2.0, 8.0, 4.0, 7.0, 6.0, 5.0]).unwrap();
        assert!(close(s.min, 1.0) && close(s.max, 100.0));
        assert!(close(s.mean, 14.5));
        // h = 9 * 0.5 = 4.5: halfway between the 5th and 6th order statistics.
        assert!(close(s.median, 5.5));
        // h = 9 * 0.25 = 2.25: 3 + 0.25 * (4 - 3).
        assert!(close(s.p25, 3.25));
        // h = 9 * 0.75 = 6.75: 7 + 0.75 * (8 - 7).
        assert!(close(s.p75, 7.75));
        assert!(close(s.iqr, 4.5));
        // |x - 5.5| sorted: .5 .5 1.5 1.5 2.5 2.5 3.5 3.5 4.5 94.5; median 2.5.
        assert!(close(s.mad, 2.5));
    }

    #[test]
    fn summary_of_odd_series_and_single_sample() {
        let s = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert!(close(s.median, 2.0) && close(s.p25, 1.5) && close(s.p75, 2.5));
        assert!(close(s.mad, 1.0));
        let one = Summary::of(&[42.0]).unwrap();
        assert!(close(one.median, 42.0) && close(one.iqr, 0.0) && close(one.mad, 0.0));
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
    }

    /// A deterministic series around `center` with a spread of about ±3%.
    fn noisy(center: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = fastrand::Rng::with_seed(seed);
        (0..n).map(|_| center * (0.97 + 0.06 * rng.f64())).collect()
    }

    #[test]
    fn identical_series_interval_contains_zero() {
        let a = noisy(1000.0, 32, 1);
        let c = compare(&a, &a).unwrap();
        assert!(close(c.delta_pct, 0.0));
        assert!(c.ci_low_pct.unwrap() <= 0.0 && c.ci_high_pct.unwrap() >= 0.0);
        assert_eq!(c.verdict, Verdict::InsideTheNoise);
    }

    #[test]
    fn constant_identical_series_are_inside_the_noise() {
        let a = vec![5.0; 32];
        let c = compare(&a, &a).unwrap();
        assert_eq!(c.verdict, Verdict::InsideTheNoise);
        assert!(close(c.ci_low_pct.unwrap(), 0.0) && close(c.ci_high_pct.unwrap(), 0.0));
    }

    #[test]
    fn twenty_percent_shift_with_32_samples_excludes_zero() {
        let base = noisy(1000.0, 32, 2);
        let slower = noisy(1200.0, 32, 3);
        let c = compare(&base, &slower).unwrap();
        assert!((c.delta_pct - 20.0).abs() < 4.0, "delta {}", c.delta_pct);
        assert!(c.ci_low_pct.unwrap() > 0.0, "{c:?}");
        assert_eq!(c.verdict, Verdict::Regression);
        let back = compare(&slower, &base).unwrap();
        assert!(back.ci_high_pct.unwrap() < 0.0);
        assert_eq!(back.verdict, Verdict::Improvement);
    }

    #[test]
    fn too_few_samples_is_underpowered() {
        let c = compare(&[1.0, 1.1, 0.9], &[2.0, 2.1, 1.9]).unwrap();
        assert_eq!(c.verdict, Verdict::Underpowered);
        assert!(c.ci_low_pct.is_none() && c.ci_high_pct.is_none());
        assert!(close(c.delta_pct, 100.0));
    }

    #[test]
    fn the_verdicts_interval_covers_the_ratio_of_medians_at_few_samples_too() {
        // Simulated, fixed seed: 400 pairs of series per shape and size, under the null
        // and with the new side 10% slower, skewed and bimodal shapes among them; how often
        // the interval holds the true ratio of the two medians.
        let mut rng = fastrand::Rng::with_seed(12);
        let normal = |rng: &mut fastrand::Rng| {
            // Box-Muller.
            let (u, v) = (1.0 - rng.f64(), rng.f64());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        type Shape = fn(&mut fastrand::Rng, &dyn Fn(&mut fastrand::Rng) -> f64) -> f64;
        let shapes: [(&str, Shape); 5] = [
            ("uniform ±3%", |rng, _| 0.97 + 0.06 * rng.f64()),
            ("lognormal 5%", |rng, normal| (0.05 * normal(rng)).exp()),
            ("exponential tail", |rng, _| {
                1.0 - 0.1 * (1.0 - rng.f64()).ln()
            }),
            // Two modes 40% apart, the slow one in half the samples: the median falls in
            // either, the estimate at the edge of its interval.
            ("bimodal 50/50", |rng, normal| {
                (if rng.bool() { 1.0 } else { 1.4 }) * (0.01 * normal(rng)).exp()
            }),
            // The slow mode in 30%: the true median in the fast one, a sample's median now
            // and then in the slow one.
            ("bimodal 70/30", |rng, normal| {
                (if rng.f64() < 0.7 { 1.0 } else { 1.4 }) * (0.01 * normal(rng)).exp()
            }),
        ];
        let reps = 400;
        for n in [6usize, 8, 12, 32] {
            let mut pooled = 0;
            for (name, shape) in &shapes {
                for ratio in [1.0, 1.1] {
                    let mut covered = 0;
                    for _ in 0..reps {
                        let a: Vec<f64> = (0..n).map(|_| shape(&mut rng, &normal)).collect();
                        let b: Vec<f64> =
                            (0..n).map(|_| ratio * shape(&mut rng, &normal)).collect();
                        let c = compare(&a, &b).unwrap();
                        let truth = (ratio - 1.0) * 100.0;
                        covered += usize::from(
                            c.ci_low_pct.unwrap() <= truth + 1e-9
                                && truth - 1e-9 <= c.ci_high_pct.unwrap(),
                        );
                    }
                    let coverage = covered as f64 / f64::from(reps);
                    eprintln!("n {n}, {name}, ratio {ratio}: {coverage:.3}");
                    assert!(coverage >= 0.92, "n {n}, {name}, ratio {ratio}: {coverage}");
                    pooled += covered;
                }
            }
            let pooled = pooled as f64 / (f64::from(reps) * 10.0);
            eprintln!("n {n}: {pooled:.3}");
            assert!(pooled >= 0.94, "n {n}: {pooled}");
        }
    }

    #[test]
    fn comparison_is_reproducible() {
        let base = noisy(100.0, 16, 4);
        let new = noisy(101.0, 16, 5);
        assert_eq!(compare(&base, &new), compare(&base, &new));
    }
}
