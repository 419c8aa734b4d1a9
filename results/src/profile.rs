//! What the `--profile` pass gives each case: its summary (the `profile` key of its JSON
//! row) and its metric columns. The pass itself, before and after the cases, is
//! `profiling`'s.

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use crate::metric::{
    Availability, MetricClass, MetricDescriptor, MetricFormat, MetricValue, Source,
};

/// The event name of an allocation profile's samples (`--profile=alloc`).
pub const ALLOC_EVENT: &str = "sparkles:alloc";
/// The event name of its samples of bytes still live when their iteration ended.
pub const ALLOC_LIVE_EVENT: &str = "sparkles:alloc-live";

/// A viewer's file format for `--profile-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ViewerFormat {
    /// speedscope's file format (profile.speedscope.json).
    Speedscope,
    /// The Firefox Profiler's processed format, gzipped (profile.firefox.json.gz).
    Firefox,
}

impl ViewerFormat {
    /// The file it is written to beside a capture.
    pub fn file_name(self) -> &'static str {
        match self {
            ViewerFormat::Speedscope => "profile.speedscope.json",
            ViewerFormat::Firefox => "profile.firefox.json.gz",
        }
    }

    /// The file of one of a case's other profiles (`-alloc`: profile-alloc.speedscope.json).
    pub fn file_name_with(self, suffix: &str) -> String {
        let name = self.file_name();
        match name.split_once('.') {
            Some((stem, rest)) => format!("{stem}{suffix}.{rest}"),
            None => name.to_string(),
        }
    }

    /// The viewer, in words.
    pub fn viewer(self) -> &'static str {
        match self {
            ViewerFormat::Speedscope => "speedscope",
            ViewerFormat::Firefox => "Firefox Profiler",
        }
    }
}

/// Id of the samples metric.
pub const SAMPLES: &str = "profile.samples";
/// Id of the lost-records metric.
pub const LOST: &str = "profile.lost";

/// The profile columns; `sampling_unavailable` is why sampling cannot run here, if it cannot.
pub fn descriptors(sampling_unavailable: Option<&str>) -> Vec<MetricDescriptor> {
    let entry =
        |id: &'static str, header: &'static str, description: &'static str| MetricDescriptor {
            id: id.into(),
            header: header.into(),
            description: description.into(),
            format: MetricFormat::Count,
            class: MetricClass::Diagnostic,
            source: Source::Profile,
            default_visible: true,
            availability: match sampling_unavailable {
                None => Availability::Available,
                Some(why) => Availability::Unavailable(format!("no --profile: {why}")),
            },
        };
    vec![
        entry(
            SAMPLES,
            "samples",
            "samples in the case's --profile capture",
        ),
        entry(
            LOST,
            "lost",
            "records and samples the kernel dropped during the --profile pass",
        ),
    ]
}

/// What one case's profile pass produced (the `profile` key of its JSON row).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfileSummary {
    /// The capture file, when one was written.
    pub capture: Option<String>,
    /// The event sampled.
    pub event: String,
    /// Samples (on-CPU: with `--profile=wall`, the `sched:sched_switch` samples taken at
    /// each switch-out are counted apart, in `switch_samples`).
    pub samples: u64,
    /// With `--profile=wall`: the `sched:sched_switch` samples of the capture.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub switch_samples: u64,
    /// Records the ring buffers dropped.
    pub lost: u64,
    /// Samples the kernel dropped.
    pub lost_samples: u64,
    /// How often and how long the kernel throttled the sampled events
    /// (`{"count": N, "seconds": S}`).
    #[serde(default)]
    pub throttled: sparkles_perf_data::throttle::Throttled,
    /// How long the body ran under the sampler, seconds.
    pub seconds: f64,
    /// Iterations of the body it ran: the diff's blocks hold whole ones.
    #[serde(default)]
    pub iterations: u64,
    /// Bytes of the capture.
    pub bytes: u64,
    /// Bytes of its records before compression (equal to the records' share of `bytes`
    /// when stored as they are).
    #[serde(default)]
    pub record_bytes: u64,
    /// Bytes stack compaction left out.
    pub stack_bytes_saved: u64,
    /// Threads not covered, and restrictions, each with its reason.
    pub notes: Vec<String>,
    /// Why no capture was made.
    pub error: Option<String>,
    /// Files of the profile the run was asked for that could not be written (the capture,
    /// its tables, the viewer files), each `PATH: why`: the run then fails, after writing
    /// what it could (a capability the machine lacks is an `error` and no failure).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_written: Vec<String>,
    /// How the capture's stacks unwound (absent when it could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unwind: Option<sparkles_report::stacks::UnwindSummary>,
    /// The five hottest symbols by self (the `symbols` view).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top: Vec<HotFunction>,
    /// The three hottest functions by self that were inlined into another symbol, the
    /// program's own and its crates' (profile.json's `functions` view): what the
    /// symbols' self time is made of.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_inlined: Vec<HotFunction>,
    /// Against the baseline's profile: the three most significant movers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub movers: Vec<sparkles_report::diff::Mover>,
    /// Where the capture's samples carry a data source: the memory levels that served
    /// them, and the five heaviest code locations and data objects (profile.json has
    /// fifty of each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<sparkles_report::memory::Memory>,
    /// Where the memory node of the sampled pages can be told (`--profile=mem`): the
    /// NUMA section of docs/report.md, with its five heaviest code and data rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa: Option<sparkles_report::numa::Numa>,
    /// With `--profile=wall`: the case's threads' time on and off CPU, by reason (the
    /// keys of profile.json's `offcpu` section, without `functions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offcpu: Option<sparkles_report::offcpu::OffCpuRow>,
    /// With `--profile=alloc`: what the allocation samples stand for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alloc: Option<AllocProfile>,
}

/// An allocation profile's account (`--profile=alloc`): the sampling, the bytes the
/// samples stand for per iteration, and the sites whose blocks outlived their iteration.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AllocProfile {
    /// Mean bytes between samples.
    pub mean_bytes: u64,
    /// Bytes the samples stand for, per iteration (an estimate: within a few samples'
    /// worth of `alloc.bytes` plus the bytes reallocated blocks grew to).
    pub bytes_per_iteration: f64,
    /// Samples whose block was still live when its iteration ended.
    pub live_samples: u64,
    /// The bytes they stand for, per iteration: what an iteration leaves allocated.
    pub live_bytes_per_iteration: f64,
    /// Samples left out: no room in the arena, or their block's fate not tracked.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub untracked: u64,
    /// What sampling cost the body: the sampled loop's time per iteration over the same
    /// loop's unsampled just before it (a fifth of `--profile-time`, 500 ms at most), less
    /// one (0.03: 3% slower).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowdown: Option<f64>,
    /// The five sites with the most bytes live at their iteration's end, by function
    /// (profile-alloc-live.json has them all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub live_top: Vec<HotFunction>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ProfileSummary {
    /// The significant movers against the baseline's profile: name and change in points.
    pub fn significant_movers(&self) -> Vec<(String, f64)> {
        {
            // Each inlining chain once: a callee inlined into a mover is part of it.
            self.movers
                .iter()
                .filter(|m| m.significant && m.part_of.is_none())
                .map(|m| (m.name.clone(), m.change_pp))
                .collect()
        }
    }

    /// Confirms each significant mover side by side. `paired` is the diff of the variant
    /// against the base measured now, in two processes side by side (variant B1 against
    /// base A1), `null` the diff of two processes of the base (A2 against A1). A mover of
    /// this profile (against a baseline profile taken another time, when the machine may
    /// have been another) stays a finding only where the paired diff finds the same
    /// function significant, moving the same way, and by more than it moves in the null
    /// (or than the null's largest change of any function, where the null does not list
    /// it). Returns what was held back, a line each (also kept in `notes`).
    pub fn confirm_movers(
        &mut self,
        paired: &sparkles_report::diff::Diff,
        null: &sparkles_report::diff::Diff,
    ) -> Vec<String> {
        let mut held = Vec::new();
        for m in self.movers.iter_mut().filter(|m| m.significant) {
            let disagreement = null.disagreement(&m.name);
            let now = paired.movers.iter().find(|p| p.name == m.name);
            let confirmed = now.is_some_and(|p| {
                p.significant
                    && p.change_pp.signum() == m.change_pp.signum()
                    && p.change_pp.abs() > disagreement
            });
            if !confirmed {
                m.significant = false;
                held.push(format!(
                    "{} {:+.1} pp: side by side {} (variant B1 against base A1), {disagreement:.1} pp between two processes of the base",
                    m.name,
                    m.change_pp,
                    match now {
                        Some(p) => format!(
                            "{:+.1} pp{}",
                            p.change_pp,
                            if p.significant { "" } else { ", inside the sampling noise" }
                        ),
                        None => "absent".to_string(),
                    }
                ));
            }
        }
        for line in &held {
            self.notes.push(format!("not confirmed: {line}"));
        }
        held
    }

    /// The lines under a profiled case's row: its hottest symbols, which memory levels
    /// and nodes served its sampled accesses, and its movers against the baseline.
    pub fn lines_under_row(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .top
            .iter()
            .map(|h| {
                format!(
                    "{:>5.1}% self {:>5.1}% total  {}",
                    h.self_pct, h.total_pct, h.name
                )
            })
            .collect();
        if !self.top_inlined.is_empty() {
            let cells: Vec<String> = self
                .top_inlined
                .iter()
                .map(|h| {
                    format!(
                        "{:.1}% {}{}",
                        h.self_pct,
                        h.name,
                        h.inlined_into
                            .as_deref()
                            .map(|s| format!(" (in {s})"))
                            .unwrap_or_default()
                    )
                })
                .collect();
            lines.push(format!("       inlined: {}", cells.join(", ")));
        }
        {
            lines.extend(
                [
                    self.offcpu.as_ref().map(|o| o.line()),
                    self.memory_line(),
                    self.numa_line(),
                ]
                .into_iter()
                .flatten(),
            );
            lines.extend(self.movers.iter().map(|m| {
                format!(
                    "{:>+5.1}pp {} ({:.1}% -> {:.1}%)  {}",
                    m.change_pp,
                    if m.significant { "moved" } else { "noise" },
                    m.base_pct,
                    m.new_pct,
                    m.name
                )
            }));
        }
        lines
    }
}

impl ProfileSummary {
    /// The line under a profiled case's row that says where its sampled pages live:
    /// `numa (first_touch): 31500 pages sampled on a node, 100.0% local: cpu node0 → mem node0 100%`.
    pub fn numa_line(&self) -> Option<String> {
        let n = self.numa.as_ref()?;
        let cells: Vec<String> = n
            .matrix
            .iter()
            .take(4)
            .map(|c| {
                format!(
                    "cpu node{} → mem node{} {:.0}%",
                    c.cpu_node,
                    c.mem_node,
                    100.0 * c.samples as f64 / n.samples.max(1) as f64
                )
            })
            .collect();
        let unplaced: u64 = n.unplaced.values().sum();
        Some(format!(
            "numa ({}): {} samples placed, {:.1}% local: {}{}",
            n.source,
            n.samples,
            100.0 * n.local_share,
            cells.join(" · "),
            if unplaced > 0 {
                format!(" ({unplaced} not placed)")
            } else {
                String::new()
            }
        ))
    }

    /// The line under a profiled case's row that says which levels served its sampled
    /// accesses: `memory: L1 hit 61% · L3 hit 22% · RAM hit 9% · mean latency 48.2`.
    pub fn memory_line(&self) -> Option<String> {
        let m = self.memory.as_ref()?;
        let levels: Vec<String> = m
            .levels
            .iter()
            .take(4)
            .map(|l| format!("{} {:.0}%", l.level, 100.0 * l.share))
            .collect();
        Some(format!(
            "memory: {} · {} samples, mean latency {:.1}",
            levels.join(" · "),
            m.samples,
            m.weight_total as f64 / m.samples.max(1) as f64
        ))
    }
}

/// One of a case's hottest functions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HotFunction {
    /// Its name.
    pub name: String,
    /// Self, percent of the capture's weight.
    pub self_pct: f64,
    /// Total, percent.
    pub total_pct: f64,
    /// In the functions view: the symbol it was inlined into (its time is that symbol's
    /// self time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inlined_into: Option<String>,
}

impl ProfileSummary {
    /// The profile columns' values.
    pub fn values(summary: Option<&ProfileSummary>) -> Vec<MetricValue> {
        let ok = summary.filter(|s| s.error.is_none());
        vec![
            (SAMPLES.into(), ok.map(|s| s.samples as f64)),
            (LOST.into(), ok.map(|s| (s.lost + s.lost_samples) as f64)),
        ]
    }
}

/// Which of a case's sampled profiles: each has its own profile, folded stacks and
/// flamegraph beside the capture and beside a baseline's rows; a wall-clock profile's
/// diff is written to the CPU profile's diff files (a case is profiled one way a run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// On-CPU (`--profile`, `=mem`).
    Cpu,
    /// Wall-clock (`--profile=wall`).
    Wall,
    /// Allocated bytes (`--profile=alloc`).
    Alloc,
    /// Bytes still live when their iteration ended (`--profile=alloc`).
    AllocLive,
}

impl Kind {
    /// Every kind a baseline may keep.
    pub const ALL: [Kind; 4] = [Kind::Cpu, Kind::Wall, Kind::Alloc, Kind::AllocLive];

    /// The names of its flamegraph, diff and diff flamegraph beside the capture.
    pub fn svg_and_diff(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Kind::Cpu => ("flamegraph.svg", "diff.json", "diff.svg"),
            Kind::Wall => ("flamegraph-wall.svg", "diff.json", "diff.svg"),
            Kind::Alloc => ("flamegraph-alloc.svg", "diff-alloc.json", "diff-alloc.svg"),
            Kind::AllocLive => (
                "flamegraph-alloc-live.svg",
                "diff-alloc-live.json",
                "diff-alloc-live.svg",
            ),
        }
    }

    /// The flag that saves a baseline with this kind's profile.
    pub fn flag(self) -> &'static str {
        match self {
            Kind::Cpu => "--profile",
            Kind::Wall => "--profile=wall",
            Kind::Alloc | Kind::AllocLive => "--profile=alloc",
        }
    }
}

/// The names of a profile's JSON and folded stacks beside its capture (and beside a
/// baseline's rows).
pub fn artifact_names(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Cpu => ("profile.json", "folded.txt"),
        Kind::Wall => ("profile-wall.json", "folded-wall.txt"),
        Kind::Alloc => ("profile-alloc.json", "folded-alloc.txt"),
        Kind::AllocLive => ("profile-alloc-live.json", "folded-alloc-live.txt"),
    }
}

/// An allocation profile's capture, beside the case's CPU one.
pub const ALLOC_CAPTURE: &str = "capture-alloc.perf.data";

/// An allocation profile's line: the bytes its samples stand for, what outlived the
/// iterations, and what sampling cost.
pub fn describe_alloc(a: &AllocProfile, samples: u64) -> String {
    use crate::units::format_bytes;
    let mut line = format!(
        "allocations: {} an iteration by {samples} samples (one per {} on average; a reallocation counts its new size); {} an iteration still live when its iteration ended",
        format_bytes(a.bytes_per_iteration),
        format_bytes(a.mean_bytes as f64),
        format_bytes(a.live_bytes_per_iteration),
    );
    if let Some(top) = a.live_top.first() {
        line.push_str(&format!(" (most from {}, {:.0}%)", top.name, top.self_pct));
    }
    if let Some(s) = a.slowdown {
        line.push_str(&format!(
            "; sampling cost {:+.1}% a loop iteration",
            s * 100.0
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mover(name: &str, change_pp: f64, significant: bool) -> serde_json::Value {
        serde_json::json!({"name": name, "base_pct": 10.0, "new_pct": 10.0 + change_pp,
            "change_pp": change_pp, "base_samples": 1000, "new_samples": 1000, "z": 5.0,
            "p_value": 0.0001, "significant": significant})
    }

    #[test]
    fn the_lines_under_a_row_name_the_functions_inlined_into_the_hot_symbols() {
        let hot = |name: &str, pct: f64, into: Option<&str>| HotFunction {
            name: name.into(),
            self_pct: pct,
            total_pct: pct,
            inlined_into: into.map(Into::into),
        };
        let mut p = ProfileSummary {
            top: vec![hot("channels/mpsc/1000", 30.8, None)],
            top_inlined: vec![
                hot("poll_acquire", 9.4, Some("<Acquire as Future>::poll")),
                hot("push<u64>", 7.1, Some("channels/mpsc/1000")),
            ],
            ..Default::default()
        };
        let lines = p.lines_under_row();
        assert_eq!(lines[0], " 30.8% self  30.8% total  channels/mpsc/1000");
        assert_eq!(
            lines[1],
            "       inlined: 9.4% poll_acquire (in <Acquire as Future>::poll), 7.1% push<u64> (in channels/mpsc/1000)"
        );
        p.top_inlined.clear();
        assert_eq!(p.lines_under_row().len(), 1);
    }

    #[test]
    fn a_mover_is_kept_only_where_side_by_side_confirms_it() {
        let mut p = ProfileSummary {
            movers: serde_json::from_value(serde_json::json!([
                mover("lock_contended", 2.8, true),
                mover("memcpy", -1.7, true),
                mover("parse", 6.0, true),
                mover("sieve", -3.7, true),
                mover("quiet", 0.2, false)
            ]))
            .unwrap(),
            ..Default::default()
        };
        let diff = |movers: serde_json::Value| -> sparkles_report::diff::Diff {
            serde_json::from_value(serde_json::json!({
                "schema": "sparkles.diff/1", "case": "c", "base_samples": 4000,
                "new_samples": 4000, "threshold": 0.001, "movers": movers,
            }))
            .unwrap()
        };
        // Side by side now: lock_contended moves 3.5 pp but two processes of the base
        // disagree by 4.0; memcpy is not listed; parse moves 5.8 pp (0.5 between base
        // processes); sieve, moved against a baseline taken on a quieter machine, moves
        // -0.3 pp now, inside the sampling noise.
        let paired = diff(serde_json::json!([
            mover("parse", 5.8, true),
            mover("lock_contended", 3.5, true),
            mover("sieve", -0.3, false)
        ]));
        let null = diff(serde_json::json!([
            mover("lock_contended", -4.0, true),
            mover("parse", 0.5, false)
        ]));
        let held = p.confirm_movers(&paired, &null);
        assert_eq!(held.len(), 3, "{held:?}");
        assert!(
            held[0].starts_with("lock_contended +2.8 pp: side by side +3.5 pp"),
            "{held:?}"
        );
        assert!(
            held[0].ends_with("4.0 pp between two processes of the base"),
            "{held:?}"
        );
        assert!(
            held[1].starts_with("memcpy -1.7 pp: side by side absent"),
            "{held:?}"
        );
        assert!(
            held[2].contains("sieve -3.7 pp: side by side -0.3 pp, inside the sampling noise"),
            "{held:?}"
        );
        // The change side by side confirms beyond the processes' disagreement: a finding.
        assert_eq!(p.significant_movers(), vec![("parse".to_string(), 6.0)]);
        assert!(p
            .notes
            .iter()
            .any(|n| n.starts_with("not confirmed: sieve")));
    }
}
