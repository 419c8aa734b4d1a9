//! A cache of inflated debug sections, by build id. A distribution's debug file (Debian's
//! libc6-dbg) stores its DWARF zlib-compressed, and inflating it was most of the time a
//! small report took. The first reader of such a section inflates it and writes it to
//! `DIR/<build id in hex>/<section name>` (whole or not at all); later readers map that
//! file instead. A build id names the file's content, so an entry is never stale; its
//! length is checked against the section's uncompressed size all the same.
//!
//! `DIR` is `$SPARKLES_CACHE_DIR`, else `$XDG_CACHE_HOME/sparkles/debug`, else
//! `~/.cache/sparkles/debug` (as perf keeps `~/.debug`); `SPARKLES_CACHE_DIR=off` (or
//! empty) turns it off. A cache that cannot be read or written is passed by: it only
//! saves time, and a section is then inflated as before.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::elf::{map_file, FileBytes};

/// Sections smaller than this are inflated each time: not worth a file.
const MIN_BYTES: u64 = 32 << 10;

/// The cache folder, or `None` where it is turned off or no home is known.
fn dir() -> Option<PathBuf> {
    dir_from(|name| std::env::var_os(name))
}

/// [`dir`] from the environment variables `var` gives.
fn dir_from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    match var("SPARKLES_CACHE_DIR") {
        Some(d) if d.is_empty() || d == "off" => None,
        Some(d) => Some(PathBuf::from(d)),
        None => {
            let base = var("XDG_CACHE_HOME")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .or_else(|| {
                    var("HOME")
                        .filter(|d| !d.is_empty())
                        .map(|h| PathBuf::from(h).join(".cache"))
                })?;
            Some(base.join("sparkles").join("debug"))
        }
    }
}

fn entry(dir: &Path, build_id: &[u8], section: &str) -> Option<PathBuf> {
    let id: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
    // A section name is `.debug_info` and the like: nothing that leaves the folder.
    if id.is_empty() || section.contains('/') {
        return None;
    }
    Some(dir.join(id).join(section))
}

/// The inflated `section` of the file with `build_id`, where the cache has it at its size.
pub(crate) fn read(build_id: &[u8], section: &str, size: u64) -> Option<Arc<FileBytes>> {
    read_in(&dir()?, build_id, section, size)
}

fn read_in(dir: &Path, build_id: &[u8], section: &str, size: u64) -> Option<Arc<FileBytes>> {
    if size < MIN_BYTES {
        return None;
    }
    let bytes = map_file(&entry(dir, build_id, section)?).ok()?;
    (bytes.len() as u64 == size).then_some(bytes)
}

/// Keeps the inflated `section` of the file with `build_id` for later readers.
pub(crate) fn write(build_id: &[u8], section: &str, bytes: &[u8]) {
    if let Some(dir) = dir() {
        write_in(&dir, build_id, section, bytes);
    }
}

fn write_in(dir: &Path, build_id: &[u8], section: &str, bytes: &[u8]) {
    if (bytes.len() as u64) < MIN_BYTES {
        return;
    }
    if let Some(path) = entry(dir, build_id, section) {
        let _ = sparkles_perf_data::atomic_write::write_atomically(&path, bytes);
    }
}

/// The header of a kept kallsyms file: a magic line, then a line with the lengths of the
/// /proc/modules text and of the kallsyms text that follow it, in that order.
const KALLSYMS_MAGIC: &str = "sparkles-kallsyms 1\n";

fn kallsyms_entry(dir: &Path, boot_id: &str) -> Option<PathBuf> {
    // A boot id is hex digits and dashes: nothing that leaves the folder.
    (!boot_id.is_empty() && boot_id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-'))
        .then(|| dir.join("kallsyms").join(boot_id))
}

/// The kallsyms text kept for boot `boot_id`, where /proc/modules read `modules` when it
/// was kept and the file is this user's own (it holds kernel addresses).
pub(crate) fn read_kallsyms(boot_id: &str, modules: &str) -> Option<String> {
    read_kallsyms_in(&dir()?, boot_id, modules)
}

fn read_kallsyms_in(dir: &Path, boot_id: &str, modules: &str) -> Option<String> {
    let path = kallsyms_entry(dir, boot_id)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if std::fs::metadata(&path).ok()?.uid() != me {
            return None;
        }
    }
    let mut text = std::fs::read_to_string(&path).ok()?;
    let rest = text.strip_prefix(KALLSYMS_MAGIC)?;
    let (lens, rest) = rest.split_once('\n')?;
    let (len, text_len) = lens.split_once(' ')?;
    let (len, text_len): (usize, usize) = (len.parse().ok()?, text_len.parse().ok()?);
    // Whole (it is not synced: a crash can leave it cut), and kept under these modules.
    if rest.len() != len.checked_add(text_len)? || rest.get(..len)? != modules {
        return None;
    }
    let start = text.len() - rest.len() + len;
    text.drain(..start);
    Some(text)
}

/// Keeps the kallsyms `text` read in boot `boot_id` while /proc/modules read `modules`,
/// readable by this user alone (whole or not at all; a cache, so not synced to disk).
pub(crate) fn write_kallsyms(boot_id: &str, modules: &str, text: &str) {
    if let Some(dir) = dir() {
        write_kallsyms_in(&dir, boot_id, modules, text);
    }
}

fn write_kallsyms_in(dir: &Path, boot_id: &str, modules: &str, text: &str) {
    use std::io::Write;
    let Some(path) = kallsyms_entry(dir, boot_id) else {
        return;
    };
    // One file per boot: those of earlier boots are stale for good.
    if let Ok(old) = std::fs::read_dir(dir.join("kallsyms")) {
        for e in old.flatten() {
            let name = e.file_name();
            if name
                .to_str()
                .is_some_and(|n| n != boot_id && !n.starts_with('.'))
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    let Ok(mut tmp) = sparkles_perf_data::atomic_write::temp_file_beside(&path, 0o600) else {
        return;
    };
    let header = format!("{KALLSYMS_MAGIC}{} {}\n", modules.len(), text.len());
    let written = [header.as_bytes(), modules.as_bytes(), text.as_bytes()]
        .iter()
        .try_for_each(|b| tmp.write_all(b));
    if written.is_ok() {
        let _ = tmp.persist(&path);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use super::*;

    #[test]
    fn entries_round_trip_by_build_id_and_size() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let id = [0xab, 0xcd, 0x01];
        let data = vec![7u8; MIN_BYTES as usize + 10];
        assert!(read_in(d, &id, ".debug_info", data.len() as u64).is_none());
        write_in(d, &id, ".debug_info", &data);
        assert!(d.join("abcd01/.debug_info").is_file());
        let back = read_in(d, &id, ".debug_info", data.len() as u64).unwrap();
        assert_eq!(&back[..], &data[..]);
        // Another size is another section: not taken.
        assert!(read_in(d, &id, ".debug_info", data.len() as u64 + 1).is_none());
        // Small sections are not kept; no build id, no entry.
        write_in(d, &id, ".debug_str", &[1, 2, 3]);
        assert!(!d.join("abcd01/.debug_str").exists());
        write_in(d, &[], ".debug_info", &data);
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 1);
    }

    #[test]
    fn kallsyms_kept_per_boot_while_the_modules_stay() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (boot, modules) = (
            "4d110f26-520a-442c",
            "ext4 1044480 1 - Live 0xffffffffc0a1b000\n",
        );
        let text = "ffffffff81000000 T _stext\nffffffff81000100 t do_thing\n";
        assert!(read_kallsyms_in(d, boot, modules).is_none());
        write_kallsyms_in(d, boot, modules, text);
        assert_eq!(read_kallsyms_in(d, boot, modules).as_deref(), Some(text));
        // Private: it holds kernel addresses.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(d.join("kallsyms").join(boot))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
        // Another module list, another boot: not taken; no module support: "" is a list.
        assert!(read_kallsyms_in(d, boot, "").is_none());
        assert!(read_kallsyms_in(d, "0000", modules).is_none());
        write_kallsyms_in(d, "0000", "", text);
        assert_eq!(read_kallsyms_in(d, "0000", "").as_deref(), Some(text));
        // The earlier boot's file went when this boot's was written.
        assert!(!d.join("kallsyms").join(boot).exists());
        // A boot id that is not one is no path.
        write_kallsyms_in(d, "../x", "", text);
        assert!(!d.join("x").exists());
        // A cut file is not taken, wherever it was cut.
        let path = d.join("kallsyms").join("0000");
        let whole = std::fs::read(&path).unwrap();
        for cut in [KALLSYMS_MAGIC.len() + 1, whole.len() - 1] {
            std::fs::write(&path, &whole[..cut]).unwrap();
            assert!(read_kallsyms_in(d, "0000", "").is_none(), "{cut}");
        }
    }

    #[test]
    fn the_folder_follows_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        assert_eq!(
            dir_from(env(&[("HOME", "/home/u")])),
            Some(PathBuf::from("/home/u/.cache/sparkles/debug"))
        );
        assert_eq!(
            dir_from(env(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/c")])),
            Some(PathBuf::from("/c/sparkles/debug"))
        );
        assert_eq!(
            dir_from(env(&[("HOME", "/home/u"), ("SPARKLES_CACHE_DIR", "/x")])),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(
            dir_from(env(&[("HOME", "/h"), ("SPARKLES_CACHE_DIR", "off")])),
            None
        );
        assert_eq!(dir_from(env(&[])), None);
    }
}
