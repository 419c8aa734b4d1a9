//! JIT symbol maps: `/tmp/perf-<pid>.map`, the text file JITs (V8, the JVM's agents,
//! LuaJIT, .NET) write so profilers can name their anonymous code: one `START SIZE name`
//! line per function, START and SIZE in hex.

use std::path::{Path, PathBuf};

/// One JIT-compiled function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JitSymbol {
    /// First address.
    pub start: u64,
    /// Size in bytes.
    pub size: u64,
    /// Its name.
    pub name: String,
}

/// A process's perf map, sorted by address.
#[derive(Debug, Clone, Default)]
pub struct PerfMap {
    symbols: Vec<JitSymbol>,
}

impl PerfMap {
    /// Parses a perf map; malformed lines are skipped (a JIT may be writing the file).
    pub fn parse(text: &str) -> PerfMap {
        let mut symbols: Vec<JitSymbol> = text
            .lines()
            .filter_map(|line| {
                let mut parts = line.trim_start().splitn(3, ' ');
                let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
                let start = hex(parts.next()?)?;
                let size = hex(parts.next()?)?;
                let name = parts.next()?.trim_end().to_string();
                Some(JitSymbol { start, size, name })
            })
            .collect();
        // Later lines win for the same start (code regenerated in place).
        symbols.reverse();
        symbols.sort_by_key(|s| s.start);
        symbols.dedup_by_key(|s| s.start);
        PerfMap { symbols }
    }

    /// The map file of `pid` in `dir` (`/tmp` normally), when present.
    pub fn path_for(dir: &Path, pid: u32) -> PathBuf {
        dir.join(format!("perf-{pid}.map"))
    }

    /// Reads `pid`'s map from `dir`; `None` when there is none.
    pub fn load(dir: &Path, pid: u32) -> Option<PerfMap> {
        std::fs::read_to_string(PerfMap::path_for(dir, pid))
            .ok()
            .map(|t| PerfMap::parse(&t))
    }

    /// The function holding `addr`.
    pub fn lookup(&self, addr: u64) -> Option<&JitSymbol> {
        let i = self.symbols.partition_point(|s| s.start <= addr);
        self.symbols[..i]
            .last()
            .filter(|s| addr < s.start.saturating_add(s.size.max(1)))
    }

    /// How many functions.
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    /// Whether it names none.
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_looks_up() {
        let m = PerfMap::parse(
            "7f0000001000 40 LazyCompile:~add file.js:3\n\
             garbage line\n\
             0x7f0000002000 10 Builtin:Call\n\
             7f0000001000 20 LazyCompile:*add file.js:3\n",
        );
        assert_eq!(m.len(), 2);
        assert_eq!(
            m.lookup(0x7f000000100f).unwrap().name,
            "LazyCompile:*add file.js:3",
            "the later line for one start wins, names keep their spaces"
        );
        assert!(
            m.lookup(0x7f0000001020).is_none(),
            "past the function's size"
        );
        assert_eq!(m.lookup(0x7f0000002000).unwrap().name, "Builtin:Call");
    }
}
