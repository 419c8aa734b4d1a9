//! What one case produced in this process: its timing samples, counted values, counting
//! account and profile, before they become its row.

use sparkles_results::counting::CountingReport;
use sparkles_results::metric::{MetricSeries, MetricValue};
use sparkles_results::profile::ProfileSummary;
use sparkles_results::throughput::Throughput;

/// What one case produced.
#[derive(Debug, Clone)]
pub(crate) struct CaseReport {
    pub name: String,
    pub slug: String,
    pub ok: bool,
    pub error: Option<String>,
    /// Iterations per timing sample.
    pub iterations: u64,
    /// Per-iteration ns, in the order taken.
    pub samples: Vec<f64>,
    pub throughput: Option<Throughput>,
    /// Values from the counting pass: each metric's median over the brackets.
    pub counted: Vec<MetricValue>,
    /// Each metric's per-iteration value in every bracket, in order.
    pub counted_brackets: Vec<MetricSeries>,
    /// How the perf_event tiers counted, where they did.
    pub counting: Option<CountingReport>,
    /// The profile pass's outcome.
    pub profile: Option<ProfileSummary>,
}
