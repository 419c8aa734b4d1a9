//! What existed before sampling started, read from /proc now and written as the records
//! perf record synthesizes (`sparkles_perf_data::synth` builds them).

use sparkles_perf_data::attr::Attr;
use sparkles_perf_data::synth::{comm, fork, kernel_mmap, mmap2, parse_maps};

/// The address of the kernel's `_text` symbol, where /proc/kallsyms shows it.
fn kernel_text() -> Option<u64> {
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").ok()?;
    kallsyms
        .lines()
        .find_map(|l| {
            let mut f = l.split_whitespace();
            let addr = f.next()?;
            let _kind = f.next()?;
            (f.next()? == "_text").then(|| u64::from_str_radix(addr, 16).ok())?
        })
        .filter(|&start| start != 0)
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

/// The kernel's MMAP (where /proc/kallsyms shows its address), then COMM and FORK for
/// every thread of `pid` and MMAP2 for its executable mappings (all of them with
/// `all_mappings`: DWARF unwinding reads `.eh_frame` from read-only segments and the
/// stack from `[stack]`), read from /proc now. A process that vanished gives none of its
/// own.
pub fn synthesize_process(attr: &Attr, id: u64, pid: u32, all_mappings: bool) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = kernel_text()
        .map(|start| kernel_mmap(attr, id, start))
        .into_iter()
        .collect();
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
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use super::*;
    use sparkles_perf_data::attr::{flag, sample_type as st};
    use sparkles_perf_data::record::{parse_record, Record, RecordHeader};
    use sparkles_perf_data::sample::SampleFormat;

    #[test]
    fn this_process_is_synthesized_with_an_executable_mapping() {
        let attr = Attr {
            sample_type: st::IP | st::TID | st::TIME | st::CPU | st::IDENTIFIER,
            flags: flag::SAMPLE_ID_ALL,
            ..Attr::default()
        };
        let f = SampleFormat::of(&attr);
        let records = synthesize_process(&attr, 42, std::process::id(), false);
        let mut saw_mmap2 = false;
        for r in &records {
            let h = RecordHeader::parse(r, 0).unwrap();
            let (rec, sid) = parse_record(h, &r[8..], 0, Some(&f)).unwrap();
            assert_eq!(sid.unwrap().id, Some(42));
            if let Record::Mmap(m) = rec {
                if let Some(prot) = m.prot {
                    saw_mmap2 = true;
                    assert!(prot & 4 != 0, "only executable mappings");
                }
            }
        }
        assert!(saw_mmap2);
    }
}
