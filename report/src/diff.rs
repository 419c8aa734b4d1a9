//! The hot-symbol diff of two profiles: each function's share of samples before and now,
//! the change in percentage points, and a verdict from a test on the sample counts, so a
//! change inside the sampling noise is not a finding.
//!
//! Both views are compared (`functions` and `symbols`), so a regression in a function
//! whose hot loop is a helper inlined into several callers still shows by its symbol.
//!
//! The test: the samples of one capture are not independent draws (allocator and
//! collector phases, a loop beating with a periodic sampler, throttling by the kernel),
//! so a function's share varies across a capture more than a binomial count says, and a
//! binomial test finds movers between two runs of the same code. The variance of each
//! share is therefore taken from the capture itself, by batch means: the capture's
//! samples are cut into [`crate::profile::BLOCKS`] consecutive blocks (`Profile::block_samples`, each
//! row's `blocks`), and the variance of the share is that of its per-block shares over
//! the number of blocks, never less than the binomial variance. Base and new are
//! compared by Welch's t-test on the two shares with those variances (Welch–
//! Satterthwaite degrees of freedom), two-sided, Bonferroni-corrected over every test
//! run (each name in each view that has it: a name in both views is tested twice and
//! keeps the larger |t|) at a family-wise 0.1%; a mover must also change by at least 0.5
//! percentage points. A profile without block counts (too short a capture, or saved by an older
//! sparkles) falls back to the binomial variance, and the diff says so.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::profile::{BlockedBy, Entry, Folded, Profile};

/// Family-wise false-positive rate over all functions of one diff.
pub const ALPHA: f64 = 0.001;
/// The smallest change in share, percentage points, that is reported as significant.
pub const MIN_CHANGE_PP: f64 = 0.5;

/// A kernel function's share moves between runs of the same code with the kernel's own
/// state (page lists, caches, cgroup accounting), which no single capture shows: each
/// side's standard error is at least this fraction of the share. Measured on the demo
/// suite (five profiled runs, 2026-12-01): `__list_del_entry_valid_or_report` in
/// pages/touch/4MiB took 2.4% to 6.1% of the samples (a relative spread of 43%), while
/// over every function at 1% or more the median spread was 5% (the sampling noise the
/// blocks measure). User code gets no such floor: a tenth more work in it stays findable.
pub const KERNEL_RUN_SPREAD: f64 = 0.25;

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
    /// The test statistic: Welch's t of the two shares (a z where both variances are
    /// binomial).
    pub z: f64,
    /// Its degrees of freedom.
    #[serde(default)]
    pub df: f64,
    /// Its two-sided p-value.
    pub p_value: f64,
    /// Whether the change is a finding: p-value under the corrected threshold and at
    /// least [`MIN_CHANGE_PP`].
    pub significant: bool,
    /// The significant mover this one is part of: a function inlined only into that
    /// symbol, which moved the same way (its points are inside that mover's, not added
    /// to them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part_of: Option<String>,
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
    /// How each side's variance was estimated: `batch_means` over its blocks, or
    /// `binomial` (a capture too short to cut, or a profile without block counts).
    #[serde(default)]
    pub variance: Sides<String>,
    /// What each side's blocks hold, said for people ("14 blocks of whole rounds of its
    /// phases, 1,690 samples a round"); empty where it has none.
    #[serde(default)]
    pub blocks: Sides<String>,
    /// What weakens each side's shares: throttling, loss, truncated stacks.
    #[serde(default)]
    pub quality: Sides<Quality>,
    /// Each thing that weakens the comparison, said for people (also in `table`).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Every function of either profile: the significant ones first, each group by the
    /// size of its change.
    pub movers: Vec<Mover>,
}

impl Diff {
    /// The significant movers.
    pub fn significant(&self) -> impl Iterator<Item = &Mover> {
        self.movers.iter().filter(|m| m.significant)
    }

    /// The significant movers, each inlining chain once: a function inlined into a
    /// mover that moved the same way is left to it.
    pub fn findings(&self) -> impl Iterator<Item = &Mover> {
        self.significant().filter(|m| m.part_of.is_none())
    }

    /// How far this diff, read as a null (two processes of the same code), moved the
    /// function `name`, in points whatever the sign; for a function it does not list, the
    /// widest move it has: what a mover between the sides must exceed.
    pub fn disagreement(&self, name: &str) -> f64 {
        self.movers.iter().find(|n| n.name == name).map_or_else(
            || {
                self.movers
                    .iter()
                    .map(|m| m.change_pp.abs())
                    .fold(0.0, f64::max)
            },
            |n| n.change_pp.abs(),
        )
    }

    /// Holds each significant mover of this diff (a variant's process against a base
    /// process) to `null` (a second base process against the same first one): it stays a
    /// finding only where it moved by more than the null moved it. The others are
    /// unmarked and said in `warnings`; each is returned, its name and the line said.
    pub fn hold_to_null(&mut self, null: &Diff) -> Vec<(String, String)> {
        let mut held = Vec::new();
        for m in self.movers.iter_mut().filter(|m| m.significant) {
            let disagreement = null.disagreement(&m.name);
            if m.change_pp.abs() <= disagreement {
                m.significant = false;
                held.push((
                    m.name.clone(),
                    format!(
                        "{} {:+.1} pp: {disagreement:.1} pp between two processes of the base",
                        m.name, m.change_pp
                    ),
                ));
            }
        }
        for (_, line) in &held {
            self.warnings.push(format!("not confirmed: {line}"));
        }
        held
    }
}

/// What weakens a profile's shares.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Quality {
    /// How often and how long the kernel throttled the sampled events.
    pub throttled: sparkles_perf_data::throttle::Throttled,
    /// Samples and records the kernel dropped.
    pub lost: u64,
    /// Stacks cut short, percent of samples.
    pub truncated_pct: f64,
}

/// Truncated stacks above this share of samples weaken a diff (percent).
pub const TRUNCATED_WARN_PCT: f64 = 5.0;

impl Quality {
    fn of(p: &Profile) -> Quality {
        Quality {
            throttled: p.throttled,
            lost: p.lost,
            truncated_pct: p.unwinding.truncated_pct,
        }
    }

    /// What of this weakens a comparison, for `side` ("base" or "new").
    fn warnings(&self, side: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.throttled.count > 0 {
            out.push(format!(
                "{side} was throttled {} times ({:.3} s in all): its samples lean toward what runs after each tick",
                self.throttled.count, self.throttled.seconds
            ));
        }
        if self.lost > 0 {
            out.push(format!(
                "{side} lost {} samples or records: its shares miss what ran meanwhile",
                self.lost
            ));
        }
        if self.truncated_pct > TRUNCATED_WARN_PCT {
            out.push(format!(
                "{side} truncated {:.1}% of its stacks: the shares of deep frames are low there",
                self.truncated_pct
            ));
        }
        out
    }
}

/// Base's and new's figure of one kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sides<T> {
    /// The base profile's.
    pub base: T,
    /// The new profile's.
    pub new: T,
}

/// A row's share of its capture's samples, the variance of that estimate, and the
/// degrees of freedom the variance has.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share {
    /// Self samples over samples.
    pub share: f64,
    /// Variance of `share`.
    pub var: f64,
    /// Degrees of freedom of `var`.
    pub df: f64,
}

/// Whether `p` carries block counts for the batch-means variance.
fn blocked(p: &Profile) -> bool {
    p.block_samples.len() >= 2
}

/// The share of a row with `self_samples` (per block `blocks`) in `p`: its variance by
/// batch means where `p` is cut into blocks (never under the binomial variance), else
/// binomial.
pub fn share(p: &Profile, self_samples: u64, blocks: &[u32]) -> Share {
    let n = p.samples.max(1) as f64;
    let share = self_samples as f64 / n;
    let binomial = Share {
        share,
        var: share * (1.0 - share) / n,
        df: (n - 1.0).max(1.0),
    };
    if !blocked(p) || (!blocks.is_empty() && blocks.len() != p.block_samples.len()) {
        return binomial;
    }
    let shares: Vec<f64> = p
        .block_samples
        .iter()
        .enumerate()
        .filter(|(_, &size)| size > 0)
        .map(|(b, &size)| f64::from(blocks.get(b).copied().unwrap_or(0)) / size as f64)
        .collect();
    let k = shares.len() as f64;
    if k < 2.0 {
        return binomial;
    }
    let spread = shares.iter().map(|s| (s - share).powi(2)).sum::<f64>() / (k - 1.0);
    let var = spread / k;
    if var <= binomial.var {
        return binomial;
    }
    Share {
        share,
        var,
        df: k - 1.0,
    }
}

/// Welch's t-test of two shares: `(t, degrees of freedom, two-sided p)`.
pub fn welch(base: Share, new: Share) -> (f64, f64, f64) {
    let var = base.var + new.var;
    if var <= 0.0 {
        return (0.0, 0.0, 1.0);
    }
    let t = (new.share - base.share) / var.sqrt();
    let df =
        var * var / (base.var * base.var / base.df.max(1.0) + new.var * new.var / new.df.max(1.0));
    // The t distribution's two-sided tail: I_{df/(df+t^2)}(df/2, 1/2).
    let p = puruspe::betai(df / 2.0, 0.5, df / (df + t * t));
    (t, df, p.clamp(0.0, 1.0))
}

/// The diff of two profiles over both views: each name of the `functions` view
/// (inlined functions their own) and of the `symbols` view (the containing symbol, where
/// a regression inside a helper inlined into several callers shows), a name in both
/// taken from the view where it moved most.
pub fn diff(case: &str, base: &Profile, new: &Profile) -> Diff {
    let index = |rows: &[Entry]| -> BTreeMap<String, (u64, Vec<u32>, bool)> {
        rows.iter()
            .map(|e: &Entry| {
                let kernel = e.kind == crate::profile::Kind::Kernel;
                (e.name.clone(), (e.self_samples, e.blocks.clone(), kernel))
            })
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
    // Bonferroni over every test run: each name once in each view that has it (the
    // larger |t| of two views is kept, so both count).
    let tests: usize = names
        .iter()
        .map(|name| {
            views
                .iter()
                .filter(|(b, n)| b.contains_key(*name) || n.contains_key(*name))
                .count()
        })
        .sum();
    let threshold = ALPHA / tests.max(1) as f64;
    let pct = |c: u64, total: u64| 100.0 * c as f64 / total.max(1) as f64;
    let mut movers: Vec<Mover> = names
        .into_iter()
        .filter_map(|name| {
            views
                .iter()
                .filter(|(b, n)| b.contains_key(name) || n.contains_key(name))
                .map(|(b, n)| {
                    let none = (0, Vec::new(), false);
                    let (bs, b_blocks, b_kernel) = b.get(name).unwrap_or(&none);
                    let (ns, n_blocks, n_kernel) = n.get(name).unwrap_or(&none);
                    let mut shares = (share(base, *bs, b_blocks), share(new, *ns, n_blocks));
                    if *b_kernel || *n_kernel {
                        for s in [&mut shares.0, &mut shares.1] {
                            s.var = s.var.max((KERNEL_RUN_SPREAD * s.share).powi(2));
                        }
                    }
                    let (z, df, p) = welch(shares.0, shares.1);
                    let (base_pct, new_pct) = (pct(*bs, base.samples), pct(*ns, new.samples));
                    let change_pp = new_pct - base_pct;
                    Mover {
                        name: name.clone(),
                        base_pct,
                        new_pct,
                        change_pp,
                        base_samples: *bs,
                        new_samples: *ns,
                        z,
                        df,
                        p_value: p,
                        significant: p < threshold && change_pp.abs() >= MIN_CHANGE_PP,
                        part_of: None,
                    }
                })
                .max_by(|a, b| a.z.abs().total_cmp(&b.z.abs()))
        })
        .collect();
    // A function inlined only into one symbol, both moving the same way: one finding.
    let inlined_into: BTreeMap<&str, &str> = [base, new]
        .iter()
        .flat_map(|p| p.functions.iter())
        .filter_map(|e| Some((e.name.as_str(), e.inlined_into.as_deref()?)))
        .collect();
    let moved: BTreeMap<String, f64> = movers
        .iter()
        .filter(|m| m.significant)
        .map(|m| (m.name.clone(), m.change_pp))
        .collect();
    for m in movers.iter_mut().filter(|m| m.significant) {
        if let Some(symbol) = inlined_into.get(m.name.as_str()) {
            if moved
                .get(*symbol)
                .is_some_and(|pp| pp.signum() == m.change_pp.signum())
            {
                m.part_of = Some(symbol.to_string());
            }
        }
    }
    // Findings first, each group by how far it moved (the test's t is in the table).
    movers.sort_by(|a, b| {
        b.significant
            .cmp(&a.significant)
            .then(b.change_pp.abs().total_cmp(&a.change_pp.abs()))
            .then(b.z.abs().total_cmp(&a.z.abs()))
            .then(a.name.cmp(&b.name))
    });
    Diff {
        schema: "sparkles.diff/1".into(),
        case: case.into(),
        base_samples: base.samples,
        new_samples: new.samples,
        threshold,
        variance: Sides {
            base: method(base).into(),
            new: method(new).into(),
        },
        blocks: Sides {
            base: blocks(base),
            new: blocks(new),
        },
        warnings: [("base", base), ("new", new)]
            .into_iter()
            .flat_map(|(side, p)| Quality::of(p).warnings(side))
            .chain(
                [("base", base), ("new", new)]
                    .into_iter()
                    .filter_map(|(side, p)| {
                        crate::profile::too_few_rounds(p).map(|w| format!("{side}: {w}"))
                    }),
            )
            .chain(
                [("base", base), ("new", new)]
                    .into_iter()
                    .filter(|(_, p)| !blocked(p))
                    .map(|(side, _)| {
                        format!(
                            "{side} has no per-block counts (a capture under {} samples, or a profile saved by an older sparkles): its shares are tested as independent draws, which overstates what moved",
                            crate::profile::MIN_BLOCKED_SAMPLES
                        )
                    }),
            )
            .collect(),
        quality: Sides {
            base: Quality::of(base),
            new: Quality::of(new),
        },
        movers,
    }
}

/// What a profile's blocks hold, for people.
fn blocks(p: &Profile) -> String {
    let k = p.block_samples.len();
    let round = p.round_samples.unwrap_or(0.0);
    match p.blocked_by {
        _ if k == 0 => String::new(),
        Some(BlockedBy::Rounds) => {
            format!("{k} blocks of whole rounds of its phases, {round:.0} samples a round")
        }
        Some(BlockedBy::Iterations) => {
            format!("{k} blocks of whole iterations, {round:.1} samples an iteration")
        }
        _ => format!("{k} blocks of samples"),
    }
}

/// How a profile's variances are estimated.
fn method(p: &Profile) -> &'static str {
    if blocked(p) {
        "batch_means"
    } else {
        "binomial"
    }
}

/// The diff as a table: significant movers first.
pub fn table(d: &Diff, top: usize) -> String {
    let mut out: String = d
        .warnings
        .iter()
        .map(|w| format!("warning: {w}\n"))
        .collect();
    out += &format!(
        "{}: {} samples before, {} now; significant: p < {:.1e} and |change| >= {MIN_CHANGE_PP} pp\n",
        d.case, d.base_samples, d.new_samples, d.threshold
    );
    if !d.blocks.base.is_empty() || !d.blocks.new.is_empty() {
        let or_none = |s: &str| {
            if s.is_empty() {
                "none".to_string()
            } else {
                s.to_string()
            }
        };
        out += &format!(
            "variance from blocks: before {}; now {}\n",
            or_none(&d.blocks.base),
            or_none(&d.blocks.new)
        );
    }
    out += &format!(
        "{:>8} {:>8} {:>8}  {:<12} name\n",
        "before", "now", "change", "verdict"
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
            match &m.part_of {
                Some(s) => format!("{} (inlined into {s}: part of its change)", m.name),
                None => m.name.clone(),
            }
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
    fn the_t_tail_matches_known_values() {
        // Two-sided p of t = 2.086 with 20 degrees of freedom is 0.05; of t = 2.845, 0.01.
        let at = |t: f64, df: f64| puruspe::betai(df / 2.0, 0.5, df / (df + t * t));
        assert!((at(2.086, 20.0) - 0.05).abs() < 1e-3, "{}", at(2.086, 20.0));
        assert!((at(2.845, 20.0) - 0.01).abs() < 1e-3, "{}", at(2.845, 20.0));
        // Many degrees of freedom: the normal's 1.96 at 0.05.
        assert!((at(1.96, 1e6) - 0.05).abs() < 1e-3);
    }

    fn diff_of(movers: &[(&str, f64, bool)]) -> Diff {
        Diff {
            schema: "sparkles.diff/1".into(),
            case: "c".into(),
            base_samples: 1000,
            new_samples: 1000,
            threshold: 0.01,
            variance: Sides::default(),
            blocks: Sides::default(),
            quality: Sides::default(),
            warnings: Vec::new(),
            movers: movers
                .iter()
                .map(|&(name, change_pp, significant)| Mover {
                    name: name.into(),
                    base_pct: 20.0,
                    new_pct: 20.0 + change_pp,
                    change_pp,
                    base_samples: 200,
                    new_samples: 200,
                    z: 0.0,
                    df: 0.0,
                    p_value: if significant { 1e-6 } else { 0.5 },
                    significant,
                    part_of: None,
                })
                .collect(),
        }
    }

    #[test]
    fn a_mover_is_held_to_what_two_processes_of_the_base_disagree_on() {
        // B1 against A1: `code` moved 5 pp, `memcpy` 2 pp, `lock` 1.5 pp (all
        // significant), `rest` 0.3 pp (noise).
        let mut paired = diff_of(&[
            ("code", 5.0, true),
            ("memcpy", 2.0, true),
            ("lock", 1.5, true),
            ("rest", 0.3, false),
        ]);
        // A2 against A1, the same code: memcpy moved 3 pp the other way (where the
        // buffers landed), code 1 pp; lock is not listed, so the widest move (3 pp) holds.
        let null = diff_of(&[("memcpy", -3.0, true), ("code", 1.0, false)]);
        let held = paired.hold_to_null(&null);
        let names: Vec<&str> = held.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["memcpy", "lock"]);
        let findings: Vec<&str> = paired.findings().map(|m| m.name.as_str()).collect();
        assert_eq!(findings, ["code"]);
        assert!(!paired.movers[3].significant);
        assert_eq!(
            paired.warnings,
            [
                "not confirmed: memcpy +2.0 pp: 3.0 pp between two processes of the base",
                "not confirmed: lock +1.5 pp: 3.0 pp between two processes of the base"
            ]
        );
        // A null that moved nothing holds nothing back.
        let mut again = diff_of(&[("code", 5.0, true), ("memcpy", -2.0, true)]);
        assert!(again.hold_to_null(&diff_of(&[])).is_empty());
        assert_eq!(again.findings().count(), 2);
    }

    #[test]
    fn equal_shares_are_no_evidence_and_a_tenth_of_the_samples_is() {
        let p = |samples| Profile {
            samples,
            ..crate::profile::Builder::new()
                .finish("x", "cycles", 0, crate::profile::Unwinding::default())
                .0
        };
        let (a, b) = (p(1000), p(1000));
        let (t, _, pv) = welch(share(&a, 500, &[]), share(&b, 500, &[]));
        assert!(t.abs() < 1e-12 && (pv - 1.0).abs() < 1e-9);
        // 50% against 60% of 1000, binomial: about 4.5 standard errors.
        let (t, _, pv) = welch(share(&a, 500, &[]), share(&b, 600, &[]));
        assert!((t - 4.5).abs() < 0.1 && pv < 1e-4, "{t} {pv}");
    }

    #[test]
    fn the_correction_counts_each_name_in_each_view_it_is_tested_in() {
        let entry = |name: &str, samples: u64| Entry {
            name: name.to_string(),
            module: None,
            file: None,
            line: None,
            self_: samples,
            total: samples,
            self_pct: 0.0,
            total_pct: 0.0,
            self_samples: samples,
            blocks: Vec::new(),
            kind: crate::profile::Kind::User,
            inlined_into: None,
        };
        let profile = |functions: Vec<Entry>, symbols: Vec<Entry>| Profile {
            samples: 1000,
            functions,
            symbols,
            ..crate::profile::Builder::new()
                .finish("x", "cycles", 0, crate::profile::Unwinding::default())
                .0
        };
        // Three names: `main` and `work` in both views, `helper` (inlined into `work`)
        // in the functions view alone: five tests, each held to 0.1% / 5.
        let base = profile(
            vec![entry("main", 500), entry("work", 300), entry("helper", 200)],
            vec![entry("main", 500), entry("work", 500)],
        );
        let d = diff("c", &base, &base);
        assert!((d.threshold - ALPHA / 5.0).abs() < 1e-15, "{}", d.threshold);
        assert_eq!(d.findings().count(), 0);
    }
}
