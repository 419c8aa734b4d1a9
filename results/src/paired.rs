//! Two revisions measured side by side: rounds of one sample from each of several processes
//! of the base and of the variant (`sparkles compare`, `--baseline` with a saved
//! executable), and what they say.
//!
//! Each side runs in `k` fresh processes (two at least), each with a layout of its own (the
//! kernel's address-space randomization, a random environment pad that moves the stack,
//! a `HashMap`'s seed): what one process's layout costs is a property of that process,
//! never of the code. A round samples every process once, in an order turned each round.
//!
//! - **The change** is the median over rounds of the variant processes' mean log time
//!   against the base processes' (a round's drift moves both sides). Its 95% interval is the
//!   wider of two: a percentile bootstrap over rounds (the noise inside processes), and a
//!   Student's t interval on the processes' own levels (each process's median log time
//!   against its round's mean, base processes against variant processes, the spread
//!   pooled within each side: what replaying the comparison in fresh processes would give).
//!   The second is the one the layout luck of a process is in: with two processes a side it
//!   has two degrees of freedom and is wide unless the processes agree.
//! - **The nulls** are each side's processes against each other (the first base process
//!   against the second, and the same of the variant's): the disagreement of the same code
//!   run twice. A verdict needs the change beyond the larger null's *size*, whatever its
//!   sign: a null of −4% says processes differ by 4% as surely as one of +4%.
//! - **A floor** (`threshold_pct`): two builds of the same code differ by their layout
//!   alone, which no null of one build can show ([`NOISE_THRESHOLD_PCT`]).
//!
//! A verdict clears all three (its interval excludes zero, the nulls' size, the floor), or
//! the change is inside the noise. The false-positive rate and the power are checked by
//! simulation in the unit tests below (a model of process layout luck included).

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use crate::stats::{
    quantile_sorted, Verdict, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, CONFIDENCE,
    MIN_SAMPLES_FOR_VERDICT,
};

/// Changes smaller than this (percent) are inside the noise whatever the intervals say:
/// the same code built twice (a case added beside it) measured 0.2% apart here, with an
/// interval that excluded zero.
pub const NOISE_THRESHOLD_PCT: f64 = 0.5;

/// Processes a side runs in by default.
pub const PROCESSES_PER_SIDE: usize = 2;

/// One round: a sample of each process, nanoseconds per iteration, in each side's process
/// order (the order they were sampled in is the coordinator's).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Round {
    /// The base processes' samples.
    pub base: Vec<f64>,
    /// The variant processes' samples.
    pub variant: Vec<f64>,
}

impl Round {
    /// The base's time this round (the mean of its processes' samples).
    pub fn base_mean(&self) -> f64 {
        mean(&self.base)
    }

    /// The variant's time this round.
    pub fn variant_mean(&self) -> f64 {
        mean(&self.variant)
    }
}

impl Serialize for Round {
    /// `{"base1", "variant", "base2"}` as `sparkles.compare/1` first wrote them (the first
    /// base process, the first variant process, the second base process), then every
    /// process's sample: `base` and `variants`.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("base1", &self.base.first())?;
        m.serialize_entry("variant", &self.variant.first())?;
        m.serialize_entry("base2", &self.base.get(1))?;
        m.serialize_entry("base", &self.base)?;
        m.serialize_entry("variants", &self.variant)?;
        m.end()
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// Student's t distribution's 97.5% point (a two-sided 95% interval) for `df` degrees of
/// freedom (1..=30 tabulated, the normal's 1.96 beyond).
pub fn t_975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        _ => 1.96,
    }
}

/// What the rounds say about the variant against the base.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairedChange {
    /// Rounds taken.
    pub rounds: usize,
    /// Processes the base ran in.
    #[serde(default)]
    pub base_processes: usize,
    /// Processes the variant ran in.
    #[serde(default)]
    pub variant_processes: usize,
    /// Median over rounds of the base's time (the mean of its processes' samples), ns/iter.
    pub base_ns: f64,
    /// Median over rounds of the variant's time, ns/iter.
    pub variant_ns: f64,
    /// The variant against the base, percent (median of the per-round changes).
    pub change_pct: f64,
    /// The 95% interval on `change_pct` (the wider of the rounds' and the processes'
    /// intervals); `None` when underpowered.
    pub ci_low_pct: Option<f64>,
    /// Its upper end.
    pub ci_high_pct: Option<f64>,
    /// The processes' interval alone (Student's t on each process's level, the spread
    /// pooled within each side); `None` with one process on both sides.
    #[serde(default)]
    pub process_ci_low_pct: Option<f64>,
    /// Its upper end.
    #[serde(default)]
    pub process_ci_high_pct: Option<f64>,
    /// The base's processes against each other (the first against the second; of more,
    /// the pair furthest apart), percent.
    pub null_change_pct: f64,
    /// The 95% interval on `null_change_pct`; `None` when underpowered.
    pub null_ci_low_pct: Option<f64>,
    /// Its upper end.
    pub null_ci_high_pct: Option<f64>,
    /// The variant's processes against each other, percent; `None` with one.
    #[serde(default)]
    pub variant_null_change_pct: Option<f64>,
    /// The size a change must exceed besides zero: the larger null's, whatever its sign,
    /// or the floor, percent.
    #[serde(default)]
    pub noise_pct: f64,
    /// Regression or improvement where the change clears zero, the nulls' size and the
    /// floor; else inside the noise (underpowered under [`MIN_SAMPLES_FOR_VERDICT`]
    /// rounds).
    pub verdict: Verdict,
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_unstable_by(f64::total_cmp);
    quantile_sorted(values, 0.5)
}

fn pct(log_ratio: f64) -> f64 {
    (log_ratio.exp() - 1.0) * 100.0
}

/// The pair of processes of one side furthest apart: the median over rounds of their log
/// ratio, and which pair it is (`None` with fewer than two processes).
fn widest_pair(logs: &[Vec<f64>], side: std::ops::Range<usize>) -> Option<(usize, usize, f64)> {
    let mut best: Option<(usize, usize, f64)> = None;
    for i in side.clone() {
        for j in i + 1..side.end {
            let mut d: Vec<f64> = logs.iter().map(|r| r[i] - r[j]).collect();
            let m = median(&mut d);
            if best.is_none_or(|(_, _, b)| m.abs() > b.abs()) {
                best = Some((i, j, m));
            }
        }
    }
    best
}

/// The processes' interval on the change (log scale): each process's level (the median
/// over rounds of its log time against the round's mean of all processes), the variant's
/// levels against the base's by Student's t with the spread pooled within each side.
fn process_interval(logs: &[Vec<f64>], k_base: usize) -> Option<(f64, f64)> {
    let k = logs[0].len();
    let k_variant = k - k_base;
    let df = k.checked_sub(2).filter(|&d| d > 0)?;
    let levels: Vec<f64> = (0..k)
        .map(|p| {
            let mut d: Vec<f64> = logs.iter().map(|r| r[p] - mean(r)).collect();
            median(&mut d)
        })
        .collect();
    let (base, variant) = levels.split_at(k_base);
    let (mb, mv) = (mean(base), mean(variant));
    let ss = base.iter().map(|x| (x - mb).powi(2)).sum::<f64>()
        + variant.iter().map(|x| (x - mv).powi(2)).sum::<f64>();
    let se = (ss / df as f64 * (1.0 / k_base as f64 + 1.0 / k_variant as f64)).sqrt();
    let half = t_975(df) * se;
    Some((mv - mb - half, mv - mb + half))
}

/// The change and the nulls of `rounds`, a verdict only for a change of at least
/// `threshold_pct`; `None` without a round, with rounds of other shapes (every round has
/// the same processes, one at least a side), or with a time that is not positive.
pub fn paired(rounds: &[Round], threshold_pct: f64) -> Option<PairedChange> {
    let first = rounds.first()?;
    let (k_base, k_variant) = (first.base.len(), first.variant.len());
    if k_base == 0
        || k_variant == 0
        || rounds.iter().any(|r| {
            r.base.len() != k_base
                || r.variant.len() != k_variant
                || !r.base.iter().chain(&r.variant).all(|t| *t > 0.0)
        })
    {
        return None;
    }
    // Each round's log times, the base's processes first.
    let logs: Vec<Vec<f64>> = rounds
        .iter()
        .map(|r| r.base.iter().chain(&r.variant).map(|t| t.ln()).collect())
        .collect();
    let change: Vec<f64> = logs
        .iter()
        .map(|r| mean(&r[k_base..]) - mean(&r[..k_base]))
        .collect();
    let base_pair = widest_pair(&logs, 0..k_base);
    let variant_null = widest_pair(&logs, k_base..k_base + k_variant).map(|(_, _, m)| pct(m));
    // The base null per round (its widest pair; zero with one base process).
    let null: Vec<f64> = match base_pair {
        Some((i, j, _)) => logs.iter().map(|r| r[i] - r[j]).collect(),
        None => vec![0.0; logs.len()],
    };
    let mut base: Vec<f64> = rounds.iter().map(Round::base_mean).collect();
    let mut variant: Vec<f64> = rounds.iter().map(Round::variant_mean).collect();
    let change_pct = pct(median(&mut change.clone()));
    let null_change_pct = pct(median(&mut null.clone()));
    let noise_pct = null_change_pct
        .abs()
        .max(variant_null.map_or(0.0, f64::abs))
        .max(threshold_pct);
    let mut out = PairedChange {
        rounds: rounds.len(),
        base_processes: k_base,
        variant_processes: k_variant,
        base_ns: median(&mut base),
        variant_ns: median(&mut variant),
        change_pct,
        ci_low_pct: None,
        ci_high_pct: None,
        process_ci_low_pct: None,
        process_ci_high_pct: None,
        null_change_pct,
        null_ci_low_pct: None,
        null_ci_high_pct: None,
        variant_null_change_pct: variant_null,
        noise_pct,
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
    let (mut low, mut high) = (
        quantile_sorted(&changes, tail),
        quantile_sorted(&changes, 1.0 - tail),
    );
    if let Some((p_low, p_high)) = process_interval(&logs, k_base) {
        out.process_ci_low_pct = Some(pct(p_low));
        out.process_ci_high_pct = Some(pct(p_high));
        low = low.min(p_low);
        high = high.max(p_high);
    }
    let (low, high) = (pct(low), pct(high));
    out.verdict = if low > 0.0 && change_pct > noise_pct {
        Verdict::Regression
    } else if high < 0.0 && -change_pct > noise_pct {
        Verdict::Improvement
    } else {
        Verdict::InsideTheNoise
    };
    if base_pair.is_some() {
        out.null_ci_low_pct = Some(pct(quantile_sorted(&nulls, tail)));
        out.null_ci_high_pct = Some(pct(quantile_sorted(&nulls, 1.0 - tail)));
    }
    out.ci_low_pct = Some(low);
    out.ci_high_pct = Some(high);
    Some(out)
}

/// Two threads of one process running the very same code, each pinned to the same CPU
/// in turn, read this far apart here (percent; measured in docs/design.md "Implementations
/// against a reference"): the floor a ratio to a group's reference must clear besides
/// one, whatever its own null says, since one twin is one draw of what a thread's
/// placement costs.
pub const REFERENCE_FLOOR_PCT: f64 = 2.0;

/// A case against its group's reference, measured in the same rounds of one process
/// (`Group::reference`): each round a turn of the reference, of its twin (the same code
/// on a thread of its own) and of the case, each turn's fastest sample kept. The ratio
/// and its interval are [`paired`]'s of the case against the reference, one thread a
/// side (a bootstrap over rounds); the null is the twin's against the reference's; a
/// verdict clears one, the null's interval's furthest end from one, and
/// [`REFERENCE_FLOOR_PCT`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgainstReference {
    /// The reference case's name.
    pub case: String,
    /// This case's time over the reference's (the median of the rounds' ratios).
    pub ratio: f64,
    /// Its 95% interval; `None` when underpowered.
    pub ci_low: Option<f64>,
    /// Its upper end.
    pub ci_high: Option<f64>,
    /// `regression` (slower than the reference), `improvement` (faster) or
    /// `inside_the_noise`.
    pub verdict: Verdict,
    /// Rounds compared.
    pub rounds: usize,
    /// The reference's twin against the reference in the same rounds, and its interval.
    pub null_ratio: f64,
    /// Its interval's lower end.
    pub null_ci_low: Option<f64>,
    /// Its upper end.
    pub null_ci_high: Option<f64>,
    /// The size a ratio must clear besides one, percent.
    pub noise_pct: f64,
}

impl AgainstReference {
    /// `1.10x [1.087, 1.113] against hash/std (null 1.004x, noise ±2.0%, 30 rounds): slower`.
    pub fn line(&self) -> String {
        format!(
            "{:.2}x{} against {} (null {:.3}x, noise ±{:.1}%, {} rounds): {}",
            self.ratio,
            ratio_interval(self.ci_low, self.ci_high)
                .map(|i| format!(" {i}"))
                .unwrap_or_default(),
            self.case,
            self.null_ratio,
            self.noise_pct,
            self.rounds,
            self.verdict_word()
        )
    }

    /// The verdict as a ratio says it: `slower`, `faster`, `inside the noise`.
    pub fn verdict_word(&self) -> &'static str {
        match self.verdict {
            Verdict::Regression => "slower",
            Verdict::Improvement => "faster",
            Verdict::InsideTheNoise => "inside the noise",
            Verdict::Underpowered => "underpowered",
        }
    }
}

/// `[0.981, 1.020]`, where both ends are known.
pub fn ratio_interval(low: Option<f64>, high: Option<f64>) -> Option<String> {
    Some(format!("[{:.3}, {:.3}]", low?, high?))
}

/// `case`'s times against its reference's, turn by turn (per-iteration ns, the turns the
/// three share): `reference` the reference's, `twin` its twin's, `name` the reference's
/// name; `None` where a time is not positive or no turn was taken.
pub fn against_reference(
    name: &str,
    reference: &[f64],
    twin: &[f64],
    case: &[f64],
) -> Option<AgainstReference> {
    let n = reference.len().min(twin.len()).min(case.len());
    let rounds = |other: &[f64]| -> Vec<Round> {
        (0..n)
            .map(|r| Round {
                base: vec![reference[r]],
                variant: vec![other[r]],
            })
            .collect()
    };
    let null = paired(&rounds(twin), 0.0)?;
    let far = [null.null_change_pct, null.change_pct]
        .into_iter()
        .chain(null.ci_low_pct)
        .chain(null.ci_high_pct)
        .map(f64::abs)
        .fold(REFERENCE_FLOOR_PCT, f64::max);
    let change = paired(&rounds(case), far)?;
    let ratio = |pct: f64| 1.0 + pct / 100.0;
    Some(AgainstReference {
        case: name.to_string(),
        ratio: ratio(change.change_pct),
        ci_low: change.ci_low_pct.map(ratio),
        ci_high: change.ci_high_pct.map(ratio),
        verdict: change.verdict,
        rounds: n,
        null_ratio: ratio(null.change_pct),
        null_ci_low: null.ci_low_pct.map(ratio),
        null_ci_high: null.ci_high_pct.map(ratio),
        noise_pct: far,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A normal deviate (Box–Muller).
    fn normal(rng: &mut fastrand::Rng) -> f64 {
        let u = rng.f64().max(f64::MIN_POSITIVE);
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * rng.f64()).cos()
    }

    /// A model of a comparison: `k` processes a side, each with a layout that costs it a
    /// factor drawn once (log-normal, `layout` its spread: a `HashMap`'s seed, where the
    /// heap landed), the variant `factor` times the base, each sample off by up to
    /// ±`noise`, the whole machine drifting by `drift` from first round to last.
    struct Model {
        k: usize,
        factor: f64,
        noise: f64,
        drift: f64,
        layout: f64,
    }

    impl Model {
        fn spin(factor: f64) -> Model {
            Model {
                k: 2,
                factor,
                noise: 0.03,
                drift: 0.3,
                layout: 0.001,
            }
        }

        fn rounds(&self, n: usize, seed: u64) -> Vec<Round> {
            let mut rng = fastrand::Rng::with_seed(seed);
            let luck = |rng: &mut fastrand::Rng| (self.layout * normal(rng)).exp();
            let base_luck: Vec<f64> = (0..self.k).map(|_| luck(&mut rng)).collect();
            let variant_luck: Vec<f64> = (0..self.k).map(|_| luck(&mut rng)).collect();
            (0..n)
                .map(|i| {
                    let speed = 1.0 + self.drift * i as f64 / n as f64;
                    let mut sample =
                        |l: f64| 1000.0 * l * speed * (1.0 + self.noise * (2.0 * rng.f64() - 1.0));
                    Round {
                        base: base_luck.iter().map(|&l| sample(l)).collect(),
                        variant: variant_luck
                            .iter()
                            .map(|&l| sample(l * self.factor))
                            .collect(),
                    }
                })
                .collect()
        }
    }

    fn verdicts(model: &Model, n: usize, seeds: std::ops::Range<u64>) -> Vec<Verdict> {
        seeds
            .map(|s| {
                paired(&model.rounds(n, s), NOISE_THRESHOLD_PCT)
                    .unwrap()
                    .verdict
            })
            .collect()
    }

    fn count(v: &[Verdict], which: Verdict) -> usize {
        v.iter().filter(|&&x| x == which).count()
    }

    /// Turns of a group with a reference: its reference, the twin and a case `factor`
    /// times slower, each thread off by a luck of its own drawn once (log-normal, 0.5%:
    /// six threads of one spin loop pinned in turn read within ±0.7% of each other here),
    /// each turn the fastest of three samples each off by up to +6% (another thread
    /// only adds), the machine drifting 20% over the rounds.
    fn reference_turns(factor: f64, rounds: usize, seed: u64) -> [Vec<f64>; 3] {
        let mut rng = fastrand::Rng::with_seed(seed);
        let luck: Vec<f64> = (0..3).map(|_| (0.005 * normal(&mut rng)).exp()).collect();
        let mut out: [Vec<f64>; 3] = Default::default();
        for r in 0..rounds {
            let speed = 1.0 + 0.2 * r as f64 / rounds as f64;
            for (t, series) in out.iter_mut().enumerate() {
                let work = if t == 2 { factor } else { 1.0 };
                let fastest = (0..3)
                    .map(|_| 1.0 + 0.06 * rng.f64())
                    .fold(f64::INFINITY, f64::min);
                series.push(1000.0 * work * luck[t] * speed * fastest);
            }
        }
        out
    }

    #[test]
    fn against_a_reference_the_same_code_is_never_judged_and_ten_percent_always_is() {
        let mut judged_same = 0;
        let (mut found, mut held) = (0, 0);
        for seed in 0..400 {
            let [reference, twin, case] = reference_turns(1.0, 30, seed);
            let same = against_reference("r", &reference, &twin, &case).unwrap();
            if same.verdict != Verdict::InsideTheNoise {
                judged_same += 1;
            }
            let [reference, twin, case] = reference_turns(1.10, 30, 10_000 + seed);
            let more = against_reference("r", &reference, &twin, &case).unwrap();
            if more.verdict == Verdict::Regression {
                found += 1;
            }
            let noise = more.noise_pct / 100.0;
            if more.ci_low.unwrap() - noise <= 1.10 && 1.10 <= more.ci_high.unwrap() + noise {
                held += 1;
            }
            assert_eq!(more.rounds, 30);
            assert!(more.noise_pct >= REFERENCE_FLOOR_PCT);
        }
        eprintln!("same code judged {judged_same}/400; +10% found {found}/400, held {held}/400");
        // A thread's luck of 0.5% stays under the floor: the same code is inside the noise.
        assert!(judged_same <= 4, "{judged_same}");
        assert!(found >= 396, "{found}");
        assert!(held >= 390, "{held}");
        // Too few turns for an interval: underpowered, never a verdict.
        let [reference, twin, case] = reference_turns(1.10, 3, 1);
        let few = against_reference("r", &reference, &twin, &case).unwrap();
        assert_eq!(few.verdict, Verdict::Underpowered);
        assert_eq!(few.ci_low, None);
        assert!(against_reference("r", &[], &[], &[]).is_none());
    }

    #[test]
    fn a_planted_change_is_found_through_drift() {
        // 2% planted, ±1% noise per sample, the machine 30% slower by the end.
        let model = |factor| Model {
            noise: 0.01,
            ..Model::spin(factor)
        };
        let c = paired(&model(1.02).rounds(200, 7), NOISE_THRESHOLD_PCT).unwrap();
        assert_eq!(c.verdict, Verdict::Regression, "{c:?}");
        assert!((c.change_pct - 2.0).abs() < 1.0, "{c:?}");
        assert_eq!((c.base_processes, c.variant_processes), (2, 2));
        assert!(c.null_ci_low_pct.unwrap() < 0.0 && c.null_ci_high_pct.unwrap() > 0.0);
        let c = paired(&model(0.98).rounds(200, 8), NOISE_THRESHOLD_PCT).unwrap();
        assert_eq!(c.verdict, Verdict::Improvement, "{c:?}");
    }

    #[test]
    fn power_and_false_positives_of_code_whose_speed_no_process_changes() {
        // Spin loops: layouts cost them 0.1%. 60 rounds, ±1% a sample.
        let model = |factor| Model {
            noise: 0.01,
            drift: 0.1,
            ..Model::spin(factor)
        };
        let same = verdicts(&model(1.0), 60, 0..200);
        let plus1 = verdicts(&model(1.01), 60, 1000..1100);
        let plus2 = verdicts(&model(1.02), 60, 2000..2100);
        let minus1 = verdicts(&model(0.99), 60, 3000..3100);
        eprintln!(
            "unchanged misjudged {}/200, +1% found {}/100, +2% {}/100, -1% {}/100",
            200 - count(&same, Verdict::InsideTheNoise),
            count(&plus1, Verdict::Regression),
            count(&plus2, Verdict::Regression),
            count(&minus1, Verdict::Improvement)
        );
        assert!(count(&same, Verdict::InsideTheNoise) >= 190, "{same:?}");
        assert!(count(&plus1, Verdict::Regression) >= 80, "{plus1:?}");
        assert_eq!(count(&plus1, Verdict::Improvement), 0);
        assert!(count(&plus2, Verdict::Regression) >= 98, "{plus2:?}");
        assert!(count(&minus1, Verdict::Improvement) >= 80, "{minus1:?}");
    }

    #[test]
    fn layout_luck_is_inside_the_noise() {
        // A case whose speed depends on the process it runs in (a HashMap's seed): each
        // process's layout costs it 2% (one standard deviation), samples agree within 1%.
        // One process a side would call most of these a change; the processes' spread
        // keeps the false-positive rate at the interval's 5% at most.
        let model = Model {
            k: 2,
            factor: 1.0,
            noise: 0.01,
            drift: 0.1,
            layout: 0.02,
        };
        let same = verdicts(&model, 60, 0..400);
        let wrong = 400 - count(&same, Verdict::InsideTheNoise);
        eprintln!("layout luck 2%: {wrong}/400 misjudged with 2 processes a side");
        assert!(wrong <= 20, "{wrong}/400: {same:?}");
        // The same with three processes a side.
        let same = verdicts(&Model { k: 3, ..model }, 60, 400..800);
        let wrong3 = 400 - count(&same, Verdict::InsideTheNoise);
        eprintln!("layout luck 2%: {wrong3}/400 misjudged with 3 processes a side");
        assert!(wrong3 <= 20, "{wrong3}/400");
        // What one process a side does with it (the old `sparkles compare`'s variant):
        // the rounds' interval alone, blind to the layouts.
        let one: Vec<Verdict> = (0..100u64)
            .map(|s| {
                let mut r = Model { k: 1, ..model }.rounds(60, s);
                for round in &mut r {
                    round.base.push(round.base[0]);
                }
                paired(&r, NOISE_THRESHOLD_PCT).unwrap().verdict
            })
            .collect();
        assert!(count(&one, Verdict::InsideTheNoise) < 80, "{one:?}");
    }

    #[test]
    fn the_null_guards_both_signs() {
        // Three processes of the same code whose layouts cost A1 −2%, A2 +2%, B +2%: the
        // change clears zero, +2%, and the null says processes differ by 4%.
        let layouts = |a1: f64, a2: f64, b: f64| -> Vec<Round> {
            let mut rng = fastrand::Rng::with_seed(5);
            let mut j = move || 1.0 + 0.001 * (2.0 * rng.f64() - 1.0);
            (0..60)
                .map(|_| Round {
                    base: vec![1000.0 * a1 * j(), 1000.0 * a2 * j()],
                    variant: vec![1000.0 * b * j(), 1000.0 * b * j()],
                })
                .collect()
        };
        let c = paired(&layouts(0.98, 1.02, 1.02), NOISE_THRESHOLD_PCT).unwrap();
        assert!(c.change_pct > 1.5 && c.null_change_pct < -3.5, "{c:?}");
        assert_eq!(c.verdict, Verdict::InsideTheNoise, "{c:?}");
        assert!(c.noise_pct > 3.5, "{c:?}");
        // The mirror.
        let c = paired(&layouts(1.02, 0.98, 0.98), NOISE_THRESHOLD_PCT).unwrap();
        assert!(c.change_pct < -1.5 && c.null_change_pct > 3.5, "{c:?}");
        assert_eq!(c.verdict, Verdict::InsideTheNoise, "{c:?}");
        // And the variant's own processes disagreeing: the base agrees with itself.
        let mut r = layouts(1.0, 1.0, 1.03);
        for round in &mut r {
            round.variant[1] /= 1.05;
        }
        let c = paired(&r, NOISE_THRESHOLD_PCT).unwrap();
        assert!(c.variant_null_change_pct.unwrap() > 4.0, "{c:?}");
        assert_eq!(c.verdict, Verdict::InsideTheNoise, "{c:?}");
        // A real change beyond the null of either sign is found.
        let c = paired(&layouts(0.995, 1.005, 1.08), NOISE_THRESHOLD_PCT).unwrap();
        assert_eq!(c.verdict, Verdict::Regression, "{c:?}");
    }

    #[test]
    fn a_change_below_the_threshold_is_inside_the_noise() {
        // 0.2% with almost no noise: the interval clears zero, the threshold does not.
        let model = Model {
            noise: 0.0005,
            drift: 0.0,
            layout: 0.0,
            ..Model::spin(1.002)
        };
        let r = model.rounds(100, 4);
        let c = paired(&r, NOISE_THRESHOLD_PCT).unwrap();
        assert!(c.ci_low_pct.unwrap() > 0.0, "{c:?}");
        assert_eq!(c.verdict, Verdict::InsideTheNoise, "{c:?}");
        assert_eq!(paired(&r, 0.0).unwrap().verdict, Verdict::Regression);
    }

    #[test]
    fn few_rounds_are_underpowered_and_bad_rounds_refused() {
        let model = Model {
            noise: 0.0,
            layout: 0.0,
            drift: 0.0,
            ..Model::spin(1.5)
        };
        let c = paired(&model.rounds(5, 1), NOISE_THRESHOLD_PCT).unwrap();
        assert_eq!(c.verdict, Verdict::Underpowered);
        assert!(c.ci_low_pct.is_none());
        assert!((c.change_pct - 50.0).abs() < 1e-9);
        assert!(paired(&[], 0.0).is_none());
        let zero = Round {
            base: vec![0.0, 1.0],
            variant: vec![1.0],
        };
        assert!(paired(&[zero], 0.0).is_none());
        // Rounds of different shapes (a process missing from one).
        let mut r = model.rounds(12, 1);
        r[3].variant.pop();
        assert!(paired(&r, 0.0).is_none());
        assert!(paired(&[Round::default()], 0.0).is_none());
    }

    #[test]
    fn rounds_serialize_as_compare_wrote_them_and_every_process_beside() {
        let r = Round {
            base: vec![1.0, 2.0],
            variant: vec![3.0, 4.0],
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"base1": 1.0, "variant": 3.0, "base2": 2.0,
                "base": [1.0, 2.0], "variants": [3.0, 4.0]})
        );
    }

    #[test]
    fn t_points() {
        assert_eq!(t_975(2), 4.303);
        assert_eq!(t_975(30), 2.042);
        assert_eq!(t_975(1000), 1.96);
        assert!(t_975(0).is_infinite());
    }
}
