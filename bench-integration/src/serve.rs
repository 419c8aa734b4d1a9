//! `--serve`: the harness driven by a coordinator (`sparkles compare`) over JSON lines.
//!
//! Each request on standard input is one JSON object on a line; each gets exactly one
//! JSON line on standard output, flushed, in order (docs/schemas/serve.md). Nothing runs
//! unasked: the coordinator sets cases up, calibrates them, takes their samples and runs
//! their counting and profile passes through the same [`Running`] handle and bencher
//! commands the scheduler uses, so a served sample is a timing pass's sample. A bad
//! request, or a case that fails, is an error reply; the process stays usable. Parsing a
//! request ([`parse_request`]) is kept apart from running it, and both from the I/O loop.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Map, Value};
use sparkles_sampler::session::SamplingConfig;

use crate::args::HarnessArgs;
use crate::bencher::CountPlan;
use crate::catalog::{Catalog, Selection};
use crate::error::Error;
use crate::runner::Running;
use crate::suite::Case;
use crate::throughput::Throughput;

/// The protocol's name and version, answered to `hello`.
pub const SCHEMA: &str = "sparkles.serve/1";

/// Every op a request may name, in the order the docs give them.
const OPS: [&str; 9] = [
    "hello",
    "list",
    "setup",
    "calibrate",
    "sample",
    "count",
    "profile",
    "finish",
    "quit",
];

/// What a request asks.
#[derive(Debug, Clone, PartialEq)]
enum Op {
    Hello,
    List,
    Setup {
        case: String,
    },
    Calibrate {
        case: String,
        sample: Duration,
    },
    Sample {
        case: String,
        iterations: u64,
    },
    Count {
        case: String,
        iterations: u64,
        brackets: Option<u32>,
    },
    Profile {
        case: String,
        duration: Duration,
        path: PathBuf,
        /// The folder of another profile of the case (its profile.json, folded.txt) to
        /// diff this one against.
        against: Option<PathBuf>,
    },
    Finish {
        case: String,
    },
    Quit,
}

/// One request: its op, and the id its reply echoes.
#[derive(Debug, Clone, PartialEq)]
struct Request {
    id: Option<Value>,
    op: Op,
}

/// A request that could not be read: what was wrong, and its id where it had one.
#[derive(Debug, Clone, PartialEq)]
struct BadRequest {
    id: Option<Value>,
    message: String,
}

/// A value as a message quotes it: its JSON, cut short when long.
fn quoted(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// The fields of one request's object, read with messages naming the op and the field.
struct Fields<'a> {
    op: &'a str,
    object: &'a Map<String, Value>,
}

impl Fields<'_> {
    fn get(&self, name: &str) -> Result<&Value, String> {
        self.object
            .get(name)
            .ok_or_else(|| format!("op '{}': field '{name}' is missing", self.op))
    }

    fn string(&self, name: &str) -> Result<String, String> {
        match self.get(name)? {
            Value::String(s) => Ok(s.clone()),
            other => Err(format!(
                "op '{}': field '{name}' must be a string, got {}",
                self.op,
                quoted(other)
            )),
        }
    }

    /// A whole number from 1 to `max`.
    fn count(&self, name: &str, max: u64) -> Result<u64, String> {
        let value = self.get(name)?;
        match value.as_u64() {
            Some(0) => Err(format!(
                "op '{}': field '{name}' must be at least 1, got 0",
                self.op
            )),
            Some(n) if n <= max => Ok(n),
            Some(n) => Err(format!(
                "op '{}': field '{name}' must be at most {max}, got {n}",
                self.op
            )),
            None => Err(format!(
                "op '{}': field '{name}' must be a positive integer, got {}",
                self.op,
                quoted(value)
            )),
        }
    }

    fn case(&self) -> Result<String, String> {
        self.string("case")
    }
}

/// Reads one request line.
fn parse_request(line: &[u8]) -> Result<Request, BadRequest> {
    let value: Value = serde_json::from_slice(line).map_err(|e| BadRequest {
        id: None,
        message: format!("the request is not JSON: {e}"),
    })?;
    let Value::Object(object) = value else {
        return Err(BadRequest {
            id: None,
            message: format!(
                "a request must be a JSON object with an 'op', got {}",
                quoted(&value)
            ),
        });
    };
    let id = object.get("id").cloned();
    let bad = |message: String| BadRequest {
        id: id.clone(),
        message,
    };
    let op = match object.get("op") {
        Some(Value::String(op)) => op.as_str(),
        Some(other) => {
            return Err(bad(format!(
                "field 'op' must be a string, got {}",
                quoted(other)
            )))
        }
        None => {
            return Err(bad(format!(
                "the request has no field 'op' (one of: {})",
                OPS.join(", ")
            )))
        }
    };
    let fields = Fields {
        op,
        object: &object,
    };
    let op = match op {
        "hello" => Op::Hello,
        "list" => Op::List,
        "setup" => Op::Setup {
            case: fields.case().map_err(bad)?,
        },
        "calibrate" => Op::Calibrate {
            case: fields.case().map_err(bad)?,
            sample: Duration::from_nanos(fields.count("sample_ns", u64::MAX).map_err(bad)?),
        },
        "sample" => Op::Sample {
            case: fields.case().map_err(bad)?,
            iterations: fields.count("iterations", u64::MAX).map_err(bad)?,
        },
        "count" => Op::Count {
            case: fields.case().map_err(bad)?,
            iterations: fields.count("iterations", u64::MAX).map_err(bad)?,
            // As --count-brackets takes them.
            brackets: match object.get("brackets") {
                None | Some(Value::Null) => None,
                Some(_) => Some(fields.count("brackets", 1000).map_err(bad)? as u32),
            },
        },
        "profile" => Op::Profile {
            case: fields.case().map_err(bad)?,
            duration: seconds(&fields).map_err(bad)?,
            path: PathBuf::from(fields.string("path").map_err(bad)?),
            against: match object.get("against") {
                None | Some(Value::Null) => None,
                Some(_) => Some(PathBuf::from(fields.string("against").map_err(bad)?)),
            },
        },
        "finish" => Op::Finish {
            case: fields.case().map_err(bad)?,
        },
        "quit" => Op::Quit,
        other => {
            return Err(bad(format!(
                "unknown op '{other}' (ops: {})",
                OPS.join(", ")
            )))
        }
    };
    Ok(Request { id, op })
}

/// The `seconds` of a profile request: a positive number.
fn seconds(fields: &Fields<'_>) -> Result<Duration, String> {
    let value = fields.get("seconds")?;
    value
        .as_f64()
        .filter(|s| *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| {
            format!(
                "op 'profile': field 'seconds' must be a positive number, got {}",
                quoted(value)
            )
        })
}

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

/// A throughput as the `setup` reply gives it.
fn throughput_json(throughput: Option<Throughput>) -> Value {
    match throughput {
        Some(Throughput::Bytes(n)) => json!({"bytes": n}),
        Some(Throughput::Elements(n)) => json!({"elements": n}),
        None => Value::Null,
    }
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
            .get_or_insert_with(|| "cpu".to_string());
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
    fn answer(&mut self, line: &[u8]) -> (Value, bool) {
        let (id, result, quit) = match parse_request(line) {
            Ok(Request { id, op }) => {
                let quit = op == Op::Quit;
                (id, self.handle(op), quit)
            }
            Err(BadRequest { id, message }) => (id, Err(message), false),
        };
        let mut reply = Map::new();
        if let Some(id) = id {
            reply.insert("id".into(), id);
        }
        match result {
            Ok(fields) => {
                reply.insert("ok".into(), Value::Bool(true));
                reply.extend(fields);
            }
            Err(message) => {
                reply.insert("ok".into(), Value::Bool(false));
                reply.insert("error".into(), Value::String(message));
            }
        }
        (Value::Object(reply), quit)
    }

    /// Runs one op: the reply's fields besides `ok` and `id`, or what went wrong.
    fn handle(&mut self, op: Op) -> Result<Map<String, Value>, String> {
        let fields = match op {
            Op::Hello => json!({
                "schema": SCHEMA,
                "suite": self.context.suite,
                "pid": std::process::id(),
                "version": env!("CARGO_PKG_VERSION"),
            }),
            Op::List => json!({
                "cases": self.cases.0.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>(),
            }),
            Op::Setup { case } => self.setup(&case)?,
            Op::Calibrate { case, sample } => {
                let calibrated = self
                    .cases
                    .with_running("calibrate", &case, |r| r.calibrate(sample))?;
                let (iterations, elapsed) = calibrated.ok_or_else(|| no_answer("calibrate"))?;
                json!({"iterations": iterations, "ns": nanos(elapsed)})
            }
            Op::Sample { case, iterations } => {
                let elapsed = self.cases.with_running("sample", &case, |r| {
                    let elapsed = r.sample(iterations);
                    // Kept as the timing pass keeps them: the count reply's throughput.
                    if let Some(e) = elapsed {
                        r.report
                            .samples
                            .push(e.as_nanos() as f64 / iterations as f64);
                    }
                    elapsed
                })?;
                json!({"ns": nanos(elapsed.ok_or_else(|| no_answer("sample"))?)})
            }
            Op::Count {
                case,
                iterations,
                brackets,
            } => self.count(&case, iterations, brackets)?,
            Op::Profile {
                case,
                duration,
                path,
                against,
            } => self.profile(&case, duration, path, against.as_deref())?,
            Op::Finish { case } => self.finish(&case)?,
            Op::Quit => json!({}),
        };
        match fields {
            Value::Object(map) => Ok(map),
            _ => Ok(Map::new()),
        }
    }

    fn setup(&mut self, case: &str) -> Result<Value, String> {
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
        Ok(json!({"case": case, "throughput": throughput_json(throughput)}))
    }

    fn count(
        &mut self,
        case: &str,
        iterations: u64,
        brackets: Option<u32>,
    ) -> Result<Value, String> {
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
        let unavailable: Map<String, Value> = row
            .metrics
            .iter()
            .filter(|(_, v)| v.is_none())
            .filter_map(|(id, _)| {
                Some((
                    id.clone(),
                    Value::String(context.catalog.unavailable_reason(id)?),
                ))
            })
            .collect();
        let mut reply = json!({
            "metrics": row.metrics,
            "brackets": per_bracket.map(|_| brackets),
            "iterations_per_bracket": per_bracket,
            "unavailable": unavailable,
        });
        if !row.metric_samples.is_empty() {
            reply["metric_samples"] = json!(row.metric_samples);
        }
        if let Some(counting) = &row.counting {
            reply["counting"] = json!(counting);
        }
        Ok(reply)
    }

    fn profile(
        &mut self,
        case: &str,
        duration: Duration,
        path: PathBuf,
        against: Option<&std::path::Path>,
    ) -> Result<Value, String> {
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
                &crate::profiling::ProfileSampling::Perf(sampling),
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
                against.map(crate::profiling::Against::Folder).as_ref(),
            );
            r.report.profile.take()
        })?;
        Ok(json!({"profile": summary.ok_or_else(|| no_answer("profile"))?}))
    }

    fn finish(&mut self, case: &str) -> Result<Value, String> {
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
        Ok(json!({}))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn error(line: &str) -> String {
        parse_request(line.as_bytes()).unwrap_err().message
    }

    #[test]
    fn requests_parse_into_ops() {
        let r = parse_request(br#"{"op":"sample","case":"a/b","iterations":8,"id":[1]}"#).unwrap();
        assert_eq!(r.id, Some(json!([1])));
        assert_eq!(
            r.op,
            Op::Sample {
                case: "a/b".into(),
                iterations: 8
            }
        );
        let r = parse_request(br#"{"op":"count","case":"c","iterations":3}"#).unwrap();
        assert_eq!(
            r.op,
            Op::Count {
                case: "c".into(),
                iterations: 3,
                brackets: None
            }
        );
        let r = parse_request(br#"{"op":"profile","case":"c","seconds":0.5,"path":"p"}"#).unwrap();
        assert!(
            matches!(r.op, Op::Profile { duration, against: None, .. } if duration == Duration::from_millis(500))
        );
        let r = parse_request(
            br#"{"op":"profile","case":"c","seconds":1,"path":"p","against":"base/c"}"#,
        )
        .unwrap();
        assert!(
            matches!(r.op, Op::Profile { against: Some(a), .. } if a == std::path::Path::new("base/c"))
        );
    }

    #[test]
    fn bad_requests_name_the_op_and_the_field() {
        assert!(error("{oops").starts_with("the request is not JSON"));
        assert!(error("[1]").contains("JSON object"));
        assert!(error(r#"{"id":1}"#).contains("no field 'op'"));
        assert!(error(r#"{"op":7}"#).contains("field 'op' must be a string"));
        assert!(error(r#"{"op":"frob"}"#).contains("unknown op 'frob'"));
        assert_eq!(
            error(r#"{"op":"setup"}"#),
            "op 'setup': field 'case' is missing"
        );
        assert_eq!(
            error(r#"{"op":"sample","case":"c","iterations":"ten"}"#),
            "op 'sample': field 'iterations' must be a positive integer, got \"ten\""
        );
        assert_eq!(
            error(r#"{"op":"sample","case":"c","iterations":0}"#),
            "op 'sample': field 'iterations' must be at least 1, got 0"
        );
        assert!(
            error(r#"{"op":"count","case":"c","iterations":1,"brackets":1001}"#)
                .contains("at most 1000")
        );
        assert!(
            error(r#"{"op":"profile","case":"c","seconds":-1,"path":"p"}"#)
                .contains("field 'seconds' must be a positive number")
        );
        assert_eq!(
            error(r#"{"op":"profile","case":"c","seconds":1,"path":"p","against":3}"#),
            "op 'profile': field 'against' must be a string, got 3"
        );
        // The id is echoed even when the rest is wrong.
        let bad = parse_request(br#"{"op":"sample","id":"x"}"#).unwrap_err();
        assert_eq!(bad.id, Some(json!("x")));
    }
}
