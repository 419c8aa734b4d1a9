//! The address-space model and the module's segment arithmetic on a real capture: the
//! static binary `perf record` sampled in `../shared/fixtures/callchain/` (decompressed
//! from its Qt zlib form), every user sample in it named as perf 6.1 named it with
//! `--symfs` (the golden beside it). Skips, saying so, when the fixtures are absent.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::collections::HashMap;

use sparkles_perf_data::{PerfData, Record};
use sparkles_symbolize::address_space::AddressSpace;
use sparkles_symbolize::symbolizer::{Place, Symbolizer};
use sparkles_symbolize::SearchPaths;

#[path = "../../testdata/support/callchain_fixture.rs"]
mod callchain_fixture;

#[test]
fn user_samples_of_a_static_binary_are_named_as_perf_names_them() {
    let Some(dir) = callchain_fixture::callchain_dir() else {
        return;
    };
    // The binary goes where the capture recorded it, under a --symfs root.
    let tmp = tempfile::tempdir().unwrap();
    let bin_path = callchain_fixture::place_binary(&dir, tmp.path());
    let binary = std::fs::read(&bin_path).unwrap();
    let data = PerfData::open(dir.join("vector_static_gcc.dwarf.perf.data")).unwrap();
    let mut symbolizer = Symbolizer::for_capture(
        &data,
        SearchPaths {
            symfs: Some(tmp.path().to_path_buf()),
            ..SearchPaths::none()
        },
    );
    // perf stretches a symbol of size 0 to the next symbol (symbols__fixup_end); binutils,
    // and so this module, name only the symbol's own address. Those samples are counted
    // apart.
    let zero_size: Vec<String> = {
        use object::{Object, ObjectSymbol};
        let file = object::File::parse(&*binary).unwrap();
        file.symbols()
            .filter(|s| s.size() == 0)
            .filter_map(|s| s.name().ok().map(str::to_string))
            .collect()
    };
    let mut stretched = 0;

    // perf's names: blocks of "comm pid time: event:" then frames, innermost first.
    let golden =
        std::fs::read_to_string(dir.join("vector_static_gcc.perf61-script-symfs.txt")).unwrap();
    let mut want: HashMap<String, String> = HashMap::new();
    for block in golden.split("\n\n") {
        let mut lines = block.lines().filter(|l| !l.trim().is_empty());
        let Some(header) = lines.next() else { continue };
        let frames: Vec<&str> = lines.collect();
        let time = header
            .split_whitespace()
            .find(|w| w.ends_with(':') && w.contains('.'))
            .unwrap_or("");
        // A sample taken in user mode has its one user frame.
        if let [only] = frames.as_slice() {
            if only.contains("vector_static_gcc_v9.1.0") {
                let symbol = only.split_whitespace().nth(1).unwrap().to_string();
                want.insert(time.trim_end_matches(':').to_string(), symbol);
            }
        }
    }
    assert!(
        want.len() >= 20,
        "{} user samples in the golden",
        want.len()
    );

    let mut compared = 0;
    let mut space = AddressSpace::new();
    data.for_each_record(|e| {
        space.observe(&e.record);
        match &e.record {
            Record::Sample(s) if e.header.misc & 7 == 2 => {
                let t = s.time.unwrap();
                let key = format!("{}.{:06}", t / 1_000_000_000, (t % 1_000_000_000) / 1000);
                let (pid, ip) = (s.pid.unwrap(), s.ip.unwrap());
                let at = symbolizer.locate(&space, pid, ip);
                if !at
                    .mapping
                    .as_deref()
                    .is_some_and(|m| m.ends_with("vector_static_gcc_v9.1.0"))
                {
                    return Ok::<(), sparkles_perf_data::Error>(());
                }
                let Place::Module { vaddr, .. } = at.place else {
                    panic!("{ip:#x}: {at:?}");
                };
                let frames = symbolizer.name(&at.place).frames;
                let name = frames
                    .last()
                    .and_then(|f| f.function.clone())
                    .unwrap_or_default();
                if let Some(expected) = want.get(&key) {
                    if name.is_empty() && zero_size.contains(expected) {
                        stretched += 1;
                    } else {
                        assert_eq!(
                            &name, expected,
                            "sample at {key}, ip {ip:#x}, vaddr {vaddr:#x}"
                        );
                    }
                    compared += 1;
                }
            }
            _ => {}
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(
        compared,
        want.len(),
        "every user sample of the golden was compared"
    );
    assert!(
        stretched * 10 <= compared,
        "{stretched} of {compared} named only by perf's stretching"
    );
}
