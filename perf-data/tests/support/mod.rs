//! What the perf-data's test files share: where the shared fixtures are, and the
//! recordings among them.

#[path = "../../../testdata/support/fixtures.rs"]
mod shared;

pub use shared::fixtures;

/// The perf.data recordings of the fixtures (`pebs/`, `callchain/`, `format/`), sorted.
#[allow(dead_code)] // not every test file reads them all
pub fn perf_data_files(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for sub in ["pebs", "callchain", "format"] {
        for entry in std::fs::read_dir(root.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "data") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}
