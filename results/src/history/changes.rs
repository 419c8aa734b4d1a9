//! Change points in a case's series of run medians: where they are by e-divisive means
//! (Matteson and James, "A Nonparametric Approach for Multiple Change Point Analysis of
//! Multivariate Data", 2014: the split that makes the two sides' energy distance largest),
//! and how sure by the method's own permutation test: the largest energy statistic over
//! *every* split of the runs in random order, so that the p-value is the search's, not
//! one split's chosen after looking (a split picked as the best of 20 and then tested
//! as if fixed called a false step in 1.4-2.3% of pure-noise histories). The count of
//! permutations stops early where the p-value is plainly large (Besag and Clifford's
//! sequential Monte Carlo p-value, "Sequential Monte Carlo p-values", Biometrika 1991).
//! An accepted split is looked at again on each side (binary segmentation); each change
//! point is then measured against its neighbours: the runs between the change points
//! before and after it. A step must also be large against how far runs scatter from one
//! another (the successive runs' differences): a busy machine's bursts (runs that are
//! slow together) are not exchangeable, which a permutation test assumes, and step the
//! series by about their own size. docs/design.md says why this method, and the unit
//! tests below measure its error rates on simulated histories.

use serde::Serialize;

use super::Point;

/// How sure and how large a step must be to be called a change point.
#[derive(Debug, Clone)]
pub struct Options {
    /// The largest p-value of a change point's permutation test ([`MAX_P`]).
    pub max_p: f64,
    /// The smallest step, percent of the level before it; `None`: [`scatter_floor_pct`]
    /// of the series, at least 1%.
    pub min_change_pct: Option<f64>,
    /// The fewest runs on each side of a change point.
    pub min_runs: usize,
    /// The smallest step whatever the scatter, percent: 1 for times; [`EXACT_FLOOR_PCT`]
    /// for exact counts, whose runs do not scatter.
    pub min_floor_pct: f64,
}

impl Options {
    /// These options for an exact count's series: held to [`EXACT_FLOOR_PCT`] at least.
    pub fn for_exact_counts(&self) -> Options {
        Options {
            min_floor_pct: EXACT_FLOOR_PCT,
            ..self.clone()
        }
    }
}

/// The smallest step of an exact count's series (callgrind's instructions, the counting
/// allocator's allocations): a 1% step in instructions is a real change of work.
pub const EXACT_FLOOR_PCT: f64 = 0.1;

/// The default largest p-value: a clean step between six runs and six (2 of the 924
/// orders of twelve runs separate them so) is called, and pure noise makes a false
/// change point in well under 1 history in 100 (the unit tests count them).
pub const MAX_P: f64 = 0.005;

/// The longest segment tested by permutations; a longer one's split is held to the
/// Mann–Whitney test of its sides times its count of candidate splits (Bonferroni), which
/// a real step in that many runs passes by orders of magnitude: the permutations would
/// cost seconds on a history of thousands of runs.
pub const PERMUTE_MAX: usize = 120;

/// Permutations drawn at most for one test: the p-value's resolution (1/5000) and its
/// Monte Carlo error near [`MAX_P`] (about ±0.001).
pub const PERMUTATIONS: usize = 4999;

/// Permutations at least as extreme as the runs' own order that end the count early: the
/// p-value is then their share of those drawn (Besag and Clifford).
const EXCEEDANCES: usize = 20;

/// How many of the runs' scatter a step must be ([`scatter_floor_pct`]), before the
/// allowance for a short series. Bursty noise (AR(1), ρ = 0.5, 3%) made false steps in 12
/// of 1,250 simulated histories of 12 to 200 runs at 3.5 (5 of 250 of 12 runs), and in 5 at
/// 4; at 4 a 30% step in twelve runs scattering by 3% is found at its commit in 48 of 50.
pub const SCATTERS: f64 = 4.0;

impl Default for Options {
    fn default() -> Options {
        Options {
            max_p: MAX_P,
            min_change_pct: None,
            min_runs: 2,
            min_floor_pct: 1.0,
        }
    }
}

/// A step in a case's series.
#[derive(Debug, Clone, Serialize)]
pub struct ChangePoint {
    /// The first run of the new level, its index in the series.
    pub index: usize,
    /// Its commit: where the step starts.
    pub commit: Option<String>,
    /// Its time, seconds since the Unix epoch.
    pub time: u64,
    /// The median of the runs after it (up to the next change point) over the median of
    /// those before it (back to the one before), less one, in percent.
    pub change_pct: f64,
    /// The permutation test's p-value: the share of random orders of these runs (the
    /// two sides' together) in which some split is at least as far apart by the energy
    /// statistic as this one is: the search over every split is in it.
    pub p_value: f64,
    /// The permutations drawn for it (fewer than [`PERMUTATIONS`] where it stopped early;
    /// 0 where the segment it was tested in was longer than [`PERMUTE_MAX`] runs and
    /// `p_value` is the Mann–Whitney test of its sides times its candidate splits).
    pub permutations: usize,
    /// The Mann–Whitney U test of the two sides at this split, two-sided, as if the split
    /// had been fixed in advance (it was not: for reference beside `p_value`).
    pub p_value_fixed_split: f64,
    /// The two levels, ns.
    pub before: f64,
    pub after: f64,
    /// Where the machine changed at this run (CPU, kernel, toolchain): the step is not
    /// the commit's alone.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub machine_change: Vec<String>,
    /// How far the machine probe stepped over the same runs (the median of its runs
    /// after over before, in the series' statistic), percent; `None` where fewer than
    /// `min_runs` runs on a side timed one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_change_pct: Option<f64>,
}

/// A change point's p-value as the views show it (one below double precision's
/// resolution as a bound).
pub fn p_text(p: f64) -> String {
    if p < 1e-15 {
        "< 1e-15".to_string()
    } else {
        format!("{p:.1e}")
    }
}

/// How far a series' runs scatter from one another, percent: the median absolute
/// difference of successive runs' log medians, over 0.954 (its size for independent
/// normal runs of that standard deviation). A step moves one difference only, so the
/// steps do not inflate it. `None` with fewer than two differences.
pub fn scatter_pct(medians: &[f64]) -> Option<f64> {
    scatter_of(medians.windows(2))
}

/// [`scatter_pct`] of the successive pairs `pairs` (each a window of two runs).
fn scatter_of<'a>(pairs: impl Iterator<Item = &'a [f64]>) -> Option<f64> {
    let mut d: Vec<f64> = pairs
        .filter(|w| w[0] > 0.0 && w[1] > 0.0)
        .map(|w| (w[1] / w[0]).ln().abs())
        .collect();
    if d.len() < 2 {
        return None;
    }
    Some(median(&mut d) / 0.954 * 100.0)
}

/// The smallest step a series of `n` runs scattering by `scatter` percent calls a change
/// point: [`SCATTERS`] of its scatter, widened for a short series (whose scatter is itself
/// a guess from few differences) by 1 + 1/√(n − 1).
pub fn scatter_floor_pct(scatter: f64, n: usize) -> f64 {
    SCATTERS * (1.0 + 1.0 / ((n.max(2) - 1) as f64).sqrt()) * scatter
}

/// The smallest step `options` calls a change point in `points`, percent, as the views
/// say it: from the scatter of the whole series (a split is held to the scatter within its
/// two sides, [`split_floor_pct`], which a step does not widen).
pub fn min_change_pct(points: &[Point], options: &Options) -> f64 {
    options.min_change_pct.unwrap_or_else(|| {
        let medians: Vec<f64> = points.iter().map(|p| p.median).collect();
        scatter_pct(&medians)
            .map_or(0.0, |s| scatter_floor_pct(s, medians.len()))
            .max(options.min_floor_pct)
    })
}

/// The smallest step at the split of `z` at `at`: `--min-change` where given, else
/// [`scatter_floor_pct`] of the successive differences within each side (the one across
/// the split left out), at least `min_floor_pct`.
fn split_floor_pct(z: &[f64], at: usize, options: &Options) -> f64 {
    options.min_change_pct.unwrap_or_else(|| {
        scatter_of(z[..at].windows(2).chain(z[at..].windows(2)))
            .map_or(0.0, |s| scatter_floor_pct(s, z.len()))
            .max(options.min_floor_pct)
    })
}

/// The change points of `points` (in time order), in order.
pub fn find(points: &[Point], options: &Options) -> Vec<ChangePoint> {
    let x: Vec<f64> = points.iter().map(|p| p.median).collect();
    let min_runs = options.min_runs.max(1);
    // A step of at least the floor at `at` within `z`, at p ≤ max_p: its p-value and
    // permutations. The cheap size first: most splits of a flat series end there.
    let accept = |z: &[f64], at: usize| -> Option<(f64, usize)> {
        let (_, _, change) = step(&z[..at], &z[at..]);
        if change.abs() < split_floor_pct(z, at, options) {
            return None;
        }
        let (p, drawn) = if z.len() <= PERMUTE_MAX {
            search_p(z, min_runs, energy(z, at))
        } else {
            // Every candidate split a test of its own, the chosen one's p held to all of
            // them (Bonferroni): valid whatever the search picked, and cheap on a long
            // series, where a step of any size reaches far below it.
            let splits = (z.len() + 1).saturating_sub(2 * min_runs).max(1);
            let fixed = mann_whitney_p(&z[..at], &z[at..]);
            ((fixed * splits as f64).min(1.0), 0)
        };
        (p <= options.max_p).then_some((p, drawn))
    };
    let mut splits = Vec::new();
    let mut todo = vec![(0, x.len())];
    while let Some((a, b)) = todo.pop() {
        let Some(at) = best_split(&x[a..b], min_runs) else {
            continue;
        };
        if accept(&x[a..b], at).is_some() {
            splits.push(a + at);
            todo.push((a, a + at));
            todo.push((a + at, b));
        }
    }
    splits.sort_unstable();
    // Each measured against its neighbours; one that no longer holds there (its
    // neighbours closer than the segment it was found in) is dropped.
    let mut kept: Vec<(usize, f64, usize)> = Vec::new();
    for (i, &at) in splits.iter().enumerate() {
        let from = kept.last().map_or(0, |k| k.0);
        let to = splits.get(i + 1).copied().unwrap_or(x.len());
        if let Some((p, drawn)) = accept(&x[from..to], at - from) {
            kept.push((at, p, drawn));
        }
    }
    kept.iter()
        .enumerate()
        .map(|(i, &(at, p_value, permutations))| {
            let from = if i == 0 { 0 } else { kept[i - 1].0 };
            let to = kept.get(i + 1).map_or(x.len(), |k| k.0);
            let (before, after, change_pct) = step(&x[from..at], &x[at..to]);
            ChangePoint {
                index: at,
                commit: points[at].commit.as_deref().map(str::to_string),
                time: points[at].time,
                change_pct,
                p_value,
                permutations,
                p_value_fixed_split: mann_whitney_p(&x[from..at], &x[at..to]),
                before,
                after,
                machine_change: points[at].machine_change.clone(),
                probe_change_pct: None,
            }
        })
        .collect()
}

/// `found` (the change points of `points`, in order) told apart by the machine probe:
/// those whose step is the commit's, and those the probe took with it (`probe`: a run's
/// probe in the series' statistic). A series' runs are measured one after another, an
/// afternoon apart or more, and a machine's speed steps between them (a host that moved
/// the virtual machine, a frequency that settled lower; beside two CPU hogs here a case's
/// fastest tenth stepped +5% between two runs of one commit and stayed there). The probe
/// is timed in the same runs, beside the cases. Over the change point's runs (back to the
/// one before it, up to the next) the step is the machine's where the probe stepped the
/// same way by at least its own series' smallest step ([`split_floor_pct`] of the probe's
/// runs: a probe that only scatters takes nothing away), and the case's step is either
/// under its smallest step once the probe's is taken out, (1 + case) / (1 + probe) − 1,
/// or at most [`MACHINE_SHARE`] times the probe's (in log terms: one machine step slows
/// one loop more than another; here a case +9.1% where the probe took +5.5%). Each point
/// keeps the probe's step ([`ChangePoint::probe_change_pct`]); a point with fewer than
/// `min_runs` probes on a side is the commit's.
pub fn machine_steps(
    points: &[Point],
    found: Vec<ChangePoint>,
    probe: impl Fn(&Point) -> Option<f64>,
    options: &Options,
) -> (Vec<ChangePoint>, Vec<ChangePoint>) {
    let x: Vec<f64> = points.iter().map(|p| p.median).collect();
    let bounds: Vec<usize> = found.iter().map(|c| c.index).collect();
    let min_runs = options.min_runs.max(1);
    let (mut code, mut machine) = (Vec::new(), Vec::new());
    for (i, mut point) in found.into_iter().enumerate() {
        let from = if i == 0 { 0 } else { bounds[i - 1] };
        let to = bounds.get(i + 1).copied().unwrap_or(points.len());
        let at = point.index;
        let before: Vec<f64> = points[from..at].iter().filter_map(&probe).collect();
        let after: Vec<f64> = points[at..to].iter().filter_map(&probe).collect();
        if before.len() < min_runs || after.len() < min_runs {
            code.push(point);
            continue;
        }
        let (_, _, p) = step(&before, &after);
        point.probe_change_pct = Some(p);
        let probe_runs: Vec<f64> = before.iter().chain(&after).copied().collect();
        let probe_stepped = p.abs() >= split_floor_pct(&probe_runs, before.len(), options);
        let c = point.change_pct;
        let left = ((1.0 + c / 100.0) / (1.0 + p / 100.0) - 1.0) * 100.0;
        let (lc, lp) = ((1.0 + c / 100.0).ln(), (1.0 + p / 100.0).ln());
        let explained = left.abs() < split_floor_pct(&x[from..to], at - from, options)
            || lc.abs() <= MACHINE_SHARE * lp.abs();
        if probe_stepped && lc * lp > 0.0 && explained {
            machine.push(point);
        } else {
            code.push(point);
        }
    }
    (code, machine)
}

/// How many times the probe's step (in log terms) a case's step at the same runs may be
/// and still be the machine's ([`machine_steps`]).
pub const MACHINE_SHARE: f64 = 2.0;

/// Where a series shows no change point only because it has too few runs: its best split
/// steps by at least the floor, but no order of that many runs can make it significant.
#[derive(Debug, Clone, Serialize)]
pub struct TooFewRuns {
    /// The first run of the level the step would start (index in the series).
    pub index: usize,
    /// Its commit.
    pub commit: Option<String>,
    /// The step, percent.
    pub change_pct: f64,
    /// Runs before it and after it.
    pub before: usize,
    pub after: usize,
    /// The smallest p-value any test of this split can reach: 2 of the C(n, k) ways to
    /// choose its shorter side's k runs (the two sides fully apart, either way round).
    pub smallest_p: f64,
    /// Runs the shorter side needs (the longer side as it is) before a step there can
    /// reach `--max-p`.
    pub shorter_side_needs: usize,
}

impl TooFewRuns {
    /// Said in place of "none".
    pub fn line(&self) -> String {
        format!(
            "none yet: a step of {:+.1}% after run {} cannot be called with {} run{} before it and {} after (p ≥ {:.3} for any order); its shorter side needs {} run{}",
            self.change_pct,
            self.index,
            self.before,
            if self.before == 1 { "" } else { "s" },
            self.after,
            self.smallest_p,
            self.shorter_side_needs,
            if self.shorter_side_needs == 1 { "" } else { "s" }
        )
    }
}

/// C(n, k), as a float.
fn choose(n: usize, k: usize) -> f64 {
    (0..k.min(n - k)).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64)
}

/// Where `points` has no change point for want of runs ([`TooFewRuns`]), or `None`: a
/// series that has change points, whose best split steps by less than the floor, or
/// whose runs could have shown it.
pub fn too_few_runs(points: &[Point], options: &Options) -> Option<TooFewRuns> {
    let n = points.len();
    let min = options.min_runs.max(1);
    // Where even the most lopsided split allowed can reach max_p, no split is short of
    // runs: a long series is never read for it.
    if n < 2 * min || 2.0 / choose(n, min) <= options.max_p {
        return None;
    }
    let x: Vec<f64> = points.iter().map(|p| p.median).collect();
    let at = best_split(&x, min)?;
    let (shorter, longer) = (at.min(n - at), at.max(n - at));
    let smallest_p = 2.0 / choose(n, shorter);
    if smallest_p <= options.max_p {
        return None;
    }
    let (_, _, change_pct) = step(&x[..at], &x[at..]);
    if change_pct.abs() < split_floor_pct(&x, at, options) {
        return None;
    }
    let needs = (shorter..=10_000)
        .find(|&k| 2.0 / choose(longer + k, k.min(longer)) <= options.max_p)
        .unwrap_or(usize::MAX);
    Some(TooFewRuns {
        index: at,
        commit: points[at].commit.as_deref().map(str::to_string),
        change_pct,
        before: at,
        after: n - at,
        smallest_p,
        shorter_side_needs: needs,
    })
}

/// The permutation p-value of a split of `z` whose energy statistic is `observed`: the
/// share of random orders of `z` whose largest statistic over every split (at least `min`
/// runs a side) reaches it, counting the runs' own order (so never below 1/5000); the
/// count stops at the [`EXCEEDANCES`]th order that reaches it. Seeded by the series
/// itself, so the same runs always give the same answer. Also the permutations drawn.
fn search_p(z: &[f64], min: usize, observed: f64) -> (f64, usize) {
    let seed = z.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, v| {
        (h ^ v.to_bits()).wrapping_mul(0x0100_0000_01b3)
    });
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut order = z.to_vec();
    // Ties with the observed value count as reaching it (rounding must not make the
    // runs' own order look extreme).
    let reach = observed - observed.abs() * 1e-9;
    let mut hits = 0;
    for drawn in 1..=PERMUTATIONS {
        rng.shuffle(&mut order);
        if largest_energy(&order, min).is_some_and(|q| q >= reach) {
            hits += 1;
            if hits == EXCEEDANCES {
                return (hits as f64 / drawn as f64, drawn);
            }
        }
    }
    ((hits + 1) as f64 / (PERMUTATIONS + 1) as f64, PERMUTATIONS)
}

/// The step from `before` to `after`: their medians, and the change between them in
/// percent.
fn step(before: &[f64], after: &[f64]) -> (f64, f64, f64) {
    let (b, a) = (median(&mut before.to_vec()), median(&mut after.to_vec()));
    (b, a, (a / b - 1.0) * 100.0)
}

fn median(x: &mut [f64]) -> f64 {
    x.sort_by(f64::total_cmp);
    crate::stats::quantile_sorted(x, 0.5)
}

/// The Mann–Whitney U test of two samples (Wilcoxon's rank-sum), two-sided p: whether
/// one side's runs tend to be slower than the other's, by their ranks, so that one run a
/// busy machine slowed (an outlier of any size) moves it no more than any other slower
/// run. Exact (the count of the 2^… rank arrangements, by recurrence) where the sides
/// are small and have no ties; else the normal approximation with the ties' correction.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n, m) = (a.len(), b.len());
    if n == 0 || m == 0 {
        return 1.0;
    }
    // Ranks of the pooled values, ties given their mean rank.
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&v| (v, true))
        .chain(b.iter().map(|&v| (v, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < pooled.len() {
        let mut j = i;
        while j + 1 < pooled.len() && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        rank_sum_a += rank * pooled[i..=j].iter().filter(|p| p.1).count() as f64;
        i = j + 1;
    }
    let u = rank_sum_a - (n * (n + 1)) as f64 / 2.0;
    let (nf, mf) = (n as f64, m as f64);
    if tie_term == 0.0 && n * m <= EXACT_MAX {
        return exact_u_p(n, m, u);
    }
    let total = nf + mf;
    let var = nf * mf / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    // Continuity-corrected z; two-sided tail of the normal: erfc(|z| / √2).
    let z = ((u - nf * mf / 2.0).abs() - 0.5).max(0.0) / var.sqrt();
    puruspe::erfc(z / std::f64::consts::SQRT_2).clamp(0.0, 1.0)
}

/// The largest n·m whose U distribution is counted exactly.
const EXACT_MAX: usize = 2500;

/// P(U ≤ min(u, nm − u)) · 2 for samples of `n` and `m` without ties: the arrangements
/// counted by the recurrence c(n, m, u) = c(n − 1, m, u − m) + c(n, m − 1, u).
fn exact_u_p(n: usize, m: usize, u: f64) -> f64 {
    let max = n * m;
    let lower = u.min(max as f64 - u).floor() as usize;
    // counts[j][k]: arrangements of j of a's values among j + (m') others with U = k,
    // built up one b value (column) at a time.
    let mut counts = vec![vec![0f64; max + 1]; n + 1];
    for row in counts.iter_mut() {
        row[0] = 1.0;
    }
    for mm in 1..=m {
        let mut next = vec![vec![0f64; max + 1]; n + 1];
        next[0][0] = 1.0;
        for nn in 1..=n {
            for k in 0..=nn * mm {
                let with_a_last = if k >= mm { next[nn - 1][k - mm] } else { 0.0 };
                next[nn][k] = with_a_last + counts[nn][k];
            }
        }
        counts = next;
    }
    let all: f64 = counts[n].iter().sum();
    let tail: f64 = counts[n][..=lower].iter().sum();
    (2.0 * tail / all).min(1.0)
}

/// The split of `z` (at least `min` values each side) whose sides are furthest apart by
/// the energy statistic Q = nm/(n+m) · (2/(nm) Σ|x−y| − Σ|x−x'|/C(n,2) − Σ|y−y'|/C(m,2))
/// (α = 1): all splits in O(L log L), each side's sum of pairwise distances kept as values
/// join it, in a Fenwick tree over their ranks.
pub fn best_split(z: &[f64], min: usize) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    each_energy(z, min, |t, q| {
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((t, q));
        }
    });
    best.map(|(t, _)| t)
}

/// The largest energy statistic over the splits of `z` with at least `min` values a side.
fn largest_energy(z: &[f64], min: usize) -> Option<f64> {
    let mut best: Option<f64> = None;
    each_energy(z, min, |_, q| best = Some(best.map_or(q, |b| b.max(q))));
    best
}

/// The energy statistic of the split of `z` at `at`.
fn energy(z: &[f64], at: usize) -> f64 {
    let mut found = 0.0;
    each_energy(z, 1, |t, q| {
        if t == at {
            found = q;
        }
    });
    found
}

/// Calls `f(t, Q)` for every split `t` of `z` with at least `min` values a side.
fn each_energy(z: &[f64], min: usize, mut f: impl FnMut(usize, f64)) {
    let len = z.len();
    if len < 2 * min.max(1) {
        return;
    }
    let mut sorted = z.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = |v: f64| sorted.partition_point(|&s| s < v);
    // within[t]: the sum of |z_i − z_j| over i < j < t; from the other end for the right.
    let within = |order: &mut dyn Iterator<Item = usize>| {
        let mut tree = Fenwick::new(len);
        let mut sums = vec![0.0; len + 1];
        let mut acc = 0.0;
        for (k, i) in order.enumerate() {
            let v = z[i];
            let r = rank(v);
            let (below_n, below_sum) = tree.prefix(r);
            let (all_n, all_sum) = (k as f64, tree.total);
            let (above_n, above_sum) = (all_n - below_n, all_sum - below_sum);
            acc += (below_n * v - below_sum) + (above_sum - above_n * v);
            tree.add(r, v);
            sums[k + 1] = acc;
        }
        sums
    };
    let left = within(&mut (0..len));
    let right = within(&mut (0..len).rev());
    let total = left[len];
    let pairs = |n: f64| n * (n - 1.0) / 2.0;
    for t in min.max(1)..=len - min.max(1) {
        let (n, m) = (t as f64, (len - t) as f64);
        let (wl, wr) = (left[t], right[len - t]);
        let cross = total - wl - wr;
        let inner = |w: f64, k: f64| if k > 1.0 { w / pairs(k) } else { 0.0 };
        let e = 2.0 * cross / (n * m) - inner(wl, n) - inner(wr, m);
        f(t, n * m / (n + m) * e);
    }
}

/// Counts and sums of values by rank.
struct Fenwick {
    n: Vec<f64>,
    sum: Vec<f64>,
    total: f64,
}

impl Fenwick {
    fn new(len: usize) -> Fenwick {
        Fenwick {
            n: vec![0.0; len + 1],
            sum: vec![0.0; len + 1],
            total: 0.0,
        }
    }

    /// Adds `v` at rank `r` (0-based).
    fn add(&mut self, r: usize, v: f64) {
        self.total += v;
        let mut i = r + 1;
        while i < self.n.len() {
            self.n[i] += 1.0;
            self.sum[i] += v;
            i += i & i.wrapping_neg();
        }
    }

    /// The count and sum of the values of rank below `r`.
    fn prefix(&self, r: usize) -> (f64, f64) {
        let (mut n, mut s) = (0.0, 0.0);
        let mut i = r;
        while i > 0 {
            n += self.n[i];
            s += self.sum[i];
            i -= i & i.wrapping_neg();
        }
        (n, s)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use super::*;

    /// The energy statistic of the split at `t`, by its definition, pair by pair.
    fn q_naive(z: &[f64], t: usize) -> f64 {
        let (x, y) = z.split_at(t);
        let (n, m) = (x.len() as f64, y.len() as f64);
        let cross: f64 = x
            .iter()
            .flat_map(|a| y.iter().map(move |b| (a - b).abs()))
            .sum();
        let within = |s: &[f64]| {
            let k = s.len() as f64;
            let mut w = 0.0;
            for i in 0..s.len() {
                for j in i + 1..s.len() {
                    w += (s[i] - s[j]).abs();
                }
            }
            if k > 1.0 {
                w / (k * (k - 1.0) / 2.0)
            } else {
                0.0
            }
        };
        n * m / (n + m) * (2.0 * cross / (n * m) - within(x) - within(y))
    }

    fn points(medians: &[f64]) -> Vec<Point> {
        medians
            .iter()
            .enumerate()
            .map(|(i, &m)| Point {
                commit: Some(format!("c{i}").into()),
                dirty: Some(false),
                branch: None,
                time: i as u64,
                median: m,
                ci_low: Some(m * 0.995),
                ci_high: Some(m * 1.005),
                as_measured: None,
                machine_change: Vec::new(),
                probe: None,
                probe_less_wait: None,
            })
            .collect()
    }

    /// A fixed pseudo-random series around 1000 with `noise` percent spread (a small
    /// LCG: the same every run).
    fn noisy(n: usize, level: f64, noise: f64, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                level * (1.0 + noise / 100.0 * u)
            })
            .collect()
    }

    #[test]
    fn the_best_split_is_the_one_the_definition_makes_largest() {
        let mut z = noisy(17, 1000.0, 4.0, 7);
        z.extend(noisy(9, 1150.0, 4.0, 8));
        let t = best_split(&z, 2).unwrap();
        let naive = (2..=z.len() - 2)
            .max_by(|&a, &b| q_naive(&z, a).total_cmp(&q_naive(&z, b)))
            .unwrap();
        assert_eq!(t, naive);
        assert_eq!(t, 17);
        assert_eq!(best_split(&[1.0, 2.0, 3.0], 2), None);
    }

    #[test]
    fn a_step_is_found_at_its_first_run_and_nowhere_else() {
        // 24 runs, from the 13th 30% slower, 4% noise, and one run a busy machine made
        // twice as slow.
        let mut m = noisy(12, 1000.0, 4.0, 1);
        m.extend(noisy(12, 1300.0, 4.0, 2));
        m[3] *= 2.0;
        let found = find(&points(&m), &Options::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].index, 12);
        assert_eq!(found[0].commit.as_deref(), Some("c12"));
        assert!((found[0].change_pct - 30.0).abs() < 5.0, "{found:?}");
        assert!(found[0].p_value <= MAX_P, "{found:?}");
        // Six runs against six, one a commit: called at the 7th (its p-value the
        // search's, at least the 2 of 924 orders that separate the sides at this split,
        // which is the exact Mann-Whitney p of the split taken as fixed).
        let mut few = noisy(6, 1000.0, 4.0, 1);
        few.extend(noisy(6, 1300.0, 4.0, 2));
        let found = find(&points(&few), &Options::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].index, 6, "{found:?}");
        assert!((found[0].p_value_fixed_split - 2.0 / 924.0).abs() < 1e-12);
        assert!(found[0].p_value <= MAX_P, "{found:?}");
        assert_eq!(found[0].permutations, PERMUTATIONS);
    }

    #[test]
    fn the_permutation_p_value_is_the_share_of_all_orders_that_reach_the_split() {
        // Eight runs, four and four apart with some overlap of spread: every one of the
        // 8! orders enumerated (Heap's algorithm), the exact share whose largest statistic
        // over every split reaches the observed one's.
        let z = [
            1000.0, 1030.0, 985.0, 1012.0, 1240.0, 1010.0, 1275.0, 1301.0,
        ];
        let at = best_split(&z, 2).unwrap();
        let observed = energy(&z, at);
        let reach = observed - observed.abs() * 1e-9;
        let mut a = z;
        let mut c = [0usize; 8];
        let (mut all, mut hits) = (1u32, u32::from(largest_energy(&a, 2).unwrap() >= reach));
        let mut i = 0;
        while i < a.len() {
            if c[i] < i {
                a.swap(if i % 2 == 0 { 0 } else { c[i] }, i);
                all += 1;
                hits += u32::from(largest_energy(&a, 2).unwrap() >= reach);
                c[i] += 1;
                i = 0;
            } else {
                c[i] = 0;
                i += 1;
            }
        }
        assert_eq!(all, 40_320);
        let exact = f64::from(hits) / f64::from(all);
        let (estimate, drawn) = search_p(&z, 2, observed);
        // Stopped at the 20th order reaching it: within about a fifth of the exact share
        // (the estimate's error with 20 exceedances), after far fewer than 4,999 orders.
        assert!(drawn < PERMUTATIONS, "{drawn}");
        assert!(
            (estimate / exact - 1.0).abs() < 0.6,
            "estimate {estimate} exact {exact} ({hits} of {all})"
        );
        // The same runs, the same answer.
        assert_eq!(search_p(&z, 2, observed), (estimate, drawn));
    }

    #[test]
    fn a_step_with_too_few_runs_says_how_many_it_needs() {
        // Two runs before a 6% step and eight after: no order of ten runs makes a split
        // of 2 and 8 significant at 0.005 (2 of C(10, 2) = 45 at best).
        let mut m = noisy(2, 1000.0, 0.4, 1);
        m.extend(noisy(8, 1060.0, 0.4, 2));
        let p = points(&m);
        assert!(find(&p, &Options::default()).is_empty());
        let few = too_few_runs(&p, &Options::default()).unwrap();
        assert_eq!((few.index, few.before, few.after), (2, 2, 8));
        assert!((few.smallest_p - 2.0 / 45.0).abs() < 1e-12, "{few:?}");
        // 3 before: 2/C(11, 3) = 0.012; 4: 2/C(12, 4) = 0.004.
        assert_eq!(few.shorter_side_needs, 4, "{few:?}");
        assert!(few.line().contains("needs 4 runs"), "{}", few.line());
        // Those runs given, the step is called where it is.
        let mut more = noisy(4, 1000.0, 0.4, 1);
        more.extend(noisy(8, 1060.0, 0.4, 2));
        let found = find(&points(&more), &Options::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].index, 4);
        assert!(too_few_runs(&points(&more), &Options::default()).is_none());
        // A flat series is not "too few": there is no step to call.
        assert!(too_few_runs(&points(&noisy(10, 1000.0, 0.4, 3)), &Options::default()).is_none());
    }

    /// A standard normal deviate (Box–Muller).
    fn normal(rng: &mut fastrand::Rng) -> f64 {
        let u = rng.f64().max(f64::MIN_POSITIVE);
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * rng.f64()).cos()
    }

    /// `n` run medians around 1000 whose log scatters by `sd` percent, each run's noise
    /// `rho` times the one before's plus a fresh part (AR(1): a busy machine's bursts make
    /// runs slow together; 0 is independent runs).
    fn series(n: usize, sd: f64, rho: f64, rng: &mut fastrand::Rng) -> Vec<f64> {
        let mut e = normal(rng) * sd;
        (0..n)
            .map(|i| {
                if i > 0 {
                    e = rho * e + (1.0 - rho * rho).sqrt() * sd * normal(rng);
                }
                1000.0 * (e / 100.0).exp()
            })
            .collect()
    }

    #[test]
    fn pure_noise_makes_a_false_change_point_in_under_one_history_in_a_hundred() {
        let mut rng = fastrand::Rng::with_seed(49);
        for (rho, kind) in [(0.0, "independent"), (0.5, "bursty, AR(1) rho 0.5")] {
            let mut histories = 0;
            let mut false_steps = Vec::new();
            // The last length past PERMUTE_MAX: its splits held to their count.
            for n in [12, 24, 50, 100, 200] {
                for _ in 0..250 {
                    let m = series(n, 3.0, rho, &mut rng);
                    histories += 1;
                    let found = find(&points(&m), &Options::default());
                    if !found.is_empty() {
                        false_steps.push((n, found));
                    }
                }
            }
            eprintln!(
                "{kind}: false change points in {} of {histories} histories (lengths {:?})",
                false_steps.len(),
                false_steps.iter().map(|(n, _)| *n).collect::<Vec<_>>()
            );
            assert!(
                false_steps.len() * 100 <= histories,
                "{kind}: {} of {histories}: {false_steps:?}",
                false_steps.len()
            );
        }
        // One run a busy machine made twice as slow is no step either.
        for seed in 0..50 {
            let mut m = series(24, 3.0, 0.0, &mut fastrand::Rng::with_seed(seed));
            m[10] *= 2.0;
            let found = find(&points(&m), &Options::default());
            assert!(found.is_empty(), "seed {seed}: {found:?}");
        }
    }

    #[test]
    fn a_step_in_a_long_history_is_found_with_its_splits_counted() {
        // 400 runs scattering by 3%, a 20% step at run 250: past PERMUTE_MAX, the split's
        // Mann-Whitney p times its 397 candidate splits.
        let mut rng = fastrand::Rng::with_seed(400);
        let mut m = series(400, 3.0, 0.0, &mut rng);
        m[250..].iter_mut().for_each(|v| *v *= 1.2);
        let found = find(&points(&m), &Options::default());
        let at: Vec<usize> = found.iter().map(|c| c.index).collect();
        assert_eq!(at, [250], "{found:?}");
        assert_eq!(found[0].permutations, 0);
        assert!(
            found[0].p_value >= found[0].p_value_fixed_split * 397.0 * (1.0 - 1e-9)
                || found[0].p_value == 1.0
        );
    }

    #[test]
    fn a_30pct_step_in_twelve_runs_one_a_commit_is_found_at_its_commit() {
        let mut rng = fastrand::Rng::with_seed(30);
        // Runs that agree within about half a percent (a quiet machine): every time.
        for trial in 0..50 {
            let mut m = series(12, 0.5, 0.0, &mut rng);
            m[6..].iter_mut().for_each(|v| *v *= 1.3);
            let found = find(&points(&m), &Options::default());
            let at: Vec<usize> = found.iter().map(|c| c.index).collect();
            assert_eq!(at, [6], "trial {trial}: {found:?}");
        }
        // Runs that scatter by 3%: at its commit, and nowhere else, in 9 of 10 at least.
        let mut right = 0;
        let mut missed = Vec::new();
        for _ in 0..50 {
            let mut m = series(12, 3.0, 0.0, &mut rng);
            m[6..].iter_mut().for_each(|v| *v *= 1.3);
            let found = find(&points(&m), &Options::default());
            if found.len() == 1 && found[0].index == 6 {
                right += 1;
            } else {
                missed.push((found, m));
            }
        }
        eprintln!("3% scatter: the 30% step at its commit alone in {right} of 50");
        assert!(right >= 45, "{right} of 50; missed: {missed:?}");
    }

    #[test]
    fn noise_alone_has_no_change_point_and_two_steps_are_both_found() {
        for seed in 0..20 {
            let m = noisy(40, 1000.0, 6.0, seed);
            let found = find(&points(&m), &Options::default());
            assert!(found.is_empty(), "seed {seed}: {found:?} in {m:?}");
        }
        let mut m = noisy(10, 1000.0, 2.0, 3);
        m.extend(noisy(10, 1200.0, 2.0, 4));
        m.extend(noisy(10, 900.0, 2.0, 5));
        let found = find(&points(&m), &Options::default());
        let at: Vec<usize> = found.iter().map(|c| c.index).collect();
        assert_eq!(at, [10, 20], "{found:?}");
        assert!(found[1].change_pct < -20.0, "{found:?}");
    }

    #[test]
    fn a_step_smaller_than_the_floor_is_not_a_change_point() {
        let mut m = noisy(10, 1000.0, 0.2, 1);
        m.extend(noisy(10, 1005.0, 0.2, 2));
        // Runs whose own intervals are ±0.5%: the floor is 1% (at least), and a 0.5%
        // step is below it however sure.
        assert!(find(&points(&m), &Options::default()).is_empty());
        let fine = Options {
            min_change_pct: Some(0.1),
            ..Options::default()
        };
        assert_eq!(find(&points(&m), &fine).len(), 1);
    }

    /// `medians` as points whose probe (in the series' statistic) is `probe`.
    fn probed(medians: &[f64], probe: &[f64]) -> Vec<Point> {
        let mut p = points(medians);
        for (p, &v) in p.iter_mut().zip(probe) {
            p.probe_less_wait = Some(v);
        }
        p
    }

    #[test]
    fn a_step_the_machine_probe_took_too_is_the_machines_and_a_commits_is_kept() {
        let options = Options::default();
        let probe_of = |p: &Point| p.probe_less_wait;
        // Both the case and the probe +5% from run 9 on (a second run of one commit):
        // found as measured, the machine's once the probe's share is out.
        let mut case = noisy(9, 1000.0, 1.0, 1);
        case.extend(noisy(15, 1050.0, 1.0, 2));
        let mut probe = noisy(9, 200.0, 1.0, 3);
        probe.extend(noisy(15, 210.0, 1.0, 4));
        let runs = probed(&case, &probe);
        let found = find(&runs, &options);
        assert_eq!(found.iter().map(|c| c.index).collect::<Vec<_>>(), [9]);
        let (code, machine) = machine_steps(&runs, found, probe_of, &options);
        assert!(code.is_empty(), "{code:?}");
        assert_eq!(machine.len(), 1);
        let p = machine[0].probe_change_pct.unwrap();
        assert!((4.0..6.0).contains(&p), "{p}");
        // The same machine step, and a commit's +30% at run 16 with the probe flat there:
        // the commit's kept (the probe's step beside it), the machine's told apart.
        let mut later = case.clone();
        for v in &mut later[16..] {
            *v *= 1.3;
        }
        let runs = probed(&later, &probe);
        let found = find(&runs, &options);
        assert_eq!(found.iter().map(|c| c.index).collect::<Vec<_>>(), [9, 16]);
        let (code, machine) = machine_steps(&runs, found, probe_of, &options);
        assert_eq!(code.iter().map(|c| c.index).collect::<Vec<_>>(), [16]);
        assert_eq!(machine.iter().map(|c| c.index).collect::<Vec<_>>(), [9]);
        assert!(code[0].probe_change_pct.unwrap().abs() < 1.0, "{code:?}");
        // A commit's +30% at the very run the machine stepped +5%: the commit's (what is
        // left, +24%, is far over the floor).
        let mut both = noisy(9, 1000.0, 1.0, 1);
        both.extend(noisy(15, 1365.0, 1.0, 2));
        let runs = probed(&both, &probe);
        let (code, machine) = machine_steps(&runs, find(&runs, &options), probe_of, &options);
        assert_eq!(code.iter().map(|c| c.index).collect::<Vec<_>>(), [9]);
        assert!(machine.is_empty());
        // One machine step slows one loop more than another: the case +9% where the probe
        // took +5.5% is the machine's; +15% (more than twice the probe's, and +9.5% left
        // once it is out) is the commit's, as is +10% where the probe got faster.
        for (case_step, probe_step, machine_s) in [
            (1.09, 1.055, true),
            (1.15, 1.05, false),
            (1.10, 0.95, false),
        ] {
            let mut case = noisy(9, 1000.0, 1.0, 1);
            case.extend(noisy(15, 1000.0 * case_step, 1.0, 2));
            let mut probe = noisy(9, 200.0, 1.0, 3);
            probe.extend(noisy(15, 200.0 * probe_step, 1.0, 4));
            let runs = probed(&case, &probe);
            let found = find(&runs, &options);
            assert_eq!(found.iter().map(|c| c.index).collect::<Vec<_>>(), [9]);
            let (code, machine) = machine_steps(&runs, found, probe_of, &options);
            assert_eq!(
                (machine.len(), code.len()),
                if machine_s { (1, 0) } else { (0, 1) },
                "{case_step} {probe_step}"
            );
        }
        // A probe that scatters by 8% and steps +5% has not stepped by its own floor: a
        // case's +5% there is the commit's.
        let mut wild = noisy(9, 200.0, 8.0, 3);
        wild.extend(noisy(15, 210.0, 8.0, 4));
        let runs = probed(&case, &wild);
        let (code, machine) = machine_steps(&runs, find(&runs, &options), probe_of, &options);
        assert_eq!((code.len(), machine.len()), (1, 0));
        // Without probes on a side: the commit's.
        let mut few = probed(&case, &probe);
        for p in &mut few[..8] {
            p.probe_less_wait = None;
        }
        let (code, machine) = machine_steps(&few, find(&few, &options), probe_of, &options);
        assert_eq!(code.len(), 1);
        assert!(machine.is_empty());
    }

    #[test]
    fn a_probe_that_only_scatters_takes_no_real_step_away() {
        // 200 histories of 24 runs with a step of 10% at a random run, the case and the
        // probe each scattering by 1% (bursty, AR(1) ρ = 0.5), the probe not stepping:
        // every step found is kept as the commit's.
        let mut rng = fastrand::Rng::with_seed(49);
        let options = Options::default();
        let (mut found, mut taken) = (0, 0);
        for _ in 0..200 {
            let at = rng.usize(4..=20);
            let case: Vec<f64> = series(24, 1.0, 0.5, &mut rng)
                .into_iter()
                .enumerate()
                .map(|(i, v)| v * if i >= at { 1.1 } else { 1.0 })
                .collect();
            let probe: Vec<f64> = series(24, 1.0, 0.5, &mut rng)
                .into_iter()
                .map(|v| v / 5.0)
                .collect();
            let runs = probed(&case, &probe);
            let points = find(&runs, &options);
            found += points.iter().filter(|c| c.index == at).count();
            let (_, machine) = machine_steps(&runs, points, |p| p.probe_less_wait, &options);
            taken += machine.iter().filter(|c| c.index == at).count();
        }
        assert!(found >= 190, "{found}");
        assert_eq!(taken, 0);
    }

    #[test]
    fn mann_whitney_agrees_with_worked_examples() {
        // Complete separation of 6 and 6: 2 / C(12, 6) = 0.002165 (scipy.stats.
        // mannwhitneyu(a, b, method="exact")).
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [7.0, 8.0, 9.0, 10.0, 11.0, 12.0];
        assert!((mann_whitney_p(&a, &b) - 2.0 / 924.0).abs() < 1e-12);
        // a = 1..=5, b = 3.5..=7.5: U = 3, exact p = 0.0556 (scipy: 0.05556).
        let p = mann_whitney_p(&[1.0, 2.0, 3.0, 4.0, 5.0], &[3.5, 4.5, 5.5, 6.5, 7.5]);
        assert!((p - 0.05556).abs() < 1e-4, "{p}");
        // An outlier is one rank: as slow as any other slower run.
        let b = [3.5, 4.5, 5.5, 6.5, 7.5];
        let p_out = mann_whitney_p(&[1.0, 2.0, 3.0, 4.0, 500.0], &b);
        assert_eq!(p_out, mann_whitney_p(&[1.0, 2.0, 3.0, 4.0, 8.0], &b));
        assert!((p_out - 0.2222).abs() < 1e-4, "{p_out}");
        // Large samples: the normal approximation (60 and 60 fully separated: far below
        // 1e-10).
        let a: Vec<f64> = (0..60).map(f64::from).collect();
        let b: Vec<f64> = (100..160).map(f64::from).collect();
        assert!(mann_whitney_p(&a, &b) < 1e-10);
        assert_eq!(mann_whitney_p(&[1.0, 1.0], &[1.0, 1.0]), 1.0);
    }
}
