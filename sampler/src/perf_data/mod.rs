//! perf.data and ring-buffer records: one decoder for both.
//!
//! - [`record`]: every record type, decoded from a header and body.
//! - [`sample`]: PERF_RECORD_SAMPLE in the kernel's field order.
//! - [`attr`]: `perf_event_attr` of any layout size.
//! - [`data_src`]: `PERF_SAMPLE_DATA_SRC` decoded, levels named as perf 6.4+ names them.
//! - [`features`]: header features.
//! - [`file`]: the reader (file and pipe mode, compressed records, time order).
//! - [`ring`]: records out of an mmap ring buffer, wrap-around included.

pub mod attr;
pub mod bytes;
pub mod data_src;
pub mod features;
pub mod file;
pub mod record;
pub mod ring;
pub mod sample;
pub mod script;
pub mod synth;
pub mod writer;

pub use attr::Attr;
pub use data_src::DataSource;
pub use file::{AttrEntry, Event, Mode, PerfData, ReadError, ReadFailure, Stats};
pub use record::{Record, RecordHeader, SampleId};
pub use sample::{Sample, SampleFormat};
