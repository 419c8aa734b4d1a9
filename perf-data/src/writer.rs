//! Writing captures as perf.data (file mode): header, attrs with ids, the records, and
//! the header features readers need. Sample stacks are compacted to their valid size.
//!
//! The records are kept in memory, or streamed to the file as they come
//! ([`CaptureWriter::stream_to`]): then memory holds at most one [`CHUNK`] of records and
//! the compressor's window, whatever the capture's length. Either way they are stored
//! compressed by default, as `perf record -z` stores them: PERF_RECORD_COMPRESSED records
//! of zstd data and the COMPRESSED header feature. With libzstd (the `zstd` feature) the
//! records are consecutive pieces of one zstd stream, flushed at each chunk, as perf
//! writes; without it ruzstd (pure Rust, in every build) makes each chunk one whole zstd
//! frame, and the frames follow one another in the same records (zstd's stream decoders,
//! perf's among them, read frames back to back). perf 6.1 and [`crate::reader`] read both.

use std::io::{Seek, Write};
use std::path::{Path, PathBuf};

use crate::attr::{sample_type as st, Attr};
use crate::features::id as feat;
use crate::record::{kind, RecordHeader};
use crate::sample::{Sample, SampleFormat};
use crate::topology::{format_list, Topology};

/// Bytes of the attr perf 6.1 accepts; the 136-byte layout adds only `config3`.
const ATTR_SIZE_VER7: u32 = 128;

/// Records are compressed (or written to the file) this many bytes at a time.
pub const CHUNK: usize = 1 << 20;

/// A COMPRESSED record's size is a u16: at most this much compressed data each.
const MAX_COMPRESSED_PIECE: usize = u16::MAX as usize - 8;

/// The zstd level `perf record -z` uses, and ours by default.
pub const DEFAULT_ZSTD_LEVEL: i32 = 1;

/// How a capture's records are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// As they are.
    Off,
    /// COMPRESSED records of zstd at this level, as `perf record -z` writes: libzstd's
    /// stream where this build has the `zstd` feature, else [`Compression::ZstdRust`]
    /// (whose one level is about libzstd's 1, whatever this says).
    Zstd {
        /// zstd's level (1 is perf's default: fast, and stacks compress 30x and more).
        level: i32,
    },
    /// COMPRESSED records of zstd frames, one a chunk, made by ruzstd's encoder with a
    /// match finder for records (pure Rust, in every build: `frames.rs`).
    ZstdRust,
}

/// zstd at [`DEFAULT_ZSTD_LEVEL`], in every build: libzstd's where this build has the
/// `zstd` feature (compiled from C, half a minute of a cold build, so a bench on the
/// harness's default features leaves it out: issue 33's build weight), else ruzstd's.
impl Default for Compression {
    fn default() -> Compression {
        Compression::Zstd {
            level: DEFAULT_ZSTD_LEVEL,
        }
    }
}

impl Compression {
    /// What this build writes for it: `ZstdRust` for `Zstd` without libzstd.
    pub fn in_this_build(self) -> Compression {
        match self {
            Compression::Zstd { .. } if !cfg!(feature = "zstd") => Compression::ZstdRust,
            other => other,
        }
    }
}

/// The zstd encoder of a capture.
enum Encoder {
    /// libzstd: one stream for the whole capture, flushed at each chunk.
    #[cfg(feature = "zstd")]
    Stream(zstd::stream::write::Encoder<'static, Vec<u8>>),
    /// ruzstd: a whole frame a chunk, made into this buffer.
    Frames(Vec<u8>),
}

/// Compresses records into COMPRESSED records.
struct Compressor {
    encoder: Encoder,
    level: i32,
    /// Bytes of records in, bytes of COMPRESSED records out, COMPRESSED records.
    raw: u64,
    stored: u64,
    records: u64,
}

impl Compressor {
    fn new(compression: Compression) -> Result<Option<Compressor>, crate::Error> {
        let (encoder, level) = match compression.in_this_build() {
            Compression::Off => return Ok(None),
            #[cfg(feature = "zstd")]
            Compression::Zstd { level } => (
                Encoder::Stream(
                    zstd::stream::write::Encoder::new(Vec::with_capacity(CHUNK / 4), level)
                        .map_err(|e| crate::Error::io(Path::new("(zstd)"), e))?,
                ),
                level,
            ),
            _ => (
                Encoder::Frames(Vec::with_capacity(CHUNK / 4)),
                DEFAULT_ZSTD_LEVEL,
            ),
        };
        Ok(Some(Compressor {
            encoder,
            level,
            raw: 0,
            stored: 0,
            records: 0,
        }))
    }

    /// `records` compressed and flushed (so a reader decodes all of them from what is
    /// written so far), appended to `out` as COMPRESSED records.
    fn compress(&mut self, records: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
        let (compressed, pieces): (&mut Vec<u8>, Vec<usize>) = match &mut self.encoder {
            #[cfg(feature = "zstd")]
            Encoder::Stream(encoder) => {
                encoder.write_all(records)?;
                encoder.flush()?;
                let compressed = encoder.get_mut();
                let pieces = compressed
                    .chunks(MAX_COMPRESSED_PIECE)
                    .map(|p| p.len())
                    .collect();
                (compressed, pieces)
            }
            Encoder::Frames(frame) => {
                // A frame a chunk at most, whatever was pushed at once: one COMPRESSED
                // record decodes to at most a chunk (perf's buffer is the feature's two).
                let mut pieces = Vec::new();
                for part in records.chunks(CHUNK) {
                    let start = frame.len();
                    crate::frames::compress_frame(part, frame, CHUNK);
                    pieces.extend(
                        crate::frames::pieces(&frame[start..], MAX_COMPRESSED_PIECE)
                            .iter()
                            .map(|p| p.len()),
                    );
                }
                (frame, pieces)
            }
        };
        let mut at = 0;
        for len in pieces {
            let piece: &[u8] = &compressed[at..at + len];
            at += len;
            out.extend_from_slice(&kind::COMPRESSED.to_le_bytes());
            out.extend_from_slice(&0u16.to_le_bytes());
            out.extend_from_slice(&((8 + piece.len()) as u16).to_le_bytes());
            out.extend_from_slice(piece);
            self.records += 1;
            self.stored += 8 + piece.len() as u64;
        }
        compressed.clear();
        self.raw += records.len() as u64;
        Ok(())
    }

    /// The COMPRESSED feature: version, type (1: zstd), level, ratio, and the most one
    /// COMPRESSED record (with a record carried over from the one before) decompresses to,
    /// which perf sizes its buffer by.
    fn feature(&self) -> Vec<u8> {
        let mut b = Vec::new();
        put_u32(&mut b, 0);
        put_u32(&mut b, 1);
        put_u32(&mut b, self.level as u32);
        put_u32(
            &mut b,
            (self.raw / self.stored.max(1)).min(u32::MAX as u64) as u32,
        );
        put_u32(&mut b, (2 * CHUNK) as u32);
        b
    }
}

/// Where a streamed capture goes, and how far it is.
struct Stream {
    /// The file being written, renamed over the capture's path when whole.
    file: crate::atomic_write::TempFile,
    /// The capture's path.
    path: PathBuf,
    /// Where the data section starts, and how much of it is written.
    data_offset: u64,
    written: u64,
    /// The first write that failed: the capture is not written, and says why.
    failed: Option<std::io::Error>,
    /// Bytes of records handed to it.
    raw: u64,
    out: Vec<u8>,
}

/// perf.data's file header.
const HEADER_SIZE: usize = 104;

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

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor")
            .field("level", &self.level)
            .field("raw", &self.raw)
            .field("stored", &self.stored)
            .finish()
    }
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("path", &self.path)
            .field("written", &self.written)
            .finish()
    }
}

/// A capture being assembled: its events (attrs and the ids of all their ring buffers),
/// the records, and what the header says.
#[derive(Debug, Default)]
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
    /// How the records are stored (set before [`CaptureWriter::stream_to`]).
    pub compression: Compression,
    /// The TRACING_DATA feature: the formats of the capture's tracepoints
    /// ([`crate::tracing::encode`]), where it has any.
    pub tracing_data: Option<Vec<u8>>,
    format: Option<SampleFormat>,
    /// Set by [`CaptureWriter::stream_to`]: records go to the file a chunk at a time.
    stream: Option<Stream>,
    compressor: Option<Compressor>,
}

impl Clone for CaptureWriter {
    /// The events, header fields and records in memory; not the file a streaming writer
    /// writes to (one file has one writer).
    fn clone(&self) -> CaptureWriter {
        CaptureWriter {
            attr: self.attr.clone(),
            ids: self.ids.clone(),
            event_name: self.event_name.clone(),
            more_events: self.more_events.clone(),
            data: self.data.clone(),
            build_ids: self.build_ids.clone(),
            cmdline: self.cmdline.clone(),
            host: self.host.clone(),
            stack_bytes_saved: self.stack_bytes_saved,
            compact_stacks: self.compact_stacks,
            compression: self.compression,
            tracing_data: self.tracing_data.clone(),
            format: self.format,
            stream: None,
            compressor: None,
        }
    }
}

/// What a written capture holds, and how it was stored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    /// The file's size.
    pub bytes: u64,
    /// Bytes of records before compression.
    pub record_bytes: u64,
    /// COMPRESSED records (0: stored as they are).
    pub compressed_records: u64,
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
            Err(_) => {
                self.data.extend_from_slice(record);
                self.chunk_done();
            }
        }
    }

    /// Whole records, already laid out as the capture stores them (compacted by another
    /// writer's [`CaptureWriter::push_body`]), appended as they are.
    pub fn push_records(&mut self, records: &[u8]) {
        self.data.extend_from_slice(records);
        self.chunk_done();
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
            self.chunk_done();
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
        self.chunk_done();
    }

    /// A streaming writer hands a full chunk of records to its file.
    fn chunk_done(&mut self) {
        if self.stream.is_some() && self.data.len() >= CHUNK {
            self.flush_chunk();
        }
    }

    /// Streams the records to a file that [`CaptureWriter::write`] makes whole and puts in
    /// place, and that is removed if it never does: from here memory holds one [`CHUNK`]
    /// of records (and the compressor's window), however long the capture. The events
    /// must be set (their attrs and ids are written first), and the compression chosen.
    /// The file is made beside `path`, readable by its owner alone.
    pub fn stream_to(&mut self, path: &Path) -> Result<(), crate::Error> {
        let mut file = crate::atomic_write::temp_file_beside(path, 0o600)?;
        let front = self.ids_and_attrs();
        // Errors name the capture, not its temporary file (removed on the way out): the
        // file is written as itself, since tempfile's writes add the temporary name.
        let f = file.as_file_mut();
        f.write_all(&[0; HEADER_SIZE])
            .and_then(|()| f.write_all(&front))
            .map_err(|e| crate::Error::io(path, e))?;
        self.compressor = Compressor::new(self.compression)?;
        self.stream = Some(Stream {
            file,
            path: path.to_path_buf(),
            data_offset: (HEADER_SIZE + front.len()) as u64,
            written: 0,
            raw: 0,
            failed: None,
            out: Vec::new(),
        });
        if !self.data.is_empty() {
            self.flush_chunk();
        }
        Ok(())
    }

    /// Whether the records stream to a file.
    pub fn is_streaming(&self) -> bool {
        self.stream.is_some()
    }

    fn flush_chunk(&mut self) {
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        if stream.failed.is_none() {
            let result = match self.compressor.as_mut() {
                Some(c) => {
                    stream.out.clear();
                    c.compress(&self.data, &mut stream.out)
                        .and_then(|()| stream.file.as_file_mut().write_all(&stream.out))
                        .map(|()| stream.out.len())
                }
                None => stream
                    .file
                    .as_file_mut()
                    .write_all(&self.data)
                    .map(|()| self.data.len()),
            };
            match result {
                Ok(n) => {
                    stream.written += n as u64;
                    stream.raw += self.data.len() as u64;
                }
                Err(e) => stream.failed = Some(e),
            }
        }
        self.data.clear();
    }

    fn features(&self, compressor: Option<&Compressor>) -> Vec<(u32, Vec<u8>)> {
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
        if let Some(t) = &self.tracing_data {
            out.push((feat::TRACING_DATA, t.clone()));
        }
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
        if let Some(c) = compressor {
            out.push((feat::COMPRESSED, c.feature()));
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

    /// The ids of every event, then their attrs (each naming its ids), as they follow
    /// the file header.
    fn ids_and_attrs(&self) -> Vec<u8> {
        let attrs = self.attr_bytes();
        let mut out = Vec::new();
        for (ids, _) in self.events() {
            for id in ids {
                put_u64(&mut out, *id);
            }
        }
        let mut ids_at = HEADER_SIZE as u64;
        for ((ids, _), attr) in self.events().zip(&attrs) {
            out.extend_from_slice(attr);
            put_u64(&mut out, ids_at);
            put_u64(&mut out, (ids.len() * 8) as u64);
            ids_at += (ids.len() * 8) as u64;
        }
        out
    }

    /// The file header, for a data section at `data_offset` of `data_size` bytes and
    /// the features in `bitmap`.
    fn header(&self, data_offset: u64, data_size: u64, bitmap: [u64; 4]) -> Vec<u8> {
        let attrs = self.attr_bytes();
        let attr_size = attrs[0].len() + 16;
        let ids_total: usize = self.events().map(|(ids, _)| ids.len()).sum();
        let attrs_offset = (HEADER_SIZE + ids_total * 8) as u64;
        let mut out = Vec::with_capacity(HEADER_SIZE);
        out.extend_from_slice(b"PERFILE2");
        put_u64(&mut out, HEADER_SIZE as u64);
        put_u64(&mut out, attr_size as u64);
        put_u64(&mut out, attrs_offset);
        put_u64(&mut out, (attr_size * attrs.len()) as u64);
        put_u64(&mut out, data_offset);
        put_u64(&mut out, data_size);
        put_u64(&mut out, 0);
        put_u64(&mut out, 0);
        for w in bitmap {
            put_u64(&mut out, w);
        }
        out
    }

    /// The feature section that follows a data section ending at `at`: the table of
    /// where each feature is, then their bytes; and the header's bitmap of them.
    fn feature_section(&self, compressor: Option<&Compressor>, at: u64) -> ([u64; 4], Vec<u8>) {
        let features = self.features(compressor);
        let mut bitmap = [0u64; 4];
        for (id, _) in &features {
            bitmap[(*id / 64) as usize] |= 1 << (id % 64);
        }
        let mut out = Vec::new();
        let mut data_at = at + (features.len() * 16) as u64;
        for (_, data) in &features {
            put_u64(&mut out, data_at);
            put_u64(&mut out, data.len() as u64);
            data_at += data.len() as u64;
        }
        for (_, data) in &features {
            out.extend_from_slice(data);
        }
        (bitmap, out)
    }

    /// The whole file with `data` as its data section.
    fn assemble(&self, data: &[u8], compressor: Option<&Compressor>) -> Vec<u8> {
        let front = self.ids_and_attrs();
        let data_offset = (HEADER_SIZE + front.len()) as u64;
        let (bitmap, features) = self.feature_section(compressor, data_offset + data.len() as u64);
        let mut out = self.header(data_offset, data.len() as u64, bitmap);
        out.reserve(front.len() + data.len() + features.len());
        out.extend_from_slice(&front);
        out.extend_from_slice(data);
        out.extend_from_slice(&features);
        out
    }

    /// The whole file, its records as they are (whatever [`CaptureWriter::compression`]
    /// says), from the records in memory.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.assemble(&self.data, None)
    }

    /// The whole file as [`CaptureWriter::compression`] says, from the records in memory.
    pub fn encode(&self) -> Result<(Vec<u8>, Written), crate::Error> {
        let Some(mut compressor) = Compressor::new(self.compression)? else {
            let bytes = self.to_bytes();
            let written = Written {
                bytes: bytes.len() as u64,
                record_bytes: self.data.len() as u64,
                compressed_records: 0,
            };
            return Ok((bytes, written));
        };
        let mut stored = Vec::with_capacity(self.data.len() / 8);
        for chunk in self.data.chunks(CHUNK) {
            compressor
                .compress(chunk, &mut stored)
                .map_err(|e| crate::Error::io(Path::new("(zstd)"), e))?;
        }
        let bytes = self.assemble(&stored, Some(&compressor));
        let written = Written {
            bytes: bytes.len() as u64,
            record_bytes: compressor.raw,
            compressed_records: compressor.records,
        };
        Ok((bytes, written))
    }

    /// Writes the file whole or not at all (creating its folder), readable by its owner
    /// alone, as [`CaptureWriter::compression`] says. A streaming writer finishes its file
    /// (the rest of the records, the features, then the header) and puts it at `path`.
    pub fn write(&mut self, path: &Path) -> Result<Written, crate::Error> {
        if self.stream.is_some() {
            return self.finish_stream(path);
        }
        let (bytes, written) = self.encode()?;
        crate::atomic_write::write_private(path, &bytes)?;
        Ok(written)
    }

    fn finish_stream(&mut self, path: &Path) -> Result<Written, crate::Error> {
        self.flush_chunk();
        let Some(mut stream) = self.stream.take() else {
            return Err(crate::Error::Unsupported {
                what: "finishing a capture that is not streamed",
            });
        };
        let compressor = self.compressor.take();
        // A write that failed (a full disk) is the capture's error; dropping the stream
        // removes its temporary file.
        if let Some(e) = stream.failed.take() {
            return Err(crate::Error::io(path, e));
        }
        let data_end = stream.data_offset + stream.written;
        let (bitmap, features) = self.feature_section(compressor.as_ref(), data_end);
        let header = self.header(stream.data_offset, stream.written, bitmap);
        let file = stream.file.as_file_mut();
        file.write_all(&features)
            .and_then(|()| file.seek(std::io::SeekFrom::Start(0)))
            .and_then(|_| file.write_all(&header))
            .and_then(|()| file.sync_all())
            .map_err(|e| crate::Error::io(path, e))?;
        stream
            .file
            .persist(path)
            .map_err(|e| crate::Error::io(path, e))?;
        Ok(Written {
            bytes: data_end + features.len() as u64,
            record_bytes: stream.raw,
            compressed_records: compressor.map_or(0, |c| c.records),
        })
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

    /// A writer of `n` samples with 64-byte stacks, each a little different.
    fn many_samples(n: usize) -> CaptureWriter {
        let (attr, _) = sample_with_stack(&[0; 64], 64);
        let mut w = CaptureWriter::new(attr, vec![1], "x".into());
        for i in 0..n {
            let mut stack = [0xab_u8; 64];
            stack[..8].copy_from_slice(&(i as u64).to_le_bytes());
            w.push(&sample_with_stack(&stack, 64).1);
        }
        w
    }

    fn samples_and_compressed(bytes: Vec<u8>) -> (u64, u64, bool) {
        let data = crate::PerfData::from_bytes(bytes).unwrap();
        let stats = data
            .for_each_record(|_| Ok::<(), crate::Error>(()))
            .unwrap();
        let feature = data.features.present.iter().any(|f| f == "compressed");
        (stats.samples, stats.compressed_records, feature)
    }

    /// Both encoders, in every build: libzstd's stream (ruzstd's frames without the
    /// `zstd` feature) and ruzstd's frames.
    const BOTH: [Compression; 2] = [
        Compression::Zstd {
            level: DEFAULT_ZSTD_LEVEL,
        },
        Compression::ZstdRust,
    ];

    #[test]
    fn compressed_captures_read_back_record_for_record() {
        // 30,000 samples of 104 bytes: three chunks, records cut across COMPRESSED ones.
        for compression in BOTH {
            let mut w = many_samples(30_000);
            w.compression = compression;
            let (plain, stored) = (w.to_bytes(), w.encode().unwrap());
            let (bytes, written) = stored;
            assert_eq!(written.record_bytes, w.data.len() as u64);
            assert!(
                written.compressed_records >= 3,
                "{compression:?} {written:?}"
            );
            assert!(
                bytes.len() * 5 < plain.len(),
                "{compression:?}: {} of {}",
                bytes.len(),
                plain.len()
            );
            assert_eq!(
                samples_and_compressed(bytes),
                (30_000, written.compressed_records, true),
                "{compression:?}"
            );
            assert_eq!(samples_and_compressed(plain), (30_000, 0, false));
        }
    }

    #[test]
    fn every_build_compresses_and_ruzstd_writes_a_whole_frame_a_chunk() {
        assert_eq!(
            Compression::default(),
            Compression::Zstd {
                level: DEFAULT_ZSTD_LEVEL
            }
        );
        assert_eq!(
            Compression::default().in_this_build(),
            if cfg!(feature = "zstd") {
                Compression::default()
            } else {
                Compression::ZstdRust
            }
        );
        // 30,000 samples given at once (as `push_records` gives a batch): a frame a
        // chunk all the same.
        let w = many_samples(30_000);
        let mut compressor = Compressor::new(Compression::ZstdRust).unwrap().unwrap();
        let mut stored = Vec::new();
        compressor.compress(&w.data, &mut stored).unwrap();
        // The COMPRESSED records' payloads, end to end: zstd frames back to back, one a
        // chunk of records, that decode (by ruzstd's whole-input decoder, apart from the
        // reader) to the records. Each record within perf's reach: at most 64 KiB, and
        // giving at most a chunk.
        let mut payload = Vec::new();
        let mut at = 0;
        while at < stored.len() {
            let h = RecordHeader::parse(&stored[at..], at as u64).unwrap();
            assert_eq!(h.type_, kind::COMPRESSED);
            payload.extend_from_slice(&stored[at + 8..at + h.size as usize]);
            at += h.size as usize;
        }
        let magic = [0x28, 0xb5, 0x2f, 0xfd];
        let frames = payload.windows(4).filter(|w| *w == magic).count();
        assert!(frames >= w.data.len().div_ceil(CHUNK), "{frames} frames");
        let mut out = Vec::new();
        let mut decoder = ruzstd::decoding::FrameDecoder::new();
        let mut input = payload.as_slice();
        let mut decoded_frames = 0;
        while !input.is_empty() {
            decoder.init(&mut input).unwrap();
            decoder
                .decode_blocks(&mut input, ruzstd::decoding::BlockDecodingStrategy::All)
                .unwrap();
            out.extend(decoder.collect().unwrap());
            decoded_frames += 1;
        }
        assert_eq!(decoded_frames, w.data.len().div_ceil(CHUNK));
        assert!(out == w.data, "the frames decode to the records");
    }

    #[test]
    fn a_streamed_capture_is_the_file_written_in_memory() {
        for compression in BOTH {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.perf.data");
            let mut w = many_samples(0);
            w.compression = compression;
            w.stream_to(&path).unwrap();
            assert!(
                !path.exists(),
                "nothing at the path before the file is whole"
            );
            let whole = many_samples(30_000);
            let mut at = 0;
            while at < whole.data.len() {
                let h = RecordHeader::parse(&whole.data[at..], at as u64).unwrap();
                w.push(&whole.data[at..at + h.size as usize]);
                assert!(w.data.len() < CHUNK, "at most a chunk held in memory");
                at += h.size as usize;
            }
            let written = w.write(&path).unwrap();
            assert_eq!(std::fs::metadata(&path).unwrap().len(), written.bytes);
            assert_eq!(written.record_bytes, whole.data.len() as u64);
            let (samples, compressed, feature) =
                samples_and_compressed(std::fs::read(&path).unwrap());
            assert_eq!(
                (samples, compressed, feature),
                (30_000, written.compressed_records, true),
                "{compression:?}"
            );
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        }
    }

    #[test]
    fn uncompressed_streaming_writes_records_as_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("u.perf.data");
        let mut w = many_samples(20_000);
        w.compression = Compression::Off;
        w.stream_to(&path).unwrap();
        let in_memory = many_samples(20_000).to_bytes();
        w.write(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), in_memory);
    }

    #[test]
    fn a_writer_dropped_unfinished_leaves_nothing_and_the_old_file_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.perf.data");
        std::fs::write(&path, b"old").unwrap();
        let mut w = many_samples(20_000);
        w.compression = Compression::Off;
        w.stream_to(&path).unwrap();
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
