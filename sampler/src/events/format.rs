//! PMU format fields: `config:0-7,32-35`-style bit placements from
//! `/sys/bus/event_source/devices/PMU/format/*`.

use std::fmt;

/// Which attr word a format field writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigWord {
    /// `perf_event_attr.config`.
    Config,
    /// `perf_event_attr.config1`.
    Config1,
    /// `perf_event_attr.config2`.
    Config2,
    /// `perf_event_attr.config3`.
    Config3,
}

impl ConfigWord {
    fn parse(text: &str) -> Option<ConfigWord> {
        match text {
            "config" => Some(ConfigWord::Config),
            "config1" => Some(ConfigWord::Config1),
            "config2" => Some(ConfigWord::Config2),
            "config3" => Some(ConfigWord::Config3),
            _ => None,
        }
    }

    /// The word's name as sysfs spells it.
    pub fn name(self) -> &'static str {
        match self {
            ConfigWord::Config => "config",
            ConfigWord::Config1 => "config1",
            ConfigWord::Config2 => "config2",
            ConfigWord::Config3 => "config3",
        }
    }
}

/// One format field: a word and the bit ranges, low bits of the value first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatField {
    /// The word the field lives in.
    pub word: ConfigWord,
    /// Inclusive bit ranges `(lo, hi)`, in the order the value's bits fill them.
    pub ranges: Vec<(u32, u32)>,
}

impl FormatField {
    /// Parses a format file's text, e.g. `config:0-7,32-35` or `config1:0-15\n`.
    pub fn parse(text: &str) -> Result<FormatField, crate::FormatError> {
        let text = text.trim();
        FormatField::parse_trimmed(text).map_err(|problem| crate::FormatError {
            text: text.to_string(),
            problem,
        })
    }

    fn parse_trimmed(text: &str) -> Result<FormatField, String> {
        let (word, bits) = text
            .split_once(':')
            .ok_or_else(|| format!("'{text}' is not WORD:BITS"))?;
        let word = ConfigWord::parse(word).ok_or_else(|| format!("unknown word '{word}'"))?;
        let mut ranges = Vec::new();
        for part in bits.split(',') {
            let bit = |s: &str| -> Result<u32, String> {
                let b: u32 = s.trim().parse().map_err(|_| format!("bad bit '{s}'"))?;
                if b > 63 {
                    return Err(format!("bit {b} beyond 63"));
                }
                Ok(b)
            };
            let (lo, hi) = match part.split_once('-') {
                Some((lo, hi)) => (bit(lo)?, bit(hi)?),
                None => (bit(part)?, bit(part)?),
            };
            if lo > hi {
                return Err(format!("range {lo}-{hi} runs backwards"));
            }
            ranges.push((lo, hi));
        }
        Ok(FormatField { word, ranges })
    }

    /// How many value bits the field holds.
    pub fn width(&self) -> u32 {
        self.ranges.iter().map(|(lo, hi)| hi - lo + 1).sum()
    }

    /// The mask of the word's bits this field covers.
    pub fn mask(&self) -> u64 {
        self.ranges
            .iter()
            .fold(0, |m, &(lo, hi)| m | (bits(hi - lo + 1) << lo))
    }

    /// Spreads `value` over the field's ranges; `None` when it does not fit.
    pub fn place(&self, value: u64) -> Option<u64> {
        let width = self.width();
        if width < 64 && value >> width != 0 {
            return None;
        }
        let mut rest = value;
        let mut out = 0u64;
        for &(lo, hi) in &self.ranges {
            let n = hi - lo + 1;
            out |= (rest & bits(n)) << lo;
            rest = if n >= 64 { 0 } else { rest >> n };
        }
        Some(out)
    }
}

fn bits(n: u32) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

impl fmt::Display for FormatField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.word.name())?;
        for (i, (lo, hi)) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if lo == hi {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_places_split_fields() {
        let f = FormatField::parse("config:0-7,32-35\n").unwrap();
        assert_eq!(f.word, ConfigWord::Config);
        assert_eq!(f.width(), 12);
        assert_eq!(f.to_string(), "config:0-7,32-35");
        assert_eq!(f.place(0x76), Some(0x76));
        // AMD's 12-bit event select: bits 8-11 of the value land in config 32-35.
        assert_eq!(f.place(0x120), Some(0x1_0000_0020));
        assert_eq!(f.place(0x1000), None);
        assert_eq!(f.mask(), 0xf_0000_00ff);
    }

    #[test]
    fn single_bits_and_full_words() {
        let bit = FormatField::parse("config:18").unwrap();
        assert_eq!(bit.place(1), Some(1 << 18));
        assert_eq!(bit.place(2), None);
        let full = FormatField::parse("config1:0-63").unwrap();
        assert_eq!(full.place(u64::MAX), Some(u64::MAX));
        let two = FormatField::parse("config2:0").unwrap();
        assert_eq!(two.word, ConfigWord::Config2);
    }

    #[test]
    fn rejects_malformed_text() {
        for bad in ["config", "cfg:1", "config:9-3", "config:64", "config:x"] {
            assert!(FormatField::parse(bad).is_err(), "{bad}");
        }
    }
}
