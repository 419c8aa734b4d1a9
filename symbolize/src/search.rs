//! Where a module's file and its debug info are looked for: the path a capture recorded
//! (under `--symfs` when given), perf's build-id cache, and the debug directories
//! (`/usr/lib/debug` and any given with `--debug-dir`) by build id and by debug link.

use std::path::{Path, PathBuf};

/// The places files are looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchPaths {
    /// `--symfs DIR`: recorded paths are looked up under this directory instead of `/`.
    pub symfs: Option<PathBuf>,
    /// Debug-file directories, searched for `.build-id/xx/rest.debug` and for
    /// `.gnu_debuglink` names; `/usr/lib/debug` by default.
    pub debug_dirs: Vec<PathBuf>,
    /// perf's build-id cache (`~/.debug`), holding `.build-id/xx/rest/elf` copies of the
    /// files `perf record` saw; searched when a recorded path is gone or changed.
    pub build_id_cache: Option<PathBuf>,
}

impl Default for SearchPaths {
    fn default() -> SearchPaths {
        SearchPaths {
            symfs: None,
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            build_id_cache: std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".debug")),
        }
    }
}

/// A build id as lowercase hex.
pub fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// `.build-id/xx/rest` for a build id (empty ids give nothing).
fn build_id_tail(id: &[u8]) -> Option<PathBuf> {
    let h = hex(id);
    (h.len() > 2).then(|| Path::new(".build-id").join(&h[..2]).join(&h[2..]))
}

impl SearchPaths {
    /// Nothing but the recorded paths themselves (no debug directories, no cache).
    pub fn none() -> SearchPaths {
        SearchPaths {
            symfs: None,
            debug_dirs: Vec::new(),
            build_id_cache: None,
        }
    }

    /// Where the file a capture recorded as `path` may be, in the order tried: under
    /// `--symfs` (its recorded path, then, when a build id will check it, its file name),
    /// else the path itself; then perf's build-id cache. (A debug directory's separate
    /// debug file is no stand-in: `objcopy --only-keep-debug` leaves its load segments
    /// without file contents, so no mapped offset can be placed in it. It serves the
    /// binary's names once the binary is found.)
    pub fn binary_candidates(&self, path: &str, build_id: Option<&[u8]>) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let relative = path.trim_start_matches('/');
        match &self.symfs {
            Some(root) => {
                out.push(root.join(relative));
                if build_id.is_some() {
                    if let Some(name) = Path::new(path).file_name() {
                        out.push(root.join(name));
                    }
                }
            }
            None => out.push(PathBuf::from(path)),
        }
        if let Some(tail) = build_id.and_then(build_id_tail) {
            if let Some(cache) = &self.build_id_cache {
                out.push(cache.join(&tail).join("elf"));
            }
        }
        out.dedup();
        out
    }

    /// `D/.build-id/xx/rest.debug` for each debug directory D (under `--symfs` too).
    pub fn debug_by_build_id(&self, build_id: &[u8]) -> Vec<PathBuf> {
        let Some(tail) = build_id_tail(build_id) else {
            return Vec::new();
        };
        let mut name = tail.into_os_string();
        name.push(".debug");
        self.debug_roots()
            .into_iter()
            .map(|d| d.join(&name))
            .collect()
    }

    /// Where gdb looks for a `.gnu_debuglink` name of the file at `path`: beside it, in
    /// `.debug/` beside it, and in each debug directory under the file's own directory.
    pub fn debug_link_candidates(&self, path: &Path, link: &str) -> Vec<PathBuf> {
        let dir = path.parent().unwrap_or(Path::new("."));
        let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        // A file found under --symfs lives, for the debug directories, at its path in the
        // recorded file system.
        let abs = match &self.symfs {
            Some(root) => {
                let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
                abs.strip_prefix(&root)
                    .map(|p| Path::new("/").join(p))
                    .unwrap_or(abs)
            }
            None => abs,
        };
        let mut out = vec![dir.join(link), dir.join(".debug").join(link)];
        for root in self.debug_roots() {
            out.push(root.join(abs.strip_prefix("/").unwrap_or(&abs)).join(link));
        }
        out
    }

    /// The debug directories, each also under `--symfs` when one is given.
    fn debug_roots(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for d in &self.debug_dirs {
            if let Some(root) = &self.symfs {
                out.push(root.join(d.strip_prefix("/").unwrap_or(d)));
            }
            out.push(d.clone());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_in_order() {
        let paths = SearchPaths {
            symfs: Some(PathBuf::from("/sym")),
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            build_id_cache: Some(PathBuf::from("/home/u/.debug")),
        };
        let id = [0xab, 0xcd, 0xef];
        assert_eq!(
            paths.binary_candidates("/opt/app/bin/tool", Some(&id)),
            [
                "/sym/opt/app/bin/tool",
                "/sym/tool",
                "/home/u/.debug/.build-id/ab/cdef/elf",
            ]
            .map(PathBuf::from)
        );
        // Without a build id nothing could check a file found by its name alone.
        assert_eq!(
            SearchPaths::none().binary_candidates("/opt/app/bin/tool", None),
            [PathBuf::from("/opt/app/bin/tool")]
        );
    }
}
