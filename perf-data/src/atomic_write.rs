//! Writing a file whole or not at all: the one way every file of the project is written
//! (captures, page tables, profiles, flamegraphs, baselines, reports).
//!
//! A temporary file is removed when it is dropped, which a process killed by SIGINT or
//! SIGTERM never does: a program that writes files (the harness, `sparkles record`)
//! calls [`note_interrupts`] and stops at its own checkpoints ([`interrupted`]), where
//! every file is whole and every temporary file gone, then exits with
//! [`Interrupt::exit_status`].

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

use crate::error::Error;

/// Writes `bytes` to `path` through a temporary file in the same folder, synced, then
/// renamed over `path`: a reader sees the old file or the new one, never half of one, and
/// a failed write leaves the old file as it was. Creates the folder. The file is
/// readable as the umask allows (0644 under the usual 022), as any other program's output.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    write_with_mode(path, bytes, 0o666)
}

/// [`write_atomically`], readable by its owner alone (0600), as perf writes a capture: it
/// holds copies of the sampled program's stacks.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    write_with_mode(path, bytes, 0o600)
}

/// Writes each `(path, bytes)` as [`write_atomically`] does, all of them to their
/// temporary files first: a failed write (a full disk) leaves every old file as it was.
/// Files that belong together (a baseline's rows and where they were measured) are
/// then renamed into place one after another.
pub fn write_all_atomically(files: &[(&Path, &[u8])]) -> Result<(), Error> {
    let mut written = Vec::with_capacity(files.len());
    for (path, bytes) in files {
        written.push((*path, whole_temp_file(path, bytes, 0o666)?));
    }
    for (path, tmp) in written {
        tmp.persist(path).map_err(|e| Error::io(path, e))?;
    }
    Ok(())
}

fn write_with_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<(), Error> {
    let tmp = whole_temp_file(path, bytes, mode)?;
    tmp.persist(path).map_err(|e| Error::io(path, e))?;
    Ok(())
}

/// `bytes` in a synced temporary file beside `path`; an error names `path` (the file
/// that could not be written, not its temporary name), and the temporary file is gone.
fn whole_temp_file(path: &Path, bytes: &[u8], mode: u32) -> Result<TempFile, Error> {
    let mut tmp = temp_file_beside(path, mode)?;
    let file = tmp.as_file_mut();
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::io(path, e))?;
    Ok(tmp)
}

/// A temporary file in `path`'s folder (created), with `mode` less the umask: renamed
/// over `path` when whole, removed when dropped before. An error names the folder
/// that could not be made, or `path` when its temporary file could not be (a read-only
/// or full file system).
pub fn temp_file_beside(path: &Path, mode: u32) -> Result<TempFile, Error> {
    // Not beside a device or a pipe (`-o /dev/null`): /dev is no place for it, and the
    // file is copied into the path, not renamed over it.
    if is_special(path) {
        let dir = std::env::temp_dir();
        return TempFile::create_in(&dir, mode).map_err(|e| Error::io(&dir, e));
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    TempFile::create_in(dir, mode).map_err(|e| Error::io(path, e))
}

/// Whether `path` (its links followed) is something other than a file or a folder: a
/// device, a pipe or a socket, which a file is written into, never renamed over.
fn is_special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// A file written under a temporary name (`.sparkles-PID-N.tmp`, created new, so never
/// another's) until [`TempFile::persist`] renames it into place; dropped before, it is
/// removed. (The tempfile crate does this too, but brings four crates, rustix among the
/// slowest to build, into every bench that uses the harness: issue 33's build weight.)
#[derive(Debug)]
pub struct TempFile {
    path: PathBuf,
    file: File,
    /// Renamed into place: nothing to remove on drop.
    kept: bool,
}

/// The temporary files this process has made: with its pid, a name no other file has.
static MADE: AtomicU64 = AtomicU64::new(0);

impl TempFile {
    /// A new file in `dir` (which exists) with `mode` less the umask.
    fn create_in(dir: &Path, mode: u32) -> std::io::Result<TempFile> {
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
        #[cfg(not(unix))]
        let _ = mode;
        loop {
            let n = MADE.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!(".sparkles-{}-{n}.tmp", std::process::id()));
            match options.open(&path) {
                Ok(file) => {
                    return Ok(TempFile {
                        path,
                        file,
                        kept: false,
                    })
                }
                // Left by an earlier process of the same pid that was killed: the next name.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The open file.
    pub fn as_file_mut(&mut self) -> &mut File {
        &mut self.file
    }

    /// Renames the file over `to` (on the same file system: it is in `to`'s folder). On an
    /// error the temporary file is removed and `to` is as it was. Where `to` is a device,
    /// a pipe or a socket (`-o /dev/null`, `-o /dev/stdout`, a shell's `>(…)`), the bytes
    /// are written into it instead: renamed over, /dev/null would become a regular file
    /// (as root; every later write to it then landed in that file and every read of it
    /// returned them).
    pub fn persist(mut self, to: &Path) -> std::io::Result<()> {
        if is_special(to) {
            use std::io::Seek;
            self.file.seek(std::io::SeekFrom::Start(0))?;
            let mut out = std::fs::OpenOptions::new().write(true).open(to)?;
            std::io::copy(&mut self.file, &mut out)?;
            return out.flush();
        }
        std::fs::rename(&self.path, to)?;
        self.kept = true;
        Ok(())
    }
}

impl Write for TempFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A signal that asked the program to stop, noted by [`note_interrupts`]: SIGINT or
/// SIGTERM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupt {
    signal: i32,
}

impl Interrupt {
    /// `SIGINT` or `SIGTERM`.
    pub fn name(self) -> &'static str {
        if self.signal == SIGTERM {
            "SIGTERM"
        } else {
            "SIGINT"
        }
    }

    /// The status a program ended by it exits with: 128 + the signal's number (130 for
    /// SIGINT, 143 for SIGTERM), what a shell reports for a program the signal killed.
    pub fn exit_status(self) -> i32 {
        128 + self.signal
    }
}

impl std::fmt::Display for Interrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

const SIGTERM: i32 = 15;

/// The first SIGINT or SIGTERM since [`note_interrupts`]; 0 before one.
static NOTED: AtomicI32 = AtomicI32::new(0);

/// From here on SIGINT and SIGTERM are noted, not obeyed: the program stops at its next
/// checkpoint ([`interrupted`]). A second one (a user who does not want to wait) ends
/// it at once with the first's [`Interrupt::exit_status`]. Interrupted system calls are
/// restarted (`SA_RESTART`), so a case's reads and writes are not cut by the signal.
/// Only on Unix; elsewhere the signals keep their default.
pub fn note_interrupts() {
    #[cfg(unix)]
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is a valid start; the handler only touches an
        // atomic and calls _exit, both async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_interrupt as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

#[cfg(unix)]
extern "C" fn on_interrupt(signal: libc::c_int) {
    if let Err(first) = NOTED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe; nothing else runs.
        unsafe { libc::_exit(128 + first) };
    }
}

/// The SIGINT or SIGTERM noted since [`note_interrupts`], if one came.
pub fn interrupted() -> Option<Interrupt> {
    match NOTED.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(Interrupt { signal }),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use super::*;

    #[test]
    fn replaces_whole_files_and_leaves_no_temporary_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/file.json");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
    }

    /// A pipe (as `-o /dev/stdout` or a shell's `>(…)` name one) is written into and stays
    /// a pipe; no temporary file is left beside it or in the temporary folder. (/dev/null
    /// itself is not tested: before this, the test would have replaced it.)
    #[test]
    #[cfg(unix)]
    fn a_pipe_is_written_into_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("out");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        write_atomically(&fifo, &bytes).unwrap();
        // Checked before the reader is waited for: renamed over, the pipe would never
        // have had a writer.
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(reader.join().unwrap(), bytes);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let pid = format!(".sparkles-{}-", std::process::id());
        let left = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&pid))
            .count();
        assert_eq!(left, 0);
    }

    /// Outputs are readable as the umask allows; captures by their owner alone.
    #[test]
    #[cfg(unix)]
    fn outputs_follow_the_umask_and_captures_stay_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (public, private) = (dir.path().join("rows.jsonl"), dir.path().join("x.data"));
        write_atomically(&public, b"{}").unwrap();
        write_private(&private, b"PERFILE2").unwrap();
        // SAFETY: umask only swaps the mask; restored at once.
        let umask = unsafe {
            let m = libc::umask(0o022);
            libc::umask(m);
            m
        };
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        #[allow(clippy::useless_conversion)] // mode_t is u16 on macOS
        let umask = u32::from(umask);
        assert_eq!(mode(&public), 0o666 & !umask);
        assert_eq!(mode(&private), 0o600);
    }

    #[test]
    fn files_written_together_are_all_old_when_one_cannot_be_written() {
        let dir = tempfile::tempdir().unwrap();
        let (rows, env) = (dir.path().join("rows.jsonl"), dir.path().join("env.json"));
        std::fs::write(&rows, b"old rows").unwrap();
        std::fs::write(&env, b"old env").unwrap();
        let blocked = dir.path().join("rows.jsonl/inner");
        let e = write_all_atomically(&[(&rows, b"new rows"), (&blocked, b"x")]).unwrap_err();
        assert!(e.to_string().contains("rows.jsonl"), "{e}");
        assert_eq!(std::fs::read(&rows).unwrap(), b"old rows");
        write_all_atomically(&[(&rows, b"new rows"), (&env, b"new env")]).unwrap();
        assert_eq!(std::fs::read(&env).unwrap(), b"new env");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn a_temporary_file_dropped_unpersisted_is_removed_and_names_never_repeat() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.bin");
        let a = temp_file_beside(&dest, 0o600).unwrap();
        let mut b = temp_file_beside(&dest, 0o600).unwrap();
        assert_ne!(a.path, b.path);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
        drop(a);
        b.write_all(b"whole").unwrap();
        b.persist(&dest).unwrap();
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["out.bin"]);
        assert_eq!(std::fs::read(&dest).unwrap(), b"whole");
    }

    #[test]
    fn a_failed_write_names_the_path_and_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kept.txt");
        std::fs::write(&path, b"old").unwrap();
        // A folder where the file's folder should be: the write cannot happen.
        let blocked = dir.path().join("kept.txt/inner.txt");
        let e = write_atomically(&blocked, b"new").unwrap_err();
        assert!(e.to_string().contains("kept.txt"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
    }
}
