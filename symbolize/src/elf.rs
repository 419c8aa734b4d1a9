//! What is read from an ELF file's tables: function and data symbols, load segments,
//! the build id, where its names and lines come from; and the file's bytes, mapped once
//! or read from memory.

use std::path::Path;
use std::sync::Arc;

use crate::demangle;

/// A module file's bytes: the file mapped read-only, or an image read from memory (the
/// vDSO). Shared by every reader of the module (DWARF, the unwinder).
#[derive(Debug)]
pub enum FileBytes {
    /// A read-only map of the file.
    Mapped(memmap2::Mmap),
    /// Bytes in memory.
    Owned(Box<[u8]>),
}

impl AsRef<[u8]> for FileBytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(m) => m,
            FileBytes::Owned(b) => b,
        }
    }
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_ref()
    }
}

/// A read-only map of a file (an empty file is empty bytes: it cannot be mapped).
pub(crate) fn map_file(path: &Path) -> std::io::Result<Arc<FileBytes>> {
    let f = std::fs::File::open(path)?;
    if f.metadata()?.len() == 0 {
        return Ok(Arc::new(FileBytes::Owned(Box::default())));
    }
    // SAFETY: a read-only map; a file truncated under us can fault, as with every
    // mmap-based reader.
    Ok(Arc::new(FileBytes::Mapped(unsafe {
        memmap2::Mmap::map(&f)
    }?)))
}

pub(crate) fn build_id_of(file: &object::File<'_>) -> Option<Vec<u8>> {
    use object::Object;
    file.build_id().ok().flatten().map(<[u8]>::to_vec)
}

/// A function symbol of the ELF symbol table, with the source file the table names for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SymbolEntry {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) name: String,
    /// The STT_FILE symbol that precedes it in the table, as binutils reports it.
    pub(crate) file: Option<std::sync::Arc<str>>,
    /// End of the section holding it: binutils names addresses past a symbol's end by the
    /// nearest symbol before them, but not across sections.
    pub(crate) section_end: u64,
    /// Size recorded in the table (0 for a marker).
    pub(crate) size: u64,
    /// STB_WEAK.
    pub(crate) weak: bool,
    /// STB_GLOBAL.
    pub(crate) global: bool,
    /// The table named it with a symbol version (`cfree@GLIBC_2.2.5`,
    /// `memcpy@@GLIBC_2.14`); `name` has it only where another symbol differs by it alone.
    pub(crate) versioned: bool,
}

impl SymbolEntry {
    /// perf's `choose_best_symbol` among aliases at one address: sized over unsized,
    /// strong over weak, global over local, fewer leading underscores; then a name the
    /// table gave without a version over one it gave with (`free` over `cfree@GLIBC_2.2.5`,
    /// glibc's compatibility alias of it), then the longer name.
    pub(crate) fn better_alias_than(&self, other: &SymbolEntry) -> bool {
        let underscores = |n: &str| n.bytes().take_while(|&b| b == b'_').count();
        let key = |s: &SymbolEntry| {
            (
                s.size > 0,
                !s.weak,
                s.global,
                std::cmp::Reverse(underscores(&s.name)),
                !s.versioned,
                s.name.len(),
            )
        };
        key(self) > key(other)
    }
}

/// `name@VERSION` or `name@@VERSION` split at its first `@`: the name and whether it had
/// a version.
fn split_version(name: &str) -> (&str, bool) {
    match name.find('@') {
        Some(at) if at > 0 => (&name[..at], true),
        _ => (name, false),
    }
}

/// Symbol versions taken off names (as users name the functions), except where two
/// symbols at different addresses differ by the version alone (`memcpy@GLIBC_2.2.5`, the
/// old memmove-like one, and `memcpy@@GLIBC_2.14`): those keep it. `entries` is
/// `(name, start)`; each name is rewritten in place.
fn unversion(entries: &mut [(&mut String, u64)]) {
    // Only names a versioned name shares its base with can make it ambiguous: most files
    // (every Rust binary) have no versioned names at all.
    let mut starts: rustc_hash::FxHashMap<String, Vec<u64>> = entries
        .iter()
        .filter(|(name, _)| split_version(name).1)
        .map(|(name, _)| (split_version(name).0.to_string(), Vec::new()))
        .collect();
    if starts.is_empty() {
        return;
    }
    for (name, start) in entries.iter() {
        if let Some(list) = starts.get_mut(split_version(name).0) {
            if !list.contains(start) {
                list.push(*start);
            }
        }
    }
    for (name, _) in entries.iter_mut() {
        let (base, versioned) = split_version(name);
        if versioned && starts.get(base).is_some_and(|s| s.len() == 1) {
            let base = base.to_string();
            **name = base;
        }
    }
}

/// Where a module's names and lines come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DebugInfo {
    /// DWARF in the file itself (compressed sections included).
    Dwarf,
    /// DWARF in the file its `.gnu_debuglink` names.
    DebugLink,
    /// DWARF in a debug directory's `.build-id/xx/rest.debug` for its build id.
    BuildIdDebugFile,
    /// No DWARF: names from `.symtab`, no lines.
    SymtabOnly,
    /// Stripped: names from `.dynsym` only.
    DynsymOnly,
    /// Nothing to name with.
    #[default]
    Missing,
}

impl DebugInfo {
    /// What a user should be told about it, or `None` when all is there.
    pub fn reason(self) -> Option<&'static str> {
        match self {
            DebugInfo::Dwarf | DebugInfo::DebugLink | DebugInfo::BuildIdDebugFile => None,
            DebugInfo::SymtabOnly => Some("binary has no debug info: symbols from .symtab only"),
            DebugInfo::DynsymOnly => Some("binary is stripped: names from .dynsym only"),
            DebugInfo::Missing => Some("binary has no symbols and no debug info"),
        }
    }
}

pub(crate) fn debug_info_of(file: &object::File<'_>) -> DebugInfo {
    use object::Object;
    if file.section_by_name(".debug_info").is_some()
        || file.section_by_name(".zdebug_info").is_some()
    {
        DebugInfo::Dwarf
    } else if file.symbols().next().is_some() {
        DebugInfo::SymtabOnly
    } else if file.dynamic_symbols().next().is_some() {
        DebugInfo::DynsymOnly
    } else {
        DebugInfo::Missing
    }
}

/// One PT_LOAD segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment {
    pub(crate) offset: u64,
    pub(crate) vaddr: u64,
    pub(crate) filesz: u64,
    /// Size in memory (`.bss` is the part past `filesz`).
    pub(crate) memsz: u64,
    pub(crate) executable: bool,
}

pub(crate) fn read_segments(file: &object::File<'_>) -> Vec<Segment> {
    use object::read::elf::ProgramHeader;
    let mut out = Vec::new();
    match file {
        object::File::Elf64(elf) => {
            let endian = elf.endian();
            for ph in elf.elf_program_headers() {
                if ph.p_type(endian) == object::elf::PT_LOAD {
                    out.push(Segment {
                        offset: ph.p_offset(endian),
                        vaddr: ph.p_vaddr(endian),
                        filesz: ph.p_filesz(endian),
                        memsz: ph.p_memsz(endian),
                        executable: ph.p_flags(endian) & object::elf::PF_X != 0,
                    });
                }
            }
        }
        object::File::Elf32(elf) => {
            let endian = elf.endian();
            for ph in elf.elf_program_headers() {
                if ph.p_type(endian) == object::elf::PT_LOAD {
                    out.push(Segment {
                        offset: u64::from(ph.p_offset(endian)),
                        vaddr: u64::from(ph.p_vaddr(endian)),
                        filesz: u64::from(ph.p_filesz(endian)),
                        memsz: u64::from(ph.p_memsz(endian)),
                        executable: ph.p_flags(endian) & object::elf::PF_X != 0,
                    });
                }
            }
        }
        _ => {}
    }
    out
}

/// A variable: an ELF data symbol (`STT_OBJECT`) in an allocated, non-executable
/// section (`.data`, `.bss`, `.rodata`, `.data.rel.ro`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataSymbol {
    /// Its address (module vaddr).
    pub start: u64,
    /// Its size in bytes (0 where the table gives none).
    pub size: u64,
    /// Its name, demangled.
    pub name: Arc<str>,
    /// The section holding it.
    pub section: Arc<str>,
}

/// The data symbols of a file, sorted by address (thread-local ones left out: their
/// addresses are offsets into each thread's block, not module addresses).
pub(crate) fn read_data_symbols(file: &object::File<'_>) -> Vec<DataSymbol> {
    use object::{Object, ObjectSection, ObjectSymbol, SectionFlags, SymbolKind, SymbolSection};
    let table: Vec<object::Symbol<'_, '_>> = if file.symbols().next().is_some() {
        file.symbols().collect()
    } else {
        file.dynamic_symbols().collect()
    };
    let mut sections: std::collections::HashMap<object::SectionIndex, Option<Arc<str>>> =
        std::collections::HashMap::new();
    let mut found: Vec<(String, u64, u64, Arc<str>)> = Vec::new();
    for sym in table {
        if sym.kind() != SymbolKind::Data || sym.address() == 0 {
            continue;
        }
        let SymbolSection::Section(index) = sym.section() else {
            continue;
        };
        let section = sections
            .entry(index)
            .or_insert_with(|| {
                let sec = file.section_by_index(index).ok()?;
                let flags = match sec.flags() {
                    SectionFlags::Elf { sh_flags } => sh_flags,
                    _ => 0,
                };
                let alloc = flags & u64::from(object::elf::SHF_ALLOC) != 0;
                let exec = flags & u64::from(object::elf::SHF_EXECINSTR) != 0;
                let tls = flags & u64::from(object::elf::SHF_TLS) != 0;
                (alloc && !exec && !tls).then(|| Arc::from(sec.name().unwrap_or("?")))
            })
            .clone();
        let (Some(section), Ok(name)) = (section, sym.name()) else {
            continue;
        };
        found.push((name.to_string(), sym.address(), sym.size(), section));
    }
    let mut names: Vec<(&mut String, u64)> = found.iter_mut().map(|f| (&mut f.0, f.1)).collect();
    unversion(&mut names);
    let mut out: Vec<DataSymbol> = found
        .into_iter()
        .map(|(name, start, size, section)| DataSymbol {
            start,
            size,
            name: Arc::from(demangle::demangle(&name).as_ref()),
            section,
        })
        .collect();
    out.sort_by(|a, b| a.start.cmp(&b.start).then(b.size.cmp(&a.size)));
    out.dedup_by(|b, a| a.start == b.start);
    out
}

pub(crate) fn read_symbols(file: &object::File<'_>) -> Vec<SymbolEntry> {
    use object::{Object, ObjectSection, ObjectSymbol, SymbolKind, SymbolSection};
    let mut out = Vec::new();
    let mut current_file: Option<std::sync::Arc<str>> = None;
    // A stripped file keeps only .dynsym: names from there.
    let table: Vec<object::Symbol<'_, '_>> = if file.symbols().next().is_some() {
        file.symbols().collect()
    } else {
        file.dynamic_symbols().collect()
    };
    for sym in table {
        match sym.kind() {
            SymbolKind::File => {
                current_file = sym
                    .name()
                    .ok()
                    .filter(|n| !n.is_empty())
                    .map(std::sync::Arc::from)
            }
            SymbolKind::Text if sym.address() != 0 => {
                if let Ok(name) = sym.name() {
                    let section_end = match sym.section() {
                        SymbolSection::Section(index) => file
                            .section_by_index(index)
                            .map(|sec| sec.address() + sec.size())
                            .unwrap_or(0),
                        _ => 0,
                    };
                    out.push(SymbolEntry {
                        start: sym.address(),
                        end: sym.address() + sym.size().max(1),
                        name: name.to_string(),
                        file: current_file.clone(),
                        section_end,
                        size: sym.size(),
                        weak: sym.is_weak(),
                        global: sym.is_global(),
                        versioned: split_version(name).1,
                    });
                }
            }
            _ => {}
        }
    }
    let mut names: Vec<(&mut String, u64)> =
        out.iter_mut().map(|s| (&mut s.name, s.start)).collect();
    unversion(&mut names);
    let named: std::collections::HashSet<u64> = out.iter().map(|s| s.start).collect();
    out.extend(
        plt_symbols(file)
            .into_iter()
            .filter(|p| !named.contains(&p.start)),
    );
    out.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    out
}

/// One PLT entry's size on x86-64, and of `.plt`'s first entry (the resolver's, PLT0).
const X86_64_PLT_ENTRY: u64 = 16;

/// The PLT's entries named as perf and objdump name them (`puts@plt`), which no symbol
/// table lists: on x86-64, the i-th `R_X86_64_JUMP_SLOT` relocation of `.rela.plt` is
/// the i-th entry of `.plt.sec` where the file has one (IBT), else of `.plt` after its
/// first, and names the dynamic symbol it binds. Nothing for other machines, or where
/// the sections' contents are not in this file (a separate debug file).
fn plt_symbols(file: &object::File<'_>) -> Vec<SymbolEntry> {
    use object::{Object, ObjectSection, ObjectSymbol};
    const R_X86_64_JUMP_SLOT: u64 = 7;
    if file.architecture() != object::Architecture::X86_64 || !file.is_little_endian() {
        return Vec::new();
    }
    let Some(rela) = file
        .section_by_name(".rela.plt")
        .and_then(|s| s.data().ok())
        .filter(|d| !d.is_empty())
    else {
        return Vec::new();
    };
    let (plt, first) = match file.section_by_name(".plt.sec") {
        Some(sec) => (sec, 0),
        None => match file.section_by_name(".plt") {
            Some(sec) => (sec, X86_64_PLT_ENTRY),
            None => return Vec::new(),
        },
    };
    if plt.kind() != object::SectionKind::Text {
        return Vec::new();
    }
    let names: std::collections::HashMap<usize, String> = file
        .dynamic_symbols()
        .filter_map(|s| Some((s.index().0, split_version(s.name().ok()?).0.to_string())))
        .collect();
    let section_end = plt.address() + plt.size();
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
    rela.chunks_exact(24)
        .filter(|r| word(&r[8..16]) & 0xffff_ffff == R_X86_64_JUMP_SLOT)
        .enumerate()
        .filter_map(|(i, r)| {
            let name = names.get(&((word(&r[8..16]) >> 32) as usize))?;
            let start = plt.address() + first + i as u64 * X86_64_PLT_ENTRY;
            (start + X86_64_PLT_ENTRY <= section_end).then(|| SymbolEntry {
                start,
                end: start + X86_64_PLT_ENTRY,
                name: format!("{name}@plt"),
                file: None,
                section_end,
                size: X86_64_PLT_ENTRY,
                weak: false,
                global: false,
                versioned: false,
            })
        })
        .collect()
}
