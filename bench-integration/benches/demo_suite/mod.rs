//! The demo suite: cases of distinct character, so that timings, counters and (later)
//! profiles each show a different hot spot. `benches/demo.rs` runs it; tests use it too
//! (each target that includes it uses a part of it).
//!
//! | case | bound by |
//! |---|---|
//! | `sort/u64/100k` | comparisons and branch prediction (batched: input copied untimed) |
//! | `hashmap/insert/10k` | hashing and table growth |
//! | `hash/lookup/10k/std`, `hash/lookup/10k/foldhash` | two hashers on the same lookups: `foldhash` held to `std` (the group's reference) in the same rounds |
//! | `json/parse/value`, `json/parse/typed` | serde_json parsing of a generated ~340 KiB document |
//! | `memory/pointer_chase/64MiB` | memory latency: dependent loads over a buffer far larger than L2 |
//! | `pages/touch/4MiB` | minor page faults: maps fresh memory and touches every page |
//! | `io/read_file/1MiB` | read syscalls over a file in the page cache |
//! | `compute/sieve/1M` | a tight arithmetic loop |
//! | `sync/mutex_handoff/100` | waiting: a token handed 100 times to another thread and back through a mutex and condvar |
//! | `sync/channel_pingpong/100` | waiting: 100 round trips over a pair of channels to another thread |
//! | `sync/shared_counter/1000/threads=N` | a thread sweep: 1, 2 and 4 threads adding to one atomic counter at once, its cache line passed between CPUs |

#![allow(dead_code)]

use std::collections::HashMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use sparkles_bench::{Suite, Throughput};

/// Elements sorted per iteration of `sort/u64/100k`.
pub const SORT_LEN: usize = 100_000;
/// Keys inserted per iteration of `hashmap/insert/10k`.
pub const MAP_KEYS: usize = 10_000;
/// Size of the pointer-chasing buffer: far beyond any L2 and most L3 caches.
pub const CHASE_BYTES: usize = 64 << 20;
/// Dependent loads per iteration of the pointer chase.
pub const CHASE_STEPS: usize = 1 << 16;
/// Bytes mapped and touched per iteration of `pages/touch/4MiB`.
pub const TOUCH_BYTES: usize = 4 << 20;
/// Size of the file `io/read_file/1MiB` reads.
pub const READ_BYTES: usize = 1 << 20;
/// Upper bound of the sieve.
pub const SIEVE_LIMIT: usize = 1 << 20;

/// One record of the generated JSON document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Record number.
    pub id: u64,
    /// A short name.
    pub name: String,
    /// An email-like string.
    pub email: String,
    /// Whether the record is active.
    pub active: bool,
    /// A floating-point score.
    pub score: f64,
    /// A handful of tags.
    pub tags: Vec<String>,
    /// A nested object.
    pub location: Location,
}

/// The nested object of a [`Record`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Location {
    /// Latitude.
    pub lat: f64,
    /// Longitude.
    pub lon: f64,
    /// City name.
    pub city: String,
}

/// A deterministic JSON document of `records` records (1,500 make about 340 KiB).
pub fn json_document(records: usize) -> Vec<u8> {
    const WORDS: [&str; 8] = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
    ];
    let mut rng = fastrand::Rng::with_seed(7);
    let word = |rng: &mut fastrand::Rng| WORDS[rng.usize(..WORDS.len())];
    let doc: Vec<Record> = (0..records as u64)
        .map(|id| Record {
            id,
            name: format!("{}-{}-{id}", word(&mut rng), word(&mut rng)),
            email: format!("{}.{}@example.org", word(&mut rng), id),
            active: rng.bool(),
            score: rng.f64() * 1000.0,
            tags: (0..rng.usize(1..6))
                .map(|_| word(&mut rng).to_string())
                .collect(),
            location: Location {
                lat: rng.f64() * 180.0 - 90.0,
                lon: rng.f64() * 360.0 - 180.0,
                city: format!("{} city", word(&mut rng)),
            },
        })
        .collect();
    serde_json::to_vec(&doc).unwrap_or_default()
}

/// `n` pseudo-random u64s, the same every run.
pub fn random_u64s(n: usize, seed: u64) -> Vec<u64> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n).map(|_| rng.u64(..)).collect()
}

/// A single random cycle through `len` slots (Sattolo's algorithm): following `next`
/// from any slot visits every slot before returning, so the walk defeats prefetching.
pub fn chase_cycle(len: usize) -> Vec<usize> {
    let mut next: Vec<usize> = (0..len).collect();
    let mut rng = fastrand::Rng::with_seed(11);
    for i in (1..len).rev() {
        let j = rng.usize(..i);
        next.swap(i, j);
    }
    next
}

/// Follows `steps` links of `next` from `start`; returns where the walk ended.
#[inline(never)]
pub fn chase(next: &[usize], start: usize, steps: usize) -> usize {
    let mut p = start;
    for _ in 0..steps {
        p = next[p];
    }
    p
}

/// Maps `bytes` of fresh anonymous memory, writes one byte per page (each write a minor
/// fault), and unmaps it; returns the number of pages touched.
#[inline(never)]
pub fn touch_fresh_pages(bytes: usize) -> std::io::Result<usize> {
    let mut map = memmap2::MmapMut::map_anon(bytes)?;
    // Transparent huge pages would turn 1,024 faults into 2; ask for base pages. The
    // advice can fail on kernels without THP, which already means base pages.
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::NoHugePage);
    let page = page_size();
    let mut pages = 0;
    for offset in (0..bytes).step_by(page) {
        // SAFETY: `offset < bytes`, inside the writable mapping.
        unsafe { std::ptr::write_volatile(map.as_mut_ptr().add(offset), 1) };
        pages += 1;
    }
    Ok(pages)
}

/// The size of a page (4 KiB where the OS does not say: Windows on x86-64 and ARM64).
pub fn page_size() -> usize {
    #[cfg(unix)]
    {
        // SAFETY: sysconf has no preconditions.
        usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
    }
    #[cfg(not(unix))]
    {
        4096
    }
}

/// Counts primes below `limit` with the sieve of Eratosthenes.
#[inline(never)]
pub fn sieve(limit: usize) -> usize {
    let mut composite = vec![false; limit];
    let mut count = 0;
    for i in 2..limit {
        if !composite[i] {
            count += 1;
            let mut j = i * i;
            while j < limit {
                composite[j] = true;
                j += i;
            }
        }
    }
    count
}

/// A file the demo reads, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn create(bytes: usize) -> std::io::Result<TempFile> {
        let path = std::env::temp_dir().join(format!(
            "sparkles-demo-{}-{:?}.bin",
            std::process::id(),
            std::thread::current().id()
        ));
        let content: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, content)?;
        Ok(TempFile(path))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Hand-offs (or round trips) per iteration of the waiting cases.
pub const HANDOFFS: u64 = 100;

/// A token handed between two threads through one mutex and condvar: the caller writes
/// an odd number and waits for the helper thread to make it even.
pub struct Handoff {
    shared: std::sync::Arc<(std::sync::Mutex<u64>, std::sync::Condvar)>,
    helper: Option<std::thread::JoinHandle<()>>,
}

/// The value that stops the helper.
const STOP: u64 = u64::MAX;

impl Handoff {
    /// Starts the helper thread.
    pub fn start() -> Handoff {
        let shared = std::sync::Arc::new((std::sync::Mutex::new(0u64), std::sync::Condvar::new()));
        let theirs = shared.clone();
        let helper = std::thread::spawn(move || {
            let (lock, cond) = &*theirs;
            let mut v = lock.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                while *v % 2 == 0 {
                    v = cond.wait(v).unwrap_or_else(|e| e.into_inner());
                }
                if *v == STOP {
                    return;
                }
                *v += 1;
                cond.notify_one();
            }
        });
        Handoff {
            shared,
            helper: Some(helper),
        }
    }

    /// Hands the token over and waits for it back, `times` times.
    #[inline(never)]
    pub fn hand(&self, times: u64) -> u64 {
        let (lock, cond) = &*self.shared;
        let mut v = lock.lock().unwrap_or_else(|e| e.into_inner());
        for _ in 0..times {
            *v += 1;
            cond.notify_one();
            while *v % 2 == 1 {
                v = cond.wait(v).unwrap_or_else(|e| e.into_inner());
            }
        }
        *v
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        let (lock, cond) = &*self.shared;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = STOP;
        cond.notify_one();
        if let Some(h) = self.helper.take() {
            let _ = h.join();
        }
    }
}

/// A helper thread that echoes every number it receives, plus one.
pub struct Echo {
    to: Option<std::sync::mpsc::Sender<u64>>,
    from: std::sync::mpsc::Receiver<u64>,
    helper: Option<std::thread::JoinHandle<()>>,
}

impl Echo {
    /// Starts the helper thread.
    pub fn start() -> Echo {
        let (to, theirs) = std::sync::mpsc::channel::<u64>();
        let (back, from) = std::sync::mpsc::channel::<u64>();
        let helper = std::thread::spawn(move || {
            for n in theirs {
                if back.send(n + 1).is_err() {
                    return;
                }
            }
        });
        Echo {
            to: Some(to),
            from,
            helper: Some(helper),
        }
    }

    /// `times` round trips.
    #[inline(never)]
    pub fn ping(&self, times: u64) -> u64 {
        let mut n = 0;
        for _ in 0..times {
            if let Some(to) = &self.to {
                let _ = to.send(n);
            }
            n = self.from.recv().unwrap_or(n);
        }
        n
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        drop(self.to.take());
        if let Some(h) = self.helper.take() {
            let _ = h.join();
        }
    }
}

/// `MAP_KEYS` keys looked up, each once, in a map of them hashed by `S`'s hasher.
fn lookups<S: std::hash::BuildHasher + Default>(b: &mut sparkles_bench::Bencher) {
    let keys = random_u64s(MAP_KEYS, 3);
    let map: HashMap<u64, usize, S> = keys.iter().enumerate().map(|(i, &k)| (k, i)).collect();
    b.throughput(Throughput::Elements(MAP_KEYS as u64));
    b.iter(|| keys.iter().map(|k| map[black_box(k)]).sum::<usize>());
}

/// The demo suite.
pub fn suite() -> Suite {
    let mut suite = Suite::new("demo");
    suite.case("sort/u64/100k", |b| {
        let data = random_u64s(SORT_LEN, 1);
        b.throughput(Throughput::Elements(SORT_LEN as u64));
        b.iter_batched(
            || data.clone(),
            |mut v| {
                v.sort_unstable();
                v
            },
            |v| debug_assert!(v.windows(2).all(|w| w[0] <= w[1])),
        );
    });
    suite.case("hashmap/insert/10k", |b| {
        let keys = random_u64s(MAP_KEYS, 2);
        b.throughput(Throughput::Elements(MAP_KEYS as u64));
        b.iter(|| {
            let mut map = HashMap::new();
            for (i, &k) in keys.iter().enumerate() {
                map.insert(k, i);
            }
            map
        });
    });
    // Two implementations side by side: std's SipHash against foldhash on the same
    // lookups, foldhash's row given its ratio to std's in the same rounds.
    suite.group("hash/lookup/10k", |g| {
        g.reference("std", |b| {
            lookups::<std::collections::hash_map::RandomState>(b);
        });
        g.case("foldhash", |b| {
            lookups::<foldhash::fast::RandomState>(b);
        });
    });
    suite.group("json/parse", |g| {
        g.case("value", |b| {
            let doc = json_document(1500);
            b.throughput(Throughput::Bytes(doc.len() as u64));
            b.try_iter(|| serde_json::from_slice::<serde_json::Value>(&doc));
        });
        g.case("typed", |b| {
            let doc = json_document(1500);
            b.throughput(Throughput::Bytes(doc.len() as u64));
            b.try_iter(|| serde_json::from_slice::<Vec<Record>>(&doc));
        });
    });
    suite.case("memory/pointer_chase/64MiB", |b| {
        let next = chase_cycle(CHASE_BYTES / std::mem::size_of::<usize>());
        let mut at = 0;
        b.throughput(Throughput::Elements(CHASE_STEPS as u64));
        b.iter(|| {
            at = chase(&next, at, CHASE_STEPS);
            at
        });
    });
    suite.case("pages/touch/4MiB", |b| {
        b.throughput(Throughput::Bytes(TOUCH_BYTES as u64));
        b.try_iter(|| touch_fresh_pages(TOUCH_BYTES));
    });
    suite.case("io/read_file/1MiB", |b| -> std::io::Result<()> {
        let file = TempFile::create(READ_BYTES)?;
        b.throughput(Throughput::Bytes(READ_BYTES as u64));
        b.try_iter(|| std::fs::read(&file.0));
        drop(file);
        Ok(())
    });
    suite.case("compute/sieve/1M", |b| {
        b.iter(|| sieve(black_box(SIEVE_LIMIT)));
    });
    suite.group("sync", |g| {
        g.case("mutex_handoff/100", |b| {
            let handoff = Handoff::start();
            b.throughput(Throughput::Elements(HANDOFFS));
            b.iter(|| handoff.hand(black_box(HANDOFFS)));
        });
        // A thread sweep: the same body on 1, 2 and 4 threads at once.
        g.case_threads("shared_counter/1000", [1, 2, 4], |b| {
            let counter = AtomicU64::new(0);
            b.throughput(Throughput::Elements(1000));
            b.iter_threads(|| {
                for _ in 0..1000 {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            });
        });
        g.case("channel_pingpong/100", |b| {
            let echo = Echo::start();
            b.throughput(Throughput::Elements(HANDOFFS));
            b.iter(|| echo.ping(black_box(HANDOFFS)));
        });
    });
    suite
}
