//! The node of each sampled data page, as `move_pages(2)` told while the sampled
//! processes ran: a table the sampler fills and writes beside the capture
//! (`CAPTURE.pages.json`, `sparkles.pages/1`), which a report reads back.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// Linux errno values `move_pages` reports per page (negated in the table).
mod errno {
    pub const EPERM: i32 = 1;
    pub const ENOENT: i32 = 2;
    pub const ESRCH: i32 = 3;
    pub const EACCES: i32 = 13;
    pub const EFAULT: i32 = 14;
    pub const ENOSYS: i32 = 38;
}

/// The sidecar's schema.
const SCHEMA: &str = "sparkles.pages/1";

/// The node of each sampled data page of the processes sampled: a node, or why not
/// (`-ENOENT`: not present, `-EFAULT`: not mapped, `-ESRCH`: the process was gone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageNodes {
    /// The process sampled (its children are asked about too).
    pub pid: u32,
    /// The page size pages are keyed by.
    pub page_size: u64,
    /// (pid, page address) to node, or to a negative errno.
    pub nodes: HashMap<(u32, u64), i32>,
}

/// A page not yet answered.
const PENDING: i32 = i32::MIN;

impl PageNodes {
    /// An empty table for `pid` (and the processes it starts), keyed by pages of
    /// `page_size` bytes (a power of two; 4096 where it is not).
    pub fn new(pid: u32, page_size: u64) -> PageNodes {
        PageNodes {
            pid,
            page_size: Some(page_size)
                .filter(|s| s.is_power_of_two())
                .unwrap_or(4096),
            nodes: HashMap::new(),
        }
    }

    /// The page holding `addr`.
    pub fn page(&self, addr: u64) -> u64 {
        addr & !(self.page_size - 1)
    }

    /// Whether `addr`'s page in `pid` is to be asked about: new, or last found absent (a
    /// page freed and touched again is a new page); it is then marked pending.
    pub fn want(&mut self, pid: u32, addr: u64) -> bool {
        let key = (pid, self.page(addr));
        match self.nodes.get_mut(&key) {
            Some(n) if *n >= 0 || *n == PENDING => false,
            Some(n) => {
                *n = PENDING;
                true
            }
            None => {
                self.nodes.insert(key, PENDING);
                true
            }
        }
    }

    /// Records the answer for `addr`'s page in `pid`: a node, or a negative errno.
    pub fn answer(&mut self, pid: u32, addr: u64, node_or_errno: i32) {
        let key = (pid, self.page(addr));
        self.nodes.insert(key, node_or_errno);
    }

    /// Pages answered with a node.
    pub fn placed(&self) -> usize {
        self.nodes.values().filter(|&&n| n >= 0).count()
    }

    /// The file beside a capture that holds its page table: `CAPTURE.pages.json`.
    pub fn sidecar(capture: &Path) -> PathBuf {
        let mut name = capture.as_os_str().to_owned();
        name.push(".pages.json");
        PathBuf::from(name)
    }

    /// Writes the table beside `capture`, whole or not at all.
    pub fn write_beside(&self, capture: &Path) -> Result<PathBuf, Error> {
        let path = PageNodes::sidecar(capture);
        let mut pages: Vec<((u32, u64), i32)> = self.nodes.iter().map(|(k, n)| (*k, *n)).collect();
        pages.sort_unstable();
        let doc = serde_json::json!({
            "schema": SCHEMA,
            "source": "move_pages",
            "pid": self.pid,
            "page_size": self.page_size,
            "pages": pages
                .iter()
                .map(|((pid, p), n)| serde_json::json!([pid, format!("{p:#x}"), n]))
                .collect::<Vec<_>>(),
        });
        crate::atomic_write::write_atomically(&path, doc.to_string().as_bytes())?;
        Ok(path)
    }

    /// The table beside `capture`, if there is one; an error naming the file where it is
    /// there but unreadable.
    pub fn read_beside(capture: &Path) -> Result<Option<PageNodes>, Error> {
        let path = PageNodes::sidecar(capture);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, e)),
        };
        let bad = |what: &str| Error::Document {
            path: path.clone(),
            schema: SCHEMA,
            what: what.to_string(),
        };
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(&e.to_string()))?;
        let page_size = v["page_size"]
            .as_u64()
            .filter(|s| s.is_power_of_two())
            .ok_or_else(|| bad("page_size"))?;
        let mut nodes = HashMap::new();
        for entry in v["pages"].as_array().ok_or_else(|| bad("pages"))? {
            let pid = entry[0].as_u64().ok_or_else(|| bad("a pid"))? as u32;
            let page = entry[1]
                .as_str()
                .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
                .ok_or_else(|| bad("a page address"))?;
            let node = entry[2].as_i64().ok_or_else(|| bad("a node"))? as i32;
            nodes.insert((pid, page), node);
        }
        Ok(Some(PageNodes {
            pid: v["pid"].as_u64().unwrap_or(0) as u32,
            page_size,
            nodes,
        }))
    }

    /// The node of `addr`'s page in `pid`, or why it is not known.
    pub fn node(&self, pid: u32, addr: u64) -> Result<u32, &'static str> {
        match self.nodes.get(&(pid, self.page(addr))) {
            Some(&n) if n >= 0 => Ok(n as u32),
            Some(&n) if n == -errno::ENOENT => {
                Err("page not present when asked (freed, or not yet touched)")
            }
            Some(&n) if n == -errno::EFAULT => {
                Err("page unmapped when asked (freed before the drain asked)")
            }
            Some(&n) if n == -errno::ESRCH => Err("process gone when asked"),
            Some(&n) if n == -errno::EPERM || n == -errno::EACCES => {
                Err("move_pages refused: not permitted for that process")
            }
            Some(&n) if n == -errno::ENOSYS => {
                Err("move_pages is not available (a kernel without NUMA)")
            }
            Some(&PENDING) | None => Err("page never asked about"),
            Some(_) => Err("move_pages gave an error for the page"),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use super::*;

    #[test]
    fn the_table_round_trips_beside_a_capture_with_its_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let capture = dir.path().join("c.perf.data");
        let mut t = PageNodes::new(7, 4096);
        assert!(t.want(7, 0x1234));
        assert!(!t.want(7, 0x1fff), "same page, already pending");
        t.answer(7, 0x1234, 0);
        t.answer(7, 0x5000, -errno::EFAULT);
        assert_eq!(
            t.write_beside(&capture).unwrap(),
            PageNodes::sidecar(&capture)
        );
        let back = PageNodes::read_beside(&capture).unwrap().unwrap();
        assert_eq!(back, t);
        assert_eq!(back.node(7, 0x1800), Ok(0));
        assert!(back.node(7, 0x5000).unwrap_err().contains("unmapped"));
        assert_eq!(back.node(8, 0x1800), Err("page never asked about"));
        // A page found absent may be asked about again.
        let mut t = back;
        assert!(t.want(7, 0x5000));
    }

    #[test]
    fn a_malformed_table_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let capture = dir.path().join("c.perf.data");
        assert!(PageNodes::read_beside(&capture).unwrap().is_none());
        std::fs::write(PageNodes::sidecar(&capture), r#"{"page_size": 3}"#).unwrap();
        let e = PageNodes::read_beside(&capture).unwrap_err().to_string();
        assert!(
            e.contains("c.perf.data.pages.json") && e.contains("page_size"),
            "{e}"
        );
    }
}
