//! One record body decoded under an arbitrary attr: the first 136 bytes are the attr,
//! the next 8 the record header, the rest the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sparkles_perf_data::bytes::Cursor;
use sparkles_perf_data::record::parse_record;
use sparkles_perf_data::{Attr, RecordHeader, SampleFormat};

fuzz_target!(|data: &[u8]| {
    if data.len() < 136 + 8 {
        return;
    }
    let Ok(attr) = Attr::parse(&mut Cursor::new(&data[..136], 0), 136) else {
        return;
    };
    let format = SampleFormat::of(&attr);
    let rest = &data[136..];
    if let Ok(header) = RecordHeader::parse(rest, 136) {
        let body = &rest[8..header.size as usize];
        let _ = parse_record(header, body, 136, Some(&format));
    }
});
