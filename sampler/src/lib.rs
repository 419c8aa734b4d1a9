//! sparkles-sampler: the kernel edge. Every `perf_event_open` of the project (counting
//! tiers, overflow sampling into the mmap ring buffer, event naming over a sysfs root,
//! capability probing), live NUMA placement and the memory-event plans; captures are
//! written through `sparkles_perf_data`'s writer.
//!
//! - [`events`]: perf's event spellings resolved into attrs, against any sysfs tree.
//! - [`open`]: opening a resolved event, and the reason when the kernel refuses.
//! - [`caps`]: the capability report over the seven concerns.
//! - [`buffers`]: how big the ring buffers are, from the data rate and the user's limits.
//! - [`session`]: overflow sampling into ring buffers, drained into a capture.
//! - [`numa`]: which node holds each sampled page, asked while the process runs.
//! - [`system`]: the settings (paranoid level, hypervisor, kptr_restrict) reasons cite.
//!
//! Every system call is in one private module, `sys`: perf-event2 and libc on Linux with
//! the `perf` feature (the default); elsewhere the same API compiles, nothing opens, and
//! each way in says [`UNAVAILABLE`].

pub mod buffers;
pub mod caps;
pub mod counters;
pub mod counting;
pub mod errno;
pub mod error;
pub mod events;
pub mod host;
pub mod mem_events;
pub mod numa;
pub mod off_cpu;
pub mod open;
pub mod proc_synth;
pub mod session;
mod sys;
pub mod system;

pub use error::{Error, EventError, FormatError};
pub use events::{EventAttr, EventResolver};
pub use sys::UNAVAILABLE;
