//! sparkles-unwind: turns one sample (kernel callchain, user registers, user stack bytes)
//! into a list of frame addresses, innermost first. It is handed what it needs, as
//! framehop is: whoever reads the capture owns its address space and module images and
//! answers the [`Mappings`] questions (which executable modules a process maps, with
//! their file bytes; whether an address is mapped; the symbol a root frame is in). It
//! does not depend on the symbolizer.
//!
//! - User frames: framehop over `.eh_frame`/`.eh_frame_hdr`/`.debug_frame` of the modules
//!   the process maps (read from their images, once per image, never copied unless
//!   compressed), with framehop's frame-pointer fallback where a module has no rule; or
//!   frame pointers alone (`--unwind fp`); or, where the sample carries no stack copy,
//!   the user part of the kernel's frame-pointer callchain (`auto`, the default).
//! - Kernel frames: the kernel part of the callchain, PERF_CONTEXT markers handled.
//! - Every frame but the leaf (and the interrupted user IP under kernel frames) is a
//!   return address; [`Frame::lookup`] is the call site (address minus one) so the
//!   caller's line is named, not the next one's.
//! - A stack that does not end at a root frame (framehop's end-of-stack rule:
//!   `_start`, a thread's start) carries its [`Truncation`] cause, counted per cause in
//!   [`Stats`].
//!
//! x86_64 and aarch64 (perf's register numbering for each).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;
use std::ops::{Deref, Range};
use std::sync::Arc;

use framehop::aarch64::{CacheAarch64, UnwindRegsAarch64, UnwinderAarch64};
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, Unwinder as _};
use sparkles_perf_data::sample::{Regs, KERNEL_HALF};
use sparkles_perf_data::Sample;

/// How user frames are found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// DWARF CFI over the sample's stack copy (frame pointers where a module has no rule).
    Dwarf,
    /// Frame pointers: over the stack copy where there is one, else the kernel's
    /// frame-pointer callchain.
    Fp,
    /// DWARF where the sample carries a stack copy, else the kernel's callchain.
    #[default]
    Auto,
}

/// A spelling that names no unwind mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown unwind mode '{0}' (dwarf, fp or auto)")]
pub struct UnknownMode(pub String);

impl std::str::FromStr for Mode {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<Mode, UnknownMode> {
        match s {
            "dwarf" => Ok(Mode::Dwarf),
            "fp" => Ok(Mode::Fp),
            "auto" => Ok(Mode::Auto),
            other => Err(UnknownMode(other.to_string())),
        }
    }
}

impl Mode {
    /// Its name: `dwarf`, `fp`, `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Dwarf => "dwarf",
            Mode::Fp => "fp",
            Mode::Auto => "auto",
        }
    }
}

/// A module's file bytes, shared with whoever else reads them (a mapped file, or an image
/// read from memory such as the vDSO).
pub type Image = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// A module mapped into a process, as the unwinder needs it.
#[derive(Clone)]
pub struct MappedModule {
    /// Its path, for framehop's messages.
    pub name: String,
    /// Where it is mapped.
    pub avma: Range<u64>,
    /// The address its ELF virtual address 0 is mapped at: the mapping's start minus the
    /// vaddr of the file offset mapped there.
    pub base_avma: u64,
    /// Its file bytes: the unwind sections are read from them, once per image.
    pub image: Image,
}

impl std::fmt::Debug for MappedModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedModule")
            .field("name", &self.name)
            .field("avma", &self.avma)
            .field("base_avma", &self.base_avma)
            .finish()
    }
}

/// What the unwinder asks of the capture's address-space model (its owner answers).
pub trait Mappings {
    /// A number that changes whenever `pid`'s mappings change.
    fn generation(&self, pid: u32) -> u64;
    /// The executable file mappings of `pid`, each with its module's image.
    fn executable_modules(&mut self, pid: u32) -> Vec<MappedModule>;
    /// Whether every address of `addrs` lies in a mapping of `pid` (asked once per stack,
    /// so the process's mappings are looked up once).
    fn all_mapped(&self, pid: u32, addrs: &mut dyn Iterator<Item = u64>) -> bool;
    /// The symbol-table name of the function holding `addr` in `pid`, where one does.
    fn symbol_name(&mut self, pid: u32, addr: u64) -> Option<&str>;
}

/// The machine the capture was recorded on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// x86_64: perf registers BP 6, SP 7, IP 8.
    X86_64,
    /// aarch64: perf registers x29 (fp) 29, lr 30, sp 31, pc 32.
    Aarch64,
}

impl Arch {
    /// From a capture's ARCH feature (`uname -m`), where known.
    pub fn from_uname(machine: &str) -> Option<Arch> {
        match machine {
            "x86_64" => Some(Arch::X86_64),
            "aarch64" | "arm64" => Some(Arch::Aarch64),
            _ => None,
        }
    }
}

/// Why a stack ends before its root frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Truncation {
    /// The walk needed stack bytes past the end of the copy the kernel took.
    StackCopyTooShort,
    /// The walk read outside the stack copy, below it: a corrupt frame or a wrong rule.
    ReadOutsideStack,
    /// The walk stopped advancing (a loop, or a frame pointer moving backwards).
    NotAdvancing,
    /// A return address lies in no mapping of the process.
    AddressInNoMapping,
    /// The sample has no stack copy and no callchain to unwind with.
    NoCallGraph,
    /// The sample has a stack copy but no 64-bit user registers.
    NoRegisters,
    /// More frames than [`MAX_FRAMES`].
    TooDeep,
    /// The kernel's frame-pointer callchain was used, and it ended in a function that is
    /// not a thread's root (`_start`, libc's thread start, Rust's `thread_start`).
    KernelCallchain,
    /// The capture's architecture is one this unwinder does not walk.
    UnsupportedArch,
}

impl Truncation {
    /// A short, stable name (JSON, stats).
    pub fn as_str(self) -> &'static str {
        match self {
            Truncation::StackCopyTooShort => "stack copy too short",
            Truncation::ReadOutsideStack => "read outside the stack copy",
            Truncation::NotAdvancing => "unwinding did not advance",
            Truncation::AddressInNoMapping => "return address in no mapping",
            Truncation::NoCallGraph => "no call graph recorded",
            Truncation::NoRegisters => "no user registers recorded",
            Truncation::TooDeep => "too many frames",
            Truncation::KernelCallchain => "kernel callchain ended before the thread's root",
            Truncation::UnsupportedArch => "architecture not supported for stack walking",
        }
    }
}

impl std::fmt::Display for Truncation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// At most this many frames per stack.
pub const MAX_FRAMES: usize = 512;

/// One frame address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// The address as captured: the sampled instruction for the leaf, else a return
    /// address.
    pub addr: u64,
    /// The address to name: `addr` for the sampled IP and the interrupted user IP,
    /// `addr - 1` (inside the call) for return addresses.
    pub lookup: u64,
    /// A kernel frame.
    pub kernel: bool,
}

/// A sample's stack.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stack {
    /// Innermost first.
    pub frames: Vec<Frame>,
    /// Why it ends early, or `None` when it reached its root.
    pub truncated: Option<Truncation>,
}

/// Counts over the samples unwound.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Samples unwound.
    pub samples: u64,
    /// Of them, stacks that reached their root.
    pub complete: u64,
    /// Truncated stacks, per cause.
    pub truncated: BTreeMap<Truncation, u64>,
    /// Frames produced.
    pub frames: u64,
}

impl Stats {
    /// Truncated stacks over samples, percent.
    pub fn truncated_pct(&self) -> f64 {
        let t: u64 = self.truncated.values().sum();
        if self.samples == 0 {
            0.0
        } else {
            100.0 * t as f64 / self.samples as f64
        }
    }

    /// One line: `N samples, M complete, causes…`.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} samples unwound, {} reached their root",
            self.samples, self.complete
        );
        for (cause, n) in &self.truncated {
            s.push_str(&format!(", {n} truncated: {cause}"));
        }
        s
    }
}

/// A module section's bytes: a range of the module's image (never copied), or of the
/// bytes a compressed section decompressed to.
#[derive(Clone)]
pub struct Bytes {
    image: Image,
    range: Range<usize>,
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bytes({} bytes)", self.len())
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &(*self.image).as_ref()[self.range.clone()]
    }
}

/// The unwind sections of one module file, found once per file.
#[derive(Debug, Clone, Default)]
struct Sections {
    text: Option<(Range<u64>, Bytes)>,
    eh_frame: Option<(Range<u64>, Bytes)>,
    eh_frame_hdr: Option<(Range<u64>, Bytes)>,
    debug_frame: Option<Bytes>,
    got: Option<Range<u64>>,
}

fn sections_of(map: &Image) -> Sections {
    use object::{Object, ObjectSection};
    let bytes: &[u8] = (**map).as_ref();
    let Ok(file) = object::File::parse(bytes) else {
        return Sections::default();
    };
    let find = |name: &str| -> Option<(Range<u64>, Bytes)> {
        let s = file.section_by_name(name)?;
        let range = s.address()..s.address() + s.size();
        let bytes = match s.compressed_file_range().ok()? {
            r if r.format == object::CompressionFormat::None => {
                // A section header pointing past the file (a corrupt or truncated ELF)
                // gives no section, not a panic.
                let (start, size) = s.file_range()?;
                let end = start.checked_add(size)?;
                if end > bytes.len() as u64 {
                    return None;
                }
                Bytes {
                    image: Arc::clone(map),
                    range: start as usize..end as usize,
                }
            }
            // The decompressed vector moves into the Arc: its bytes are not copied.
            _ => {
                let image: Image = Arc::new(s.uncompressed_data().ok()?.into_owned());
                let len = (*image).as_ref().len();
                Bytes {
                    image,
                    range: 0..len,
                }
            }
        };
        Some((range, bytes))
    };
    Sections {
        text: find(".text"),
        eh_frame: find(".eh_frame"),
        eh_frame_hdr: find(".eh_frame_hdr"),
        debug_frame: find(".debug_frame").map(|(_, b)| b),
        got: file
            .section_by_name(".got")
            .map(|s| s.address()..s.address() + s.size()),
    }
}

impl Sections {
    fn info(&self) -> ExplicitModuleSectionInfo<Bytes> {
        ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: self.text.as_ref().map(|t| t.0.clone()),
            text: self.text.as_ref().map(|t| t.1.clone()),
            got_svma: self.got.clone(),
            eh_frame_svma: self.eh_frame.as_ref().map(|t| t.0.clone()),
            eh_frame: self.eh_frame.as_ref().map(|t| t.1.clone()),
            eh_frame_hdr_svma: self.eh_frame_hdr.as_ref().map(|t| t.0.clone()),
            eh_frame_hdr: self.eh_frame_hdr.as_ref().map(|t| t.1.clone()),
            debug_frame: self.debug_frame.clone(),
            stubs_svma: None,
            stub_helper_svma: None,
            unwind_info: None,
            text_segment_svma: None,
            text_segment: None,
        }
    }
}

/// One process's framehop unwinder and the mappings it was given.
struct Process {
    x86_64: UnwinderX86_64<Bytes>,
    aarch64: UnwinderAarch64<Bytes>,
    generation: Option<u64>,
    added: Vec<u64>,
}

/// The unwinder of a capture: per process, framehop fed with the modules the address
/// space maps; one rule cache across all samples.
pub struct Unwinder {
    mode: Mode,
    arch: Option<Arch>,
    processes: HashMap<u32, Process>,
    /// Sections per module file (by its image's address: one per loaded module).
    sections: HashMap<usize, Sections>,
    cache_x86_64: CacheX86_64,
    cache_aarch64: CacheAarch64,
    /// An empty unwinder: frame pointers only.
    fp_x86_64: UnwinderX86_64<Bytes>,
    fp_aarch64: UnwinderAarch64<Bytes>,
    stats: Stats,
}

impl std::fmt::Debug for Unwinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unwinder")
            .field("mode", &self.mode)
            .field("arch", &self.arch)
            .field("processes", &self.processes.len())
            .field("stats", &self.stats)
            .finish()
    }
}

const PERF_CONTEXT_HV: u64 = -32i64 as u64;
const PERF_CONTEXT_KERNEL: u64 = -128i64 as u64;
const PERF_CONTEXT_USER: u64 = -512i64 as u64;
const PERF_CONTEXT_GUEST: u64 = -2048i64 as u64;
const PERF_CONTEXT_GUEST_KERNEL: u64 = -2176i64 as u64;
const PERF_CONTEXT_GUEST_USER: u64 = -2560i64 as u64;
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;

/// The kernel and user parts of a callchain, markers removed (guest and hypervisor
/// entries dropped).
pub fn split_callchain(chain: impl IntoIterator<Item = u64>) -> (Vec<u64>, Vec<u64>) {
    let (mut kernel, mut user) = (Vec::new(), Vec::new());
    // Entries before any marker are the kernel's, as perf reads them.
    let mut context = PERF_CONTEXT_KERNEL;
    for ip in chain {
        if ip >= PERF_CONTEXT_MAX {
            context = ip;
            continue;
        }
        match context {
            PERF_CONTEXT_KERNEL => kernel.push(ip),
            PERF_CONTEXT_USER => user.push(ip),
            PERF_CONTEXT_HV
            | PERF_CONTEXT_GUEST
            | PERF_CONTEXT_GUEST_KERNEL
            | PERF_CONTEXT_GUEST_USER => {}
            _ => {}
        }
    }
    (kernel, user)
}

/// Functions a thread's stack starts in: the process's entry and libc's thread start
/// (`clone3` calls `start_thread`), and Rust's thread entry.
const ROOTS: [&str; 9] = [
    "_start",
    "__libc_start_main",
    "__libc_start_call_main",
    "start_thread",
    "clone",
    "clone3",
    "__clone",
    "__clone3",
    "__GI___clone3",
];

/// Whether a symbol-table name is a thread's root function (a versioned name such as
/// `clone3@GLIBC_2.34` counts as its function).
pub fn is_root_symbol(name: &str) -> bool {
    let name = name.split('@').next().unwrap_or(name);
    ROOTS.contains(&name)
        || ((name.starts_with("_ZN") || name.starts_with("_R"))
            && format!("{:#}", rustc_demangle::demangle(name)).ends_with("::thread_start"))
}

/// Whether the ELF symbol covering `addr` of `pid` is a thread's root function.
fn is_root(mappings: &mut (impl Mappings + ?Sized), pid: u32, addr: u64) -> bool {
    mappings.symbol_name(pid, addr).is_some_and(is_root_symbol)
}

/// Reads 8-byte words of a stack copy that starts at `sp`, remembering where a read
/// failed.
struct StackReader<'a> {
    sp: u64,
    bytes: &'a [u8],
    failed_at: Option<u64>,
}

impl StackReader<'_> {
    fn read(&mut self, addr: u64) -> Result<u64, ()> {
        let word = addr
            .checked_sub(self.sp)
            .and_then(|off| usize::try_from(off).ok())
            .and_then(|off| self.bytes.get(off..off.checked_add(8)?))
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]));
        if word.is_none() {
            self.failed_at = Some(addr);
        }
        word.ok_or(())
    }

    /// What a failed read means.
    fn cause(&self, err: &framehop::Error) -> Truncation {
        match err {
            framehop::Error::CouldNotReadStack(addr) => {
                let addr = self.failed_at.unwrap_or(*addr);
                if addr >= self.sp.saturating_add(self.bytes.len() as u64)
                    && addr < self.sp.saturating_add(1 << 24)
                {
                    Truncation::StackCopyTooShort
                } else {
                    Truncation::ReadOutsideStack
                }
            }
            framehop::Error::FramepointerUnwindingMovedBackwards
            | framehop::Error::DidNotAdvance
            | framehop::Error::IntegerOverflow => Truncation::NotAdvancing,
            framehop::Error::ReturnAddressIsNull => Truncation::NotAdvancing,
        }
    }
}

impl Unwinder {
    /// An unwinder in `mode` for captures of `arch` (`None`: an architecture it cannot
    /// walk; callchains are still used, stack copies are not).
    pub fn new(mode: Mode, arch: impl Into<Option<Arch>>) -> Unwinder {
        let arch = arch.into();
        Unwinder {
            mode,
            arch,
            processes: HashMap::default(),
            sections: HashMap::default(),
            cache_x86_64: CacheX86_64::new(),
            cache_aarch64: CacheAarch64::new(),
            fp_x86_64: UnwinderX86_64::new(),
            fp_aarch64: UnwinderAarch64::new(),
            stats: Stats::default(),
        }
    }

    /// Counts so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Gives process `pid`'s unwinder every executable module it maps (again whenever
    /// its mappings changed).
    fn sync(&mut self, mappings: &mut (impl Mappings + ?Sized), pid: u32) {
        let generation = mappings.generation(pid);
        let process = self.processes.entry(pid).or_insert_with(|| Process {
            x86_64: UnwinderX86_64::new(),
            aarch64: UnwinderAarch64::new(),
            generation: None,
            added: Vec::new(),
        });
        if process.generation == Some(generation) {
            return;
        }
        process.generation = Some(generation);
        for start in process.added.drain(..) {
            process.x86_64.remove_module(start);
            process.aarch64.remove_module(start);
        }
        for m in mappings.executable_modules(pid) {
            // The image's address names it: one parse of its sections per image.
            let key = Arc::as_ptr(&m.image) as *const () as usize;
            let sections = self
                .sections
                .entry(key)
                .or_insert_with(|| sections_of(&m.image));
            let module = |sections: &Sections| {
                framehop::Module::new(m.name.clone(), m.avma.clone(), m.base_avma, sections.info())
            };
            process.x86_64.add_module(module(sections));
            process.aarch64.add_module(module(sections));
            process.added.push(m.avma.start);
        }
    }

    /// The stack of `sample`, its process's modules and mappings as `mappings` has them
    /// at the sample's time.
    pub fn unwind(
        &mut self,
        mappings: &mut (impl Mappings + ?Sized),
        sample: &Sample<'_>,
    ) -> Stack {
        let stack = self.unwind_inner(mappings, sample);
        self.count_again(stack.frames.len(), stack.truncated);
        stack
    }

    /// Counts a sample whose stack is one unwound before (`frames` frames, ending as
    /// `truncated` says): what a caller that keeps unwound stacks tells the counts.
    pub fn count_again(&mut self, frames: usize, truncated: Option<Truncation>) {
        self.stats.samples += 1;
        self.stats.frames += frames as u64;
        match truncated {
            None => self.stats.complete += 1,
            Some(t) => *self.stats.truncated.entry(t).or_default() += 1,
        }
    }

    fn unwind_inner(
        &mut self,
        mappings: &mut (impl Mappings + ?Sized),
        sample: &Sample<'_>,
    ) -> Stack {
        let pid = sample.pid.unwrap_or(0);
        let (kernel, user_chain) = match &sample.callchain {
            Some(c) => split_callchain((0..c.len()).filter_map(|i| c.get(i))),
            None => (Vec::new(), Vec::new()),
        };
        let ip = sample.ip.unwrap_or(0);
        let in_kernel = ip >= KERNEL_HALF;
        let mut frames: Vec<Frame> = Vec::with_capacity(64);
        // The kernel part: from the callchain, else the sampled IP alone.
        if in_kernel {
            if kernel.is_empty() {
                frames.push(Frame {
                    addr: ip,
                    lookup: ip,
                    kernel: true,
                });
            } else {
                frames.extend(kernel.iter().map(|&a| Frame {
                    addr: a,
                    lookup: a,
                    kernel: true,
                }));
            }
        }
        // PERF_SAMPLE_REGS_ABI_64 is 2; a 32-bit task's registers (ABI 1) are not walked
        // as 64-bit ones.
        let regs = sample.regs_user.as_ref().filter(|r| r.abi == 2);
        let stack_copy = sample
            .stack_user
            .as_ref()
            .map(|s| s.valid())
            .filter(|s| !s.is_empty());
        let wants_copy = match self.mode {
            Mode::Dwarf => true,
            Mode::Fp | Mode::Auto => stack_copy.is_some(),
        };
        // Why the stack copy cannot be walked, when one is wanted and it cannot.
        let cannot_walk = if !wants_copy {
            None
        } else if stack_copy.is_none() {
            Some(Truncation::NoCallGraph)
        } else if regs.is_none() {
            Some(Truncation::NoRegisters)
        } else if self.arch.is_none() {
            Some(Truncation::UnsupportedArch)
        } else {
            None
        };
        let mut truncated = None;
        match (regs, stack_copy) {
            (Some(regs), Some(bytes)) if wants_copy && cannot_walk.is_none() => {
                self.sync(mappings, pid);
                truncated = self.walk(pid, regs, bytes, &mut frames);
            }
            // The kernel's frame-pointer walk of the user stack, where it made one.
            _ if !user_chain.is_empty() => {
                frames.extend(user_chain.iter().map(|&a| Frame {
                    addr: a,
                    lookup: a,
                    kernel: false,
                }));
                truncated = Some(Truncation::KernelCallchain);
            }
            // Nothing to walk with: the sampled user IP alone, and why. A kernel sample
            // whose callchain has no user part (a kernel thread) is complete.
            _ => {
                if !in_kernel {
                    frames.push(Frame {
                        addr: ip,
                        lookup: ip,
                        kernel: false,
                    });
                }
                if !(in_kernel && sample.callchain.is_some()) {
                    truncated = Some(cannot_walk.unwrap_or(Truncation::NoCallGraph));
                }
            }
        }
        // Every frame but the first of each context is a return address: name the call,
        // not what follows it. The first kernel frame is the sampled IP; the first user
        // frame is the interrupted user IP (a faulting instruction, or the one after a
        // syscall), which perf and perfparser name as it is.
        let first_user = frames.iter().position(|f| !f.kernel);
        for (i, f) in frames.iter_mut().enumerate() {
            if i != 0 && Some(i) != first_user {
                f.lookup = f.addr.saturating_sub(1);
            }
        }
        // A user return address in no mapping is a corrupt frame (or unnamed JIT code).
        if truncated.is_none() {
            let mut user = frames.iter().skip(1).filter(|f| !f.kernel).map(|f| f.addr);
            if !mappings.all_mapped(pid, &mut user) {
                truncated = Some(Truncation::AddressInNoMapping);
            }
        }
        if frames.len() > MAX_FRAMES {
            frames.truncate(MAX_FRAMES);
            truncated = Some(Truncation::TooDeep);
        }
        // A walk that stopped with an error, or the kernel's frame-pointer walk (which
        // never says), is complete when its outermost frame is a thread's root function.
        if matches!(
            truncated,
            Some(
                Truncation::KernelCallchain
                    | Truncation::NotAdvancing
                    | Truncation::ReadOutsideStack
                    | Truncation::StackCopyTooShort
            )
        ) && frames
            .last()
            .filter(|f| !f.kernel)
            .is_some_and(|f| is_root(mappings, pid, f.lookup))
        {
            truncated = None;
        }
        Stack { frames, truncated }
    }

    /// Walks the user stack copy from the user registers.
    fn walk(
        &mut self,
        pid: u32,
        regs: &Regs<'_>,
        bytes: &[u8],
        frames: &mut Vec<Frame>,
    ) -> Option<Truncation> {
        let fp_only = self.mode == Mode::Fp;
        let process = self.processes.get(&pid).filter(|_| !fp_only);
        match self.arch {
            None => Some(Truncation::UnsupportedArch),
            Some(Arch::X86_64) => {
                let (Some(ip), Some(sp), Some(bp)) = (regs.get(8), regs.get(7), regs.get(6)) else {
                    return Some(Truncation::NoRegisters);
                };
                let unwinder = process.map_or(&self.fp_x86_64, |p| &p.x86_64);
                let regs = UnwindRegsX86_64::new(ip, sp, bp);
                walk_with(
                    unwinder,
                    ip,
                    sp,
                    regs,
                    &mut self.cache_x86_64,
                    bytes,
                    frames,
                )
            }
            Some(Arch::Aarch64) => {
                let (Some(pc), Some(sp), Some(fp), Some(lr)) =
                    (regs.get(32), regs.get(31), regs.get(29), regs.get(30))
                else {
                    return Some(Truncation::NoRegisters);
                };
                let unwinder = process.map_or(&self.fp_aarch64, |p| &p.aarch64);
                let regs = UnwindRegsAarch64::new(lr, sp, fp);
                walk_with(
                    unwinder,
                    pc,
                    sp,
                    regs,
                    &mut self.cache_aarch64,
                    bytes,
                    frames,
                )
            }
        }
    }
}

/// framehop's walk for either architecture: frames appended, the cause returned when it
/// ends before a root frame.
fn walk_with<U: framehop::Unwinder>(
    unwinder: &U,
    pc: u64,
    sp: u64,
    regs: U::UnwindRegs,
    cache: &mut U::Cache,
    bytes: &[u8],
    frames: &mut Vec<Frame>,
) -> Option<Truncation> {
    let mut reader = StackReader {
        sp,
        bytes,
        failed_at: None,
    };
    let ended = {
        let mut read = |a| reader.read(a);
        let mut iter = unwinder.iter_frames(pc, regs, cache, &mut read);
        loop {
            match iter.next() {
                Ok(Some(a)) => {
                    frames.push(Frame {
                        addr: a.address(),
                        lookup: a.address(),
                        kernel: false,
                    });
                    if frames.len() > MAX_FRAMES {
                        break Ok(Some(Truncation::TooDeep));
                    }
                }
                // A root frame, or a zero return address (a thread's first frame).
                Ok(None) | Err(framehop::Error::ReturnAddressIsNull) => break Ok(None),
                Err(e) => break Err(e),
            }
        }
    };
    match ended {
        Ok(t) => t,
        Err(e) => Some(reader.cause(&e)),
    }
}
