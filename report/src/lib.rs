//! sparkles-report: aggregation of symbolized stacks into flat profiles, call trees,
//! folded stacks, flamegraph SVGs, memory-level and NUMA tables, baseline diffs, and JSON
//! and pprof export.
//!
//! The crate is laid out by the workspace foundation; its contents arrive with the
//! reports work (issue 8).
