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

/// One kallsyms symbol, borrowed from the text it was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSymbol<'a> {
    /// Its address.
    pub addr: u64,
    /// Its name.
    pub name: &'a str,
    /// The module it belongs to (`[ext4]` in kallsyms), if any.
    pub module: Option<&'a str>,
}

/// A text symbol: its address and where its name (and module) lie in the text.
#[derive(Debug, Clone, Copy)]
struct Entry {
    addr: u64,
    name: u32,
    name_len: u16,
    /// Index into `modules`, `u16::MAX` for the kernel's own.
    module: u16,
}

/// The text symbols of /proc/kallsyms, sorted by address (symbols at one address in the
/// order kallsyms lists them), their names kept in the text they were read from.
#[derive(Debug, Clone, Default)]
pub struct KernelSymbols {
    text: String,
    symbols: Vec<Entry>,
    /// Module names, as ranges of `text`.
    modules: Vec<(u32, u16)>,
}

impl KernelSymbols {
    /// Parses kallsyms text (`ADDR TYPE NAME [MODULE]` lines); only text symbols (`t`,
    /// `T`, `w`, `W`) name code.
    pub fn parse(text: &str) -> KernelSymbols {
        KernelSymbols::from_text(text.to_string())
    }

    /// [`KernelSymbols::parse`], keeping `text`: one pass over its bytes, nothing
    /// allocated per symbol (the kernel's own list is over 100,000 lines, read on every
    /// report with kernel frames).
    fn from_text(text: String) -> KernelSymbols {
        let b = text.as_bytes();
        let mut symbols: Vec<Entry> = Vec::with_capacity(b.len() / 48);
        let mut modules: Vec<(u32, u16)> = Vec::new();
        let mut at = 0usize;
        let ends = memchr::memchr_iter(b'\n', b).chain(std::iter::once(b.len()));
        for line_end in ends {
            if at >= b.len() {
                break;
            }
            let line = &b[at..line_end];
            let line_at = at;
            at = line_end + 1;
            // The type is looked at first where the address has its usual 16 digits: a
            // third of the lines are data, skipped before anything else is read.
            if line.len() > 18 && line[16] == b' ' && !matches!(line[17], b't' | b'T' | b'w' | b'W')
            {
                continue;
            }
            // ADDR: hex digits up to the first space.
            let mut addr = 0u64;
            let mut i = 0;
            while let Some(d) = line.get(i).and_then(|&c| (c as char).to_digit(16)) {
                addr = addr.wrapping_shl(4) | u64::from(d);
                i += 1;
            }
            // ` T ` then the name.
            if i == 0 || i > 16 || line.get(i) != Some(&b' ') || line.get(i + 2) != Some(&b' ') {
                continue;
            }
            if !matches!(line[i + 1], b't' | b'T' | b'w' | b'W') {
                continue;
            }
            let name_at = i + 3;
            let name_end =
                memchr::memchr2(b'\t', b' ', &line[name_at..]).map_or(line.len(), |n| name_at + n);
            if name_end == name_at || name_end - name_at > usize::from(u16::MAX) {
                continue;
            }
            // `\t[MODULE]`: a module's symbols come together, its name kept once per run.
            let module = match line[name_end..]
                .iter()
                .position(|&c| c == b'[')
                .map(|o| name_end + o + 1)
            {
                Some(m_at) => {
                    let m_end = line[m_at..]
                        .iter()
                        .position(|&c| c == b']')
                        .map_or(line.len(), |o| m_at + o);
                    let m = &line[m_at..m_end];
                    let same = modules.last().is_some_and(|&(s, l)| {
                        b.get(s as usize..s as usize + usize::from(l)) == Some(m)
                    });
                    if !same {
                        if modules.len() >= usize::from(u16::MAX) || m.len() > usize::from(u16::MAX)
                        {
                            continue;
                        }
                        modules.push(((line_at + m_at) as u32, m.len() as u16));
                    }
                    (modules.len() - 1) as u16
                }
                None => u16::MAX,
            };
            let Ok(name) = u32::try_from(line_at + name_at) else {
                break;
            };
            symbols.push(Entry {
                addr,
                name,
                name_len: (name_end - name_at) as u16,
                module,
            });
        }
        // The kernel's list is in address order but for its modules: runs, which a
        // stable sort merges without reordering symbols at one address.
        symbols.sort_by_key(|s| s.addr);
        KernelSymbols {
            text,
            symbols,
            modules,
        }
    }

    fn str_at(&self, at: u32, len: u16) -> &str {
        let at = at as usize;
        self.text.get(at..at + usize::from(len)).unwrap_or_default()
    }

    fn symbol(&self, e: &Entry) -> KernelSymbol<'_> {
        KernelSymbol {
            addr: e.addr,
            name: self.str_at(e.name, e.name_len),
            module: self
                .modules
                .get(usize::from(e.module))
                .map(|&(at, len)| self.str_at(at, len)),
        }
    }

    /// This machine's /proc/kallsyms, read once per process and cached; kept for later
    /// processes of the same boot ([`lookup_running`]) when it is read whole.
    pub fn running() -> Result<&'static KernelSymbols, NoKernelNames> {
        static CACHE: OnceLock<Result<KernelSymbols, NoKernelNames>> = OnceLock::new();
        CACHE
            .get_or_init(|| {
                let modules = read_modules();
                let text = read_proc("/proc/kallsyms")
                    .map_err(|e| NoKernelNames::Unreadable(e.to_string()))?;
                let symbols = KernelSymbols::from_text(text);
                if symbols.symbols.is_empty() {
                    return Err(NoKernelNames::NoSymbols);
                }
                if symbols.symbols.iter().all(|s| s.addr == 0) {
                    return Err(NoKernelNames::Hidden);
                }
                // Kept only if no module came or went while it was read.
                if let Some(boot) = boot_id().filter(|_| read_modules() == modules) {
                    crate::cache::write_kallsyms(&boot, &modules, &symbols.text);
                }
                Ok(symbols)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The range of the symbols named `first`..`last` (the kernel's own text: `_stext` to
    /// `_etext`).
    fn span(&self, first: &str, last: &str) -> Option<std::ops::Range<u64>> {
        let at = |name: &str| {
            self.symbols
                .iter()
                .find(|e| e.module == u16::MAX && self.str_at(e.name, e.name_len) == name)
                .map(|e| e.addr)
        };
        let (start, end) = (at(first)?, at(last)?);
        (start < end).then_some(start..end)
    }

    /// The symbol at or before `addr` and the offset into it.
    pub fn lookup(&self, addr: u64) -> Option<(KernelSymbol<'_>, u64)> {
        let i = self.symbols.partition_point(|s| s.addr <= addr);
        let s = &self.symbols[i.checked_sub(1)?];
        Some((self.symbol(s), addr - s.addr))
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

/// The running kernel's names as a process of an earlier run of this boot read them:
/// /proc/kallsyms is tens of milliseconds for the kernel to print, most of a small
/// report with kernel frames, and perf pays it on every report too. They are trusted
/// only for addresses in the kernel's own text (`_stext`..`_etext`, fixed for the boot)
/// or in a module's, and only while /proc/modules reads as it did then (a module loaded
/// anew is elsewhere); anything else (BPF programs, ftrace trampolines, which come and
/// go) is looked up in a fresh read.
struct Kept {
    symbols: KernelSymbols,
    text: std::ops::Range<u64>,
    modules: Vec<std::ops::Range<u64>>,
}

impl Kept {
    fn load() -> Option<Kept> {
        let boot = boot_id()?;
        let modules = read_modules();
        // Addresses this process may see now (kptr_restrict can change): the head of the
        // live list says, at the cost of one small read.
        if !addresses_visible() {
            return None;
        }
        let text = crate::cache::read_kallsyms(&boot, &modules)?;
        Kept::of(KernelSymbols::from_text(text), &modules)
    }

    fn of(symbols: KernelSymbols, modules: &str) -> Option<Kept> {
        let text = symbols.span("_stext", "_etext")?;
        // `NAME SIZE REFS DEPS STATE ADDRESS ...`: each module's core text and data.
        let modules = modules
            .lines()
            .filter_map(|line| {
                let mut f = line.split_whitespace();
                let size: u64 = f.nth(1)?.parse().ok()?;
                let addr = u64::from_str_radix(f.nth(3)?.trim_start_matches("0x"), 16).ok()?;
                (addr != 0).then(|| addr..addr.saturating_add(size))
            })
            .collect();
        Some(Kept {
            symbols,
            text,
            modules,
        })
    }

    fn covers(&self, addr: u64) -> bool {
        self.text.contains(&addr) || self.modules.iter().any(|m| m.contains(&addr))
    }
}

/// The running kernel's name for `addr` and the offset into it: from the names kept for
/// this boot where they cover it ([`Kept`]), else from /proc/kallsyms read now.
pub fn lookup_running(addr: u64) -> Result<Option<(KernelSymbol<'static>, u64)>, NoKernelNames> {
    if let Some(kept) = kept().filter(|k| k.covers(addr)) {
        return Ok(kept.symbols.lookup(addr));
    }
    Ok(KernelSymbols::running()?.lookup(addr))
}

/// Gets the running kernel's names ready (kept ones, else a fresh read), to be called on
/// a thread of its own while a capture's records are decoded.
pub fn prepare_running() {
    if kept().is_none() {
        let _ = KernelSymbols::running();
    }
}

fn kept() -> Option<&'static Kept> {
    static KEPT: OnceLock<Option<Kept>> = OnceLock::new();
    KEPT.get_or_init(Kept::load).as_ref()
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`).
fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-'))
        .then(|| id.to_string())
}

/// /proc/modules (empty without module support).
fn read_modules() -> String {
    read_proc("/proc/modules").unwrap_or_default()
}

/// Whether the first lines of /proc/kallsyms show this process real addresses.
fn addresses_visible() -> bool {
    use std::io::Read;
    let mut head = [0u8; 4096];
    let n = std::fs::File::open("/proc/kallsyms")
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    head[..n]
        .split(|&b| b == b'\n')
        .filter_map(|l| l.split(|&b| b == b' ').next())
        .filter(|a| a.len() >= 8)
        .any(|a| a.iter().any(|&b| b != b'0'))
}

/// A /proc file (whose size reads as 0) in large reads into a buffer sized for it: the
/// kernel prints as much as each read asks (up to its own buffer's size: reading straight
/// into a zeroed tail of the result cost more in zeroing than the copy saves).
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
        assert_eq!((s.name, off, s.module), ("do_thing", 0x23, None));
        let (s, _) = k.lookup(0xffffffffc0201004).unwrap();
        assert_eq!((s.name, s.module), ("ext4_read", Some("ext4")));
        assert!(k.lookup(0x1000).is_none());
    }

    #[test]
    fn kallsyms_lines_odd_and_out_of_order() {
        // Module symbols below the kernel's, two runs of one module, aliases at one
        // address (the last listed wins, as before), lines that are not symbols, a
        // symbol with no module after a module's, no newline at the end.
        let k = KernelSymbols::parse(
            "ffffffff81000000 T _stext\n\
             ffffffff81000010 T alias_a\n\
             ffffffff81000010 t alias_b\n\
             garbage line\n\
             \n\
             zzzz T not_hex\n\
             ffffffffc0001000 t nf_hook\t[nf_tables]\n\
             ffffffffa0000000 t early_mod\t[virtio]\n\
             ffffffffc0001100 t nf_more\t[nf_tables]\n\
             ffffffffc0002000 t bpf_prog_1234_x\t[bpf]\n\
             ffffffff81000500 T late_core",
        );
        assert_eq!(k.len(), 8);
        let name = |a: u64| k.lookup(a).map(|(s, off)| (s.name, s.module, off));
        assert_eq!(name(0xffffffff81000011), Some(("alias_b", None, 1)));
        assert_eq!(
            name(0xffffffffa0000004),
            Some(("early_mod", Some("virtio"), 4))
        );
        assert_eq!(
            name(0xffffffffc0001104),
            Some(("nf_more", Some("nf_tables"), 4))
        );
        assert_eq!(
            name(0xffffffffc0002000),
            Some(("bpf_prog_1234_x", Some("bpf"), 0))
        );
        assert_eq!(name(0xffffffff81000600), Some(("late_core", None, 0x100)));
        assert!(KernelSymbols::parse("").is_empty());
    }

    #[test]
    fn kept_names_cover_the_kernel_text_and_modules_only() {
        let k = KernelSymbols::parse(
            "ffffffff81000000 T _stext\n\
             ffffffff81000100 t do_thing\n\
             ffffffff8220bb08 T _etext\n\
             ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]\n\
             ffffffffc0a1b000 t ext4_read\t[ext4]\n",
        );
        let modules = "ext4 1044480 1 - Live 0xffffffffc0a1b000\n\
                       hidden 4096 0 - Live 0x0000000000000000\n";
        let kept = Kept::of(k, modules).unwrap();
        assert!(kept.covers(0xffffffff81000123));
        assert!(kept.covers(0xffffffffc0a1b000 + 1044479));
        // A trampoline or a BPF program is looked up afresh; so is data past _etext.
        assert!(!kept.covers(0xffffffffc0201004));
        assert!(!kept.covers(0xffffffffc0a1b000 + 1044480));
        assert!(!kept.covers(0xffffffff8220bb08));
        assert_eq!(kept.modules.len(), 1, "a module shown at 0 places nothing");
        // Without the kernel text's bounds nothing is kept.
        assert!(Kept::of(KernelSymbols::parse("ffffffff81000100 t a\n"), "").is_none());
    }

    #[test]
    fn every_text_symbol_of_this_kernel_is_found_at_its_address() {
        // The running kernel's list, where it is readable with addresses.
        let Ok(text) = std::fs::read_to_string("/proc/kallsyms") else {
            eprintln!("note: /proc/kallsyms unreadable here: checked on the sample above only");
            return;
        };
        let k = KernelSymbols::parse(&text);
        let mut checked = 0;
        for line in text.lines() {
            let mut parts = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            if addr == 0 || !matches!(kind, "t" | "T" | "w" | "W") {
                continue;
            }
            let (s, off) = k.lookup(addr).unwrap();
            assert_eq!((s.addr, off), (addr, 0), "{line}");
            let module = parts
                .next()
                .map(|m| m.trim_matches(|c| c == '[' || c == ']'));
            // An alias listed later at the same address is the one named.
            if k.lookup(addr + 1).map(|(s, _)| s.name) == Some(name) {
                assert_eq!(s.module, module, "{line}");
            }
            checked += 1;
        }
        // Without the privilege to see addresses, every one reads 0 and none is checked.
        assert_eq!(checked, k.symbols.iter().filter(|s| s.addr != 0).count());
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
