//! sparkles-symbolize: the address-space model (which module is mapped where, and when),
//! module loading (ELF, build ids, debug links and directories), DWARF symbolization with
//! inlined frames, demangling and the caches they share.
//!
//! Present so far: [`Module`] (an ELF file's DWARF and symbol table through the addr2line
//! crate's loader, which follows `.gnu_debuglink`, split DWARF and compressed sections)
//! and [`binutils`], the output format of `sparkles addr2line`.

pub mod address_space;
pub mod binutils;
pub mod demangle;

use std::path::{Path, PathBuf};

/// Why a module could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SymbolizeError {
    /// The file could not be read or parsed.
    #[error("{}: {message}", path.display())]
    Load {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// One frame of an address: the innermost first, each inlined call a frame of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The function's name as stored (linkage name where DWARF has one).
    pub function: Option<String>,
    /// The function's name demangled (Rust legacy and v0, C++).
    pub demangled: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Line (0 or absent when unknown).
    pub line: Option<u32>,
    /// Whether this frame was inlined into the next one.
    pub inlined: bool,
    /// The line row's discriminator, for the innermost frame, where nonzero.
    pub discriminator: Option<u32>,
}

/// A function symbol of the ELF symbol table, with the source file the table names for it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SymbolEntry {
    start: u64,
    end: u64,
    name: String,
    /// The STT_FILE symbol that precedes it in the table, as binutils reports it.
    file: Option<String>,
    /// End of the section holding it: binutils names addresses past a symbol's end by the
    /// nearest symbol before them, but not across sections.
    section_end: u64,
    /// Size recorded in the table (0 for a marker).
    size: u64,
    /// STB_WEAK.
    weak: bool,
    /// STB_GLOBAL.
    global: bool,
}

impl SymbolEntry {
    /// perf's `choose_best_symbol` among aliases at one address: sized over unsized,
    /// strong over weak, global over local, fewer leading underscores, longer name.
    fn better_alias_than(&self, other: &SymbolEntry) -> bool {
        let underscores = |n: &str| n.bytes().take_while(|&b| b == b'_').count();
        let key = |s: &SymbolEntry| {
            (
                s.size > 0,
                !s.weak,
                s.global,
                std::cmp::Reverse(underscores(&s.name)),
                s.name.len(),
            )
        };
        key(self) > key(other)
    }
}

/// An ELF module's symbolization data.
pub struct Module {
    loader: addr2line::Loader,
    path: PathBuf,
    symbols: Vec<SymbolEntry>,
    /// `(start, end, discriminator)` of line rows with a nonzero discriminator, sorted.
    discriminators: Vec<(u64, u64, u32)>,
    /// PT_LOAD segments.
    segments: Vec<Segment>,
    /// What the names come from.
    debug_info: DebugInfo,
}

/// Where a module's names and lines come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DebugInfo {
    /// DWARF in the file itself (compressed sections included).
    Dwarf,
    /// DWARF in the file its `.gnu_debuglink` names.
    DebugLink,
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
            DebugInfo::Dwarf | DebugInfo::DebugLink => None,
            DebugInfo::SymtabOnly => Some("binary has no debug info: symbols from .symtab only"),
            DebugInfo::DynsymOnly => Some("binary is stripped: names from .dynsym only"),
            DebugInfo::Missing => Some("binary has no symbols and no debug info"),
        }
    }
}

fn debug_info_of(file: &object::File<'_>) -> DebugInfo {
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

/// The file `.gnu_debuglink` names, where gdb looks for it: beside the file, in `.debug/`
/// beside it, and under /usr/lib/debug.
fn debug_link(path: &Path, file: &object::File<'_>) -> Option<PathBuf> {
    use object::Object;
    let (name, _crc) = file.gnu_debuglink().ok().flatten()?;
    let name = std::str::from_utf8(name).ok()?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    [
        dir.join(name),
        dir.join(".debug").join(name),
        Path::new("/usr/lib/debug")
            .join(abs.strip_prefix("/").unwrap_or(&abs))
            .join(name),
    ]
    .into_iter()
    .find(|p| p.is_file() && p != path)
}

/// One PT_LOAD segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    offset: u64,
    vaddr: u64,
    filesz: u64,
    executable: bool,
}

fn read_segments(file: &object::File<'_>) -> Vec<Segment> {
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
                        executable: ph.p_flags(endian) & object::elf::PF_X != 0,
                    });
                }
            }
        }
        _ => {}
    }
    out
}

/// Address ranges of line-table rows with a nonzero discriminator (binutils prints them;
/// the addr2line crate's locations do not carry them).
fn read_discriminators(file: &object::File<'_>) -> Vec<(u64, u64, u32)> {
    use object::{Object, ObjectSection};
    let load = |id: gimli::SectionId| -> Result<std::borrow::Cow<'_, [u8]>, gimli::Error> {
        Ok(file
            .section_by_name(id.name())
            .and_then(|s| s.uncompressed_data().ok())
            .unwrap_or(std::borrow::Cow::Borrowed(&[])))
    };
    let Ok(sections) = gimli::DwarfSections::load(load) else {
        return Vec::new();
    };
    let dwarf = sections.borrow(|s| gimli::EndianSlice::new(s, gimli::RunTimeEndian::Little));
    let mut out = Vec::new();
    let mut units = dwarf.units();
    while let Ok(Some(header)) = units.next() {
        let Ok(unit) = dwarf.unit(header) else {
            continue;
        };
        let Some(program) = unit.line_program.clone() else {
            continue;
        };
        let mut rows = program.rows();
        let mut previous: Option<(u64, u32)> = None;
        while let Ok(Some((_, row))) = rows.next_row() {
            if let Some((start, disc)) = previous {
                if disc != 0 && row.address() > start {
                    out.push((start, row.address(), disc));
                }
            }
            previous = (!row.end_sequence()).then(|| (row.address(), row.discriminator() as u32));
        }
    }
    out.sort_unstable();
    out
}

fn read_symbols(file: &object::File<'_>) -> Vec<SymbolEntry> {
    use object::{Object, ObjectSection, ObjectSymbol, SymbolKind, SymbolSection};
    let mut out = Vec::new();
    let mut current_file: Option<String> = None;
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
                    .map(str::to_string)
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
                    });
                }
            }
            _ => {}
        }
    }
    out.sort_by_key(|s| (s.start, std::cmp::Reverse(s.end)));
    out
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module").field("path", &self.path).finish()
    }
}

impl Module {
    /// Loads `path` (and its debug link, split DWARF or compressed sections).
    pub fn open(path: impl AsRef<Path>) -> Result<Module, SymbolizeError> {
        let path = path.as_ref();

        // The symbol table and line-row discriminators come from one map of the file.
        let map = |p: &Path| {
            std::fs::File::open(p)
                .ok()
                // SAFETY: a read-only map; a file truncated under us can fault, as with
                // every mmap-based reader.
                .and_then(|f| unsafe { memmap2::Mmap::map(&f) }.ok())
        };
        let mut debug_info = DebugInfo::Missing;
        let (mut symbols, mut discriminators, segments, link) = map(path)
            .and_then(|m| {
                let file = object::File::parse(&*m).ok()?;
                debug_info = debug_info_of(&file);
                Some((
                    read_symbols(&file),
                    read_discriminators(&file),
                    read_segments(&file),
                    debug_link(path, &file),
                ))
            })
            .unwrap_or_default();
        // A .gnu_debuglink file holds what strip took: the full symbol table and the line
        // tables (the addr2line loader follows the same link for DWARF).
        if let Some(m) = link
            .as_deref()
            .filter(|_| debug_info != DebugInfo::Dwarf)
            .and_then(map)
        {
            if let Ok(file) = object::File::parse(&*m) {
                if debug_info != DebugInfo::Dwarf && debug_info_of(&file) == DebugInfo::Dwarf {
                    debug_info = DebugInfo::DebugLink;
                }
                let linked = read_symbols(&file);
                if linked.len() > symbols.len() {
                    symbols = linked;
                }
                if discriminators.is_empty() {
                    discriminators = read_discriminators(&file);
                }
            }
        }
        // DWARF from the file itself, else from the file its debug link names.
        let dwarf_path = match (&debug_info, &link) {
            (DebugInfo::DebugLink, Some(l)) => l.as_path(),
            _ => path,
        };
        let loader = addr2line::Loader::new(dwarf_path).map_err(|e| SymbolizeError::Load {
            path: dwarf_path.to_path_buf(),
            message: e.to_string(),
        })?;
        Ok(Module {
            loader,
            path: path.to_path_buf(),
            symbols,
            discriminators,
            segments,
            debug_info,
        })
    }

    /// The ELF virtual address of file offset `offset`: through the load segment holding
    /// it, chosen by page-aligned offset, the executable one first (Rust binaries built
    /// here have segments whose vaddr differs from their file offset).
    pub fn vaddr_of(&self, offset: u64) -> Option<u64> {
        let page = 4096u64;
        let hit = |s: &&Segment| {
            let start = s.offset & !(page - 1);
            start <= offset && offset < s.offset + s.filesz.max(1)
        };
        self.segments
            .iter()
            .filter(hit)
            .max_by_key(|s| s.executable)
            .map(|s| offset.wrapping_sub(s.offset).wrapping_add(s.vaddr))
    }

    /// Where its names and lines come from.
    pub fn debug_info(&self) -> DebugInfo {
        self.debug_info
    }

    /// The file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The function symbol covering `addr` (the innermost where several do), else, as
    /// binutils does, the nearest one before it.
    fn symbol_at(&self, addr: u64) -> Option<&SymbolEntry> {
        let i = self.symbols.partition_point(|s| s.start <= addr);
        let before = &self.symbols[..i];
        let found = before
            .iter()
            .rev()
            .take(64)
            .find(|s| addr < s.end)
            .or_else(|| before.last().filter(|s| addr < s.section_end))?;
        if addr >= found.end {
            // Past every symbol's end: the nearest one before, as binutils names it.
            return Some(found);
        }
        // Aliases at the same address: the one perf would name.
        before
            .iter()
            .rev()
            .take(64)
            .filter(|s| s.start == found.start && addr < s.end)
            .fold(None, |best: Option<&SymbolEntry>, s| match best {
                Some(b) if !s.better_alias_than(b) => Some(b),
                _ => Some(s),
            })
    }

    /// The frames at `addr` (an address in the module's ELF vaddr space), innermost
    /// first; the symbol table's name when DWARF has none.
    pub fn frames(&self, addr: u64) -> Vec<Frame> {
        let mut out = Vec::new();
        if let Ok(mut frames) = self.loader.find_frames(addr) {
            while let Ok(Some(frame)) = frames.next() {
                let function = frame
                    .function
                    .as_ref()
                    .and_then(|f| f.raw_name().ok().map(|n| n.into_owned()));
                let demangled = function
                    .as_deref()
                    .map(|n| demangle::demangle(n).into_owned());
                out.push(Frame {
                    function,
                    demangled,
                    file: frame
                        .location
                        .as_ref()
                        .and_then(|l| l.file.map(str::to_string)),
                    line: frame.location.as_ref().and_then(|l| l.line),
                    inlined: true,
                    discriminator: None,
                });
            }
        }
        if let Some(first) = out.first_mut() {
            let i = self.discriminators.partition_point(|d| d.0 <= addr);
            first.discriminator = i
                .checked_sub(1)
                .map(|i| self.discriminators[i])
                .filter(|d| addr < d.1)
                .map(|d| d.2);
        }
        if let Some(last) = out.last_mut() {
            last.inlined = false;
            // Like binutils: a DWARF name that is not a linkage name (no namespace, no
            // template arguments of the instance) gives way, for the containing function,
            // to the symbol table's name for the address.
            let linkage = last
                .function
                .as_deref()
                .is_some_and(|n| n.starts_with("_Z") || n.starts_with("_R"));
            if !linkage {
                // binutils takes the symbol only when it starts where the DWARF function
                // does; a GCC `.cold` part is a symbol inside a function that starts
                // elsewhere, so the DWARF name stays.
                if let Some(sym) = self.symbol_at(addr).filter(|s| !s.name.contains(".cold")) {
                    last.demangled = Some(demangle::demangle(&sym.name).into_owned());
                    last.function = Some(sym.name.clone());
                }
            }
        }
        if out.is_empty() || out.iter().all(|f| f.function.is_none()) {
            if let Some(sym) = self.symbol_at(addr) {
                let name = sym.name.as_str();
                let demangled = demangle::demangle(name).into_owned();
                match out.last_mut() {
                    Some(f) => {
                        f.function = Some(name.to_string());
                        f.demangled = Some(demangled);
                    }
                    None => out.push(Frame {
                        function: Some(name.to_string()),
                        demangled: Some(demangled),
                        // binutils names the file the symbol table gives, with no line.
                        file: sym.file.clone(),
                        line: None,
                        inlined: false,
                        discriminator: None,
                    }),
                }
            }
        }
        out
    }
}
