//! Writing captures as perf.data (file mode): header, attrs with ids, the records, and
//! the header features readers need. Sample stacks are compacted to their valid size.

use std::path::Path;

use crate::attr::{sample_type as st, Attr};
use crate::features::id as feat;
use crate::record::{kind, RecordHeader};
use crate::sample::{Sample, SampleFormat};
use crate::topology::{format_list, Topology};

/// Bytes of the attr perf 6.1 accepts; the 136-byte layout adds only `config3`.
const ATTR_SIZE_VER7: u32 = 128;

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// perf's string: u32 length (padded to 64 bytes with NULs), the bytes, the padding.
fn put_string(out: &mut Vec<u8>, s: &str) {
    let len = (s.len() + 1).next_multiple_of(64);
    put_u32(out, len as u32);
    out.extend_from_slice(s.as_bytes());
    out.resize(out.len() + len - s.len(), 0);
}

fn put_strings(out: &mut Vec<u8>, items: &[String]) {
    put_u32(out, items.len() as u32);
    for s in items {
        put_string(out, s);
    }
}

impl Attr {
    /// The attr as stored: 128 bytes (what perf 6.1 reads) unless `config3` is set.
    pub fn to_bytes(&self) -> Vec<u8> {
        let size = if self.config3 != 0 {
            136
        } else {
            ATTR_SIZE_VER7
        };
        let mut b = Vec::with_capacity(size as usize);
        put_u32(&mut b, self.type_);
        put_u32(&mut b, size);
        put_u64(&mut b, self.config);
        put_u64(&mut b, self.sample_period_or_freq);
        put_u64(&mut b, self.sample_type);
        put_u64(&mut b, self.read_format);
        put_u64(&mut b, self.flags);
        put_u32(&mut b, self.wakeup);
        put_u32(&mut b, self.bp_type);
        put_u64(&mut b, self.config1);
        put_u64(&mut b, self.config2);
        put_u64(&mut b, self.branch_sample_type);
        put_u64(&mut b, self.sample_regs_user);
        put_u32(&mut b, self.sample_stack_user);
        put_u32(&mut b, self.clockid as u32);
        put_u64(&mut b, self.sample_regs_intr);
        put_u32(&mut b, self.aux_watermark);
        b.extend_from_slice(&self.sample_max_stack.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        put_u32(&mut b, self.aux_sample_size);
        put_u32(&mut b, 0);
        put_u64(&mut b, self.sig_data);
        if size == 136 {
            put_u64(&mut b, self.config3);
        }
        b
    }
}

/// What the capture records about the machine it was taken on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostInfo {
    /// Host name.
    pub hostname: String,
    /// Kernel release.
    pub osrelease: String,
    /// Machine architecture (`x86_64`).
    pub arch: String,
    /// `(available, online)` CPUs.
    pub nrcpus: (u32, u32),
    /// CPU model.
    pub cpudesc: String,
    /// CPU_TOPOLOGY: package siblings, thread siblings, per-CPU (core, socket).
    pub core_siblings: Vec<String>,
    /// Thread siblings lists.
    pub thread_siblings: Vec<String>,
    /// `(core_id, socket_id)` per CPU.
    pub cpu_places: Vec<(u32, u32)>,
    /// NUMA_TOPOLOGY: `(node, mem_total_kb, mem_free_kb, cpulist)`.
    pub numa: Vec<(u32, u64, u64, String)>,
    /// MEM_TOPOLOGY: block size and `(node, blocks)`.
    pub memory: (u64, Vec<(u64, Vec<u64>)>),
}

impl HostInfo {
    /// The NUMA_TOPOLOGY and MEM_TOPOLOGY of `topology`.
    pub fn with_topology(mut self, topology: &Topology) -> HostInfo {
        self.numa = topology
            .nodes
            .iter()
            .map(|n| {
                (
                    n.id,
                    n.mem_total_kb.unwrap_or(0),
                    n.mem_free_kb.unwrap_or(0),
                    format_list(&n.cpus),
                )
            })
            .collect();
        self.memory = (topology.block_size, topology.node_blocks());
        self
    }
}

/// An event of a capture after its first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenEvent {
    /// Its attr: the same sample fields as the first event's.
    pub attr: Attr,
    /// The ids of every opened instance of it.
    pub ids: Vec<u64>,
    /// Its name (EVENT_DESC).
    pub name: String,
}

/// A capture being assembled: its events (attrs and the ids of all their ring buffers),
/// the records, and what the header says.
#[derive(Debug, Clone, Default)]
pub struct CaptureWriter {
    /// The first event's attr (every event samples the same fields, so this is the
    /// layout of every record).
    pub attr: Attr,
    /// The ids of every opened instance of it.
    pub ids: Vec<u64>,
    /// Its name (EVENT_DESC).
    pub event_name: String,
    /// The other events, in order. A counting-only group leader is written as an event
    /// of its own, with no GROUP_DESC: perf report's group view shows a group by its
    /// leader's samples, and would hide those of its sampling member.
    pub more_events: Vec<WrittenEvent>,
    /// The records, as the data section.
    pub data: Vec<u8>,
    /// Build ids: `(pid, build id, file)` for each module with samples.
    pub build_ids: Vec<(i32, Vec<u8>, String)>,
    /// The command line recorded.
    pub cmdline: Vec<String>,
    /// The machine.
    pub host: HostInfo,
    /// Bytes the stack compaction left out.
    pub stack_bytes_saved: u64,
    /// Whether to compact stacks.
    pub compact_stacks: bool,
    format: Option<SampleFormat>,
}

impl CaptureWriter {
    /// A writer for `attr`, whose instances have `ids`.
    pub fn new(attr: Attr, ids: Vec<u64>, event_name: String) -> CaptureWriter {
        CaptureWriter {
            format: Some(SampleFormat::of(&attr)),
            attr,
            ids,
            event_name,
            compact_stacks: true,
            ..CaptureWriter::default()
        }
    }

    /// Appends one record (header included). A sample's user stack is cut to its valid
    /// (dynamic) size, rounded up to 8 bytes, and its size field says so.
    pub fn push(&mut self, record: &[u8]) {
        match RecordHeader::parse(record, 0) {
            Ok(h) => self.push_body(h.type_, h.misc, &record[8..h.size as usize]),
            Err(_) => self.data.extend_from_slice(record),
        }
    }

    /// [`CaptureWriter::push`] for a record given as its header fields and body, so a
    /// ring-buffer record is copied once, straight into the capture.
    pub fn push_body(&mut self, type_: u32, misc: u16, body: &[u8]) {
        let header = |out: &mut Vec<u8>, size: usize| {
            out.extend_from_slice(&type_.to_le_bytes());
            out.extend_from_slice(&misc.to_le_bytes());
            out.extend_from_slice(&(size as u16).to_le_bytes());
        };
        let stack = self
            .format
            .filter(|f| {
                self.compact_stacks && type_ == kind::SAMPLE && f.sample_type & st::STACK_USER != 0
            })
            .and_then(|f| Sample::parse(body, 8, &f).ok())
            .and_then(|s| s.stack_user)
            .filter(|s| !s.data.is_empty());
        let Some(stack) = stack else {
            header(&mut self.data, 8 + body.len());
            self.data.extend_from_slice(body);
            return;
        };
        let keep = (stack.dyn_size as usize)
            .next_multiple_of(8)
            .min(stack.data.len());
        let data_at = stack.data.as_ptr() as usize - body.as_ptr() as usize;
        // The dyn_size word follows the data; a stack of size 0 has no dyn_size word.
        let after = data_at + stack.data.len() + if keep == 0 { 8 } else { 0 };
        let saved = after - data_at - keep;
        header(&mut self.data, 8 + body.len() - saved);
        self.data.extend_from_slice(&body[..data_at - 8]);
        self.data.extend_from_slice(&(keep as u64).to_le_bytes());
        self.data.extend_from_slice(&stack.data[..keep]);
        self.data.extend_from_slice(&body[after..]);
        self.stack_bytes_saved += saved as u64;
    }

    fn features(&self) -> Vec<(u32, Vec<u8>)> {
        let h = &self.host;
        let mut out = Vec::new();
        let mut build = Vec::new();
        for (pid, id, file) in &self.build_ids {
            let mut e = Vec::new();
            put_u32(&mut e, *pid as u32);
            let mut raw = [0u8; 24];
            let n = id.len().min(20);
            raw[..n].copy_from_slice(&id[..n]);
            raw[20] = n as u8;
            e.extend_from_slice(&raw);
            let mut name = file.as_bytes().to_vec();
            name.push(0);
            name.resize(name.len().next_multiple_of(8), 0);
            e.extend_from_slice(&name);
            put_u32(&mut build, kind::HEADER_BUILD_ID);
            // perf uses an entry only with its cpumode: 1 kernel, 2 user.
            let mode: u16 = if file.starts_with("[kernel.kallsyms]") {
                1
            } else {
                2
            };
            build.extend_from_slice(&(crate::record::misc::BUILD_ID_SIZE | mode).to_le_bytes());
            build.extend_from_slice(&((8 + e.len()) as u16).to_le_bytes());
            build.extend_from_slice(&e);
        }
        out.push((feat::BUILD_ID, build));
        for (id, s) in [
            (feat::HOSTNAME, &h.hostname),
            (feat::OSRELEASE, &h.osrelease),
        ] {
            let mut b = Vec::new();
            put_string(&mut b, s);
            out.push((id, b));
        }
        let mut b = Vec::new();
        put_string(&mut b, concat!("sparkles ", env!("CARGO_PKG_VERSION")));
        out.push((feat::VERSION, b));
        let mut b = Vec::new();
        put_string(&mut b, &h.arch);
        out.push((feat::ARCH, b));
        let mut b = Vec::new();
        put_u32(&mut b, h.nrcpus.0);
        put_u32(&mut b, h.nrcpus.1);
        out.push((feat::NRCPUS, b));
        let mut b = Vec::new();
        put_string(&mut b, &h.cpudesc);
        out.push((feat::CPUDESC, b));
        let mut b = Vec::new();
        put_strings(&mut b, &self.cmdline);
        out.push((feat::CMDLINE, b));
        let attrs = self.attr_bytes();
        let mut b = Vec::new();
        put_u32(&mut b, attrs.len() as u32);
        put_u32(&mut b, attrs[0].len() as u32);
        for ((ids, name), attr) in self.events().zip(&attrs) {
            b.extend_from_slice(attr);
            put_u32(&mut b, ids.len() as u32);
            put_string(&mut b, name);
            for id in ids {
                put_u64(&mut b, *id);
            }
        }
        out.push((feat::EVENT_DESC, b));
        let mut b = Vec::new();
        put_strings(&mut b, &h.core_siblings);
        put_strings(&mut b, &h.thread_siblings);
        if h.cpu_places.len() == h.nrcpus.0 as usize {
            for (core, socket) in &h.cpu_places {
                put_u32(&mut b, *core);
                put_u32(&mut b, *socket);
            }
        }
        out.push((feat::CPU_TOPOLOGY, b));
        let mut b = Vec::new();
        put_u32(&mut b, h.numa.len() as u32);
        for (node, total, free, cpus) in &h.numa {
            put_u32(&mut b, *node);
            put_u64(&mut b, *total);
            put_u64(&mut b, *free);
            put_string(&mut b, cpus);
        }
        out.push((feat::NUMA_TOPOLOGY, b));
        let (block_size, nodes) = &h.memory;
        if *block_size > 0 {
            let mut b = Vec::new();
            put_u64(&mut b, 1);
            put_u64(&mut b, *block_size);
            put_u64(&mut b, nodes.len() as u64);
            for (node, blocks) in nodes {
                put_u64(&mut b, *node);
                put_u64(&mut b, blocks.len() as u64 * block_size);
                let bits = blocks.iter().max().map_or(0, |m| m + 1);
                put_u64(&mut b, bits);
                let mut words = vec![0u64; bits.div_ceil(64) as usize];
                for block in blocks {
                    words[(block / 64) as usize] |= 1 << (block % 64);
                }
                for w in words {
                    put_u64(&mut b, w);
                }
            }
            out.push((feat::MEM_TOPOLOGY, b));
        }
        out.sort_by_key(|(id, _)| *id);
        out
    }

    /// Every event's ids and name, in order.
    fn events(&self) -> impl Iterator<Item = (&[u64], &str)> {
        std::iter::once((self.ids.as_slice(), self.event_name.as_str())).chain(
            self.more_events
                .iter()
                .map(|e| (e.ids.as_slice(), e.name.as_str())),
        )
    }

    /// Every event's attr as stored, all of one size: perf reads each attr by its own
    /// size field and steps by the header's, so a shorter one is padded with zeros (the
    /// fields it lacks) and says the larger size.
    fn attr_bytes(&self) -> Vec<Vec<u8>> {
        let mut attrs: Vec<Vec<u8>> = std::iter::once(&self.attr)
            .chain(self.more_events.iter().map(|e| &e.attr))
            .map(Attr::to_bytes)
            .collect();
        let size = attrs.iter().map(Vec::len).max().unwrap_or(0);
        for a in &mut attrs {
            a.resize(size, 0);
            a[4..8].copy_from_slice(&(size as u32).to_le_bytes());
        }
        attrs
    }

    /// The whole file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let attrs = self.attr_bytes();
        let attr_size = attrs[0].len() + 16;
        let ids_offset = 104u64;
        let ids_total: usize = self.events().map(|(ids, _)| ids.len()).sum();
        let attrs_offset = ids_offset + (ids_total * 8) as u64;
        let data_offset = attrs_offset + (attr_size * attrs.len()) as u64;
        let features = self.features();
        let mut bitmap = [0u64; 4];
        for (id, _) in &features {
            bitmap[(*id / 64) as usize] |= 1 << (id % 64);
        }
        let mut out = Vec::with_capacity(data_offset as usize + self.data.len() + 4096);
        out.extend_from_slice(b"PERFILE2");
        put_u64(&mut out, 104);
        put_u64(&mut out, attr_size as u64);
        put_u64(&mut out, attrs_offset);
        put_u64(&mut out, (attr_size * attrs.len()) as u64);
        put_u64(&mut out, data_offset);
        put_u64(&mut out, self.data.len() as u64);
        put_u64(&mut out, 0);
        put_u64(&mut out, 0);
        for w in bitmap {
            put_u64(&mut out, w);
        }
        for (ids, _) in self.events() {
            for id in ids {
                put_u64(&mut out, *id);
            }
        }
        let mut ids_at = ids_offset;
        for ((ids, _), attr) in self.events().zip(&attrs) {
            out.extend_from_slice(attr);
            put_u64(&mut out, ids_at);
            put_u64(&mut out, (ids.len() * 8) as u64);
            ids_at += (ids.len() * 8) as u64;
        }
        out.extend_from_slice(&self.data);
        // The feature section table, then each feature's data.
        let table_end = out.len() + features.len() * 16;
        let mut at = table_end as u64;
        for (_, data) in &features {
            put_u64(&mut out, at);
            put_u64(&mut out, data.len() as u64);
            at += data.len() as u64;
        }
        for (_, data) in &features {
            out.extend_from_slice(data);
        }
        out
    }

    /// Writes the file whole or not at all (creating its folder); its size.
    pub fn write(&self, path: &Path) -> Result<u64, crate::Error> {
        let bytes = self.to_bytes();
        crate::atomic_write::write_private(path, &bytes)?;
        Ok(bytes.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample_with_stack(stack: &[u8], dyn_size: u64) -> (Attr, Vec<u8>) {
        let attr = Attr {
            size: 128,
            sample_type: st::IP | st::STACK_USER | st::WEIGHT,
            ..Attr::default()
        };
        let mut body = Vec::new();
        body.extend_from_slice(&0x401000u64.to_le_bytes());
        body.extend_from_slice(&(stack.len() as u64).to_le_bytes());
        body.extend_from_slice(stack);
        body.extend_from_slice(&dyn_size.to_le_bytes());
        body.extend_from_slice(&77u64.to_le_bytes());
        let mut record = Vec::new();
        record.extend_from_slice(&kind::SAMPLE.to_le_bytes());
        record.extend_from_slice(&2u16.to_le_bytes());
        record.extend_from_slice(&((8 + body.len()) as u16).to_le_bytes());
        record.extend_from_slice(&body);
        (attr, record)
    }

    fn roundtrip(dyn_size: u64) -> (Vec<u8>, u64, u64) {
        let (attr, record) = sample_with_stack(&[0xab; 64], dyn_size);
        let format = SampleFormat::of(&attr);
        let mut w = CaptureWriter::new(attr, vec![1], "x".into());
        w.push(&record);
        let h = RecordHeader::parse(&w.data, 0).unwrap();
        assert_eq!(h.size as usize, w.data.len());
        let s = Sample::parse(&w.data[8..], 8, &format).unwrap();
        assert_eq!(s.ip, Some(0x401000));
        assert_eq!(
            s.weight.unwrap().latency(),
            77,
            "fields after the stack survive"
        );
        let stack = s.stack_user.unwrap();
        (stack.data.to_vec(), stack.dyn_size, w.stack_bytes_saved)
    }

    #[test]
    fn stacks_are_cut_to_their_valid_bytes() {
        let (data, dyn_size, saved) = roundtrip(20);
        assert_eq!((data.len(), dyn_size, saved), (24, 20, 40));
        let (data, _, saved) = roundtrip(64);
        assert_eq!((data.len(), saved), (64, 0));
    }

    #[test]
    fn an_empty_stack_copy_loses_its_dyn_size_word_too() {
        // size 0 is followed by no dyn_size: the record must say so.
        let (data, dyn_size, saved) = roundtrip(0);
        assert_eq!((data.len(), dyn_size, saved), (0, 0, 72));
    }
}
