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
