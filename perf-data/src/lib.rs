//! sparkles-perf-data: the capture in bytes. Everything that reads or writes perf.data
//! and perf's ring-buffer records, with no perf_event_open and no syscalls of its own
//! (std's file I/O and a read-only map of the file at the edge), so it builds everywhere
//! a capture may be read: a laptop given a perf.data from a Linux server.
//!
//! - [`file::PerfData`]: a file's header (file or pipe mode, every attr layout, header
//!   features), and its records pulled one at a time ([`file::Records`]) in time order or
//!   in file order.
//! - [`reader`]: records in file order from a mapped file or a stream, COMPRESSED ones
//!   opened with bounded memory; [`order`]: perf report's time ordering, on its own.
//! - [`record`]: every record type, each with its own parse, dispatched from one match;
//!   [`sample`]: PERF_RECORD_SAMPLE in the kernel's field order; [`attr`]:
//!   `perf_event_attr` of any layout size; [`features`]: header features.
//! - [`writer`]: captures written as perf.data; [`synth`]: the records perf record
//!   synthesizes for what existed before sampling.
//! - [`ring`]: records out of an mmap ring buffer's bytes, wrap-around included.
//! - [`data_src`]: `PERF_SAMPLE_DATA_SRC` decoded, levels named as perf 6.4+ names them.
//! - [`topology`], [`pages`]: the NUMA topology a capture carries, and the page table
//!   written beside it.
//! - [`script`]: `sparkles script` lines; [`atomic_write`]: every file written whole or
//!   not at all.

pub mod atomic_write;
pub mod attr;
pub mod build_id;
pub mod bytes;
pub mod data_src;
pub mod error;
pub mod features;
pub mod file;
mod frames;
pub mod order;
pub mod pages;
pub mod reader;
pub mod record;
pub mod record_kind;
pub mod ring;
pub mod sample;
pub mod script;
pub mod synth;
pub mod throttle;
pub mod topology;
pub mod tracing;
pub mod writer;

/// Whether this build has libzstd (the `zstd` feature): it reads `perf record -z`'s one
/// endless stream, and writes faster and smaller. Every build reads and writes the
/// compressed captures sparkles writes (ruzstd, a zstd frame a chunk).
pub const ZSTD: bool = cfg!(feature = "zstd");

pub use attr::Attr;
pub use data_src::DataSource;
pub use error::{DataError, Error};
pub use file::{AttrEntry, Event, FeatureProblem, Mode, PerfData, Records, Stats};
pub use record::{Record, RecordHeader, SampleId};
pub use sample::{Sample, SampleFormat};
