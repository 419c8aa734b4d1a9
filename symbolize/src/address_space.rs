//! The address-space model: per process, which module is mapped where, built from MMAP
//! and MMAP2 records in time order, and how an address becomes a module-relative one.

use std::rc::Rc;

use rustc_hash::FxHashMap as HashMap;
use sparkles_perf_data::record::{Mmap, Record};

/// One mapping of a file (or anonymous memory) into a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// The file, `[vdso]`, `//anon`, `[kernel.kallsyms]_text`, … (shared: every address
    /// placed in the mapping hands it on).
    pub path: Rc<str>,
    /// Build id from an MMAP2 record of the build-id form.
    pub build_id: Option<Rc<[u8]>>,
    /// `PROT_*` bits where the record gave them.
    pub prot: Option<u32>,
}

impl Mapping {
    /// The mapping an MMAP or MMAP2 record describes.
    pub fn of_record(m: &Mmap<'_>) -> Mapping {
        Mapping {
            start: m.addr,
            end: m.addr.saturating_add(m.len),
            pgoff: m.pgoff,
            path: String::from_utf8_lossy(m.filename).into(),
            build_id: m.build_id.map(Rc::from),
            prot: m.prot,
        }
    }

    /// The file offset of `addr`, an address inside the mapping.
    pub fn file_offset(&self, addr: u64) -> u64 {
        addr - self.start + self.pgoff
    }
}

/// Every process's mappings; pid -1 (`u32::MAX`) holds the kernel's.
#[derive(Debug, Default, Clone)]
pub struct AddressSpace {
    processes: HashMap<u32, Vec<Mapping>>,
    /// Bumped whenever a process's mappings change (an unwinder resyncs on it).
    generations: HashMap<u32, u64>,
}

/// The kernel's pseudo-process in MMAP records.
pub const KERNEL_PID: u32 = u32::MAX;

impl AddressSpace {
    /// An empty model.
    pub fn new() -> AddressSpace {
        AddressSpace::default()
    }

    /// Feeds a record, in time order: MMAP/MMAP2, exec COMMs and FORKs shape the model.
    pub fn observe(&mut self, record: &Record<'_>) {
        match record {
            Record::Mmap(m) => self.map(m.pid, Mapping::of_record(m)),
            Record::Comm {
                pid, exec: true, ..
            } => self.exec(*pid),
            Record::Fork(t) => self.fork(t.pid, t.ppid),
            _ => {}
        }
    }

    /// A mapping appeared: it replaces whatever overlapped it (the kernel unmaps first).
    pub fn map(&mut self, pid: u32, m: Mapping) {
        *self.generations.entry(pid).or_default() += 1;
        let maps = self.processes.entry(pid).or_default();
        let mut kept = Vec::with_capacity(maps.len() + 2);
        for old in maps.drain(..) {
            if old.end <= m.start || old.start >= m.end {
                kept.push(old);
                continue;
            }
            // Keep the parts of the old mapping on either side of the new one.
            if old.start < m.start {
                kept.push(Mapping {
                    end: m.start,
                    ..old.clone()
                });
            }
            if old.end > m.end {
                let cut = m.end - old.start;
                kept.push(Mapping {
                    start: m.end,
                    pgoff: old.pgoff + cut,
                    ..old
                });
            }
        }
        let at = kept.partition_point(|x| x.start < m.start);
        kept.insert(at, m);
        *maps = kept;
    }

    /// The process exec'd (a COMM record with the exec flag): its old mappings are gone.
    pub fn exec(&mut self, pid: u32) {
        *self.generations.entry(pid).or_default() += 1;
        self.processes.remove(&pid);
    }

    /// A new process forked from `parent`: it starts with a copy of the parent's mappings.
    pub fn fork(&mut self, pid: u32, parent: u32) {
        if pid == parent || self.processes.contains_key(&pid) {
            return;
        }
        if let Some(maps) = self.processes.get(&parent).cloned() {
            *self.generations.entry(pid).or_default() += 1;
            self.processes.insert(pid, maps);
        }
    }

    /// `pid`'s own mappings, by address (the kernel's are under [`KERNEL_PID`]).
    pub fn mappings(&self, pid: u32) -> &[Mapping] {
        self.processes.get(&pid).map_or(&[], Vec::as_slice)
    }

    /// A number that changes whenever `pid`'s mappings do.
    pub fn generation(&self, pid: u32) -> u64 {
        self.generations.get(&pid).copied().unwrap_or(0)
    }

    /// The mapping holding `addr` in `pid` (kernel addresses in the kernel's).
    pub fn lookup(&self, pid: u32, addr: u64) -> Option<&Mapping> {
        fn find(maps: &[Mapping], addr: u64) -> Option<&Mapping> {
            let i = maps.partition_point(|m| m.start <= addr);
            i.checked_sub(1).map(|i| &maps[i]).filter(|m| addr < m.end)
        }
        self.processes
            .get(&pid)
            .and_then(|m| find(m, addr))
            .or_else(|| self.processes.get(&KERNEL_PID).and_then(|m| find(m, addr)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(start: u64, end: u64, pgoff: u64, path: &str) -> Mapping {
        Mapping {
            start,
            end,
            pgoff,
            path: path.into(),
            build_id: None,
            prot: Some(5),
        }
    }

    #[test]
    fn a_new_mapping_splits_what_it_overlaps() {
        let mut a = AddressSpace::new();
        a.map(1, m(0x1000, 0x5000, 0, "/lib/a.so"));
        a.map(1, m(0x2000, 0x3000, 0, "/lib/b.so"));
        assert_eq!(a.lookup(1, 0x1800).unwrap().path, "/lib/a.so".into());
        assert_eq!(a.lookup(1, 0x2800).unwrap().path, "/lib/b.so".into());
        let tail = a.lookup(1, 0x3800).unwrap();
        assert_eq!(
            (&*tail.path, tail.start, tail.pgoff),
            ("/lib/a.so", 0x3000, 0x2000)
        );
        assert_eq!(tail.file_offset(0x3800), 0x2800);
        assert!(a.lookup(1, 0x5000).is_none());
    }

    #[test]
    fn exec_forgets_and_fork_copies() {
        let mut a = AddressSpace::new();
        a.map(1, m(0x1000, 0x2000, 0, "/bin/old"));
        a.fork(2, 1);
        a.exec(1);
        assert!(a.lookup(1, 0x1800).is_none());
        assert_eq!(a.lookup(2, 0x1800).unwrap().path, "/bin/old".into());
        a.map(
            KERNEL_PID,
            m(0xffff_0000, u64::MAX, 0, "[kernel.kallsyms]_text"),
        );
        assert_eq!(
            &*a.lookup(2, 0xffff_1000).unwrap().path,
            "[kernel.kallsyms]_text"
        );
    }
}
