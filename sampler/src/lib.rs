//! sparkles-sampler: every `perf_event_open` of the project (counting tiers, overflow
//! sampling into the mmap ring buffer, event naming, capability probing), the capture
//! data model, and perf.data reading and writing.
//!
//! The crate is laid out by the workspace foundation; its contents arrive with the
//! events (issue 3), records (issue 4) and live-sampling (issue 5) work.
