//! `--serve`: the harness driven by a coordinator (`sparkles compare`) over JSON lines.
//!
//! Each request on standard input is one JSON object on a line; each gets exactly one
//! JSON line on standard output, flushed, in order (docs/schemas/serve.md). Nothing runs
//! unasked: the coordinator sets cases up, calibrates them, takes their samples and runs
//! their counting and profile passes through the same [`Running`] handle and bencher
//! commands the scheduler uses, so a served sample is a timing pass's sample. A bad
//! request, or a case that fails, is an error reply; the process stays usable. Parsing a
//! request ([`parse_request`], with the protocol's types in sparkles-results, which the
//! coordinator's side uses too) is kept apart from running it, and both from the I/O loop.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Duration;

use sparkles_results::serve::protocol::{
    parse_request, reply, Answer, BadRequest, Calibrated, CaseList, Counted, Done, Hello, Op,
    Profiled, Request, Sampled, SetUp, SCHEMA,
};
use sparkles_sampler::session::SamplingConfig;

use crate::args::HarnessArgs;
use crate::bencher::CountPlan;
use crate::catalog::{Catalog, Selection};
use crate::runner::Running;
use crate::suite::Case;
use sparkles_results::error::Error;

/// Where a case stands in this process.
enum Slot {
    /// Not set up yet.
    Waiting(Case),
    /// Set up: its thread waits in its `iter` call.
    Running(Box<Running>),
    /// Finished (asked to, or failed: the failure's message); a case runs once per process.
    Finished { error: Option<String> },
}

/// The cases a serve process offers, in suite order.
struct Cases(Vec<(String, Slot)>);

impl Cases {
    fn slot(&mut self, op: &str, case: &str) -> Result<&mut Slot, String> {
        self.0
            .iter_mut()
            .find(|(name, _)| name == case)
            .map(|(_, slot)| slot)
            .ok_or_else(|| {
                format!("op '{op}': no case '{case}' here (op 'list' names the cases served)")
            })
    }

    /// Runs `f` on the set-up case `case`; a case that fails in it is finished, and the
    /// failure is the error.
    fn with_running<T>(
        &mut self,
        op: &str,
        case: &str,
        f: impl FnOnce(&mut Running) -> T,
    ) -> Result<T, String> {
        let slot = self.slot(op, case)?;
        let running = match slot {
            Slot::Running(running) => running,
            Slot::Waiting(_) => {
                return Err(format!(
                    "op '{op}': case '{case}' is not set up (send op 'setup' first)"
                ))
            }
            Slot::Finished { error: Some(error) } => {
                return Err(format!(
                    "op '{op}': case '{case}' failed earlier and is finished: {error}"
                ))
            }
            Slot::Finished { error: None } => {
                return Err(format!(
                    "op '{op}': case '{case}' is finished (a case is set up once per process)"
                ))
            }
        };
        let value = f(running);
        if running.report.ok {
            return Ok(value);
        }
        Err(finish_failed(op, case, slot))
    }

    /// Ends every case still set up.
    fn finish_all(&mut self) {
        for (_, slot) in &mut self.0 {
            if let Slot::Running(running) = std::mem::replace(slot, Slot::Finished { error: None })
            {
                running.finish();
            }
        }
    }
}

/// Finishes the failed case in `slot` (joining its thread), and says what failed.
fn finish_failed(op: &str, case: &str, slot: &mut Slot) -> String {
    let error = match std::mem::replace(slot, Slot::Finished { error: None }) {
        Slot::Running(running) => running.finish().error,
        _ => None,
    }
    .unwrap_or_else(|| "failed".to_string());
    let message = format!("op '{op}': case '{case}' failed: {error}; the case is finished");
    *slot = Slot::Finished { error: Some(error) };
    message
}

/// What the ops need besides the cases: the run's flags and metric selection.
struct Context<'a> {
    suite: &'a str,
    args: &'a HarnessArgs,
    catalog: &'a Catalog,
    selection: &'a Selection,
    count_plan: Option<CountPlan>,
    /// The flags with `--profile` set (CPU sampling where the command line gave none).
    profile_args: HarnessArgs,
    /// The profile pass's sampling and the line saying which event, chosen at the first
    /// `profile` request.
    sampling: Option<Result<(SamplingConfig, String), String>>,
}

impl Context<'_> {
    fn sampling(&mut self) -> Result<&(SamplingConfig, String), String> {
        if self.sampling.is_none() {
            let chosen = if let Some(why) = sparkles_sampler::UNAVAILABLE {
                Err(format!("op 'profile': sampling is unavailable: {why}"))
            } else {
                crate::profiling::sampling(&self.profile_args)
                    .map_err(|e| format!("op 'profile': {e}"))
            };
            if let Ok((_, note)) = &chosen {
                eprintln!("profile: {note}");
                if let Some(warning) = crate::profiling::debug_info_warning() {
                    eprintln!("warning: {warning}");
                }
            }
            self.sampling = Some(chosen);
        }
        match self.sampling.as_ref() {
            Some(Ok(chosen)) => Ok(chosen),
            Some(Err(e)) => Err(e.clone()),
            None => Err("op 'profile': no sampling chosen".to_string()),
        }
    }
}

/// A serve process: the cases the filters chose, and what the ops need.
pub(crate) struct Server<'a> {
    cases: Cases,
    context: Context<'a>,
}

impl std::fmt::Debug for Server<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("suite", &self.context.suite)
            .field("cases", &self.cases.0.len())
            .finish()
    }
}

impl<'a> Server<'a> {
    /// A server of `cases` (in suite order), measuring as `args` say.
    pub(crate) fn new(
        suite: &'a str,
        cases: Vec<Case>,
        args: &'a HarnessArgs,
        catalog: &'a Catalog,
        selection: &'a Selection,
        count_plan: Option<CountPlan>,
    ) -> Server<'a> {
        let mut profile_args = args.clone();
        profile_args
            .profile
            .get_or_insert(crate::args::ProfileKind::Cpu);
        Server {
            cases: Cases(
                cases
                    .into_iter()
                    .map(|c| (c.name.clone(), Slot::Waiting(c)))
                    .collect(),
            ),
            context: Context {
                suite,
                args,
                catalog,
                selection,
                count_plan,
                profile_args,
                sampling: None,
            },
        }
    }

    /// Answers requests from standard input until `quit` or its end, then finishes every
    /// case still set up. Only a failure to read the requests or write a reply is an error.
    pub(crate) fn serve(mut self) -> Result<(), Error> {
        let mut out = replies_out();
        eprintln!(
            "sparkles: serving suite '{}' ({} cases): {SCHEMA} requests on standard input, one reply each on standard output",
            self.context.suite,
            self.cases.0.len()
        );
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = input
                .read_until(b'\n', &mut line)
                .map_err(|e| Error::io("standard input", e))?;
            if read == 0 {
                break;
            }
            // A blank line is no request: it gets no reply.
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let (reply, quit) = self.answer(line.trim_ascii_end());
            let mut text = reply.to_string();
            text.push('\n');
            out.write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .map_err(crate::console::write_error)?;
            if quit {
                break;
            }
        }
        self.cases.finish_all();
        Ok(())
    }

    /// The reply to one request line, and whether it asked to quit.
    fn answer(&mut self, line: &[u8]) -> (serde_json::Value, bool) {
        let (id, result, quit) = match parse_request(line) {
            Ok(Request { id, op }) => {
                let quit = op == Op::Quit;
                (id, self.handle(op), quit)
            }
            Err(BadRequest { id, message }) => (id, Err(message), false),
        };
        (reply(id, result), quit)
    }

    /// Runs one op: its answer, or what went wrong.
    fn handle(&mut self, op: Op) -> Result<Answer, String> {
        Ok(match op {
            Op::Hello => Answer::Hello(Hello {
                schema: SCHEMA.to_string(),
                suite: self.context.suite.to_string(),
                pid: std::process::id(),
                version: env!("CARGO_PKG_VERSION").to_string(),
            }),
            Op::List => Answer::List(CaseList {
                cases: self.cases.0.iter().map(|(name, _)| name.clone()).collect(),
            }),
            Op::Setup { case } => Answer::Setup(self.setup(&case)?),
            Op::Calibrate { case, sample } => {
                let calibrated = self
                    .cases
                    .with_running("calibrate", &case, |r| r.calibrate(sample))?;
                let (iterations, elapsed) = calibrated.ok_or_else(|| no_answer("calibrate"))?;
                Answer::Calibrate(Calibrated {
                    iterations,
                    ns: nanos(elapsed),
                })
            }
            Op::Sample { case, iterations } => {
                // Kept as the timing pass keeps them: the count reply's throughput.
                let elapsed = self
                    .cases
                    .with_running("sample", &case, |r| r.sample_kept(iterations))?;
                Answer::Sample(Sampled {
                    ns: nanos(elapsed.ok_or_else(|| no_answer("sample"))?),
                })
            }
            Op::Count {
                case,
                iterations,
                brackets,
            } => Answer::Count(Box::new(self.count(&case, iterations, brackets)?)),
            Op::Profile {
                case,
                duration,
                path,
                against,
            } => Answer::Profile(Box::new(self.profile(
                &case,
                duration,
                path,
                against.as_deref(),
            )?)),
            Op::Finish { case } => {
                self.finish(&case)?;
                Answer::Done(Done {})
            }
            Op::Quit => Answer::Done(Done {}),
        })
    }

    fn setup(&mut self, case: &str) -> Result<SetUp, String> {
        let slot = self.cases.slot("setup", case)?;
        match std::mem::replace(slot, Slot::Finished { error: None }) {
            Slot::Waiting(c) => {
                *slot = Slot::Running(Box::new(Running::spawn(c)));
            }
            Slot::Finished { error } => {
                let message = match &error {
                    Some(e) => {
                        format!("op 'setup': case '{case}' failed earlier and is finished: {e}")
                    }
                    None => format!(
                        "op 'setup': case '{case}' is finished (a case is set up once per process)"
                    ),
                };
                *slot = Slot::Finished { error };
                return Err(message);
            }
            running => *slot = running,
        }
        let throughput = self
            .cases
            .with_running("setup", case, |r| r.report.throughput)?;
        Ok(SetUp {
            case: case.to_string(),
            throughput,
        })
    }

    fn count(
        &mut self,
        case: &str,
        iterations: u64,
        brackets: Option<u32>,
    ) -> Result<Counted, String> {
        let context = &self.context;
        let brackets = brackets.unwrap_or(context.args.count_brackets);
        let per_bracket = self.cases.with_running("count", case, |r| {
            context
                .count_plan
                .clone()
                .map(|plan| r.count_with(plan, iterations, context.args.count_iterations, brackets))
        })?;
        let row = self.cases.with_running("count", case, |r| {
            crate::row_of(&r.report, context.selection)
        })?;
        let unavailable = row
            .metrics
            .iter()
            .filter(|(_, v)| v.is_none())
            .filter_map(|(id, _)| Some((id.clone(), context.catalog.unavailable_reason(id)?)))
            .collect();
        Ok(Counted {
            brackets: per_bracket.map(|_| brackets),
            iterations_per_bracket: per_bracket,
            unavailable,
            metrics: row.metrics,
            metric_samples: row.metric_samples,
            counting: row.counting,
        })
    }

    fn profile(
        &mut self,
        case: &str,
        duration: Duration,
        path: PathBuf,
        against: Option<&std::path::Path>,
    ) -> Result<Profiled, String> {
        // The case is checked before sampling is chosen: an unknown case is that error.
        self.cases.with_running("profile", case, |_| ())?;
        let (sampling, note) = self.context.sampling()?.clone();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                format!(
                    "op 'profile': field 'path': cannot create {}: {e}",
                    dir.display()
                )
            })?;
        }
        let args = &self.context.profile_args;
        let summary = self.cases.with_running("profile", case, |r| {
            r.profile_with(
                &crate::profiling::plan::ProfileSampling::Perf(sampling),
                duration,
                path,
            );
            // The capture read in-process (with the `profile` feature): top functions,
            // unwind summary, artifacts beside it, as a row's profile is.
            crate::profiling::read_captures(
                std::slice::from_mut(&mut r.report),
                args,
                &note,
                None,
                against
                    .map(crate::profiling::plan::Against::Folder)
                    .as_ref(),
            );
            r.report.profile.take()
        })?;
        Ok(Profiled {
            profile: summary.ok_or_else(|| no_answer("profile"))?,
        })
    }

    fn finish(&mut self, case: &str) -> Result<(), String> {
        let slot = self.cases.slot("finish", case)?;
        match std::mem::replace(slot, Slot::Finished { error: None }) {
            Slot::Running(running) => {
                let report = running.finish();
                if !report.ok {
                    let error = report.error.unwrap_or_else(|| "failed".to_string());
                    let message =
                        format!("op 'finish': case '{case}' failed: {error}; the case is finished");
                    *slot = Slot::Finished { error: Some(error) };
                    return Err(message);
                }
            }
            Slot::Waiting(c) => {
                *slot = Slot::Waiting(c);
                return Err(format!(
                    "op 'finish': case '{case}' is not set up (send op 'setup' first)"
                ));
            }
            // Finishing a finished case does nothing, as setting up a set-up one does.
            finished => *slot = finished,
        }
        Ok(())
    }
}

/// The error when a case gave no answer and did not fail (it should not happen).
fn no_answer(op: &str) -> String {
    format!("op '{op}': the case's thread gave no answer")
}

fn nanos(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX)
}

/// Where replies go: standard output, which (on Unix) this process keeps for itself by
/// pointing descriptor 1 at standard error, so that whatever a case prints cannot land
/// between replies.
fn replies_out() -> Box<dyn Write> {
    #[cfg(unix)]
    if let Some(file) = private_stdout() {
        return Box::new(file);
    }
    Box::new(std::io::stdout())
}

/// A close-on-exec copy of standard output, and descriptor 1 made a copy of standard
/// error; none (and nothing changed) where either call fails.
#[cfg(unix)]
fn private_stdout() -> Option<std::fs::File> {
    use std::os::fd::FromRawFd;
    let _ = std::io::stdout().flush();
    // SAFETY: fcntl on an open descriptor; F_DUPFD_CLOEXEC gives a new one or -1.
    let fd = unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_DUPFD_CLOEXEC, 3) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is a new descriptor that nothing else owns.
    let file = unsafe { std::fs::File::from_raw_fd(fd) };
    // SAFETY: dup2 between two descriptors of this process.
    if unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) } < 0 {
        return None;
    }
    Some(file)
}
