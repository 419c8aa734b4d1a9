//! A bench process in the harness's serve mode (`BENCH --bench --serve`,
//! `sparkles.serve/1`, docs/schemas/serve.md), driven from this side: one
//! [`Request`](super::protocol::Request) a line on its stdin, one answer a line on its
//! stdout, read back into the op's answer type; what it says for people goes to a log
//! file.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::protocol::{
    Calibrated, CaseList, Counted, Done, Hello, Op, Profiled, Request, Sampled, SetUp, SCHEMA,
};
use crate::error::Error;

/// A running bench process.
#[derive(Debug)]
pub struct Served {
    /// Its part in the comparison (`base A1`, `variant B`, `base A2`).
    pub name: String,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    log: PathBuf,
}

impl Served {
    /// Starts `exe --bench --serve ARGS…` in `dir`, its stderr into `log`.
    pub fn start(
        name: &str,
        exe: &Path,
        dir: &Path,
        args: &[String],
        log: &Path,
    ) -> Result<Served, Error> {
        Served::start_with(name, exe, dir, args, &[], log)
    }

    /// [`start`](Served::start) with `env` added to the process's environment.
    pub fn start_with(
        name: &str,
        exe: &Path,
        dir: &Path,
        args: &[String],
        env: &[(&str, String)],
        log: &Path,
    ) -> Result<Served, Error> {
        if let Some(parent) = log.parent() {
            std::fs::create_dir_all(parent).map_err(|source| Error::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let stderr = std::fs::File::create(log).map_err(|source| Error::Io {
            path: log.to_path_buf(),
            source,
        })?;
        let mut child = Command::new(exe)
            .args(["--bench", "--serve"])
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|source| Error::Io {
                path: exe.to_path_buf(),
                source,
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Error::Serve(format!(
                "{name}: no pipes to {}",
                exe.display()
            )));
        };
        let mut served = Served {
            name: name.to_string(),
            child,
            stdin,
            stdout: BufReader::new(stdout),
            log: log.to_path_buf(),
        };
        let hello: Value = served.ask(Op::Hello)?;
        if hello["schema"] != SCHEMA {
            return Err(Error::Serve(format!(
                "{name}: {} answers serve mode as {}, not {SCHEMA}",
                exe.display(),
                hello["schema"]
            )));
        }
        Ok(served)
    }

    /// Sends `op`; its answer read as `A`, or the error it answered (naming this
    /// process).
    pub fn ask<A: DeserializeOwned>(&mut self, op: Op) -> Result<A, Error> {
        let request = Request { id: None, op };
        let value = serde_json::to_value(&request).unwrap_or(Value::Null);
        let op = value["op"].as_str().unwrap_or("?").to_string();
        let gone = |this: &Served, what: String| {
            Error::Serve(format!(
                "{}: {what} (its output: {})",
                this.name,
                this.log.display()
            ))
        };
        let mut line = value.to_string();
        line.push('\n');
        if let Err(e) = self
            .stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
        {
            return Err(gone(self, format!("could not be asked to {op}: {e}")));
        }
        let mut answer = String::new();
        match self.stdout.read_line(&mut answer) {
            Ok(0) => {
                let status = self.child.wait().ok();
                let how = status.map_or_else(|| "ended".to_string(), |s| format!("ended ({s})"));
                return Err(gone(self, format!("{how} when asked to {op}")));
            }
            Ok(_) => {}
            Err(e) => return Err(gone(self, format!("its answer to {op}: {e}"))),
        }
        let value: Value = serde_json::from_str(&answer).map_err(|e| {
            gone(
                self,
                format!(
                    "answered {op} with a line that is not JSON ({e}): {}",
                    answer.trim()
                ),
            )
        })?;
        if value["ok"] != true {
            let why = value["error"].as_str().unwrap_or("no reason given");
            return Err(Error::Serve(format!("{}: {op}: {why}", self.name)));
        }
        serde_json::from_value(value).map_err(|e| {
            Error::Serve(format!(
                "{}: its answer to {op} is not what {SCHEMA} gives ({e}): {}",
                self.name,
                answer.trim()
            ))
        })
    }

    /// The cases it serves, in suite order.
    pub fn list(&mut self) -> Result<Vec<String>, Error> {
        Ok(self.ask::<CaseList>(Op::List)?.cases)
    }

    /// Sets `case` up (its thread waits in its `iter` call).
    pub fn setup(&mut self, case: &str) -> Result<SetUp, Error> {
        self.ask(Op::Setup { case: case.into() })
    }

    /// The iterations one sample of `case` takes to last about `sample`.
    pub fn calibrate(&mut self, case: &str, sample: Duration) -> Result<Calibrated, Error> {
        self.ask(Op::Calibrate {
            case: case.into(),
            sample,
        })
    }

    /// One timing sample of `iterations` iterations of `case`, ns.
    pub fn sample(&mut self, case: &str, iterations: u64) -> Result<u64, Error> {
        Ok(self
            .ask::<Sampled>(Op::Sample {
                case: case.into(),
                iterations,
            })?
            .ns)
    }

    /// The counting pass of `case` over `iterations` iterations.
    pub fn count(&mut self, case: &str, iterations: u64) -> Result<Counted, Error> {
        self.ask(Op::Count {
            case: case.into(),
            iterations,
            brackets: None,
        })
    }

    /// The profile pass of `case` for `duration` into the capture `path`, diffed against
    /// the profile in the folder `against`.
    pub fn profile(
        &mut self,
        case: &str,
        duration: Duration,
        path: &Path,
        against: Option<&Path>,
    ) -> Result<Profiled, Error> {
        self.ask(Op::Profile {
            case: case.into(),
            duration,
            path: path.to_path_buf(),
            against: against.map(Path::to_path_buf),
        })
    }

    /// Finishes `case` (its thread joined).
    pub fn finish(&mut self, case: &str) -> Result<(), Error> {
        self.ask::<Done>(Op::Finish { case: case.into() })
            .map(|_| ())
    }

    /// Its `hello` answer.
    pub fn hello(&mut self) -> Result<Hello, Error> {
        self.ask(Op::Hello)
    }

    /// Asks it to quit and waits for it.
    pub fn quit(mut self) {
        let _ = self.ask::<Done>(Op::Quit);
        let _ = self.child.wait();
    }
}

impl Drop for Served {
    /// A process left behind by an error is ended.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
