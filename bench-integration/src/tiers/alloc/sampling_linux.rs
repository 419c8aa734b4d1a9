//! The Linux side of allocation sampling ([`super`]): the sample arena, the table of
//! sampled blocks, and the capture.

use std::cell::Cell;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::*};

use sparkles_perf_data::attr::{flag, sample_type as st, Attr};
use sparkles_perf_data::writer::{CaptureWriter, WrittenEvent};

use super::{Plan, Taken, DEFAULT_MEAN, EVENT, LIVE_EVENT, NREGS, REGS_MASK, UNAVAILABLE};

/// The arena's size: what the samples of one pass may take (bytes of address space;
/// pages are touched as samples fill them).
const ARENA_BYTES: usize = 256 << 20;
/// The table of sampled blocks (a power of two).
const TABLE: usize = 1 << 17;
/// Probes before a block is given up on (insert) or taken as not sampled (lookup).
const PROBES: usize = 64;
/// A table slot that held a block since freed.
const TOMBSTONE: usize = 1;

/// A sample's fields before its stack: identifier, ip, pid/tid, time, addr, period, the
/// registers' ABI and the registers, the stack's size.
const FIXED_WORDS: usize = 7 + NREGS + 1;
/// A record's header, fixed fields and `dyn_size`, less the stack copy.
const RECORD_OVERHEAD: usize = 8 + 8 * FIXED_WORDS + 8;
/// Our own words before each record in the arena: its length (0 until it is whole), its
/// state, and the iteration it was taken in.
const PREFIX: usize = 16;

/// A sampled block's state (the arena's prefix): not freed yet.
const LIVE: u32 = 0;
/// Freed within the iteration that made it.
const FREED_IN_ITERATION: u32 = 1;
/// Freed after its iteration ended.
const FREED_LATER: u32 = 2;
/// Not in the table (it was full where the block hashed): its fate is unknown.
const UNTRACKED: u32 = 3;

/// The identifiers of the two events.
const ID: u64 = 1;
const LIVE_ID: u64 = 2;

static MEAN: AtomicU64 = AtomicU64::new(DEFAULT_MEAN);
static STACK: AtomicUsize = AtomicUsize::new(0);
static ARENA: AtomicUsize = AtomicUsize::new(0);
static CURSOR: AtomicUsize = AtomicUsize::new(0);
/// Samples with no room left in the arena.
static DROPPED: AtomicU64 = AtomicU64::new(0);
/// Samples being written (or blocks being marked) right now: the pass's end waits for
/// none.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// The pass's iteration: advanced between iterations by the pass.
static EPOCH: AtomicU64 = AtomicU64::new(0);
/// The sampled blocks: their addresses (0 empty, [`TOMBSTONE`] freed) and the arena
/// offsets of their samples.
static BLOCKS: [AtomicUsize; TABLE] = [const { AtomicUsize::new(0) }; TABLE];
static OFFSETS: [AtomicU32; TABLE] = [const { AtomicU32::new(0) }; TABLE];

thread_local! {
    /// Bytes until this thread's next sample point.
    static LEFT: Cell<i64> = const { Cell::new(0) };
    /// Whether `LEFT` has been drawn.
    static DRAWN: Cell<bool> = const { Cell::new(false) };
    /// xorshift64* state (0: not seeded).
    static RNG: Cell<u64> = const { Cell::new(0) };
    /// Taking a sample now: an allocation made on the way (the first sample's stack
    /// bounds) is not sampled.
    static BUSY: Cell<bool> = const { Cell::new(false) };
    /// This thread's id and the top of its stack (0: not known yet).
    static TID: Cell<u32> = const { Cell::new(0) };
    static STACK_TOP: Cell<usize> = const { Cell::new(0) };
}

/// An allocation of `size` bytes at `p`, while sampling. Out of line: the counting and
/// idle paths stay as small as they were.
#[inline(never)]
pub(crate) fn on_alloc(p: *mut u8, size: usize) {
    let left = LEFT.with(|l| {
        let left = l.get() - size as i64;
        l.set(left);
        left
    });
    if left <= 0 {
        crossed(p);
    }
}

/// The block at `p` is freed, while sampling (out of line, as [`on_alloc`]).
#[inline(never)]
pub(crate) fn on_free(p: *mut u8) {
    let p = p as usize;
    let home = hash(p);
    for j in 0..PROBES {
        let i = (home + j) & (TABLE - 1);
        match BLOCKS[i].load(Acquire) {
            0 => return,
            b if b == p => return freed(i, p),
            _ => {}
        }
    }
}

fn hash(p: usize) -> usize {
    ((p as u64 >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - TABLE.trailing_zeros())) as usize
}

/// A uniform draw in (0, 1] from this thread's generator.
fn uniform() -> f64 {
    RNG.with(|r| {
        let mut x = r.get();
        if x == 0 {
            // Seeded from the thread's stack address and the clock: threads differ.
            let here = &x as *const u64 as u64;
            x = here ^ now_ns().rotate_left(32) ^ 0x2545_F491_4F6C_DD1D;
            x |= 1;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        r.set(x);
        ((x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    })
}

/// Bytes to the next sample point: exponential with the pass's mean, at least 1.
fn draw() -> i64 {
    let mean = MEAN.load(Relaxed) as f64;
    ((-uniform().ln() * mean) as i64).max(1)
}

/// The countdown reached zero: how many sample points the allocation holds, and the
/// sample if it holds any.
#[cold]
#[inline(never)]
fn crossed(p: *mut u8) {
    let mut left = LEFT.with(Cell::get);
    if !DRAWN.with(|d| d.replace(true)) {
        // A thread's first allocation: its countdown starts now, from a draw.
        left += draw();
    }
    let mut points = 0u64;
    while left <= 0 {
        points += 1;
        left += draw();
    }
    LEFT.with(|l| l.set(left));
    if points == 0 || BUSY.with(Cell::get) {
        return;
    }
    BUSY.with(|b| b.set(true));
    take(p as usize, points * MEAN.load(Relaxed));
    BUSY.with(|b| b.set(false));
}

fn now_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// This thread's id, asked once.
fn tid() -> u32 {
    TID.with(|t| {
        if t.get() == 0 {
            // SAFETY: gettid has no preconditions.
            t.set(unsafe { libc::syscall(libc::SYS_gettid) } as u32);
        }
        t.get()
    })
}

/// The top (highest address) of this thread's stack, asked once; 0 where it cannot be
/// told (then no stack is copied).
fn stack_top() -> usize {
    STACK_TOP.with(|top| {
        if top.get() == 0 {
            // SAFETY: pthread_getattr_np fills an attr we destroy; the main thread's
            // bounds are read from /proc/self/maps (its allocations pass through BUSY).
            unsafe {
                let mut attr: libc::pthread_attr_t = std::mem::zeroed();
                if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) == 0 {
                    let mut addr = std::ptr::null_mut();
                    let mut size = 0;
                    if libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0 {
                        top.set(addr as usize + size);
                    }
                    libc::pthread_attr_destroy(&mut attr);
                }
            }
        }
        top.get()
    })
}

/// The registers the unwinder starts from, read here: this function's own frame is the
/// sample's innermost (the report folds the allocator's frames away).
#[inline(always)]
fn registers() -> [u64; NREGS] {
    #[cfg(target_arch = "x86_64")]
    {
        let (bp, sp, ip): (u64, u64, u64);
        // SAFETY: reads three registers; touches no memory.
        unsafe {
            std::arch::asm!(
                "mov {bp}, rbp",
                "mov {sp}, rsp",
                "lea {ip}, [rip]",
                bp = out(reg) bp,
                sp = out(reg) sp,
                ip = out(reg) ip,
                options(nomem, nostack, preserves_flags)
            );
        }
        [bp, sp, ip]
    }
    #[cfg(target_arch = "aarch64")]
    {
        let (fp, lr, sp, pc): (u64, u64, u64, u64);
        // SAFETY: reads four registers; touches no memory.
        unsafe {
            std::arch::asm!(
                "mov {fp}, x29",
                "mov {lr}, x30",
                "mov {sp}, sp",
                "adr {pc}, .",
                fp = out(reg) fp,
                lr = out(reg) lr,
                sp = out(reg) sp,
                pc = out(reg) pc,
                options(nomem, nostack, preserves_flags)
            );
        }
        [fp, lr, sp, pc]
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        []
    }
}

/// The stack pointer among [`registers`]'s.
const SP_INDEX: usize = if cfg!(target_arch = "aarch64") { 2 } else { 1 };

/// Takes a sample of the block `p` standing for `period` bytes: its registers and
/// stack, as a SAMPLE record in the arena, and the block in the table.
#[inline(never)]
fn take(p: usize, period: u64) {
    let regs = registers();
    IN_FLIGHT.fetch_add(1, SeqCst);
    if crate::tiers::alloc::STATE.load(SeqCst) & crate::tiers::alloc::SAMPLING == 0 {
        IN_FLIGHT.fetch_sub(1, Release);
        return;
    }
    let sp = regs.get(SP_INDEX).copied().unwrap_or(0) as usize;
    let most = STACK.load(Relaxed).min(u16::MAX as usize - RECORD_OVERHEAD) & !7;
    let copy = stack_top().saturating_sub(sp).min(most) & !7;
    let len = RECORD_OVERHEAD + copy;
    let at = CURSOR.fetch_add(PREFIX + len, Relaxed);
    let base = ARENA.load(Relaxed);
    if base == 0 || at + PREFIX + len > ARENA_BYTES {
        DROPPED.fetch_add(1, Relaxed);
        IN_FLIGHT.fetch_sub(1, Release);
        return;
    }
    // SAFETY: [at, at + PREFIX + len) is this sample's alone, inside the arena (checked
    // above); the stack copy reads [sp, sp + copy), this thread's live stack below its top.
    unsafe {
        let rec = (base + at + PREFIX) as *mut u8;
        let mut w = Writer { at: rec };
        // header: SAMPLE, PERF_RECORD_MISC_USER, size
        w.u32(9);
        w.u16(2);
        w.u16(len as u16);
        w.u64(ID);
        w.u64(regs.last().copied().unwrap_or(0));
        w.u32(std::process::id());
        w.u32(tid());
        w.u64(now_ns());
        w.u64(p as u64);
        w.u64(period);
        w.u64(2); // PERF_SAMPLE_REGS_ABI_64
        for r in regs {
            w.u64(r);
        }
        w.u64(copy as u64);
        std::ptr::copy_nonoverlapping(sp as *const u8, w.at, copy);
        w.at = w.at.add(copy);
        w.u64(copy as u64); // dyn_size
        let prefix = (base + at) as *mut u8;
        (prefix.add(8) as *mut u64).write(EPOCH.load(Relaxed));
        let state = if insert(p, at) { LIVE } else { UNTRACKED };
        (*(prefix.add(4) as *const AtomicU32)).store(state, Relaxed);
        // Whole: its length published last.
        (*(prefix as *const AtomicU32)).store(len as u32, Release);
    }
    IN_FLIGHT.fetch_sub(1, Release);
}

/// Writes little-endian words at a raw pointer.
struct Writer {
    at: *mut u8,
}

impl Writer {
    unsafe fn bytes<const N: usize>(&mut self, b: [u8; N]) {
        // SAFETY: the caller's: room for N more bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(b.as_ptr(), self.at, N);
            self.at = self.at.add(N);
        }
    }
    unsafe fn u16(&mut self, v: u16) {
        // SAFETY: the caller's.
        unsafe { self.bytes(v.to_le_bytes()) }
    }
    unsafe fn u32(&mut self, v: u32) {
        // SAFETY: the caller's.
        unsafe { self.bytes(v.to_le_bytes()) }
    }
    unsafe fn u64(&mut self, v: u64) {
        // SAFETY: the caller's.
        unsafe { self.bytes(v.to_le_bytes()) }
    }
}

/// Puts the sampled block `p` (its sample at arena offset `at`) in the table; false where
/// every probed slot is taken.
fn insert(p: usize, at: usize) -> bool {
    let home = hash(p);
    for j in 0..PROBES {
        let i = (home + j) & (TABLE - 1);
        let b = BLOCKS[i].load(Relaxed);
        if b == p {
            // A block sampled before and freed while sampling was paused: its address is
            // this one's now.
            OFFSETS[i].store(at as u32, Release);
            return true;
        }
        if b == 0 || b == TOMBSTONE {
            OFFSETS[i].store(at as u32, Relaxed);
            if BLOCKS[i].compare_exchange(b, p, Release, Relaxed).is_ok() {
                return true;
            }
        }
    }
    false
}

/// The sampled block in table slot `i` is freed: its sample says whether within its
/// iteration.
#[cold]
#[inline(never)]
fn freed(i: usize, p: usize) {
    IN_FLIGHT.fetch_add(1, SeqCst);
    if crate::tiers::alloc::STATE.load(SeqCst) & crate::tiers::alloc::SAMPLING != 0 {
        let at = OFFSETS[i].load(Relaxed) as usize;
        let base = ARENA.load(Relaxed);
        // SAFETY: the slot's offset is a whole sample's in the arena (inserted after its
        // prefix was written).
        unsafe {
            let prefix = (base + at) as *const u8;
            let epoch = (prefix.add(8) as *const u64).read();
            let state = if epoch == EPOCH.load(Relaxed) {
                FREED_IN_ITERATION
            } else {
                FREED_LATER
            };
            (*(prefix.add(4) as *const AtomicU32)).store(state, Relaxed);
        }
        let _ = BLOCKS[i].compare_exchange(p, TOMBSTONE, Relaxed, Relaxed);
    }
    IN_FLIGHT.fetch_sub(1, Release);
}

/// The arena, mapped once (never unmapped: a late writer can never fault).
fn arena() -> Result<usize, String> {
    let base = ARENA.load(Acquire);
    if base != 0 {
        return Ok(base);
    }
    // SAFETY: a fresh anonymous private mapping, no file.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            ARENA_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(format!(
            "the sample arena ({} MiB) could not be mapped: {}",
            ARENA_BYTES >> 20,
            std::io::Error::last_os_error()
        ));
    }
    ARENA.store(p as usize, Release);
    Ok(p as usize)
}

/// Readies a pass's sampling (resumed by [`pause`]`(false)`): the arena emptied, the
/// table cleared.
pub(crate) fn start(plan: &Plan) -> Result<(), String> {
    if let Some(why) = UNAVAILABLE {
        return Err(why.to_string());
    }
    if !crate::tiers::alloc::installed() {
        return Err(crate::tiers::alloc::NOT_INSTALLED.to_string());
    }
    arena()?;
    MEAN.store(plan.mean.max(1), Relaxed);
    STACK.store(plan.stack as usize, Relaxed);
    CURSOR.store(0, Relaxed);
    DROPPED.store(0, Relaxed);
    EPOCH.store(0, Relaxed);
    for b in &BLOCKS {
        b.store(0, Relaxed);
    }
    Ok(())
}

/// The pass's next iteration begins.
pub(crate) fn next_iteration() {
    EPOCH.fetch_add(1, Relaxed);
}

/// Stops sampling without a capture (the pass failed or was interrupted).
pub(crate) fn stop() {
    pause(true);
}

/// Pauses sampling (frees are not matched while paused either: the pass pauses between
/// iterations only, and a block freed after its iteration outlived it whether or not its
/// free is seen), or resumes it. Paused, no writer is left in the arena.
pub(crate) fn pause(paused: bool) {
    crate::tiers::alloc::set_state(crate::tiers::alloc::SAMPLING, !paused);
    if paused {
        // A writer that saw the bit set finishes before anyone reads the arena.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while IN_FLIGHT.load(SeqCst) != 0 && std::time::Instant::now() < deadline {
            std::hint::spin_loop();
        }
    }
}

/// Whether a sample has found no room in the arena.
pub(crate) fn arena_full() -> bool {
    DROPPED.load(Relaxed) > 0
}

/// Stops sampling and writes the capture to `path`: the samples, and the process's
/// threads and mappings as they are now.
pub(crate) fn finish(plan: &Plan, path: &Path) -> Result<(Taken, u64), String> {
    pause(true);
    let base = ARENA.load(Acquire);
    let end = CURSOR.load(Relaxed).min(ARENA_BYTES);
    let mut taken = Taken {
        dropped: DROPPED.load(Relaxed),
        ..Taken::default()
    };
    let attr = attr(plan);
    let pid = std::process::id();
    let mut writer = CaptureWriter::new(attr.clone(), vec![ID], EVENT.to_string());
    writer.more_events.push(WrittenEvent {
        attr,
        ids: vec![LIVE_ID],
        name: LIVE_EVENT.to_string(),
    });
    writer.compression = plan.compression;
    writer.cmdline = std::env::args().collect();
    writer.host = sparkles_sampler::host::probe();
    // The executable's build id (every sample's IP is in it), read once per process.
    static EXE: std::sync::OnceLock<Option<(Vec<u8>, String)>> = std::sync::OnceLock::new();
    let exe = EXE.get_or_init(|| {
        let exe = std::env::current_exe().ok()?.display().to_string();
        Some((sparkles_sampler::session::file_build_id(&exe)?, exe))
    });
    if let Some((id, exe)) = exe {
        writer.build_ids.push((-1, id.clone(), exe.clone()));
    }
    for r in sparkles_sampler::proc_synth::synthesize_process(&writer.attr, ID, pid, true) {
        writer.push(&r);
    }
    let mut at = 0;
    while base != 0 && at + PREFIX <= end {
        // SAFETY: [0, end) of the arena holds prefixed records; no writer is left.
        let (len, state) = unsafe {
            let prefix = (base + at) as *const u8;
            (
                (*(prefix as *const AtomicU32)).load(Acquire) as usize,
                (*(prefix.add(4) as *const AtomicU32)).load(Relaxed),
            )
        };
        if len == 0 || at + PREFIX + len > end {
            // A sample never finished (its thread stopped mid-way): the rest is unsure.
            break;
        }
        // SAFETY: a whole record of `len` bytes.
        let record = unsafe { std::slice::from_raw_parts((base + at + PREFIX) as *const u8, len) };
        let period = u64::from_le_bytes(record[48..56].try_into().unwrap_or_default());
        writer.push(record);
        taken.samples += 1;
        taken.bytes += period;
        match state {
            LIVE | FREED_LATER => {
                let mut copy = record.to_vec();
                copy[8..16].copy_from_slice(&LIVE_ID.to_le_bytes());
                writer.push(&copy);
                taken.live += 1;
                taken.live_bytes += period;
            }
            UNTRACKED => taken.untracked += 1,
            _ => {}
        }
        at += PREFIX + len;
    }
    // The arena's pages go back to the system until the next pass touches them.
    if base != 0 && end > 0 {
        // SAFETY: the arena's own pages; no writer is left, and the next pass starts from
        // its beginning (pages read back as zeros).
        unsafe { libc::madvise(base as *mut libc::c_void, end, libc::MADV_DONTNEED) };
    }
    let written = writer.write(path).map_err(|e| e.to_string())?;
    Ok((taken, written.bytes))
}

/// The attr both events share: samples with their block (addr), the bytes they stand for
/// (period), registers and a stack copy, timed on CLOCK_MONOTONIC.
fn attr(plan: &Plan) -> Attr {
    Attr {
        type_: 1, // PERF_TYPE_SOFTWARE
        size: 128,
        config: 9, // PERF_COUNT_SW_DUMMY: no kernel event stands behind these samples
        sample_period_or_freq: plan.mean,
        sample_type: st::IDENTIFIER
            | st::IP
            | st::TID
            | st::TIME
            | st::ADDR
            | st::PERIOD
            | st::REGS_USER
            | st::STACK_USER,
        flags: flag::SAMPLE_ID_ALL | flag::USE_CLOCKID | flag::EXCLUDE_KERNEL,
        sample_regs_user: REGS_MASK,
        sample_stack_user: plan.stack,
        clockid: libc::CLOCK_MONOTONIC,
        ..Attr::default()
    }
}
