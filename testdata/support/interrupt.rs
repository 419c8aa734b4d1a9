//! Shared by tests of several crates (included with `#[path]`): a program run with its
//! standard error watched line by line, interrupted at a line it prints, and what it left
//! in a folder (every file's bytes, and any temporary file).

#![allow(dead_code)] // each test file uses what it needs
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long a test waits for a line or an exit: generous, for a loaded 2-core machine.
pub const DEADLINE: Duration = Duration::from_secs(300);

/// A running program whose standard error is read line by line as it comes.
pub struct Watched {
    child: Child,
    lines: Receiver<String>,
    /// Every line read so far.
    pub stderr: String,
}

impl Watched {
    /// Starts `command` with standard error piped to this test (standard output is
    /// dropped).
    pub fn start(command: &mut Command) -> Watched {
        // A test run in the background of a non-interactive shell inherits SIGINT ignored
        // (POSIX), and an ignored signal stays ignored across exec: the program would never
        // see the signal the test sends, and wait for ever.
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: signal() is async-signal-safe, and the closure touches nothing else.
            unsafe {
                command.pre_exec(|| {
                    libc::signal(libc::SIGINT, libc::SIG_DFL);
                    libc::signal(libc::SIGTERM, libc::SIG_DFL);
                    Ok(())
                });
            }
        }
        let mut child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Watched {
            child,
            lines,
            stderr: String::new(),
        }
    }

    /// The program's standard input, where `start` was given a piped one.
    pub fn take_stdin(&mut self) -> std::process::ChildStdin {
        self.child.stdin.take().unwrap()
    }

    /// The program's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for a line that `wanted` takes; `None` once standard error closed (the
    /// program ended) without one. Panics past [`DEADLINE`].
    pub fn wait_for(&mut self, wanted: impl Fn(&str) -> bool) -> Option<String> {
        let until = Instant::now() + DEADLINE;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.stderr.push_str(&line);
                    self.stderr.push('\n');
                    if wanted(&line) {
                        return Some(line);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return None,
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no awaited line within {DEADLINE:?}:\n{}", self.stderr)
                }
            }
        }
    }

    /// Waits until `ready` holds (a file the program makes appears), checking every few
    /// milliseconds; false once the program ended first. Panics past [`DEADLINE`].
    pub fn wait_until(&mut self, ready: impl Fn() -> bool) -> bool {
        let until = Instant::now() + DEADLINE;
        loop {
            if ready() {
                return true;
            }
            if self.child.try_wait().unwrap().is_some() {
                return ready();
            }
            assert!(
                Instant::now() < until,
                "not ready within {DEADLINE:?}:\n{}",
                self.stderr
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Sends `signal` (SIGINT, SIGTERM) to the program.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill on our own child's pid.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
        assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
    }

    /// Waits for the program's end: its status, and all it wrote to standard error.
    pub fn finish(mut self) -> (ExitStatus, String) {
        while let Ok(line) = self.lines.recv_timeout(DEADLINE) {
            self.stderr.push_str(&line);
            self.stderr.push('\n');
        }
        (self.child.wait().unwrap(), self.stderr)
    }
}

/// Every file under `dir` and its bytes.
pub fn files_under(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                folders.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    files
}

/// The temporary files (`.sparkles-*.tmp`) left anywhere under `dir`.
pub fn temporaries_under(dir: &Path) -> Vec<PathBuf> {
    files_under(dir)
        .into_keys()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(".sparkles-") && n.ends_with(".tmp"))
        })
        .collect()
}

/// That every file under `dir` has the bytes it had in `before`, and no file was added
/// or removed.
pub fn assert_untouched(dir: &Path, before: &BTreeMap<PathBuf, Vec<u8>>, stderr: &str) {
    let after = files_under(dir);
    let changed: Vec<&PathBuf> = before
        .keys()
        .chain(after.keys())
        .filter(|p| before.get(*p) != after.get(*p))
        .collect();
    assert!(changed.is_empty(), "changed: {changed:?}\n{stderr}");
}
