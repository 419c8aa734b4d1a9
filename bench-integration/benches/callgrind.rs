//! Reading callgrind's out files into instruction profiles, against `callgrind_annotate`
//! (valgrind's own reader) on the same file in the same run, reported as a ratio.
//!
//! - `callgrind/parse`: `Costs::parse` of the file: every function's self cost per line
//!   and every call edge (what `--profile=instructions` reads of each dump).
//! - `callgrind/profile`: the same plus the profile (flat views, folded stacks expanded
//!   from the call edges) and its flamegraph SVG.
//! - `callgrind/callgrind_annotate`: `callgrind_annotate --inclusive=yes` of the file to
//!   /dev/null (the peer: valgrind's Perl reader, its flat listing by inclusive cost).
//!
//! The file is recorded once, by this executable rerun under callgrind with a workload of
//! its own (sorting, hashing, formatting: many Rust functions and call edges), into
//! `target/sparkles/bench-data/`. Without valgrind nothing is measured, and it says why.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::Parser;
use sparkles_bench::{HarnessArgs, Suite, Throughput};
use sparkles_report::callgrind::{self, Costs};

/// Set in the rerun's environment: run the workload and exit.
const WORKLOAD: &str = "SPARKLES_CALLGRIND_BENCH_WORKLOAD";

/// Work with many functions and call edges, for callgrind to record.
fn workload(rounds: u64) -> u64 {
    use std::collections::{BTreeMap, HashMap};
    use std::fmt::Write;
    let mut sum = 0u64;
    for r in 0..rounds {
        let mut v: Vec<u64> = (0..20_000u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ r)
            .collect();
        v.sort_unstable();
        let mut h: HashMap<u64, String> = HashMap::new();
        let mut b: BTreeMap<String, u64> = BTreeMap::new();
        for x in v.iter().step_by(7) {
            let mut s = String::new();
            let _ = write!(s, "{x:x}-{}", x % 97);
            b.insert(s.clone(), *x);
            h.insert(*x, s);
        }
        sum = sum.wrapping_add(b.len() as u64 + h.values().map(String::len).sum::<usize>() as u64);
        let text = serde_json::to_string(&b).unwrap_or_default();
        let back: BTreeMap<String, u64> = serde_json::from_str(&text).unwrap_or_default();
        sum = sum.wrapping_add(back.len() as u64);
    }
    sum
}

/// Records the out file: this executable under callgrind, running the workload.
fn record(path: &Path, rounds: u64) -> Result<(), String> {
    let program = sparkles_bench::valgrind::program().map_err(|why| why.to_string())?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let status = Command::new(&program)
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", path.display()))
        .arg(&exe)
        .env(WORKLOAD, rounds.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    if !status.success() {
        return Err(format!("callgrind's recording failed: {status}"));
    }
    Ok(())
}

fn parse(path: &Path) -> Result<Costs, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Costs::parse(&text, path).map_err(|e| e.to_string())
}

fn profile(path: &Path) -> Result<usize, String> {
    let costs = parse(path)?;
    let (p, folded) = callgrind::profile(&costs, "bench", 1);
    let svg = sparkles_report::flame::svg(&p, &folded).map_err(|e| e.to_string())?;
    Ok(svg.len())
}

fn annotate(path: &Path) -> Result<(), String> {
    let status = Command::new("callgrind_annotate")
        .arg("--inclusive=yes")
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("callgrind_annotate: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("callgrind_annotate failed: {status}"))
    }
}

fn main() {
    if let Some(rounds) = std::env::var_os(WORKLOAD) {
        let rounds = rounds.to_string_lossy().parse().unwrap_or(1);
        std::process::exit(i32::from(
            std::hint::black_box(workload(rounds)) == u64::MAX,
        ));
    }
    let args = HarnessArgs::parse();
    let mut suite = Suite::new("callgrind");
    // Smoke mode (cargo test) records a small file: each case runs once.
    let rounds = if args.bench { 12 } else { 1 };
    let file: PathBuf = sparkles_bench::output::out_dir(args.out_dir.as_deref())
        .join("bench-data")
        .join(format!("callgrind-{rounds}.out"));
    let ready = if file.is_file() {
        Ok(())
    } else {
        record(&file, rounds)
    };
    match ready.and_then(|()| parse(&file).map(|c| (c.functions.len(), c.calls.len()))) {
        Ok((functions, calls)) => {
            let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
            eprintln!(
                "callgrind: {} ({:.1} MB, {functions} functions, {calls} call edges)",
                file.display(),
                bytes as f64 / 1e6
            );
            let peer = Command::new("callgrind_annotate")
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok();
            suite.group("callgrind", |g| {
                let path = file.clone();
                g.case("parse", move |b| {
                    b.throughput(Throughput::Bytes(bytes));
                    b.try_iter(|| parse(&path));
                });
                let path = file.clone();
                g.case("profile", move |b| {
                    b.throughput(Throughput::Bytes(bytes));
                    b.try_iter(|| profile(&path));
                });
                if peer {
                    let path = file.clone();
                    g.case("callgrind_annotate", move |b| {
                        b.throughput(Throughput::Bytes(bytes));
                        b.try_iter(|| annotate(&path));
                    });
                } else {
                    eprintln!("callgrind: callgrind_annotate is not installed: no peer");
                }
            });
        }
        Err(why) => eprintln!("callgrind: no out file, nothing to measure: {why}"),
    }
    let outcome = sparkles_bench::run_or_exit(suite, &args);
    let median = |case: &str| outcome.median(case);
    for ours in ["callgrind/parse", "callgrind/profile"] {
        if let (Some(theirs), Some(m)) = (median("callgrind/callgrind_annotate"), median(ours)) {
            println!(
                "{ours}: {:.1}x faster than callgrind_annotate on the same file",
                theirs / m
            );
        }
    }
    std::process::exit(if outcome.all_ok() { 0 } else { 1 });
}
