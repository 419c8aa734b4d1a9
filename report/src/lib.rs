//! sparkles-report: aggregation of symbolized stacks into flat profiles, call trees,
//! folded stacks, flamegraph SVGs, memory-level and NUMA tables, baseline diffs, and JSON
//! and pprof export.
//!
//! - [`stacks`]: a capture's samples unwound and named (the symbolizer and unwinder fed
//!   its records in time order).
//! - [`profile`]: flat profiles (`functions` and `symbols` views, lines, modules) and
//!   folded stacks, `sparkles.profile/1` JSON.
//! - [`flame`]: flamegraph SVGs through inferno.
//! - [`memory`]: which memory level served sampled accesses, from which code, to which
//!   data (samples with a data source).
//! - [`numa`]: accesses by (CPU node, memory node).
//! - [`names`]: names that survive a rebuild.
//! - [`diff`]: the hot-function diff of two profiles.
//! - [`callgrind`]: callgrind's out files, instruction profiles and their exact diff.
//! - [`pprof`]: gzipped profile.proto export (feature `pprof`).

#[cfg(feature = "annotate")]
pub mod annotate;
pub mod callgrind;
pub mod capture;
pub mod diff;
pub mod error;
pub mod export;
pub mod flame;
pub mod html;
pub mod memory;
pub mod names;
pub mod notes;
pub mod numa;
pub mod offcpu;
#[cfg(feature = "pprof")]
pub mod pprof;
pub mod profile;
pub mod reading;
pub mod stacks;

pub use error::Error;
