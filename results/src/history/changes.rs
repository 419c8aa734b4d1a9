//! Change points in a case's series of run medians: where they are by e-divisive means
//! (Matteson and James, "A Nonparametric Approach for Multiple Change Point Analysis of
//! Multivariate Data", 2014: the split that makes the two sides' energy distance largest),
//! how sure by a test of the two sides in place of the method's permutation test, as
//! Hunter does (Fleming et al., "Hunter: Using Change Point Detection to Hunt for
//! Performance Regressions", ICPE 2023; now Apache Otava) to be deterministic and fast:
//! Hunter's is Student's t; ours the Mann–Whitney U test, by ranks, since a busy machine
//! makes outlier runs that a t-test's variance takes as noise everywhere. An accepted split is looked at again on each side (binary segmentation);
//! each change point is then measured against its neighbours: the runs between the change
//! points before and after it. docs/design.md says why this method.

use serde::Serialize;

use super::Point;

/// How sure and how large a step must be to be called a change point.
#[derive(Debug, Clone)]
pub struct Options {
    /// The largest p-value of a change point's test (Hunter's default: 0.001).
    pub max_p: f64,
    /// The smallest step, percent of the level before it; `None`: twice the runs' own
    /// typical interval (the median over the series of each run's 95% interval half-width,
    /// relative to its median), at least 1%, so that a step a single run could not
    /// resolve is not called one.
    pub min_change_pct: Option<f64>,
    /// The fewest runs on each side of a change point.
    pub min_runs: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_p: 0.001,
            min_change_pct: None,
            min_runs: 2,
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
    /// The Mann–Whitney U test of those two sides' run medians, two-sided.
    pub p_value: f64,
    /// The two levels, ns.
    pub before: f64,
    pub after: f64,
    /// Where the machine changed at this run (CPU, kernel, toolchain): the step is not
    /// the commit's alone.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub machine_change: Vec<String>,
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

/// The smallest step `options` calls a change point in `points`, percent.
pub fn min_change_pct(points: &[Point], options: &Options) -> f64 {
    options.min_change_pct.unwrap_or_else(|| {
        let mut halves: Vec<f64> = points
            .iter()
            .filter_map(|p| Some((p.ci_high? - p.ci_low?) / 2.0 / p.median * 100.0))
            .filter(|h| h.is_finite())
            .collect();
        halves.sort_by(f64::total_cmp);
        let typical = halves.get(halves.len() / 2).copied().unwrap_or(0.0);
        (2.0 * typical).max(1.0)
    })
}

/// The change points of `points` (in time order), in order.
pub fn find(points: &[Point], options: &Options) -> Vec<ChangePoint> {
    let x: Vec<f64> = points.iter().map(|p| p.median).collect();
    let floor = min_change_pct(points, options);
    let min_runs = options.min_runs.max(1);
    let accept = |before: &[f64], after: &[f64]| {
        let (change, p) = step(before, after);
        p <= options.max_p && change.abs() >= floor
    };
    let mut splits = Vec::new();
    let mut todo = vec![(0, x.len())];
    while let Some((a, b)) = todo.pop() {
        let Some(at) = best_split(&x[a..b], min_runs).map(|t| a + t) else {
            continue;
        };
        if accept(&x[a..at], &x[at..b]) {
            splits.push(at);
            todo.push((a, at));
            todo.push((at, b));
        }
    }
    splits.sort_unstable();
    // Each measured against its neighbours; one that no longer holds there (its
    // neighbours closer than the segment it was found in) is dropped.
    let mut kept: Vec<usize> = Vec::new();
    for (i, &at) in splits.iter().enumerate() {
        let from = kept.last().copied().unwrap_or(0);
        let to = splits.get(i + 1).copied().unwrap_or(x.len());
        if accept(&x[from..at], &x[at..to]) {
            kept.push(at);
        }
    }
    kept.iter()
        .enumerate()
        .map(|(i, &at)| {
            let from = if i == 0 { 0 } else { kept[i - 1] };
            let to = kept.get(i + 1).copied().unwrap_or(x.len());
            let (change_pct, p_value) = step(&x[from..at], &x[at..to]);
            ChangePoint {
                index: at,
                commit: points[at].commit.as_deref().map(str::to_string),
                time: points[at].time,
                change_pct,
                p_value,
                before: median(&x[from..at]),
                after: median(&x[at..to]),
                machine_change: points[at].machine_change.clone(),
            }
        })
        .collect()
}

/// The step from `before` to `after`: the change of their medians in percent, and the
/// Mann–Whitney two-sided p.
fn step(before: &[f64], after: &[f64]) -> (f64, f64) {
    let (b, a) = (median(before), median(after));
    ((a / b - 1.0) * 100.0, mann_whitney_p(before, after))
}

fn median(x: &[f64]) -> f64 {
    let mut s = x.to_vec();
    s.sort_by(f64::total_cmp);
    crate::stats::quantile_sorted(&s, 0.5)
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
    let len = z.len();
    if len < 2 * min || len < 2 {
        return None;
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
    let mut best: Option<(usize, f64)> = None;
    for t in min..=len - min {
        let (n, m) = (t as f64, (len - t) as f64);
        let (wl, wr) = (left[t], right[len - t]);
        let cross = total - wl - wr;
        let inner = |w: f64, k: f64| if k > 1.0 { w / pairs(k) } else { 0.0 };
        let e = 2.0 * cross / (n * m) - inner(wl, n) - inner(wr, m);
        let q = n * m / (n + m) * e;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((t, q));
        }
    }
    best.map(|(t, _)| t)
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
                machine_change: Vec::new(),
                probe: None,
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
        assert!(found[0].p_value <= 0.001, "{found:?}");
        // Six runs a side cannot be told apart at p ≤ 0.001 by ranks (2 / C(12, 6)): no
        // change point is called on too few runs.
        let mut few = noisy(6, 1000.0, 4.0, 1);
        few.extend(noisy(6, 1300.0, 4.0, 2));
        assert!(find(&points(&few), &Options::default()).is_empty());
        let lenient = Options {
            max_p: 0.01,
            ..Options::default()
        };
        assert_eq!(find(&points(&few), &lenient).len(), 1);
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
