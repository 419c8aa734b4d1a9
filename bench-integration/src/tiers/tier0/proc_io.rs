//! /proc/self/io (Linux): read-class and write-class syscalls and their bytes, and the
//! bytes that reached storage.

use std::fs::File;
use std::os::unix::fs::FileExt;

use super::{Counters, Field};

const PROC_IO: &str = "/proc/self/io";

/// The /proc/self/io fields, as they are named in the file, in [`FIELDS`]' order.
const NAMES: [&str; 6] = [
    "syscr",
    "syscw",
    "rchar",
    "wchar",
    "read_bytes",
    "write_bytes",
];

const FIELDS: [Field; 6] = [
    Field {
        id: "io.syscr",
        header: "syscr",
        description: "read-class syscalls per iteration (/proc/self/io syscr)",
        default_visible: true,
    },
    Field {
        id: "io.syscw",
        header: "syscw",
        description: "write-class syscalls per iteration (/proc/self/io syscw)",
        default_visible: false,
    },
    Field {
        id: "io.rchar",
        header: "rchar",
        description: "bytes passed to read-class syscalls per iteration (rchar)",
        default_visible: true,
    },
    Field {
        id: "io.wchar",
        header: "wchar",
        description: "bytes passed to write-class syscalls per iteration (wchar)",
        default_visible: false,
    },
    Field {
        id: "io.read_bytes",
        header: "read_bytes",
        description: "bytes fetched from storage per iteration (read_bytes)",
        default_visible: false,
    },
    Field {
        id: "io.write_bytes",
        header: "write_bytes",
        description: "bytes sent towards storage per iteration (write_bytes)",
        default_visible: false,
    },
];

/// /proc/self/io, kept open: one pread regenerates its text, no open/close per bracket.
#[derive(Debug)]
pub(crate) struct ProcIo {
    file: Result<File, String>,
    buf: Vec<u8>,
}

impl ProcIo {
    pub(crate) fn open() -> ProcIo {
        ProcIo {
            file: File::open(PROC_IO).map_err(|e| e.to_string()),
            buf: vec![0; 1024],
        }
    }
}

impl Counters for ProcIo {
    fn fields(&self) -> &'static [Field] {
        &FIELDS
    }

    fn read(&mut self, out: &mut [Option<u64>]) {
        if let Ok(file) = &self.file {
            if let Ok(n) = file.read_at(&mut self.buf, 0) {
                let text = &self.buf[..n];
                for (slot, name) in out.iter_mut().zip(NAMES) {
                    *slot = parse_field(text, name);
                }
            }
        }
    }

    fn why_not(&self, field: &Field) -> String {
        match &self.file {
            Err(e) => format!("{PROC_IO} unreadable ({e}): kernel without task I/O accounting?"),
            Ok(_) => {
                let name = field.id.trim_start_matches("io.");
                format!("{PROC_IO} has no '{name}' field")
            }
        }
    }
}

/// The value of `field` in the text of /proc/self/io (`name: value` lines).
fn parse_field(text: &[u8], field: &str) -> Option<u64> {
    text.split(|&b| b == b'\n').find_map(|line| {
        let rest = line.strip_prefix(field.as_bytes())?.strip_prefix(b":")?;
        std::str::from_utf8(rest).ok()?.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_io_text() {
        let text = b"rchar: 3230\nwchar: 0\nsyscr: 9\nsyscw: 0\nread_bytes: 0\nwrite_bytes: 4096\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_field(text, "rchar"), Some(3230));
        assert_eq!(parse_field(text, "syscr"), Some(9));
        assert_eq!(parse_field(text, "write_bytes"), Some(4096));
        // "read_bytes" must not match inside "cancelled_write_bytes" or vice versa.
        assert_eq!(
            parse_field(b"cancelled_write_bytes: 5\n", "write_bytes"),
            None
        );
        assert_eq!(parse_field(text, "nosuch"), None);
    }

    #[test]
    fn counts_reads_inside_the_bracket() {
        let path = std::env::temp_dir().join(format!("sparkles-tier0-{}", std::process::id()));
        std::fs::write(&path, vec![7u8; 64 * 1024]).unwrap();
        let mut tier = crate::tiers::tier0::Tier0::open();
        tier.resume();
        for _ in 0..4 {
            std::hint::black_box(std::fs::read(&path).unwrap());
        }
        tier.pause();
        std::fs::remove_file(&path).unwrap();
        let values: std::collections::HashMap<_, _> = tier.values(4).into_iter().collect();
        if let Some(Some(rchar)) = values.get("io.rchar") {
            // The file's bytes per read, less at most a little: the bracket's own cost
            // (its reads of /proc/self/io) is measured once and subtracted, and /proc/self/io
            // is the whole process's, where other tests read files at the same time.
            assert!(*rchar >= 0.99 * 64.0 * 1024.0, "rchar {rchar}");
        }
        if let Some(Some(syscr)) = values.get("io.syscr") {
            assert!(*syscr >= 1.0, "syscr {syscr}");
        }
    }
}
