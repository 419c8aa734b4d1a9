//! Writing a file whole or not at all: the one way every file of the project is written
//! (captures, page tables, profiles, flamegraphs, baselines, reports).

use std::io::Write;
use std::path::Path;

use crate::error::Error;

/// Writes `bytes` to `path` through a temporary file in the same folder, synced, then
/// renamed over `path`: a reader sees the old file or the new one, never half of one, and
/// a failed write leaves the old file as it was. Creates the folder.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".sparkles-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, e))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| Error::io(tmp.path(), e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
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
