//! How long a capture's events were throttled: the kernel stops an event that samples
//! faster than `kernel.perf_event_max_sample_rate` allows for the rest of a tick, and says
//! so with a THROTTLE record, then an UNTHROTTLE one when it runs again. Samples are then
//! missing from those stretches, which tilts a profile toward what runs after a tick.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// A capture's throttling: how often, and for how long in all (`"throttled"` in
/// `profile.json` and the bench row's `profile` object).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Throttled {
    /// THROTTLE records.
    pub count: u64,
    /// Time from each THROTTLE to its event's next UNTHROTTLE (or the capture's last
    /// record), summed over events, seconds.
    pub seconds: f64,
}

/// Reads THROTTLE and UNTHROTTLE records in time order into a [`Throttled`].
#[derive(Debug, Default)]
pub struct Throttling {
    count: u64,
    nanos: u64,
    /// Per event id, when it was throttled, while it is.
    open: HashMap<u64, u64>,
    last_time: u64,
}

impl Throttling {
    /// A THROTTLE (`throttled`) or UNTHROTTLE record of event `id` at `time` (ns).
    pub fn record(&mut self, throttled: bool, time: u64, id: u64) {
        self.saw(time);
        if throttled {
            self.count += 1;
            self.open.entry(id).or_insert(time);
        } else if let Some(start) = self.open.remove(&id) {
            self.nanos += time.saturating_sub(start);
        }
    }

    /// Any record's time (ns): where a throttled stretch never ended, it ends at the
    /// capture's last.
    pub fn saw(&mut self, time: u64) {
        self.last_time = self.last_time.max(time);
    }

    /// The sums, stretches still open closed at the last time seen.
    pub fn finish(&self) -> Throttled {
        let open: u64 = self
            .open
            .values()
            .map(|&start| self.last_time.saturating_sub(start))
            .sum();
        Throttled {
            count: self.count,
            seconds: (self.nanos + open) as f64 / 1e9,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stretches_sum_per_event_and_an_open_one_ends_at_the_last_record() {
        let mut t = Throttling::default();
        t.record(true, 1_000_000_000, 7);
        t.record(true, 1_200_000_000, 8);
        t.record(false, 1_004_000_000, 7); // 4 ms
        t.record(true, 1_500_000_000, 7);
        t.record(false, 1_501_000_000, 7); // 1 ms
        t.saw(1_210_000_000);
        t.saw(1_600_000_000); // event 8 never unthrottled: 400 ms
        let got = t.finish();
        assert_eq!(got.count, 3);
        assert!((got.seconds - 0.405).abs() < 1e-9, "{got:?}");
        // An UNTHROTTLE without its THROTTLE (the capture began throttled) adds nothing.
        t.record(false, 1_700_000_000, 9);
        assert_eq!(t.finish().count, 3);
    }
}
