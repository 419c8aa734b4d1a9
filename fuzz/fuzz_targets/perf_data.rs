//! The perf.data reader over arbitrary bytes: open, then decode every record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sparkles_sampler::perf_data::PerfData;

fuzz_target!(|data: &[u8]| {
    if let Ok(file) = PerfData::from_bytes(data.to_vec()) {
        let _ = file.for_each_record(|_| Ok::<(), ()>(()));
    }
});
