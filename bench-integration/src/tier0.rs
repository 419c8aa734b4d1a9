//! Tier 0: getrusage(2) and /proc/self/io. Always available, no privilege.
//!
//! Both sources are process-wide, so threads a case body starts are counted too. Reading
//! them costs something of its own (reading /proc/self/io is itself a read syscall of a
//! few hundred bytes), so the tier measures an empty bracket when it opens and subtracts
//! that cost, clamped at zero, from every bracketed region: a body that does no I/O reads
//! about zero.

use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::metric::{
    Availability, MetricClass, MetricDescriptor, MetricFormat, MetricValue, Source,
};

const PROC_IO: &str = "/proc/self/io";

/// The /proc/self/io fields the tier reports, as they are named in the file.
const IO_FIELDS: [&str; 6] = [
    "syscr",
    "syscw",
    "rchar",
    "wchar",
    "read_bytes",
    "write_bytes",
];

/// Metric ids, in the same order as [`Snapshot::fields`].
const IDS: [&str; 10] = [
    "rusage.minor_faults",
    "rusage.major_faults",
    "rusage.vol_ctx_switches",
    "rusage.invol_ctx_switches",
    "io.syscr",
    "io.syscw",
    "io.rchar",
    "io.wchar",
    "io.read_bytes",
    "io.write_bytes",
];

/// Empty brackets measured at open; their per-field median is the tier's own cost.
const CALIBRATION_BRACKETS: usize = 9;

/// The tier's catalog entries, with availability probed on this machine.
pub fn descriptors() -> Vec<MetricDescriptor> {
    let io_text = std::fs::read_to_string(PROC_IO);
    let io_availability = |field: &str| match &io_text {
        Err(e) => Availability::Unavailable(format!(
            "{PROC_IO} unreadable ({e}): kernel without task I/O accounting?"
        )),
        Ok(text) if parse_io_field(text.as_bytes(), field).is_none() => {
            Availability::Unavailable(format!("{PROC_IO} has no '{field}' field"))
        }
        Ok(_) => Availability::Available,
    };
    let entry = |id: &'static str,
                 header: &'static str,
                 description: &'static str,
                 default_visible,
                 availability| MetricDescriptor {
        id: id.into(),
        header: header.into(),
        description: description.into(),
        format: MetricFormat::Count,
        class: MetricClass::Quantitative,
        source: Source::Tier0,
        default_visible,
        availability,
    };
    vec![
        entry(
            IDS[0],
            "minflt",
            "minor page faults per iteration (getrusage ru_minflt)",
            true,
            Availability::Available,
        ),
        entry(
            IDS[1],
            "majflt",
            "major page faults (needing I/O) per iteration (ru_majflt)",
            false,
            Availability::Available,
        ),
        entry(
            IDS[2],
            "vcsw",
            "voluntary context switches per iteration (ru_nvcsw)",
            true,
            Availability::Available,
        ),
        entry(
            IDS[3],
            "ivcsw",
            "involuntary context switches per iteration (ru_nivcsw)",
            false,
            Availability::Available,
        ),
        entry(
            IDS[4],
            "syscr",
            "read-class syscalls per iteration (/proc/self/io syscr)",
            true,
            io_availability("syscr"),
        ),
        entry(
            IDS[5],
            "syscw",
            "write-class syscalls per iteration (/proc/self/io syscw)",
            false,
            io_availability("syscw"),
        ),
        entry(
            IDS[6],
            "rchar",
            "bytes passed to read-class syscalls per iteration (rchar)",
            true,
            io_availability("rchar"),
        ),
        entry(
            IDS[7],
            "wchar",
            "bytes passed to write-class syscalls per iteration (wchar)",
            false,
            io_availability("wchar"),
        ),
        entry(
            IDS[8],
            "read_bytes",
            "bytes fetched from storage per iteration (read_bytes)",
            false,
            io_availability("read_bytes"),
        ),
        entry(
            IDS[9],
            "write_bytes",
            "bytes sent towards storage per iteration (write_bytes)",
            false,
            io_availability("write_bytes"),
        ),
    ]
}

/// The value of `field` in the text of /proc/self/io (`name: value` lines).
fn parse_io_field(text: &[u8], field: &str) -> Option<u64> {
    text.split(|&b| b == b'\n').find_map(|line| {
        let rest = line.strip_prefix(field.as_bytes())?.strip_prefix(b":")?;
        std::str::from_utf8(rest).ok()?.trim().parse().ok()
    })
}

/// One reading of every field; `None` where the field cannot be read.
#[derive(Debug, Clone, Copy, Default)]
struct Snapshot {
    fields: [Option<u64>; 10],
}

/// The tier, open on the thread that runs the counting pass.
#[derive(Debug)]
pub struct Tier0 {
    io: Option<File>,
    buf: Vec<u8>,
    started: Option<Snapshot>,
    /// Sum of bracketed deltas per field; `None` once a field failed to read.
    accumulated: [Option<u64>; 10],
    brackets: u64,
    self_cost: [u64; 10],
}

impl Tier0 {
    /// Opens the tier and measures its own bracketing cost.
    pub fn open() -> Tier0 {
        let mut tier = Tier0 {
            io: File::open(PROC_IO).ok(),
            buf: vec![0; 1024],
            started: None,
            accumulated: [Some(0); 10],
            brackets: 0,
            self_cost: [0; 10],
        };
        let mut deltas: Vec<[u64; 10]> = Vec::with_capacity(CALIBRATION_BRACKETS);
        for _ in 0..CALIBRATION_BRACKETS {
            let a = tier.snapshot();
            let b = tier.snapshot();
            let mut d = [0u64; 10];
            for (i, slot) in d.iter_mut().enumerate() {
                *slot = match (a.fields[i], b.fields[i]) {
                    (Some(x), Some(y)) => y.saturating_sub(x),
                    _ => 0,
                };
            }
            deltas.push(d);
        }
        for i in 0..10 {
            let mut column: Vec<u64> = deltas.iter().map(|d| d[i]).collect();
            column.sort_unstable();
            tier.self_cost[i] = column[column.len() / 2];
        }
        tier
    }

    fn snapshot(&mut self) -> Snapshot {
        let mut snap = Snapshot::default();
        // SAFETY: getrusage writes a plain-old-data struct we own.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a valid, writable rusage.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } == 0 {
            snap.fields[0] = u64::try_from(usage.ru_minflt).ok();
            snap.fields[1] = u64::try_from(usage.ru_majflt).ok();
            snap.fields[2] = u64::try_from(usage.ru_nvcsw).ok();
            snap.fields[3] = u64::try_from(usage.ru_nivcsw).ok();
        }
        // One pread of the open file regenerates its text: no open/close per bracket.
        if let Some(file) = &self.io {
            if let Ok(n) = file.read_at(&mut self.buf, 0) {
                let text = &self.buf[..n];
                for (k, field) in IO_FIELDS.iter().enumerate() {
                    snap.fields[4 + k] = parse_io_field(text, field);
                }
            }
        }
        snap
    }

    /// Starts a bracketed region.
    pub fn resume(&mut self) {
        self.started = Some(self.snapshot());
    }

    /// Ends a bracketed region and adds its deltas.
    pub fn pause(&mut self) {
        let end = self.snapshot();
        let Some(start) = self.started.take() else {
            return;
        };
        for i in 0..10 {
            self.accumulated[i] = match (self.accumulated[i], start.fields[i], end.fields[i]) {
                (Some(acc), Some(a), Some(b)) => Some(acc + b.saturating_sub(a)),
                _ => None,
            };
        }
        self.brackets += 1;
    }

    /// Per-iteration values over everything bracketed so far, the tier's own cost removed.
    pub fn values(&self, iterations: u64) -> Vec<MetricValue> {
        IDS.iter()
            .enumerate()
            .map(|(i, &id)| {
                let value = self.accumulated[i].filter(|_| iterations > 0).map(|acc| {
                    let own = self.self_cost[i].saturating_mul(self.brackets);
                    acc.saturating_sub(own) as f64 / iterations as f64
                });
                (id.into(), value)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_io_text() {
        let text = b"rchar: 3230\nwchar: 0\nsyscr: 9\nsyscw: 0\nread_bytes: 0\nwrite_bytes: 4096\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_io_field(text, "rchar"), Some(3230));
        assert_eq!(parse_io_field(text, "syscr"), Some(9));
        assert_eq!(parse_io_field(text, "write_bytes"), Some(4096));
        // "read_bytes" must not match inside "cancelled_write_bytes" or vice versa.
        assert_eq!(
            parse_io_field(b"cancelled_write_bytes: 5\n", "write_bytes"),
            None
        );
        assert_eq!(parse_io_field(text, "nosuch"), None);
    }

    /// The counters are the whole process's, and other tests of this binary run in
    /// parallel threads (reading fixtures, faulting pages): a bracket they fall into
    /// reads their work. So the claim is that some of a few tries reads zero: a self
    /// cost left in would show in every one.
    #[test]
    fn empty_bracket_reads_zero_after_self_cost() {
        let mut last = Vec::new();
        for _ in 0..20 {
            let mut tier = Tier0::open();
            for _ in 0..5 {
                tier.resume();
                tier.pause();
            }
            last = tier
                .values(5)
                .into_iter()
                .filter(|(_, v)| v.is_some_and(|v| v >= 1.0))
                .collect();
            if last.is_empty() {
                return;
            }
        }
        panic!("an empty bracket read {last:?} in every try");
    }

    #[test]
    fn counts_reads_inside_the_bracket() {
        let path = std::env::temp_dir().join(format!("sparkles-tier0-{}", std::process::id()));
        std::fs::write(&path, vec![7u8; 64 * 1024]).unwrap();
        let mut tier = Tier0::open();
        tier.resume();
        for _ in 0..4 {
            std::hint::black_box(std::fs::read(&path).unwrap());
        }
        tier.pause();
        std::fs::remove_file(&path).unwrap();
        let values: std::collections::HashMap<_, _> = tier.values(4).into_iter().collect();
        if let Some(Some(rchar)) = values.get("io.rchar") {
            assert!(*rchar >= 64.0 * 1024.0, "rchar {rchar}");
        }
        if let Some(Some(syscr)) = values.get("io.syscr") {
            assert!(*syscr >= 1.0, "syscr {syscr}");
        }
    }
}
