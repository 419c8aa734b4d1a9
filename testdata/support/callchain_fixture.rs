//! Shared by the tests of several crates (included with `#[path]`): the static binary of
//! `../shared/fixtures/callchain/`, unpacked from its Qt zlib form (a 4-byte big-endian
//! length, then zlib) to where its capture recorded it under a `--symfs` root.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::skip;

/// `../shared/fixtures/callchain/` beside the workspace, or `None` (said) when absent.
pub fn callchain_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/callchain");
    if dir.is_dir() {
        Some(dir)
    } else {
        skip::skip("fixtures", format!("{} is absent", dir.display()));
        None
    }
}

/// Writes the binary under `symfs` at the path the capture's MMAP records name, and
/// returns that path.
pub fn place_binary(dir: &Path, symfs: &Path) -> PathBuf {
    let packed =
        std::fs::read(dir.join("vector_static_gcc_v9.1.0.qzlib")).expect("the packed binary");
    let mut binary = Vec::new();
    flate2::read::ZlibDecoder::new(&packed[4..])
        .read_to_end(&mut binary)
        .expect("zlib after the 4-byte length");
    let data = sparkles_perf_data::PerfData::open(dir.join("vector_static_gcc.dwarf.perf.data"))
        .expect("the capture");
    let mut recorded = None;
    data.for_each_record(|e| {
        if let sparkles_perf_data::Record::Mmap(m) = &e.record {
            if m.filename.ends_with(b"vector_static_gcc_v9.1.0") {
                recorded = Some(String::from_utf8_lossy(m.filename).into_owned());
            }
        }
        Ok::<(), sparkles_perf_data::Error>(())
    })
    .expect("the capture reads");
    let recorded = recorded.expect("the capture maps the binary");
    let at = symfs.join(recorded.trim_start_matches('/'));
    std::fs::create_dir_all(at.parent().expect("a file path")).expect("symfs folders");
    std::fs::write(&at, &binary).expect("the unpacked binary");
    at
}
