//! zstd frames of records in pure Rust: ruzstd's frame and block encoder, with a match
//! finder of our own through its [`Matcher`] extension point.
//!
//! ruzstd's own finder keeps one position per 5-byte key per 128 KiB slice, the first
//! seen, and no offset history: on sample records, whose stack copies repeat the one
//! before them but for a few words, it finds short matches far away and stores about
//! 500 bytes a 16 KiB sample, several times libzstd's level 1. This one is libzstd's
//! "fast" strategy in outline: at each position the last match's offset is tried first
//! (a sample's stack against the one before continues at the same distance after each
//! changed word), then a hash table of the latest position of each 8-byte key, over the
//! whole frame (a [`crate::writer::CHUNK`] of records).

use ruzstd::encoding::{CompressionLevel, FrameCompressor, Matcher, Sequence};

/// The shortest match taken (zstd's least is 3; shorter than a word pays for nothing
/// here).
const MIN_MATCH: usize = 6;

/// The longest match taken: ruzstd 0.8 encodes longer ones wrong (its match-length code
/// 52 subtracts 32,771 where the format's base is 65,539), so a decoder would give 32 KiB
/// less.
const MAX_MATCH: usize = 65_538;

/// Hash table size, log2.
const HASH_LOG: u32 = 17;

/// The most a block holds: each block with the frame's header and checksum fits one
/// COMPRESSED record (64 KiB), stored raw where it does not compress, so that every
/// record gives perf's decoder bytes (perf stops at a record that gives none: a piece of
/// a block, or a checksum alone). zstd's limit is 128 KiB.
const BLOCK: usize = 64_000;

/// Compresses `records` as one zstd frame onto `out`. Should ruzstd's encoder panic on
/// some input (its 0.8 table builder has: `start_matching` keeps clear of the one case
/// known), the records are stored in the frame as they are, still a frame every reader
/// reads.
pub(crate) fn compress_frame(records: &[u8], out: &mut Vec<u8>, window: usize) {
    let start = out.len();
    let compressed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut compressor = FrameCompressor::new_with_matcher(
            RecordsMatcher::new(window),
            CompressionLevel::Fastest,
        );
        compressor.set_source(records);
        compressor.set_drain(&mut *out);
        compressor.compress();
    }));
    if compressed.is_err() {
        out.truncate(start);
        let mut compressor = FrameCompressor::new(CompressionLevel::Uncompressed);
        compressor.set_source(records);
        compressor.set_drain(out);
        compressor.compress();
    }
}

/// The match finder: the frame's bytes so far, and a table of where each key was last.
pub(crate) struct RecordsMatcher {
    /// Every byte of the frame committed so far (at most the window).
    data: Vec<u8>,
    /// Where the last committed block starts in `data`.
    block_start: usize,
    /// A spare block buffer, handed out again.
    spare: Vec<u8>,
    /// Hash of 8 bytes → position + 1 (0: none).
    table: Vec<u32>,
    /// The last match's offset.
    rep: usize,
    window: usize,
}

impl RecordsMatcher {
    pub(crate) fn new(window: usize) -> RecordsMatcher {
        RecordsMatcher {
            data: Vec::new(),
            block_start: 0,
            spare: Vec::new(),
            table: vec![0; 1 << HASH_LOG],
            rep: 0,
            window: window.max(BLOCK),
        }
    }

    #[inline]
    fn key(&self, at: usize) -> Option<usize> {
        let b = self.data.get(at..at + 8)?;
        let v = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        Some((v.wrapping_mul(0x9E37_79B1_85EB_CA87) >> (64 - HASH_LOG)) as usize)
    }

    #[inline]
    fn remember(&mut self, at: usize) {
        if let Some(h) = self.key(at) {
            self.table[h] = at as u32 + 1;
        }
    }

    /// How far `data[a..]` and `data[b..end]` agree (`a < b`; overlapping is fine).
    #[inline]
    fn common(&self, a: usize, b: usize, end: usize) -> usize {
        let (x, y) = (&self.data[a..end], &self.data[b..end]);
        let mut n = 0;
        while n + 8 <= y.len() {
            let d = u64::from_le_bytes(x[n..n + 8].try_into().unwrap_or_default())
                ^ u64::from_le_bytes(y[n..n + 8].try_into().unwrap_or_default());
            if d != 0 {
                return n + (d.trailing_zeros() / 8) as usize;
            }
            n += 8;
        }
        while n < y.len() && x[n] == y[n] {
            n += 1;
        }
        n
    }
}

impl Matcher for RecordsMatcher {
    fn get_next_space(&mut self) -> Vec<u8> {
        let mut space = std::mem::take(&mut self.spare);
        space.resize(BLOCK, 0);
        space
    }

    fn get_last_space(&mut self) -> &[u8] {
        &self.data[self.block_start..]
    }

    fn commit_space(&mut self, space: Vec<u8>) {
        // A frame holds at most the window: older bytes go (never the case for a frame
        // of a chunk, whose window is the chunk).
        if self.data.len() + space.len() > self.window {
            let drop = (self.data.len() + space.len() - self.window).min(self.data.len());
            self.data.drain(..drop);
            self.table.iter_mut().for_each(|p| *p = 0);
            self.rep = 0;
        }
        self.block_start = self.data.len();
        self.data.extend_from_slice(&space);
        self.spare = space;
    }

    fn skip_matching(&mut self) {
        for at in (self.block_start..self.data.len()).step_by(4) {
            self.remember(at);
        }
    }

    fn start_matching(&mut self, mut handle_sequence: impl for<'a> FnMut(Sequence<'a>)) {
        let end = self.data.len();
        // A block's first sequence has a literal: ruzstd 0.8's table builder panics on a
        // block whose sequences all have none (one symbol, the code 0, to encode).
        let (mut at, mut anchor) = (self.block_start + 1, self.block_start);
        let mut first = true;
        while at + MIN_MATCH <= end {
            // The last offset first, then the table.
            let mut found = None;
            if self.rep != 0 && at >= self.rep {
                let len = self.common(at - self.rep, at, end);
                if len >= MIN_MATCH {
                    found = Some((at - self.rep, len));
                }
            }
            if found.is_none() {
                if let Some(h) = self.key(at) {
                    let candidate = self.table[h] as usize;
                    self.table[h] = at as u32 + 1;
                    if candidate != 0 {
                        let from = candidate - 1;
                        let len = self.common(from, at, end);
                        if len >= MIN_MATCH {
                            found = Some((from, len));
                        }
                    }
                }
            }
            let Some((mut from, mut len)) = found else {
                // Skip faster through bytes that match nothing.
                at += 1 + ((at - anchor) >> 7);
                continue;
            };
            // Back over literals that match too.
            let least = anchor + usize::from(first);
            while at > least && from > 0 && self.data[at - 1] == self.data[from - 1] {
                at -= 1;
                from -= 1;
                len += 1;
            }
            let len = len.min(MAX_MATCH);
            let offset = at - from;
            handle_sequence(Sequence::Triple {
                literals: &self.data[anchor..at],
                offset,
                match_len: len,
            });
            self.rep = offset;
            first = false;
            // Keys inside the match, sparsely, for later matches to start from.
            let next = at + len;
            let mut k = at + 1;
            while k + 8 <= next {
                self.remember(k);
                k += 16;
            }
            self.remember(next.saturating_sub(2));
            at = next;
            anchor = next;
        }
        if anchor < end {
            handle_sequence(Sequence::Literals {
                literals: &self.data[anchor..end],
            });
        }
    }

    fn reset(&mut self, _level: CompressionLevel) {
        self.data.clear();
        self.block_start = 0;
        self.table.iter_mut().for_each(|p| *p = 0);
        self.rep = 0;
    }

    fn window_size(&self) -> u64 {
        self.window as u64
    }
}

/// What begins at a frame boundary.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FrameStart {
    /// Not enough bytes to tell.
    More,
    /// A skippable frame of this many bytes, whole.
    Skip(usize),
    /// A frame header of `len` bytes, whole; whether the frame ends with a checksum.
    Header { len: usize, checksum: bool },
}

/// The frame that begins `bytes` (RFC 8878, 3.1.1): its header's length from its
/// descriptor byte, its window held to `max_window`.
pub(crate) fn frame_start(bytes: &[u8], max_window: u64) -> Result<FrameStart, String> {
    if bytes.len() < 5 {
        return Ok(FrameStart::More);
    }
    let magic = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    if magic & 0xffff_fff0 == 0x184d_2a50 {
        if bytes.len() < 8 {
            return Ok(FrameStart::More);
        }
        let n = 8 + u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
        return Ok(if bytes.len() < n {
            FrameStart::More
        } else {
            FrameStart::Skip(n)
        });
    }
    if magic != 0xfd2f_b528 {
        return Err(format!(
            "COMPRESSED record: no zstd frame where one begins (magic {magic:#010x})"
        ));
    }
    let d = bytes[4];
    let single_segment = d & 0x20 != 0;
    let fcs = match d >> 6 {
        0 => usize::from(single_segment),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let dict = [0, 1, 2, 4][usize::from(d & 3)];
    let len = 5 + usize::from(!single_segment) + dict + fcs;
    if bytes.len() < len {
        return Ok(FrameStart::More);
    }
    let window = if single_segment {
        let f = &bytes[5 + dict..len];
        let mut v = [0u8; 8];
        v[..f.len()].copy_from_slice(f);
        u64::from_le_bytes(v) + if fcs == 2 { 256 } else { 0 }
    } else {
        let w = bytes[5];
        let base = 1u64 << (10 + (w >> 3));
        base + base / 8 * u64::from(w & 7)
    };
    if window > max_window {
        return Err(format!(
            "COMPRESSED record: a zstd frame with a {window}-byte window (at most {max_window})"
        ));
    }
    Ok(FrameStart::Header {
        len,
        checksum: d & 4 != 0,
    })
}

/// The whole blocks at the front of `bytes` (RFC 8878, 3.1.1.2): how many, their length
/// (with the frame's checksum after its last block), and whether the last is among them.
pub(crate) fn whole_blocks(bytes: &[u8], checksum: bool) -> Result<(usize, usize, bool), String> {
    let (mut blocks, mut at) = (0, 0);
    while let Some((len, last)) = next_block(&bytes[at..], checksum)? {
        blocks += 1;
        at += len;
        if last {
            return Ok((blocks, at, true));
        }
    }
    Ok((blocks, at, false))
}

/// The block at the front of `bytes`, where it is whole: its length (with the frame's
/// checksum after the last block) and whether it is the last.
fn next_block(bytes: &[u8], checksum: bool) -> Result<Option<(usize, bool)>, String> {
    let Some(h) = bytes.get(..3) else {
        return Ok(None);
    };
    let h = u32::from_le_bytes([h[0], h[1], h[2], 0]);
    let (last, size) = (h & 1 != 0, (h >> 3) as usize);
    let content = match (h >> 1) & 3 {
        1 => 1,
        3 => return Err("COMPRESSED record: a zstd block of the reserved type".to_string()),
        _ => size,
    };
    if size > 128 << 10 {
        return Err(format!(
            "COMPRESSED record: a zstd block of {size} bytes (at most 128 KiB)"
        ));
    }
    let len = 3 + content + if last && checksum { 4 } else { 0 };
    Ok((len <= bytes.len()).then_some((len, last)))
}

/// `frame` cut into pieces of at most `max` bytes at its blocks' ends, the header with
/// the first block and the checksum with the last: each piece decodes to bytes of its
/// own. A block longer than `max` (never one of [`compress_frame`]'s) is cut where it
/// must be.
pub(crate) fn pieces(frame: &[u8], max: usize) -> Vec<&[u8]> {
    let (mut ends, mut at) = (Vec::new(), 0);
    let checksum = match frame_start(frame, u64::MAX) {
        Ok(FrameStart::Header { len, checksum }) => {
            at = len;
            checksum
        }
        _ => false,
    };
    while let Ok(Some((len, _))) = next_block(&frame[at..], checksum) {
        at += len;
        ends.push(at);
    }
    ends.push(frame.len());
    let (mut out, mut start, mut last_end) = (Vec::new(), 0, 0);
    for end in ends {
        if end - start > max && last_end > start {
            out.push(&frame[start..last_end]);
            start = last_end;
        }
        while end - start > max {
            out.push(&frame[start..start + max]);
            start += max;
        }
        last_end = end;
    }
    if start < frame.len() {
        out.push(&frame[start..]);
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A xorshift64 generator from `seed`: test bytes, the same every run.
    pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut rng = seed;
        move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        }
    }

    fn decode(frame: &[u8]) -> Vec<u8> {
        let mut decoder = ruzstd::decoding::FrameDecoder::new();
        let mut input = frame;
        decoder.init(&mut input).unwrap();
        decoder
            .decode_blocks(&mut input, ruzstd::decoding::BlockDecodingStrategy::All)
            .unwrap();
        assert!(input.is_empty());
        decoder.collect().unwrap()
    }

    #[test]
    fn frames_decode_to_their_bytes_whatever_the_bytes() {
        let mut next = xorshift(0x1234_5678_u64);
        let noise: Vec<u8> = (0..300_000).map(|_| next() as u8).collect();
        // Samples alike but for a few words, as stack copies are.
        let mut stacks = Vec::new();
        for i in 0..60u64 {
            let mut s: Vec<u8> = (0..16_384u32).map(|k| (k / 8 * 7) as u8).collect();
            s[64..72].copy_from_slice(&i.to_le_bytes());
            s[4000..4008].copy_from_slice(&next().to_le_bytes());
            stacks.extend(s);
        }
        for bytes in [
            Vec::new(),
            vec![7u8; 5],
            vec![0u8; 300_000],
            noise.clone(),
            stacks.clone(),
            [stacks.as_slice(), &noise, &stacks[..1000]].concat(),
        ] {
            let mut frame = Vec::new();
            compress_frame(&bytes, &mut frame, 1 << 20);
            assert!(decode(&frame) == bytes, "{} bytes", bytes.len());
        }
        // The stacks: each after the first a few sequences.
        let mut frame = Vec::new();
        compress_frame(&stacks, &mut frame, 1 << 20);
        assert!(
            frame.len() * 100 < stacks.len(),
            "{} of {}",
            frame.len(),
            stacks.len()
        );
        // A block whose matches follow each other with no literal between them (the
        // foldhash case's stacks in the demo made one; ruzstd's own table builder
        // panicked on it), and matches longer than 64 KiB.
        let period: Vec<u8> = (0..24u8).collect();
        let repeating: Vec<u8> = period.iter().cycle().take(400_000).copied().collect();
        let mut frame = Vec::new();
        compress_frame(&repeating, &mut frame, 1 << 20);
        assert!(decode(&frame) == repeating);
        assert!(
            frame.len() * 100 < repeating.len(),
            "compressed: {}",
            frame.len()
        );
        // Declaring a window smaller than the frame keeps matches inside it.
        let mut small = Vec::new();
        compress_frame(&stacks, &mut small, BLOCK);
        assert!(decode(&small) == stacks);
    }

    #[test]
    fn many_shapes_of_bytes_make_frames_that_decode_and_nothing_panics() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15_u64);
        for case in 0..150 {
            let len = (next() % 200_000) as usize;
            let alphabet = 1 + (next() % 255) as u8;
            let mut bytes = Vec::with_capacity(len);
            while bytes.len() < len {
                match next() % 4 {
                    // Copies of what came before, at any distance, of any length.
                    0 if !bytes.is_empty() => {
                        let from = (next() as usize) % bytes.len();
                        let n = 1 + (next() % 3000) as usize;
                        for k in 0..n {
                            let b = bytes[from + k % (bytes.len() - from)];
                            bytes.push(b);
                        }
                    }
                    // Runs of one byte.
                    1 => {
                        let b = (next() % u64::from(alphabet)) as u8;
                        bytes.extend(std::iter::repeat_n(b, (next() % 500) as usize));
                    }
                    // Noise of a small or a whole alphabet.
                    _ => {
                        for _ in 0..(next() % 200) {
                            bytes.push((next() % u64::from(alphabet)) as u8);
                        }
                    }
                }
            }
            bytes.truncate(len);
            let mut frame = Vec::new();
            compress_frame(&bytes, &mut frame, 1 << 20);
            assert!(decode(&frame) == bytes, "case {case}: {len} bytes");
        }
    }
}
