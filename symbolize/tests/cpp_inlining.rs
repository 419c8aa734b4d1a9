//! The symbolizer on a C++ program built here with `g++ -O2 -g` (templates, lambdas, std
//! containers, heavy inlining): inlined frames come innermost first and end in the
//! function that contains them; where binutils addr2line is installed, the agreement with
//! it is measured for a C++ and a C program (docs/symbolize.md explains what differs).
//! Skips, saying so, without gcc/g++.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSymbol};
use sparkles_symbolize::binutils::{format, Options};
use sparkles_symbolize::Module;

/// Builds `testdata/symbolize/NAME` with `compiler -O2 -g`, or says why not.
fn build_with(dir: &Path, compiler: &str, name: &str) -> Option<PathBuf> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/symbolize")
        .join(name);
    let out = dir.join(name.replace('.', "_"));
    match Command::new(compiler)
        .args(["-O2", "-g", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
    {
        Ok(s) if s.success() => Some(out),
        other => {
            skip::skip(
                "gcc",
                format!("{compiler} could not build {}: {other:?}", src.display()),
            );
            None
        }
    }
}

fn build(dir: &Path) -> Option<PathBuf> {
    build_with(dir, "g++", "inlining.cpp")
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

/// binutils addr2line's answers for `addrs`, one group of lines per address.
fn binutils(bin: &Path, flags: &[&str], addrs: &[u64]) -> Option<Vec<String>> {
    use std::io::Write;
    let input: String = addrs.iter().map(|a| format!("{a:x}\n")).collect();
    let gnu = sparkles_symbolize::binutils::gnu_addr2line()?;
    let mut child = Command::new(gnu)
        .arg("-e")
        .arg(bin)
        .args(flags)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let text = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
    Some(groups(&text))
}

/// Output split per address (each group starts with the `-a` line).
fn groups(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        if line.starts_with("0x") && line.len() == 18 {
            out.push(String::new());
        }
        if let Some(g) = out.last_mut() {
            g.push_str(line);
            g.push('\n');
        }
    }
    out
}

/// Every instruction address objdump lists.
fn instruction_addresses(bin: &Path) -> Option<Vec<u64>> {
    let objdump = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(bin)
        .output()
        .ok()?;
    Some(
        String::from_utf8_lossy(&objdump.stdout)
            .lines()
            .filter_map(|l| {
                let (a, _) = l.trim_start().split_once(':')?;
                (l.starts_with(' ') && !a.is_empty()).then(|| u64::from_str_radix(a, 16).ok())?
            })
            .collect(),
    )
}

/// binutils 2.40 (bfd's `decode_line_info`) starts a DWARF 5 line sequence with the file
/// table's entry 0, where the standard's initial `file` register is 1: rows of a sequence
/// that never sets the file are named after the unit's primary source file. A group
/// differing only so (same lines, binutils naming the primary file) is that defect.
fn is_bfd_initial_file_defect(theirs: &str, ours: &str, primary: &str) -> bool {
    let t: Vec<&str> = theirs.lines().collect();
    let o: Vec<&str> = ours.lines().collect();
    t.len() == o.len()
        && t.iter().zip(&o).all(|(a, b)| {
            a == b
                || match (a.rsplit_once(':'), b.rsplit_once(':')) {
                    (Some((fa, la)), Some((fb, lb))) => {
                        la == lb && fa.ends_with(primary) && fa != fb
                    }
                    _ => false,
                }
        })
}

#[test]
fn agreement_with_binutils_is_measured() {
    let dir = tempfile::tempdir().unwrap();
    let programs = [("g++", "inlining.cpp"), ("gcc", "inlining.c")];
    for (compiler, source) in programs {
        let Some(bin) = build_with(dir.path(), compiler, source) else {
            continue;
        };
        let Some(addrs) = instruction_addresses(&bin) else {
            skip::skip("binutils", "binutils are not installed");
            return;
        };
        let module = Module::open(&bin).unwrap();
        let lines_only = Options {
            inlines: true,
            addresses: true,
            ..Options::default()
        };
        let with_names = Options {
            functions: true,
            inlines: true,
            demangle: true,
            addresses: true,
            pretty: false,
        };
        // Issue 6: 99% for file and line at every inline level, 95% with names, counting
        // as agreement the addresses where binutils is wrong by its documented DWARF 5
        // defect (the raw figure is printed too). Every other -i -a difference fails.
        for (flags, options, floor) in [
            (vec!["-i", "-a"], lines_only, 99.0),
            (vec!["-f", "-i", "-C", "-a"], with_names, 95.0),
        ] {
            let Some(theirs) = binutils(&bin, &flags, &addrs) else {
                skip::skip("binutils", "binutils addr2line is not installed");
                return;
            };
            let ours: Vec<String> = addrs
                .iter()
                .map(|&a| {
                    format(
                        a,
                        &sparkles_symbolize::binutils::frames(&module, a),
                        &options,
                    )
                })
                .collect();
            assert_eq!(
                theirs.len(),
                ours.len(),
                "{flags:?}: one answer per address"
            );
            let same = theirs.iter().zip(&ours).filter(|(a, b)| a == b).count();
            let defect = theirs
                .iter()
                .zip(&ours)
                .filter(|(a, b)| a != b && is_bfd_initial_file_defect(a, b, source))
                .count();
            let pct = 100.0 * same as f64 / theirs.len() as f64;
            let right = 100.0 * (same + defect) as f64 / theirs.len() as f64;
            eprintln!(
                "{source}: addr2line {}: {same} of {} addresses agree with binutils ({pct:.1}%), \
                 {defect} more differ only by bfd's DWARF 5 initial-file defect",
                flags.join(" "),
                theirs.len()
            );
            assert!(
                right >= floor,
                "{source}: addr2line {}: {right:.1}% agreement (bfd's defect counted ours) fell below {floor}%",
                flags.join(" ")
            );
            if !options.functions {
                let unexplained: Vec<_> = theirs
                    .iter()
                    .zip(&ours)
                    .filter(|(a, b)| a != b && !is_bfd_initial_file_defect(a, b, source))
                    .take(3)
                    .collect();
                assert!(
                    unexplained.is_empty(),
                    "{source}: file:line differences not explained: {unexplained:#?}"
                );
            }
        }
    }
}

/// What a frame says: function, file, line.
type NameAt = (Option<String>, Option<String>, Option<u32>);

/// Runs a binutils tool, or says why the variant cannot be made.
fn tool(args: &[&str]) -> bool {
    match Command::new(args[0]).args(&args[1..]).status() {
        Ok(s) if s.success() => true,
        other => {
            skip::skip("binutils", format!("variant: {args:?}: {other:?}"));
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
