//! Kernel names: /proc/kallsyms, used only when the capture's kernel is the running one.
//!
//! A capture says which kernel it ran on by the build id perf recorded for
//! `[kernel.kallsyms]` (BUILD_ID feature) and by its OSRELEASE. The running kernel's build
//! id is in /sys/kernel/notes. Names are given when the build ids match, or, where either
//! side has none, when the releases match; otherwise every kernel address is one
//! `[kernel]` frame and the reason says why. A capture from another machine never gets
//! this machine's kernel names.

use std::sync::OnceLock;

use crate::search::hex;

/// One kallsyms symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelSymbol {
    /// Its address.
    pub addr: u64,
    /// Its name.
    pub name: String,
    /// The module it belongs to (`[ext4]` in kallsyms), if any.
    pub module: Option<String>,
}

/// The text symbols of /proc/kallsyms, sorted by address.
#[derive(Debug, Clone, Default)]
pub struct KernelSymbols {
    symbols: Vec<KernelSymbol>,
}

impl KernelSymbols {
    /// Parses kallsyms text (`ADDR TYPE NAME [MODULE]` lines); only text symbols (`t`,
    /// `T`, `w`, `W`) name code.
    pub fn parse(text: &str) -> KernelSymbols {
        // Lines are `ADDR TYPE NAME` or `ADDR TYPE NAME\t[MODULE]`; the type is checked
        // before anything is allocated (a third of the lines are data).
        let mut symbols: Vec<KernelSymbol> = Vec::with_capacity(text.len() / 48);
        let mut module: Option<(&str, String)> = None;
        for line in text.lines() {
            let Some((addr, rest)) = line.split_once(' ') else {
                continue;
            };
            let Some((kind, rest)) = rest.split_once(' ') else {
                continue;
            };
            if !matches!(kind, "t" | "T" | "w" | "W") {
                continue;
            }
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            let mut parts = rest.split_whitespace();
            let Some(name) = parts.next() else {
                continue;
            };
            // A module's symbols come together: its name is made once per run of them.
            let in_module = parts.next().map(|m| {
                let m = m.trim_matches(|c| c == '[' || c == ']');
                match &module {
                    Some((last, owned)) if *last == m => owned.clone(),
                    _ => {
                        module = Some((m, m.to_string()));
                        m.to_string()
                    }
                }
            });
            symbols.push(KernelSymbol {
                addr,
                name: name.to_string(),
                module: in_module,
            });
        }
        symbols.sort_by_key(|s| s.addr);
        KernelSymbols { symbols }
    }

    /// This machine's /proc/kallsyms, read once per process and cached.
    pub fn running() -> Result<&'static KernelSymbols, NoKernelNames> {
        static CACHE: OnceLock<Result<KernelSymbols, NoKernelNames>> = OnceLock::new();
        CACHE
            .get_or_init(|| {
                let text = read_proc("/proc/kallsyms")
                    .map_err(|e| NoKernelNames::Unreadable(e.to_string()))?;
                let symbols = KernelSymbols::parse(&text);
                if symbols.symbols.is_empty() {
                    return Err(NoKernelNames::NoSymbols);
                }
                if symbols.symbols.iter().all(|s| s.addr == 0) {
                    return Err(NoKernelNames::Hidden);
                }
                Ok(symbols)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The symbol at or before `addr` and the offset into it.
    pub fn lookup(&self, addr: u64) -> Option<(&KernelSymbol, u64)> {
        let i = self.symbols.partition_point(|s| s.addr <= addr);
        let s = &self.symbols[i.checked_sub(1)?];
        Some((s, addr - s.addr))
    }

    /// How many symbols.
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }
}

/// A /proc file (whose size reads as 0) in large reads into a buffer sized for it: the
/// kernel prints as much as each read asks.
fn read_proc(path: &str) -> std::io::Result<String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut bytes = Vec::with_capacity(16 << 20);
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Why kernel addresses get no names from this machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NoKernelNames {
    /// /proc/kallsyms could not be read.
    #[error("/proc/kallsyms: {0}")]
    Unreadable(String),
    /// It lists no text symbols.
    #[error("/proc/kallsyms lists no text symbols")]
    NoSymbols,
    /// kptr_restrict hides the addresses from this user.
    #[error(
        "/proc/kallsyms shows every address as 0 (kernel.kptr_restrict hides them from this user)"
    )]
    Hidden,
    /// The capture ran on a kernel of another build id.
    #[error(
        "the capture's kernel (build id {capture}) is not the running kernel (build id {running})"
    )]
    OtherBuild {
        /// The capture's kernel build id, hex.
        capture: String,
        /// The running kernel's, hex.
        running: String,
    },
    /// The capture ran on another kernel release.
    #[error("the capture's kernel ({capture}) is not the running kernel ({running})")]
    OtherRelease {
        /// The capture's release.
        capture: String,
        /// The running kernel's.
        running: String,
    },
    /// The capture does not say which kernel it ran on.
    #[error("the capture does not say which kernel it ran on (no kernel build id, no OSRELEASE)")]
    UnknownKernel,
}

/// Which kernel something ran on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KernelIdentity {
    /// `uname -r` / the capture's OSRELEASE.
    pub release: Option<String>,
    /// The kernel's GNU build id.
    pub build_id: Option<Vec<u8>>,
}

impl KernelIdentity {
    /// The running kernel.
    pub fn running() -> KernelIdentity {
        KernelIdentity {
            release: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .map(|s| s.trim().to_string()),
            build_id: sparkles_perf_data::build_id::running_kernel(),
        }
    }

    /// Whether names of `running` may be given to addresses of a capture made on `self`;
    /// the reason when not.
    pub fn names_from(&self, running: &KernelIdentity) -> Result<(), NoKernelNames> {
        match (&self.build_id, &running.build_id) {
            (Some(a), Some(b)) if a == b => return Ok(()),
            (Some(a), Some(b)) => {
                return Err(NoKernelNames::OtherBuild {
                    capture: hex(a),
                    running: hex(b),
                })
            }
            _ => {}
        }
        match (&self.release, &running.release) {
            (Some(a), Some(b)) if a == b => Ok(()),
            (Some(a), Some(b)) => Err(NoKernelNames::OtherRelease {
                capture: a.clone(),
                running: b.clone(),
            }),
            _ => Err(NoKernelNames::UnknownKernel),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_text_symbols_with_modules() {
        let k = KernelSymbols::parse(
            "ffffffff81000000 T _stext\n\
             ffffffff81000100 t do_thing\n\
             ffffffff81000180 D some_data\n\
             ffffffffc0201000 t ext4_read\t[ext4]\n",
        );
        assert_eq!(k.len(), 3, "data symbols do not name code");
        let (s, off) = k.lookup(0xffffffff81000123).unwrap();
        assert_eq!((s.name.as_str(), off), ("do_thing", 0x23));
        let (s, _) = k.lookup(0xffffffffc0201004).unwrap();
        assert_eq!(s.module.as_deref(), Some("ext4"));
        assert!(k.lookup(0x1000).is_none());
    }

    #[test]
    fn names_only_for_the_running_kernel() {
        let running = KernelIdentity {
            release: Some("6.1.0-13-amd64".into()),
            build_id: Some(vec![1, 2, 3]),
        };
        assert!(running.names_from(&running).is_ok());
        let other_build = KernelIdentity {
            release: Some("6.1.0-13-amd64".into()),
            build_id: Some(vec![9, 9, 9]),
        };
        let why = other_build.names_from(&running).unwrap_err().to_string();
        assert!(why.contains("090909") && why.contains("010203"), "{why}");
        // Without build ids the release decides.
        let by_release = KernelIdentity {
            release: Some("6.1.0-13-amd64".into()),
            build_id: None,
        };
        assert!(by_release.names_from(&running).is_ok());
        let other_release = KernelIdentity {
            release: Some("5.4.0".into()),
            build_id: None,
        };
        assert!(other_release
            .names_from(&running)
            .unwrap_err()
            .to_string()
            .contains("5.4.0"));
        assert!(KernelIdentity::default().names_from(&running).is_err());
    }
}
