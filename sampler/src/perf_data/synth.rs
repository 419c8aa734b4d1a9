//! Records for what existed before sampling started, synthesized from /proc as perf
//! record does: COMM per thread, FORK per non-leader thread, MMAP2 per executable mapping.

use super::attr::{sample_type as st, Attr};
use super::record::kind;

/// `PERF_RECORD_MISC_USER`.
const MISC_USER: u16 = 2;

/// The sample_id trailer of a synthesized record for `attr`: this task, time 0.
pub fn trailer(attr: &Attr, pid: u32, tid: u32, id: u64) -> Vec<u8> {
    let mut out = Vec::new();
    if !attr.sample_id_all() {
        return out;
    }
    let t = attr.sample_type;
    if t & st::TID != 0 {
        out.extend_from_slice(&pid.to_le_bytes());
        out.extend_from_slice(&tid.to_le_bytes());
    }
    if t & st::TIME != 0 {
        out.extend_from_slice(&0u64.to_le_bytes());
    }
    if t & st::ID != 0 {
        out.extend_from_slice(&id.to_le_bytes());
    }
    if t & st::STREAM_ID != 0 {
        out.extend_from_slice(&id.to_le_bytes());
    }
    if t & st::CPU != 0 {
        out.extend_from_slice(&[0; 8]);
    }
    if t & st::IDENTIFIER != 0 {
        out.extend_from_slice(&id.to_le_bytes());
    }
    out
}

fn record(type_: u32, misc: u16, body: &[u8], trailer: &[u8]) -> Vec<u8> {
    let size = 8 + body.len() + trailer.len();
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&type_.to_le_bytes());
    out.extend_from_slice(&misc.to_le_bytes());
    out.extend_from_slice(&(size as u16).to_le_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(trailer);
    out
}

fn padded_name(name: &str) -> Vec<u8> {
    let mut b = name.as_bytes().to_vec();
    b.push(0);
    b.resize(b.len().next_multiple_of(8), 0);
    b
}

/// A COMM record for `pid`/`tid`.
pub fn comm(attr: &Attr, id: u64, pid: u32, tid: u32, comm: &str) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&pid.to_le_bytes());
    body.extend_from_slice(&tid.to_le_bytes());
    body.extend_from_slice(&padded_name(comm));
    record(kind::COMM, 0, &body, &trailer(attr, pid, tid, id))
}

/// A FORK record: thread `tid` of process `pid`.
pub fn fork(attr: &Attr, id: u64, pid: u32, tid: u32) -> Vec<u8> {
    let mut body = Vec::new();
    for v in [pid, pid, tid, pid] {
        body.extend_from_slice(&v.to_le_bytes());
    }
    body.extend_from_slice(&0u64.to_le_bytes());
    record(kind::FORK, 0, &body, &trailer(attr, pid, tid, id))
}

/// One line of /proc/PID/maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapsLine {
    /// Start address.
    pub start: u64,
    /// End address.
    pub end: u64,
    /// `rwxp` flags.
    pub perms: String,
    /// File offset.
    pub offset: u64,
    /// Device major.
    pub major: u32,
    /// Device minor.
    pub minor: u32,
    /// Inode.
    pub inode: u64,
    /// Path, `[vdso]`, or empty for anonymous memory.
    pub path: String,
}

/// Parses /proc/PID/maps text; lines that do not parse are skipped.
pub fn parse_maps(text: &str) -> Vec<MapsLine> {
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (start, end) = f.next()?.split_once('-')?;
            let perms = f.next()?.to_string();
            let offset = u64::from_str_radix(f.next()?, 16).ok()?;
            let (major, minor) = f.next()?.split_once(':')?;
            let inode = f.next()?.parse().ok()?;
            let path = f.collect::<Vec<_>>().join(" ");
            Some(MapsLine {
                start: u64::from_str_radix(start, 16).ok()?,
                end: u64::from_str_radix(end, 16).ok()?,
                perms,
                offset,
                major: u32::from_str_radix(major, 16).ok()?,
                minor: u32::from_str_radix(minor, 16).ok()?,
                inode,
                path,
            })
        })
        .collect()
}

/// An MMAP2 record for one executable mapping of `pid`.
pub fn mmap2(attr: &Attr, id: u64, pid: u32, m: &MapsLine) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&pid.to_le_bytes());
    body.extend_from_slice(&pid.to_le_bytes());
    body.extend_from_slice(&m.start.to_le_bytes());
    body.extend_from_slice(&(m.end - m.start).to_le_bytes());
    body.extend_from_slice(&m.offset.to_le_bytes());
    body.extend_from_slice(&m.major.to_le_bytes());
    body.extend_from_slice(&m.minor.to_le_bytes());
    body.extend_from_slice(&m.inode.to_le_bytes());
    body.extend_from_slice(&0u64.to_le_bytes());
    let b = m.perms.as_bytes();
    let prot = u32::from(b.first() == Some(&b'r'))
        | u32::from(b.get(1) == Some(&b'w')) << 1
        | u32::from(b.get(2) == Some(&b'x')) << 2;
    let flags: u32 = if b.get(3) == Some(&b's') { 1 } else { 2 };
    body.extend_from_slice(&prot.to_le_bytes());
    body.extend_from_slice(&flags.to_le_bytes());
    let name = if m.path.is_empty() {
        "//anon"
    } else {
        m.path.as_str()
    };
    body.extend_from_slice(&padded_name(name));
    record(kind::MMAP2, MISC_USER, &body, &trailer(attr, pid, pid, id))
}

/// The kernel's MMAP record as perf record writes it (`[kernel.kallsyms]_text` from the
/// `_text` symbol), so readers resolve kernel samples; `None` where /proc/kallsyms hides
/// the address.
pub fn kernel_mmap(attr: &Attr, id: u64) -> Option<Vec<u8>> {
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").ok()?;
    let start = kallsyms.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let addr = f.next()?;
        let _kind = f.next()?;
        (f.next()? == "_text").then(|| u64::from_str_radix(addr, 16).ok())?
    })?;
    if start == 0 {
        return None;
    }
    let pid = u32::MAX; // -1: the kernel
    let mut body = Vec::new();
    body.extend_from_slice(&pid.to_le_bytes());
    body.extend_from_slice(&0u32.to_le_bytes());
    body.extend_from_slice(&start.to_le_bytes());
    body.extend_from_slice(&(u64::MAX - start).to_le_bytes());
    body.extend_from_slice(&start.to_le_bytes());
    body.extend_from_slice(&padded_name("[kernel.kallsyms]_text"));
    // PERF_RECORD_MISC_KERNEL.
    Some(record(kind::MMAP, 1, &body, &trailer(attr, pid, 0, id)))
}

/// The threads of `pid` (none for a process that is gone), in ascending order.
pub fn tasks_of(pid: u32) -> Vec<u32> {
    let mut tids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|it| {
            it.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    tids.sort_unstable();
    tids
}

/// The kernel's MMAP, then COMM and FORK for every thread of `pid` and MMAP2 for its
/// executable mappings (all of them with `all_mappings`: DWARF unwinding reads
/// `.eh_frame` from read-only segments and the stack from `[stack]`), read from /proc now. A process that vanished gives none of its own.
pub fn synthesize_process(attr: &Attr, id: u64, pid: u32, all_mappings: bool) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = kernel_mmap(attr, id).into_iter().collect();
    for tid in tasks_of(pid) {
        let name =
            std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).unwrap_or_default();
        if tid != pid {
            out.push(fork(attr, id, pid, tid));
        }
        out.push(comm(attr, id, pid, tid, name.trim_end()));
    }
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    for m in parse_maps(&maps) {
        if all_mappings || m.perms.as_bytes().get(2) == Some(&b'x') {
            out.push(mmap2(attr, id, pid, &m));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf_data::record::{parse_record, Record, RecordHeader};
    use crate::perf_data::sample::SampleFormat;

    #[test]
    fn maps_lines_parse() {
        let text = "55d4a000-55d4b000 r-xp 00002000 fd:01 1234 /usr/bin/true\n7ffd1000-7ffd3000 r-xp 00000000 00:00 0 [vdso]\n7f00-7f10 rw-p 00000000 00:00 0\n";
        let maps = parse_maps(text);
        assert_eq!(maps.len(), 3);
        assert_eq!(maps[0].start, 0x55d4a000);
        assert_eq!(
            (maps[0].major, maps[0].minor, maps[0].inode),
            (0xfd, 1, 1234)
        );
        assert_eq!(maps[0].offset, 0x2000);
        assert_eq!(maps[1].path, "[vdso]");
        assert_eq!(maps[2].path, "");
    }

    #[test]
    fn synthesized_records_decode_with_their_trailer() {
        let attr = Attr {
            sample_type: st::IP | st::TID | st::TIME | st::CPU | st::IDENTIFIER,
            flags: crate::perf_data::attr::flag::SAMPLE_ID_ALL,
            ..Attr::default()
        };
        let f = SampleFormat::of(&attr);
        let records = synthesize_process(&attr, 42, std::process::id(), false);
        assert!(records.len() >= 2);
        let mut saw_mmap = false;
        for r in &records {
            let h = RecordHeader::parse(r, 0).unwrap();
            let (rec, sid) = parse_record(h, &r[8..], 0, Some((&attr, &f))).unwrap();
            assert_eq!(sid.unwrap().id, Some(42));
            if let Record::Mmap(m) = rec {
                match m.prot {
                    // MMAP2 of an executable mapping of this process.
                    Some(prot) => {
                        saw_mmap = true;
                        assert!(prot & 4 != 0);
                    }
                    // The kernel's map, as perf record writes it.
                    None => assert_eq!(m.filename, b"[kernel.kallsyms]_text"),
                }
            }
        }
        assert!(saw_mmap);
    }
}
