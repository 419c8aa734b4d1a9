//! Time order, as perf report orders records (its ordered_events): a record with a
//! timestamp waits in a queue; at each FINISHED_ROUND the records up to the latest
//! timestamp seen before the previous round ended are released, sorted; the rest at the
//! end. A record without a timestamp is never queued.
//!
//! A queued record is kept by its place in the input where the input stays put (a mapped
//! file), else copied into an arena that is compacted as released records are delivered.
//! An entry is 40 bytes: a capture of millions of samples queued whole (one without
//! rounds) costs little beside its map.

use std::collections::VecDeque;

/// Where a queued record's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In the input, from this byte.
    Input(usize),
    /// In the queue's arena, from this byte.
    Arena(usize),
}

/// `attr` and `decompressed_at` absent.
const NONE_U32: u32 = u32::MAX;
const NONE_U64: u64 = u64::MAX;
/// `len`'s top bit: the bytes are in the arena.
const IN_ARENA: u32 = 1 << 31;

/// A queued record: its place in time, and where its bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queued {
    /// Its timestamp.
    pub time: u64,
    /// Its offset in the input (for a decompressed record, its COMPRESSED record's).
    pub offset: u64,
    at: u64,
    decompressed_at: u64,
    /// Its length, and (top bit) whether it is in the arena.
    len: u32,
    attr: u32,
}

impl Queued {
    /// Where its bytes are.
    pub fn place(&self) -> Place {
        if self.len & IN_ARENA != 0 {
            Place::Arena(self.at as usize)
        } else {
            Place::Input(self.at as usize)
        }
    }

    /// How many bytes.
    pub fn len(&self) -> usize {
        (self.len & !IN_ARENA) as usize
    }

    /// Whether it has none (never: a record has its header).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its attr, where it has one.
    pub fn attr(&self) -> Option<usize> {
        (self.attr != NONE_U32).then_some(self.attr as usize)
    }

    /// For a decompressed record, where it starts in the decompressed stream.
    pub fn decompressed_at(&self) -> Option<u64> {
        (self.decompressed_at != NONE_U64).then_some(self.decompressed_at)
    }
}

/// Records waiting for their round.
#[derive(Debug, Default)]
pub struct Order {
    queue: Vec<Queued>,
    ready: VecDeque<Queued>,
    arena: Vec<u8>,
    /// Bytes of the arena still queued or ready.
    arena_live: usize,
    max_time: u64,
    /// Records up to this time may go at the next round boundary: the latest time seen
    /// when the previous round ended.
    next_flush: u64,
}

impl Order {
    /// Queues a record at `time` whose bytes stay at `input_at` of the input, or (`None`)
    /// are `bytes`, copied.
    pub fn push(
        &mut self,
        time: u64,
        attr: Option<usize>,
        input_at: Option<usize>,
        bytes: &[u8],
        offset: u64,
        decompressed_at: Option<u64>,
    ) {
        // A record is at most 64 KiB (its size is a u16): the length fits below IN_ARENA.
        let mut len = bytes.len() as u32;
        let at = match input_at {
            Some(at) => at,
            None => {
                let at = self.arena.len();
                self.arena.extend_from_slice(bytes);
                self.arena_live += bytes.len();
                len |= IN_ARENA;
                at
            }
        };
        self.max_time = self.max_time.max(time);
        self.queue.push(Queued {
            time,
            offset,
            at: at as u64,
            decompressed_at: decompressed_at.unwrap_or(NONE_U64),
            len,
            attr: attr.map_or(NONE_U32, |a| a as u32),
        });
    }

    /// At FINISHED_ROUND: releases the records that may go now, in time order (records
    /// of one time in the order they came: the sort is stable).
    pub fn round(&mut self) {
        self.queue.sort_by_key(|q| q.time);
        let n = self.queue.partition_point(|q| q.time <= self.next_flush);
        self.next_flush = self.max_time;
        let later = self.queue.split_off(n);
        let released = std::mem::replace(&mut self.queue, later);
        self.release(released);
    }

    /// At the end: releases everything left, in time order.
    pub fn finish(&mut self) {
        self.queue.sort_by_key(|q| q.time);
        let all = std::mem::take(&mut self.queue);
        self.release(all);
    }

    /// Moves `released` (sorted, later than what is ready) to the ready queue, without a
    /// copy when nothing else is ready.
    fn release(&mut self, released: Vec<Queued>) {
        if self.ready.is_empty() {
            self.ready = VecDeque::from(released);
        } else {
            self.ready.extend(released);
        }
    }

    /// The next released record. Arena space of records delivered before it is reclaimed
    /// by [`Order::compact`].
    pub fn pop(&mut self) -> Option<Queued> {
        let q = self.ready.pop_front()?;
        if matches!(q.place(), Place::Arena(_)) {
            self.arena_live -= q.len();
        }
        Some(q)
    }

    /// The lowest place in the input that a record still queued or ready has its bytes
    /// at: the input before it is no longer needed (`None`: no record waits there).
    pub fn lowest_input_place(&self) -> Option<usize> {
        self.queue
            .iter()
            .chain(self.ready.iter())
            .filter_map(|q| match q.place() {
                Place::Input(at) => Some(at),
                Place::Arena(_) => None,
            })
            .min()
    }

    /// The arena's bytes (where [`Place::Arena`] points).
    pub fn arena(&self) -> &[u8] {
        &self.arena
    }

    /// Drops the arena bytes of delivered records once they are most of it; call between
    /// deliveries.
    pub fn compact(&mut self) {
        if self.arena.len() < (1 << 16) || self.arena.len() < 2 * self.arena_live {
            return;
        }
        let mut arena = Vec::with_capacity(self.arena_live * 2);
        for q in self.queue.iter_mut().chain(self.ready.iter_mut()) {
            if let Place::Arena(at) = q.place() {
                let len = q.len();
                q.at = arena.len() as u64;
                arena.extend_from_slice(&self.arena[at..at + len]);
            }
        }
        self.arena = arena;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use super::*;

    #[test]
    fn a_round_releases_only_what_no_later_record_can_precede() {
        let mut o = Order::default();
        o.push(30, None, Some(0), &[0; 8], 0, None);
        o.push(10, None, Some(8), &[0; 8], 8, None);
        // The first round ends: nothing was seen before the previous one, so nothing goes.
        o.round();
        assert!(o.pop().is_none());
        o.push(20, None, Some(16), &[0; 8], 16, None);
        o.push(40, Some(3), Some(24), &[0; 8], 24, Some(77));
        // The second: records up to 30 (the latest time the first round saw) go.
        o.round();
        let times: Vec<u64> = std::iter::from_fn(|| o.pop()).map(|q| q.time).collect();
        assert_eq!(times, [10, 20, 30]);
        o.finish();
        let last = o.pop().unwrap();
        assert_eq!(last.time, 40);
        assert_eq!(
            (
                last.attr(),
                last.decompressed_at(),
                last.place(),
                last.len()
            ),
            (Some(3), Some(77), Place::Input(24), 8)
        );
    }

    #[test]
    fn the_lowest_input_place_is_the_earliest_record_still_waiting() {
        let mut o = Order::default();
        assert_eq!(o.lowest_input_place(), None);
        o.push(30, None, Some(100), &[0; 8], 100, None);
        o.push(10, None, Some(200), &[0; 8], 200, None);
        o.push(20, None, None, &[0; 8], 300, None);
        assert_eq!(o.lowest_input_place(), Some(100));
        o.round();
        o.push(40, None, Some(400), &[0; 8], 400, None);
        o.round();
        // Released, not yet delivered: still needed.
        assert_eq!(o.lowest_input_place(), Some(100));
        assert_eq!(o.pop().unwrap().time, 10);
        assert_eq!(o.lowest_input_place(), Some(100));
        assert_eq!(o.pop().unwrap().time, 20);
        assert_eq!(o.pop().unwrap().time, 30);
        // Only the record at 400 is left: the input before it is read.
        assert_eq!(o.lowest_input_place(), Some(400));
        o.finish();
        o.pop();
        assert_eq!(o.lowest_input_place(), None);
    }

    #[test]
    fn records_of_one_time_keep_their_order() {
        let mut o = Order::default();
        for at in 0..100usize {
            o.push(5, None, Some(at), &[0; 8], at as u64, None);
        }
        o.finish();
        let places: Vec<u64> = std::iter::from_fn(|| o.pop()).map(|q| q.offset).collect();
        assert_eq!(places, (0..100).collect::<Vec<u64>>());
    }

    #[test]
    fn copied_records_survive_compaction() {
        let mut o = Order::default();
        for i in 0..20_000u64 {
            o.push(i, None, None, &i.to_le_bytes(), i, None);
        }
        o.finish();
        for i in 0..19_999u64 {
            let q = o.pop().unwrap();
            assert_eq!(q.time, i);
            o.compact();
        }
        let last = o.pop().unwrap();
        let Place::Arena(at) = last.place() else {
            panic!("copied")
        };
        assert_eq!(&o.arena()[at..at + 8], &19_999u64.to_le_bytes());
        assert!(o.arena().len() < 1 << 16, "compacted: {}", o.arena().len());
    }
}
