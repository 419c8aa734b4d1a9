//! What a case's profile pass is to do: what it samples, and which profile it is diffed
//! against. The bencher, the runner and the reading of captures all take these.

use sparkles_sampler::session::SamplingConfig;

/// What a case's profile pass samples.
#[derive(Debug, Clone)]
pub(crate) enum ProfileSampling {
    /// perf_event sampling (`--profile`, `=wall`, `=mem`).
    Perf(SamplingConfig),
    /// The counting allocator's byte sampling (`--profile=alloc`).
    Alloc(crate::tiers::alloc::sampling::Plan),
}

/// The profile a case's is diffed against (without the `profile` feature, what would
/// have been: nothing is read).
#[derive(Debug)]
#[cfg_attr(not(feature = "profile"), allow(dead_code))]
pub(crate) enum Against<'a> {
    /// The baseline's, saved beside its rows (`profile/<case folder>/`).
    Baseline(&'a sparkles_results::baseline::Baseline),
    /// The one in this folder (its profile.json and folded.txt): serve mode's `against`.
    Folder(&'a std::path::Path),
}
