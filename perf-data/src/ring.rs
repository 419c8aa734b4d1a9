//! Records out of a perf mmap ring buffer: the data area is a power-of-two circle, and a
//! record that crosses its end is copied whole into a scratch buffer before decoding.

use crate::error::DataError;
use crate::record::RecordHeader;

/// Walks the records between `tail` and `head` (free-running byte counters, as the
/// kernel's `data_tail` and `data_head`) of the ring `data`, whose length is a power of
/// two. `visit` receives each record's bytes (header included) and its position.
/// Returns the new tail, which is `head` when every record was whole.
pub fn for_each_in_ring(
    data: &[u8],
    tail: u64,
    head: u64,
    scratch: &mut Vec<u8>,
    mut visit: impl FnMut(&[u8], u64),
) -> Result<u64, DataError> {
    let size = data.len() as u64;
    if !size.is_power_of_two() {
        return Err(DataError::new(
            0,
            format!("ring buffer of {size} bytes is not a power of two"),
        ));
    }
    if head.wrapping_sub(tail) > size {
        return Err(DataError::new(
            tail,
            format!("ring positions tail {tail} head {head} span more than the {size}-byte buffer"),
        ));
    }
    let mask = size - 1;
    let mut pos = tail;
    while head - pos >= 8 {
        let at = (pos & mask) as usize;
        // The header itself may wrap.
        let mut h = [0u8; 8];
        for (i, b) in h.iter_mut().enumerate() {
            *b = data[(at + i) & mask as usize];
        }
        let len = u16::from_le_bytes([h[6], h[7]]) as u64;
        if len < 8 {
            return Err(DataError::new(
                pos,
                format!("ring record claims size {len} (< 8)"),
            ));
        }
        if head - pos < len {
            break;
        }
        let len = len as usize;
        if at + len <= data.len() {
            visit(&data[at..at + len], pos);
        } else {
            scratch.clear();
            scratch.extend_from_slice(&data[at..]);
            scratch.extend_from_slice(&data[..len - (data.len() - at)]);
            RecordHeader::parse(scratch, pos)?;
            visit(scratch, pos);
        }
        pos += len as u64;
    }
    Ok(pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(type_: u32, payload: &[u8]) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&type_.to_le_bytes());
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&((8 + payload.len()) as u16).to_le_bytes());
        r.extend_from_slice(payload);
        r
    }

    #[test]
    fn records_crossing_the_end_arrive_whole() {
        let mut ring = vec![0u8; 64];
        // Two 24-byte records written from position 48: the first crosses the end of the
        // 64-byte ring (48..64, then 0..8), the second lies past it (8..32).
        let records: Vec<Vec<u8>> = (0..2u8).map(|i| record(9, &[i; 16])).collect();
        let mut pos = 48u64;
        for r in &records {
            for (i, b) in r.iter().enumerate() {
                ring[((pos + i as u64) & 63) as usize] = *b;
            }
            pos += r.len() as u64;
        }
        let mut seen = Vec::new();
        let mut scratch = Vec::new();
        let tail = for_each_in_ring(&ring, 48, pos, &mut scratch, |bytes, at| {
            seen.push((bytes.to_vec(), at))
        })
        .unwrap();
        assert_eq!(tail, pos);
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1].1, 72);
        for (i, (bytes, _)) in seen.iter().enumerate() {
            assert_eq!(bytes, &records[i]);
        }
    }

    #[test]
    fn a_header_split_across_the_end_is_read() {
        let mut ring = vec![0u8; 32];
        let r = record(3, &[7; 8]);
        let start = 28u64;
        for (i, b) in r.iter().enumerate() {
            ring[((start + i as u64) & 31) as usize] = *b;
        }
        let mut got = Vec::new();
        let tail = for_each_in_ring(&ring, start, start + 16, &mut Vec::new(), |b, _| {
            got.push(b.to_vec())
        })
        .unwrap();
        assert_eq!(tail, start + 16);
        assert_eq!(got, vec![r]);
    }

    #[test]
    fn partial_and_corrupt_records() {
        let ring = record(9, &[1; 8])
            .into_iter()
            .chain(std::iter::repeat_n(0, 16))
            .collect::<Vec<_>>();
        // head inside the record: nothing delivered, tail unchanged.
        let tail =
            for_each_in_ring(&ring, 0, 12, &mut Vec::new(), |_, _| panic!("partial")).unwrap();
        assert_eq!(tail, 0);
        let zero = vec![0u8; 32];
        assert!(for_each_in_ring(&zero, 0, 16, &mut Vec::new(), |_, _| {}).is_err());
        assert!(for_each_in_ring(&[0u8; 24], 0, 8, &mut Vec::new(), |_, _| {}).is_err());
    }
}
