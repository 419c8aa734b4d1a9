//! A bench process in the harness's serve mode (`BENCH --bench --serve`,
//! `sparkles.serve/1`, docs/schemas/serve.md): one JSON request a line on its stdin, one
//! answer a line on its stdout; what it says for people goes to a log file.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

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
            return Err(Error::Input(format!(
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
        let hello = served.ask(json!({"op": "hello"}))?;
        if hello["schema"] != "sparkles.serve/1" {
            return Err(Error::Input(format!(
                "{name}: {} answers serve mode as {}, not sparkles.serve/1",
                exe.display(),
                hello["schema"]
            )));
        }
        Ok(served)
    }

    /// Sends `request`; its answer, or the error it answered (naming this process).
    pub fn ask(&mut self, request: Value) -> Result<Value, Error> {
        let op = request["op"].as_str().unwrap_or("?").to_string();
        let gone = |this: &Served, what: String| {
            Error::Input(format!(
                "{}: {what} (its output: {})",
                this.name,
                this.log.display()
            ))
        };
        let mut line = request.to_string();
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
            return Err(Error::Input(format!("{}: {op}: {why}", self.name)));
        }
        Ok(value)
    }

    /// Asks it to quit and waits for it.
    pub fn quit(mut self) {
        let _ = self.ask(json!({"op": "quit"}));
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
