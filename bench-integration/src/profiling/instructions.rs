//! Each case's instruction profile (`--profile=instructions`): callgrind's costs of its
//! measured iterations as a profile beside its sampled one (profile-instructions.json,
//! folded-instructions.txt, flamegraph-instructions.svg, and its call graph,
//! callgraph-instructions.json), saved with a baseline and
//! diffed against one exactly (diff-instructions.json): instruction deltas per function,
//! no sampling noise.

use std::path::Path;

use sparkles_report::callgrind;
use sparkles_report::profile::Profile;

use super::reading::{hottest, write_json, BaselineProfiles};
use crate::case_report::CaseReport;
use crate::tiers::valgrind::Costs;
use sparkles_results::counting::InstructionChange;

/// The instruction profile's JSON, beside the case's capture and beside a baseline's rows.
pub(crate) const JSON: &str = "profile-instructions.json";
const FOLDED: &str = "folded-instructions.txt";
const SVG: &str = "flamegraph-instructions.svg";
const DIFF: &str = "diff-instructions.json";
const CALLS: &str = "callgraph-instructions.json";

/// One call edge of the call graph (`callgraph-instructions.json`).
#[derive(serde::Serialize)]
struct Edge<'a> {
    caller: &'a str,
    callee: &'a str,
    /// Instructions executed in the calls, the callee's callees included, per iteration.
    instructions: f64,
}

/// callgrind's call edges, costliest first, per iteration.
fn call_graph(c: &Costs, iterations: u64) -> Vec<Edge<'_>> {
    let mut edges: Vec<Edge<'_>> = c
        .calls
        .iter()
        .map(|((a, b), v)| Edge {
            caller: &a.name,
            callee: &b.name,
            instructions: *v as f64 / iterations.max(1) as f64,
        })
        .collect();
    edges.sort_by(|a, b| b.instructions.total_cmp(&a.instructions));
    edges
}

/// Writes the instruction profile of each case in `costs` (indices into `reports`) into
/// its folder under `profile_dir`; diffs it against `baseline`'s where given; queues it
/// to be saved with the baseline at `save_path`. What it found (the hottest functions,
/// the movers) or why not lands in the case's `counting.valgrind`.
pub(crate) fn write_profiles(
    reports: &mut [CaseReport],
    costs: Vec<(usize, Costs)>,
    profile_dir: &Path,
    baseline: Option<&sparkles_results::baseline::Baseline>,
    save_path: Option<&Path>,
    to_save: &mut BaselineProfiles,
) {
    for (i, c) in costs {
        let report = &mut reports[i];
        let Some(account) = report.counting.as_mut().and_then(|c| c.valgrind.as_mut()) else {
            continue;
        };
        let iterations = account.iterations * u64::from(account.brackets);
        let (profile, folded) = callgrind::profile(&c, &report.name, iterations);
        let dir = profile_dir.join(&report.slug);
        let written = (|| -> Result<(), String> {
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            write_json(&dir.join(JSON), &profile).map_err(|e| e.to_string())?;
            let write = |name: &str, bytes: &[u8]| {
                sparkles_perf_data::atomic_write::write_atomically(&dir.join(name), bytes)
                    .map_err(|e| e.to_string())
            };
            write(FOLDED, folded.text().as_bytes())?;
            write_json(&dir.join(CALLS), &call_graph(&c, iterations)).map_err(|e| e.to_string())?;
            let svg = sparkles_report::flame::svg(&profile, &folded).map_err(|e| e.to_string())?;
            write(SVG, svg.as_bytes())
        })();
        if let Err(e) = written {
            account
                .notes
                .push(format!("instruction profile not written: {e}"));
            continue;
        }
        account.top = hottest(&profile.functions);
        // An earlier run's diff is not this profile's.
        let _ = std::fs::remove_file(dir.join(DIFF));
        if let Some(base) = baseline {
            let from =
                sparkles_results::baseline::kept_profile_dir(&base.path, &report.slug).join(JSON);
            match diff_against(&report.name, &from, &profile) {
                Ok(d) => {
                    account.movers = d
                        .movers
                        .iter()
                        .take(5)
                        .map(|m| InstructionChange {
                            name: m.name.clone(),
                            base: m.base,
                            new: m.new,
                            delta_pct: m.delta_pct,
                        })
                        .collect();
                    if let Err(e) = write_json(&dir.join(DIFF), &d) {
                        account.notes.push(format!("{DIFF} not written: {e}"));
                    }
                }
                Err(e) => account.notes.push(format!("no instruction diff: {e}")),
            }
        }
        if let Some(save) = save_path {
            to_save.keep_file(
                &report.name,
                dir.join(JSON),
                sparkles_results::baseline::kept_profile_dir(save, &report.slug).join(JSON),
            );
        }
    }
}

/// The exact diff of `profile` against the baseline's instruction profile at `from`.
fn diff_against(
    case: &str,
    from: &Path,
    profile: &Profile,
) -> Result<callgrind::InstructionDiff, String> {
    let bytes = std::fs::read(from).map_err(|_| {
        format!(
            "{} is absent (save the baseline with --profile=instructions)",
            from.display()
        )
    })?;
    let base: Profile =
        serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", from.display()))?;
    if base.iterations.is_none() {
        return Err(format!(
            "{} is not an instruction profile (it has no iterations)",
            from.display()
        ));
    }
    Ok(callgrind::diff(case, &base, profile))
}
