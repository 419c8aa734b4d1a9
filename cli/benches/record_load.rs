//! Records lost on a loaded machine: `sparkles record` against `perf record` with the
//! same event, frequency and stack size (`cpu-clock`, 4 kHz, DWARF stacks of 16 KiB,
//! zstd), on the same workload under the same load, interleaved round by round.
//!
//! - the workload: this program run again as a child that spins for `--seconds` (3) at
//!   the bottom of 20 frames;
//! - the loads: `idle` (nothing beside it); `hogs` (one busy loop per CPU, as a build or
//!   a test run beside a benchmark); `hogs-nice` (the hogs and the workload at nice -10,
//!   the recorder's drain at 0: the recorder starved, the worst a busy machine does;
//!   root only);
//! - the recorders: `sparkles` (`sparkles record`, ring buffers sized for 250 ms of
//!   samples), `perf` (`perf record -z` with its default buffers), `perf-m` (the same with
//!   `-m` as large as ours).
//!
//! Each capture is read by the same reader: samples, records lost (the LOST records'
//! counts) and samples lost (LOST_SAMPLES). Sums over `--rounds` (3). Needs perf_event
//! (and perf for the peers): says so and stops where either is missing.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sparkles_perf_data::PerfData;

#[path = "../../testdata/support/skip.rs"]
mod skip;
mod support;

/// Spins for `seconds` under `depth` more frames.
#[inline(never)]
fn spin(depth: u32, seconds: f64) -> u64 {
    if depth > 0 {
        return std::hint::black_box(spin(depth - 1, seconds)) + 1;
    }
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let mut n = 0u64;
    while Instant::now() < until {
        n = std::hint::black_box(n.wrapping_add(1));
    }
    n
}

/// What a round measured.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    samples: u64,
    lost: u64,
    lost_samples: u64,
    runs: u64,
}

fn read_tally(path: &Path) -> Result<Tally, String> {
    let data = PerfData::open(path).map_err(|e| e.to_string())?;
    let stats = data
        .for_each_record(|_| Ok::<(), sparkles_perf_data::Error>(()))
        .map_err(|e| e.to_string())?;
    Ok(Tally {
        samples: stats.samples,
        lost: stats.lost,
        lost_samples: stats.lost_samples,
        runs: 1,
    })
}

/// The workload's command line, at `nice` where given.
fn workload(seconds: f64, nice: Option<i32>) -> Vec<String> {
    let exe =
        std::env::current_exe().map_or_else(|_| "record_load".into(), |p| p.display().to_string());
    let mut cmd = Vec::new();
    if let Some(n) = nice {
        cmd.extend(["nice".to_string(), "-n".to_string(), n.to_string()]);
    }
    cmd.extend([exe, "--spin".to_string(), seconds.to_string()]);
    cmd
}

/// One busy loop per CPU, at `nice`.
fn start_hogs(nice: i32) -> Vec<Child> {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("record_load"));
    (0..cpus)
        .filter_map(|_| {
            Command::new("nice")
                .args(["-n", &nice.to_string()])
                .arg(&exe)
                .arg("--hog")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .ok()
        })
        .collect()
}

fn stop(children: Vec<Child>) {
    for mut c in children {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// Runs `recorder` over the workload, writing `out`: the tally, and what it printed.
fn record(recorder: &[String], work: &[String], out: &Path) -> Result<(Tally, String), String> {
    let _ = std::fs::remove_file(out);
    let output = Command::new(&recorder[0])
        .args(&recorder[1..])
        .arg("-o")
        .arg(out)
        .arg("--")
        .args(work)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", recorder[0]))?;
    let said = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        return Err(format!("{} failed: {}", recorder[0], said.trim()));
    }
    Ok((read_tally(out)?, said))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--hog") {
        loop {
            std::hint::black_box(spin(0, 60.0));
        }
    }
    if let Some(i) = args.iter().position(|a| a == "--spin") {
        let seconds = args.get(i + 1).and_then(|s| s.parse().ok()).unwrap_or(3.0);
        std::hint::black_box(spin(20, seconds));
        return;
    }
    let rounds = support::number_arg("--rounds", 3.0) as usize;
    let seconds = support::number_arg("--seconds", 3.0);
    let sparkles = env!("CARGO_BIN_EXE_sparkles").to_string();
    let have_perf = Command::new("perf")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let dir = tempfile::tempdir().expect("a scratch folder");
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let stack = "dwarf,16384";
    let mut loads: Vec<(&str, Option<i32>)> = vec![("idle", None), ("hogs", Some(0))];
    if root {
        loads.push(("hogs-nice", Some(-10)));
    } else {
        println!("load hogs-nice left out: only root lowers a nice value");
    }
    for (load, hog_nice) in loads {
        let work_nice = hog_nice.filter(|&n| n < 0);
        let work = workload(seconds, work_nice);
        let hogs = hog_nice.map(start_hogs).unwrap_or_default();
        let mut ours = Tally::default();
        let mut perf = Tally::default();
        let mut perf_m = Tally::default();
        let mut buffers = String::new();
        let mut pages = None;
        for _ in 0..rounds {
            let ours_cmd = vec![
                sparkles.clone(),
                "record".into(),
                "-e".into(),
                "cpu-clock".into(),
                "-F".into(),
                "4000".into(),
                "--call-graph".into(),
                stack.into(),
            ];
            match record(&ours_cmd, &work, &dir.path().join("ours.perf.data")) {
                Ok((t, said)) => {
                    add(&mut ours, t);
                    if let Some(b) = said.rsplit("; ").next() {
                        buffers = b.trim().to_string();
                        pages = ring_pages(&buffers);
                    }
                }
                Err(e) => {
                    println!("sparkles record cannot sample here: {e}");
                    stop(hogs);
                    return;
                }
            }
            if !have_perf {
                continue;
            }
            let perf_cmd: Vec<String> = [
                "perf",
                "record",
                "-q",
                "-z",
                "-e",
                "cpu-clock",
                "-F",
                "4000",
                "--call-graph",
                stack,
            ]
            .iter()
            .map(ToString::to_string)
            .collect();
            let theirs = dir.path().join("perf.perf.data");
            if let Ok((t, _)) = record(&perf_cmd, &work, &theirs) {
                add(&mut perf, t);
            }
            if let Some(p) = pages {
                let mut m = perf_cmd.clone();
                m.extend(["-m".to_string(), p.to_string()]);
                if let Ok((t, _)) = record(&m, &work, &theirs) {
                    add(&mut perf_m, t);
                }
            }
        }
        stop(hogs);
        println!("load {load}: {buffers}");
        print_row(load, "sparkles", ours);
        if have_perf {
            print_row(load, "perf", perf);
            if pages.is_some() {
                print_row(load, "perf -m (ours)", perf_m);
            }
        } else {
            println!("  perf not installed: no peer");
        }
    }
}

fn add(sum: &mut Tally, t: Tally) {
    sum.samples += t.samples;
    sum.lost += t.lost;
    sum.lost_samples += t.lost_samples;
    sum.runs += t.runs;
}

fn print_row(load: &str, who: &str, t: Tally) {
    println!(
        "  {load:<10} {who:<15} runs {:>2}  samples {:>7}  lost records {:>5}  lost samples {:>4}",
        t.runs, t.samples, t.lost, t.lost_samples
    );
}

/// The pages of each ring buffer from `sparkles record`'s line (`2 ring buffers of 32 MiB
/// (…)`), as perf's `-m` takes them.
fn ring_pages(line: &str) -> Option<usize> {
    let size = line.split(" of ").nth(1)?;
    let mut words = size.split_whitespace();
    let n: usize = words.next()?.parse().ok()?;
    let bytes = match words.next()? {
        "MiB" => n << 20,
        "KiB" => n << 10,
        _ => return None,
    };
    Some(bytes / 4096)
}
