//! sparkles-symbolize: the address-space model (which module is mapped where, and when),
//! module loading (ELF, build ids, debug links and directories), DWARF symbolization with
//! inlined frames, demangling and the caches they share.
//!
//! - [`Module`]: one ELF file's symbol tables, segments and DWARF (through the addr2line
//!   crate), its separate debug file found by `.gnu_debuglink` or build id, split DWARF
//!   and compressed sections; [`Module::frames`] names an address, innermost frame first.
//! - [`symbolizer::Symbolizer`]: a capture's address-space model fed in time order,
//!   modules loaded once per build id and checked against the capture's, kernel names
//!   only for the running kernel, the vDSO, JIT perf maps, and cached, batched naming.
//! - [`search::SearchPaths`]: `--symfs`, debug directories, perf's build-id cache.
//! - [`demangle`]: Rust legacy and v0, C++ by GNU's demangler where present.
//! - [`binutils`]: the output format of `sparkles addr2line`.

pub mod address_space;
pub mod binutils;
pub mod demangle;
pub mod kernel;
pub mod perf_map;
pub mod search;
pub mod symbolizer;
pub mod vdso;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use search::SearchPaths;

/// A module's file bytes, shared with whoever else reads them (the unwinder): a mapped
/// file, or an image read from memory.
pub type Image = Arc<dyn AsRef<[u8]> + Send + Sync>;

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
    /// The line row's discriminator, for the innermost frame, where nonzero: filled by
    /// [`binutils::frames`] only ([`Module::discriminator`] reads it).
    pub discriminator: Option<u32>,
    /// The address's offset from the symbol's start, when the name comes from a symbol
    /// table (ELF, kallsyms, a perf map) and not from DWARF.
    pub symbol_offset: Option<u64>,
}

impl Frame {
    /// A frame named only by a symbol table: `name+offset`, no line.
    pub fn from_symbol(name: &str, offset: u64, file: Option<String>) -> Frame {
        Frame {
            function: Some(name.to_string()),
            demangled: Some(demangle::demangle(name).into_owned()),
            file,
            line: None,
            inlined: false,
            discriminator: None,
            symbol_offset: Some(offset),
        }
    }
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

/// A module's line-row discriminators, read on first use; `Send` and `Sync`.
#[derive(Debug, Clone)]
pub struct Discriminators(Arc<Tables>);

impl Discriminators {
    /// The discriminator of the line row holding `addr`, where nonzero (see
    /// [`Module::discriminator`]).
    pub fn get(&self, addr: u64) -> Option<u32> {
        let tables = &self.0;
        let table = tables.discriminators.get_or_init(|| {
            map_file(&tables.dwarf_path)
                .ok()
                .and_then(|m| {
                    object::File::parse(&*m)
                        .ok()
                        .map(|f| read_discriminators(&f))
                })
                .unwrap_or_default()
        });
        let i = table.partition_point(|d| d.0 <= addr);
        i.checked_sub(1)
            .map(|i| table[i])
            .filter(|d| addr < d.1)
            .map(|d| d.2)
    }
}

/// An ELF module's symbolization data: its tables, shared by every worker that names
/// addresses in it, and this worker's DWARF reader.
pub struct Module {
    loader: addr2line::Loader,
    tables: Arc<Tables>,
}

/// What is read once per module and shared.
#[derive(Debug)]
struct Tables {
    /// The file loaded.
    path: PathBuf,
    /// Its bytes, mapped once and shared with the unwinder (`.eh_frame`, `.text`).
    image: Arc<memmap2::Mmap>,
    /// The file DWARF is read from (the module itself or its separate debug file).
    dwarf_path: PathBuf,
    /// The module's GNU build id.
    build_id: Option<Arc<[u8]>>,
    symbols: Vec<SymbolEntry>,
    /// `(start, end, discriminator)` of line rows with a nonzero discriminator, sorted:
    /// read from every line program on first use (only binutils's format prints them).
    discriminators: std::sync::OnceLock<Vec<(u64, u64, u32)>>,
    /// Data symbols (variables), sorted by address: read on first use.
    data_symbols: std::sync::OnceLock<Vec<DataSymbol>>,
    /// PT_LOAD segments.
    segments: Vec<Segment>,
    /// What the names come from.
    debug_info: DebugInfo,
    /// A file written for an in-memory image (the vDSO), removed when the last reader
    /// goes.
    _image: Option<tempfile::TempPath>,
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

/// One PT_LOAD segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    offset: u64,
    vaddr: u64,
    filesz: u64,
    /// Size in memory (`.bss` is the part past `filesz`).
    memsz: u64,
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

/// Address ranges of line-table rows with a nonzero discriminator (binutils prints them;
/// the addr2line crate's locations do not carry them).
fn read_discriminators(file: &object::File<'_>) -> Vec<(u64, u64, u32)> {
    use object::{Object, ObjectSection};
    // Straight through .debug_line, program after program: no .debug_info parsing, since
    // only rows are wanted (no file names, no units).
    let Some(data) = file
        .section_by_name(".debug_line")
        .and_then(|s| s.uncompressed_data().ok())
    else {
        return Vec::new();
    };
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let address_size = if file.is_64() { 8 } else { 4 };
    let debug_line = gimli::DebugLine::new(&data, endian);
    let mut out = Vec::new();
    let mut offset = 0usize;
    while offset < data.len() {
        let Ok(program) =
            debug_line.program(gimli::DebugLineOffset(offset), address_size, None, None)
        else {
            break;
        };
        let header = program.header();
        let initial = match header.format() {
            gimli::Format::Dwarf64 => 12,
            gimli::Format::Dwarf32 => 4,
        };
        let next = offset + initial + header.unit_length();
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
        if next <= offset {
            break;
        }
        offset = next;
    }
    out.sort_unstable();
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
fn read_data_symbols(file: &object::File<'_>) -> Vec<DataSymbol> {
    use object::{Object, ObjectSection, ObjectSymbol, SectionFlags, SymbolKind, SymbolSection};
    let table: Vec<object::Symbol<'_, '_>> = if file.symbols().next().is_some() {
        file.symbols().collect()
    } else {
        file.dynamic_symbols().collect()
    };
    let mut sections: std::collections::HashMap<object::SectionIndex, Option<Arc<str>>> =
        std::collections::HashMap::new();
    let mut out = Vec::new();
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
        out.push(DataSymbol {
            start: sym.address(),
            size: sym.size(),
            name: Arc::from(demangle::demangle(name).as_ref()),
            section,
        });
    }
    out.sort_by(|a, b| a.start.cmp(&b.start).then(b.size.cmp(&a.size)));
    out.dedup_by(|b, a| a.start == b.start);
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
        f.debug_struct("Module")
            .field("path", &self.tables.path)
            .field("debug_info", &self.tables.debug_info)
            .finish()
    }
}

/// A read-only map of a file.
fn map_file(path: &Path) -> std::io::Result<memmap2::Mmap> {
    let f = std::fs::File::open(path)?;
    // SAFETY: a read-only map; a file truncated under us can fault, as with every
    // mmap-based reader.
    unsafe { memmap2::Mmap::map(&f) }
}

fn build_id_of(file: &object::File<'_>) -> Option<Vec<u8>> {
    use object::Object;
    file.build_id().ok().flatten().map(<[u8]>::to_vec)
}

impl Module {
    /// Loads `path`, its DWARF from the file itself or from a separate debug file found
    /// through `.gnu_debuglink` or `/usr/lib/debug/.build-id`, split DWARF (`.dwo`,
    /// `.dwp`) and compressed sections included.
    pub fn open(path: impl AsRef<Path>) -> Result<Module, SymbolizeError> {
        Module::open_in(path, &SearchPaths::default())
    }

    /// [`Module::open`] with debug files looked for where `paths` says.
    pub fn open_in(path: impl AsRef<Path>, paths: &SearchPaths) -> Result<Module, SymbolizeError> {
        use object::Object;
        let path = path.as_ref();
        let error = |p: &Path, message: String| SymbolizeError::Load {
            path: p.to_path_buf(),
            message,
        };
        let map = Arc::new(map_file(path).map_err(|e| error(path, e.to_string()))?);
        let file = object::File::parse(&**map)
            .map_err(|e| error(path, format!("not an object file: {e}")))?;
        let build_id = build_id_of(&file);
        let mut debug_info = debug_info_of(&file);
        let mut symbols = read_symbols(&file);
        let segments = read_segments(&file);
        let mut dwarf_path = path.to_path_buf();
        if debug_info != DebugInfo::Dwarf {
            // What strip took (the full symbol table and the line tables) is in a
            // separate debug file: the one `.gnu_debuglink` names, else the one a debug
            // directory holds for the build id. A file with another build id is not it.
            let link = file
                .gnu_debuglink()
                .ok()
                .flatten()
                .and_then(|(name, _crc)| std::str::from_utf8(name).ok());
            let mut candidates: Vec<(PathBuf, DebugInfo)> = Vec::new();
            if let Some(name) = link {
                candidates.extend(
                    paths
                        .debug_link_candidates(path, name)
                        .into_iter()
                        .map(|p| (p, DebugInfo::DebugLink)),
                );
            }
            if let Some(id) = &build_id {
                candidates.extend(
                    paths
                        .debug_by_build_id(id)
                        .into_iter()
                        .map(|p| (p, DebugInfo::BuildIdDebugFile)),
                );
            }
            for (candidate, kind) in candidates {
                if candidate == path || !candidate.is_file() {
                    continue;
                }
                let Ok(m) = map_file(&candidate) else {
                    continue;
                };
                let Ok(debug) = object::File::parse(&*m) else {
                    continue;
                };
                let other = build_id_of(&debug);
                if build_id.is_some() && other.is_some() && other != build_id {
                    continue;
                }
                if debug_info_of(&debug) != DebugInfo::Dwarf {
                    continue;
                }
                debug_info = kind;
                let linked = read_symbols(&debug);
                if linked.len() > symbols.len() {
                    symbols = linked;
                }
                dwarf_path = candidate;
                break;
            }
        }
        let loader =
            addr2line::Loader::new(&dwarf_path).map_err(|e| error(&dwarf_path, e.to_string()))?;
        Ok(Module {
            loader,
            tables: Arc::new(Tables {
                path: path.to_path_buf(),
                image: Arc::clone(&map),
                dwarf_path,
                build_id: build_id.map(Arc::from),
                symbols,
                discriminators: std::sync::OnceLock::new(),
                data_symbols: std::sync::OnceLock::new(),
                segments,
                debug_info,
                _image: None,
            }),
        })
    }

    /// A module from an image in memory (the vDSO), named `name`. The addr2line crate
    /// reads files, so the image is written to a temporary file that lives as long as the
    /// module and its workers.
    pub fn from_image(name: &str, image: &[u8]) -> Result<Module, SymbolizeError> {
        use std::io::Write;
        let error = |message: String| SymbolizeError::Load {
            path: PathBuf::from(name),
            message,
        };
        let mut file = tempfile::Builder::new()
            .prefix("sparkles-image-")
            .tempfile()
            .map_err(|e| error(format!("temporary file: {e}")))?;
        file.write_all(image)
            .and_then(|()| file.flush())
            .map_err(|e| error(format!("temporary file: {e}")))?;
        let temp = file.into_temp_path();
        let mut module = Module::open_in(&temp, &SearchPaths::none())?;
        let tables =
            Arc::get_mut(&mut module.tables).ok_or_else(|| error("shared too early".into()))?;
        tables.path = PathBuf::from(name);
        tables._image = Some(temp);
        Ok(module)
    }

    /// Another reader of the same module for another thread: it shares the symbol
    /// table, segments and line discriminators, and parses DWARF on its own (the addr2line
    /// crate's lazily built tables are not shared across threads).
    pub fn worker(&self) -> Result<Module, SymbolizeError> {
        let loader =
            addr2line::Loader::new(&self.tables.dwarf_path).map_err(|e| SymbolizeError::Load {
                path: self.tables.dwarf_path.clone(),
                message: e.to_string(),
            })?;
        Ok(Module {
            loader,
            tables: Arc::clone(&self.tables),
        })
    }

    /// The module file's bytes, shared (mapped once; the unwinder reads its unwind
    /// sections from them).
    pub fn image(&self) -> Image {
        Arc::clone(&self.tables.image) as Image
    }

    /// Whether file offset `offset` is in an executable load segment (`None`: in none).
    pub fn executable_at(&self, offset: u64) -> Option<bool> {
        self.segment_for(offset).map(|s| s.executable)
    }

    /// The ELF symbol-table name covering `addr` (a module vaddr) and the offset into it,
    /// as perf names addresses (no DWARF, no inlining).
    pub fn symbol(&self, addr: u64) -> Option<(&str, u64)> {
        self.symbol_at(addr)
            .map(|s| (s.name.as_str(), addr - s.start))
    }

    /// The module's GNU build id, where it has one.
    pub fn build_id(&self) -> Option<&[u8]> {
        self.tables.build_id.as_deref()
    }

    /// The build id, shared (a cache key that costs no copy).
    pub fn shared_build_id(&self) -> Option<Arc<[u8]>> {
        self.tables.build_id.clone()
    }

    /// The file DWARF is read from (the module, or its separate debug file).
    pub fn dwarf_path(&self) -> &Path {
        &self.tables.dwarf_path
    }

    /// The ELF virtual address of file offset `offset`: through the load segment holding
    /// it, chosen by page-aligned offset, the executable one first (Rust binaries built
    /// here have segments whose vaddr differs from their file offset).
    pub fn vaddr_of(&self, offset: u64) -> Option<u64> {
        self.segment_for(offset)
            .map(|s| offset.wrapping_sub(s.offset).wrapping_add(s.vaddr))
    }

    /// The load segment holding file offset `offset`: chosen by page-aligned offset, the
    /// executable one first.
    fn segment_for(&self, offset: u64) -> Option<&Segment> {
        let page = 4096u64;
        self.tables
            .segments
            .iter()
            .filter(|s| (s.offset & !(page - 1)) <= offset && offset < s.offset + s.filesz.max(1))
            .max_by_key(|s| s.executable)
    }

    /// Where its names and lines come from.
    pub fn debug_info(&self) -> DebugInfo {
        self.tables.debug_info
    }

    /// The file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.tables.path
    }

    /// The discriminator of the line row holding `addr`, where nonzero. The first call
    /// reads every line program of the module (binutils prints discriminators; profiles
    /// do not need them, so [`Module::frames`] leaves them out).
    pub fn discriminator(&self, addr: u64) -> Option<u32> {
        self.discriminators().get(addr)
    }

    /// The module's discriminator table, shareable with another thread (so it can be
    /// read while this one names addresses).
    pub fn discriminators(&self) -> Discriminators {
        Discriminators(Arc::clone(&self.tables))
    }

    /// The ELF virtual address of file offset `offset` for data, in a mapping whose
    /// first page is file offset `pgoff`: through the load segment whose memory image
    /// holds it (`.bss` included, which lies past the segment's file bytes). Two segments
    /// can share a file page (`.data.rel.ro`'s last and `.data`'s first): the one the
    /// mapping starts in is the one that starts last at or before `pgoff`.
    pub fn data_vaddr_of(&self, offset: u64, pgoff: u64) -> Option<u64> {
        let page = 4096u64;
        let holds = |s: &&Segment| {
            (s.offset & !(page - 1)) <= offset && offset < s.offset + s.memsz.max(s.filesz)
        };
        let segments = &self.tables.segments;
        segments
            .iter()
            .filter(holds)
            .filter(|s| (s.offset & !(page - 1)) <= pgoff)
            .max_by_key(|s| s.offset)
            .or_else(|| segments.iter().find(holds))
            .map(|s| offset.wrapping_sub(s.offset).wrapping_add(s.vaddr))
    }

    /// The variable (data symbol) holding `addr`, a module vaddr; the table is read on
    /// first use. A symbol of size 0 holds only its own address.
    pub fn data_symbol(&self, addr: u64) -> Option<&DataSymbol> {
        let table = self.tables.data_symbols.get_or_init(|| {
            let read = |p: &Path| {
                map_file(p)
                    .ok()
                    .and_then(|m| object::File::parse(&*m).ok().map(|f| read_data_symbols(&f)))
                    .unwrap_or_default()
            };
            let own = object::File::parse(&**self.tables.image)
                .map(|f| read_data_symbols(&f))
                .unwrap_or_default();
            if self.tables.dwarf_path != self.tables.path {
                let linked = read(&self.tables.dwarf_path);
                if linked.len() > own.len() {
                    return linked;
                }
            }
            own
        });
        let i = table.partition_point(|s| s.start <= addr);
        let s = &table[i.checked_sub(1)?];
        (addr < s.start + s.size.max(1)).then_some(s)
    }

    /// The function symbol covering `addr` (the innermost where several do), else, as
    /// binutils does, the nearest one before it.
    fn symbol_at(&self, addr: u64) -> Option<&SymbolEntry> {
        let symbols = &self.tables.symbols;
        let i = symbols.partition_point(|s| s.start <= addr);
        let before = &symbols[..i];
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
                    symbol_offset: None,
                });
            }
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
                // binutils's settled name for the function is the symbol that starts
                // where it does; the symbol covering the address stands in for that (the
                // addr2line crate gives no function start). A GCC `.cold` part is a symbol
                // inside a function that starts elsewhere, so the DWARF name stays.
                if let Some(sym) = self.symbol_at(addr).filter(|s| !s.name.contains(".cold")) {
                    last.demangled = Some(demangle::demangle(&sym.name).into_owned());
                    last.function = Some(sym.name.clone());
                }
            }
        }
        if out.is_empty() || out.iter().all(|f| f.function.is_none()) {
            if let Some(sym) = self.symbol_at(addr) {
                // binutils names the file the symbol table gives, with no line.
                let named = Frame::from_symbol(&sym.name, addr - sym.start, sym.file.clone());
                match out.last_mut() {
                    Some(f) => {
                        f.function = named.function;
                        f.demangled = named.demangled;
                        f.symbol_offset = named.symbol_offset;
                    }
                    None => out.push(named),
                }
            }
        }
        out
    }
}
#[cfg(test)]
mod tests {
    /// Batches are named in parallel by workers moved to other threads.
    #[test]
    fn a_module_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<super::Module>();
    }
}
