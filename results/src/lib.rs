//! sparkles-results: what a sparkles run produced and what it means, readable without the
//! runner that produced it.
//!
//! The row ([`row::BenchRow`], `sparkles.bench/1`) with the counting and profile
//! summaries the tiers fill in, the statistics over its samples ([`stats`], [`paired`]),
//! comparisons and their explanations ([`explain`]), baselines, the environment and the
//! machine probe's record, the history over commits and its change points, units, the
//! console table, the run report, the exports CI services read, and the serve protocol
//! between a coordinator and its bench processes ([`serve`]). The harness
//! (`sparkles-bench`) fills these; the `sparkles` command reads and drives them without
//! linking the harness.

pub mod baseline;
pub mod comparison;
pub mod counting;
pub mod environment;
pub mod error;
pub mod explain;
pub mod export;
pub mod history;
pub mod machine_probe;
pub mod metric;
pub mod output;
pub mod paired;
pub mod profile;
pub mod row;
pub mod run_report;
pub mod serve;
pub mod stats;
pub mod sweep;
pub mod table;
pub mod throughput;
pub mod units;

pub use error::Error;
