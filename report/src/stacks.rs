//! Named stacks of a capture's samples: the composer of the capture's reading. It owns
//! the address-space model (fed with the capture's records in time order) and, through
//! the symbolizer, the module cache; it hands the unwinder each process's executable
//! modules and the sample's stack bytes ([`Mappings`]), and the symbolizer the places
//! the frames are at, as samply's converter does. The unwinder's frame addresses come
//! back named (inlined frames expanded), as `sparkles script --stacks` prints them and
//! the profile reports read them.

use std::path::PathBuf;
use std::rc::Rc;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use sparkles_perf_data::{PerfData, Record, Sample};
use sparkles_symbolize::address_space::AddressSpace;
use sparkles_symbolize::symbolizer::{DataObject, Located, Place, Symbolizer};
use sparkles_symbolize::SearchPaths;
use sparkles_unwind::{Arch, MappedModule, Mappings, Mode, Stack, Truncation, Unwinder};

use crate::names::{Name, Names};
use crate::notes::Note;

/// The frame a wait hangs under when its stack is the thread's last on-CPU one.
pub const LAST_ON_CPU: &str = "[last on-CPU stack]";

/// What a frame's code is, for colours and for reading a profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// The program's own code (and its dependencies' crates).
    User,
    /// Rust's std, core and alloc.
    Std,
    /// libc and other shared libraries, the vDSO.
    Library,
    /// The kernel.
    Kernel,
    /// Nothing named it.
    Unknown,
    /// Waiting, in a wall-clock profile: `[off-cpu: REASON]` and `[last on-CPU stack]`.
    #[serde(rename = "off-cpu")]
    OffCpu,
}

/// Which kind a named frame is.
pub fn kind_of(f: &NamedFrame) -> Kind {
    let module = f.module.as_deref().unwrap_or("");
    let name = f.function.as_deref().unwrap_or("");
    if f.module.is_none() && (name.starts_with("[off-cpu: ") || name == LAST_ON_CPU) {
        Kind::OffCpu
    } else if module.starts_with("[kernel") || name == "[kernel]" {
        Kind::Kernel
    } else if f.function.is_none() {
        Kind::Unknown
    } else if f.file.as_deref().is_some_and(|p| p.starts_with("/rustc/"))
        || [
            "std::", "core::", "alloc::", "<std::", "<core::", "<alloc::",
        ]
        .iter()
        .any(|p| name.starts_with(p))
    {
        Kind::Std
    } else if module == "[vdso]" || module.ends_with(".so") || module.contains(".so.") {
        Kind::Library
    } else {
        Kind::User
    }
}

/// How a profile's blocks are to be cut.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Blocks {
    /// Whole rounds of the program's phases where the capture runs in rounds, else
    /// [`BLOCKS`](crate::profile::BLOCKS)ths of its samples.
    #[default]
    Found,
    /// The samples come from this many repeats of the same work, evenly spread over the
    /// capture (a bench body's iterations): blocks of whole repeats, no rounds looked for.
    Repeats(u64),
    /// [`BLOCKS`](crate::profile::BLOCKS)ths of the samples whatever the capture holds (the diff's first
    /// estimator, kept to measure the others against).
    Samples,
}

/// How stacks are found and named.
#[derive(Debug, Clone, Default)]
pub struct StackOptions {
    /// How user frames are found.
    pub unwind: Mode,
    /// A root under which the capture's files are looked for (their recorded paths,
    /// then by name).
    pub symfs: Option<PathBuf>,
    /// Directories of separate debug files, searched before /usr/lib/debug.
    pub debug_dirs: Vec<PathBuf>,
    /// What a sample weighs in the profile.
    pub weight: Weighting,
    /// Only the samples of the event of this name; all where `None`.
    pub event: Option<String>,
    /// Folded stacks and flamegraphs rooted at the case: the harness's frames around a
    /// case's body (thread start, `Bencher::serve`, the timing loop) folded into one root
    /// frame named after the case ([`is_harness_frame`]). The flat views keep every frame.
    pub root_at_case: bool,
    /// How the on-CPU profile's blocks (the diff's replicates) are cut.
    pub blocks: Blocks,
    /// Keep an allocation capture's allocator frames (the sampling allocator's own, the
    /// `__rust_alloc` shims, the `alloc` crate's): by default a `sparkles:alloc` sample's
    /// stack starts at the first frame outside them, the code that asked for the bytes
    /// ([`is_allocator_frame`]).
    pub keep_allocator_frames: bool,
}

/// The event names of allocation captures (`--profile=alloc`), whose samples are taken
/// inside the allocator.
pub const ALLOC_EVENT_PREFIX: &str = "sparkles:alloc";

/// The harness's counting allocator's module, as its symbols name it: where it is now
/// (`tiers/alloc/`) and where it was (captures of earlier builds).
const HARNESS_ALLOCATOR: [&str; 2] = ["sparkles_bench::tiers::alloc::", "sparkles_bench::alloc::"];

/// Whether a named frame is the allocator's machinery ([`is_allocator_frame`] by its
/// name, where debug info gives full paths), or inside it: its containing ELF symbol is the
/// allocator's (whatever is inlined into `__rust_alloc` or the sampling allocator, atomics
/// and all), or its source is the standard library's `alloc` crate or its system
/// allocator, or the harness's counting allocator (line-tables-only debug info names
/// inlined frames without their paths: `from_elem`, `reserve`, and the counting
/// allocator's `alloc<std::alloc::System>`, which a test or bench crate that declares it
/// `#[global_allocator]` may inline, `__rust_alloc` and all, into the very function that
/// asks for the bytes).
pub fn is_allocator_code(f: &NamedFrame) -> bool {
    let symbol = f.symbol.as_deref().is_some_and(|s| {
        let path = s.strip_prefix('<').unwrap_or(s);
        is_allocator_shim(s) || HARNESS_ALLOCATOR.iter().any(|p| path.starts_with(p))
    });
    let source = f.file.as_deref().is_some_and(|file| {
        file.contains("/library/alloc/src/")
            || file.contains("/library/core/src/alloc/")
            || file.ends_with("/library/std/src/alloc.rs")
            || (file.contains("/library/std/src/sys/") && file.contains("alloc"))
            || is_harness_allocator_source(file)
    });
    symbol || source || f.function.as_deref().is_some_and(is_allocator_frame)
}

/// Whether `file` is the harness's counting allocator's source: `src/tiers/alloc/` (or,
/// in earlier builds, `src/alloc/`) of the sparkles-bench crate, whether a checkout's
/// `bench-integration/` or the registry's `sparkles-bench-X.Y.Z/` holds it. A user's own
/// crate with such a folder is not it.
fn is_harness_allocator_source(file: &str) -> bool {
    ["/src/tiers/alloc/", "/src/alloc/"].iter().any(|folder| {
        file.find(folder).is_some_and(|at| {
            let package = file[..at].rsplit(['/', '\\']).next().unwrap_or("");
            package == "bench-integration" || package.starts_with("sparkles-bench")
        })
    })
}

/// The global allocator's shims and libc's malloc family.
fn is_allocator_shim(function: &str) -> bool {
    const SHIMS: [&str; 15] = [
        "__rust_alloc",
        "__rust_alloc_zeroed",
        "__rust_realloc",
        "__rg_alloc",
        "__rg_alloc_zeroed",
        "__rg_realloc",
        "__rdl_alloc",
        "__rdl_alloc_zeroed",
        "__rdl_realloc",
        "malloc",
        "calloc",
        "realloc",
        "posix_memalign",
        "aligned_alloc",
        "memalign",
    ];
    // Newer toolchains name the shims `__rustc::__rust_alloc`.
    SHIMS.contains(&function.strip_prefix("__rustc::").unwrap_or(function))
}

/// Whether `function` is the allocator's machinery rather than the code asking for
/// memory: the sampling allocator (`sparkles_bench::alloc`), the global allocator shims
/// (`__rust_alloc`, `__rg_alloc`, `__rdl_alloc`), libc's malloc family, and the `alloc`
/// crate's paths (`alloc::raw_vec::finish_grow`, `<alloc::vec::Vec<T>>::push`,
/// `<[T] as alloc::slice::hack::ConvertVec>::to_vec`).
pub fn is_allocator_frame(function: &str) -> bool {
    if is_allocator_shim(function) {
        return true;
    }
    // The alloc crate's modules by name (a crate of the user's may be called `alloc`: an
    // integration test's file alloc.rs is).
    const MODULES: [&str; 13] = [
        "alloc",
        "raw_vec",
        "vec",
        "boxed",
        "string",
        "collections",
        "slice",
        "str",
        "fmt",
        "rc",
        "sync",
        "borrow",
        "ffi",
    ];
    let in_alloc = |path: &str| {
        path.strip_prefix("alloc::")
            .and_then(|rest| rest.split("::").next())
            .is_some_and(|m| MODULES.contains(&m.split('<').next().unwrap_or(m)))
    };
    let path = function.strip_prefix('<').unwrap_or(function);
    in_alloc(path)
        || ["std::alloc::", "core::alloc::"]
            .iter()
            .chain(&HARNESS_ALLOCATOR)
            .any(|p| path.starts_with(p))
        || function
            .split(" as ")
            .skip(1)
            .any(|t| in_alloc(t) || t.starts_with("core::alloc::"))
}

/// Whether `function` is one of a harness's own frames (or a closure in it): the sparkles
/// harness's, criterion's (whose `Bencher::iter` calls a benchmark's routine, for
/// sparkles-criterion's profiles), or an async runtime's that only ever sit below the
/// futures it runs ([`RUNTIME_FRAMES`]: `block_on`, the scheduler's loop and its task
/// polls), so that an async case's flat views show its own async functions, not the
/// runtime frame the body was inlined into (tokio's `Context::enter`: 30% self of a
/// channel case before).
pub fn is_harness_frame(function: &str) -> bool {
    let path = function.strip_prefix('<').unwrap_or(function);
    ["sparkles_bench::", "criterion::"]
        .iter()
        .chain(&RUNTIME_FRAMES)
        .any(|p| path.starts_with(p))
        || CASE_FRAME.contains(&function)
}

/// Async runtimes' functions that run futures and are never called from one: entering
/// `block_on`, the schedulers' loops, polling a task. Not their wakers, timers, channels
/// or `spawn`, which a body calls (folding those would take the body's frames with them).
const RUNTIME_FRAMES: [&str; 16] = [
    "tokio::runtime::runtime::Runtime::block_on",
    "tokio::runtime::park::CachedParkThread::block_on",
    "tokio::runtime::context::runtime::enter_runtime",
    "tokio::runtime::context::scoped::Scoped",
    "tokio::runtime::context::set_scheduler",
    "tokio::runtime::scheduler::current_thread::CoreGuard",
    "tokio::runtime::scheduler::current_thread::Context::enter",
    "tokio::runtime::scheduler::current_thread::Context::run_task",
    "tokio::runtime::scheduler::current_thread::CurrentThread::block_on",
    "tokio::runtime::scheduler::multi_thread::worker::",
    "tokio::runtime::task::harness::Harness",
    "tokio::runtime::task::raw::poll",
    "tokio::runtime::blocking::pool::",
    "pollster::block_on",
    "futures_executor::local_pool::",
    "async_io::driver::block_on",
];

/// What a sample weighs in a profile.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Weighting {
    /// Its period (events it stands for), as perf weighs samples.
    #[default]
    Period,
    /// Its weight field: the access latency of a memory sample (`WEIGHT`, or
    /// `WEIGHT_STRUCT`'s first field).
    Latency,
    /// One each.
    Samples,
}

impl Weighting {
    /// Its name in profiles: `period`, `latency`, `samples`.
    pub fn as_str(self) -> &'static str {
        match self {
            Weighting::Period => "period",
            Weighting::Latency => "latency",
            Weighting::Samples => "samples",
        }
    }
}

/// One named frame. Its strings are interned in the namer's string table ([`Name`]): a
/// profile copies the frames of each distinct address into every sample that has it, and
/// aggregates key them by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedFrame {
    /// The captured address (the sampled IP, or a return address).
    pub addr: u64,
    /// Function, demangled.
    pub function: Option<Name>,
    /// The mapping's path (`[kernel.kallsyms]`, `[vdso]`, a file).
    pub module: Option<Name>,
    /// Source file.
    pub file: Option<Name>,
    /// Line.
    pub line: Option<u32>,
    /// Inlined into the next frame.
    pub inlined: bool,
    /// The ELF symbol (or kallsyms or perf-map name) containing the address: what
    /// `perf report` names the physical frame by, whatever was inlined into it.
    pub symbol: Option<Name>,
    /// The address's offset into its symbol, where only a symbol table named it.
    pub symbol_offset: Option<u64>,
    /// Why it has no name (or only `[kernel]`).
    pub missing: Option<Name>,
}

/// A sample's named stack.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NamedStack {
    /// Innermost first.
    pub frames: Vec<NamedFrame>,
    /// Why it ends early.
    pub truncated: Option<Truncation>,
}

/// The address space, symbolizer and unwinder of one capture, fed its records in time
/// order.
#[derive(Debug)]
pub struct StackNamer {
    space: AddressSpace,
    symbolizer: Symbolizer,
    unwinder: Unwinder,
    /// The string table every frame's names are interned in.
    names: Names,
    /// The named frames of each place (and return-address adjustment), built once.
    /// The named frames of each place, built once: `[0]` named as sampled, `[1]` named at
    /// a call (a return address minus one, whose symbol offset counts the one back).
    expanded: FxHashMap<Place, [Option<Rc<[NamedFrame]>>; 2]>,
    /// Named stacks already made, by what they were made from: a sample without a stack
    /// copy by its process, mappings generation, IP and callchain; an unwound stack by
    /// its process, generation and frames. A repeated stack is neither unwound (where
    /// it has no copy) nor named again.
    interned: FxHashMap<Box<[u8]>, Known>,
    /// The interned stacks by number.
    by_id: Vec<Rc<NamedStack>>,
    /// Scratch: the key being looked up.
    key: Vec<u8>,
    /// Notes for the user (architecture assumed, …).
    pub notes: Vec<Note>,
    /// Stacks start at the first frame outside the allocator (an allocation capture's).
    trim_allocator: bool,
}

/// A named stack made once, with its number among the distinct stacks made (in order).
#[derive(Debug, Clone)]
pub struct Interned {
    /// The stack.
    pub stack: Rc<NamedStack>,
    /// Its number: the first distinct stack is 0.
    pub id: usize,
}

/// What the namer keeps of a stack it made, by what it was made from: a repeat is counted
/// from this alone, without reading the stack ([`StackNamer::interned`] has it by number).
#[derive(Debug, Clone, Copy)]
struct Known {
    /// Its number.
    id: usize,
    /// Frames the unwinder produced for it (counted again for each sample it names).
    unwound: usize,
    /// Why it ends early.
    truncated: Option<Truncation>,
}

impl Known {
    fn found(&self) -> StackId {
        StackId {
            id: self.id,
            truncated: self.truncated.is_some(),
        }
    }
}

/// What [`StackNamer::interned_id`] says of a sample's stack: its number among the
/// distinct stacks, and whether it was cut short. The stack itself is
/// [`StackNamer::interned`]: a sample of a stack seen before is counted without touching it
/// (with many distinct stacks, reading each one's memory again was a good part of a
/// report's time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackId {
    /// Its number: the first distinct stack is 0.
    pub id: usize,
    /// Whether it ends early.
    pub truncated: bool,
}

impl StackNamer {
    /// For `data`, recorded on the machine its ARCH feature names.
    pub fn for_capture(data: &PerfData, options: &StackOptions) -> StackNamer {
        let mut paths = SearchPaths {
            symfs: options.symfs.clone(),
            ..SearchPaths::default()
        };
        paths
            .debug_dirs
            .splice(0..0, options.debug_dirs.iter().cloned());
        let symbolizer = Symbolizer::for_capture(data, paths);
        let mut notes = Vec::new();
        let arch = match data.features.arch.as_deref() {
            Some(a) => {
                let arch = Arch::from_uname(a);
                if arch.is_none() {
                    notes.push(Note::UnwalkedArch {
                        arch: a.to_string(),
                    });
                }
                arch
            }
            // A capture without ARCH (sparkles writes it; pipes may lack it) is taken as
            // this machine's, and said so.
            None => {
                notes.push(Note::ArchAssumed {
                    arch: std::env::consts::ARCH,
                });
                Arch::from_uname(std::env::consts::ARCH)
            }
        };
        if let Some(why) = symbolizer.kernel_reason() {
            notes.push(Note::NoKernelNames(why.clone()));
        }
        // An allocation capture's samples are all taken inside the allocator.
        let trim_allocator = !options.keep_allocator_frames
            && !data.attrs.is_empty()
            && data.attrs.iter().all(|a| {
                a.name
                    .as_deref()
                    .is_some_and(|n| n.starts_with(ALLOC_EVENT_PREFIX))
            });
        StackNamer {
            trim_allocator,
            space: AddressSpace::new(),
            names: Names::new(),
            symbolizer,
            unwinder: Unwinder::new(options.unwind, arch),
            expanded: FxHashMap::default(),
            interned: FxHashMap::default(),
            by_id: Vec::new(),
            key: Vec::new(),
            notes,
        }
    }

    /// Feeds a record (in time order).
    pub fn observe(&mut self, record: &Record<'_>) {
        self.space.observe(record);
    }

    /// Where `addr` of process `pid` is: its mapping and its place in a module.
    pub fn locate(&mut self, pid: u32, addr: u64) -> sparkles_symbolize::symbolizer::Located {
        self.symbolizer.locate(&self.space, pid, addr)
    }

    /// The capture's symbolizer (its modules, as the records so far loaded them).
    pub fn symbolizer(&mut self) -> &mut Symbolizer {
        &mut self.symbolizer
    }

    /// The named stack of a sample.
    pub fn stack(&mut self, sample: &Sample<'_>) -> NamedStack {
        let raw = self.unwind(sample);
        self.name(sample.pid.unwrap_or(0), &raw)
    }

    /// The named stack of a sample, made once per distinct stack: a sample without a
    /// stack copy whose process, mappings, IP and callchain were seen before is neither
    /// unwound nor named again (only counted); an unwound stack seen before is not named
    /// again.
    pub fn interned_stack(&mut self, sample: &Sample<'_>) -> Interned {
        let id = self.interned_id(sample).id;
        Interned {
            stack: Rc::clone(&self.by_id[id]),
            id,
        }
    }

    /// The interned stack numbered `id` ([`StackNamer::interned_id`]).
    pub fn interned(&self, id: usize) -> &Rc<NamedStack> {
        &self.by_id[id]
    }

    /// [`StackNamer::interned_stack`], giving only the stack's number (and whether it was
    /// cut short).
    pub fn interned_id(&mut self, sample: &Sample<'_>) -> StackId {
        let pid = sample.pid.unwrap_or(0);
        let generation = self.space.generation(pid);
        let copy = sample
            .stack_user
            .as_ref()
            .is_some_and(|s| !s.valid().is_empty());
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        key.extend_from_slice(&pid.to_le_bytes());
        key.extend_from_slice(&generation.to_le_bytes());
        if !copy {
            key.push(0);
            key.extend_from_slice(&sample.ip.unwrap_or(0).to_le_bytes());
            if let Some(chain) = &sample.callchain {
                key.extend_from_slice(chain.0);
            }
            if let Some(hit) = self.interned.get(key.as_slice()).copied() {
                self.unwinder.count_again(hit.unwound, hit.truncated);
                self.key = key;
                return hit.found();
            }
        }
        let raw = self.unwind(sample);
        if copy {
            key.push(1);
            key.push(raw.truncated.map_or(0, |t| t as u8 + 1));
            for f in &raw.frames {
                key.extend_from_slice(&f.addr.to_le_bytes());
                key.extend_from_slice(&f.lookup.to_le_bytes());
            }
            if let Some(hit) = self.interned.get(key.as_slice()).copied() {
                self.key = key;
                return hit.found();
            }
        }
        let stack = self.name(pid, &raw);
        let known = Known {
            id: self.by_id.len(),
            unwound: raw.frames.len(),
            truncated: stack.truncated,
        };
        self.by_id.push(Rc::new(stack));
        self.interned.insert(key.as_slice().into(), known);
        self.key = key;
        known.found()
    }

    /// A sample's frame addresses, unwound against the modules its process maps now.
    pub fn unwind(&mut self, sample: &Sample<'_>) -> Stack {
        let mut mappings = CaptureMappings {
            space: &self.space,
            symbolizer: &mut self.symbolizer,
        };
        self.unwinder.unwind(&mut mappings, sample)
    }

    /// The frames of `raw`, a stack of process `pid`, named.
    pub fn name(&mut self, pid: u32, raw: &Stack) -> NamedStack {
        let mut frames: Vec<NamedFrame> = Vec::with_capacity(raw.frames.len() * 2);
        for f in &raw.frames {
            let at = self.symbolizer.locate(&self.space, pid, f.lookup);
            let delta = usize::from(f.addr != f.lookup);
            let cached = self.expanded.get(&at.place).and_then(|e| e[delta].clone());
            let expanded = match cached {
                Some(e) => e,
                None => {
                    let e = self.expand(&at, delta as u64);
                    // A place nothing names is kept under its reason, which names the
                    // mapping's file where there is one (every address of a module not
                    // found shares one entry).
                    self.expanded.entry(at.place).or_default()[delta] = Some(Rc::clone(&e));
                    e
                }
            };
            for n in expanded.iter() {
                // Kernel frames that may not be named: one `[kernel]` frame for the run.
                if n.function.as_deref() == Some("[kernel]")
                    && frames
                        .last()
                        .is_some_and(|p| p.function.as_deref() == Some("[kernel]"))
                {
                    continue;
                }
                frames.push(NamedFrame {
                    addr: f.addr,
                    ..n.clone()
                });
            }
        }
        if self.trim_allocator {
            // The first frame outside the allocator is the leaf; a stack of nothing but
            // allocator frames keeps its outermost.
            let inside = frames.iter().take_while(|f| is_allocator_code(f)).count();
            frames.drain(..inside.min(frames.len().saturating_sub(1)));
        }
        NamedStack {
            frames,
            truncated: raw.truncated,
        }
    }

    /// The named frames of one located address (`delta`: 1 for a return address named at
    /// its call), address left 0.
    fn expand(&mut self, at: &Located, delta: u64) -> Rc<[NamedFrame]> {
        let names = &mut self.names;
        let mut shown =
            |n: &str| -> Name { names.intern(&sparkles_symbolize::demangle::for_display(n)) };
        let named = self.symbolizer.name(&at.place);
        // The containing symbol; for the kernel, the vDSO's absence or a JIT map, the
        // outermost name.
        let symbol: Option<Name> = match self.symbolizer.symbol(&at.place) {
            Some((n, _)) => Some(shown(n)),
            None if matches!(at.place, Place::Module { .. }) => None,
            None => named
                .frames
                .last()
                .and_then(|n| n.function.as_deref())
                .map(&mut shown),
        };
        let functions: Vec<Option<Name>> = named
            .frames
            .iter()
            .map(|n| n.function.as_deref().map(&mut shown))
            .collect();
        let names = &mut self.names;
        let module: Option<Name> = at.mapping.as_deref().map(|m| names.intern(m));
        let missing: Option<Name> = named.missing.as_deref().map(|m| names.intern(m));
        if named.frames.is_empty() {
            return Rc::from(vec![NamedFrame {
                addr: 0,
                function: None,
                module,
                file: None,
                line: None,
                inlined: false,
                symbol,
                symbol_offset: None,
                missing,
            }]);
        }
        named
            .frames
            .iter()
            .zip(functions)
            .map(|(n, function)| NamedFrame {
                addr: 0,
                // Names as profiles show them: Rust without hashes.
                function,
                module: module.clone(),
                file: n.file.as_deref().map(|f| names.intern(f)),
                line: n.line.filter(|&l| l > 0),
                inlined: n.inlined,
                symbol: symbol.clone(),
                // Named at the call (addr - 1): the offset of `addr` itself.
                symbol_offset: n.symbol_offset.map(|o| o + delta),
                missing: missing.clone(),
            })
            .collect()
    }

    /// What data address `addr` of process `pid` is (a variable, or the kind of memory).
    pub fn data_object(&mut self, pid: u32, addr: u64) -> DataObject {
        self.symbolizer.data_object(&self.space, pid, addr)
    }

    /// `text` in the namer's string table: a frame of the report's own
    /// (`[off-cpu: sleep]`) keys like any other.
    pub fn intern(&mut self, text: &str) -> Name {
        self.names.intern(text)
    }

    /// The unwinder's counts.
    pub fn unwind_stats(&self) -> &sparkles_unwind::Stats {
        self.unwinder.stats()
    }

    /// Modules that could not be used (or not fully), with the reason.
    pub fn unavailable(&self) -> Vec<Note> {
        self.symbolizer
            .unavailable()
            .into_iter()
            .map(Note::Module)
            .collect()
    }
}

/// The unwinder's questions, answered from the capture's address space and the
/// symbolizer's modules.
struct CaptureMappings<'a> {
    space: &'a AddressSpace,
    symbolizer: &'a mut Symbolizer,
}

impl Mappings for CaptureMappings<'_> {
    fn generation(&self, pid: u32) -> u64 {
        self.space.generation(pid)
    }

    fn executable_modules(&mut self, pid: u32) -> Vec<MappedModule> {
        let mut out = Vec::new();
        for m in self.space.mappings(pid) {
            let named_file =
                !m.path.is_empty() && !m.path.starts_with("//") && !m.path.starts_with('[');
            if !(named_file || &*m.path == "[vdso]") || m.prot.is_some_and(|p| p & 4 == 0) {
                continue;
            }
            let Ok(module) = self.symbolizer.module_of_mapping(self.space, pid, m) else {
                continue;
            };
            // A mapping without protection bits (MMAP, not MMAP2) is executable where its
            // segment is.
            if m.prot.is_none() && module.executable_at(m.pgoff) != Some(true) {
                continue;
            }
            let Some(svma) = module.vaddr_of(m.pgoff) else {
                continue;
            };
            out.push(MappedModule {
                name: m.path.to_string(),
                avma: m.start..m.end,
                base_avma: m.start.wrapping_sub(svma),
                image: module.image(),
            });
        }
        out
    }

    fn all_mapped(&self, pid: u32, addrs: &mut dyn Iterator<Item = u64>) -> bool {
        let maps = self.space.mappings(pid);
        for a in addrs {
            let i = maps.partition_point(|m| m.start <= a);
            if i == 0 || a >= maps[i - 1].end {
                return false;
            }
        }
        true
    }

    fn symbol_name(&mut self, pid: u32, addr: u64) -> Option<&str> {
        let place = self.symbolizer.locate(self.space, pid, addr).place;
        self.symbolizer.symbol(&place).map(|(name, _)| name)
    }
}

fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn json_opt(s: Option<&str>) -> String {
    s.map_or_else(|| "null".to_string(), json_str)
}

/// `,"stack":[…],"truncated":…`: the members `sparkles script --stacks` adds to a sample.
pub fn json_members(stack: &NamedStack) -> String {
    let mut out = String::from(",\"stack\":[");
    for (i, f) in stack.frames.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            "{{\"addr\":\"{:#x}\",\"function\":{},\"module\":{},\"file\":{},\"line\":{},\"inlined\":{}",
            f.addr,
            json_opt(f.function.as_deref()),
            json_opt(f.module.as_deref()),
            json_opt(f.file.as_deref()),
            f.line.map_or_else(|| "null".to_string(), |l| l.to_string()),
            f.inlined
        ));
        if let Some(o) = f.symbol_offset {
            out.push_str(&format!(",\"symbol_offset\":{o}"));
        }
        if let Some(m) = &f.missing {
            out.push_str(&format!(",\"missing\":{}", json_str(m)));
        }
        out.push('}');
    }
    out.push_str("],\"truncated\":");
    out.push_str(&json_opt(stack.truncated.map(Truncation::as_str)));
    out
}

/// The stack as text lines under a sample's line, perf script's way:
/// `\tADDR function+0xOFF (module)`.
pub fn text_lines(stack: &NamedStack) -> String {
    let mut out = String::new();
    for f in &stack.frames {
        let name = f.function.as_deref().unwrap_or("[unknown]");
        let offset = f
            .symbol_offset
            .map(|o| format!("+{o:#x}"))
            .unwrap_or_default();
        let place = match (&f.file, f.line) {
            (Some(file), Some(line)) => format!(" {file}:{line}"),
            _ => String::new(),
        };
        out.push_str(&format!(
            "\t{:16x} {name}{offset}{}{place} ({})\n",
            f.addr,
            if f.inlined { " (inlined)" } else { "" },
            f.module.as_deref().unwrap_or("[unknown]")
        ));
    }
    if let Some(t) = stack.truncated {
        out.push_str(&format!("\t[truncated: {t}]\n"));
    }
    out
}

/// How well a capture's stacks unwound: what every `--profile` run reports per case.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UnwindSummary {
    /// Samples unwound.
    pub samples: u64,
    /// Samples with user frames.
    pub user_samples: u64,
    /// User samples whose stack reached its root (`_start`, the thread's start).
    pub reached_root: u64,
    /// User samples whose stack holds the harness frame that runs the case's body
    /// (`profile_pass`): every frame of the case is in them.
    pub reached_case: u64,
    /// Truncated user stacks, per cause.
    pub truncated: std::collections::BTreeMap<String, u64>,
}

impl UnwindSummary {
    /// One line for the user.
    pub fn describe(&self) -> String {
        let pct = |n: u64| 100.0 * n as f64 / self.user_samples.max(1) as f64;
        let mut s = format!(
            "{} user samples unwound: {:.1}% reach the case, {:.1}% their thread's root",
            self.user_samples,
            pct(self.reached_case),
            pct(self.reached_root)
        );
        for (cause, n) in &self.truncated {
            s.push_str(&format!("; {n} truncated ({cause})"));
        }
        s
    }
}

/// The harness function that runs a case's body under the sampler: its full path, or,
/// inlined into its caller, the short name DWARF gives inlined functions.
const CASE_FRAME: [&str; 2] = ["sparkles_bench::bencher::profile_pass", "profile_pass"];

impl UnwindSummary {
    /// Counts one sample's stack.
    pub fn add(&mut self, stack: &NamedStack) {
        self.samples += 1;
        let user = stack.frames.iter().any(|f| {
            f.module
                .as_deref()
                .is_some_and(|m| !m.starts_with("[kernel"))
        });
        if !user {
            return;
        }
        self.user_samples += 1;
        match stack.truncated {
            None => self.reached_root += 1,
            Some(t) => *self.truncated.entry(t.as_str().to_string()).or_default() += 1,
        }
        if stack.frames.iter().any(|f| {
            f.function
                .as_deref()
                .is_some_and(|n| CASE_FRAME.contains(&n))
        }) {
            self.reached_case += 1;
        }
    }
}

/// A frame of `function` at `line` in `/bin/app`'s `app.rs`, for tests that build stacks.
#[cfg(test)]
pub(crate) fn test_frame(names: &mut crate::names::Names, function: &str, line: u32) -> NamedFrame {
    NamedFrame {
        addr: 0x1000,
        function: Some(names.intern(function)),
        module: Some(names.intern("/bin/app")),
        file: Some(names.intern("app.rs")),
        line: Some(line),
        inlined: false,
        symbol: None,
        symbol_offset: None,
        missing: None,
    }
}

#[cfg(test)]
mod allocator_frame_tests {
    use super::is_allocator_frame;

    #[test]
    fn an_async_runtimes_loop_is_the_harnesss_its_wakers_and_channels_are_the_bodys() {
        use super::is_harness_frame;
        for f in [
            "sparkles_bench::bencher::profile_pass",
            "<sparkles_bench::bencher::Plain<F> as sparkles_bench::bencher::Routine>::run",
            "criterion::bencher::Bencher<M>::iter",
            "tokio::runtime::scheduler::current_thread::Context::enter",
            "tokio::runtime::scheduler::current_thread::CoreGuard::block_on::{{closure}}",
            "tokio::runtime::scheduler::multi_thread::worker::Context::run_task",
            "tokio::runtime::park::CachedParkThread::block_on",
            "tokio::runtime::runtime::Runtime::block_on",
            "tokio::runtime::task::harness::Harness<T,S>::poll",
            "<tokio::runtime::context::scoped::Scoped<T>>::set",
            "pollster::block_on",
        ] {
            assert!(is_harness_frame(f), "{f}");
        }
        for f in [
            "channels::main::{{closure}}::{{closure}}",
            "tokio::sync::mpsc::chan::Rx<T,S>::recv",
            "tokio::sync::task::atomic_waker::AtomicWaker::wake",
            "tokio::runtime::task::waker::wake_by_val",
            "tokio::runtime::context::with_scheduler",
            "tokio::task::spawn::spawn",
            "<tokio::sync::batch_semaphore::Acquire as core::future::future::Future>::poll",
            "mycrate::block_on_everything",
        ] {
            assert!(!is_harness_frame(f), "{f}");
        }
    }

    #[test]
    fn the_allocator_and_the_alloc_crate_are_machinery_the_callers_are_not() {
        for f in [
            "sparkles_bench::alloc::sampling::take",
            "<sparkles_bench::alloc::Counting<A> as core::alloc::global::GlobalAlloc>::alloc",
            "sparkles_bench::tiers::alloc::sampling::take",
            "<sparkles_bench::tiers::alloc::Counting<A> as core::alloc::global::GlobalAlloc>::alloc",
            "__rustc::__rust_alloc",
            "__rust_realloc",
            "__rdl_alloc",
            "malloc",
            "alloc::raw_vec::finish_grow",
            "<alloc::raw_vec::RawVecInner<A>>::reserve::do_reserve_and_handle",
            "<alloc::vec::Vec<T,A> as core::clone::Clone>::clone",
            "alloc::alloc::exchange_malloc",
            "<[T] as alloc::slice::hack::ConvertVec>::to_vec",
            "<u8 as alloc::vec::spec_from_elem::SpecFromElem>::from_elem",
            "alloc::fmt::format::format_inner",
        ] {
            assert!(is_allocator_frame(f), "{f}");
        }
        for f in [
            // An integration test's crate is named after its file: tests/alloc.rs.
            "alloc::steady_bytes",
            "alloc::profiled_suite::{{closure}}",
            "serde_json::de::from_str",
            "mycrate::parse",
            "<mycrate::Tree as core::clone::Clone>::clone",
            "hashbrown::raw::RawTable<T,A>::reserve_rehash",
        ] {
            assert!(!is_allocator_frame(f), "{f}");
        }
    }

    #[test]
    fn short_names_from_line_tables_are_told_by_their_symbol_and_source() {
        use super::{is_allocator_code, NamedFrame};
        let mut names = crate::names::Names::new();
        let mut frame = |function: &str, symbol: &str, file: &str| NamedFrame {
            addr: 0,
            function: Some(names.intern(function)),
            module: None,
            file: Some(names.intern(file)),
            line: Some(1),
            inlined: true,
            symbol: Some(names.intern(symbol)),
            symbol_offset: None,
            missing: None,
        };
        let rustc = "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library";
        // The sampling allocator inlined into the shim; the alloc crate's inlined helpers.
        assert!(is_allocator_code(&frame(
            "on_alloc",
            "__rustc::__rust_alloc",
            "/src/bench-integration/src/alloc/sampling.rs"
        )));
        assert!(is_allocator_code(&frame(
            "from_elem",
            "demo::json_value",
            &format!("{rustc}/alloc/src/vec/spec_from_elem.rs")
        )));
        // The counting allocator, `__rust_alloc` and all inlined into the function that
        // asks (a test crate that declares it `#[global_allocator]`), from a checkout
        // and from the registry; the system allocator's inlined helper under it.
        for file in [
            "/work/main/bench-integration/src/tiers/alloc/mod.rs",
            "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/sparkles-bench-0.1.0/src/tiers/alloc/mod.rs",
        ] {
            assert!(is_allocator_code(&frame(
                "alloc<std::alloc::System>",
                "alloc::profiled::planted_bytes",
                file
            )));
        }
        assert!(is_allocator_code(&frame(
            "aligned_malloc",
            "alloc::profiled::planted_bytes",
            &format!("{rustc}/std/src/sys/alloc/unix.rs")
        )));
        // A user's own crate with such a folder, and the function asking, are not.
        assert!(!is_allocator_code(&frame(
            "alloc<std::alloc::System>",
            "mycrate::arena::grow",
            "/work/mycrate/src/tiers/alloc/mod.rs"
        )));
        assert!(!is_allocator_code(&frame(
            "planted_bytes",
            "alloc::profiled::planted_bytes",
            "/work/main/bench-integration/tests/alloc.rs"
        )));
        // The code asking for the bytes, whatever it is inlined into.
        assert!(!is_allocator_code(&frame(
            "parse_object",
            "serde_json::de::from_str",
            "/cargo/registry/serde_json-1.0/src/de.rs"
        )));
        assert!(!is_allocator_code(&frame(
            "{closure#0}",
            "alloc::raw_vec::finish_grow",
            "/work/mycrate/src/lib.rs"
        )));
    }
}
