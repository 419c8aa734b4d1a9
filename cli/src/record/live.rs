//! `sparkles record` on Linux: forking the command (or attaching to a running process),
//! waiting for its end, and writing the capture.

use std::time::{Duration, Instant};

use sparkles_perf_data::atomic_write::{interrupted, note_interrupts};
use sparkles_sampler::session::{SamplingConfig, Session, Target};
use sparkles_sampler::system::System;

use super::RecordArgs;
use crate::error::Error;

/// Attaches to the target (a running process, or a command forked here and let go once
/// its events are open), samples until it ends (or `duration` passes, or SIGINT or
/// SIGTERM), and writes the capture. Interrupted, it stops sampling, writes the capture
/// whole as `perf record` does on Ctrl-C, and returns [`Error::Interrupted`] (exit
/// status 130 or 143).
pub(super) fn record(
    args: &RecordArgs,
    duration: Option<Duration>,
    config: &SamplingConfig,
    note: &str,
    system: &System,
) -> Result<(), Error> {
    // The capture streams to a temporary file from the start: a signal is noted, so that
    // it is finished (or removed) rather than left.
    note_interrupts();
    let started = Instant::now();
    let deadline = duration.map(|d| started + d);
    let (session, mut child) = match args.pid {
        Some(pid) => (Session::start(config, Target::Process(pid), system)?, None),
        None => {
            let (session, child) = start_command(&args.command, config, system)?;
            (session, Some(child))
        }
    };
    eprintln!("sparkles record: {note}");
    for r in &session.restrictions {
        eprintln!("sparkles record: {r}");
    }
    let session_restrictions = session.restrictions.len();
    wait_for_the_end(child.as_ref(), args.pid, deadline);
    let mut capture = session.finish();
    let mut ended_by_itself = None;
    if let Some(c) = child.take() {
        if c.exited() {
            ended_by_itself = Some(c);
        } else {
            // Stopped by --duration or a signal: end the child as perf does.
            c.kill_and_wait();
        }
    }
    for u in &capture.uncovered {
        eprintln!("sparkles record: not covered: {u}");
    }
    for r in capture.restrictions.iter().skip(session_restrictions) {
        eprintln!("sparkles record: {r}");
    }
    let written = write(&mut capture, &args.output, started);
    let Some(signal) = interrupted() else {
        written?;
        // The command's own end is passed on, as a shell passes it on.
        return match ended_by_itself.map(|c| c.end()) {
            Some(End::Status(0)) | None => Ok(()),
            Some(end) => {
                eprintln!("sparkles record: '{}' {end}", args.command[0]);
                Err(Error::CommandFailed(end.exit_status()))
            }
        };
    };
    let kept = match written {
        Ok(()) => format!(
            "sampling stopped; the capture written whole to {}",
            args.output.display()
        ),
        Err(e) => format!(
            "sampling stopped; the capture not written ({e}); {} is as it was",
            args.output.display()
        ),
    };
    Err(Error::Interrupted { signal, kept })
}

/// Forks `command`, which waits on a pipe until its events are open and then execs; its
/// session and the child. A session that cannot start ends the child unexec'd.
fn start_command(
    command: &[String],
    config: &SamplingConfig,
    system: &System,
) -> Result<(Session, Child), Error> {
    // Everything the child needs is built before fork: after it, only async-signal-safe
    // calls.
    let argv: Vec<std::ffi::CString> = command
        .iter()
        .map(|a| std::ffi::CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|_| Error::usage("record", "an argument holds a NUL byte"))?;
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::Os {
            what: "pipe",
            source: std::io::Error::last_os_error(),
        });
    }
    let (read_end, write_end) = (fds[0], fds[1]);
    // The exec's failure comes back on a second pipe, closed by a successful exec
    // (O_CLOEXEC): its errno, or nothing.
    let mut exec_fds = [0i32; 2];
    // SAFETY: as above.
    if unsafe { libc::pipe2(exec_fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        let e = std::io::Error::last_os_error();
        // SAFETY: closing the pipe we own.
        unsafe {
            libc::close(read_end);
            libc::close(write_end);
        }
        return Err(Error::Os {
            what: "pipe",
            source: e,
        });
    }
    let (exec_read, exec_write) = (exec_fds[0], exec_fds[1]);
    // SAFETY: the child only calls close, read, execvp and _exit before replacing
    // itself, all async-signal-safe, on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        let e = std::io::Error::last_os_error();
        // SAFETY: closing the pipe we own.
        unsafe {
            for fd in [read_end, write_end, exec_read, exec_write] {
                libc::close(fd);
            }
        }
        return Err(Error::Os {
            what: "fork",
            source: e,
        });
    }
    if pid == 0 {
        // SAFETY: see above; the pointers stay valid in the child's copy.
        unsafe {
            libc::close(write_end);
            libc::close(exec_read);
            let mut byte = 0u8;
            // Exec only on the go byte: EOF means the parent gave up (or died).
            let mut n;
            loop {
                n = libc::read(read_end, (&mut byte as *mut u8).cast(), 1);
                if n >= 0 || *libc::__errno_location() != libc::EINTR {
                    break;
                }
            }
            if n == 1 {
                libc::execvp(argv_ptrs[0], argv_ptrs.as_ptr());
                let errno = (*libc::__errno_location()).to_ne_bytes();
                libc::write(exec_write, errno.as_ptr().cast(), errno.len());
            }
            libc::_exit(127);
        }
    }
    // SAFETY: closing our copies of the ends the child uses, which we own.
    unsafe {
        libc::close(read_end);
        libc::close(exec_write);
    }
    let session = Session::start(config, Target::Process(pid as u32), system);
    let child = Child::new(pid);
    // The go byte only once sampling is on; without it the child exits unexec'd.
    // SAFETY: one byte from a valid buffer to our own pipe; then closing it.
    unsafe {
        if session.is_ok() {
            libc::write(write_end, [1u8].as_ptr().cast(), 1);
        }
        libc::close(write_end);
    }
    let exec_error = session.is_ok().then(|| exec_failure(exec_read)).flatten();
    // SAFETY: closing the exec pipe's read end, which we own.
    unsafe { libc::close(exec_read) };
    match (session, exec_error) {
        (Ok(session), None) => Ok((session, child)),
        (Ok(session), Some(source)) => {
            // Nothing ran: no capture is written, the output is left as it was.
            drop(session);
            child.kill_and_wait();
            Err(Error::CannotRun {
                command: command[0].clone(),
                source,
            })
        }
        (Err(e), _) => {
            child.kill_and_wait();
            Err(e.into())
        }
    }
}

/// Waits for the child's exec: `None` once it succeeded (the pipe closed), else the
/// error it failed with.
fn exec_failure(fd: i32) -> Option<std::io::Error> {
    let mut errno = [0u8; 4];
    let mut got = 0;
    while got < errno.len() {
        // SAFETY: reading into the rest of a local buffer from our own pipe.
        let n = unsafe { libc::read(fd, errno[got..].as_mut_ptr().cast(), errno.len() - got) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            break;
        }
        got += n as usize;
    }
    (got == errno.len()).then(|| std::io::Error::from_raw_os_error(i32::from_ne_bytes(errno)))
}

/// Waits until the sampled command exits, the attached process ends, the deadline
/// passes, or SIGINT or SIGTERM comes.
fn wait_for_the_end(child: Option<&Child>, pid: Option<u32>, deadline: Option<Instant>) {
    loop {
        if interrupted().is_some() || deadline.is_some_and(|d| Instant::now() >= d) {
            return;
        }
        let ended = match (child, pid) {
            (Some(c), _) => c.exited(),
            (None, Some(pid)) => {
                // Gone, or a zombie its parent has not reaped: either way it has ended.
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let state = stat
                    .rsplit(')')
                    .next()
                    .and_then(|rest| rest.split_whitespace().next());
                matches!(state, None | Some("Z") | Some("X"))
            }
            (None, None) => true,
        };
        if ended {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Writes the capture (and, with `--mem`, its page table beside it), and says what it
/// held.
fn write(
    capture: &mut sparkles_sampler::session::Capture,
    output: &std::path::Path,
    started: Instant,
) -> Result<(), Error> {
    let written = capture.writer.write(output)?;
    // An old table of another run must not be taken for this one.
    let _ = std::fs::remove_file(sparkles_perf_data::pages::PageNodes::sidecar(output));
    if let Some(pages) = &capture.pages {
        let path = pages.write_beside(output)?;
        eprintln!(
            "sparkles record: {} sampled pages, {} placed on a node (move_pages), in {}",
            pages.nodes.len(),
            pages.placed(),
            path.display()
        );
    }
    eprintln!(
        "sparkles record: {} samples, {} lost, {} lost samples, {:.1} MB written to {}{} (stack compaction saved {:.1} MB) in {:.1}s; {}",
        capture.samples,
        capture.lost,
        capture.lost_samples,
        written.bytes as f64 / 1e6,
        output.display(),
        compressed(&written),
        capture.writer.stack_bytes_saved as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        capture.buffers
    );
    Ok(())
}

/// `, zstd-compressed from 85.1 MB (37.2x)`, when it was.
fn compressed(written: &sparkles_perf_data::writer::Written) -> String {
    if written.compressed_records == 0 {
        return String::new();
    }
    format!(
        ", zstd-compressed from {:.1} MB ({:.1}x)",
        written.record_bytes as f64 / 1e6,
        written.record_bytes as f64 / written.bytes.max(1) as f64
    )
}

/// A child forked by `record`.
#[derive(Debug)]
struct Child(libc::pid_t, std::cell::Cell<Option<i32>>);

/// How the recorded command ended.
#[derive(Debug, Clone, Copy, PartialEq)]
enum End {
    /// It exited with this status.
    Status(i32),
    /// A signal ended it.
    Signal(i32),
}

impl End {
    /// The status a shell gives for it: the exit status, or 128 + the signal.
    fn exit_status(self) -> i32 {
        match self {
            End::Status(n) => n,
            End::Signal(n) => 128 + n,
        }
    }
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            End::Status(n) => write!(f, "exited with status {n}"),
            End::Signal(n) => {
                // SAFETY: strsignal returns a static (or thread-local) string or null.
                let name = unsafe { libc::strsignal(n) };
                let name = if name.is_null() {
                    format!("signal {n}")
                } else {
                    // SAFETY: a NUL-terminated string from libc.
                    let text = unsafe { std::ffi::CStr::from_ptr(name) };
                    format!("signal {n} ({})", text.to_string_lossy())
                };
                write!(f, "was ended by {name}")
            }
        }
    }
}

impl Child {
    fn new(pid: libc::pid_t) -> Child {
        Child(pid, std::cell::Cell::new(None))
    }

    /// Whether it has exited (reaping it if so, and keeping its status).
    fn exited(&self) -> bool {
        if self.1.get().is_some() {
            return true;
        }
        let mut status = 0;
        // SAFETY: waitpid on our own child with a valid status pointer.
        let rc = unsafe { libc::waitpid(self.0, &mut status, libc::WNOHANG) };
        if rc == self.0 {
            self.1.set(Some(status));
        }
        rc == self.0 || rc < 0
    }

    /// How it ended, once [`Child::exited`] said it had.
    fn end(&self) -> End {
        match self.1.get() {
            Some(s) if libc::WIFSIGNALED(s) => End::Signal(libc::WTERMSIG(s)),
            Some(s) => End::Status(libc::WEXITSTATUS(s)),
            // Reaped elsewhere: its status is unknown, and nothing says it failed.
            None => End::Status(0),
        }
    }

    fn kill_and_wait(self) {
        if !self.exited() {
            // SAFETY: signalling and reaping our own child.
            unsafe {
                libc::kill(self.0, libc::SIGKILL);
                let mut status = 0;
                libc::waitpid(self.0, &mut status, 0);
            }
        }
    }
}
