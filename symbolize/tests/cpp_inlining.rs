//! The symbolizer on a C++ program built here with `g++ -O2 -g` (templates, lambdas, std
//! containers, heavy inlining): inlined frames come innermost first and end in the
//! function that contains them; where binutils addr2line is installed, the agreement with
//! it is measured against a floor (the gap to issue 6's 99%/95% is its remaining work).
//! Skips, saying so, without g++.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSymbol};
use sparkles_symbolize::binutils::{format, Options};
use sparkles_symbolize::Module;

fn build(dir: &Path) -> Option<PathBuf> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/symbolize/inlining.cpp");
    let out = dir.join("inlining");
    match Command::new("g++")
        .args(["-O2", "-g", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
    {
        Ok(s) if s.success() => Some(out),
        other => {
            eprintln!("skipped: g++ could not build {}: {other:?}", src.display());
            None
        }
    }
}

fn symbol_range(bin: &Path, name: &str) -> (u64, u64) {
    let bytes = std::fs::read(bin).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let s = file.symbols().find(|s| s.name() == Ok(name)).unwrap();
    (s.address(), s.address() + s.size())
}

#[test]
fn inlined_frames_come_innermost_first_and_end_in_their_function() {
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path()) else { return };
    let module = Module::open(&bin).unwrap();
    let (start, end) = symbol_range(&bin, "main");
    let mut deepest = Vec::new();
    for addr in start..end {
        let frames = module.frames(addr);
        assert!(!frames.is_empty(), "{addr:#x}: no frame inside main");
        let outer = frames.last().unwrap();
        assert!(
            !outer.inlined,
            "{addr:#x}: the outermost frame is the containing function"
        );
        assert!(frames[..frames.len() - 1].iter().all(|f| f.inlined));
        if frames.len() > deepest.len() {
            deepest = frames;
        }
    }
    // main inlines std::vector construction and the fold: chains several frames deep.
    assert!(deepest.len() >= 4, "{deepest:?}");
    assert_eq!(deepest.last().unwrap().function.as_deref(), Some("main"));
    assert!(deepest.iter().all(|f| f.line.is_some_and(|l| l > 0)));
    let text = format(
        start,
        &module.frames(start),
        &Options {
            functions: true,
            inlines: true,
            demangle: true,
            addresses: true,
            pretty: false,
        },
    );
    assert!(text.starts_with(&format!("0x{start:016x}\n")), "{text}");
}

#[test]
fn agreement_with_binutils_is_measured() {
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path()) else { return };
    let Ok(objdump) = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(&bin)
        .output()
    else {
        eprintln!("skipped: binutils are not installed");
        return;
    };
    let addrs: Vec<u64> = String::from_utf8_lossy(&objdump.stdout)
        .lines()
        .filter_map(|l| {
            let (a, _) = l.trim_start().split_once(':')?;
            (l.starts_with(' ') && !a.is_empty()).then(|| u64::from_str_radix(a, 16).ok())?
        })
        .collect();
    let module = Module::open(&bin).unwrap();
    // Floors of what is reached today; issue 6 asks for 99% and 95%.
    for (flags, options, floor) in [
        (
            vec!["-i", "-a"],
            Options {
                inlines: true,
                addresses: true,
                ..Options::default()
            },
            95.0,
        ),
        (
            vec!["-f", "-i", "-C", "-a"],
            Options {
                functions: true,
                inlines: true,
                demangle: true,
                addresses: true,
                pretty: false,
            },
            85.0,
        ),
    ] {
        let input: String = addrs.iter().map(|a| format!("{a:x}\n")).collect();
        let mut child = Command::new("addr2line")
            .arg("-e")
            .arg(&bin)
            .args(&flags)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let theirs = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
        let split = |text: &str| -> Vec<String> {
            let mut groups: Vec<String> = Vec::new();
            for line in text.lines() {
                if line.starts_with("0x") && line.len() == 18 {
                    groups.push(String::new());
                }
                if let Some(g) = groups.last_mut() {
                    g.push_str(line);
                    g.push('\n');
                }
            }
            groups
        };
        let ours: String = addrs
            .iter()
            .map(|&a| format(a, &module.frames(a), &options))
            .collect();
        let (t, o) = (split(&theirs), split(&ours));
        assert_eq!(t.len(), o.len(), "{flags:?}: one answer per address");
        let same = t.iter().zip(&o).filter(|(a, b)| a == b).count();
        let pct = 100.0 * same as f64 / t.len() as f64;
        eprintln!(
            "addr2line {}: {same} of {} addresses agree with binutils ({pct:.1}%)",
            flags.join(" "),
            t.len()
        );
        assert!(
            pct >= floor,
            "addr2line {}: {pct:.1}% agreement fell below {floor}%",
            flags.join(" ")
        );
    }
}

/// What a frame says: function, file, line.
type NameAt = (Option<String>, Option<String>, Option<u32>);

/// Runs a binutils tool, or says why the variant cannot be made.
fn tool(args: &[&str]) -> bool {
    match Command::new(args[0]).args(&args[1..]).status() {
        Ok(s) if s.success() => true,
        other => {
            eprintln!("skipped variant: {args:?}: {other:?}");
            false
        }
    }
}

#[test]
fn stripped_split_and_compressed_variants_name_alike() {
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path()) else { return };
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let plain = Module::open(&bin).unwrap();
    assert_eq!(plain.debug_info(), sparkles_symbolize::DebugInfo::Dwarf);
    let (start, end) = symbol_range(&bin, "main");
    let names = |m: &Module| -> Vec<Vec<NameAt>> {
        (start..end)
            .map(|a| {
                m.frames(a)
                    .into_iter()
                    .map(|f| (f.function, f.file, f.line))
                    .collect()
            })
            .collect()
    };
    let want = names(&plain);
    let differing = |got: Vec<_>| got.iter().zip(&want).filter(|(a, b)| a != b).count();
    // Debug info split off, found again through .gnu_debuglink.
    let debug = path("inlining.debug");
    let split = path("inlining.split");
    if tool(&[
        "objcopy",
        "--only-keep-debug",
        bin.to_str().unwrap(),
        &debug,
    ]) && tool(&[
        "objcopy",
        "--strip-debug",
        &format!("--add-gnu-debuglink={debug}"),
        bin.to_str().unwrap(),
        &split,
    ]) {
        let m = Module::open(&split).unwrap();
        assert_eq!(m.debug_info(), sparkles_symbolize::DebugInfo::DebugLink);
        assert_eq!(
            differing(names(&m)),
            0,
            "debuglink-split variant: addresses named differently"
        );
    }
    // Compressed debug sections, zlib and zstd.
    for kind in ["zlib", "zstd"] {
        let out = path(&format!("inlining.{kind}"));
        if tool(&[
            "objcopy",
            &format!("--compress-debug-sections={kind}"),
            bin.to_str().unwrap(),
            &out,
        ]) {
            let m = Module::open(&out).unwrap();
            assert_eq!(
                differing(names(&m)),
                0,
                "{kind}-compressed variant: addresses named differently"
            );
        }
    }
    // Stripped: no lines, names from .dynsym only, and the module says so.
    let stripped = path("inlining.stripped");
    if tool(&["strip", "-o", &stripped, bin.to_str().unwrap()]) {
        let m = Module::open(&stripped).unwrap();
        assert_eq!(m.debug_info(), sparkles_symbolize::DebugInfo::DynsymOnly);
        assert!(m.debug_info().reason().unwrap().contains("stripped"));
        assert!(m.frames(start).iter().all(|f| f.line.is_none()));
    }
}
