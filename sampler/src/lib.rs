//! sparkles-sampler: every `perf_event_open` of the project (counting tiers, overflow
//! sampling into the mmap ring buffer, event naming, capability probing), the capture
//! data model, and perf.data reading and writing.
//!
//! - [`events`]: perf's event spellings resolved into attrs, against any sysfs tree.
//! - [`open`]: opening a resolved event, and the reason when the kernel refuses.
//! - [`caps`]: the capability report over the seven concerns.
//! - [`perf_data`]: records and perf.data reading, one decoder for files and ring buffers.
//! - [`numa`]: NUMA nodes, their CPUs and physical memory, live or from a capture.
//! - [`system`]: the settings (paranoid level, hypervisor, kptr_restrict) reasons cite.

pub mod caps;
pub mod counters;
pub mod counting;
pub mod error;
pub mod events;
pub mod mem_events;
pub mod numa;
pub mod open;
pub mod perf_data;
pub mod session;
pub mod system;

pub use error::{DataError, EventError};
pub use events::{EventAttr, EventResolver};
