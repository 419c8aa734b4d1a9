//! Records for what existed before sampling started, built as perf record synthesizes
//! them: COMM per thread, FORK per non-leader thread, MMAP2 per mapping (from a
//! /proc/PID/maps line), the kernel's MMAP. Reading /proc is the sampler's.

use crate::attr::{sample_type as st, Attr};
use crate::record::kind;

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
/// `_text` symbol at `start`), so readers resolve kernel samples.
pub fn kernel_mmap(attr: &Attr, id: u64, start: u64) -> Vec<u8> {
    let pid = u32::MAX; // -1: the kernel
    let mut body = Vec::new();
    body.extend_from_slice(&pid.to_le_bytes());
    body.extend_from_slice(&0u32.to_le_bytes());
    body.extend_from_slice(&start.to_le_bytes());
    body.extend_from_slice(&(u64::MAX - start).to_le_bytes());
    body.extend_from_slice(&start.to_le_bytes());
    body.extend_from_slice(&padded_name("[kernel.kallsyms]_text"));
    // PERF_RECORD_MISC_KERNEL.
    record(kind::MMAP, 1, &body, &trailer(attr, pid, 0, id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{parse_record, Record, RecordHeader};
    use crate::sample::SampleFormat;

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
            flags: crate::attr::flag::SAMPLE_ID_ALL,
            ..Attr::default()
        };
        let f = SampleFormat::of(&attr);
        let maps = parse_maps("55d4a000-55d4b000 r-xp 00002000 fd:01 1234 /usr/bin/true\n");
        let records = [
            kernel_mmap(&attr, 42, 0xffff_ffff_8100_0000),
            comm(&attr, 42, 7, 8, "worker"),
            fork(&attr, 42, 7, 8),
            mmap2(&attr, 42, 7, &maps[0]),
        ];
        let mut kinds = Vec::new();
        for r in &records {
            let h = RecordHeader::parse(r, 0).unwrap();
            let (rec, sid) = parse_record(h, &r[8..], 0, Some(&f)).unwrap();
            assert_eq!(sid.unwrap().id, Some(42));
            match rec {
                Record::Mmap(m) if m.prot.is_some() => {
                    // The MMAP2 of an executable mapping.
                    assert_eq!((m.addr, m.len, m.pgoff), (0x55d4a000, 0x1000, 0x2000));
                    assert_eq!(m.prot, Some(5));
                    assert_eq!(m.filename, b"/usr/bin/true");
                    kinds.push("mmap2");
                }
                // The kernel's map, as perf record writes it.
                Record::Mmap(m) => {
                    assert_eq!(m.filename, b"[kernel.kallsyms]_text");
                    assert_eq!(m.pid, u32::MAX);
                    kinds.push("mmap");
                }
                Record::Comm { comm, tid, .. } => {
                    assert_eq!((comm, tid), (&b"worker"[..], 8));
                    kinds.push("comm");
                }
                Record::Fork(t) => {
                    assert_eq!((t.pid, t.tid), (7, 8));
                    kinds.push("fork");
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(kinds, ["mmap", "comm", "fork", "mmap2"]);
    }
}
