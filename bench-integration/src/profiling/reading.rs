//! After all timing, each case's capture read (unwound, named, aggregated), its
//! artifacts written beside it, saved with a baseline or diffed against one (the
//! harness's `profile` feature).

use std::path::Path;

use serde::Serialize;
use sparkles_report::capture as report;
use sparkles_report::diff::{self, Mover};
use sparkles_report::profile::{Blocks, Folded, Profile};
use sparkles_report::reading;
use sparkles_report::stacks::{StackOptions, UnwindSummary};

use super::plan::Against;
use crate::args::HarnessArgs;
use crate::case_report::CaseReport;
use sparkles_results::profile::{artifact_names, Kind};
use sparkles_results::profile::{HotFunction, ProfileSummary};

/// Why a profile artifact (profile.json, folded.txt, a flamegraph, a diff) was not made:
/// a note under the case, never a failed run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ArtifactError {
    #[error(transparent)]
    Report(#[from] sparkles_report::Error),
    #[error(transparent)]
    File(#[from] sparkles_perf_data::Error),
    #[error("{}: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Json {
        path: std::path::PathBuf,
        source: serde_json::Error,
    },
    #[error("{} is absent (save the baseline with {flag})", path.display())]
    NoBaselineProfile {
        path: std::path::PathBuf,
        flag: &'static str,
    },
}

/// Pretty JSON written whole to `path`.
pub(crate) fn write_json(path: &Path, value: &impl Serialize) -> Result<(), ArtifactError> {
    let json = serde_json::to_vec_pretty(value).map_err(|source| ArtifactError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(sparkles_perf_data::atomic_write::write_atomically(
        path, &json,
    )?)
}

/// The case profiles to save with a baseline: written with its rows, so that an
/// interrupted run leaves the baseline as it was, profiles and all.
#[derive(Debug, Default)]
pub(crate) struct BaselineProfiles(Vec<BaselineProfile>, Vec<KeptFile>);

/// A file written beside a baseline as it is saved: a case's instruction profile (copied
/// from beside its capture), its annotation (as this run made it, before any comparison).
#[derive(Debug)]
struct KeptFile {
    case: String,
    from: Kept,
    to: std::path::PathBuf,
}

#[derive(Debug)]
enum Kept {
    Copy(std::path::PathBuf),
    Bytes(Vec<u8>),
}

#[derive(Debug)]
struct BaselineProfile {
    case: String,
    dir: std::path::PathBuf,
    keep: std::path::PathBuf,
    folded: Folded,
    kind: Kind,
}

impl BaselineProfiles {
    /// Copies `from` to `to` when the baseline is saved.
    pub(crate) fn keep_file(
        &mut self,
        case: &str,
        from: std::path::PathBuf,
        to: std::path::PathBuf,
    ) {
        self.1.push(KeptFile {
            case: case.to_string(),
            from: Kept::Copy(from),
            to,
        });
    }

    /// Writes `bytes` to `to` when the baseline is saved.
    pub(crate) fn keep_bytes(&mut self, case: &str, bytes: Vec<u8>, to: std::path::PathBuf) {
        self.1.push(KeptFile {
            case: case.to_string(),
            from: Kept::Bytes(bytes),
            to,
        });
    }

    /// Copies each case's profile beside the baseline being saved; one that cannot be is
    /// said.
    pub(crate) fn save(self) {
        for k in self.1 {
            let bytes = match k.from {
                Kept::Copy(from) => {
                    std::fs::read(&from).map_err(|e| format!("{}: {e}", from.display()))
                }
                Kept::Bytes(bytes) => Ok(bytes),
            };
            let copied = bytes.and_then(|bytes| {
                sparkles_perf_data::atomic_write::write_atomically(&k.to, &bytes)
                    .map_err(|e| e.to_string())
            });
            if let Err(e) = copied {
                let name = k.to.file_name().unwrap_or_default().to_string_lossy();
                eprintln!(
                    "profile: {}: {name} not saved with the baseline: {e}",
                    k.case
                );
            }
        }
        for p in self.0 {
            if let Err(e) = save_with_baseline(&p.dir, &p.keep, &p.folded, p.kind) {
                eprintln!(
                    "profile: {}: profile not saved with the baseline: {e}",
                    p.case
                );
            }
        }
    }
}

/// Reads every case's capture after all timing: its top functions, how its stacks
/// unwound, and the case's artifacts beside the capture (flamegraph.svg, folded.txt,
/// profile.json); with `--save-baseline` the profiles to save with the rows, and where
/// `against` is given the profile it names is diffed against it (a baseline's, or
/// another process's in serve mode). The captures are read on every CPU at once, each
/// by one thread (nothing is timed or sampled any more); a SIGINT or SIGTERM stops each
/// thread before its next case.
pub(crate) fn read_captures(
    reports: &mut [CaseReport],
    args: &HarnessArgs,
    event_note: &str,
    save_path: Option<&Path>,
    against: Option<&Against<'_>>,
) -> BaselineProfiles {
    let (_, threads) = super::analysis_threads(reports);
    let queue = std::sync::Mutex::new(reports.iter_mut().enumerate());
    let mut parts: Vec<(usize, BaselineProfiles)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        if sparkles_perf_data::atomic_write::interrupted().is_some() {
                            break;
                        }
                        let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                        let Some((i, r)) = next else {
                            break;
                        };
                        done.push((i, read_case(r, args, event_note, save_path, against)));
                    }
                    done
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    // In the cases' order, whichever thread read each.
    parts.sort_by_key(|(i, _)| *i);
    let mut to_save = BaselineProfiles::default();
    for (_, part) in parts {
        to_save.0.extend(part.0);
        to_save.1.extend(part.1);
    }
    to_save
}

/// One case's part of [`read_captures`]: what to save with a baseline.
fn read_case(
    r: &mut CaseReport,
    args: &HarnessArgs,
    event_note: &str,
    save_path: Option<&Path>,
    against: Option<&Against<'_>>,
) -> BaselineProfiles {
    let mut to_save = BaselineProfiles::default();
    let case = r.name.clone();
    let Some(p) = r.profile.as_mut() else {
        return to_save;
    };
    let Some(capture) = p.capture.clone().map(std::path::PathBuf::from) else {
        return to_save;
    };
    let is_alloc = capture
        .file_name()
        .is_some_and(|n| n == sparkles_results::profile::ALLOC_CAPTURE);
    // The profiles read, the one the run compares first; beside an on-CPU profile, what
    // the same reading gave for its annotation.
    let mut annotation = None;
    let read: Vec<(Kind, Profile, Folded)> = if is_alloc {
        match read_alloc_capture(&case, &capture, p, args) {
            Some(read) => read,
            None => return to_save,
        }
    } else {
        let Some(((on_cpu, wall), besides)) = read_capture(&case, &capture, p, args, event_note)
        else {
            return to_save;
        };
        annotation = Some(besides);
        // A wall profile is what its run compares: where the time went, waits included.
        match wall {
            Some((w, wf)) => vec![(Kind::Wall, w, wf)],
            None => vec![(Kind::Cpu, on_cpu.0, on_cpu.1)],
        }
    };
    let dir = capture.parent().unwrap_or(Path::new("."));
    let slug = dir
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    // Beside the baseline's rows: its profile folder, one per case.
    let beside = |rows: &Path| sparkles_results::baseline::kept_profile_dir(rows, &slug);
    let Some((kind, profile, folded)) = read.first() else {
        return to_save;
    };
    let (_, diff_json, diff_svg) = kind.svg_and_diff();
    // An earlier run's diff is not this capture's: gone whether or not one is made.
    for name in [diff_json, diff_svg] {
        let _ = std::fs::remove_file(dir.join(name));
    }
    if let Some(against) = against {
        let from = match against {
            Against::Baseline(base) => beside(&base.path),
            Against::Folder(folder) => folder.to_path_buf(),
        };
        match diff_against(&case, &from, profile, folded, dir, *kind) {
            Ok((movers, warnings)) => {
                p.movers = movers;
                p.notes
                    .extend(warnings.into_iter().map(|w| format!("profile diff: {w}")));
            }
            Err(e) => p.notes.push(format!("no profile diff: {e}")),
        }
    }
    if let Some(besides) = annotation {
        let kept = annotate_capture(
            &capture,
            p,
            besides,
            against.map(|a| match a {
                Against::Baseline(base) => beside(&base.path),
                Against::Folder(folder) => folder.to_path_buf(),
            }),
        );
        if let (Some(json), Some(save)) = (kept, save_path) {
            to_save.keep_bytes(&case, json, beside(save).join(ANNOTATION));
        }
    }
    if let Some(save) = save_path {
        for (kind, _, folded) in read {
            to_save.0.push(BaselineProfile {
                case: case.clone(),
                dir: dir.to_path_buf(),
                keep: beside(save),
                folded,
                kind,
            });
        }
    }
    to_save
}

/// Copies a case's profile JSON and folded stacks (the wall-clock ones where `wall`)
/// from `dir` into `keep`, beside a baseline being saved.
fn save_with_baseline(
    dir: &Path,
    keep: &Path,
    folded: &Folded,
    kind: Kind,
) -> Result<(), ArtifactError> {
    let (json_name, folded_name) = artifact_names(kind);
    let from = dir.join(json_name);
    let json = std::fs::read(&from).map_err(|source| ArtifactError::Read { path: from, source })?;
    sparkles_perf_data::atomic_write::write_atomically(&keep.join(json_name), &json)?;
    sparkles_perf_data::atomic_write::write_atomically(
        &keep.join(folded_name),
        folded.text().as_bytes(),
    )?;
    Ok(())
}

/// The hot-symbol diff of a case's profile against the baseline's saved in `from`:
/// diff.json and diff.svg beside the case's capture, its three top movers, and what
/// weakens it (throttling, loss, truncated stacks on either side).
fn diff_against(
    case: &str,
    from: &Path,
    profile: &Profile,
    folded: &Folded,
    dir: &Path,
    kind: Kind,
) -> Result<(Vec<Mover>, Vec<String>), ArtifactError> {
    let (json_name, folded_name) = artifact_names(kind);
    let (_, diff_json, diff_svg) = kind.svg_and_diff();
    let base: Profile = read_baseline_json(&from.join(json_name), kind)?;
    let d = diff::diff(case, &base, profile);
    write_json(&dir.join(diff_json), &d)?;
    let base_folded = from.join(folded_name);
    let text = std::fs::read_to_string(&base_folded).map_err(|source| ArtifactError::Read {
        path: base_folded,
        source,
    })?;
    let svg = diff::svg(&d, &Folded::parse(&text)?, folded)?;
    sparkles_perf_data::atomic_write::write_atomically(&dir.join(diff_svg), svg.as_bytes())?;
    // Each inlining chain once: a callee inlined into a mover is in diff.json, not here.
    let movers = d.movers.into_iter().filter(|m| m.part_of.is_none()).take(3);
    Ok((movers.collect(), d.warnings))
}

/// The five hottest rows of a flat view, as a row lists them: rows of some self time
/// only (a thread's root frames, `__libc_start_call_main` or `thread_start` at 100% total
/// and no self, never fill the list where little else has self time).
pub(crate) fn hottest(rows: &[sparkles_report::profile::Entry]) -> Vec<HotFunction> {
    rows.iter()
        .filter(|e| e.self_pct >= MIN_HOT_SELF_PCT)
        .take(5)
        .map(|e| HotFunction {
            name: e.name.clone(),
            self_pct: e.self_pct,
            total_pct: e.total_pct,
            inlined_into: e.inlined_into.clone(),
        })
        .collect()
}

/// The smallest self share a hot list shows: what prints as 0.1%.
const MIN_HOT_SELF_PCT: f64 = 0.05;

/// The three hottest functions of the functions view that were inlined into another
/// symbol, of the program and its crates (not std's helpers, `black_box` or `lt`, which
/// every loop inlines): what the hottest symbols' self time is made of.
fn hottest_inlined(functions: &[sparkles_report::profile::Entry]) -> Vec<HotFunction> {
    let rows: Vec<_> = functions
        .iter()
        .filter(|e| e.inlined_into.is_some() && e.kind == sparkles_report::stacks::Kind::User)
        .cloned()
        .collect();
    let mut hot = hottest(&rows);
    hot.truncate(3);
    hot
}

/// Unwinds, names and aggregates one case's capture; writes its artifacts beside it.
pub(crate) fn read_capture(
    case: &str,
    capture: &Path,
    summary: &mut ProfileSummary,
    args: &HarnessArgs,
    event_note: &str,
) -> Option<(ReadProfiles, Besides)> {
    let options = stack_options(args, summary)?;
    #[cfg(feature = "annotate")]
    let select = sparkles_report::annotate::Select {
        top: 3,
        ..Default::default()
    };
    // One reading for the profiles, the annotation and the viewers' time line.
    let wants = reading::Wants {
        profiles: vec![&options],
        #[cfg(feature = "annotate")]
        annotate: Some((&options, &select)),
        timeline: (!args.profile_format.is_empty()).then_some(&options),
    };
    let mut unwind = UnwindSummary::default();
    let read = reading::read_capture(capture, case, &options, wants, |s| unwind.add(s)).and_then(
        |mut read| {
            let profiles = read
                .profiles
                .pop()
                .unwrap_or(Err(sparkles_report::Error::Empty))?;
            Ok((profiles, read))
        },
    );
    let (
        report::Profiles {
            profile: mut p,
            folded,
            wall,
        },
        read,
    ) = match read {
        Ok(done) => done,
        Err(e) => {
            summary.notes.push(format!("no profile: {e}"));
            return None;
        }
    };
    p.event_note = Some(event_note.to_string()).filter(|n| !n.is_empty());
    let dir = capture.parent().unwrap_or(Path::new("."));
    let has_wall = wall.as_ref().is_some_and(|(w, _)| w.samples > 0);
    if p.samples == 0 {
        // The body ran under the sampler and was never on a CPU (in user mode, where only
        // that is sampled) when a sample fell due: nothing to draw, which is no output lost.
        // An earlier run's files are not this capture's.
        summary.notes.push(format!(
            "no samples: {} took none in the {:.2} s the body ran under it (its time was off \
             the CPU{}); no profile",
            p.event,
            summary.seconds,
            if summary.notes.iter().any(|n| n.contains("user mode only")) {
                ", or in the kernel, which user-mode sampling leaves out"
            } else {
                ""
            }
        ));
        use crate::args::ViewerFormat;
        remove_artifacts(
            dir,
            Kind::Cpu,
            &[ViewerFormat::Speedscope, ViewerFormat::Firefox],
            "",
        );
        if !has_wall {
            remove_artifacts(dir, Kind::Wall, &[], "");
            let (_, diff_json, diff_svg) = Kind::Cpu.svg_and_diff();
            for name in [diff_json, diff_svg, ANNOTATION] {
                let _ = std::fs::remove_file(dir.join(name));
            }
            return None;
        }
    } else {
        summary.unwind = Some(unwind);
    }
    // Under the row: the hottest symbols (what perf report lists first), whose names are
    // the case's own code, and the hottest of the program's functions inlined into them;
    // inlined std helpers (`lt`, `copy<u64>`) stay in profile.json's `functions` view.
    summary.top = hottest(&p.symbols);
    summary.top_inlined = hottest_inlined(&p.functions);
    summary.memory = p.memory.clone().map(|mut m| {
        m.code.truncate(5);
        m.data_objects.truncate(5);
        m
    });
    summary.numa = p.numa.clone().map(|mut n| {
        n.code.truncate(5);
        n.data_objects.truncate(5);
        n.remote_code.truncate(5);
        n.remote_data.truncate(5);
        n
    });
    summary.offcpu = p.offcpu.as_ref().map(Into::into);
    if p.offcpu.is_some() {
        // The capture's samples less the switch-outs: the samples of time on a CPU.
        summary.switch_samples = summary.samples.saturating_sub(p.samples);
        summary.samples = p.samples;
    }
    let mut written = Ok(());
    if p.samples > 0 {
        written = write_artifacts(dir, &p, &folded, Kind::Cpu);
    }
    if let Some((w, wf)) = &wall {
        written = written.and_then(|()| write_artifacts(dir, w, wf, Kind::Wall));
    }
    if let Err(e) = written {
        summary.not_written.push(format!("profile artifacts: {e}"));
    }
    if p.samples > 0 {
        if let Err(e) = write_viewer_files(capture, read.timeline, &args.profile_format, "") {
            summary
                .not_written
                .push(format!("--profile-format files: {e}"));
        }
    }
    Some((
        ((p, folded), wall),
        Besides {
            #[cfg(feature = "annotate")]
            annotation: read.annotation,
        },
    ))
}

/// What the reading of a case's capture gave beside its profiles, for the steps after
/// them: the annotation of its hottest functions (with the `annotate` feature).
pub(crate) struct Besides {
    #[cfg(feature = "annotate")]
    annotation: Option<Result<sparkles_report::annotate::Annotation, sparkles_report::Error>>,
}

/// Removes a profile's files of `kind` from `dir` (its JSON, folded stacks, flamegraph and
/// `formats`' viewer files with `suffix`): an earlier run's, where this run has none.
fn remove_artifacts(dir: &Path, kind: Kind, formats: &[crate::args::ViewerFormat], suffix: &str) {
    let (json, folded) = artifact_names(kind);
    let viewers = formats.iter().map(|f| f.file_name_with(suffix));
    for name in [json, folded, kind.svg_and_diff().0]
        .into_iter()
        .map(String::from)
        .chain(viewers)
    {
        let _ = std::fs::remove_file(dir.join(name));
    }
}

/// A case's annotation beside its capture and beside a baseline's rows.
pub(crate) const ANNOTATION: &str = "annotate.json";

/// Without the `annotate` feature no annotation is made: an earlier build's annotate.json
/// beside the capture is not this capture's, and goes.
#[cfg(not(feature = "annotate"))]
fn annotate_capture(
    capture: &Path,
    _summary: &mut ProfileSummary,
    _besides: Besides,
    _base: Option<std::path::PathBuf>,
) -> Option<Vec<u8>> {
    let _ = std::fs::remove_file(capture.parent().unwrap_or(Path::new(".")).join(ANNOTATION));
    None
}

/// Inside a case's three hottest functions: their lines and instructions, annotate.json
/// beside the capture for the run report (an earlier run's file is not this capture's);
/// where `base` (a baseline's profile folder) has the baseline's annotation, each line's
/// change against it. The annotation as this capture alone gives it (its JSON, to save
/// with a baseline); what failed is the case's note.
#[cfg(feature = "annotate")]
fn annotate_capture(
    capture: &Path,
    summary: &mut ProfileSummary,
    besides: Besides,
    base: Option<std::path::PathBuf>,
) -> Option<Vec<u8>> {
    let dir = capture.parent().unwrap_or(Path::new("."));
    let annotation = dir.join(ANNOTATION);
    let _ = std::fs::remove_file(&annotation);
    let mut a = match besides.annotation? {
        Ok(a) => a,
        Err(e) => {
            summary.notes.push(format!("{ANNOTATION} not written: {e}"));
            return None;
        }
    };
    let alone = match serde_json::to_vec_pretty(&a) {
        Ok(json) => json,
        Err(e) => {
            summary.notes.push(format!("{ANNOTATION} not written: {e}"));
            return None;
        }
    };
    // Beside the capture: compared with the baseline's where there is one, else as it is
    // (those bytes).
    if let Some(from) = base {
        let path = from.join(ANNOTATION);
        match read_baseline_json(&path, Kind::Cpu) {
            Ok(b) => {
                sparkles_report::annotate::compare(&mut a, &b, &path.display().to_string());
            }
            Err(e) => summary.notes.push(format!("no line changes: {e}")),
        }
    }
    let written = if a.baseline.is_some() {
        write_json(&annotation, &a)
    } else {
        sparkles_perf_data::atomic_write::write_atomically(&annotation, &alone)
            .map_err(ArtifactError::from)
    };
    if let Err(e) = written {
        summary.notes.push(format!("{ANNOTATION} not written: {e}"));
    }
    Some(alone)
}

/// A file saved beside a baseline's rows with its `kind` of profile: absent, said with the
/// flag that saves it; unreadable, said with the file.
fn read_baseline_json<T: serde::de::DeserializeOwned>(
    path: &Path,
    kind: Kind,
) -> Result<T, ArtifactError> {
    let Ok(bytes) = std::fs::read(path) else {
        return Err(ArtifactError::NoBaselineProfile {
            path: path.to_path_buf(),
            flag: kind.flag(),
        });
    };
    serde_json::from_slice(&bytes).map_err(|source| ArtifactError::Json {
        path: path.to_path_buf(),
        source,
    })
}
/// How a case's capture is read: `--profile-unwind`'s mode, the harness's frames folded
/// unless `--profile-full-stacks`, the diff's blocks whole iterations. A mode that is not
/// one is the summary's note, and no profile.
fn stack_options(args: &HarnessArgs, summary: &mut ProfileSummary) -> Option<StackOptions> {
    match args.profile_unwind.parse() {
        Ok(unwind) => Some(StackOptions {
            unwind,
            root_at_case: !args.profile_full_stacks,
            keep_allocator_frames: args.profile_full_stacks,
            // The diff's blocks are whole iterations of the body (one that runs in
            // phases has blocks that are draws of the same mix).
            blocks: match summary.iterations {
                0 => Blocks::Found,
                n => Blocks::Repeats(n),
            },
            ..StackOptions::default()
        }),
        Err(e) => {
            summary
                .notes
                .push(format!("no profile: --profile-unwind: {e}"));
            None
        }
    }
}

/// Reads a case's allocation capture (`--profile=alloc`): the profile of every sample
/// (bytes allocated: profile-alloc.json, folded-alloc.txt, flamegraph-alloc.svg) and of
/// those whose block outlived its iteration (profile-alloc-live.json, …), written beside
/// it; the hottest allocating functions and live sites in the summary.
fn read_alloc_capture(
    case: &str,
    capture: &Path,
    summary: &mut ProfileSummary,
    args: &HarnessArgs,
) -> Option<Vec<(Kind, Profile, Folded)>> {
    use crate::tiers::alloc::sampling::{EVENT, LIVE_EVENT};
    let base = stack_options(args, summary)?;
    let dir = capture.parent().unwrap_or(Path::new("."));
    let live = summary.alloc.as_ref().map_or(0, |a| a.live_samples);
    let mut kinds = Vec::new();
    for (kind, event, sampled) in [
        (Kind::Alloc, EVENT, summary.samples),
        (Kind::AllocLive, LIVE_EVENT, live),
    ] {
        if sampled == 0 {
            // Nothing sampled (no block outlived its iteration, say): nothing to draw, and
            // an earlier run's files are not this one's.
            remove_artifacts(dir, kind, &[], "");
            continue;
        }
        let options = StackOptions {
            event: Some(event.to_string()),
            ..base.clone()
        };
        kinds.push((kind, event, options));
    }
    // One reading for both profiles and the viewers' time line (every sample's). Without
    // the `annotate` feature `Wants` has no other field: the update is for builds with it.
    #[allow(clippy::needless_update)]
    let wants = reading::Wants {
        profiles: kinds.iter().map(|(_, _, o)| o).collect(),
        timeline: kinds
            .first()
            .filter(|_| !args.profile_format.is_empty())
            .map(|(_, _, o)| o),
        ..reading::Wants::default()
    };
    let mut unwind = UnwindSummary::default();
    let done = match reading::read_capture(capture, case, &base, wants, |s| unwind.add(s)) {
        Ok(done) => done,
        Err(e) => {
            summary.notes.push(format!("no {EVENT} profile: {e}"));
            return None;
        }
    };
    let mut read = Vec::new();
    for ((kind, event, _), profiles) in kinds.into_iter().zip(done.profiles) {
        let report::Profiles {
            profile: mut p,
            folded,
            ..
        } = match profiles {
            Ok(done) => done,
            Err(e) => {
                summary.notes.push(format!("no {event} profile: {e}"));
                if kind == Kind::Alloc {
                    return None;
                }
                continue;
            }
        };
        p.event_note = Some(format!(
            "weights are bytes: each sample stands for the bytes of the sampling intervals its allocation crossed ({} on average)",
            sparkles_results::units::format_bytes(summary.alloc.as_ref().map_or(0, |a| a.mean_bytes) as f64)
        ));
        match kind {
            Kind::Alloc => {
                summary.unwind = Some(std::mem::take(&mut unwind));
                // The functions view: the first frame outside the allocator, inlined or not.
                summary.top = allocating(&p);
            }
            _ => {
                if let Some(a) = summary.alloc.as_mut() {
                    a.live_top = allocating(&p);
                }
            }
        }
        if let Err(e) = write_artifacts(dir, &p, &folded, kind) {
            summary
                .notes
                .push(format!("profile artifacts not written: {e}"));
        }
        read.push((kind, p, folded));
    }
    if let Err(e) = write_viewer_files(capture, done.timeline, &args.profile_format, "-alloc") {
        summary
            .notes
            .push(format!("--profile-format files not written: {e}"));
    }
    Some(read)
}

/// An allocation profile's five heaviest functions by self: those that asked for bytes
/// (the frames above them, thread start and the harness, have none of their own).
fn allocating(p: &Profile) -> Vec<HotFunction> {
    let rows: Vec<_> = p
        .functions
        .iter()
        .filter(|e| e.self_ > 0)
        .cloned()
        .collect();
    hottest(&rows)
}

/// The `--profile-format` files beside a capture: its samples on their time line, for
/// speedscope and the Firefox Profiler.
fn write_viewer_files(
    capture: &Path,
    timeline: Option<Result<sparkles_report::export::Timeline, sparkles_report::Error>>,
    formats: &[crate::args::ViewerFormat],
    suffix: &str,
) -> Result<(), ArtifactError> {
    use crate::args::ViewerFormat;
    use sparkles_report::export;
    if formats.is_empty() {
        return Ok(());
    }
    let timeline = timeline.unwrap_or(Err(sparkles_report::Error::Empty))?;
    let dir = capture.parent().unwrap_or(Path::new("."));
    for &format in formats {
        let viewer = match format {
            ViewerFormat::Speedscope => export::Viewer::Speedscope,
            ViewerFormat::Firefox => export::Viewer::Firefox,
        };
        let bytes = export::viewer_file(&timeline, capture, viewer, true)?;
        // profile-alloc.speedscope.json beside profile.speedscope.json.
        sparkles_perf_data::atomic_write::write_atomically(
            &dir.join(format.file_name_with(suffix)),
            &bytes,
        )?;
    }
    Ok(())
}

/// A case's on-CPU profile, and its wall-clock one where the capture has switch records.
pub(crate) type ReadProfiles = ((Profile, Folded), Option<(Profile, Folded)>);

/// profile.json, folded.txt and flamegraph.svg in `dir`; for the wall-clock profile
/// profile-wall.json, folded-wall.txt and flamegraph-wall.svg.
fn write_artifacts(
    dir: &Path,
    p: &Profile,
    folded: &Folded,
    kind: Kind,
) -> Result<(), ArtifactError> {
    let (json_name, folded_name) = artifact_names(kind);
    write_json(&dir.join(json_name), p)?;
    sparkles_perf_data::atomic_write::write_atomically(
        &dir.join(folded_name),
        folded.text().as_bytes(),
    )?;
    let svg = sparkles_report::flame::svg(p, folded)?;
    let (svg_name, _, _) = kind.svg_and_diff();
    sparkles_perf_data::atomic_write::write_atomically(&dir.join(svg_name), svg.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use super::*;

    fn entry(
        name: &str,
        self_pct: f64,
        total_pct: f64,
        kind: &str,
        into: Option<&str>,
    ) -> sparkles_report::profile::Entry {
        serde_json::from_value(serde_json::json!({
            "name": name, "module": null, "file": null, "line": null,
            "self": (self_pct * 10.0) as u64, "total": (total_pct * 10.0) as u64,
            "self_pct": self_pct, "total_pct": total_pct, "self_samples": 1,
            "kind": kind, "inlined_into": into,
        }))
        .unwrap()
    }

    #[test]
    fn roots_with_no_self_time_never_fill_a_hot_list() {
        // Everything inlined into the case's root: the thread's roots follow with none.
        let rows = [
            entry("chars/grapheme/arabic", 93.6, 100.0, "user", None),
            entry("memcpy", 6.4, 6.4, "library", None),
            entry("__libc_start_call_main", 0.0, 100.0, "library", None),
            entry("thread_start", 0.0, 100.0, "std", None),
        ];
        let names: Vec<String> = hottest(&rows).into_iter().map(|h| h.name).collect();
        assert_eq!(names, ["chars/grapheme/arabic", "memcpy"]);
    }

    #[test]
    fn the_inlined_line_holds_the_programs_functions_not_stds_helpers() {
        let functions = [
            entry("core::hint::black_box", 44.0, 44.0, "std", Some("spin")),
            entry("poll_acquire", 9.6, 10.8, "user", Some("Acquire::poll")),
            entry("add_permits_locked", 9.5, 17.9, "user", None),
            entry("push<u64>", 7.3, 10.6, "user", Some("case")),
            entry("deref<AtomicWaker>", 6.3, 6.3, "user", Some("case")),
            entry("{async_fn#0}<u64>", 3.4, 96.1, "user", Some("case")),
        ];
        let hot = hottest_inlined(&functions);
        let names: Vec<&str> = hot.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["poll_acquire", "push<u64>", "deref<AtomicWaker>"]);
        assert_eq!(hot[0].inlined_into.as_deref(), Some("Acquire::poll"));
    }
}
