//! `--serve` (docs/schemas/serve.md) driven as `sparkles compare` drives it: each test
//! runs this test binary again as the child that serves a small suite
//! (`child_serves_the_suite`), writes requests to its standard input and reads one
//! reply per request from its standard output, which must hold nothing else. The child
//! prints a marker line before it serves, since libtest writes its own lines to
//! standard output first.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use sparkles_bench::{Suite, Throughput};

/// Set in the child's environment: its harness flags, separated by newlines.
const CHILD: &str = "SPARKLES_SERVE_ARGS";

/// What the child prints on standard output just before it serves.
const MARKER: &str = "sparkles-serve-test: serving";

/// How long a reply may take before the test gives up on the child: far beyond what a
/// loaded machine needs, only so that a hung child fails the test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(300);

/// The suite the child serves: quick cases, one declaring throughput, one that prints
/// to standard output, and the three ways a case fails (its body panics on its third
/// call, its setup panics, its function fails after its iter call returned).
fn suite() -> Suite {
    let mut suite = Suite::new("served");
    suite.case("spin/sum", |b| {
        b.iter(|| (0..200u64).map(std::hint::black_box).sum::<u64>())
    });
    suite.case("spin/bytes", |b| {
        let data = vec![7u8; 256];
        b.throughput(Throughput::Bytes(256));
        b.iter(|| data.iter().map(|&x| u64::from(x)).sum::<u64>())
    });
    suite.case("noisy/prints", |b| {
        b.iter(|| println!("a case writing to standard output"))
    });
    suite.case("fails/third_call", |b| {
        let mut calls = 0u32;
        b.iter(move || {
            calls += 1;
            assert!(calls != 3, "third call refused");
            calls
        })
    });
    suite.case("fails/setup", |b| {
        let table: Vec<u8> = Vec::new();
        assert!(!table.is_empty(), "setup found no table");
        b.iter(|| 1)
    });
    suite.case("fails/after", |b| -> Result<(), String> {
        b.iter(|| 1);
        Err("verification failed".to_string())
    });
    suite
}

/// The child: serves [`suite`] with the flags the parent gives; its exit status is the
/// harness's. Ignored in a plain run (it is the tests' child, not a test of its own).
#[test]
#[ignore = "the child the tests below drive"]
fn child_serves_the_suite() {
    let flags = std::env::var(CHILD).expect("run by the tests below, which set the flags");
    let mut out = std::io::stdout().lock();
    writeln!(out, "\n{MARKER}").unwrap();
    out.flush().unwrap();
    drop(out);
    let args = std::iter::once("bench").chain(flags.lines().filter(|l| !l.is_empty()));
    std::process::exit(sparkles_bench::run_main(suite(), args));
}

/// A serving child: its standard input, its replies line by line, its standard error.
struct Served {
    child: Child,
    stdin: Option<ChildStdin>,
    replies: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    stderr_reader: std::thread::JoinHandle<()>,
    stdout_reader: std::thread::JoinHandle<()>,
}

impl Served {
    /// Starts the child with `--bench --serve` and `extra` flags, and reads past
    /// libtest's lines to the marker.
    fn start(extra: &[&str]) -> Served {
        let mut flags = vec!["--bench", "--serve"];
        flags.extend(extra);
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "child_serves_the_suite",
                "--nocapture",
            ])
            .env(CHILD, flags.join("\n"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, replies) = channel();
        let stdout_reader = std::thread::spawn(move || {
            let mut lines = stdout.lines();
            for line in lines.by_ref() {
                if line.unwrap().trim() == MARKER {
                    break;
                }
            }
            for line in lines {
                if tx.send(line.unwrap()).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut from = child.stderr.take().unwrap();
        let to = stderr.clone();
        let stderr_reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = from.read(&mut buf) {
                if n == 0 {
                    break;
                }
                to.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Served {
            stdin: child.stdin.take(),
            child,
            replies,
            stderr,
            stderr_reader,
            stdout_reader,
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Writes `line` (and a newline), and reads the one reply: a JSON object.
    fn send(&mut self, line: &str) -> Value {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        self.next_reply(line)
    }

    fn next_reply(&mut self, asked: &str) -> Value {
        let reply = match self.replies.recv_timeout(PATIENCE) {
            Ok(reply) => reply,
            Err(e) => panic!("no reply to {asked} ({e}):\n{}", self.stderr()),
        };
        let value: Value = serde_json::from_str(&reply)
            .unwrap_or_else(|e| panic!("reply to {asked} is not JSON ({e}): {reply}"));
        assert!(value.is_object(), "reply to {asked}: {reply}");
        value
    }

    /// The reply to `request`, which must be ok.
    fn ok(&mut self, request: Value) -> Value {
        let reply = self.send(&request.to_string());
        assert_eq!(reply["ok"], true, "{request} -> {reply}\n{}", self.stderr());
        reply
    }

    /// The error reply to `line`, which must name every one of `words`; then a hello
    /// with an id, answered, shows the process still serves.
    fn refused(&mut self, line: &str, words: &[&str]) -> String {
        let reply = self.send(line);
        assert_eq!(reply["ok"], false, "{line} -> {reply}");
        let error = reply["error"].as_str().unwrap().to_string();
        for word in words {
            assert!(error.contains(word), "{line} -> '{error}' lacks '{word}'");
        }
        let hello = self.ok(json!({"op": "hello", "id": "after"}));
        assert_eq!(hello["id"], "after");
        error
    }

    /// Closes standard input (or has quit already) and checks the child ends with 0,
    /// having written nothing more; gives all it wrote to standard error.
    fn end(self) -> String {
        let Served {
            mut child,
            stdin,
            replies,
            stderr,
            stderr_reader,
            stdout_reader,
        } = self;
        drop(stdin);
        let status = child.wait().unwrap();
        stderr_reader.join().unwrap();
        // Every line the child wrote has been passed on once its reader saw the end.
        stdout_reader.join().unwrap();
        let stderr = stderr.lock().unwrap().clone();
        assert!(status.success(), "serve ended with {status:?}:\n{stderr}");
        let extra: Vec<String> = replies.try_iter().collect();
        assert!(
            extra.is_empty(),
            "standard output held more than replies: {extra:?}"
        );
        stderr
    }
}

#[test]
fn a_whole_session_is_answered_line_by_line() {
    let mut s = Served::start(&[]);
    let hello = s.ok(json!({"op": "hello", "id": 1}));
    assert_eq!(hello["id"], 1);
    assert_eq!(hello["schema"], "sparkles.serve/1");
    assert_eq!(hello["suite"], "served");
    assert_eq!(hello["pid"], s.child.id());
    let list = s.ok(json!({"op": "list"}));
    assert_eq!(
        list["cases"],
        json!([
            "spin/sum",
            "spin/bytes",
            "noisy/prints",
            "fails/third_call",
            "fails/setup",
            "fails/after"
        ])
    );
    assert!(list.get("id").is_none(), "{list}");

    let case = "spin/bytes";
    let setup = s.ok(json!({"op": "setup", "case": case, "id": {"k": [2]}}));
    assert_eq!(setup["case"], case);
    assert_eq!(setup["id"], json!({"k": [2]}));
    assert_eq!(setup["throughput"], json!({"bytes": 256}));
    // Setting up again is ok and does nothing.
    s.ok(json!({"op": "setup", "case": case}));

    let calibrated = s.ok(json!({"op": "calibrate", "case": case, "sample_ns": 2_000_000}));
    let iterations = calibrated["iterations"].as_u64().unwrap();
    // Calibration stops at the first sample that took at least the length asked for.
    assert!(iterations >= 1, "{calibrated}");
    assert!(
        calibrated["ns"].as_u64().unwrap() >= 2_000_000,
        "{calibrated}"
    );
    for _ in 0..5 {
        let sample = s.ok(json!({"op": "sample", "case": case, "iterations": iterations}));
        assert!(sample["ns"].as_u64().unwrap() > 0, "{sample}");
    }

    let counted = s.ok(json!({
        "op": "count", "case": case, "iterations": iterations, "brackets": 4
    }));
    assert_eq!(counted["brackets"], 4);
    assert!(counted["iterations_per_bracket"].as_u64().unwrap() >= 1);
    let metrics = counted["metrics"].as_object().unwrap();
    // The row's layout: every selected metric, each a number or null.
    assert!(metrics.values().all(|v| v.is_number() || v.is_null()));
    assert!(metrics.contains_key("rusage.minor_faults"), "{counted}");
    // The throughput from the samples taken, as a row has it from its timing.
    assert!(
        metrics["throughput.bytes_per_sec"].as_f64().unwrap() > 0.0,
        "{counted}"
    );
    for (id, v) in metrics.iter().filter(|(_, v)| v.is_null()) {
        // Nulls unavailable here say why.
        if let Some(reason) = counted["unavailable"].get(id) {
            assert!(reason.as_str().is_some_and(|r| !r.is_empty()), "{id}");
        }
        assert!(v.is_null());
    }
    if metrics["rusage.minor_faults"].is_number() {
        assert_eq!(
            counted["metric_samples"]["rusage.minor_faults"]
                .as_array()
                .unwrap()
                .len(),
            4,
            "{counted}"
        );
    }
    // Brackets left out take --count-brackets's.
    let default = s.ok(json!({"op": "count", "case": case, "iterations": 16}));
    assert_eq!(default["brackets"], 8);

    // Two cases set up at once, sampled in turn.
    s.ok(json!({"op": "setup", "case": "spin/sum"}));
    for c in ["spin/sum", case, "spin/sum"] {
        s.ok(json!({"op": "sample", "case": c, "iterations": 10}));
    }
    s.ok(json!({"op": "finish", "case": case}));
    // Finishing again does nothing; the case serves no more samples.
    s.ok(json!({"op": "finish", "case": case}));
    s.refused(
        &json!({"op": "sample", "case": case, "iterations": 1}).to_string(),
        &["sample", case, "is finished"],
    );
    s.refused(
        &json!({"op": "setup", "case": case}).to_string(),
        &["setup", case, "finished"],
    );
    // quit finishes what is still set up (spin/sum), and ends with 0.
    let quit = s.ok(json!({"op": "quit", "id": "bye"}));
    assert_eq!(quit["id"], "bye");
    s.end();
}

#[test]
fn bad_requests_are_errors_and_the_process_stays_usable() {
    let mut s = Served::start(&[]);
    s.refused("this is not json", &["not JSON"]);
    s.refused("{\"op\": \"hello\"", &["not JSON"]);
    s.refused("[1, 2]", &["JSON object"]);
    s.refused(r#"{"id": 5}"#, &["no field 'op'"]);
    s.refused(r#"{"op": 5}"#, &["field 'op'", "string"]);
    s.refused(
        r#"{"op": "frobnicate"}"#,
        &["unknown op 'frobnicate'", "sample"],
    );
    s.refused(r#"{"op": "setup"}"#, &["setup", "'case'", "missing"]);
    s.refused(
        r#"{"op": "setup", "case": 3}"#,
        &["setup", "'case'", "string"],
    );
    s.refused(
        r#"{"op": "setup", "case": "no/such"}"#,
        &["setup", "no case 'no/such'"],
    );
    s.refused(
        r#"{"op": "sample", "case": "spin/sum", "iterations": 4}"#,
        &["sample", "spin/sum", "not set up"],
    );
    s.refused(
        r#"{"op": "finish", "case": "spin/sum"}"#,
        &["finish", "spin/sum", "not set up"],
    );
    s.ok(json!({"op": "setup", "case": "spin/sum"}));
    s.refused(
        r#"{"op": "sample", "case": "spin/sum"}"#,
        &["sample", "'iterations'", "missing"],
    );
    s.refused(
        r#"{"op": "sample", "case": "spin/sum", "iterations": 0}"#,
        &["sample", "'iterations'", "at least 1"],
    );
    s.refused(
        r#"{"op": "sample", "case": "spin/sum", "iterations": "ten"}"#,
        &["sample", "'iterations'", "positive integer", "\"ten\""],
    );
    s.refused(
        r#"{"op": "sample", "case": "spin/sum", "iterations": -3}"#,
        &["sample", "'iterations'", "positive integer"],
    );
    s.refused(
        r#"{"op": "calibrate", "case": "spin/sum", "sample_ns": 1.5}"#,
        &["calibrate", "'sample_ns'", "positive integer"],
    );
    s.refused(
        r#"{"op": "count", "case": "spin/sum", "iterations": 8, "brackets": 0}"#,
        &["count", "'brackets'", "at least 1"],
    );
    s.refused(
        r#"{"op": "profile", "case": "spin/sum", "seconds": "long", "path": "x"}"#,
        &["profile", "'seconds'"],
    );
    s.refused(
        r#"{"op": "profile", "case": "spin/sum", "seconds": 1}"#,
        &["profile", "'path'", "missing"],
    );
    // The id of a wrong request is echoed with its error.
    let reply = s.send(r#"{"op": "sample", "case": "spin/sum", "iterations": 0, "id": 9}"#);
    assert_eq!(
        (reply["ok"].clone(), reply["id"].clone()),
        (json!(false), json!(9))
    );
    // A blank line is no request and gets no reply: the next reply is the hello's.
    let hello = s.send("\n{\"op\": \"hello\", \"id\": \"h\"}");
    assert_eq!(hello["id"], "h");
    // The case set up before all this still samples.
    s.ok(json!({"op": "sample", "case": "spin/sum", "iterations": 3}));

    // A body that panics on its third call: the reply names the case and the message,
    // and the case is finished.
    let case = "fails/third_call";
    s.ok(json!({"op": "setup", "case": case}));
    s.ok(json!({"op": "sample", "case": case, "iterations": 2}));
    s.refused(
        &json!({"op": "sample", "case": case, "iterations": 2, "id": "p"}).to_string(),
        &["sample", case, "third call refused", "finished"],
    );
    s.refused(
        &json!({"op": "sample", "case": case, "iterations": 1}).to_string(),
        &[case, "failed earlier", "third call refused"],
    );
    s.ok(json!({"op": "finish", "case": case}));
    // A setup that panics.
    s.refused(
        r#"{"op": "setup", "case": "fails/setup"}"#,
        &["setup", "fails/setup", "setup found no table"],
    );
    s.refused(
        r#"{"op": "calibrate", "case": "fails/setup", "sample_ns": 1000}"#,
        &["fails/setup", "failed earlier"],
    );
    // A case function that fails once its iter call returned: finish says so.
    s.ok(json!({"op": "setup", "case": "fails/after"}));
    s.ok(json!({"op": "sample", "case": "fails/after", "iterations": 5}));
    s.refused(
        r#"{"op": "finish", "case": "fails/after"}"#,
        &["finish", "fails/after", "verification failed"],
    );
    // What a case prints goes to standard error, never between replies.
    s.ok(json!({"op": "setup", "case": "noisy/prints"}));
    s.ok(json!({"op": "sample", "case": "noisy/prints", "iterations": 3}));
    // The other cases were never touched by all this.
    s.ok(json!({"op": "sample", "case": "spin/sum", "iterations": 3}));
    // The end of standard input ends the process with 0, as quit does.
    let stderr = s.end();
    if cfg!(unix) {
        assert!(
            stderr.contains("a case writing to standard output"),
            "{stderr}"
        );
    }
}

#[test]
fn filters_choose_the_cases_served() {
    let mut s = Served::start(&["spin", "--skip", "bytes"]);
    assert_eq!(s.ok(json!({"op": "list"}))["cases"], json!(["spin/sum"]));
    s.refused(
        r#"{"op": "setup", "case": "spin/bytes"}"#,
        &["setup", "no case 'spin/bytes'"],
    );
    s.ok(json!({"op": "quit"}));
    s.end();
}

/// The profile pass over serve: the capture written where asked, the summary as a row's
/// (with the `profile` feature, after the capture was read: unwind summary, hot
/// functions).
#[test]
fn profile_writes_the_capture_where_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/spin.perf.data");
    let mut s = Served::start(&["--profile-event", "cpu-clock", "--profile-freq", "1000"]);
    let case = "spin/sum";
    s.ok(json!({"op": "setup", "case": case}));
    s.ok(json!({"op": "calibrate", "case": case, "sample_ns": 1_000_000}));
    let reply = s.send(
        &json!({"op": "profile", "case": case, "seconds": 0.5, "path": path, "id": 3}).to_string(),
    );
    if reply["ok"] == false {
        let error = reply["error"].as_str().unwrap_or_default();
        assert!(error.contains("unavailable"), "{reply}");
        skip::skip("kernel_edge", format!("no sampler in this build: {error}"));
        return;
    }
    assert_eq!(reply["id"], 3);
    let profile = &reply["profile"];
    if let Some(error) = profile["error"].as_str() {
        skip::skip(
            "perf_event",
            format!("the sampler could not start here: {error}"),
        );
        return;
    }
    assert_eq!(profile["capture"], path.to_str().unwrap(), "{reply}");
    assert!(path.is_file());
    assert!(profile["samples"].as_u64().unwrap() > 0, "{reply}");
    assert!(profile["seconds"].as_f64().unwrap() >= 0.5, "{reply}");
    #[cfg(feature = "profile")]
    {
        assert!(
            profile["unwind"]["samples"].as_u64().unwrap() > 0,
            "{reply}"
        );
        assert!(!profile["top"].as_array().unwrap().is_empty(), "{reply}");
        assert!(dir.path().join("sub/profile.json").is_file());
        // A second pass diffed against the first's folder: the diff beside it, its movers.
        let again = dir.path().join("again/spin.perf.data");
        let reply = s.ok(json!({"op": "profile", "case": case, "seconds": 0.3, "path": again, "against": dir.path().join("sub")}));
        let movers = reply["profile"]["movers"].as_array().unwrap();
        assert!(!movers.is_empty() && movers.len() <= 3, "{reply}");
        assert!(dir.path().join("again/diff.json").is_file());
        assert!(dir.path().join("again/diff.svg").is_file());
        // Against a folder without a profile: a note, and the pass is still answered.
        let reply = s.ok(json!({"op": "profile", "case": case, "seconds": 0.1, "path": again, "against": dir.path().join("nothing")}));
        let notes = reply["profile"]["notes"].to_string();
        assert!(
            notes.contains("no profile diff") && notes.contains("nothing"),
            "{reply}"
        );
    }
    // The case still samples after its profile pass.
    s.ok(json!({"op": "sample", "case": case, "iterations": 4}));
    s.ok(json!({"op": "quit"}));
    s.end();
}
