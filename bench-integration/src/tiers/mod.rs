//! The counting tiers, each measured in the counting pass after all timing: tier 0
//! (rusage and /proc I/O), perf_event counter groups and syscall tracepoints (`perf`),
//! callgrind's exact counts in a child under valgrind (`valgrind`), and the counting
//! allocator (`alloc`). A tier returns its counts; the runner puts them in the row.

pub mod alloc;
pub mod perf;
pub mod tier0;
pub mod valgrind;
