//! Records out of a ring buffer at arbitrary tail and head positions.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sparkles_perf_data::ring::for_each_in_ring;

fuzz_target!(|data: &[u8]| {
    if data.len() < 16 {
        return;
    }
    let tail = u64::from_le_bytes(data[..8].try_into().unwrap_or([0; 8])) % 4096;
    let head = tail + u64::from_le_bytes(data[8..16].try_into().unwrap_or([0; 8])) % 512;
    let ring = &data[16..];
    let size = ring.len().next_power_of_two() / 2;
    if size >= 8 {
        let _ = for_each_in_ring(&ring[..size], tail, head, &mut Vec::new(), |_, _| {});
    }
});
