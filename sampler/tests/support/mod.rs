//! What the sampler's test files share: where the shared fixtures are.

#[path = "../../../testdata/support/fixtures.rs"]
mod shared;

pub use shared::fixtures;
