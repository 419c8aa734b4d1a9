//! Symbolizing 10,000 distinct instruction addresses of a large Rust binary with full
//! debug info (the debug build of `sparkles`, over 30 MB), loading included, against
//! binutils addr2line (`-f -i -C`) in the same run, reported as a ratio.
//!
//! - `symbolize/sparkles`: `Module::open` and every address's inlined frames, demangled,
//!   one at a time on one thread.
//! - `symbolize/sparkles_batch`: the symbolizer's batch API (sorted, deduplicated, named
//!   in parallel across the cores).
//! - `symbolize/sparkles_cli`: `sparkles addr2line -f -i -C -e BIN`, a process like the
//!   peers, addresses on stdin.
//! - `symbolize/binutils`: GNU `addr2line -f -i -C -e BIN` with the addresses on stdin.
//! - `symbolize/addr2line_tool`: the addr2line crate's own tool, where `cargo install
//!   addr2line --features bin` put it.
//!
//! After timing, each tool's process runs once more under GNU time and its peak resident
//! memory is printed beside the others' (not wait4's `ru_maxrss`: a child starts with
//! its parent's high-water mark, and this bench has read the binary in-process).
//!
//! The binary is built with `cargo build -p sparkles-cli --bin sparkles` when missing.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::Parser;
use object::{Object, ObjectSymbol, SymbolKind};
use sparkles_bench::{HarnessArgs, Suite};
use sparkles_symbolize::symbolizer::{ModuleKey, Place, Symbolizer};
use sparkles_symbolize::{Module, SearchPaths};

#[path = "../../testdata/support/skip.rs"]
mod skip;
mod support;

const ADDRESSES: usize = 10_000;

/// The debug `sparkles` binary in the target folder this bench was built into, built if
/// missing.
fn big_binary() -> Result<PathBuf, String> {
    let target = std::env::current_exe()
        .ok()
        .and_then(|exe| sparkles_bench::output::target_dir_of(&exe))
        .unwrap_or_else(|| PathBuf::from("target"));
    let bin = target.join("debug/sparkles");
    if !bin.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-q", "-p", "sparkles-cli", "--bin", "sparkles"])
            .status()
            .map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!(
                "building the debug sparkles binary failed ({status})"
            ));
        }
    }
    Ok(bin)
}

/// 10,000 distinct addresses inside the binary's functions, spread over all of them.
fn addresses(bin: &Path) -> Result<Vec<u64>, String> {
    let bytes = std::fs::read(bin).map_err(|e| e.to_string())?;
    let file = object::File::parse(&*bytes).map_err(|e| e.to_string())?;
    let mut functions: Vec<(u64, u64)> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
        .map(|s| (s.address(), s.size()))
        .collect();
    functions.sort_unstable();
    functions.dedup();
    let mut out = Vec::with_capacity(ADDRESSES);
    let mut round = 0u64;
    while out.len() < ADDRESSES && round < 64 {
        let step = (functions.len() / ADDRESSES).max(1);
        for &(start, size) in functions.iter().step_by(step) {
            let offset = (round * 7) % size;
            out.push(start + offset);
            if out.len() == ADDRESSES {
                break;
            }
        }
        round += 1;
        out.sort_unstable();
        out.dedup();
    }
    Ok(out)
}

fn ours(bin: &Path, addrs: &[u64]) -> Result<usize, String> {
    let module = Module::open(bin).map_err(|e| e.to_string())?;
    Ok(addrs.iter().map(|&a| module.frames(a).len()).sum())
}

fn ours_batch(bin: &Path, addrs: &[u64]) -> Result<usize, String> {
    let mut s = Symbolizer::new(SearchPaths::default());
    let module = s
        .module(&bin.to_string_lossy(), None)
        .map_err(|e| e.to_string())?;
    let key = match module.build_id() {
        Some(id) => ModuleKey::BuildId(id.into()),
        None => ModuleKey::Path(bin.to_string_lossy().into_owned()),
    };
    let places: Vec<Place> = addrs
        .iter()
        .map(|&vaddr| Place::Module {
            key: key.clone(),
            vaddr,
        })
        .collect();
    Ok(s.name_batch(&places).iter().map(|n| n.frames.len()).sum())
}

/// The flags every addr2line is run with, before the binary's path.
const FLAGS: [&str; 4] = ["-f", "-i", "-C", "-e"];

/// The addresses as addr2line reads them on stdin: hex, one a line.
fn address_lines(addrs: &[u64]) -> String {
    addrs.iter().map(|a| format!("{a:x}\n")).collect()
}

/// Runs `program ARGS -f -i -C -e BIN` with the addresses on stdin: the lines it printed.
fn tool(program: &Path, pre: &[&str], bin: &Path, addrs: &[u64]) -> Result<usize, String> {
    let mut child = Command::new(program)
        .args(pre)
        .args(FLAGS)
        .arg(bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    let input = address_lines(addrs);
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    // Write from a thread: the tool answers while we feed it, and pipes are finite.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut out).map(|_| out)
    });
    let ok = child.wait().map_err(|e| format!("wait: {e}"))?.success();
    let _ = writer.join();
    let out = reader
        .join()
        .map_err(|_| "reader panicked".to_string())?
        .map_err(|e| e.to_string())?;
    if !ok {
        return Err(format!("{} failed", program.display()));
    }
    Ok(out.iter().filter(|&&b| b == b'\n').count())
}

fn main() {
    let args = HarnessArgs::parse();
    let mut suite = Suite::new("symbolize");
    suite.default_samples(8);
    let measuring = args.bench && !args.list;
    let prepared = if measuring {
        big_binary().and_then(|bin| Ok((addresses(&bin)?, bin)))
    } else {
        // Smoke mode: this bench binary itself, a few addresses.
        std::env::current_exe()
            .map_err(|e| e.to_string())
            .and_then(|bin| Ok((addresses(&bin)?.into_iter().take(100).collect(), bin)))
    };
    match prepared {
        Ok((addrs, bin)) => {
            let size = std::fs::metadata(&bin).map(|m| m.len()).unwrap_or(0);
            eprintln!(
                "symbolize: {} addresses of {} ({:.0} MB)",
                addrs.len(),
                bin.display(),
                size as f64 / 1e6
            );
            let sparkles_cli = PathBuf::from(env!("CARGO_BIN_EXE_sparkles"));
            let gnu = sparkles_symbolize::binutils::gnu_addr2line();
            let crate_tool = sparkles_symbolize::binutils::crate_addr2line();
            if gnu.is_none() {
                eprintln!("symbolize: GNU addr2line is not installed: no binutils case");
            }
            if crate_tool.is_none() {
                eprintln!(
                    "symbolize: the addr2line crate's tool is not installed (cargo install addr2line --features bin): no case for it"
                );
            }
            // (case, program, leading arguments) of the tools run as processes.
            let tools: Vec<(&str, PathBuf, Vec<&'static str>)> = [
                Some(("sparkles_cli", sparkles_cli, vec!["addr2line"])),
                gnu.map(|p| ("binutils", p, vec![])),
                crate_tool.map(|p| ("addr2line_tool", p, vec![])),
            ]
            .into_iter()
            .flatten()
            .collect();
            suite.group("symbolize", |g| {
                let (a, b) = (addrs.clone(), bin.clone());
                g.case("sparkles", move |bench| bench.try_iter(|| ours(&b, &a)));
                let (a, b) = (addrs.clone(), bin.clone());
                g.case("sparkles_batch", move |bench| {
                    bench.try_iter(|| ours_batch(&b, &a))
                });
                for (name, program, pre) in &tools {
                    let (a, b, program, pre) =
                        (addrs.clone(), bin.clone(), program.clone(), pre.clone());
                    g.case(name, move |bench| {
                        bench.try_iter(|| tool(&program, &pre, &b, &a))
                    });
                }
            });
            if measuring {
                let input = tempfile::NamedTempFile::new()
                    .and_then(|mut f| f.write_all(address_lines(&addrs).as_bytes()).map(|()| f));
                match input {
                    Ok(input) => {
                        let bin = bin.to_string_lossy();
                        let peaks: Vec<String> = tools
                            .iter()
                            .filter_map(|(name, program, pre)| {
                                let mut args = pre.clone();
                                args.extend(FLAGS);
                                args.push(&bin);
                                let kib =
                                    support::peak_memory_fed(program, &args, Some(input.path()))
                                        .ok()??;
                                Some(format!("{name} {:.0} MiB", kib as f64 / 1024.0))
                            })
                            .collect();
                        eprintln!(
                            "symbolize: peak resident memory (GNU time): {}",
                            peaks.join(", ")
                        );
                    }
                    Err(e) => eprintln!("symbolize: no peak memory: a file of the addresses: {e}"),
                }
            }
        }
        Err(why) => eprintln!("symbolize: nothing to measure: {why}"),
    }
    let outcome = sparkles_bench::run_or_exit(suite, &args);
    for ours in [
        "symbolize/sparkles",
        "symbolize/sparkles_batch",
        "symbolize/sparkles_cli",
    ] {
        let Some(m) = outcome.median(ours) else {
            continue;
        };
        for peer in ["symbolize/binutils", "symbolize/addr2line_tool"] {
            if let Some(p) = outcome.median(peer) {
                println!("{ours}: {:.1}x faster than {peer}", p / m);
            }
        }
    }
    std::process::exit(if outcome.all_ok() { 0 } else { 1 });
}
