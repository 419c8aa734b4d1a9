//! Where the run's files go, and writing them whole or not at all.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// The target folder a binary at `exe` was built into: the nearest ancestor holding
/// cargo's `CACHEDIR.TAG`, else the folder above `<profile>/deps/`.
pub fn target_dir_of(exe: &Path) -> Option<PathBuf> {
    if let Some(dir) = exe
        .ancestors()
        .skip(1)
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
    {
        return Some(dir.to_path_buf());
    }
    let parent = exe.parent()?;
    if parent.file_name()? == "deps" {
        return Some(parent.parent()?.parent()?.to_path_buf());
    }
    None
}

/// The folder every file of the run goes under: `--out-dir`, else `target/sparkles/` of
/// the target folder this executable was built into (so neither `CARGO_TARGET_DIR` nor
/// the working directory matters), else `./target/sparkles`.
pub fn out_dir(explicit: Option<&Path>) -> PathBuf {
    if let Some(dir) = explicit {
        return dir.to_path_buf();
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| target_dir_of(&exe))
        .unwrap_or_else(|| PathBuf::from("target"))
        .join("sparkles")
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, so
/// a reader sees the old file or the new one, never half of one. Creates the folder.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, e))?;
    tmp.write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(|e| Error::io(tmp.path(), e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_target_folder_from_a_bench_executable() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("custom-target");
        let deps = target.join("release/deps");
        std::fs::create_dir_all(&deps).unwrap();
        let exe = deps.join("demo-0123abcd");
        // Without the tag: the folder above <profile>/deps.
        assert_eq!(target_dir_of(&exe).unwrap(), target);
        // With a --target triple the tag decides.
        std::fs::write(target.join("CACHEDIR.TAG"), "Signature").unwrap();
        let triple = target.join("x86_64-unknown-linux-gnu/release/deps/demo-1");
        assert_eq!(target_dir_of(&triple).unwrap(), target);
        assert_eq!(target_dir_of(Path::new("/bin-less")), None);
    }

    #[test]
    fn atomic_write_replaces_whole_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/file.json");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        // No temporary file left behind.
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
    }
}
