//! The `--profile` pass around the cases: the sampling it plans before them, and after
//! all timing each case's capture read (`reading`, with the harness's `profile`
//! feature) and its notes said.

use sparkles_perf_data::writer::Compression;
use sparkles_sampler::session::{choose_event, CallGraph, Rate, SamplingConfig};

use crate::args::HarnessArgs;
use crate::error::Error;
use crate::profile::ProfileSummary;
use crate::record::BenchRow;

#[cfg(feature = "profile")]
pub(crate) mod instructions;
#[cfg(feature = "profile")]
mod reading;
#[cfg(all(feature = "profile", test))]
pub(crate) use reading::read_capture;
#[cfg(feature = "profile")]
pub(crate) use reading::read_captures;

/// The profile a case's is diffed against (without the `profile` feature, what would
/// have been: nothing is read).
#[derive(Debug)]
#[cfg_attr(not(feature = "profile"), allow(dead_code))]
pub(crate) enum Against<'a> {
    /// The baseline's, saved beside its rows (`profile/<case folder>/`).
    Baseline(&'a crate::baseline::Baseline),
    /// The one in this folder (its profile.json and folded.txt): serve mode's `against`.
    Folder(&'a std::path::Path),
}

/// Which of a case's sampled profiles: each has its own files beside the capture and
/// beside a baseline's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// On-CPU (`--profile`, `=mem`).
    Cpu,
    /// Wall-clock (`--profile=wall`).
    Wall,
    /// Allocated bytes (`--profile=alloc`).
    Alloc,
    /// Bytes still live when their iteration ended (`--profile=alloc`).
    AllocLive,
}

#[cfg_attr(not(feature = "profile"), allow(dead_code))]
impl Kind {
    /// Every kind a baseline may keep.
    pub(crate) const ALL: [Kind; 4] = [Kind::Cpu, Kind::Wall, Kind::Alloc, Kind::AllocLive];

    /// The names of its flamegraph, diff and diff flamegraph beside the capture.
    pub(crate) fn svg_and_diff(self) -> (&'static str, &'static str, &'static str) {
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
    pub(crate) fn flag(self) -> &'static str {
        match self {
            Kind::Cpu => "--profile",
            Kind::Wall => "--profile=wall",
            Kind::Alloc | Kind::AllocLive => "--profile=alloc",
        }
    }
}

/// The names of a profile's JSON and folded stacks beside its capture (and beside a
/// baseline's rows).
pub(crate) fn artifact_names(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Cpu => ("profile.json", "folded.txt"),
        Kind::Wall => ("profile-wall.json", "folded-wall.txt"),
        Kind::Alloc => ("profile-alloc.json", "folded-alloc.txt"),
        Kind::AllocLive => ("profile-alloc-live.json", "folded-alloc-live.txt"),
    }
}

/// Without the `profile` feature no profile is saved with a baseline.
#[cfg(not(feature = "profile"))]
pub(crate) struct BaselineProfiles;

#[cfg(not(feature = "profile"))]
impl BaselineProfiles {
    /// Nothing to save.
    pub(crate) fn save(self) {}
}

/// Without the `profile` feature the captures are written but not read: said once.
#[cfg(not(feature = "profile"))]
pub(crate) fn read_captures(
    reports: &mut [crate::runner::CaseReport],
    _args: &HarnessArgs,
    _event_note: &str,
    _save_path: Option<&std::path::Path>,
    _against: Option<&Against<'_>>,
) -> BaselineProfiles {
    if reports
        .iter()
        .any(|r| r.profile.as_ref().is_some_and(|p| p.capture.is_some()))
    {
        eprintln!(
            "profile: captures written, not read: this build of sparkles-bench has no `profile` feature (`sparkles report CAPTURE` reads one)"
        );
    }
    BaselineProfiles
}

/// An allocation profile's capture, beside the case's CPU one.
pub(crate) const ALLOC_CAPTURE: &str = "capture-alloc.perf.data";

/// What a case's profile pass samples.
#[derive(Debug, Clone)]
pub(crate) enum ProfileSampling {
    /// perf_event sampling (`--profile`, `=wall`, `=mem`).
    Perf(SamplingConfig),
    /// The counting allocator's byte sampling (`--profile=alloc`).
    Alloc(crate::alloc::sampling::Plan),
}

/// The sampling of a `--profile` run's passes, and the line saying what it samples;
/// `None` where nothing can be sampled here (the reason said by the catalog).
pub(crate) fn profile_sampling(
    args: &HarnessArgs,
) -> Result<Option<(ProfileSampling, String)>, Error> {
    if args.profile.as_deref() == Some("alloc") {
        let plan = crate::alloc::sampling::Plan {
            mean: args.profile_alloc_mean,
            stack: args.profile_stack.next_multiple_of(8).min(65528),
            compression: if args.profile_no_compress {
                Compression::Off
            } else {
                Compression::default()
            },
        };
        let note = format!(
            "sampling allocations: one sample per {} allocated on average (a random, exponential interval: --profile-alloc-mean), with {} of stack",
            crate::table::format_bytes(plan.mean as f64),
            crate::table::format_bytes(f64::from(plan.stack)),
        );
        return Ok(Some((ProfileSampling::Alloc(plan), note)));
    }
    if sparkles_sampler::UNAVAILABLE.is_some() {
        // The flags are still checked.
        sampling(args)?;
        return Ok(None);
    }
    let (config, note) = sampling(args)?;
    Ok(Some((ProfileSampling::Perf(config), note)))
}

/// The sampling a `--profile` run uses: the event asked for, else the default chain.
/// With the line saying which event it samples, and why.
pub(crate) fn sampling(args: &HarnessArgs) -> Result<(SamplingConfig, String), Error> {
    let (memory, wall) = match args.profile.as_deref() {
        Some("cpu") => (false, false),
        Some("mem") => (true, false),
        Some("wall") => (false, true),
        // `profile_sampling` takes it; serve mode (`sparkles compare`) asks here.
        Some("alloc") => {
            return Err(Error::Usage {
                flag: "--profile",
                message: "--profile=alloc is not served: `sparkles compare` samples on the CPU (--profile, =wall, =mem); run each revision's bench with --profile=alloc and --save-baseline/--baseline".into(),
            })
        }
        other => {
            return Err(Error::Usage {
                flag: "--profile",
                message: format!(
                    "'{}' is not a profile kind: use --profile (CPU sampling), --profile=wall (CPU sampling and where the case's threads wait), --profile=mem (memory: precise memory events, else first-touch placement), --profile=alloc (where the bytes are allocated: the counting allocator's samples) or --profile=instructions (callgrind's exact instruction counts per function, under valgrind)",
                    other.unwrap_or_default()
                ),
            })
        }
    };
    let system = sparkles_sampler::system::System::probe();
    let usage = |flag: &'static str| {
        move |e: sparkles_sampler::EventError| Error::Usage {
            flag,
            message: e.to_string(),
        }
    };
    let resolver = sparkles_sampler::EventResolver::live().map_err(usage("--profile"))?;
    let (event, note) = choose_event(&resolver, &system, args.profile_event.as_deref())
        .map_err(usage("--profile-event"))?;
    let rate = args
        .profile_period
        .map(Rate::Period)
        .unwrap_or(Rate::Frequency(args.profile_freq));
    let call_graph = if args.profile_stack == 0 {
        CallGraph::FramePointer
    } else {
        CallGraph::Dwarf(args.profile_stack.next_multiple_of(8).min(65528))
    };
    let mut config = SamplingConfig {
        // The session shrinks buffers to fit an unprivileged user's perf_event_mlock_kb.
        buffer_pages: 256,
        compact_stacks: true,
        compression: if args.profile_no_compress {
            Compression::Off
        } else {
            Compression::default()
        },
        // Each case's pass streams to its own capture (the bencher sets the path).
        stream_to: None,
        ..SamplingConfig::new(vec![event.into()], rate, call_graph)
    };
    if wall {
        let source = sparkles_sampler::off_cpu::add_off_cpu(&mut config, &resolver);
        return Ok((config, format!("{note}\n{source}")));
    }
    if !memory {
        return Ok((config, note));
    }
    if args.profile_event.is_some() {
        return Err(Error::Usage {
            flag: "--profile-event",
            message: "--profile=mem chooses its own event (the machine's precise memory event, else page faults): leave out --profile-event".into(),
        });
    }
    let plan =
        sparkles_sampler::mem_events::live_plan(&resolver, &system).map_err(usage("--profile"))?;
    let note = plan.apply(&mut config);
    Ok((config, note))
}

/// The notes every one of several profiles has (the kernel's sampling limit, say), to be
/// said once rather than per case.
pub(crate) fn common_notes<'a>(profiles: &[&'a ProfileSummary]) -> Vec<&'a String> {
    match profiles.split_first() {
        Some((first, rest)) if !rest.is_empty() => first
            .notes
            .iter()
            .filter(|n| rest.iter().all(|p| p.notes.contains(n)))
            .collect(),
        _ => Vec::new(),
    }
}

/// Each case's profile notes (those every case has, once), why a case has no capture, and
/// how its stacks unwound.
pub(crate) fn print_notes(rows: &[BenchRow]) {
    let profiles: Vec<&ProfileSummary> = rows.iter().filter_map(|r| r.profile.as_ref()).collect();
    let common = common_notes(&profiles);
    for note in &common {
        eprintln!("profile: every case: {note}");
    }
    // The sampler refused every case for one reason (perf_event_open refused here): once.
    let common_error = profiles
        .split_first()
        .and_then(|(first, rest)| {
            first
                .error
                .as_ref()
                .filter(|e| rest.iter().all(|p| p.error.as_ref() == Some(*e)))
        })
        .filter(|_| profiles.len() > 1);
    if let Some(error) = common_error {
        eprintln!("profile: every case: no capture: {error}");
    }
    for row in rows {
        let Some(p) = &row.profile else { continue };
        if let Some(error) = p.error.as_ref().filter(|_| common_error.is_none()) {
            eprintln!("profile: {}: no capture: {error}", row.case);
        }
        for note in p.notes.iter().filter(|n| !common.contains(n)) {
            eprintln!("profile: {}: {note}", row.case);
        }
        #[cfg(feature = "profile")]
        if let Some(u) = &p.unwind {
            eprintln!("profile: {}: {}", row.case, u.describe());
        }
        if let Some(a) = &p.alloc {
            eprintln!("profile: {}: {}", row.case, describe_alloc(a, p.samples));
        }
    }
}

/// A warning when this bench binary cannot be symbolized or unwound well.
pub(crate) fn debug_info_warning() -> Option<String> {
    use object::{Object, ObjectSection};
    let exe = std::env::current_exe().ok()?;
    let bytes = std::fs::read(&exe).ok()?;
    let file = object::File::parse(&*bytes).ok()?;
    let has = |name: &str| file.section_by_name(name).is_some_and(|s| s.size() > 0);
    if !has(".eh_frame") {
        return Some(format!(
            "{} has no .eh_frame: stacks cannot be unwound (remove -C force-unwind-tables=no, or set panic = \"unwind\")",
            exe.display()
        ));
    }
    if !has(".debug_line") {
        return Some(format!(
            "{} has no line tables: profiles name functions from .symtab only; add [profile.bench] debug = \"line-tables-only\" to Cargo.toml",
            exe.display()
        ));
    }
    None
}

/// An allocation profile's line: the bytes its samples stand for, what outlived the
/// iterations, and what sampling cost.
pub(crate) fn describe_alloc(a: &crate::profile::AllocProfile, samples: u64) -> String {
    use crate::table::format_bytes;
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
