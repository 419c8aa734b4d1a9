//! The allocation tier: a counting global allocator, and what it counted per iteration.
//!
//! A bench installs it with one line, around the system allocator or any other:
//!
//! ```ignore
//! #[global_allocator]
//! static A: sparkles_bench::alloc::Counting = sparkles_bench::alloc::Counting::system();
//! ```
//!
//! It counts only while a counting bracket is open (one relaxed load and a branch per
//! call otherwise: the timing pass is not perturbed), every thread of the process
//! included (threads the case starts, too). Each thread counts into a slot of its own in a
//! fixed table (no lock, no allocation of its own; each counter has one writer, so a
//! count is a plain load and store); a thread past the table's end shares its last slot
//! through atomic adds. A bracket reads every slot at its start and end.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{
    AtomicBool, AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed,
};

use sparkles_results::metric::{Availability, MetricClass, MetricDescriptor, MetricFormat, Source};

pub(crate) mod sampling;

/// Slots of the per-thread table; threads past it share the last one.
const SLOTS: usize = 512;

/// One thread's counts.
struct Slot {
    count: AtomicU64,
    bytes: AtomicU64,
    frees: AtomicU64,
    reallocs: AtomicU64,
    /// Bytes allocated less bytes freed by this thread.
    live: AtomicI64,
    /// The most `live` reached since the bracket began.
    peak: AtomicI64,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            count: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            frees: AtomicU64::new(0),
            reallocs: AtomicU64::new(0),
            live: AtomicI64::new(0),
            peak: AtomicI64::new(0),
        }
    }
}

#[allow(clippy::declare_interior_mutable_const)] // each array element is its own Slot
const EMPTY: Slot = Slot::new();
static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];
/// Slots handed out so far.
static CLAIMED: AtomicUsize = AtomicUsize::new(0);
/// What the allocator does beside allocating: [`COUNTING`] while a bracket is open,
/// [`SAMPLING`] during an allocation profile's pass. One word, so the idle path (the
/// timing pass) is one relaxed load and a branch.
static STATE: AtomicU8 = AtomicU8::new(0);
/// [`STATE`]'s bit: counting.
const COUNTING: u8 = 1;
/// [`STATE`]'s bit: sampling ([`sampling`]).
const SAMPLING: u8 = 2;
/// Set by the first call through a [`Counting`] allocator.
static INSTALLED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread's slot, once it has one (null before).
    static MINE: Cell<*const Slot> = const { Cell::new(std::ptr::null()) };
}

/// Runs `f` on this thread's slot, saying whether it is shared (past the table's end:
/// counted with atomic adds). A thread's own slot is one thread-local load and a compare
/// away, and `f` is inlined with `shared` false there.
#[inline]
fn counted(f: impl FnOnce(&Slot, bool)) {
    let p = MINE.with(Cell::get);
    if !p.is_null() && !std::ptr::eq(p, &TABLE[SLOTS - 1]) {
        // SAFETY: MINE only ever points into TABLE, a static.
        f(unsafe { &*p }, false)
    } else {
        let (s, shared) = slot();
        f(s, shared)
    }
}

/// This thread's slot, claimed on its first call, and whether it is shared.
#[cold]
#[inline(never)]
fn slot() -> (&'static Slot, bool) {
    let s = MINE.with(|m| {
        if m.get().is_null() {
            let i = CLAIMED.fetch_add(1, Relaxed).min(SLOTS - 1);
            m.set(&TABLE[i]);
        }
        m.get()
    });
    // SAFETY: set just above to a slot of TABLE.
    let s: &'static Slot = unsafe { &*s };
    (s, std::ptr::eq(s, &TABLE[SLOTS - 1]))
}

#[inline]
fn bump(counter: &AtomicU64, by: u64, shared: bool) {
    if shared {
        counter.fetch_add(by, Relaxed);
    } else {
        counter.store(counter.load(Relaxed).wrapping_add(by), Relaxed);
    }
}

#[inline]
fn move_live(s: &Slot, by: i64, shared: bool) {
    let live = if shared {
        s.live.fetch_add(by, Relaxed) + by
    } else {
        let live = s.live.load(Relaxed) + by;
        s.live.store(live, Relaxed);
        live
    };
    if by > 0 && live > s.peak.load(Relaxed) {
        if shared {
            s.peak.fetch_max(live, Relaxed);
        } else {
            s.peak.store(live, Relaxed);
        }
    }
}

/// A global allocator that counts allocations, frees, reallocations and bytes per
/// thread, around `A` (the system allocator by default; mimalloc, jemalloc, any
/// [`GlobalAlloc`]).
#[derive(Debug, Default)]
pub struct Counting<A = System> {
    inner: A,
}

impl Counting<System> {
    /// Counting around the system allocator.
    pub const fn system() -> Counting<System> {
        Counting { inner: System }
    }
}

impl<A> Counting<A> {
    /// Counting around `inner`.
    pub const fn new(inner: A) -> Counting<A> {
        Counting { inner }
    }
}

#[inline]
fn note_installed() {
    if !INSTALLED.load(Relaxed) {
        INSTALLED.store(true, Relaxed);
    }
}

/// After `alloc` or `alloc_zeroed` returned `p`: counted, sampled, or (the idle path)
/// neither.
#[inline]
fn after_alloc(p: *mut u8, size: usize) {
    let state = STATE.load(Relaxed);
    if state == 0 || p.is_null() {
        return;
    }
    if state & COUNTING != 0 {
        on_alloc(size);
    }
    if state & SAMPLING != 0 {
        sampling::on_alloc(p, size);
    }
}

/// Sets or clears one of [`STATE`]'s bits.
fn set_state(bit: u8, on: bool) {
    if on {
        STATE.fetch_or(bit, std::sync::atomic::Ordering::SeqCst);
    } else {
        STATE.fetch_and(!bit, std::sync::atomic::Ordering::SeqCst);
    }
}

#[inline]
fn on_alloc(size: usize) {
    counted(|s, shared| {
        bump(&s.count, 1, shared);
        bump(&s.bytes, size as u64, shared);
        move_live(s, size as i64, shared);
    });
}

// SAFETY: every call is forwarded to `inner` unchanged; the counting around it touches
// only this module's statics and a const thread-local (which never allocates).
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_installed();
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { self.inner.alloc(layout) };
        after_alloc(p, layout.size());
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_installed();
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { self.inner.alloc_zeroed(layout) };
        after_alloc(p, layout.size());
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let state = STATE.load(Relaxed);
        // Before the block can be handed out again (and sampled anew).
        if state & SAMPLING != 0 {
            sampling::on_free(ptr);
        }
        // SAFETY: the caller's contract, forwarded.
        unsafe { self.inner.dealloc(ptr, layout) };
        if state & COUNTING != 0 {
            counted(|s, shared| {
                bump(&s.frees, 1, shared);
                move_live(s, -(layout.size() as i64), shared);
            });
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_installed();
        let state = STATE.load(Relaxed);
        // The old block is gone once realloc returns (before it can be handed out again).
        if state & SAMPLING != 0 {
            sampling::on_free(ptr);
        }
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if p.is_null() || state == 0 {
            return p;
        }
        if state & COUNTING != 0 {
            counted(|s, shared| {
                bump(&s.reallocs, 1, shared);
                move_live(s, new_size as i64 - layout.size() as i64, shared);
            });
        }
        if state & SAMPLING != 0 {
            // The block moved or grew: sampled as the bytes it now holds (heaptrack and
            // tcmalloc count a reallocation so).
            sampling::on_alloc(p, new_size);
        }
        p
    }
}

/// Arms or disarms counting outside a bracket: for the allocator's own benchmark
/// (`cli/benches/alloc.rs`), which times what an armed call costs.
#[doc(hidden)]
pub fn arm_for_benchmark(on: bool) {
    set_state(COUNTING, on);
}

/// Starts byte sampling at `mean` (`--profile=alloc`'s, 16 KiB of stack) outside a
/// profile pass, or stops it (`None`): for the allocator's own benchmark
/// (`cli/benches/alloc.rs`), which times what a sampled call costs. The samples are
/// dropped with the next pass.
#[doc(hidden)]
pub fn sample_for_benchmark(mean: Option<u64>) -> Result<(), String> {
    match mean {
        Some(mean) => {
            sampling::start(&sampling::Plan {
                mean,
                stack: 16384,
                compression: Default::default(),
            })?;
            sampling::pause(false);
        }
        None => sampling::pause(true),
    }
    Ok(())
}

/// Whether a [`Counting`] allocator is this process's global allocator (it has been
/// called).
pub fn installed() -> bool {
    INSTALLED.load(Relaxed)
}

/// Why the tier is absent, where it is.
pub const NOT_INSTALLED: &str = "install sparkles_bench::alloc::Counting as the global allocator (#[global_allocator] static A: sparkles_bench::alloc::Counting = sparkles_bench::alloc::Counting::system();)";

/// The tier's metrics, available where the allocator is installed.
pub(crate) fn descriptors() -> Vec<MetricDescriptor> {
    let availability = if installed() {
        Availability::Available
    } else {
        Availability::Unavailable(NOT_INSTALLED.to_string())
    };
    let d = |id: &'static str, header: &'static str, description: &'static str, shown| {
        MetricDescriptor {
            id: id.into(),
            header: header.into(),
            description: description.into(),
            format: MetricFormat::Count,
            class: MetricClass::Quantitative,
            source: Source::Alloc,
            default_visible: shown,
            availability: availability.clone(),
        }
    };
    vec![
        d(
            "alloc.count",
            "allocs",
            "new allocations per iteration (alloc and alloc_zeroed; reallocations apart), every thread",
            true,
        ),
        d(
            "alloc.bytes",
            "alloc.B",
            "bytes of those new allocations per iteration",
            true,
        ),
        d("alloc.frees", "frees", "frees per iteration", false),
        d(
            "alloc.reallocs",
            "reallocs",
            "reallocations per iteration (grows and shrinks)",
            false,
        ),
        d(
            "alloc.peak_bytes",
            "peak.B",
            "most live bytes above a bracket's start on any one thread (the bracket's, not divided by its iterations)",
            false,
        ),
    ]
}

/// Totals over every slot.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Totals {
    count: u64,
    bytes: u64,
    frees: u64,
    reallocs: u64,
}

fn totals() -> Totals {
    let claimed = CLAIMED.load(Relaxed).min(SLOTS);
    TABLE[..claimed]
        .iter()
        .fold(Totals::default(), |t, s| Totals {
            count: t.count + s.count.load(Relaxed),
            bytes: t.bytes + s.bytes.load(Relaxed),
            frees: t.frees + s.frees.load(Relaxed),
            reallocs: t.reallocs + s.reallocs.load(Relaxed),
        })
}

/// One bracket's counting: opened (outside the timed region), then resumed and paused
/// around each timed region.
#[derive(Debug, Default)]
pub(crate) struct AllocMeter {
    counted: Totals,
    at_resume: Totals,
    /// Each slot's live bytes when the bracket began.
    start_live: Vec<i64>,
    peak: i64,
}

impl AllocMeter {
    pub fn open() -> AllocMeter {
        AllocMeter {
            start_live: Vec::with_capacity(SLOTS),
            ..AllocMeter::default()
        }
    }

    #[inline]
    pub fn resume(&mut self) {
        let claimed = CLAIMED.load(Relaxed).min(SLOTS);
        self.start_live.clear();
        self.start_live.extend(TABLE[..claimed].iter().map(|s| {
            let live = s.live.load(Relaxed);
            s.peak.store(live, Relaxed);
            live
        }));
        self.at_resume = totals();
        set_state(COUNTING, true);
    }

    #[inline]
    pub fn pause(&mut self) {
        set_state(COUNTING, false);
        let now = totals();
        let t = &mut self.counted;
        t.count += now.count - self.at_resume.count;
        t.bytes += now.bytes - self.at_resume.bytes;
        t.frees += now.frees - self.at_resume.frees;
        t.reallocs += now.reallocs - self.at_resume.reallocs;
        let claimed = CLAIMED.load(Relaxed).min(SLOTS);
        for (i, s) in TABLE[..claimed].iter().enumerate() {
            // A thread that took its slot during the region started from nothing.
            let start = self.start_live.get(i).copied().unwrap_or(0);
            self.peak = self.peak.max(s.peak.load(Relaxed) - start);
        }
    }

    /// Per iteration (the peak is the bracket's).
    pub fn values(&self, iterations: u64) -> Vec<sparkles_results::metric::MetricValue> {
        let per = |v: u64| Some(v as f64 / iterations.max(1) as f64);
        vec![
            ("alloc.count".into(), per(self.counted.count)),
            ("alloc.bytes".into(), per(self.counted.bytes)),
            ("alloc.frees".into(), per(self.counted.frees)),
            ("alloc.reallocs".into(), per(self.counted.reallocs)),
            ("alloc.peak_bytes".into(), Some(self.peak.max(0) as f64)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_the_allocator_installed_the_tier_says_how_to_install_it() {
        // The library's unit tests run on the system allocator.
        assert!(!installed());
        let d = descriptors();
        assert!(d
            .iter()
            .all(|m| m.availability == Availability::Unavailable(NOT_INSTALLED.to_string())));
        assert!(NOT_INSTALLED.contains("#[global_allocator]"));
        // Nor can allocations be sampled: `--profile=alloc` says why, per case.
        let plan = sampling::Plan {
            mean: 4096,
            stack: 1024,
            compression: Default::default(),
        };
        let why = sampling::start(&plan).unwrap_err();
        assert_eq!(why, sampling::UNAVAILABLE.unwrap_or(NOT_INSTALLED));
    }

    #[test]
    fn a_bracket_counts_what_the_slots_counted_inside_it() {
        // Counted by hand into this thread's slot, as the allocator would.
        let mut m = AllocMeter::open();
        m.resume();
        on_alloc(100);
        on_alloc(28);
        counted(|s, shared| {
            bump(&s.frees, 1, shared);
            move_live(s, -28, shared);
        });
        m.pause();
        // Outside the bracket nothing counts toward it.
        on_alloc(1000);
        let v = m.values(2);
        let get = |id: &str| v.iter().find(|(i, _)| i == id).unwrap().1.unwrap();
        assert_eq!(get("alloc.count"), 1.0);
        assert_eq!(get("alloc.bytes"), 64.0);
        assert_eq!(get("alloc.frees"), 0.5);
        assert_eq!(get("alloc.peak_bytes"), 128.0);
    }
}
