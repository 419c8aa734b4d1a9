//! The hot-symbol diff of two profiles: each function's share of samples before and now,
//! the change in percentage points, and a verdict from a test on the sample counts, so a
//! change inside the sampling noise is not a finding.
//!
//! Both views are compared (`functions` and `symbols`), so a regression in a function
//! whose hot loop is a helper inlined into several callers still shows by its symbol.
//!
//! The test: for each function, a two-proportion z-test on its self sample counts
//! (`self_samples` of `samples`, before and now), two-sided, Bonferroni-corrected over
//! the functions compared at a family-wise 0.1%; a mover must also change by at least
//! 0.5 percentage points. Samples of one run are not fully independent (a periodic
//! sampler and a loop can beat), which the strict threshold allows for: two runs of the
//! same code give no significant mover (tested).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::profile::{Entry, Folded, Profile};

/// Family-wise false-positive rate over all functions of one diff.
pub const ALPHA: f64 = 0.001;
/// The smallest change in share, percentage points, that is reported as significant.
pub const MIN_CHANGE_PP: f64 = 0.5;

/// One function's change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mover {
    /// The function (normalized name).
    pub name: String,
    /// Self share before, percent of samples.
    pub base_pct: f64,
    /// Self share now, percent.
    pub new_pct: f64,
    /// `new_pct - base_pct`, percentage points.
    pub change_pp: f64,
    /// Self samples before.
    pub base_samples: u64,
    /// Self samples now.
    pub new_samples: u64,
    /// The z statistic of the two-proportion test.
    pub z: f64,
    /// Its two-sided p-value.
    pub p_value: f64,
    /// Whether the change is a finding: p-value under the corrected threshold and at
    /// least [`MIN_CHANGE_PP`].
    pub significant: bool,
}

/// A diff (`sparkles.diff/1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diff {
    /// `sparkles.diff/1`.
    pub schema: String,
    /// The case (or the files) compared.
    pub case: String,
    /// Samples before.
    pub base_samples: u64,
    /// Samples now.
    pub new_samples: u64,
    /// The per-function threshold the p-values were held to.
    pub threshold: f64,
    /// Every function of either profile, most significant first.
    pub movers: Vec<Mover>,
}

impl Diff {
    /// The significant movers.
    pub fn significant(&self) -> impl Iterator<Item = &Mover> {
        self.movers.iter().filter(|m| m.significant)
    }
}

/// The complementary error function (Numerical Recipes' `erfcc`, fractional error under
/// 1.2e-7 everywhere), for the normal distribution's tail.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Two-proportion z-test: `(z, two-sided p)` for `a` of `n` against `b` of `m`.
pub fn two_proportion(a: u64, n: u64, b: u64, m: u64) -> (f64, f64) {
    if n == 0 || m == 0 {
        return (0.0, 1.0);
    }
    let (p1, p2) = (a as f64 / n as f64, b as f64 / m as f64);
    let pooled = (a + b) as f64 / (n + m) as f64;
    let se = (pooled * (1.0 - pooled) * (1.0 / n as f64 + 1.0 / m as f64)).sqrt();
    if se == 0.0 {
        return (0.0, 1.0);
    }
    let z = (p2 - p1) / se;
    (z, erfc(z.abs() / std::f64::consts::SQRT_2))
}

/// The diff of two profiles over both views: each name of the `functions` view
/// (inlined functions their own) and of the `symbols` view (the containing symbol, where
/// a regression inside a helper inlined into several callers shows), a name in both
/// taken from the view where it moved most.
pub fn diff(case: &str, base: &Profile, new: &Profile) -> Diff {
    let index = |rows: &[Entry]| -> BTreeMap<String, u64> {
        rows.iter()
            .map(|e: &Entry| (e.name.clone(), e.self_samples))
            .collect()
    };
    let views = [
        (index(&base.functions), index(&new.functions)),
        (index(&base.symbols), index(&new.symbols)),
    ];
    let names: BTreeSet<&String> = views
        .iter()
        .flat_map(|(b, n)| b.keys().chain(n.keys()))
        .collect();
    let threshold = ALPHA / names.len().max(1) as f64;
    let pct = |c: u64, total: u64| 100.0 * c as f64 / total.max(1) as f64;
    let mut movers: Vec<Mover> = names
        .into_iter()
        .filter_map(|name| {
            views
                .iter()
                .filter(|(b, n)| b.contains_key(name) || n.contains_key(name))
                .map(|(b, n)| {
                    let bs = b.get(name).copied().unwrap_or(0);
                    let ns = n.get(name).copied().unwrap_or(0);
                    let (z, p) = two_proportion(bs, base.samples, ns, new.samples);
                    let (base_pct, new_pct) = (pct(bs, base.samples), pct(ns, new.samples));
                    let change_pp = new_pct - base_pct;
                    Mover {
                        name: name.clone(),
                        base_pct,
                        new_pct,
                        change_pp,
                        base_samples: bs,
                        new_samples: ns,
                        z,
                        p_value: p,
                        significant: p < threshold && change_pp.abs() >= MIN_CHANGE_PP,
                    }
                })
                .max_by(|a, b| a.z.abs().total_cmp(&b.z.abs()))
        })
        .collect();
    movers.sort_by(|a, b| {
        b.significant
            .cmp(&a.significant)
            .then(b.z.abs().total_cmp(&a.z.abs()))
            .then(b.change_pp.abs().total_cmp(&a.change_pp.abs()))
            .then(a.name.cmp(&b.name))
    });
    Diff {
        schema: "sparkles.diff/1".into(),
        case: case.into(),
        base_samples: base.samples,
        new_samples: new.samples,
        threshold,
        movers,
    }
}

/// The diff as a table: significant movers first.
pub fn table(d: &Diff, top: usize) -> String {
    let mut out = format!(
        "{}: {} samples before, {} now; significant: p < {:.1e} and |change| >= {MIN_CHANGE_PP} pp\n{:>8} {:>8} {:>8}  {:<12} name\n",
        d.case, d.base_samples, d.new_samples, d.threshold, "before", "now", "change", "verdict"
    );
    for m in d.movers.iter().take(top) {
        out.push_str(&format!(
            "{:>7.2}% {:>7.2}% {:>+7.2}pp  {:<12} {}\n",
            m.base_pct,
            m.new_pct,
            m.change_pp,
            if m.significant {
                "significant"
            } else {
                "noise"
            },
            m.name
        ));
    }
    out
}

/// A differential flamegraph (inferno's): frames coloured by how their share moved,
/// widths from the new profile.
pub fn svg(d: &Diff, base: &Folded, new: &Folded) -> Result<String, crate::Error> {
    let mut diffed = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options::default(),
        base.text().as_bytes(),
        new.text().as_bytes(),
        &mut diffed,
    )
    .map_err(|source| crate::Error::Render {
        what: "differential flamegraph",
        source,
    })?;
    let text = String::from_utf8_lossy(&diffed).into_owned();
    if text.is_empty() {
        return Err(crate::Error::Empty);
    }
    let mut options = inferno::flamegraph::Options::default();
    options.title = format!(
        "{}: {} samples before, {} now",
        d.case, d.base_samples, d.new_samples
    );
    options.subtitle = Some("red grew, blue shrank; widths are now's".into());
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut options, text.lines(), &mut out).map_err(|source| {
        crate::Error::Render {
            what: "flamegraph",
            source,
        }
    })?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfc_matches_known_values() {
        for (x, want) in [
            (0.0, 1.0),
            (0.5, 0.479_500_122),
            (1.0, 0.157_299_207),
            (2.0, 0.004_677_735),
            (-1.0, 1.842_700_793),
        ] {
            assert!((erfc(x) - want).abs() < 1e-6, "erfc({x}) = {}", erfc(x));
        }
    }

    #[test]
    fn proportions_test() {
        // Same shares: no evidence.
        let (z, p) = two_proportion(500, 1000, 500, 1000);
        assert!(z.abs() < 1e-12 && (p - 1.0).abs() < 1e-6);
        // 50% against 60% of 1000: z about 4.5.
        let (z, p) = two_proportion(500, 1000, 600, 1000);
        assert!((z - 4.5).abs() < 0.1, "{z}");
        assert!(p < 1e-4, "{p}");
    }
}
