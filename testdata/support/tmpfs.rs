//! Shared by tests of several crates (included with `#[path]`): folders where a write
//! cannot happen: a full 1 MiB tmpfs, and a read-only folder. Mounting needs root; where
//! it is refused the test says so and is skipped.

#![allow(dead_code)] // each test file uses what it needs
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::io::Write;
use std::path::Path;
use std::process::Command;

use crate::skip;

/// A tmpfs mounted on a fresh folder; unmounted when dropped.
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

/// Whether this process runs as root.
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

impl Tmpfs {
    /// A tmpfs of `size` (mount's spelling: `1m`); `None`, saying why (a skip of
    /// `root`), where mounting is refused (not root, a container without
    /// CAP_SYS_ADMIN).
    pub fn mount(size: &str) -> Option<Tmpfs> {
        if !is_root() {
            skip::skip("root", "mounting a tmpfs needs root");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs { dir }),
            Ok(o) => {
                skip::skip(
                    "root",
                    format!(
                        "mount -t tmpfs refused: {}",
                        String::from_utf8_lossy(&o.stderr).trim()
                    ),
                );
                None
            }
            Err(e) => {
                skip::skip("root", format!("mount: {e}"));
                None
            }
        }
    }

    /// The mounted folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills it: a file takes every block left, so that the next write fails with
    /// ENOSPC.
    pub fn fill(&self) {
        let mut filler = std::fs::File::create(self.path().join("filler")).unwrap();
        let block = vec![0u8; 4096];
        loop {
            match filler.write(&block) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{e}");
                    break;
                }
            }
        }
    }

    /// Remounts it read-only.
    pub fn remount_read_only(&self) {
        let out = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(self.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.path()).status();
    }
}

/// A folder nothing can be written into, holding what `populate` put there first: a
/// tmpfs remounted read-only as root (mode bits do not stop root), else a folder and its
/// subfolders made 0555.
pub enum ReadOnly {
    /// Root's: a read-only mount.
    Mounted(Tmpfs),
    /// Another user's: folders without write permission.
    Modes(tempfile::TempDir),
}

impl ReadOnly {
    /// The folder, populated, then made read-only; `None` where root cannot mount (said).
    pub fn make(populate: impl FnOnce(&Path)) -> Option<ReadOnly> {
        if is_root() {
            let fs = Tmpfs::mount("16m")?;
            populate(fs.path());
            fs.remount_read_only();
            return Some(ReadOnly::Mounted(fs));
        }
        let dir = tempfile::tempdir().unwrap();
        populate(dir.path());
        set_folder_modes(dir.path(), 0o555);
        Some(ReadOnly::Modes(dir))
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        match self {
            ReadOnly::Mounted(fs) => fs.path(),
            ReadOnly::Modes(dir) => dir.path(),
        }
    }
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        if let ReadOnly::Modes(dir) = self {
            // Writable again, so that the folder can be removed.
            set_folder_modes(dir.path(), 0o755);
        }
    }
}

/// `mode` on `dir` and every folder under it.
fn set_folder_modes(dir: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                set_folder_modes(&e.path(), mode);
            }
        }
    }
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode));
}
