//! The symbolizer of a capture: the modules its mappings name (loaded once per build id,
//! checked against the capture's build ids), kernel names gated on the capture's kernel,
//! the vDSO, JIT perf maps, and a cache of names per (module, address) filled one at a
//! time or in sorted, deduplicated batches named in parallel. The address-space model it
//! reads ([`AddressSpace`]) is its caller's, fed with the capture's records in time order.
//!
//! Two steps, so a profile pays for names once per distinct address: [`Symbolizer::locate`]
//! turns `(pid, addr)` into a [`Place`] at the current point of the capture (cheap: a map
//! lookup and segment arithmetic), and [`Symbolizer::name`] / [`Symbolizer::name_batch`]
//! turn places into frames.

use rustc_hash::FxHashMap as HashMap;
use std::path::PathBuf;
use std::rc::Rc;

use sparkles_perf_data::sample::KERNEL_HALF;
use sparkles_perf_data::PerfData;

use crate::address_space::{AddressSpace, Mapping};
use crate::kernel::{KernelIdentity, NoKernelNames};
use crate::perf_map::PerfMap;
use crate::search::{hex, SearchPaths};
use crate::{DataSymbol, Frame, Lookup, Module};

/// Which module: by build id where one is known, else by path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ModuleKey {
    /// A GNU build id.
    BuildId(std::sync::Arc<[u8]>),
    /// A path (no build id known).
    Path(String),
    /// The vDSO of the running kernel.
    Vdso,
}

/// Why a module gives no names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// No file at any place looked.
    #[error("{path}: not found (looked at {})", .tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    NotFound {
        /// The recorded path.
        path: String,
        /// Where it was looked for.
        tried: Vec<PathBuf>,
    },
    /// Files were found, but none had the capture's build id.
    #[error("{path}: {} has build id {found}, the capture's is {expected}: not used for names", .file.display())]
    BuildIdMismatch {
        /// The recorded path.
        path: String,
        /// The file found.
        file: PathBuf,
        /// The capture's build id, hex.
        expected: String,
        /// The file's (or "none"), hex.
        found: String,
    },
    /// The file could not be loaded.
    #[error("{0}")]
    Load(String),
    /// Kernel, vDSO or JIT names that may not or cannot be given.
    #[error("{0}")]
    Other(String),
    /// Some of a module's DWARF lookups failed: those addresses were named from its
    /// symbol table instead.
    #[error("{first} ({count} addresses named from the symbol table instead)")]
    Lookups {
        /// The first failure, with the file and address.
        first: String,
        /// How many lookups failed.
        count: usize,
    },
}

/// Where an address is, at the point of the capture it was located.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Place {
    /// In a loaded module, at this ELF virtual address.
    Module {
        /// The module.
        key: ModuleKey,
        /// The address in the module's ELF vaddr space.
        vaddr: u64,
    },
    /// A kernel address.
    Kernel(u64),
    /// Anonymous memory of a process (a JIT's code, named from its perf map).
    Anonymous {
        /// The process.
        pid: u32,
        /// The address.
        addr: u64,
    },
    /// Nowhere that can be named: the reason (shared: every address of a module that
    /// was not found has the same one).
    Unknown(Rc<str>),
}

/// An address located: the mapping's path and the place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The mapping's path (`[kernel.kallsyms]`, `[vdso]`, `//anon`, a file), if mapped.
    pub mapping: Option<Rc<str>>,
    /// Where it is.
    pub place: Place,
}

/// The names of one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// Frames, innermost first; empty when nothing names the place.
    pub frames: Rc<[Frame]>,
    /// Why there are no names (or only a `[kernel]` frame), when so.
    pub missing: Option<String>,
}

/// A mapping's module, or why there is none (said once, shared by every address in it).
type MappedModule = Result<Rc<Module>, Rc<str>>;

/// The kind of memory a sampled data address is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DataKind {
    /// A global or static variable: an ELF data symbol (`.data`, `.bss`, `.rodata`).
    Global,
    /// The `[heap]` mapping (brk).
    Heap,
    /// A `[stack]` mapping.
    Stack,
    /// Anonymous memory (mmap'd allocations, thread stacks, JIT data).
    Anon,
    /// A file mapping, where no variable of the file holds the address.
    File,
    /// The kernel.
    Kernel,
    /// No mapping the capture recorded holds it.
    Unknown,
}

impl DataKind {
    /// Its name in reports: `global`, `heap`, `stack`, `anon`, `file`, `kernel`,
    /// `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            DataKind::Global => "global",
            DataKind::Heap => "heap",
            DataKind::Stack => "stack",
            DataKind::Anon => "anon",
            DataKind::File => "file",
            DataKind::Kernel => "kernel",
            DataKind::Unknown => "unknown",
        }
    }
}

/// What a data address is: its kind, its mapping, and the variable where one holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataObject {
    /// The kind of memory.
    pub kind: DataKind,
    /// The mapping's path (for a variable in `.bss` past the file, the module's).
    pub mapping: Option<Rc<str>>,
    /// The mapping's first address (0 where there is none).
    pub mapping_start: u64,
    /// The variable, for [`DataKind::Global`].
    pub symbol: Option<DataSymbol>,
}

/// Batches at least this large (distinct, uncached addresses of one module) are named
/// in parallel.
pub const PARALLEL_BATCH: usize = 2048;

/// The symbolizer of one capture.
#[derive(Debug)]
pub struct Symbolizer {
    paths: SearchPaths,
    /// Build ids the capture recorded, by path.
    capture_build_ids: HashMap<String, Vec<u8>>,
    /// Loaded modules by key (a module found by path is under its build id too).
    modules: HashMap<ModuleKey, Rc<Module>>,
    /// Why a (recorded path, build id) gave no module: whether a file is found depends on
    /// the path, so failures are not shared by build id.
    failures: HashMap<(String, Option<Vec<u8>>), Unavailable>,
    /// Whether kernel (and vDSO, and /tmp perf map) names may be given: the capture ran
    /// on this machine's running kernel.
    local: Result<(), NoKernelNames>,
    perf_maps: HashMap<u32, Option<PerfMap>>,
    /// Where perf maps are read from (`/tmp`).
    perf_map_dir: PathBuf,
    names: HashMap<Place, Named>,
    /// The module each file mapping resolved to, per (pid, mapping start), valid while
    /// the process's mappings are at the generation noted.
    by_mapping: HashMap<(u32, u64), (u64, MappedModule)>,
    /// Each module's other workers (contexts over its shared DWARF), kept across batches.
    workers: HashMap<ModuleKey, Vec<Module>>,
    /// DWARF lookups that failed, per module: the first error and how many there were.
    lookup_errors: HashMap<ModuleKey, (String, usize)>,
    stats: Stats,
}

/// What a symbolizer did, for a profile's notes and for tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Modules loaded (each build id once).
    pub modules_loaded: usize,
    /// Places named (cache misses).
    pub named: usize,
    /// Places answered from the cache.
    pub cached: usize,
    /// Runs of one module's addresses named in parallel.
    pub parallel_runs: usize,
    /// Addresses whose DWARF lookup failed (named from the symbol table instead).
    pub lookup_errors: usize,
}

fn parse_hex(s: &str) -> Option<Vec<u8>> {
    s.len()
        .is_multiple_of(2)
        .then(|| {
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
                .collect()
        })
        .flatten()
}

impl Symbolizer {
    /// A symbolizer for addresses of the running system (the harness's own captures).
    pub fn new(paths: SearchPaths) -> Symbolizer {
        Symbolizer {
            paths,
            capture_build_ids: HashMap::default(),
            modules: HashMap::default(),
            failures: HashMap::default(),
            local: Ok(()),
            perf_maps: HashMap::default(),
            perf_map_dir: PathBuf::from("/tmp"),
            names: HashMap::default(),
            by_mapping: HashMap::default(),
            workers: HashMap::default(),
            lookup_errors: HashMap::default(),
            stats: Stats::default(),
        }
    }

    /// A symbolizer for a capture: its build-id table checks the files found, and its
    /// kernel decides whether this machine's kernel names, vDSO and perf maps apply.
    pub fn for_capture(data: &PerfData, paths: SearchPaths) -> Symbolizer {
        let f = &data.features;
        let mut s = Symbolizer::new(paths);
        for entry in &f.build_ids {
            if let Some(id) = parse_hex(&entry.build_id) {
                s.capture_build_ids.insert(entry.filename.clone(), id);
            }
        }
        let capture = KernelIdentity {
            release: f.osrelease.clone(),
            build_id: s.capture_build_ids.get("[kernel.kallsyms]").cloned(),
        };
        s.local = capture.names_from(&KernelIdentity::running());
        // Where kernel frames can be named, /proc/kallsyms (tens of ms for the kernel to
        // print) is read and parsed on another thread while the records are decoded.
        let kernel_sampled = data
            .attrs
            .iter()
            .any(|a| a.attr.flags & sparkles_perf_data::attr::flag::EXCLUDE_KERNEL == 0);
        if s.local.is_ok() && kernel_sampled {
            let _ = std::thread::Builder::new()
                .name("sparkles-kallsyms".into())
                .spawn(crate::kernel::prepare_running);
        }
        s
    }

    /// Overrides the kernel check (a capture known to come from this machine, or a test).
    pub fn set_local(&mut self, local: Result<(), NoKernelNames>) {
        self.local = local;
    }

    /// Where `/tmp/perf-<pid>.map` files are read from.
    pub fn set_perf_map_dir(&mut self, dir: PathBuf) {
        self.perf_map_dir = dir;
    }

    /// Why this machine's kernel names do not apply, if they do not.
    pub fn kernel_reason(&self) -> Option<&NoKernelNames> {
        self.local.as_ref().err()
    }

    /// The module a mapping names, loaded once per build id.
    pub fn module(
        &mut self,
        path: &str,
        build_id: Option<&[u8]>,
    ) -> Result<Rc<Module>, Unavailable> {
        let build_id = build_id
            .map(<[u8]>::to_vec)
            .or_else(|| self.capture_build_ids.get(path).cloned());
        let key = match &build_id {
            Some(id) => ModuleKey::BuildId(id.as_slice().into()),
            None => ModuleKey::Path(path.to_string()),
        };
        if let Some(found) = self.modules.get(&key) {
            return Ok(Rc::clone(found));
        }
        let failure = (path.to_string(), build_id.clone());
        if let Some(why) = self.failures.get(&failure) {
            return Err(why.clone());
        }
        match self.load(path, build_id.as_deref()) {
            Ok(m) => {
                let m = Rc::new(m);
                self.stats.modules_loaded += 1;
                // Found by path, the file's own build id names it too: a place's key is
                // always the build id where the module has one.
                if let Some(id) = m.shared_build_id() {
                    self.modules.insert(ModuleKey::BuildId(id), Rc::clone(&m));
                }
                self.modules.insert(key, Rc::clone(&m));
                Ok(m)
            }
            Err(why) => {
                self.failures.insert(failure, why.clone());
                Err(why)
            }
        }
    }

    fn load(&self, path: &str, build_id: Option<&[u8]>) -> Result<Module, Unavailable> {
        let tried = self.paths.binary_candidates(path, build_id);
        let mut mismatch = None;
        let mut unreadable = None;
        for file in tried.iter().filter(|p| p.is_file()) {
            // A file that is not readable ELF: try the next place, say why if none does.
            let module = match Module::open_in(file, &self.paths) {
                Ok(m) => m,
                Err(e) => {
                    unreadable.get_or_insert(Unavailable::Load(e.to_string()));
                    continue;
                }
            };
            match (build_id, module.build_id()) {
                (Some(want), got) if got != Some(want) => {
                    mismatch.get_or_insert(Unavailable::BuildIdMismatch {
                        path: path.to_string(),
                        file: file.clone(),
                        expected: hex(want),
                        found: got.map(hex).unwrap_or_else(|| "none".into()),
                    });
                }
                _ => return Ok(module),
            }
        }
        Err(mismatch.or(unreadable).unwrap_or(Unavailable::NotFound {
            path: path.to_string(),
            tried,
        }))
    }

    fn vdso(&mut self) -> Result<Rc<Module>, Unavailable> {
        if let Some(found) = self.modules.get(&ModuleKey::Vdso) {
            return Ok(Rc::clone(found));
        }
        let failure = ("[vdso]".to_string(), None);
        if let Some(why) = self.failures.get(&failure) {
            return Err(why.clone());
        }
        let loaded = match &self.local {
            Ok(()) => crate::vdso::running()
                .map(Rc::new)
                .map_err(|e| Unavailable::Load(e.to_string())),
            Err(why) => Err(Unavailable::Other(format!("[vdso]: {why}"))),
        };
        match &loaded {
            Ok(m) => {
                self.modules.insert(ModuleKey::Vdso, Rc::clone(m));
            }
            Err(why) => {
                self.failures.insert(failure, why.clone());
            }
        }
        loaded
    }

    /// Where `addr` of process `pid` is, as `space` has the process mapped now.
    pub fn locate(&mut self, space: &AddressSpace, pid: u32, addr: u64) -> Located {
        let mapping = space.lookup(pid, addr).cloned();
        // The kernel's half of the address space (x86_64 and aarch64 alike).
        if addr >= KERNEL_HALF
            || mapping
                .as_ref()
                .is_some_and(|m| m.path.starts_with("[kernel.kallsyms]"))
        {
            return Located {
                mapping: Some(mapping.map_or_else(|| Rc::from("[kernel.kallsyms]"), |m| m.path)),
                place: Place::Kernel(addr),
            };
        }
        let Some(m) = mapping else {
            return Located {
                mapping: None,
                place: Place::Unknown(
                    format!("{addr:#x} is in no mapping of process {pid}").into(),
                ),
            };
        };
        let place = if &*m.path == "[vdso]" {
            match self.vdso() {
                Ok(module) => match module.vaddr_of(m.file_offset(addr)) {
                    Some(vaddr) => Place::Module {
                        key: ModuleKey::Vdso,
                        vaddr,
                    },
                    None => Place::Unknown(
                        format!("[vdso]: offset {:#x} in no segment", m.file_offset(addr)).into(),
                    ),
                },
                Err(e) => Place::Unknown(e.to_string().into()),
            }
        } else if m.path.is_empty()
            || m.path.starts_with("//anon")
            || m.path.starts_with("[anon")
            || m.path.starts_with("/memfd:")
        {
            Place::Anonymous { pid, addr }
        } else if m.path.starts_with('[') {
            Place::Unknown(format!("{}: no file to name it from", m.path).into())
        } else {
            match self.module_of_mapping(space, pid, &m) {
                Ok(module) => match module.vaddr_of(m.file_offset(addr)) {
                    Some(vaddr) => Place::Module {
                        key: match module.shared_build_id() {
                            Some(id) => ModuleKey::BuildId(id),
                            None => ModuleKey::Path(m.path.to_string()),
                        },
                        vaddr,
                    },
                    None => Place::Unknown(
                        format!(
                            "{}: file offset {:#x} is in no loadable segment",
                            m.path,
                            m.file_offset(addr)
                        )
                        .into(),
                    ),
                },
                // The reason is said once per mapping and shared.
                Err(e) => Place::Unknown(e),
            }
        };
        Located {
            mapping: Some(m.path),
            place,
        }
    }

    /// The module a mapping of `pid` holds: the running kernel's vDSO for `[vdso]`, else
    /// the file's, looked up once per mapping and generation of the process's mappings;
    /// or why there is none.
    pub fn module_of_mapping(
        &mut self,
        space: &AddressSpace,
        pid: u32,
        m: &Mapping,
    ) -> Result<Rc<Module>, Rc<str>> {
        if &*m.path == "[vdso]" {
            return self.vdso().map_err(|e| Rc::from(e.to_string()));
        }
        let generation = space.generation(pid);
        match self.by_mapping.get(&(pid, m.start)) {
            Some((g, found)) if *g == generation => found.clone(),
            _ => {
                let found = self
                    .module(&m.path, m.build_id.as_deref())
                    .map_err(|e| Rc::from(e.to_string()));
                self.by_mapping
                    .insert((pid, m.start), (generation, found.clone()));
                found
            }
        }
    }

    /// What data address `addr` of process `pid` is, as `space` has the process mapped
    /// now: a variable (an ELF data symbol of the module mapped there, `.bss` in the
    /// anonymous mapping after a module's file mapping included), else the kind of
    /// memory the address-space model says it is.
    pub fn data_object(&mut self, space: &AddressSpace, pid: u32, addr: u64) -> DataObject {
        let object = |kind, mapping: Option<&Mapping>| DataObject {
            kind,
            mapping: mapping.map(|m| Rc::clone(&m.path)),
            mapping_start: mapping.map_or(0, |m| m.start),
            symbol: None,
        };
        let maps = space.mappings(pid);
        let i = maps.partition_point(|m| m.start <= addr);
        let found = i.checked_sub(1).filter(|&i| addr < maps[i].end);
        if addr >= KERNEL_HALF {
            return object(DataKind::Kernel, None);
        }
        let Some(i) = found else {
            return object(DataKind::Unknown, None);
        };
        let m = maps[i].clone();
        let path: &str = &m.path;
        if path.starts_with("[kernel") {
            return object(DataKind::Kernel, Some(&m));
        }
        if path == "[heap]" {
            return object(DataKind::Heap, Some(&m));
        }
        if path.starts_with("[stack") {
            return object(DataKind::Stack, Some(&m));
        }
        let anonymous = path.is_empty()
            || path.starts_with("//anon")
            || path.starts_with("[anon")
            || path.starts_with("/memfd:")
            || path.starts_with("/dev/zero")
            || path.starts_with("/SYSV");
        // A module's .bss past its last file page is an anonymous mapping right after it.
        let file_mapping = if anonymous {
            i.checked_sub(1)
                .map(|p| &maps[p])
                .filter(|p| {
                    p.end == m.start && p.path.starts_with('/') && !p.path.starts_with("//")
                })
                .cloned()
        } else if path.starts_with('[') {
            return object(DataKind::File, Some(&m));
        } else {
            Some(m.clone())
        };
        let Some(file) = file_mapping else {
            return object(DataKind::Anon, Some(&m));
        };
        let failures = self.failures.len();
        let module = self.module_of_mapping(space, pid, &file);
        if self.failures.len() > failures {
            // A data file (a cache, a database) is no object file: not worth a note.
            self.failures
                .retain(|(p, _), e| !(**p == *file.path && matches!(e, Unavailable::Load(_))));
        }
        let symbol = module.ok().and_then(|module| {
            let vaddr = module.data_vaddr_of(file.file_offset(addr), file.pgoff)?;
            module.data_symbol(vaddr).cloned()
        });
        match symbol {
            Some(sym) => DataObject {
                kind: DataKind::Global,
                mapping: Some(Rc::clone(&file.path)),
                mapping_start: file.start,
                symbol: Some(sym),
            },
            None if anonymous => object(DataKind::Anon, Some(&m)),
            None => object(DataKind::File, Some(&m)),
        }
    }

    /// The ELF symbol containing a module place, and the offset into it (what perf names
    /// an address by, whatever was inlined there).
    pub fn symbol(&self, place: &Place) -> Option<(&str, u64)> {
        match place {
            Place::Module { key, vaddr } => self.loaded(key)?.symbol(*vaddr),
            _ => None,
        }
    }

    /// A module already loaded under `key`.
    pub fn loaded(&self, key: &ModuleKey) -> Option<&Rc<Module>> {
        self.modules.get(key)
    }

    /// Names one place (cached).
    pub fn name(&mut self, place: &Place) -> Named {
        if let Some(n) = self.names.get(place) {
            self.stats.cached += 1;
            return n.clone();
        }
        self.stats.named += 1;
        let named = self.name_uncached(place);
        self.names.insert(place.clone(), named.clone());
        named
    }

    fn name_uncached(&mut self, place: &Place) -> Named {
        let none = |why: String| Named {
            frames: Rc::from(Vec::new()),
            missing: Some(why),
        };
        match place {
            Place::Module { key, vaddr } => match self.loaded(key).cloned() {
                Some(m) => {
                    let found = m.lookup(*vaddr);
                    self.note_lookup_error(key, found.error);
                    Named {
                        frames: Rc::from(found.frames),
                        missing: m.debug_info().reason().map(str::to_string),
                    }
                }
                None => none("module not loaded".into()),
            },
            Place::Kernel(addr) => {
                let found = match &self.local {
                    Ok(()) => crate::kernel::lookup_running(*addr),
                    Err(why) => Err(why.clone()),
                };
                match found {
                    Ok(Some((sym, offset))) => Named {
                        frames: Rc::from(vec![Frame::from_symbol(sym.name, offset, None)]),
                        missing: None,
                    },
                    Ok(None) => none(format!("{addr:#x} is below every kernel symbol")),
                    Err(why) => Named {
                        frames: Rc::from(vec![Frame::from_symbol("[kernel]", 0, None)]),
                        missing: Some(why.to_string()),
                    },
                }
            }
            Place::Anonymous { pid, addr } => {
                if let Err(why) = &self.local {
                    return none(format!("anonymous memory: perf-{pid}.map not read: {why}"));
                }
                let dir = self.perf_map_dir.clone();
                let map = self
                    .perf_maps
                    .entry(*pid)
                    .or_insert_with(|| PerfMap::load(&dir, *pid));
                match map.as_ref().map(|m| m.lookup(*addr)) {
                    Some(Some(sym)) => Named {
                        frames: Rc::from(vec![Frame::from_symbol(
                            &sym.name,
                            addr - sym.start,
                            None,
                        )]),
                        missing: None,
                    },
                    Some(None) => none(format!(
                        "{addr:#x}: in no function of {}",
                        PerfMap::path_for(&dir, *pid).display()
                    )),
                    None => none(format!(
                        "anonymous memory, and no {}",
                        PerfMap::path_for(&dir, *pid).display()
                    )),
                }
            }
            Place::Unknown(why) => none(why.to_string()),
        }
    }

    /// Names many places: sorted and deduplicated, cached ones taken from the cache, and
    /// a module's misses named in parallel when there are at least [`PARALLEL_BATCH`].
    pub fn name_batch(&mut self, places: &[Place]) -> Vec<Named> {
        let mut todo: Vec<&Place> = places
            .iter()
            .filter(|p| !self.names.contains_key(p))
            .collect();
        todo.sort_unstable();
        todo.dedup();
        self.stats.named += todo.len();
        self.stats.cached += places.len() - todo.len();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut start = 0;
        while start < todo.len() {
            // A run of one module's addresses (sorted places keep them together).
            let key = match todo[start] {
                Place::Module { key, .. } => Some(key),
                _ => None,
            };
            let mut end = start + 1;
            while end < todo.len()
                && key.is_some()
                && matches!(todo[end], Place::Module { key: k, .. } if Some(k) == key)
            {
                end += 1;
            }
            let run = &todo[start..end];
            let module = key.and_then(|k| self.loaded(k)).cloned();
            match module {
                Some(module) if run.len() >= PARALLEL_BATCH && threads > 1 => {
                    let vaddrs: Vec<u64> = run
                        .iter()
                        .filter_map(|p| match p {
                            Place::Module { vaddr, .. } => Some(*vaddr),
                            _ => None,
                        })
                        .collect();
                    let k = key.cloned().unwrap_or(ModuleKey::Vdso);
                    let mut workers = self.workers.remove(&k).unwrap_or_default();
                    while workers.len() + 1 < threads {
                        match module.worker() {
                            Ok(w) => workers.push(w),
                            Err(_) => break,
                        }
                    }
                    let found = name_in_parallel(&module, &mut workers, &vaddrs);
                    self.workers.insert(k.clone(), workers);
                    self.stats.parallel_runs += 1;
                    let missing = module.debug_info().reason().map(str::to_string);
                    for (p, f) in run.iter().zip(found) {
                        self.note_lookup_error(&k, f.error);
                        self.names.insert(
                            (*p).clone(),
                            Named {
                                frames: Rc::from(f.frames),
                                missing: missing.clone(),
                            },
                        );
                    }
                }
                _ => {
                    for p in run {
                        let named = self.name_uncached(p);
                        self.names.insert((*p).clone(), named);
                    }
                }
            }
            start = end;
        }
        places.iter().map(|p| self.names[p].clone()).collect()
    }

    /// What it did so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Counts a failed DWARF lookup of module `key`, keeping the first error.
    fn note_lookup_error(&mut self, key: &ModuleKey, error: Option<crate::Error>) {
        if let Some(e) = error {
            self.stats.lookup_errors += 1;
            self.lookup_errors
                .entry(key.clone())
                .or_insert_with(|| (e.to_string(), 0))
                .1 += 1;
        }
    }

    /// Modules that could not be used, with the reason, and modules whose DWARF failed
    /// some lookups (for a profile's notes), in the order of their words.
    pub fn unavailable(&self) -> Vec<Unavailable> {
        let mut out: Vec<Unavailable> = self.failures.values().cloned().collect();
        out.extend(
            self.lookup_errors
                .values()
                .map(|(first, count)| Unavailable::Lookups {
                    first: first.clone(),
                    count: *count,
                }),
        );
        out.sort_by_cached_key(ToString::to_string);
        out
    }
}

/// The frames of sorted `vaddrs` of one module, named by `module` and its `workers` over
/// contiguous chunks (each worker's DWARF tables then cover few compilation units).
fn name_in_parallel(module: &Module, workers: &mut [Module], vaddrs: &[u64]) -> Vec<Lookup> {
    let chunk = vaddrs.len().div_ceil(workers.len() + 1);
    let mut chunks = vaddrs.chunks(chunk.max(1));
    let first = chunks.next().unwrap_or_default();
    std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .zip(workers.iter_mut())
            .map(|(part, worker)| {
                scope.spawn(move || part.iter().map(|&a| worker.lookup(a)).collect::<Vec<_>>())
            })
            .collect();
        let mut out: Vec<Lookup> = first.iter().map(|&a| module.lookup(a)).collect();
        for h in handles {
            // A worker that panicked: nothing of its share is lost, it is named here.
            let at = out.len();
            let want = vaddrs[at..].len().min(chunk);
            match h.join() {
                Ok(part) if part.len() == want => out.extend(part),
                _ => out.extend(vaddrs[at..at + want].iter().map(|&a| module.lookup(a))),
            }
        }
        out
    })
}
