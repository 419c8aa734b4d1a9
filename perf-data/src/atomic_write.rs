//! Writing a file whole or not at all: the one way every file of the project is written
//! (captures, page tables, profiles, flamegraphs, baselines, reports).

use std::io::Write;
use std::path::Path;

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

fn write_with_mode(path: &Path, bytes: &[u8], mode: u32) -> Result<(), Error> {
    let mut tmp = temp_file_beside(path, mode)?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| Error::io(tmp.path(), e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

/// A temporary file in `path`'s folder (created), with `mode` less the umask: renamed
/// over `path` when whole, removed when dropped before.
pub fn temp_file_beside(path: &Path, mode: u32) -> Result<tempfile::NamedTempFile, Error> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut builder = tempfile::Builder::new();
    builder.prefix(".sparkles-").suffix(".tmp");
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(mode));
    #[cfg(not(unix))]
    let _ = mode;
    builder.tempfile_in(dir).map_err(|e| Error::io(dir, e))
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
