//! One module (an ELF file) ready to name addresses: its symbol tables, segments and
//! DWARF, read once from the mapped file and shared by every worker; each worker names
//! addresses through its own addr2line `Context` over the shared `gimli::Dwarf`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::demangle;
use crate::dwarf::{self, Reader};
use crate::elf::{
    build_id_of, debug_info_of, map_file, read_data_symbols, read_segments, read_symbols,
    DataSymbol, DebugInfo, FileBytes, Segment, SymbolEntry,
};
use crate::units::{Contexts, UnitIndex};
use crate::{Error, Frame, SearchPaths};

/// What is read once per module and shared by its workers.
struct Shared {
    /// The file loaded (`[vdso]` for an image read from memory).
    path: PathBuf,
    /// Its bytes, mapped once and shared with the unwinder (`.eh_frame`, `.text`).
    image: Arc<FileBytes>,
    /// The file DWARF is read from (the module itself or its separate debug file), and
    /// its bytes.
    dwarf_path: PathBuf,
    dwarf_image: Arc<FileBytes>,
    /// The DWARF, built once.
    dwarf: Arc<gimli::Dwarf<Reader>>,
    /// Where its compilation units lie, where each can be read alone: workers then make
    /// a context per unit when first asked about it instead of one over all of them.
    units: Option<UnitIndex>,
    /// The split-DWARF package beside the debug file, where there is one.
    package: Option<gimli::DwarfPackage<Reader>>,
    /// Address size of the DWARF's file.
    address_size: u8,
    /// The module's GNU build id.
    build_id: Option<Arc<[u8]>>,
    symbols: Vec<SymbolEntry>,
    /// `(start, end, discriminator)` of line rows with a nonzero discriminator, sorted:
    /// read from every line program on first use (only binutils's format prints them).
    discriminators: OnceLock<Vec<(u64, u64, u32)>>,
    /// The same per line program (by its offset), read when an address of its unit is
    /// first asked about.
    unit_discriminators: std::sync::Mutex<rustc_hash::FxHashMap<u64, DiscriminatorTable>>,
    /// Data symbols (variables), sorted by address: read on first use.
    data_symbols: OnceLock<Vec<DataSymbol>>,
    /// PT_LOAD segments.
    segments: Vec<Segment>,
    /// What the names come from.
    debug_info: DebugInfo,
}

/// `(start, end, discriminator)` of a line program's rows with a nonzero discriminator.
type DiscriminatorTable = Arc<[(u64, u64, u32)]>;

/// A module's line-row discriminators, read on first use; `Send` and `Sync`.
#[derive(Clone)]
pub struct Discriminators(Arc<Shared>);

impl std::fmt::Debug for Discriminators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Discriminators").field(&self.0.path).finish()
    }
}

impl Discriminators {
    /// The discriminator of the line row holding `addr`, where nonzero (see
    /// [`Module::discriminator`]).
    pub fn get(&self, addr: u64) -> Option<u32> {
        let shared = &self.0;
        let table = shared
            .discriminators
            .get_or_init(|| dwarf::discriminators(&shared.dwarf, shared.address_size));
        discriminator_in(table, addr)
    }
}

/// The discriminator of the row of `table` (sorted `(start, end, discriminator)`) holding
/// `addr`.
fn discriminator_in(table: &[(u64, u64, u32)], addr: u64) -> Option<u32> {
    let i = table.partition_point(|d| d.0 <= addr);
    i.checked_sub(1)
        .map(|i| table[i])
        .filter(|d| addr < d.1)
        .map(|d| d.2)
}

/// The frames of an address, and the DWARF error that cut them short, if one did (the
/// symbol table then names what DWARF could not).
#[derive(Debug)]
pub struct Lookup {
    /// Innermost first.
    pub frames: Vec<Frame>,
    /// Why DWARF gave fewer frames than it should have.
    pub error: Option<Error>,
}

/// Files at least this large read their symbol table on another thread while their DWARF
/// is loaded.
const PARALLEL_OPEN_BYTES: usize = 8 << 20;

/// A module's symbol table, read or being read.
enum Symbols<'scope> {
    /// Not read yet: the module's own table, read at the end where no debug file gave
    /// one.
    Own,
    Read(Vec<crate::elf::SymbolEntry>),
    Reading(std::thread::ScopedJoinHandle<'scope, Vec<crate::elf::SymbolEntry>>),
}

/// A module's shared part, sent to another thread to make a worker there
/// ([`Module::worker_seed`]).
#[derive(Clone)]
pub struct WorkerSeed(Arc<Shared>);

impl std::fmt::Debug for WorkerSeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("WorkerSeed")
            .field(&self.0.dwarf_path)
            .finish()
    }
}

impl WorkerSeed {
    /// A reader of the module with its own addr2line context.
    pub fn worker(self) -> Result<Module, Error> {
        let contexts =
            Contexts::new(&self.0.dwarf, self.0.units.as_ref()).map_err(|source| Error::Dwarf {
                path: self.0.dwarf_path.clone(),
                addr: None,
                source,
            })?;
        Ok(Module {
            contexts,
            shared: self.0,
        })
    }
}

/// An ELF module's symbolization data: its tables and DWARF, shared by every worker that
/// names addresses in it, and this worker's addr2line context.
pub struct Module {
    contexts: Contexts,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module")
            .field("path", &self.shared.path)
            .field("debug_info", &self.shared.debug_info)
            .finish()
    }
}

impl Module {
    /// Loads `path`, its DWARF from the file itself or from a separate debug file found
    /// through `.gnu_debuglink` or `/usr/lib/debug/.build-id`, split DWARF (`.dwo`,
    /// `.dwp`) and compressed sections included.
    pub fn open(path: impl AsRef<Path>) -> Result<Module, Error> {
        Module::open_in(path, &SearchPaths::default())
    }

    /// [`Module::open`] with debug files looked for where `paths` says.
    pub fn open_in(path: impl AsRef<Path>, paths: &SearchPaths) -> Result<Module, Error> {
        Module::open_with(path, paths, crate::units::MIN_UNITS)
    }

    /// [`Module::open_in`], its compilation units read one at a time (each when an
    /// address in it is first named) where it has at least `min_units` of them and each
    /// can be read alone; [`Module::per_unit`] says whether that was so. Names are the
    /// same either way: this is how tests make a small module take the per-unit path.
    pub fn open_with(
        path: impl AsRef<Path>,
        paths: &SearchPaths,
        min_units: usize,
    ) -> Result<Module, Error> {
        let path = path.as_ref();
        let image = map_file(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Module::from_bytes(path.to_path_buf(), image, Some(paths), min_units)
    }

    /// Whether the module's compilation units are read one at a time (see
    /// [`Module::open_with`]), not all when it is opened.
    pub fn per_unit(&self) -> bool {
        matches!(self.contexts, Contexts::PerUnit(_))
    }

    /// A module from an image in memory (the vDSO), named `name`: its DWARF and tables
    /// are read from the bytes themselves.
    pub fn from_image(name: &str, image: Vec<u8>) -> Result<Module, Error> {
        let bytes = Arc::new(FileBytes::Owned(image.into_boxed_slice()));
        Module::from_bytes(PathBuf::from(name), bytes, None, crate::units::MIN_UNITS)
    }

    /// A module from `image`, the bytes of `path`; separate debug files are looked for
    /// where `paths` says (none without).
    fn from_bytes(
        path: PathBuf,
        image: Arc<FileBytes>,
        paths: Option<&SearchPaths>,
        min_units: usize,
    ) -> Result<Module, Error> {
        let file = object::File::parse(&**image).map_err(|source| Error::NotObject {
            path: path.clone(),
            source,
        })?;
        // A large file's symbol table is read on another thread while its DWARF is
        // loaded here (each was a third of opening a 90 MB binary).
        std::thread::scope(|scope| {
            let symbols = if image.len() >= PARALLEL_OPEN_BYTES {
                let file = &file;
                Symbols::Reading(scope.spawn(move || read_symbols(file)))
            } else {
                Symbols::Own
            };
            Module::from_parsed(path, &image, &file, symbols, paths, min_units)
        })
    }

    fn from_parsed(
        path: PathBuf,
        image: &Arc<FileBytes>,
        file: &object::File<'_>,
        symbols: Symbols<'_>,
        paths: Option<&SearchPaths>,
        min_units: usize,
    ) -> Result<Module, Error> {
        use object::Object;
        let image = Arc::clone(image);
        let build_id = build_id_of(file);
        let mut debug_info = debug_info_of(file);
        let mut symbols = Some(symbols);
        let segments = read_segments(file);
        let mut debug: Option<(PathBuf, Arc<FileBytes>)> = None;
        if let Some(paths) = paths.filter(|_| debug_info != DebugInfo::Dwarf) {
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
                        .debug_link_candidates(&path, name)
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
                let Ok(bytes) = map_file(&candidate) else {
                    continue;
                };
                let Ok(linked) = object::File::parse(&**bytes) else {
                    continue;
                };
                let other = build_id_of(&linked);
                if build_id.is_some() && other.is_some() && other != build_id {
                    continue;
                }
                // A debug file's full symbol table wins over what strip left (.dynsym):
                // its local functions and the names perf gives.
                let has_symtab = linked.symbols().next().is_some();
                if has_symtab {
                    // The file's own table is not wanted: a thread reading it is joined
                    // at the scope's end and its table dropped.
                    symbols = Some(Symbols::Read(read_symbols(&linked)));
                }
                if debug_info_of(&linked) == DebugInfo::Dwarf {
                    debug_info = kind;
                    debug = Some((candidate, bytes));
                    break;
                }
                if has_symtab && debug_info == DebugInfo::DynsymOnly {
                    // No line tables in it, but names: look on for one with DWARF.
                    debug_info = DebugInfo::SymtabOnly;
                }
            }
        }
        let (dwarf_path, dwarf_image) = debug.unwrap_or_else(|| (path.clone(), Arc::clone(&image)));
        let dwarf_file =
            object::File::parse(&**dwarf_image).map_err(|source| Error::NotObject {
                path: dwarf_path.clone(),
                source,
            })?;
        let dwarf_error = |source| Error::Dwarf {
            path: dwarf_path.clone(),
            addr: None,
            source,
        };
        let mut dwarf = dwarf::load(&dwarf_file, &dwarf_image).map_err(dwarf_error)?;
        let units = UnitIndex::of(&dwarf, min_units);
        if units.is_none() {
            // One context reads every unit: units sharing an abbreviation table share
            // its parse.
            dwarf.populate_abbreviations_cache(gimli::AbbreviationsCacheStrategy::Duplicates);
        }
        let dwarf = Arc::new(dwarf);
        let contexts = Contexts::new(&dwarf, units.as_ref()).map_err(dwarf_error)?;
        let package = paths.and_then(|_| dwarf::package(&dwarf_path));
        let symbols = match symbols {
            Some(Symbols::Own) => read_symbols(file),
            Some(Symbols::Read(s)) => s,
            Some(Symbols::Reading(handle)) => handle.join().unwrap_or_default(),
            None => Default::default(),
        };
        Ok(Module {
            contexts,
            shared: Arc::new(Shared {
                address_size: if dwarf_file.is_64() { 8 } else { 4 },
                path,
                image,
                dwarf_path,
                dwarf_image,
                dwarf,
                units,
                package,
                build_id: build_id.map(Arc::from),
                symbols,
                discriminators: OnceLock::new(),
                unit_discriminators: Default::default(),
                data_symbols: OnceLock::new(),
                segments,
                debug_info,
            }),
        })
    }

    /// Another reader of the same module for another thread: it shares the tables and
    /// the DWARF, and keeps its own addr2line context (whose lazily parsed units are not
    /// shared across threads).
    pub fn worker(&self) -> Result<Module, Error> {
        self.worker_seed().worker()
    }

    /// What makes a [`Module::worker`] on another thread (sendable where the module,
    /// whose context is not, is not): the worker's context is then parsed there.
    pub fn worker_seed(&self) -> WorkerSeed {
        WorkerSeed(Arc::clone(&self.shared))
    }

    /// The module file's bytes, shared (mapped once; the unwinder reads its unwind
    /// sections from them).
    pub fn image(&self) -> Arc<FileBytes> {
        Arc::clone(&self.shared.image)
    }

    /// Whether file offset `offset` is in an executable load segment (`None`: in none).
    pub fn executable_at(&self, offset: u64) -> Option<bool> {
        self.segment_for(offset).map(|s| s.executable)
    }

    /// The ELF symbol-table name covering `addr` (a module vaddr) and the offset into it,
    /// as perf names addresses (no DWARF, no inlining): none past a sized symbol's end
    /// (perf's `[unknown]`: a static function a stripped file's table does not list), and
    /// an unsized one reaching to the next symbol (perf's `symbols__fixup_end`).
    pub fn symbol(&self, addr: u64) -> Option<(&str, u64)> {
        self.symbol_at(addr)
            .filter(|s| addr < s.end || s.size == 0)
            .map(|s| (s.name.as_str(), addr - s.start))
    }

    /// The module's GNU build id, where it has one.
    pub fn build_id(&self) -> Option<&[u8]> {
        self.shared.build_id.as_deref()
    }

    /// The build id, shared (a cache key that costs no copy).
    pub fn shared_build_id(&self) -> Option<Arc<[u8]>> {
        self.shared.build_id.clone()
    }

    /// The file DWARF is read from (the module, or its separate debug file).
    pub fn dwarf_path(&self) -> &Path {
        &self.shared.dwarf_path
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
        self.shared
            .segments
            .iter()
            .filter(|s| (s.offset & !(page - 1)) <= offset && offset < s.offset + s.filesz.max(1))
            .max_by_key(|s| s.executable)
    }

    /// Where its names and lines come from.
    pub fn debug_info(&self) -> DebugInfo {
        self.shared.debug_info
    }

    /// The file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// The discriminator of the line row holding `addr`, where nonzero (binutils prints
    /// discriminators; profiles do not need them, so [`Module::frames`] leaves them out).
    /// Read from the line program of the unit holding `addr`, once per unit; where no
    /// unit holds it, from every line program of the module (read once).
    pub fn discriminator(&self, addr: u64) -> Option<u32> {
        let unit = self
            .context(addr)
            .ok()
            .flatten()
            .and_then(|c| c.find_dwarf_and_unit(addr).skip_all_loads());
        let Some(program) = unit.and_then(|u| u.line_program.as_ref()) else {
            return self.discriminators().get(addr);
        };
        let key = program.header().offset().0 as u64;
        let table = {
            let mut cache = self.shared.unit_discriminators.lock().ok()?;
            match cache.get(&key) {
                Some(t) => Arc::clone(t),
                None => {
                    // The program is cloned (its header's tables) only the first time.
                    let t: DiscriminatorTable =
                        dwarf::program_discriminators(program.clone()).into();
                    cache.insert(key, Arc::clone(&t));
                    t
                }
            }
        };
        discriminator_in(&table, addr)
    }

    /// The module's discriminator table, shareable with another thread (so it can be
    /// read while this one names addresses).
    pub fn discriminators(&self) -> Discriminators {
        Discriminators(Arc::clone(&self.shared))
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
        let segments = &self.shared.segments;
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
        let shared = &self.shared;
        let table = shared.data_symbols.get_or_init(|| {
            let read = |bytes: &FileBytes| {
                object::File::parse(bytes.as_ref())
                    .map(|f| read_data_symbols(&f))
                    .unwrap_or_default()
            };
            let own = read(&shared.image);
            if !Arc::ptr_eq(&shared.dwarf_image, &shared.image) {
                let linked = read(&shared.dwarf_image);
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
        let symbols = &self.shared.symbols;
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

    /// Every name the symbol table gives the symbol covering `addr` (its aliases at the
    /// same address, versions taken off as [`Module::symbol`] does), the one `symbol`
    /// chooses first.
    pub fn aliases(&self, addr: u64) -> Vec<&str> {
        let Some(chosen) = self.symbol_at(addr) else {
            return Vec::new();
        };
        let mut names = vec![chosen.name.as_str()];
        let symbols = &self.shared.symbols;
        let i = symbols.partition_point(|s| s.start <= chosen.start);
        for s in symbols[..i]
            .iter()
            .rev()
            .take_while(|s| s.start == chosen.start)
        {
            if !names.contains(&s.name.as_str()) {
                names.push(&s.name);
            }
        }
        names
    }

    /// The frames at `addr` (an address in the module's ELF vaddr space), innermost
    /// first; the symbol table's name when DWARF has none.
    pub fn frames(&self, addr: u64) -> Vec<Frame> {
        self.lookup(addr).frames
    }

    /// [`Module::frames`], and the DWARF error that cut them short, if one did.
    pub fn lookup(&self, addr: u64) -> Lookup {
        let mut out = Vec::new();
        let error = self
            .dwarf_frames(addr, &mut out)
            .err()
            .map(|source| Error::Dwarf {
                path: self.shared.dwarf_path.clone(),
                addr: Some(addr),
                source,
            });
        self.settle_names(addr, &mut out);
        Lookup { frames: out, error }
    }

    /// The inlined frames DWARF gives for `addr`, split units loaded as they are needed.
    fn dwarf_frames(&self, addr: u64, out: &mut Vec<Frame>) -> Result<(), gimli::Error> {
        use addr2line::LookupContinuation;
        let Some(context) = self.context(addr)? else {
            return Ok(());
        };
        let mut lookup = context.find_frames(addr);
        let mut frames = loop {
            match lookup {
                addr2line::LookupResult::Output(found) => break found?,
                addr2line::LookupResult::Load { load, continuation } => {
                    let unit = dwarf::split_unit(&load, self.shared.package.as_ref())?;
                    lookup = continuation.resume(unit);
                }
            }
        };
        while let Some(frame) = frames.next()? {
            let function = match &frame.function {
                Some(f) => Some(f.raw_name()?.into_owned()),
                None => None,
            };
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
        Ok(())
    }

    /// The addr2line context that names `addr` (see [`Contexts::for_address`]).
    fn context(&self, addr: u64) -> Result<Option<&addr2line::Context<Reader>>, gimli::Error> {
        let shared = &self.shared;
        self.contexts
            .for_address(addr, &shared.dwarf, shared.units.as_ref())
    }

    /// The outermost frame's name as binutils settles it, and the symbol table's name
    /// where DWARF named nothing.
    fn settle_names(&self, addr: u64, out: &mut Vec<Frame>) {
        if let Some(last) = out.last_mut() {
            last.inlined = false;
            // Like binutils: a DWARF name that is not a linkage name (no namespace, no
            // template arguments of the instance) gives way, for the containing function,
            // to the symbol table's name for the address.
            let linkage = last
                .function
                .as_deref()
                .is_some_and(|n| n.starts_with("_Z") || n.starts_with("_R"));
            // A symbol of that very name at the address is the one binutils settles on
            // (glibc's `__libc_start_main_impl`, among its versioned aliases).
            let named_so = || {
                last.function
                    .as_deref()
                    .is_some_and(|n| self.aliases(addr).contains(&n))
            };
            if !linkage && !named_so() {
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
                let named = Frame::from_symbol(
                    &sym.name,
                    addr - sym.start,
                    sym.file.as_deref().map(str::to_string),
                );
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
    }
}
