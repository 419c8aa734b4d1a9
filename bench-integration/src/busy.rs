//! Whether the machine was busy while the run measured: how long the machine probe's
//! thread (one single-threaded reference loop timed beside the cases) waited on a run
//! queue for a CPU while it was ready to run (/proc/thread-self/schedstat: the cases' own
//! threads, which may well compete with each other, are not counted), and how much of the
//! CPUs' time the hypervisor gave to other guests (steal time, /proc/stat). Either says
//! other work ran beside the run: a verdict then needs more to clear its noise, and the
//! table and the run report say so with the figure.
//!
//! Not involuntary context switches: a loop alone on this 2-vCPU VM is switched out about
//! a hundred times a second (kernel threads), for microseconds each; beside one busy loop
//! a CPU it waits for whole scheduler slices, 40-50% of its time.

use std::time::Duration;

/// The share of its ready time the probe may wait for a CPU before the run was busy,
/// percent (alone: 0.0-0.5%).
pub(crate) const WAIT_PCT: f64 = 5.0;

/// Less running than this says nothing either way.
pub(crate) const MIN_RUN: Duration = Duration::from_millis(20);

/// Steal time beyond which the run was busy, percent of the CPUs' time.
pub(crate) const STEAL_PCT: f64 = 2.0;

/// One thread's time on a CPU and waiting for one, so far.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ThreadUsage {
    /// On a CPU.
    pub run: Duration,
    /// Ready to run, waiting on a run queue.
    pub wait: Duration,
}

impl ThreadUsage {
    /// The calling thread's, where the kernel says (Linux's schedstat).
    pub(crate) fn now() -> Option<ThreadUsage> {
        parse_schedstat(&std::fs::read_to_string("/proc/thread-self/schedstat").ok()?)
    }

    /// What the thread used since `earlier`.
    pub(crate) fn since(self, earlier: ThreadUsage) -> ThreadUsage {
        ThreadUsage {
            run: self.run.saturating_sub(earlier.run),
            wait: self.wait.saturating_sub(earlier.wait),
        }
    }

    /// The share of its ready time it waited, percent.
    pub(crate) fn wait_pct(&self) -> f64 {
        let ready = (self.run + self.wait).as_secs_f64();
        if ready > 0.0 {
            self.wait.as_secs_f64() / ready * 100.0
        } else {
            0.0
        }
    }
}

/// The calling thread's run-queue wait, read again and again between a case's timed
/// regions: its /proc/thread-self/schedstat kept open (a read from offset 0 is the
/// kernel's figure at that moment; a few microseconds, never inside a timed region).
pub(crate) struct WaitClock {
    file: std::fs::File,
    buffer: Vec<u8>,
}

impl WaitClock {
    /// The calling thread's, where the kernel says (Linux's schedstat); readings are
    /// this thread's wherever they are taken.
    pub(crate) fn open() -> Option<WaitClock> {
        let mut clock = WaitClock {
            file: std::fs::File::open("/proc/thread-self/schedstat").ok()?,
            buffer: Vec::with_capacity(64),
        };
        clock.read()?;
        Some(clock)
    }

    /// The thread's time waiting on a run queue so far.
    pub(crate) fn read(&mut self) -> Option<Duration> {
        use std::io::{Read, Seek, SeekFrom};
        self.file.seek(SeekFrom::Start(0)).ok()?;
        self.buffer.clear();
        self.file.read_to_end(&mut self.buffer).ok()?;
        Some(parse_schedstat(std::str::from_utf8(&self.buffer).ok()?)?.wait)
    }
}

/// A sample's run-queue wait: the wait clock read as each timed region starts and ends,
/// the waits inside them summed (what [`WaitClock`] says of the time between them, a
/// batched body's set-up, is left out).
///
/// A reading is the kernel's figure at one moment inside the read, so a wait that falls
/// in the read itself (a thread is most often preempted as a system call returns) is in
/// the region's difference though no timed region holds it: beside a busy loop a whole
/// scheduler slice, longer than the sample. Each read is timed, and what the two reads of
/// a region took is left out of its wait: what remains fell inside the region (a few
/// microseconds of a true wait may go uncounted; a sample is never made shorter than its
/// body ran).
pub(crate) struct WaitTally {
    clock: WaitClock,
    /// The wait at the region's start, and how long that read took.
    started: Option<(Duration, Duration)>,
    /// `None` once a reading failed: the sample's wait is unknown.
    total: Option<Duration>,
}

impl WaitTally {
    pub(crate) fn new(clock: WaitClock) -> WaitTally {
        WaitTally {
            clock,
            started: None,
            total: Some(Duration::ZERO),
        }
    }

    #[inline]
    pub(crate) fn resume(&mut self) {
        let before = std::time::Instant::now();
        let wait = self.clock.read();
        self.started = wait.map(|w| (w, before.elapsed()));
    }

    #[inline]
    pub(crate) fn pause(&mut self) {
        let before = std::time::Instant::now();
        let now = self.clock.read();
        let read = before.elapsed();
        self.total = match (self.total, self.started.take(), now) {
            (Some(total), Some((start, start_read)), Some(now)) => {
                Some(total + inside(now.saturating_sub(start), start_read + read))
            }
            _ => None,
        };
    }

    /// The waits summed, and the clock back for the next sample.
    pub(crate) fn finish(self) -> (Option<Duration>, WaitClock) {
        (self.total, self.clock)
    }
}

/// Of a `wait` read between two readings that took `reads` in all, what fell between
/// them: at least the wait less the reads' time.
fn inside(wait: Duration, reads: Duration) -> Duration {
    wait.saturating_sub(reads)
}

/// `RUN_NS WAIT_NS SLICES`.
fn parse_schedstat(text: &str) -> Option<ThreadUsage> {
    let mut f = text.split_whitespace().map(str::parse::<u64>);
    Some(ThreadUsage {
        run: Duration::from_nanos(f.next()?.ok()?),
        wait: Duration::from_nanos(f.next()?.ok()?),
    })
}

/// The counters when the measuring began.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Start {
    cpu: Option<(u64, u64)>,
}

/// What the counters say of the measuring passes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Contention {
    /// The probe thread's time on a CPU and waiting for one; `None` where the kernel
    /// gives no per-thread usage (not Linux) or the probe did not run.
    pub probe: Option<ThreadUsage>,
    /// Steal time meanwhile, percent of every CPU's time; `None` where /proc/stat is not
    /// read (not Linux).
    pub steal_pct: Option<f64>,
}

/// The `cpu` line of /proc/stat: (steal, all), in clock ticks.
fn cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_cpu_line(stat.lines().next()?)
}

fn parse_cpu_line(line: &str) -> Option<(u64, u64)> {
    let mut fields = line.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    // user nice system idle iowait irq softirq steal guest guest_nice: guest time is
    // counted in user time already.
    let ticks: Vec<u64> = fields.take(8).filter_map(|f| f.parse().ok()).collect();
    (ticks.len() == 8).then(|| (ticks[7], ticks.iter().sum()))
}

/// Reads the counters before the measuring passes.
pub(crate) fn start() -> Start {
    Start { cpu: cpu_ticks() }
}

impl Start {
    /// The contention since [`start`], with what the probe's thread used.
    pub(crate) fn finish(self, probe: Option<ThreadUsage>) -> Contention {
        let steal_pct = self.cpu.zip(cpu_ticks()).and_then(|((s0, t0), (s1, t1))| {
            let total = t1.checked_sub(t0).filter(|t| *t > 0)?;
            Some(s1.saturating_sub(s0) as f64 / total as f64 * 100.0)
        });
        Contention { probe, steal_pct }
    }
}

impl Contention {
    /// Whether other work ran beside the run.
    pub(crate) fn busy(&self) -> bool {
        let waited = self
            .probe
            .is_some_and(|p| p.run >= MIN_RUN && p.wait_pct() > WAIT_PCT);
        waited || self.steal_pct.is_some_and(|p| p > STEAL_PCT)
    }

    /// `busy: …` with the figures, where the run was busy.
    pub(crate) fn message(&self) -> Option<String> {
        if !self.busy() {
            return None;
        }
        let mut said = Vec::new();
        if let Some(p) = self.probe.filter(|p| p.run >= MIN_RUN) {
            said.push(format!(
                "the machine probe waited for a CPU {:.0}% of the time it was ready to run ({:.0} of {:.0} ms; alone, under 1%)",
                p.wait_pct(),
                p.wait.as_secs_f64() * 1e3,
                (p.run + p.wait).as_secs_f64() * 1e3
            ));
        }
        if let Some(p) = self.steal_pct.filter(|p| *p > 0.05) {
            said.push(format!("the hypervisor stole {p:.1}% of the CPUs' time"));
        }
        Some(format!(
            "busy: other work ran beside this run: {}; timings spread wider and verdicts need larger changes",
            said.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn contention(run_ms: u64, wait_ms: u64, steal: f64) -> Contention {
        Contention {
            probe: Some(ThreadUsage {
                run: Duration::from_millis(run_ms),
                wait: Duration::from_millis(wait_ms),
            }),
            steal_pct: Some(steal),
        }
    }

    #[test]
    fn busy_needs_waiting_or_steal_beyond_a_quiet_machines() {
        assert!(!contention(300, 1, 0.0).busy());
        assert_eq!(contention(300, 1, 0.0).message(), None);
        // Too little running to say.
        assert!(!contention(10, 10, 0.0).busy());
        let hog = contention(160, 140, 0.0);
        assert!(hog.busy());
        let said = hog.message().unwrap();
        assert!(
            said.contains("waited for a CPU 47% of the time it was ready to run (140 of 300 ms")
                && !said.contains("stole"),
            "{said}"
        );
        let stolen = contention(300, 1, 7.5);
        assert!(stolen.busy());
        assert!(stolen.message().unwrap().contains("stole 7.5%"));
        let unknown = Contention {
            probe: None,
            steal_pct: None,
        };
        assert!(!unknown.busy());
        assert_eq!(
            parse_schedstat("1500 250 7\n"),
            Some(ThreadUsage {
                run: Duration::from_nanos(1500),
                wait: Duration::from_nanos(250)
            })
        );
        assert_eq!(parse_schedstat("x"), None);
    }

    #[test]
    fn a_wait_inside_a_read_is_no_timed_regions() {
        let ms = Duration::from_millis;
        // Preempted for a 4 ms slice as the opening read returned: the read took it all.
        assert_eq!(
            inside(ms(4), ms(4) + Duration::from_micros(3)),
            Duration::ZERO
        );
        // Preempted inside the region: its reads took microseconds.
        assert_eq!(
            inside(ms(4), Duration::from_micros(6)),
            ms(4) - Duration::from_micros(6)
        );
        assert_eq!(
            inside(Duration::ZERO, Duration::from_micros(6)),
            Duration::ZERO
        );
    }

    #[test]
    fn the_cpu_line_gives_steal_and_all() {
        assert_eq!(
            parse_cpu_line("cpu  100 2 30 400 5 6 7 50 0 0"),
            Some((50, 600))
        );
        assert_eq!(parse_cpu_line("cpu0 1 2 3 4 5 6 7 8 0 0"), None);
        assert_eq!(parse_cpu_line("cpu 1 2"), None);
    }

    #[test]
    fn a_loop_beside_busy_loops_is_busy() {
        // One busy thread more than the CPUs beside a loop that measures its own thread:
        // it waits for a CPU for whole scheduler slices.
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let s = start();
        let until = Instant::now() + Duration::from_millis(600);
        let spin = move || {
            let mut x = 1u64;
            while Instant::now() < until {
                for i in 0..10_000u64 {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
                }
            }
            x
        };
        let hogs: Vec<_> = (0..=cpus).map(|_| std::thread::spawn(spin)).collect();
        let probe = std::thread::spawn(move || {
            let before = ThreadUsage::now();
            spin();
            ThreadUsage::now().zip(before).map(|(a, b)| a.since(b))
        })
        .join()
        .unwrap();
        for h in hogs {
            let _ = h.join();
        }
        let c = s.finish(probe);
        if cfg!(target_os = "linux") {
            assert!(c.busy(), "{c:?}");
            assert!(c.message().unwrap().starts_with("busy: "), "{c:?}");
            assert!((0.0..=100.0).contains(&c.steal_pct.unwrap()), "{c:?}");
        } else {
            assert_eq!(c.probe, None);
        }
    }

    #[test]
    fn a_samples_wait_beside_busy_loops_is_the_waits_inside_its_timed_regions() {
        // Two timed regions of a thread beside two busy loops a CPU, with untimed spinning
        // between them: its wait is counted in the regions alone.
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let until = Instant::now() + Duration::from_millis(900);
        let spin_until = move |end: Instant| {
            let mut x = 1u64;
            while Instant::now() < end {
                for i in 0..10_000u64 {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
                }
            }
            x
        };
        let hogs: Vec<_> = (0..2 * cpus)
            .map(|_| std::thread::spawn(move || spin_until(until)))
            .collect();
        let measured = std::thread::spawn(move || {
            let mut tally = WaitTally::new(WaitClock::open()?);
            let mut timed = Duration::ZERO;
            let mut untimed_wait = Duration::ZERO;
            for _ in 0..2 {
                tally.resume();
                let start = Instant::now();
                spin_until(start + Duration::from_millis(200));
                timed += start.elapsed();
                tally.pause();
                let before = ThreadUsage::now()?;
                spin_until(Instant::now() + Duration::from_millis(100));
                untimed_wait += ThreadUsage::now()?.since(before).wait;
            }
            let (wait, _) = tally.finish();
            Some((wait?, timed, untimed_wait))
        })
        .join()
        .unwrap();
        for h in hogs {
            let _ = h.join();
        }
        if !cfg!(target_os = "linux") {
            assert_eq!(measured, None);
            return;
        }
        let (wait, timed, untimed_wait) = measured.unwrap();
        // Beside two busy loops a CPU a thread waits about half its time.
        assert!(wait >= timed / 5 && wait < timed, "{wait:?} of {timed:?}");
        // The spinning between the regions waited too, and is not in the sample's wait.
        assert!(
            untimed_wait >= Duration::from_millis(20),
            "{untimed_wait:?}"
        );
    }
}
