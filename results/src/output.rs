//! Where the run's files go, and writing them whole or not at all.

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

/// Writes `bytes` to `path` whole or not at all (the project's one atomic write); creates
/// the folder.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    Ok(sparkles_perf_data::atomic_write::write_atomically(
        path, bytes,
    )?)
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
}
