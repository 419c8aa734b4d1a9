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
mod bencher;
mod busy;
mod case_report;
pub mod catalog;
mod console;
pub mod machine_probe;
mod pinning;
mod profiling;
mod progress;
mod runner;
mod serve;
mod side_by_side;
mod suite;
pub mod tiers;

// The tiers under the names they always had.
pub use tiers::perf as counters;
pub use tiers::{alloc, tier0, valgrind};

// What a run produced and what it means lives in sparkles-results; its modules are here
// under the names they always had.
pub use sparkles_results::row as record;
pub use sparkles_results::{
    baseline, environment, error, explain, export, history, metric, output, paired, profile,
    run_report, stats, table, throughput,
};

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;

pub use args::HarnessArgs;
pub use bencher::{AsyncBencher, AsyncExecutor, BatchSize, Bencher};
pub use error::Error;
pub use suite::{slug, CaseFailure, CaseOutcome, Group, Settings, Suite};
pub use throughput::Throughput;

use args::ListFormat;
use bencher::CountPlan;
use case_report::CaseReport;
use catalog::{Catalog, Selection, Source};
use console::Console;
use progress::Progress;
use record::{BenchRow, Timing};
use runner::Protocol;

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
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    // A process given its own command line serves the suite when started with `--bench
    // --serve` (what a saved baseline's executable is asked); a test that passes other
    // arguments to a child is not such an executable.
    let own_command_line = args == std::env::args_os().collect::<Vec<_>>();
    let args = match HarnessArgs::try_parse_from(args) {
        Ok(args) => args,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match run_as(suite, &args, own_command_line) {
        Ok(outcome) => {
            if outcome.all_ok() && outcome.failed_gate.is_none() && outcome.not_written.is_empty() {
                0
            } else {
                1
            }
        }
        Err(e) => exit_status_of(&e),
    }
}

/// Says `e` and gives the status a run ends with: 128 + the signal's number for an
/// interrupted run (130, 143), 2 for any other error.
fn exit_status_of(e: &Error) -> i32 {
    match e {
        Error::Interrupted { signal, .. } => {
            eprintln!("sparkles: {e}");
            signal.exit_status()
        }
        _ => {
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
    /// `--fail-on`'s gate, where the run's verdicts failed it: what it says (the exit
    /// status is then 1).
    pub failed_gate: Option<String>,
    /// Outputs the run was asked for that could not be written (a profile's capture or
    /// files, the history line, the run report), each `what: PATH: why`, after the run
    /// wrote what it could: the exit status is then 1.
    pub not_written: Vec<String>,
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
/// (ratios against a peer tool); bad flags or inputs exit with status 2, an interrupted
/// run with 130 or 143.
pub fn run_or_exit(suite: Suite, args: &HarnessArgs) -> Outcome {
    run_as(suite, args, true).unwrap_or_else(|e| std::process::exit(exit_status_of(&e)))
}

/// What the counting tiers count, from `--events`, `--perf-exact`, `--perf-threads`,
/// `--syscalls` and `--valgrind-sim`.
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
    options.valgrind = args.valgrind_sim;
    options
}

fn matches(name: &str, pattern: &str, exact: bool) -> bool {
    if exact {
        name == pattern
    } else {
        name.contains(pattern)
    }
}

/// The flags as the passes read them: `--profile=instructions` is the valgrind pass's
/// profile, no sampling pass; with `--instructions`, `--profile` adds it beside the
/// sampled one.
fn normalized(args: &HarnessArgs) -> std::borrow::Cow<'_, HarnessArgs> {
    if args.profile == Some(args::ProfileKind::Instructions) {
        std::borrow::Cow::Owned(HarnessArgs {
            profile: None,
            instructions: true,
            instruction_profile: true,
            ..args.clone()
        })
    } else if args.instructions && args.profile.is_some() {
        std::borrow::Cow::Owned(HarnessArgs {
            instruction_profile: true,
            ..args.clone()
        })
    } else {
        std::borrow::Cow::Borrowed(args)
    }
}

/// Runs `suite` as `args` say and prints what it measured: the timing pass, the counting
/// pass, the profile pass, then the comparison, the table and the files. A measuring run
/// notes SIGINT and SIGTERM from its first pass on
/// ([`note_interrupts`](sparkles_perf_data::atomic_write::note_interrupts)) and stops at
/// the next checkpoint with [`Error::Interrupted`], its files whole. A baseline saved by
/// this call keeps no executable (the caller is not known to be a bench target's main,
/// which serves the suite when asked): comparisons with it are unpaired.
pub fn run(suite: Suite, args: &HarnessArgs) -> Result<Outcome, Error> {
    run_as(suite, args, false)
}

/// [`run`], `bench_main` where this process is a bench target's main ([`main`],
/// [`run_main`], [`run_or_exit`]): a baseline it saves keeps the executable, to run
/// again side by side.
fn run_as(suite: Suite, args: &HarnessArgs, bench_main: bool) -> Result<Outcome, Error> {
    // A rerun under valgrind counts its one case and exits, whatever its arguments say.
    if let Some(request) = valgrind::child_request() {
        return Ok(valgrind_child(suite, &request));
    }
    let args = &normalized(args);
    if args.capabilities {
        let caps = sparkles_sampler::caps::probe();
        print!("{}", sparkles_sampler::caps::render(&caps));
        println!("{}", valgrind::capability());
        return Ok(Outcome::default());
    }
    let catalog = Catalog::probe_with(&counting_options(args))?;
    if args.list_metrics {
        print!("{catalog}");
        return Ok(Outcome::default());
    }
    let asked = asked_sources(args);
    let selection = catalog.select_with(args.metrics.as_deref(), &asked)?;
    let suite_name = suite.name().to_string();
    let reexec = suite.reexec.clone();
    let suite_defaults = suite.defaults;
    let (cases, filtered_out) = chosen_cases(suite.cases, args);
    // Each case's group reference among the cases chosen (round-robin order only: its
    // rounds pair the samples).
    let references = {
        let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
        let found = Suite::references_among(&suite.references, &names);
        if args.bench
            && !args.serve
            && !args.list
            && found.iter().any(Option::is_some)
            && args.sample_order == args::SampleOrder::Blocked
        {
            eprintln!(
                "note: cases are held to their group's reference in round-robin order only (its rounds pair their samples), not with --sample-order blocked: no row has a reference"
            );
            vec![None; names.len()]
        } else {
            found
        }
    };
    if args.serve {
        let plan = count_plan(&selection, &catalog);
        serve::Server::new(&suite_name, cases, args, &catalog, &selection, plan).serve()?;
        return Ok(Outcome::default());
    }
    if args.list {
        list_cases(&cases, args, suite_defaults);
        return Ok(Outcome::default());
    }
    if !args.bench {
        return Ok(smoke(cases, args, filtered_out));
    }
    // A filter that matches nothing (cargo passes it to every bench target): said, and
    // nothing written: no empty table, baseline or run report in place of the last.
    if cases.is_empty() && filtered_out > 0 {
        eprintln!(
            "{suite_name}: the filters {} leave none of its {filtered_out} cases (`--list` names them): nothing run, no file written",
            args.filters
                .iter()
                .chain(&args.skip)
                .map(|f| format!("'{f}'"))
                .chain(args.partition.map(|p| format!("--partition {p}")))
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(Outcome::default());
    }
    // Everything that can fail on bad input fails here, before anything is measured.
    let mut files = RunFiles::prepare(args, &suite_name, bench_main.then(|| reexec.clone()))?;
    let mut console = Console::new(args);
    files.warn_about_the_baseline(args);
    for note in catalog::unavailable_notes(selection.metrics(), |m| {
        selection.is_filtered() || asked.contains(&m.source)
    }) {
        eprintln!("note: {note}");
    }
    let (protocol, profile_note) = protocol(args, &selection, &catalog, suite_defaults, &files)?;
    // The cases whose own or group's settings differ from the run's defaults (the flags
    // given win, so those cases run as the rest).
    let suite_wide = protocol.suite_wide();
    let own_settings = cases
        .iter()
        .filter(|c| protocol.for_case(c.settings) != suite_wide)
        .count();
    console.header(
        &suite_name,
        cases.len(),
        filtered_out,
        own_settings,
        &protocol,
        args,
    )?;

    // From here a SIGINT or SIGTERM stops the run at the next sample, bracket or case,
    // before anything is saved; once the files are being written they are all written.
    sparkles_perf_data::atomic_write::note_interrupts();
    let contention = busy::start();
    let measured = runner::measure(cases, &references, &protocol, &Progress::new());
    let contention = contention.finish(measured.probe_usage);
    let mut reports = measured.reports;
    files.environment.machine_probe = machine_probe::MachineProbe::of(measured.probe_samples)
        .map(|p| p.with_waits(measured.probe_waits.as_deref()));
    files.stop_if_interrupted(false)?;
    // Every profile is unwound, named and aggregated after all timing (nothing overlaps
    // it), on every CPU.
    let analysis = std::time::Instant::now();
    #[cfg_attr(not(feature = "profile"), allow(unused_mut))]
    let mut baseline_profiles = profiling::read_captures(
        &mut reports,
        args,
        &profile_note,
        files.save_path.as_deref(),
        files
            .baseline
            .as_ref()
            .map(profiling::plan::Against::Baseline)
            .as_ref(),
    );
    if protocol.profile.is_some() {
        say_phases(&measured.phases, analysis.elapsed(), &reports);
    }
    files.stop_if_interrupted(false)?;
    if selection.needs(Source::Valgrind) {
        instruction_pass(
            &mut reports,
            args,
            &files,
            &suite_name,
            reexec,
            &mut baseline_profiles,
        );
        files.stop_if_interrupted(false)?;
    }
    let mut rows: Vec<BenchRow> = reports.iter().map(|r| row_of(r, &selection)).collect();
    against_references(&mut rows, &reports, &measured.twins, &references);
    let (compared, machine_message) =
        compare_with_baseline(&mut rows, &files, &catalog, args, &suite_name);

    profiling::print_notes(&rows);
    console.results(&rows, &selection, args)?;
    // Other work beside the run: said under the table and on the report, with the figure.
    let busy = contention.message();
    if let Some(said) = &busy {
        console.line(format_args!("{said}"))?;
    }
    print_counting_coverage(&rows);
    console.sweeps(&rows)?;
    console.references(&rows)?;
    if let (Some(base), Some((compared, method))) = (&files.baseline, &compared) {
        console.comparison(&rows, base, *compared, method)?;
    }
    files.stop_if_interrupted(false)?;
    baseline_profiles.save();
    files.write(&rows, &mut console)?;
    let mut not_written: Vec<String> = rows
        .iter()
        .filter_map(|r| Some((&r.case, r.profile.as_ref()?)))
        .flat_map(|(case, p)| {
            p.not_written
                .iter()
                .map(move |f| format!("profile of {case}: {f}"))
        })
        .collect();
    let history = match files.append_history(&suite_name, &rows) {
        Ok(h) => h,
        Err(e) => {
            not_written.push(e);
            None
        }
    };
    if !args.no_report {
        let warnings: Vec<&str> = [machine_message.as_deref(), busy.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        let warnings = warnings.join("\n");
        if let Err(e) = write_run_report(
            &files,
            &suite_name,
            &rows,
            args,
            Some(warnings.as_str()).filter(|w| !w.is_empty()),
            history.as_ref(),
        ) {
            not_written.push(e);
        }
    }
    files.stop_if_interrupted(true)?;
    let tally = sparkles_results::comparison::Tally::of(
        rows.iter()
            .filter_map(|r| r.comparison.as_ref().map(|c| c.verdict)),
    );
    let failed_gate = args.fail_on.filter(|on| tally.fails(*on)).map(|on| {
        let said = format!(
            "--fail-on {}: {}",
            clap::ValueEnum::to_possible_value(&on)
                .map(|v| v.get_name().to_string())
                .unwrap_or_default(),
            tally.line()
        );
        eprintln!("{said}: exit status 1");
        said
    });
    if !not_written.is_empty() {
        eprintln!(
            "sparkles: {} output{} asked for not written, exit status 1:",
            not_written.len(),
            if not_written.len() == 1 { "" } else { "s" }
        );
        for line in &not_written {
            eprintln!("  {line}");
        }
    }
    Ok(Outcome {
        rows,
        saved_baseline: files.save_path,
        failed_gate,
        not_written,
    })
}

/// The run report (target/sparkles/report/index.html): the rows, the baseline's, the
/// profiles beside the captures and each case's trend over the suite's history; a page
/// that cannot be written, `report: PATH: why` (the run's files are written already).
fn write_run_report(
    files: &RunFiles,
    suite_name: &str,
    rows: &[BenchRow],
    args: &HarnessArgs,
    machine_message: Option<&str>,
    history: Option<&history::History>,
) -> Result<(), String> {
    // The trend of the branch this run was made on (the latest run's), where it has one:
    // runs of other branches are other code.
    let trends = history
        .map(|h| {
            let on_branch = h
                .runs
                .last()
                .and_then(|r| r.branch.as_deref())
                .map(|b| h.on_branch(b));
            history::trends(
                on_branch.as_ref().unwrap_or(h),
                |_| true,
                &history::changes::Options::default(),
                history::Scale::AsMeasured,
            )
        })
        .unwrap_or_default();
    let path = run_report::path_in(&files.out_dir);
    let (kept, kept_not_written) =
        run_report::keep_cases(&run_report::kept_path(&files.out_dir), suite_name, rows);
    let page = run_report::RunReport {
        suite: suite_name,
        rows,
        baseline: files.baseline.as_ref().map(|b| b.rows.as_slice()),
        baseline_name: args.baseline.as_deref(),
        machine_warning: machine_message,
        profile_dir: &files.out_dir.join("profile"),
        kept: &kept,
        trends: &trends,
        profiles_read: cfg!(feature = "profile"),
        annotates: cfg!(feature = "annotate"),
    };
    let written = match page.write(&path) {
        Ok(()) => {
            eprintln!("report: {}", path.display());
            Ok(())
        }
        Err(e) => {
            eprintln!("report: not written: {e}");
            Err(format!("run report: {e}"))
        }
    };
    // The store of earlier cases is the next page's: not written, that page loses them.
    match (written, kept_not_written) {
        (Ok(()), None) => Ok(()),
        (Ok(()), Some(e)) => Err(format!("run report's store of earlier cases: {e}")),
        (Err(e), None) => Err(e),
        (Err(e), Some(k)) => Err(format!("{e}; its store of earlier cases: {k}")),
    }
}

/// The rows against the baseline, where there is one: each row's comparison, then the
/// machine probe's check (where it moved, every verdict is marked), then the side-by-side
/// measurement where the baseline's executable runs again (paired), else every verdict
/// held to the case's between-run noise (unpaired). How many rows were compared and how,
/// and what the probe says, said on stderr too.
fn compare_with_baseline(
    rows: &mut [BenchRow],
    files: &RunFiles,
    catalog: &Catalog,
    args: &HarnessArgs,
    suite_name: &str,
) -> (Option<(usize, String)>, Option<String>) {
    let compared = files
        .baseline
        .as_ref()
        .map(|b| baseline::compare_rows(rows, b, &|id| catalog.unavailable_reason(id)));
    // The machine probe is compared first: where it moved, no verdict below is trusted.
    let machine = files.baseline.as_ref().map(|b| {
        let check = match &b.environment {
            Some(then) => machine_probe::check(
                then.machine_probe.as_ref(),
                files.environment.machine_probe.as_ref(),
            ),
            None => machine_probe::MachineCheck::Unknown(
                "the baseline has no environment record, where the probe is kept",
            ),
        };
        baseline::mark_machine_shift(rows, check.shift_pct());
        check
    });
    let mut machine_message = match (&machine, &args.baseline) {
        (Some(check), Some(name)) => check.message(name),
        _ => None,
    };
    let (Some(base), Some(compared)) = (&files.baseline, compared) else {
        return (None, machine_message);
    };
    let unavailable = |id: &str| catalog.unavailable_reason(id);
    // The suite's history: each case's floor (its earlier nulls) where paired, its
    // between-run noise where not.
    let history = files
        .history
        .as_ref()
        .filter(|p| p.is_file())
        .and_then(|p| history::read_timing(p).ok());
    let floor = |case: &str| {
        args.noise_threshold
            .unwrap_or_else(|| baseline::learned_floor(history.as_ref(), case))
    };
    let mut method = match side_by_side::pairing(base, args.baseline_unpaired) {
        side_by_side::Pairing::Paired(saved) if compared > 0 => {
            eprintln!(
                "paired: measuring {compared} cases side by side with {} ({} processes a side, {} a case)",
                saved.path.display(),
                args.paired_processes,
                sparkles_results::units::format_ns(args.paired_time.as_nanos() as f64)
            );
            let logs = files.out_dir.join("paired").join(suite_name);
            let plan = side_by_side::Plan {
                processes: args.paired_processes,
                time: args.paired_time,
                sample: args.bench_min_time.unwrap_or(suite::DEFAULT_SAMPLE_TIME),
                logs: &logs,
                // CPU profiles only: serve mode's `profile` samples the CPU.
                profile_null: (args.profile == Some(args::ProfileKind::Cpu))
                    .then_some(args.profile_time.unwrap_or(suite::DEFAULT_PROFILE_TIME)),
            };
            match side_by_side::measure(rows, base, &saved, &plan, &floor, &unavailable) {
                Ok(m) => format!(
                    "paired: {} cases side by side, {} processes a side, in {:.1} s ({})",
                    m.cases,
                    plan.processes,
                    m.elapsed.as_secs_f64(),
                    m.phases_line()
                ),
                Err(e) => format!(
                    "unpaired: the saved executable could not run side by side ({e}; logs in {})",
                    logs.display()
                ),
            }
        }
        side_by_side::Pairing::Paired(_) => "paired: no case to compare".to_string(),
        side_by_side::Pairing::Unpaired(why) => format!("unpaired: {why}"),
    };
    // What was not measured side by side is held to its between-run noise.
    let unpaired = rows
        .iter()
        .filter(|r| {
            r.comparison
                .as_ref()
                .is_some_and(|c| c.method != Some(sparkles_results::comparison::Method::Paired))
        })
        .count();
    if unpaired > 0 {
        baseline::hold_to_between_run_noise(rows, history.as_ref());
        if method.starts_with("paired") {
            method.push_str(&format!(
                "; {unpaired} unpaired (not served by both executables)"
            ));
        }
    } else {
        // Every verdict measured side by side, now: how the machine moved since the
        // baseline was saved compares nothing.
        machine_message = None;
    }
    if let Some(message) = &machine_message {
        eprintln!("{message}");
    }
    eprintln!("{method}");
    (Some((compared, method)), machine_message)
}

/// callgrind's counts, all cases in a child under valgrind, after all timing (where
/// valgrind is found: elsewhere the catalog has said why its metrics are absent); with
/// `--profile=instructions` each case's instruction profile beside its sampled one.
#[cfg_attr(not(feature = "profile"), allow(unused_variables))]
fn instruction_pass(
    reports: &mut [CaseReport],
    args: &HarnessArgs,
    files: &RunFiles,
    suite_name: &str,
    reexec: suite::Reexec,
    baseline_profiles: &mut profiling::BaselineProfiles,
) {
    if let Ok(program) = valgrind::program() {
        if args.instruction_profile && !cfg!(feature = "profile") {
            eprintln!("profile: no instruction profile: this build of sparkles-bench has no `profile` feature");
        }
        let pass = valgrind::Pass {
            program,
            timeout: std::time::Duration::from_secs(args.valgrind_timeout),
            jobs: match args.valgrind_jobs {
                0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
                n => n,
            },
            brackets: args.count_brackets,
            simulation: args.valgrind_sim,
            suite: suite_name.to_string(),
            reexec,
            profile: args.instruction_profile && cfg!(feature = "profile"),
        };
        let costs = merge_valgrind_counts(reports, &pass);
        #[cfg(feature = "profile")]
        profiling::instructions::write_profiles(
            reports,
            costs,
            &files.out_dir.join("profile"),
            files.baseline.as_ref(),
            files.save_path.as_deref(),
            baseline_profiles,
        );
        #[cfg(not(feature = "profile"))]
        drop(costs);
    }
}

/// Counts every case of `reports` that passed its timing pass under callgrind and merges
/// what the pass gave each into its report (its values, or why there are none); with
/// profiles, each counted case's costs by its index in `reports`.
fn merge_valgrind_counts(
    reports: &mut [CaseReport],
    pass: &valgrind::Pass,
) -> Vec<(usize, valgrind::Costs)> {
    let chosen: Vec<usize> = (0..reports.len()).filter(|i| reports[*i].ok).collect();
    let cases: Vec<(String, f64)> = chosen
        .iter()
        .map(|&i| {
            let median = stats::Summary::of(&reports[i].samples).map_or(f64::NAN, |s| s.median);
            (reports[i].name.clone(), median)
        })
        .collect();
    let mut costs = Vec::new();
    for (i, count) in chosen.into_iter().zip(valgrind::count_cases(&cases, pass)) {
        let report = &mut reports[i];
        report.counted.extend(valgrind::medians(&count.brackets));
        report.counted_brackets.extend(count.brackets);
        costs.extend(count.costs.map(|k| (i, k)));
        let mut account = count.account;
        account.threads = report.threads;
        report
            .counting
            .get_or_insert_with(Default::default)
            .valgrind = Some(account);
    }
    costs
}

/// A rerun under valgrind ([`valgrind::CHILD_ENV`]): counts the case the request names,
/// marking it started and done, and exits; a suite of another name
/// is left unrun, for the executable's next suite.
fn valgrind_child(suite: Suite, request: &valgrind::ChildRequest) -> Outcome {
    if suite.name() != request.suite {
        return Outcome::default();
    }
    if !valgrind::running_on_valgrind() {
        eprintln!(
            "sparkles: valgrind child: {} is set but this process does not run under valgrind",
            valgrind::CHILD_ENV
        );
        std::process::exit(3);
    }
    let asked = &request.case;
    let brackets = request.brackets.max(1);
    valgrind::write_marker(&request.dir, asked.index, "started", "");
    let Some(case) = suite.cases.into_iter().find(|c| c.name == asked.name) else {
        let why = format!("suite '{}' has no case '{}'", request.suite, asked.name);
        valgrind::write_marker(&request.dir, asked.index, "done", &why);
        std::process::exit(0)
    };
    let mut running = runner::Running::spawn(case);
    // The setup runs at valgrind's bare speed: a sample of no iteration is answered
    // once the case is in its iter call, its setup done. (Instrumentation used to
    // start as the case's thread started, so the setup ran under the cache
    // simulation: about 2 s of each of base64's 30 MiB cases, which fill and encode
    // their input.)
    running.sample(0);
    // One warm-up iteration, uninstrumented too: first-call costs (lazy binding,
    // first touches) stay out of every bracket, at valgrind's bare speed (a fifth of
    // its speed instrumented, with the simulations). The count's own uncollected
    // iteration before its brackets is the second warm-up, instrumented: two it takes,
    // as the allocator's state settles over them (glibc raises its mmap threshold
    // after the first free of a large block; with one, base64's 3 MiB encode read 4
    // million instructions more in its first bracket than in the rest).
    running.sample(1);
    // From here callgrind instruments (and simulates what `--valgrind-sim` says).
    // Where the runs may take more than one iteration, two more, instrumented: one
    // translates the loop under instrumentation and warms the simulated caches; one
    // is timed, what an iteration costs under callgrind, to size the runs. Not where
    // the runs take one iteration whatever it costs (a slow body: one of base64's 30
    // MiB cases is 2 s under callgrind).
    valgrind::start_instrumentation();
    let iterations = if asked.size_by_cost && asked.iterations > 1 {
        running.sample(1);
        valgrind::sized_by_cost(asked.iterations, running.sample(1))
    } else {
        asked.iterations
    };
    valgrind::write_marker(
        &request.dir,
        asked.index,
        "iterations",
        &iterations.to_string(),
    );
    // The first brackets; the rest only where their instruction counts differ.
    let plan = |from| CountPlan {
        valgrind: Some(asked.index),
        valgrind_from: from,
        ..CountPlan::default()
    };
    let first = brackets.min(valgrind::EXACT_BRACKETS);
    running.count_with(
        plan(0),
        iterations.saturating_mul(u64::from(first)),
        u64::MAX,
        first,
    );
    let mut taken = first;
    if first < brackets {
        let dumps = valgrind::dumps_of_case(&request.dir, asked.index);
        let exact = valgrind::brackets_of(&dumps, asked.index, first, iterations)
            .is_ok_and(|b| valgrind::exact(&b));
        if !exact {
            running.count_with(
                plan(first),
                iterations.saturating_mul(u64::from(brackets)),
                u64::MAX,
                brackets,
            );
            taken = brackets;
        }
    }
    valgrind::write_marker(&request.dir, asked.index, "brackets", &taken.to_string());
    valgrind::stop_instrumentation();
    let report = running.finish();
    valgrind::write_marker(
        &request.dir,
        asked.index,
        "done",
        match report.error.as_deref() {
            None => "",
            Some("") => "failed, saying nothing",
            Some(e) => e,
        },
    );
    std::process::exit(0)
}

/// The tiers the flags ask for (besides what `--metrics` names).
fn asked_sources(args: &HarnessArgs) -> Vec<Source> {
    let mut asked = Vec::new();
    if args.bench && args.profile.is_some() {
        asked.push(Source::Profile);
    }
    // --events and --perf-exact say what --perf counts, so they ask for it too.
    if args.perf || args.events.is_some() || args.perf_exact {
        asked.push(Source::Perf);
    }
    if args.syscalls.is_some() {
        asked.push(Source::Syscalls);
    }
    if args.instructions {
        asked.push(Source::Valgrind);
    }
    asked
}

/// The cases the filters choose, and how many they leave out.
fn chosen_cases(all: Vec<suite::Case>, args: &HarnessArgs) -> (Vec<suite::Case>, usize) {
    let total = all.len();
    // sparkles cases are never ignored: `--ignored` alone selects none of them.
    let cases: Vec<_> = all
        .into_iter()
        .filter(|_| !args.ignored || args.include_ignored)
        .filter(|c| {
            args.filters.is_empty() || args.filters.iter().any(|f| matches(&c.name, f, args.exact))
        })
        .filter(|c| !args.skip.iter().any(|s| matches(&c.name, s, args.exact)))
        .enumerate()
        .filter(|(i, c)| args.partition.is_none_or(|p| p.takes(*i, &c.name)))
        .map(|(_, c)| c)
        .collect();
    let filtered_out = total - cases.len();
    (cases, filtered_out)
}

/// `--list`: libtest's listing.
fn list_cases(cases: &[suite::Case], args: &HarnessArgs, suite_defaults: suite::Settings) {
    let kind = if args.bench { "benchmark" } else { "test" };
    for case in cases {
        println!("{}: {kind}", case.name);
    }
    if args.format != Some(ListFormat::Terse) {
        println!("\n{} cases", cases.len());
        // After libtest's lines (which tools parse): the settings of the cases that have
        // their own or their group's, and the suite's.
        if let Some(line) = suite_defaults.describe() {
            println!("suite: {line}");
        }
        for case in cases {
            if let Some(line) = case.settings.describe() {
                println!("{}: {line}", case.name);
            }
        }
        if let Some(line) = args.settings().describe() {
            println!("the command line's, over them all: {line}");
        }
    }
}

/// The files a measuring run reads and writes, checked before anything is measured.
struct RunFiles {
    out_dir: PathBuf,
    baseline: Option<baseline::Baseline>,
    save_path: Option<PathBuf>,
    json_to_stdout: bool,
    json_path: Option<PathBuf>,
    environment: environment::Environment,
    /// `--bench-format`, and where it goes (standard output where `None`).
    export: Option<(args::BenchFormat, Option<PathBuf>)>,
    /// The suite's history file, unless `--no-history`.
    history: Option<PathBuf>,
    /// How this executable reruns its suite, where it is a bench target's main (a saved
    /// baseline keeps the executable unless it runs from a test function).
    reexec: Option<suite::Reexec>,
}

impl RunFiles {
    fn prepare(
        args: &HarnessArgs,
        suite_name: &str,
        reexec: Option<suite::Reexec>,
    ) -> Result<RunFiles, Error> {
        let out_dir = output::out_dir(args.out_dir.as_deref());
        let baseline = match &args.baseline {
            Some(spec) => Some(baseline::load(spec, &out_dir, suite_name)?),
            None => None,
        };
        let save_path = match &args.save_baseline {
            Some(name) => Some(baseline::prepare_save(name, &out_dir, suite_name)?),
            None => None,
        };
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
        let json_to_stdout = args.bench_json.as_deref() == Some("-");
        if let Some(path) = &args.bench_out {
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            if let Some(dir) = parent.filter(|d| !d.is_dir()) {
                return Err(Error::Usage {
                    flag: "--bench-out",
                    message: format!("folder {} does not exist", dir.display()),
                });
            }
        } else if json_to_stdout && args.bench_format.is_some() {
            return Err(Error::Usage {
                flag: "--bench-format",
                message: "--bench-json - has standard output: give --bench-out PATH".to_string(),
            });
        }
        let history = (!args.no_history).then(|| {
            history::path(
                &history::dir(&out_dir, args.history_dir.as_deref()),
                suite_name,
            )
        });
        if let Some(path) = &history {
            // A history that is not a file (a folder in its place) is said before anything
            // is measured.
            if path.exists() && !path.is_file() {
                return Err(Error::Usage {
                    flag: "--history-dir",
                    message: format!("{} is not a file", path.display()),
                });
            }
        }
        Ok(RunFiles {
            out_dir,
            baseline,
            save_path,
            json_to_stdout,
            json_path,
            environment: environment::Environment {
                bench_build: side_by_side::build_id(),
                ..environment::Environment::current(suite_name)
            },
            export: args.bench_format.map(|f| (f, args.bench_out.clone())),
            history,
            reexec,
        })
    }

    /// A SIGINT or SIGTERM that came: the run stops, saying what it kept (the files as
    /// they were, or, once `written`, every file of the run written whole).
    fn stop_if_interrupted(&self, written: bool) -> Result<(), Error> {
        let Some(signal) = sparkles_perf_data::atomic_write::interrupted() else {
            return Ok(());
        };
        let kept = match (&self.save_path, written) {
            (_, true) => "the run's files were all written whole".to_string(),
            (Some(path), false) => format!(
                "nothing saved: baseline {}, the rows and the report are as they were (captures already taken are whole); no temporary file left",
                path.display()
            ),
            (None, false) => "nothing saved: the rows and the report are as they were (captures already taken are whole); no temporary file left".to_string(),
        };
        Err(Error::Interrupted { signal, kept })
    }

    /// Says when the baseline was measured elsewhere, or cannot say where.
    fn warn_about_the_baseline(&self, args: &HarnessArgs) {
        let Some(base) = &self.baseline else { return };
        // The hot-function diff ("where" in each verdict's line) needs a profile on both
        // sides: said before anything is measured.
        let profiled = base.has_profiles();
        let name = args.baseline.as_deref().unwrap_or("NAME");
        match (args.profile.is_some(), profiled) {
            (true, false) => eprintln!(
                "warning: baseline {} was saved without --profile: this run's profiles have nothing to be diffed against, so no verdict will say where the time went; save it with `--profile --save-baseline {name}`",
                base.path.display()
            ),
            (false, true) => eprintln!(
                "note: baseline {} was saved with --profile and this run has none: add --profile for the hot-function diff (where the time went)",
                base.path.display()
            ),
            _ => {}
        }
        match &base.environment {
            Some(then) => {
                let differences = then.differences(&self.environment);
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

    /// The JSON rows (to standard output or `--bench-json`'s file) and the baseline.
    fn write(&self, rows: &[BenchRow], console: &mut Console) -> Result<(), Error> {
        let lines = record::to_json_lines(rows);
        if self.json_to_stdout {
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(lines.as_bytes())
                .and_then(|()| stdout.flush())
                .map_err(console::write_error)?;
        } else if let Some(path) = &self.json_path {
            output::write_atomically(path, lines.as_bytes())?;
        }
        if let Some(path) = &self.save_path {
            baseline::save(path, rows, &self.environment)?;
            side_by_side::save_executable(path, self.reexec.as_ref())?;
            console.line(format_args!("saved baseline to {}", path.display()))?;
        }
        if let Some((format, to)) = &self.export {
            let text = export::render(*format, rows);
            // Bencher keeps machines apart by testbed: this machine's, beside the file.
            let testbed = (*format == export::BenchFormat::Bmf).then(|| {
                export::testbed(
                    &self.environment,
                    std::thread::available_parallelism().map_or(1, |n| n.get()),
                )
            });
            match to {
                Some(path) => {
                    output::write_atomically(path, text.as_bytes())?;
                    if let Some(testbed) = &testbed {
                        let mut name = path.as_os_str().to_owned();
                        name.push(".testbed");
                        let beside = PathBuf::from(name);
                        output::write_atomically(&beside, format!("{testbed}\n").as_bytes())?;
                        console.line(format_args!(
                            "bmf: testbed {testbed} (in {}; bencher run --testbed \"$(cat {})\")",
                            beside.display(),
                            beside.display()
                        ))?;
                    }
                }
                None => {
                    let mut stdout = std::io::stdout().lock();
                    stdout
                        .write_all(text.as_bytes())
                        .and_then(|()| stdout.flush())
                        .map_err(console::write_error)?;
                    if let Some(testbed) = &testbed {
                        eprintln!("bmf: testbed {testbed} (bencher run --testbed {testbed})");
                    }
                }
            }
        }
        Ok(())
    }

    /// Appends the run to the suite's history; the history read back (for the run
    /// report's trends), where there is one. A line that could not be appended is said
    /// and returned (`history: PATH: why`: the run fails once its other files are
    /// written); a history that cannot be read back is said alone.
    fn append_history(
        &self,
        suite: &str,
        rows: &[BenchRow],
    ) -> Result<Option<history::History>, String> {
        let Some(path) = self.history.as_ref() else {
            return Ok(None);
        };
        let run = history::Run::of(suite, rows, &self.environment);
        if run.cases.is_empty() {
            return Ok(None);
        }
        if let Err(e) = history::append(path, &run) {
            eprintln!("history: not appended: {e}");
            return Err(format!("history line: {e}"));
        }
        match history::read_timing(path) {
            Ok(h) => {
                for w in &h.warnings {
                    eprintln!("history: {w}");
                }
                Ok(Some(h))
            }
            Err(e) => {
                eprintln!("history: {e}");
                Ok(None)
            }
        }
    }
}

/// The timing, counting and profile passes' plan; with `--profile`, the line that says
/// which event it samples, and why.
fn protocol(
    args: &HarnessArgs,
    selection: &Selection,
    catalog: &Catalog,
    suite_defaults: suite::Settings,
    files: &RunFiles,
) -> Result<(Protocol, String), Error> {
    let mut protocol = Protocol {
        flags: args.settings(),
        suite_defaults,
        order: args.sample_order,
        count_iterations: args.count_iterations,
        count_brackets: args.count_brackets,
        count_plan: count_plan(selection, catalog),
        profile: None,
    };
    let mut profile_note = String::new();
    if args.profile.is_none() {
        let given = args.profile_flags_given();
        if !given.is_empty() {
            eprintln!(
                "warning: {} {} nothing without --profile: no case is sampled in this run (add --profile)",
                given.join(", "),
                if given.len() == 1 { "does" } else { "do" }
            );
        }
    }
    #[cfg(feature = "profile")]
    viewer_formats_built(&args.profile_format, sparkles_report::export::FIREFOX)?;
    // Where nothing can be sampled the catalog has said why (the profile metrics are
    // unavailable, with the reason): the flags are still checked, and no pass runs.
    let chosen = match args.profile {
        Some(_) => profiling::profile_sampling(args)?,
        None => None,
    };
    if let Some((sampling, note)) = chosen {
        eprintln!("profile: {note}");
        if let Some(warning) = profiling::debug_info_warning() {
            eprintln!("warning: {warning}");
        }
        protocol.profile = Some((sampling, files.out_dir.join("profile")));
        profile_note = note;
    }
    Ok((protocol, profile_note))
}

/// Every `--profile-format` this build can write (`firefox` where `firefox` is built in):
/// a format that is not is a usage error naming the feature, before anything runs.
#[cfg(feature = "profile")]
fn viewer_formats_built(formats: &[args::ViewerFormat], firefox: bool) -> Result<(), Error> {
    if formats.contains(&args::ViewerFormat::Firefox) && !firefox {
        return Err(Error::Usage {
            flag: "--profile-format",
            message: format!("firefox: {}", sparkles_report::export::NO_FIREFOX),
        });
    }
    Ok(())
}

/// The counting pass's tiers for the selected metrics; none where no metric needs the
/// pass.
fn count_plan(selection: &Selection, catalog: &Catalog) -> Option<CountPlan> {
    selection.needs_counting_pass().then(|| CountPlan {
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
        valgrind: None,
        valgrind_from: 0,
        alloc: selection.needs(Source::Alloc),
    })
}

/// Which threads the perf_event tiers counted, and how they read them: once for the run
/// (from the first counted case), then for any case where threads started during its
/// pass or something was not counted.
fn print_counting_coverage(rows: &[BenchRow]) {
    let tiers = |row: &BenchRow| -> Vec<(&'static str, sparkles_results::counting::TierReport)> {
        let Some(c) = &row.counting else {
            return Vec::new();
        };
        [("perf", c.perf.clone()), ("syscalls", c.syscalls.clone())]
            .into_iter()
            .filter_map(|(n, t)| Some((n, t?)))
            .collect()
    };
    let names = |threads: &[sparkles_results::counting::ThreadInfo]| {
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

/// Where a profiled run's time went: `sparkles: 41.0 s: timing 5.2 s, counting 2.1 s,
/// sampling 30.4 s, analysis 3.3 s (15 captures on 2 threads)`.
fn say_phases(phases: &runner::Phases, analysis: std::time::Duration, reports: &[CaseReport]) {
    let (captures, threads) = profiling::analysis_threads(reports);
    let s = |d: std::time::Duration| format!("{:.1} s", d.as_secs_f64());
    let threads = match threads {
        1 => "1 thread".to_string(),
        n => format!("{n} threads"),
    };
    eprintln!(
        "sparkles: {}: timing {}, counting {}, sampling {}, analysis {} ({captures} captures on {threads})",
        s(phases.timing + phases.counting + phases.sampling + analysis),
        s(phases.timing),
        s(phases.counting),
        s(phases.sampling),
        s(analysis),
    );
}

/// Each case held to its group's reference (`references`, indices into `reports`),
/// measured in the same rounds, with the reference's twin (`twins`) as the null: its
/// row's `reference`, the reference's own row holding its twin's. Each sample less its
/// run-queue wait where the waits of all three are known (what other work took of a
/// sample is no difference between implementations).
fn against_references(
    rows: &mut [BenchRow],
    reports: &[CaseReport],
    twins: &[(usize, CaseReport)],
    references: &[Option<usize>],
) {
    for (i, reference) in references.iter().enumerate() {
        let Some(k) = *reference else {
            continue;
        };
        let Some((_, twin)) = twins.iter().find(|(r, _)| *r == k) else {
            continue;
        };
        let (r, c) = (&reports[k], &reports[i]);
        if !(r.ok && c.ok && twin.ok) {
            continue;
        }
        let (reference, again, case) = match (
            r.samples_less_wait(),
            twin.samples_less_wait(),
            c.samples_less_wait(),
        ) {
            (Some(a), Some(b), Some(c)) => (a, b, c),
            _ => (r.samples.clone(), twin.samples.clone(), c.samples.clone()),
        };
        // Each turn's fastest.
        let fastest = |v: Vec<f64>| -> Vec<f64> {
            v.chunks(runner::REFERENCE_RUN)
                .map(|t| t.iter().copied().fold(f64::INFINITY, f64::min))
                .collect()
        };
        let (reference, again, case) = (fastest(reference), fastest(again), fastest(case));
        let against = |other: &[f64]| {
            sparkles_results::paired::against_reference(&r.name, &reference, &again, other)
        };
        rows[i].reference = against(&case);
        if rows[k].reference.is_none() {
            rows[k].reference = against(&again);
        }
    }
}

/// The row of one case's report, its metrics those `selection` chose.
fn row_of(report: &CaseReport, selection: &Selection) -> BenchRow {
    let timing = report
        .ok
        .then(|| Timing::from_samples(report.samples.clone()))
        .flatten()
        .map(|t| Timing {
            run_queue_wait: report.waits.clone(),
            ..t
        });
    let median = timing.as_ref().map_or(f64::NAN, |t| t.summary.median);
    let client = throughput::values(report.throughput, median);
    let metrics: std::collections::BTreeMap<String, Option<f64>> = selection
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
        metric_samples: report
            .counted_brackets
            .iter()
            .filter(|s| metrics.contains_key(s.id.as_str()))
            .map(|s| (s.id.clone(), s.values.clone()))
            .collect(),
        metrics,
        comparison: None,
        reference: None,
        threads: report.threads,
        counting: report.counting.clone(),
        profile: report.profile.clone(),
    }
}

/// Runs each case once, printing libtest's lines so `cargo test` and nextest read them.
fn smoke(cases: Vec<suite::Case>, args: &HarnessArgs, filtered_out: usize) -> Outcome {
    let started = Instant::now();
    let n = cases.len();
    println!("\nrunning {n} {}", if n == 1 { "test" } else { "tests" });
    let colour = console::use_colour(args.color, std::io::stdout().is_terminal());
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
            metric_samples: Default::default(),
            comparison: None,
            reference: None,
            threads: r.threads,
            counting: None,
            profile: None,
        })
        .collect();
    Outcome {
        rows,
        saved_baseline: None,
        failed_gate: None,
        not_written: Vec::new(),
    }
}

#[cfg(test)]
#[path = "../../testdata/support/skip.rs"]
mod skip;

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
        assert_eq!(
            super::profiling::common_notes(&[&a, &b]),
            ["sampling at 500 Hz"]
        );
        // One case: its notes stay its own.
        assert!(super::profiling::common_notes(&[&a]).is_empty());
        assert!(super::profiling::common_notes(&[]).is_empty());
    }

    /// `--profile-format firefox` in a build without feature `firefox` fails before the
    /// run, naming the feature; speedscope's needs none.
    #[cfg(feature = "profile")]
    #[test]
    fn a_viewer_format_not_built_in_is_a_usage_error_naming_its_feature() {
        use super::args::ViewerFormat::{Firefox, Speedscope};
        let e = super::viewer_formats_built(&[Speedscope, Firefox], false).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("--profile-format") && text.contains("feature `firefox`"),
            "{text}"
        );
        assert!(matches!(e, super::Error::Usage { .. }));
        assert!(super::viewer_formats_built(&[Speedscope], false).is_ok());
        assert!(super::viewer_formats_built(&[Speedscope, Firefox], true).is_ok());
    }

    #[cfg(feature = "profile")]
    /// A case whose capture has data-source samples gets the memory levels in its row's
    /// profile summary, and the line under its row (the real Skylake-SP PEBS recording,
    /// copied beside a temporary case directory since the artifacts are written there).
    #[test]
    fn a_case_with_data_source_samples_reports_its_memory_levels() {
        let fixture = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/fixtures/pebs/skx-ldlat-weight_struct.perf.data");
        if !fixture.is_file() {
            super::skip::skip("fixtures", format!("{} is absent", fixture.display()));
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let capture = tmp.path().join("perf.data");
        std::fs::copy(&fixture, &capture).unwrap();
        let args = <crate::HarnessArgs as clap::Parser>::parse_from(["bench"]);
        let mut summary: sparkles_results::profile::ProfileSummary =
            serde_json::from_value(serde_json::json!({
                "capture": null, "event": "mem", "samples": 14, "lost": 0,
                "lost_samples": 0, "seconds": 0.0, "bytes": 0, "stack_bytes_saved": 0,
                "notes": [], "error": null
            }))
            .unwrap();
        let (((p, _), _), _) =
            super::profiling::read_capture("pebs", &capture, &mut summary, &args, "").unwrap();
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
