//! The `--profile` pass around the cases: the sampling it plans before them, and after
//! all timing each case's capture read (`reading`, with the harness's `profile`
//! feature) and its notes said.

use sparkles_perf_data::writer::Compression;
use sparkles_sampler::session::{choose_event, CallGraph, Rate, SamplingConfig};

use plan::ProfileSampling;

use crate::args::{HarnessArgs, ProfileKind};
use sparkles_results::error::Error;
use sparkles_results::profile::ProfileSummary;
use sparkles_results::row::BenchRow;

pub(crate) mod plan;

#[cfg(feature = "profile")]
pub(crate) mod instructions;
#[cfg(feature = "profile")]
mod reading;
#[cfg(all(feature = "profile", test))]
pub(crate) use reading::read_capture;
#[cfg(feature = "profile")]
pub(crate) use reading::{read_captures, BaselineProfiles};

/// The cases with a capture to read, and the threads that read them: one a CPU, at most
/// one a capture (one at least).
pub(crate) fn analysis_threads(reports: &[crate::case_report::CaseReport]) -> (usize, usize) {
    let captures = reports
        .iter()
        .filter(|r| r.profile.as_ref().is_some_and(|p| p.capture.is_some()))
        .count();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(captures)
        .max(1);
    (captures, threads)
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
    reports: &mut [crate::case_report::CaseReport],
    _args: &HarnessArgs,
    _event_note: &str,
    _save_path: Option<&std::path::Path>,
    _against: Option<&plan::Against<'_>>,
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

/// The sampling of a `--profile` run's passes, and the line saying what it samples;
/// `None` where nothing can be sampled here (the reason said by the catalog).
pub(crate) fn profile_sampling(
    args: &HarnessArgs,
) -> Result<Option<(ProfileSampling, String)>, Error> {
    if args.profile == Some(ProfileKind::Alloc) {
        let plan = crate::tiers::alloc::sampling::Plan {
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
            sparkles_results::units::format_bytes(plan.mean as f64),
            sparkles_results::units::format_bytes(f64::from(plan.stack)),
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
    let (memory, wall) = match args.profile.unwrap_or(ProfileKind::Cpu) {
        ProfileKind::Cpu => (false, false),
        ProfileKind::Mem => (true, false),
        ProfileKind::Wall => (false, true),
        // `profile_sampling` takes it; serve mode (`sparkles compare`) asks here.
        ProfileKind::Alloc => {
            return Err(Error::Usage {
                flag: "--profile",
                message: "--profile=alloc is not served: `sparkles compare` samples on the CPU (--profile, =wall, =mem); run each revision's bench with --profile=alloc and --save-baseline/--baseline".into(),
            })
        }
        // The valgrind pass's profile, which `run` takes before any sampling is chosen.
        ProfileKind::Instructions => {
            return Err(Error::Usage {
                flag: "--profile",
                message: "--profile=instructions samples nothing: it is the --instructions pass's profile, not served to `sparkles compare`".into(),
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
        // A capture not written is its error, said above.
        for file in p
            .not_written
            .iter()
            .filter(|f| p.error.as_ref() != Some(*f))
        {
            eprintln!("profile: {}: not written: {file}", row.case);
        }
        #[cfg(feature = "profile")]
        if let Some(u) = &p.unwind {
            eprintln!("profile: {}: {}", row.case, u.describe());
        }
        if let Some(a) = &p.alloc {
            eprintln!(
                "profile: {}: {}",
                row.case,
                sparkles_results::profile::describe_alloc(a, p.samples)
            );
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
