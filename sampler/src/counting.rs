//! Counter-group arithmetic for the counting tiers (issue 9, first part): group reads
//! (`PERF_FORMAT_GROUP` with enabled and running times and ids) parsed from their bytes,
//! per-pass deltas scaled where the kernel multiplexed the group and labelled estimates,
//! and the self-monitoring `rdpmc` read inside the seqlock loop the kernel documents for
//! `perf_event_mmap_page`.

use sparkles_perf_data::DataError;

/// One read of a counter group: `read_format = GROUP | TOTAL_TIME_ENABLED |
/// TOTAL_TIME_RUNNING | ID`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupRead {
    /// Nanoseconds the group was enabled.
    pub enabled: u64,
    /// Nanoseconds it was on the PMU.
    pub running: u64,
    /// `(id, value)` per member, leader first.
    pub values: Vec<(u64, u64)>,
}

impl GroupRead {
    /// Parses the bytes `read(2)` returned: `nr, time_enabled, time_running`, then `nr`
    /// pairs of `value, id`.
    pub fn parse(bytes: &[u8]) -> Result<GroupRead, DataError> {
        let word = |i: usize| -> Result<u64, DataError> {
            bytes
                .get(i * 8..i * 8 + 8)
                .map(|b| u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                .ok_or_else(|| {
                    DataError::new(
                        (i * 8) as u64,
                        format!("group read of {} bytes cut off", bytes.len()),
                    )
                })
        };
        let nr = word(0)? as usize;
        if nr > (bytes.len() / 16).saturating_sub(1) + 1 {
            return Err(DataError::new(
                0,
                format!("group read says {nr} members in {} bytes", bytes.len()),
            ));
        }
        let mut values = Vec::with_capacity(nr);
        for i in 0..nr {
            values.push((word(3 + 2 * i + 1)?, word(3 + 2 * i)?));
        }
        Ok(GroupRead {
            enabled: word(1)?,
            running: word(2)?,
            values,
        })
    }
}

/// A member's count over one pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counted {
    /// The member's id.
    pub id: u64,
    /// The count: measured, or scaled up from the time the group ran.
    pub value: f64,
    /// Whether `value` is scaled (the group shared the PMU during the pass).
    pub estimated: bool,
    /// Running over enabled time during the pass (1.0: counted throughout).
    pub running_ratio: f64,
}

/// Why a pass has no counts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotCounted {
    /// The group was enabled but never scheduled on the PMU.
    #[error("the group never ran on the PMU during the pass (enabled {enabled} ns, running 0)")]
    NeverRan {
        /// Enabled time over the pass.
        enabled: u64,
    },
    /// The two reads do not belong together.
    #[error("the reads disagree: {0}")]
    Mismatch(String),
}

/// Each member's count between two reads of the same group. The time fields are
/// cumulative (a RESET clears the values, not the times), so the pass is scaled by its
/// own deltas: `Δvalue × Δenabled / Δrunning` where the group ran part of the time.
pub fn pass(before: &GroupRead, after: &GroupRead) -> Result<Vec<Counted>, NotCounted> {
    if before.values.len() != after.values.len() {
        return Err(NotCounted::Mismatch(format!(
            "{} members before, {} after",
            before.values.len(),
            after.values.len()
        )));
    }
    let enabled = after
        .enabled
        .checked_sub(before.enabled)
        .ok_or_else(|| NotCounted::Mismatch("enabled time went backwards".into()))?;
    let running = after
        .running
        .checked_sub(before.running)
        .ok_or_else(|| NotCounted::Mismatch("running time went backwards".into()))?;
    if enabled == 0 {
        // A per-thread group whose thread never ran while it was enabled: nothing
        // happened on it, exactly.
        return Ok(before
            .values
            .iter()
            .map(|&(id, _)| Counted {
                id,
                value: 0.0,
                estimated: false,
                running_ratio: 1.0,
            })
            .collect());
    }
    if running == 0 {
        return Err(NotCounted::NeverRan { enabled });
    }
    let ratio = (running as f64 / enabled.max(running) as f64).min(1.0);
    before
        .values
        .iter()
        .zip(&after.values)
        .map(|(&(id_b, v_b), &(id_a, v_a))| {
            if id_b != id_a {
                return Err(NotCounted::Mismatch(format!(
                    "member ids {id_b} and {id_a}"
                )));
            }
            let delta = v_a.wrapping_sub(v_b) as f64;
            Ok(Counted {
                id: id_a,
                value: if running < enabled {
                    delta * enabled as f64 / running as f64
                } else {
                    delta
                },
                estimated: running < enabled,
                running_ratio: ratio,
            })
        })
        .collect()
}

/// The fields of `struct perf_event_mmap_page` a self-monitoring read uses, at their
/// uapi offsets: `lock` 8, `index` 12, `offset` 16, `time_enabled` 24, `time_running`
/// 32, `capabilities` 40, `pmc_width` 48.
pub mod page {
    /// Offset of `lock`, the seqlock the kernel bumps around every update.
    pub const LOCK: usize = 8;
    /// Offset of `index`: the hardware counter plus one, 0 when not on a counter.
    pub const INDEX: usize = 12;
    /// Offset of `offset`, added to the counter's value.
    pub const OFFSET: usize = 16;
    /// Offset of `time_enabled`.
    pub const TIME_ENABLED: usize = 24;
    /// Offset of `time_running`.
    pub const TIME_RUNNING: usize = 32;
    /// Offset of `capabilities`.
    pub const CAPABILITIES: usize = 40;
    /// Offset of `pmc_width`.
    pub const PMC_WIDTH: usize = 48;
    /// `cap_user_rdpmc`, bit 2 of `capabilities`.
    pub const CAP_USER_RDPMC: u64 = 1 << 2;
}

/// A self-monitoring read through the mmap page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRead {
    /// The count (`offset` plus the counter's sign-extended value when read with rdpmc).
    pub count: i64,
    /// `time_enabled`.
    pub enabled: u64,
    /// `time_running`.
    pub running: u64,
    /// Whether rdpmc was used (else the counter was not on the PMU, or the page does not
    /// allow it, and `count` is the kernel's `offset` only: read(2) is needed).
    pub rdpmc: bool,
    /// Times the seqlock made the read start over.
    pub retries: u32,
}

/// The seqlock loop of `perf_event_mmap_page`'s documentation, over a page at `base`:
/// read `lock` (waiting out an odd one); read the fields; where `cap_user_rdpmc` is set
/// and `index` is nonzero, add `rdpmc(index - 1)` sign-extended from `pmc_width` bits to
/// `offset`; start over when `lock` changed meanwhile.
///
/// # Safety
/// `base` must point to a readable, 8-byte-aligned `perf_event_mmap_page` (at least 56
/// bytes) that stays mapped during the call; the kernel (or a test) may write it
/// concurrently, which the volatile reads and the seqlock allow for.
pub unsafe fn read_page(base: *const u8, mut rdpmc: impl FnMut(u32) -> u64) -> PageRead {
    use std::sync::atomic::{fence, Ordering};
    // SAFETY (for every read below): the caller promises the page is mapped and aligned;
    // the offsets are the uapi struct's and lie within its first 56 bytes.
    let u32_at = |off: usize| unsafe { std::ptr::read_volatile(base.add(off).cast::<u32>()) };
    let u64_at = |off: usize| unsafe { std::ptr::read_volatile(base.add(off).cast::<u64>()) };
    let u16_at = |off: usize| unsafe { std::ptr::read_volatile(base.add(off).cast::<u16>()) };
    let mut retries = 0;
    loop {
        let seq = u32_at(page::LOCK);
        // An odd lock is an update in progress (the kernel bumps it before and after):
        // the kernel's loop needs no such check, as the page is updated only while the
        // reading task is off the CPU; a reader on another thread does.
        if seq & 1 == 1 {
            retries += 1;
            std::hint::spin_loop();
            continue;
        }
        fence(Ordering::Acquire);
        let enabled = u64_at(page::TIME_ENABLED);
        let running = u64_at(page::TIME_RUNNING);
        let index = u32_at(page::INDEX);
        let mut count = u64_at(page::OFFSET) as i64;
        let caps = u64_at(page::CAPABILITIES);
        let use_rdpmc = caps & page::CAP_USER_RDPMC != 0 && index != 0;
        if use_rdpmc {
            let width = u32::from(u16_at(page::PMC_WIDTH)).clamp(1, 64);
            let raw = rdpmc(index - 1);
            let shift = 64 - width;
            count = count.wrapping_add(((raw << shift) as i64) >> shift);
        }
        fence(Ordering::Acquire);
        if u32_at(page::LOCK) == seq {
            return PageRead {
                count,
                enabled,
                running,
                rdpmc: use_rdpmc,
                retries,
            };
        }
        retries += 1;
    }
}

/// The `rdpmc` instruction: counter `index` of this CPU.
///
/// # Safety
/// Only where the kernel allows user rdpmc for this counter (`cap_user_rdpmc` on its
/// page, the counter on this thread): elsewhere the instruction faults.
#[cfg(target_arch = "x86_64")]
pub unsafe fn rdpmc(index: u32) -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: the caller checked the page allows it; rdpmc reads ecx, writes eax:edx.
    unsafe {
        std::arch::asm!("rdpmc", in("ecx") index, out("eax") lo, out("edx") hi, options(nomem, nostack));
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_ne_bytes()).collect()
    }

    #[test]
    fn group_reads_parse_from_their_bytes() {
        // nr 2, enabled 1000, running 500, (value 10, id 7), (value 20, id 8).
        let r = GroupRead::parse(&bytes(&[2, 1000, 500, 10, 7, 20, 8])).unwrap();
        assert_eq!(r.enabled, 1000);
        assert_eq!(r.running, 500);
        assert_eq!(r.values, [(7, 10), (8, 20)]);
        let cut = GroupRead::parse(&bytes(&[2, 1000, 500, 10, 7, 20])).unwrap_err();
        assert_eq!(cut.offset, 48, "{cut}");
        assert!(cut.message.contains("cut off"), "{cut}");
        assert!(GroupRead::parse(&bytes(&[1_000_000, 1, 1])).is_err());
    }

    #[test]
    fn a_multiplexed_pass_is_scaled_by_its_own_deltas() {
        // Before: enabled 1,000 ns, running 1,000 ns (cumulative, not cleared by RESET).
        let before = GroupRead {
            enabled: 1_000,
            running: 1_000,
            values: vec![(1, 500), (2, 100)],
        };
        // After: the pass was enabled 4,000 ns more and ran 1,000 ns of them.
        let after = GroupRead {
            enabled: 5_000,
            running: 2_000,
            values: vec![(1, 1_500), (2, 350)],
        };
        let c = pass(&before, &after).unwrap();
        // By hand: Δ1 = 1,000 × 4,000 / 1,000 = 4,000; Δ2 = 250 × 4 = 1,000; ratio 0.25.
        assert_eq!(c[0].value, 4_000.0);
        assert_eq!(c[1].value, 1_000.0);
        assert!(c.iter().all(|x| x.estimated && x.running_ratio == 0.25));
        // A pass that ran throughout is exact.
        let exact = GroupRead {
            enabled: 9_000,
            running: 6_000,
            values: vec![(1, 2_500), (2, 400)],
        };
        let c = pass(&after, &exact).unwrap();
        assert_eq!(c[0].value, 1_000.0);
        assert!(!c[0].estimated && c[0].running_ratio == 1.0);
        // A pass during which the group never ran: no number, the reason.
        let idle = GroupRead {
            enabled: 10_000,
            running: 6_000,
            values: vec![(1, 2_500), (2, 400)],
        };
        assert_eq!(
            pass(&exact, &idle),
            Err(NotCounted::NeverRan { enabled: 1_000 })
        );
        // A thread that never ran while the group was enabled counted nothing, exactly.
        let asleep = GroupRead {
            enabled: 9_000,
            running: 6_000,
            values: vec![(1, 2_500), (2, 400)],
        };
        let c = pass(&exact, &asleep).unwrap();
        assert!(c.iter().all(|x| x.value == 0.0 && !x.estimated));
    }

    /// A fake `perf_event_mmap_page`, aligned like the kernel's.
    #[repr(C, align(4096))]
    struct FakePage([u8; 4096]);

    impl FakePage {
        fn new(index: u32, offset: i64, caps: u64, width: u16) -> Box<FakePage> {
            let mut p = Box::new(FakePage([0; 4096]));
            p.0[page::INDEX..page::INDEX + 4].copy_from_slice(&index.to_ne_bytes());
            p.0[page::OFFSET..page::OFFSET + 8].copy_from_slice(&offset.to_ne_bytes());
            p.0[page::TIME_ENABLED..page::TIME_ENABLED + 8].copy_from_slice(&100u64.to_ne_bytes());
            p.0[page::TIME_RUNNING..page::TIME_RUNNING + 8].copy_from_slice(&100u64.to_ne_bytes());
            p.0[page::CAPABILITIES..page::CAPABILITIES + 8].copy_from_slice(&caps.to_ne_bytes());
            p.0[page::PMC_WIDTH..page::PMC_WIDTH + 2].copy_from_slice(&width.to_ne_bytes());
            p
        }
    }

    #[test]
    fn rdpmc_reads_add_the_sign_extended_counter_to_the_offset() {
        let p = FakePage::new(3, 1_000, page::CAP_USER_RDPMC, 48);
        // SAFETY: a live, aligned fake page.
        let r = unsafe {
            read_page(p.0.as_ptr(), |idx| {
                assert_eq!(idx, 2, "rdpmc takes index - 1");
                // A 48-bit counter at -5: the top bits of the register are junk.
                0xdead_0000_0000_0000 | ((1u64 << 48) - 5)
            })
        };
        assert_eq!(r.count, 995);
        assert!(r.rdpmc && r.retries == 0);
        // Without cap_user_rdpmc (or off the PMU: index 0) only the offset: read(2) needed.
        let p = FakePage::new(3, 1_000, 0, 48);
        // SAFETY: as above.
        let r = unsafe { read_page(p.0.as_ptr(), |_| panic!("rdpmc not allowed")) };
        assert_eq!((r.count, r.rdpmc), (1_000, false));
        let p = FakePage::new(0, 1_000, page::CAP_USER_RDPMC, 48);
        // SAFETY: as above.
        let r = unsafe { read_page(p.0.as_ptr(), |_| panic!("no counter to read")) };
        assert!(!r.rdpmc);
    }

    #[test]
    fn an_update_during_the_read_makes_it_start_over() {
        let mut p = FakePage::new(1, 1_000, page::CAP_USER_RDPMC, 48);
        let base = p.0.as_mut_ptr();
        let mut first = true;
        // SAFETY: a live, aligned fake page; the closure writes it as the kernel would
        // (bump the seqlock around a new offset), between the reader's two lock reads.
        let r = unsafe {
            read_page(base, |_| {
                if first {
                    first = false;
                    let lock = base.add(page::LOCK).cast::<u32>();
                    std::ptr::write_volatile(lock, 1);
                    std::ptr::write_volatile(base.add(page::OFFSET).cast::<i64>(), 2_000);
                    std::ptr::write_volatile(lock, 2);
                }
                7
            })
        };
        assert_eq!(r.retries, 1);
        assert_eq!(
            r.count, 2_007,
            "the value after the update, never a torn one"
        );
    }

    #[test]
    fn concurrent_updates_never_give_a_torn_read() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        // The writer keeps offset and time_running equal, under the seqlock; a reader
        // that saw one without the other would return them unequal.
        let mut p = FakePage::new(0, 0, 0, 48);
        p.0[page::TIME_RUNNING..page::TIME_RUNNING + 8].copy_from_slice(&0u64.to_ne_bytes());
        let addr = p.0.as_mut_ptr() as usize;
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let base = addr as *mut u8;
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    // SAFETY: the page outlives the writer (joined below); volatile
                    // writes with the seqlock odd around them, as the kernel writes.
                    unsafe {
                        let lock = base.add(page::LOCK).cast::<u32>();
                        let seq = std::ptr::read_volatile(lock);
                        std::ptr::write_volatile(lock, seq.wrapping_add(1));
                        std::sync::atomic::fence(Ordering::Release);
                        std::ptr::write_volatile(base.add(page::OFFSET).cast::<u64>(), n);
                        std::ptr::write_volatile(base.add(page::TIME_RUNNING).cast::<u64>(), n);
                        std::sync::atomic::fence(Ordering::Release);
                        std::ptr::write_volatile(lock, seq.wrapping_add(2));
                    }
                }
            })
        };
        let mut retried = 0;
        let mut torn = None;
        for _ in 0..20_000 {
            // SAFETY: the page lives until after the writer is joined.
            let r = unsafe { read_page(addr as *const u8, |_| 0) };
            if r.count as u64 != r.running && torn.is_none() {
                torn = Some(r);
            }
            retried += r.retries;
        }
        // The writer stops before anything can fail (the page must outlive it).
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        assert_eq!(torn, None, "a read accepted a page during an update");
        eprintln!("{retried} retries over 20,000 reads");
    }
}
