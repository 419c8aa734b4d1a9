//! The reader over any bytes: the header, then every record pulled in time order, in file
//! order, and from the same bytes read as a stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sparkles_perf_data::PerfData;

fn drain(data: &PerfData, ordered: bool) {
    let records = if ordered {
        data.records()
    } else {
        data.records_in_file_order()
    };
    let Ok(mut records) = records else { return };
    while let Ok(Some(_)) = records.next_record() {}
}

fuzz_target!(|bytes: &[u8]| {
    if let Ok(file) = PerfData::from_bytes(bytes.to_vec()) {
        drain(&file, true);
        drain(&file, false);
    }
    if let Ok(stream) = PerfData::from_stream("fuzz", std::io::Cursor::new(bytes.to_vec())) {
        drain(&stream, true);
    }
});
