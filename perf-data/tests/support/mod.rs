//! What the perf-data's test files share: where the shared fixtures are, and the
//! recordings among them.

#[path = "../../../testdata/support/fixtures.rs"]
#[allow(dead_code)] // not every test file reads the shared fixtures
mod shared;

#[allow(unused_imports)] // not every test file reads the shared fixtures
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

/// Copies of `bytes` cut short at 54 places and with a byte flipped at as many (and 6 bytes
/// on, where a record header keeps its size), each that opens handed to `decode`: damaged
/// input gives an error or a result, never a panic.
#[allow(dead_code)] // not every test file sweeps
pub fn damaged_copies_never_panic(bytes: &[u8], decode: impl Fn(&sparkles_perf_data::PerfData)) {
    use sparkles_perf_data::PerfData;
    let n = bytes.len();
    let offsets: Vec<usize> = (0..48)
        .map(|i| i * n / 48)
        .chain([0, 1, 8, 16, 104, n - 1])
        .collect();
    for &at in &offsets {
        if let Ok(data) = PerfData::from_bytes(bytes[..at.min(n)].to_vec()) {
            decode(&data);
        }
        for flip in [at, at + 6] {
            let mut copy = bytes.to_vec();
            copy[flip.min(n - 1)] ^= 0xff;
            if let Ok(data) = PerfData::from_bytes(copy) {
                decode(&data);
            }
        }
    }
}
