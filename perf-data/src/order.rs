//! Time order, as perf report orders records (its ordered_events): a record with a
//! timestamp waits in a queue; at each FINISHED_ROUND the records up to the latest
//! timestamp seen before the previous round ended are released, sorted; the rest at the
//! end. A record without a timestamp is never queued.
//!
//! A queued record is kept by its place in the input where the input stays put (a mapped
//! file), else copied into an arena that is compacted as released records are delivered.

use std::collections::VecDeque;

/// Where a queued record's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In the input, from this byte.
    Input(usize),
    /// In the queue's arena, from this byte.
    Arena(usize),
}

/// A queued record: its place in time, and where its bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queued {
    /// Its timestamp.
    pub time: u64,
    seq: u64,
    /// Its attr, where it has one.
    pub attr: Option<usize>,
    /// Where its bytes are.
    pub place: Place,
    /// How many.
    pub len: usize,
    /// Its offset in the input (for a decompressed record, its COMPRESSED record's).
    pub offset: u64,
    /// For a decompressed record, where it starts in the decompressed stream.
    pub decompressed_at: Option<u64>,
}

/// Records waiting for their round.
#[derive(Debug, Default)]
pub struct Order {
    queue: Vec<Queued>,
    ready: VecDeque<Queued>,
    arena: Vec<u8>,
    /// Bytes of the arena still queued or ready.
    arena_live: usize,
    seq: u64,
    max_time: u64,
    /// Records up to this time may go at the next round boundary: the latest time seen
    /// when the previous round ended.
    next_flush: u64,
}

impl Order {
    /// Queues a record at `time` whose bytes stay at `place` of the input, or (`None`)
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
        let place = match input_at {
            Some(at) => Place::Input(at),
            None => {
                let at = self.arena.len();
                self.arena.extend_from_slice(bytes);
                self.arena_live += bytes.len();
                Place::Arena(at)
            }
        };
        self.max_time = self.max_time.max(time);
        self.queue.push(Queued {
            time,
            seq: self.seq,
            attr,
            place,
            len: bytes.len(),
            offset,
            decompressed_at,
        });
        self.seq += 1;
    }

    /// At FINISHED_ROUND: releases the records that may go now, in time order.
    pub fn round(&mut self) {
        self.queue.sort_by_key(|q| (q.time, q.seq));
        let n = self.queue.partition_point(|q| q.time <= self.next_flush);
        self.next_flush = self.max_time;
        self.ready.extend(self.queue.drain(..n));
    }

    /// At the end: releases everything left, in time order.
    pub fn finish(&mut self) {
        self.queue.sort_by_key(|q| (q.time, q.seq));
        self.ready.extend(self.queue.drain(..));
    }

    /// The next released record. Arena space of records delivered before it is reclaimed
    /// first (nothing borrows the arena between calls).
    pub fn pop(&mut self) -> Option<Queued> {
        let q = self.ready.pop_front()?;
        if matches!(q.place, Place::Arena(_)) {
            self.arena_live -= q.len;
        }
        Some(q)
    }

    /// Whether released records wait to be delivered.
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
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
            if let Place::Arena(at) = q.place {
                q.place = Place::Arena(arena.len());
                arena.extend_from_slice(&self.arena[at..at + q.len]);
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
        o.push(40, None, Some(24), &[0; 8], 24, None);
        // The second: records up to 30 (the latest time the first round saw) go.
        o.round();
        let times: Vec<u64> = std::iter::from_fn(|| o.pop()).map(|q| q.time).collect();
        assert_eq!(times, [10, 20, 30]);
        o.finish();
        assert_eq!(o.pop().map(|q| q.time), Some(40));
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
        let Place::Arena(at) = last.place else {
            panic!("copied")
        };
        assert_eq!(&o.arena()[at..at + 8], &19_999u64.to_le_bytes());
        assert!(o.arena().len() < 1 << 16, "compacted: {}", o.arena().len());
    }
}
