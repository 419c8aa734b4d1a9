//! Symbolizing 10,000 distinct instruction addresses of a large Rust binary with full
//! debug info (the debug build of `sparkles`, over 30 MB), loading included, against
//! binutils addr2line (`-f -i -C`) in the same run, reported as a ratio.
//!
//! - `symbolize/sparkles`: `Module::open` and every address's inlined frames, demangled.
//! - `symbolize/binutils`: `addr2line -f -i -C -e BIN` with the addresses on stdin.
//! - `symbolize/addr2line_tool`: the addr2line crate's own tool, where `cargo install
//!   addr2line --features bin` put it in ~/.cargo/bin.
//!
//! The binary is built with `cargo build -p sparkles-bench --bin sparkles` when missing.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::Parser;
use object::{Object, ObjectSymbol, SymbolKind};
use sparkles_bench::{HarnessArgs, Suite};
use sparkles_symbolize::Module;

const ADDRESSES: usize = 10_000;

/// The debug `sparkles` binary beside this bench's target folder, built if missing.
fn big_binary(args: &HarnessArgs) -> Result<PathBuf, String> {
    let target = sparkles_bench::output::out_dir(args.out_dir.as_deref())
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("target"));
    let bin = target.join("debug/sparkles");
    if !bin.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-q", "-p", "sparkles-bench", "--bin", "sparkles"])
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

fn tool(program: &Path, bin: &Path, addrs: &[u64]) -> Result<usize, String> {
    let mut child = Command::new(program)
        .args(["-f", "-i", "-C", "-e"])
        .arg(bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    let input: String = addrs.iter().map(|a| format!("{a:x}\n")).collect();
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    // Write from a thread: the tool answers while we feed it, and pipes are finite.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = writer.join();
    Ok(out.stdout.iter().filter(|&&b| b == b'\n').count())
}

fn main() {
    let args = HarnessArgs::parse();
    let mut suite = Suite::new("symbolize");
    suite.default_samples(8);
    let measuring = args.bench && !args.list;
    let prepared = if measuring {
        big_binary(&args).and_then(|bin| Ok((addresses(&bin)?, bin)))
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
            suite.group("symbolize", |g| {
                let (a, b) = (addrs.clone(), bin.clone());
                g.case("sparkles", move |bench| bench.try_iter(|| ours(&b, &a)));
                if Command::new("addr2line").arg("--version").output().is_ok() {
                    let (a, b) = (addrs.clone(), bin.clone());
                    g.case("binutils", move |bench| {
                        bench.try_iter(|| tool(Path::new("addr2line"), &b, &a))
                    });
                }
                let crate_tool = std::env::var_os("HOME")
                    .map(|h| PathBuf::from(h).join(".cargo/bin/addr2line"))
                    .filter(|p| p.is_file());
                match crate_tool {
                    Some(t) => {
                        let (a, b) = (addrs.clone(), bin.clone());
                        g.case("addr2line_tool", move |bench| bench.try_iter(|| tool(&t, &b, &a)));
                    }
                    None => eprintln!(
                        "symbolize: the addr2line crate's tool is not installed (cargo install addr2line --features bin): no case for it"
                    ),
                }
            });
        }
        Err(why) => eprintln!("symbolize: nothing to measure: {why}"),
    }
    let outcome = sparkles_bench::run_or_exit(suite, &args);
    if let Some(m) = outcome.median("symbolize/sparkles") {
        for peer in ["symbolize/binutils", "symbolize/addr2line_tool"] {
            if let Some(p) = outcome.median(peer) {
                println!("symbolize/sparkles: {:.1}x faster than {peer}", p / m);
            }
        }
    }
    std::process::exit(if outcome.all_ok() { 0 } else { 1 });
}
