//! The valgrind tier: exact instruction counts where no PMU counts them.
//!
//! After every timing pass, each selected case is counted once more in a child process of
//! the bench executable run under `valgrind --tool=callgrind --collect-atstart=no` with
//! callgrind's cache and branch simulation (each left out by `--valgrind-sim`, for about
//! half the time with neither), one child a case (its heap fresh), as many at once as
//! `--valgrind-jobs`, one per CPU by default. The child runs the case's setup and a
//! warm-up iteration uninstrumented, its other warm-up iterations and one more
//! uncollected, then `brackets` brackets, each two collected runs of the timed loop (a
//! base run of 1 iteration and a full run of `n + 1`) toggled on and off by client
//! requests around the loop only, each run dumped on its own (`CALLGRIND_DUMP_STATS_AT`).
//! A bracket's value per iteration is `(full - base) / n`: what the harness costs around
//! a run (the toggles, the clock reads, the loop's entry and exit) is the same in both runs
//! and cancels, so what is left is the body's own cost per iteration and the loop's step,
//! exactly, since callgrind counts every guest instruction, whatever `n` the timing chose.
//! Setup, the harness, other threads and the warm-up are never collected.
//!
//! The child is the bench executable run again with the same arguments (a test harness
//! says how to rerun its test with [`crate::Suite::reexec_with`]); [`CHILD_ENV`] in its
//! environment carries the request, and [`crate::run`] serves it before anything else.
//!
//! The tier in files: the client requests the bench process makes (`client`), the child's
//! side (`child`), the valgrind program (`program`), what the dumps say per bracket
//! (`dumps`, over sparkles-report's one reader of callgrind files), and the parent's pass
//! (`pass`), which returns each case's counts for the runner to merge.

mod child;
mod client;
mod dumps;
mod pass;
mod program;
#[cfg(test)]
mod tests;

pub use sparkles_report::callgrind::{parse_dump, Dump, Events};
pub use sparkles_results::counting::{InstructionChange, ValgrindReport};

pub(crate) use child::{child_request, write_marker, ChildRequest, CHILD_ENV};
pub use client::running_on_valgrind;
pub(crate) use client::{
    dump_labels, dump_stats_at, start_instrumentation, stop_instrumentation, toggle_collect,
    zero_stats,
};
pub(crate) use dumps::dumps_of_case;
pub(crate) use dumps::Costs;
pub use dumps::{brackets_of, per_iteration};
pub(crate) use pass::{count_cases, exact, medians, sized_by_cost, Pass, EXACT_BRACKETS};
pub(crate) use program::descriptors;
pub use program::{capability, program, Absent, Simulation, PROGRAM_ENV};
