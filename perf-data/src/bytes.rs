//! A little-endian cursor over record bytes whose errors name the file offset.

use crate::error::DataError;

/// Reads fixed-size fields off a byte slice; every read is bounds-checked and a short
/// read names the absolute offset and what was expected there.
#[derive(Debug, Clone, Copy)]
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    /// Absolute offset of `data[0]` in the file or buffer, for messages.
    base: u64,
}

impl<'a> Cursor<'a> {
    /// A cursor over `data`, which starts at absolute offset `base`.
    #[inline]
    pub fn new(data: &'a [u8], base: u64) -> Cursor<'a> {
        Cursor { data, pos: 0, base }
    }

    /// Absolute offset of the next byte.
    #[inline]
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes not yet read.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// The error of a read of `n` bytes past the end (kept out of the readers' fast path).
    #[cold]
    #[inline(never)]
    fn short(&self, n: usize, what: &str) -> DataError {
        self.error(format!(
            "{what}: needs {n} bytes, {} left",
            self.remaining()
        ))
    }

    /// An error at the current offset.
    #[inline]
    pub fn error(&self, message: impl Into<String>) -> DataError {
        DataError::new(self.offset(), message)
    }

    /// The next `n` bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], DataError> {
        if n > self.remaining() {
            return Err(self.short(n, what));
        }
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Skips `n` bytes.
    #[inline]
    pub fn skip(&mut self, n: usize, what: &str) -> Result<(), DataError> {
        self.bytes(n, what).map(|_| ())
    }

    /// A little-endian u64.
    #[inline]
    pub fn u64(&mut self, what: &str) -> Result<u64, DataError> {
        let b = self.bytes(8, what)?;
        Ok(u64::from_le_bytes([
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
        ]))
    }

    /// A little-endian u32.
    #[inline]
    pub fn u32(&mut self, what: &str) -> Result<u32, DataError> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A little-endian u16.
    #[inline]
    pub fn u16(&mut self, what: &str) -> Result<u16, DataError> {
        let b = self.bytes(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    /// One byte.
    #[inline]
    pub fn u8(&mut self, what: &str) -> Result<u8, DataError> {
        Ok(self.bytes(1, what)?[0])
    }

    /// `count` u64s as a slice view, the count checked against what is left before use.
    #[inline]
    pub fn u64s(&mut self, count: u64, what: &str) -> Result<U64s<'a>, DataError> {
        let n = usize::try_from(count)
            .ok()
            .and_then(|c| c.checked_mul(8))
            .filter(|&n| n <= self.remaining())
            .ok_or_else(|| {
                self.error(format!(
                    "{what}: {count} u64s do not fit in the {} bytes left",
                    self.remaining()
                ))
            })?;
        Ok(U64s(self.bytes(n, what)?))
    }

    /// A NUL-terminated string filling the rest of the cursor (padding after the NUL).
    #[inline]
    pub fn c_str_rest(&mut self) -> &'a [u8] {
        let rest = &self.data[self.pos..];
        self.pos = self.data.len();
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        &rest[..end]
    }
}

/// A run of little-endian u64s in record bytes (unaligned-safe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct U64s<'a>(pub &'a [u8]);

impl<'a> U64s<'a> {
    /// How many values.
    #[inline]
    pub fn len(&self) -> usize {
        self.0.len() / 8
    }

    /// Whether there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `i`th value.
    #[inline]
    pub fn get(&self, i: usize) -> Option<u64> {
        let b = self.0.get(i * 8..i * 8 + 8)?;
        Some(u64::from_le_bytes([
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
        ]))
    }

    /// The values in order.
    #[inline]
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u64> + 'a {
        self.0
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }
}
