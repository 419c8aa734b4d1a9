//! sparkles-bench: the sparkles benchmark harness.
//!
//! A bench target (`harness = false`) builds a [`Suite`] of cases and hands it to
//! [`main`]. Under `cargo bench` (which passes `--bench`) every case is measured: a timing
//! pass with nothing enabled, then a counting pass under the counting tiers, reported as
//! a table, as `sparkles.bench/1` JSON lines, and against a saved baseline. Under
//! `cargo test` each case runs once as a smoke test.
//!
//! ```no_run
//! use sparkles_bench::{Suite, Throughput};
//!
//! fn main() {
//!     let mut suite = Suite::new("mybench");
//!     suite.case("sum/1k", |b| {
//!         let data: Vec<u64> = (0..1000).collect();
//!         b.throughput(Throughput::Elements(1000));
//!         b.iter(|| data.iter().sum::<u64>())
//!     });
//!     sparkles_bench::main(suite);
//! }
//! ```

pub mod args;
pub mod baseline;
mod bencher;
pub mod catalog;
pub mod cli;
pub mod counters;
pub mod demo;
pub mod environment;
pub mod error;
pub mod output;
pub mod profile;
pub mod record;
mod record_cmd;
mod runner;
pub mod stats;
mod suite;
pub mod table;
mod throughput;
pub mod tier0;

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;

pub use args::HarnessArgs;
pub use bencher::{BatchSize, Bencher};
pub use error::Error;
pub use suite::{slug, CaseOutcome, Group, Suite};
pub use throughput::Throughput;

use args::{ColorChoice, ListFormat};
use bencher::CountPlan;
use catalog::{Catalog, Selection, Source};
use record::{BenchRow, Timing};
use runner::{CaseReport, Progress, Protocol};
use stats::Verdict;

/// Runs `suite` with this process's arguments and exits with the run's status.
pub fn main(suite: Suite) -> ! {
    std::process::exit(run_main(suite, std::env::args_os()))
}

/// Runs `suite` with `args` (the first is the program name) and returns the exit status:
/// 0 when every case passed, 1 when one failed, 2 for bad flags or unreadable inputs.
pub fn run_main<I, T>(suite: Suite, args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args = match HarnessArgs::try_parse_from(args) {
        Ok(args) => args,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match run(suite, &args) {
        Ok(outcome) => {
            if outcome.all_ok() {
                0
            } else {
                1
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

/// What a run did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// One row per case that ran (smoke mode rows carry no timing).
    pub rows: Vec<BenchRow>,
    /// Where the baseline was saved, when one was.
    pub saved_baseline: Option<PathBuf>,
}

impl Outcome {
    /// Whether every case that ran passed.
    pub fn all_ok(&self) -> bool {
        self.rows.iter().all(|r| r.ok)
    }

    /// The median ns per iteration of `case`, when it ran and passed.
    pub fn median(&self, case: &str) -> Option<f64> {
        self.rows
            .iter()
            .find(|r| r.case == case && r.ok)
            .and_then(|r| r.timing.as_ref())
            .map(|t| t.summary.median)
    }
}

/// Runs `suite` as `args` say, for bench binaries that report on the outcome themselves
/// (ratios against a peer tool); bad flags or inputs exit with status 2.
pub fn run_or_exit(suite: Suite, args: &HarnessArgs) -> Outcome {
    run(suite, args).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    })
}

/// What the perf_event tiers count, from `--events`, `--perf-exact`, `--perf-threads`
/// and `--syscalls`.
fn counting_options(args: &HarnessArgs) -> counters::CountingOptions {
    let mut options = counters::CountingOptions::default();
    if let Some(events) = &args.events {
        options.events = events.clone();
    }
    options.exact = args.perf_exact;
    options.calling_thread_only = args.perf_threads == "self";
    if let Some(names) = &args.syscalls {
        options.syscalls = names.clone();
        options.syscalls_named = true;
    }
    options
}

fn matches(name: &str, pattern: &str, exact: bool) -> bool {
    if exact {
        name == pattern
    } else {
        name.contains(pattern)
    }
}

fn use_colour(choice: ColorChoice, terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => terminal && std::env::var_os("NO_COLOR").is_none(),
    }
}

/// Runs `suite` as `args` say and prints what it measured.
pub fn run(suite: Suite, args: &HarnessArgs) -> Result<Outcome, Error> {
    if args.capabilities {
        cli::print_capabilities();
        return Ok(Outcome::default());
    }
    let catalog = Catalog::probe_with(&counting_options(args))?;
    if args.list_metrics {
        print!("{catalog}");
        return Ok(Outcome::default());
    }
    let profiling = args.bench && args.profile.is_some();
    let mut asked = Vec::new();
    if profiling {
        asked.push(Source::Profile);
    }
    // --events and --perf-exact say what --perf counts, so they ask for it too.
    if args.perf || args.events.is_some() || args.perf_exact {
        asked.push(Source::Perf);
    }
    if args.syscalls.is_some() {
        asked.push(Source::Syscalls);
    }
    let selection = catalog.select_with(args.metrics.as_deref(), &asked)?;
    let suite_name = suite.name().to_string();
    let samples = args.samples.or(suite.default_samples).unwrap_or(32);
    let total = suite.cases.len();
    // sparkles cases are never ignored: `--ignored` alone selects none of them.
    let cases: Vec<_> = suite
        .cases
        .into_iter()
        .filter(|_| !args.ignored || args.include_ignored)
        .filter(|c| {
            args.filters.is_empty() || args.filters.iter().any(|f| matches(&c.name, f, args.exact))
        })
        .filter(|c| !args.skip.iter().any(|s| matches(&c.name, s, args.exact)))
        .collect();
    let filtered_out = total - cases.len();

    if args.list {
        let kind = if args.bench { "benchmark" } else { "test" };
        for case in &cases {
            println!("{}: {kind}", case.name);
        }
        if args.format != Some(ListFormat::Terse) {
            println!("\n{} cases", cases.len());
        }
        return Ok(Outcome::default());
    }

    if !args.bench {
        return Ok(smoke(cases, args, filtered_out));
    }

    // Everything that can fail on bad input fails here, before anything is measured.
    let out_dir = output::out_dir(args.out_dir.as_deref());
    let baseline = match &args.baseline {
        Some(spec) => Some(baseline::load(spec, &out_dir, &suite_name)?),
        None => None,
    };
    let save_path = match &args.save_baseline {
        Some(name) => Some(baseline::prepare_save(name, &out_dir, &suite_name)?),
        None => None,
    };
    let json_to_stdout = args.bench_json.as_deref() == Some("-");
    let json_path = args
        .bench_json
        .as_deref()
        .filter(|p| *p != "-")
        .map(PathBuf::from);
    if let Some(path) = &json_path {
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(dir) = parent.filter(|d| !d.is_dir()) {
            return Err(Error::Usage {
                flag: "--bench-json",
                message: format!("folder {} does not exist", dir.display()),
            });
        }
    }
    let environment = environment::Environment::current(&suite_name);

    let terminal = if json_to_stdout {
        std::io::stderr().is_terminal()
    } else {
        std::io::stdout().is_terminal()
    };
    let mut out: Box<dyn Write> = if json_to_stdout {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    let write_err = |e: std::io::Error| Error::io("standard output", e);

    if let Some(base) = &baseline {
        match &base.environment {
            Some(then) => {
                let differences = then.differences(&environment);
                if !differences.is_empty() {
                    eprintln!(
                        "warning: baseline {} was measured elsewhere; timings may not compare:",
                        base.path.display()
                    );
                    for (field, was, now) in differences {
                        eprintln!("  {field}: '{was}' in the baseline, '{now}' now");
                    }
                }
            }
            None => eprintln!(
                "note: baseline {} has no environment record; cannot check where it was measured",
                base.path.display()
            ),
        }
    }

    for note in catalog::unavailable_notes(selection.metrics(), |m| {
        selection.is_filtered() || asked.contains(&m.source)
    }) {
        eprintln!("note: {note}");
    }

    let mut profile_note = String::new();
    let mut protocol = Protocol {
        min_time: args.bench_min_time,
        samples,
        order: args.sample_order,
        count_iterations: args.count_iterations,
        count_plan: selection.needs_counting_pass().then(|| CountPlan {
            tier0: selection.needs(Source::Tier0),
            perf: catalog
                .plans()
                .perf
                .clone()
                .filter(|_| selection.needs(Source::Perf)),
            syscalls: catalog
                .plans()
                .syscalls
                .clone()
                .filter(|_| selection.needs(Source::Syscalls)),
        }),
        profile: None,
    };
    if args.profile.is_some() {
        let (sampling, note) = profile_sampling(args)?;
        profile_note = note.clone();
        protocol.profile = Some((sampling, args.profile_time, out_dir.join("profile")));
        eprintln!("profile: {note}");
        if let Some(warning) = debug_info_warning() {
            eprintln!("warning: {warning}");
        }
    }
    writeln!(
        out,
        "sparkles: suite {suite_name}, {} cases ({filtered_out} filtered out), {} samples of ≥ {:?} ({}){}",
        cases.len(),
        samples,
        args.bench_min_time,
        match args.sample_order {
            args::SampleOrder::RoundRobin => "round-robin",
            args::SampleOrder::Blocked => "blocked",
        },
        if protocol.count_plan.is_some() {
            ", then one counting pass"
        } else {
            ""
        }
    )
    .map_err(write_err)?;

    let mut reports = runner::measure(cases, &protocol, &Progress::new());
    // Every profile is unwound, named and aggregated after all timing (nothing overlaps
    // it): its top functions, how its stacks unwound, and the case's artifacts beside the
    // capture (flamegraph.svg, folded.txt, profile.json).
    for r in &mut reports {
        let case = r.name.clone();
        let Some(p) = r.profile.as_mut() else {
            continue;
        };
        let Some(capture) = p.capture.clone() else {
            continue;
        };
        let capture = PathBuf::from(capture);
        let Some((profile, folded)) = report_profile(&case, &capture, p, args, &profile_note)
        else {
            continue;
        };
        let dir = capture.parent().unwrap_or(Path::new(".")).to_path_buf();
        let slug = dir
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        // With --save-baseline, the profile is saved with the rows; with --baseline, the
        // baseline's is diffed against it.
        if let Some(save) = &save_path {
            let keep = save
                .parent()
                .unwrap_or(Path::new("."))
                .join("profile")
                .join(&slug);
            let saved = std::fs::create_dir_all(&keep)
                .map_err(|e| format!("{}: {e}", keep.display()))
                .and_then(|()| std::fs::read(dir.join("profile.json")).map_err(|e| e.to_string()))
                .and_then(|j| {
                    sparkles_report::profile::write_atomic(&keep.join("profile.json"), &j)
                })
                .and_then(|()| {
                    sparkles_report::profile::write_atomic(
                        &keep.join("folded.txt"),
                        folded.text().as_bytes(),
                    )
                });
            if let Err(e) = saved {
                p.notes
                    .push(format!("profile not saved with the baseline: {e}"));
            }
        }
        if let Some(base) = &baseline {
            let from = base
                .path
                .parent()
                .unwrap_or(Path::new("."))
                .join("profile")
                .join(&slug);
            match diff_against(&case, &from, &profile, &folded, &dir) {
                Ok(movers) => p.movers = movers,
                Err(e) => p.notes.push(e),
            }
        }
    }
    let mut rows: Vec<BenchRow> = reports.iter().map(|r| row_of(r, &selection)).collect();
    let compared = baseline
        .as_ref()
        .map(|b| baseline::compare_rows(&mut rows, b));

    let profiles: Vec<&profile::ProfileSummary> =
        rows.iter().filter_map(|r| r.profile.as_ref()).collect();
    let common = common_notes(&profiles);
    for note in &common {
        eprintln!("profile: every case: {note}");
    }
    for row in &rows {
        let Some(p) = &row.profile else { continue };
        if let Some(error) = &p.error {
            eprintln!("profile: {}: no capture: {error}", row.case);
        }
        for note in p.notes.iter().filter(|n| !common.contains(n)) {
            eprintln!("profile: {}: {note}", row.case);
        }
        if let Some(u) = &p.unwind {
            eprintln!("profile: {}: {}", row.case, u.describe());
        }
    }
    let colour = use_colour(args.color, terminal);
    // The table shows a flag-selected tier's headline columns (all of them are in the
    // JSON); --metrics shows exactly what it names.
    let columns: Vec<_> = selection
        .metrics()
        .iter()
        .filter(|m| selection.is_filtered() || m.source != Source::Perf || m.default_visible)
        .cloned()
        .collect();
    write!(out, "{}", table::render(&rows, &columns, colour)).map_err(write_err)?;
    print_counting_coverage(&rows);
    if let (Some(base), Some(compared)) = (&baseline, compared) {
        let count = |v: Verdict| {
            rows.iter()
                .filter(|r| r.comparison.as_ref().map(|c| c.verdict) == Some(v))
                .count()
        };
        writeln!(
            out,
            "compared {compared} of {} cases with {}: {} regressions, {} improvements, {} inside the noise, {} underpowered",
            rows.len(),
            base.path.display(),
            count(Verdict::Regression),
            count(Verdict::Improvement),
            count(Verdict::InsideTheNoise),
            count(Verdict::Underpowered),
        )
        .map_err(write_err)?;
    }

    let lines = record::to_json_lines(&rows);
    if json_to_stdout {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(lines.as_bytes()).map_err(write_err)?;
        stdout.flush().map_err(write_err)?;
    } else if let Some(path) = &json_path {
        output::write_atomically(path, lines.as_bytes())?;
    }
    if let Some(path) = &save_path {
        baseline::save(path, &rows, &environment)?;
        writeln!(out, "saved baseline to {}", path.display()).map_err(write_err)?;
    }
    Ok(Outcome {
        rows,
        saved_baseline: save_path,
    })
}

/// Which threads the perf_event tiers counted, and how they read them: once for the run
/// (from the first counted case), then for any case where threads started during its
/// pass or something was not counted.
fn print_counting_coverage(rows: &[BenchRow]) {
    let tiers = |row: &BenchRow| -> Vec<(&'static str, counters::TierReport)> {
        let Some(c) = &row.counting else {
            return Vec::new();
        };
        [("perf", c.perf.clone()), ("syscalls", c.syscalls.clone())]
            .into_iter()
            .filter_map(|(n, t)| Some((n, t?)))
            .collect()
    };
    let names = |threads: &[counters::ThreadInfo]| {
        threads
            .iter()
            .map(|t| format!("{} ({})", t.tid, t.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(first) = rows.iter().find(|r| r.counting.is_some()) {
        for (name, t) in tiers(first) {
            eprintln!(
                "counting: {name}: {} threads counted from the start of each pass ({}){}; {} group{} per thread ({} of hardware counters); read with {}{}",
                t.threads.len(),
                names(&t.threads),
                if t.inherit {
                    ", and every thread they start (inherit)"
                } else {
                    "; threads started during a pass are not counted"
                },
                t.groups_per_thread,
                if t.groups_per_thread == 1 { "" } else { "s" },
                t.pmu_groups,
                t.read,
                t.read_reason
                    .as_deref()
                    .map(|r| format!(" (not rdpmc: {r})"))
                    .unwrap_or_default()
            );
        }
    }
    for row in rows {
        for (name, t) in tiers(row) {
            if !t.threads_started.is_empty() {
                eprintln!(
                    "counting: {}: {name}: threads started during the pass, {}: {}",
                    row.case,
                    if t.inherit {
                        "counted through inherit"
                    } else {
                        "not counted"
                    },
                    names(&t.threads_started)
                );
            }
            for note in &t.notes {
                eprintln!("counting: {}: {name}: {note}", row.case);
            }
        }
    }
}

fn row_of(report: &CaseReport, selection: &Selection) -> BenchRow {
    let timing = report
        .ok
        .then(|| Timing::from_samples(report.samples.clone()))
        .flatten();
    let median = timing.as_ref().map_or(f64::NAN, |t| t.summary.median);
    let client = throughput::values(report.throughput, median);
    let metrics = selection
        .metrics()
        .iter()
        .map(|m| {
            let value = if !report.ok {
                None
            } else if m.source == Source::Client {
                client.iter().find(|(id, _)| *id == m.id).and_then(|v| v.1)
            } else if m.source == Source::Profile {
                profile::ProfileSummary::values(report.profile.as_ref())
                    .iter()
                    .find(|(id, _)| *id == m.id)
                    .and_then(|v| v.1)
            } else {
                report
                    .counted
                    .iter()
                    .find(|(id, _)| *id == m.id)
                    .and_then(|v| v.1)
            };
            (m.id.to_string(), value)
        })
        .collect();
    BenchRow {
        schema: record::SCHEMA.to_string(),
        case: report.name.clone(),
        slug: report.slug.clone(),
        ok: report.ok,
        error: report.error.clone(),
        iterations: if report.ok { report.iterations } else { 0 },
        timing,
        metrics,
        comparison: None,
        counting: report.counting.clone(),
        profile: report.profile.clone(),
    }
}

/// The hot-symbol diff of a case's profile against the baseline's saved in `from`:
/// diff.json and diff.svg beside the case's capture, and its three top movers.
fn diff_against(
    case: &str,
    from: &Path,
    profile: &sparkles_report::profile::Profile,
    folded: &sparkles_report::profile::Folded,
    dir: &Path,
) -> Result<Vec<sparkles_report::diff::Mover>, String> {
    use sparkles_report::{diff, profile as report};
    let base_json = from.join("profile.json");
    let Ok(bytes) = std::fs::read(&base_json) else {
        return Err(format!(
            "no profile diff: {} is absent (save the baseline with --profile)",
            base_json.display()
        ));
    };
    let base: report::Profile = serde_json::from_slice(&bytes)
        .map_err(|e| format!("no profile diff: {}: {e}", base_json.display()))?;
    let d = diff::diff(case, &base, profile);
    let json = serde_json::to_vec_pretty(&d).map_err(|e| e.to_string())?;
    report::write_atomic(&dir.join("diff.json"), &json)?;
    let base_folded = std::fs::read_to_string(from.join("folded.txt"))
        .map_err(|e| e.to_string())
        .and_then(|t| report::Folded::parse(&t));
    match base_folded.and_then(|b| diff::svg(&d, &b, folded)) {
        Ok(svg) => report::write_atomic(&dir.join("diff.svg"), svg.as_bytes())?,
        Err(e) => return Err(format!("diff.svg not written: {e}")),
    }
    Ok(d.movers.into_iter().take(3).collect())
}

/// Unwinds, names and aggregates one case's capture; writes its artifacts beside it.
fn report_profile(
    case: &str,
    capture: &std::path::Path,
    summary: &mut profile::ProfileSummary,
    args: &HarnessArgs,
    event_note: &str,
) -> Option<(
    sparkles_report::profile::Profile,
    sparkles_report::profile::Folded,
)> {
    use sparkles_report::{flame, profile as report, stacks};
    let options = stacks::StackOptions {
        unwind: args.profile_unwind,
        ..stacks::StackOptions::default()
    };
    let mut unwind = stacks::UnwindSummary::default();
    let (mut p, folded) =
        match report::profile_capture_with(capture, case, &options, |s| unwind.add(s)) {
            Ok(done) => done,
            Err(e) => {
                summary.notes.push(format!("no profile: {e}"));
                return None;
            }
        };
    p.event_note = Some(event_note.to_string()).filter(|n| !n.is_empty());
    summary.unwind = Some(unwind);
    // Under the row: the hottest symbols (what perf report lists first), whose names are
    // the case's own code; inlined std helpers (`lt`, `copy<u64>`) stay in profile.json's
    // `functions` view.
    summary.top = p
        .symbols
        .iter()
        .take(5)
        .map(|e| profile::HotFunction {
            name: e.name.clone(),
            self_pct: e.self_pct,
            total_pct: e.total_pct,
        })
        .collect();
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
    let dir = capture.parent().unwrap_or(std::path::Path::new("."));
    let json = serde_json::to_vec_pretty(&p).map_err(|e| e.to_string());
    let written = json
        .and_then(|j| report::write_atomic(&dir.join("profile.json"), &j))
        .and_then(|()| report::write_atomic(&dir.join("folded.txt"), folded.text().as_bytes()))
        .and_then(|()| flame::svg(&p, &folded))
        .and_then(|svg| report::write_atomic(&dir.join("flamegraph.svg"), svg.as_bytes()));
    if let Err(e) = written {
        summary
            .notes
            .push(format!("profile artifacts not written: {e}"));
    }
    Some((p, folded))
}

/// The sampling a `--profile` run uses: the event asked for, else the default chain.
/// With the line saying which event it samples, and why.
fn profile_sampling(
    args: &HarnessArgs,
) -> Result<(sparkles_sampler::session::SamplingConfig, String), Error> {
    use sparkles_sampler::session::{choose_event, CallGraph, Rate, SamplingConfig};
    let memory = match args.profile.as_deref() {
        Some("cpu") => false,
        Some("mem") => true,
        other => {
            return Err(Error::Usage {
                flag: "--profile",
                message: format!(
                    "'{}' is not a profile kind: use --profile (CPU sampling) or --profile=mem (memory: precise memory events, else first-touch placement)",
                    other.unwrap_or_default()
                ),
            })
        }
    };
    let system = sparkles_sampler::system::System::probe();
    let resolver = sparkles_sampler::EventResolver::live().map_err(|e| Error::Usage {
        flag: "--profile",
        message: e.to_string(),
    })?;
    let (event, note) =
        choose_event(&resolver, &system, args.profile_event.as_deref()).map_err(|e| {
            Error::Usage {
                flag: "--profile-event",
                message: e.to_string(),
            }
        })?;
    let config = SamplingConfig {
        events: vec![event.into()],
        rate: args
            .profile_period
            .map(Rate::Period)
            .unwrap_or(Rate::Frequency(args.profile_freq)),
        call_graph: if args.profile_stack == 0 {
            CallGraph::FramePointer
        } else {
            CallGraph::Dwarf(args.profile_stack.next_multiple_of(8).min(65528))
        },
        // The session shrinks buffers to fit an unprivileged user's perf_event_mlock_kb.
        buffer_pages: 256,
        compact_stacks: true,
        memory: None,
    };
    if memory {
        if args.profile_event.is_some() {
            return Err(Error::Usage {
                flag: "--profile-event",
                message: "--profile=mem chooses its own event (the machine's precise memory event, else page faults): leave out --profile-event".into(),
            });
        }
        let plan = sparkles_sampler::mem_events::live_plan(&resolver, &system).map_err(|e| {
            Error::Usage {
                flag: "--profile",
                message: e,
            }
        })?;
        let mut config = config;
        let note = plan.apply(&mut config);
        return Ok((config, note));
    }
    Ok((config, note))
}

/// The notes every one of several profiles has (the kernel's sampling limit, say), to be
/// said once rather than per case.
fn common_notes<'a>(profiles: &[&'a profile::ProfileSummary]) -> Vec<&'a String> {
    match profiles.split_first() {
        Some((first, rest)) if !rest.is_empty() => first
            .notes
            .iter()
            .filter(|n| rest.iter().all(|p| p.notes.contains(n)))
            .collect(),
        _ => Vec::new(),
    }
}

/// A warning when this bench binary cannot be symbolized or unwound well.
fn debug_info_warning() -> Option<String> {
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

/// Runs each case once, printing libtest's lines so `cargo test` and nextest read them.
fn smoke(cases: Vec<suite::Case>, args: &HarnessArgs, filtered_out: usize) -> Outcome {
    let started = Instant::now();
    let n = cases.len();
    println!("\nrunning {n} {}", if n == 1 { "test" } else { "tests" });
    let colour = use_colour(args.color, std::io::stdout().is_terminal());
    let reports = runner::smoke(cases, |r| {
        if args.quiet {
            return;
        }
        let status = match (r.ok, colour) {
            (true, true) => "\x1b[32mok\x1b[0m",
            (true, false) => "ok",
            (false, true) => "\x1b[31mFAILED\x1b[0m",
            (false, false) => "FAILED",
        };
        println!("test {} ... {status}", r.name);
    });
    let failed: Vec<&CaseReport> = reports.iter().filter(|r| !r.ok).collect();
    if !failed.is_empty() {
        println!("\nfailures:");
        for r in &failed {
            println!("    {}: {}", r.name, r.error.as_deref().unwrap_or("failed"));
        }
    }
    println!(
        "\ntest result: {}. {} passed; {} failed; 0 ignored; 0 measured; {filtered_out} filtered out; finished in {:.2}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        n - failed.len(),
        failed.len(),
        started.elapsed().as_secs_f64()
    );
    let rows = reports
        .iter()
        .map(|r| BenchRow {
            schema: record::SCHEMA.to_string(),
            case: r.name.clone(),
            slug: r.slug.clone(),
            ok: r.ok,
            error: r.error.clone(),
            iterations: 0,
            timing: None,
            metrics: Default::default(),
            comparison: None,
            counting: None,
            profile: None,
        })
        .collect();
    Outcome {
        rows,
        saved_baseline: None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    #[test]
    fn a_note_every_profile_has_is_common_and_said_once() {
        let summary = |notes: &[&str]| super::profile::ProfileSummary {
            notes: notes.iter().map(|n| n.to_string()).collect(),
            ..super::profile::ProfileSummary::default()
        };
        let a = summary(&["sampling at 500 Hz", "a only"]);
        let b = summary(&["b only", "sampling at 500 Hz"]);
        assert_eq!(super::common_notes(&[&a, &b]), ["sampling at 500 Hz"]);
        // One case: its notes stay its own.
        assert!(super::common_notes(&[&a]).is_empty());
        assert!(super::common_notes(&[]).is_empty());
    }

    use clap::Parser;

    /// A case whose capture has data-source samples gets the memory levels in its row's
    /// profile summary, and the line under its row (the real Skylake-SP PEBS recording,
    /// copied beside a temporary case directory since the artifacts are written there).
    #[test]
    fn a_case_with_data_source_samples_reports_its_memory_levels() {
        let fixture = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/fixtures/pebs/skx-ldlat-weight_struct.perf.data");
        if !fixture.is_file() {
            eprintln!("skipped: {} is absent", fixture.display());
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let capture = tmp.path().join("perf.data");
        std::fs::copy(&fixture, &capture).unwrap();
        let args = crate::HarnessArgs::parse_from(["bench"]);
        let mut summary: crate::profile::ProfileSummary =
            serde_json::from_value(serde_json::json!({
                "capture": null, "event": "mem", "samples": 14, "lost": 0,
                "lost_samples": 0, "seconds": 0.0, "bytes": 0, "stack_bytes_saved": 0,
                "notes": [], "error": null
            }))
            .unwrap();
        let (p, _) = super::report_profile("pebs", &capture, &mut summary, &args, "").unwrap();
        let m = summary.memory.as_ref().unwrap();
        assert_eq!((m.samples, m.weight_total), (14, 1725));
        assert_eq!(m.levels.len(), 4);
        assert!(m.code.len() <= 5 && m.data_objects.len() <= 5);
        assert_eq!(p.memory.as_ref().unwrap().code.len(), 6);
        let line = summary.memory_line().unwrap();
        assert!(
            line.starts_with("memory: LFB/MAB hit 36% · L3 hit 29% · L1 hit 29% · L2 hit 7%"),
            "{line}"
        );
        // profile.json beside the capture has the section too.
        let written: serde_json::Value =
            serde_json::from_slice(&std::fs::read(tmp.path().join("profile.json")).unwrap())
                .unwrap();
        assert_eq!(written["memory"]["weight_total"], 1725);
        let row = serde_json::to_value(&summary).unwrap();
        assert_eq!(row["memory"]["levels"][0]["level"], "LFB/MAB hit");
    }
}
