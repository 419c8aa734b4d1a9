//! Module loading as a capture needs it: files found under `--symfs`, in perf's build-id
//! cache and in debug directories by build id; a file with another build id refused and
//! said so; split DWARF (`.dwo`, `.dwp`); the vDSO; JIT perf maps; kernel names only for
//! the running kernel; and the batch API naming alike to one-at-a-time. Builds C programs
//! with gcc and skips, saying so, without it.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSymbol};
use sparkles_symbolize::address_space::AddressSpace;
use sparkles_symbolize::kernel::NoKernelNames;
use sparkles_symbolize::search::SearchPaths;
use sparkles_symbolize::symbolizer::{ModuleKey, Place, Symbolizer, Unavailable};
use sparkles_symbolize::{DebugInfo, Frame, Module};

fn source() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/symbolize/inlining.c")
}

/// Runs a command in `dir`: why not when it cannot, or runs past two minutes (llvm-dwp
/// 14 never returns on gcc 12's split DWARF 5).
fn try_run(dir: &Path, args: &[&str]) -> Result<(), String> {
    let mut child = Command::new(args[0])
        .args(&args[1..])
        .current_dir(dir)
        .spawn()
        .map_err(|e| format!("{args:?}: {e}"))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        match child.try_wait() {
            Ok(Some(s)) if s.success() => return Ok(()),
            Ok(Some(s)) => return Err(format!("{args:?}: {s}")),
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{args:?}: did not finish in two minutes ({other:?})"
                ));
            }
        }
    }
}

/// [`try_run`], saying why not as a skip of the tool's need.
fn run(dir: &Path, args: &[&str]) -> bool {
    try_run(dir, args)
        .map_err(|why| {
            let need = match args[0] {
                "gcc" | "g++" => "gcc",
                "dwp" | "llvm-dwp" => "dwp",
                _ => "binutils",
            };
            skip::skip(need, why);
        })
        .is_ok()
}

/// `gcc -O2 -g EXTRA… -o dir/out inlining.c`.
fn gcc(dir: &Path, out: &str, extra: &[&str]) -> Option<PathBuf> {
    let src = source();
    let mut args = vec!["gcc", "-O2", "-g"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-o", out, src.to_str().unwrap()]);
    run(dir, &args).then(|| dir.join(out))
}

fn build_id(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    object::File::parse(&*bytes)
        .unwrap()
        .build_id()
        .unwrap()
        .expect("gcc here links with --build-id")
        .to_vec()
}

fn symbol(path: &Path, name: &str) -> (u64, u64) {
    let bytes = std::fs::read(path).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let s = file.symbols().find(|s| s.name() == Ok(name)).unwrap();
    (s.address(), s.size())
}

type Names = Vec<Vec<(Option<String>, Option<String>, Option<u32>)>>;

/// What every address of `main` is named.
fn names_of_main(m: &Module, (start, size): (u64, u64)) -> Names {
    (start..start + size)
        .map(|a| {
            m.frames(a)
                .into_iter()
                .map(|f| (f.function, f.file, f.line))
                .collect()
        })
        .collect()
}

fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_file_with_another_build_id_is_refused_and_said_so() {
    let tmp = tempfile::tempdir().unwrap();
    let (Some(a), Some(b)) = (
        gcc(tmp.path(), "a", &[]),
        gcc(tmp.path(), "b", &["-fno-inline"]),
    ) else {
        return;
    };
    let (id_a, id_b) = (build_id(&a), build_id(&b));
    assert_ne!(id_a, id_b);
    // The capture recorded /opt/app/prog; --symfs holds a file there.
    let symfs = tmp.path().join("symfs");
    std::fs::create_dir_all(symfs.join("opt/app")).unwrap();
    std::fs::copy(&a, symfs.join("opt/app/prog")).unwrap();
    let paths = SearchPaths {
        symfs: Some(symfs.clone()),
        ..SearchPaths::none()
    };
    let mut s = Symbolizer::new(paths);
    let found = s.module("/opt/app/prog", Some(&id_a)).unwrap();
    assert_eq!(found.build_id(), Some(&id_a[..]));
    assert_eq!(found.path(), symfs.join("opt/app/prog"));
    // The same file for a capture that ran b: refused, with both ids.
    match s.module("/opt/app/prog", Some(&id_b)) {
        Err(Unavailable::BuildIdMismatch {
            expected, found, ..
        }) => {
            assert_eq!((expected, found), (hex(&id_b), hex(&id_a)));
        }
        other => panic!("expected a build-id mismatch, got {other:?}"),
    }
    let noted = s.unavailable();
    assert!(noted.iter().any(
        |u| matches!(u, Unavailable::BuildIdMismatch { path, .. } if path == "/opt/app/prog")
    ));
    let why: Vec<String> = noted.iter().map(ToString::to_string).collect();
    let why = why.join("\n");
    assert!(
        why.contains("/opt/app/prog") && why.contains("not used for names"),
        "{why}"
    );
    // A path that is nowhere: the places looked are named.
    let missing = s.module("/nowhere/prog", None).unwrap_err().to_string();
    assert!(
        missing.contains("not found") && missing.contains("symfs/nowhere/prog"),
        "{missing}"
    );
}

#[test]
fn found_by_build_id_in_the_perf_cache_and_debug_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(plain) = gcc(tmp.path(), "plain", &[]) else {
        return;
    };
    let id = build_id(&plain);
    let h = hex(&id);
    let main = symbol(&plain, "main");
    let want = names_of_main(
        &Module::open_in(&plain, &SearchPaths::none()).unwrap(),
        main,
    );

    // Debug info split off without a debug link, found by build id in a debug directory.
    let debug_dir = tmp.path().join("debug");
    let by_id = debug_dir.join(format!(".build-id/{}/{}.debug", &h[..2], &h[2..]));
    std::fs::create_dir_all(by_id.parent().unwrap()).unwrap();
    if !(run(
        tmp.path(),
        &[
            "objcopy",
            "--only-keep-debug",
            "plain",
            by_id.to_str().unwrap(),
        ],
    ) && run(
        tmp.path(),
        &["objcopy", "--strip-debug", "plain", "stripped"],
    )) {
        return;
    }
    let paths = SearchPaths {
        debug_dirs: vec![debug_dir.clone()],
        ..SearchPaths::none()
    };
    let m = Module::open_in(tmp.path().join("stripped"), &paths).unwrap();
    assert_eq!(m.debug_info(), DebugInfo::BuildIdDebugFile);
    assert_eq!(m.dwarf_path(), by_id);
    assert_eq!(names_of_main(&m, main), want);
    // Without the directory: symbols only, and said so.
    let bare = Module::open_in(tmp.path().join("stripped"), &SearchPaths::none()).unwrap();
    assert_eq!(bare.debug_info(), DebugInfo::SymtabOnly);

    // The recorded file is gone; perf's build-id cache has a copy.
    let cache = tmp.path().join("cache");
    let elf = cache.join(format!(".build-id/{}/{}/elf", &h[..2], &h[2..]));
    std::fs::create_dir_all(elf.parent().unwrap()).unwrap();
    std::fs::copy(&plain, &elf).unwrap();
    let mut s = Symbolizer::new(SearchPaths {
        build_id_cache: Some(cache),
        ..SearchPaths::none()
    });
    let m = s.module("/gone/plain", Some(&id)).unwrap();
    assert_eq!(m.path(), elf);
    assert_eq!(names_of_main(&m, main), want);

    // A recorded path holding something that is not ELF: the next place is tried.
    let junk = tmp.path().join("junk");
    std::fs::write(&junk, b"not an ELF file").unwrap();
    let m = s.module(junk.to_str().unwrap(), Some(&id)).unwrap();
    assert_eq!(m.path(), elf);

    // A failure belongs to its path: the same build id found at another path loads.
    let mut s = Symbolizer::new(SearchPaths::none());
    assert!(s.module("/gone/plain", Some(&id)).is_err());
    let found = s.module(plain.to_str().unwrap(), Some(&id)).unwrap();
    assert_eq!(found.path(), plain);
}

/// `gcc -O2 -g EXTRA… -gsplit-dwarf` of inlining.c into `dir/NAME` (object `NAME.o`,
/// its `NAME.dwo` beside it).
fn split_build(dir: &Path, name: &str, extra: &[&str]) -> Option<PathBuf> {
    let src = source();
    let object = format!("{name}.o");
    let mut compile = vec!["gcc", "-O2", "-g"];
    compile.extend_from_slice(extra);
    compile.extend_from_slice(&["-gsplit-dwarf", "-c", src.to_str().unwrap(), "-o", &object]);
    (run(dir, &compile) && run(dir, &["gcc", &object, "-o", name])).then(|| dir.join(name))
}

#[test]
fn split_dwarf_dwo_and_dwp_name_as_the_plain_build() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(plain) = gcc(tmp.path(), "plain", &[]) else {
        return;
    };
    let Some(split) = split_build(tmp.path(), "split", &[]) else {
        return;
    };
    assert!(
        tmp.path().join("split.dwo").is_file(),
        "gcc wrote split.dwo"
    );
    let main = symbol(&plain, "main");
    if symbol(&split, "main") != main {
        skip::skip(
            "gcc",
            "the split build laid main out elsewhere; nothing to compare",
        );
        return;
    }
    let want = names_of_main(
        &Module::open_in(&plain, &SearchPaths::none()).unwrap(),
        main,
    );
    let m = Module::open_in(&split, &SearchPaths::none()).unwrap();
    assert_eq!(names_of_main(&m, main), want, ".dwo beside the object");

    // Packed into a .dwp beside the binary, the .dwo gone. Debian 12's GNU dwp crashes
    // on gcc 12's DWARF 5 (and its llvm-dwp 14 never returns): GNU dwp then packs the
    // same build in DWARF 4, compared with a DWARF 4 plain build.
    let packers: [(&str, &[&str]); 2] = [("dwp", &[]), ("dwp", &["-gdwarf-4"])];
    let mut refused = Vec::new();
    for (packer, extra) in packers {
        let dir = tempfile::tempdir().unwrap();
        let (Some(plain), Some(split)) = (
            gcc(dir.path(), "plain", extra),
            split_build(dir.path(), "split", extra),
        ) else {
            continue;
        };
        let main = symbol(&plain, "main");
        if symbol(&split, "main") != main {
            continue;
        }
        if let Err(why) = try_run(dir.path(), &[packer, "-e", "split", "-o", "split.dwp"]) {
            refused.push(why);
            continue;
        }
        let want = names_of_main(
            &Module::open_in(&plain, &SearchPaths::none()).unwrap(),
            main,
        );
        std::fs::remove_file(dir.path().join("split.dwo")).unwrap();
        let m = Module::open_in(&split, &SearchPaths::none()).unwrap();
        assert_eq!(
            names_of_main(&m, main),
            want,
            "split.dwp by {packer} {extra:?}"
        );
        eprintln!("split.dwp packed by {packer} {extra:?} names as the plain build");
        return;
    }
    skip::skip(
        "dwp",
        format!("no dwp packed a .dwp here (the .dwo half was tested): {refused:?}"),
    );
}

#[test]
fn the_vdso_is_named_for_a_capture_of_the_running_kernel() {
    let Some(image) = sparkles_symbolize::vdso::live_image() else {
        skip::skip("vdso", "no vDSO mapped in this process");
        return;
    };
    let file = object::File::parse(&*image).unwrap();
    let Some(sym) = file
        .dynamic_symbols()
        .find(|s| s.name().is_ok_and(|n| n.contains("clock_gettime")))
    else {
        skip::skip("vdso", "this vDSO has no clock_gettime");
        return;
    };
    // A process with the vDSO mapped at some address, as an MMAP record says.
    let base = 0x7fff_0000_0000u64;
    let mut space = AddressSpace::new();
    space.map(
        7,
        sparkles_symbolize::address_space::Mapping {
            start: base,
            end: base + image.len() as u64,
            pgoff: 0,
            path: "[vdso]".into(),
            build_id: None,
            prot: None,
        },
    );
    let vdso_mapped = |local: Result<(), NoKernelNames>| {
        let mut s = Symbolizer::new(SearchPaths::none());
        s.set_local(local);
        s
    };
    let mut s = vdso_mapped(Ok(()));
    let at = s.locate(&space, 7, base + sym.address() + 1);
    assert!(
        matches!(
            at.place,
            Place::Module {
                key: ModuleKey::Vdso,
                ..
            }
        ),
        "{at:?}"
    );
    let named = s.name(&at.place);
    let f = named.frames.last().unwrap();
    assert!(
        f.function.as_deref().unwrap().contains("clock_gettime"),
        "{named:?}"
    );
    // A capture from another kernel does not get this one's vDSO.
    let mut other = vdso_mapped(Err(NoKernelNames::OtherRelease {
        capture: "5.4.0".into(),
        running: "6.1.0".into(),
    }));
    let at = other.locate(&space, 7, base + sym.address() + 1);
    assert!(
        matches!(&at.place, Place::Unknown(why) if why.contains("5.4.0")),
        "{at:?}"
    );
}

#[test]
fn jit_code_is_named_from_its_perf_map() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("perf-4242.map"),
        "7f0000001000 80 LazyCompile:*fib script.js:1\n",
    )
    .unwrap();
    let mut s = Symbolizer::new(SearchPaths::none());
    s.set_perf_map_dir(tmp.path().to_path_buf());
    let mut space = AddressSpace::new();
    for pid in [4242, 4243] {
        space.map(
            pid,
            sparkles_symbolize::address_space::Mapping {
                start: 0x7f00_0000_0000,
                end: 0x7f00_1000_0000,
                pgoff: 0,
                path: "//anon".into(),
                build_id: None,
                prot: None,
            },
        );
    }
    let at = s.locate(&space, 4242, 0x7f00_0000_1010);
    let named = s.name(&at.place);
    assert_eq!(
        named.frames[0],
        Frame::from_symbol("LazyCompile:*fib script.js:1", 0x10, None)
    );
    let at = s.locate(&space, 4243, 0x7f00_0000_1010);
    let why = s.name(&at.place).missing.unwrap();
    assert!(why.contains("perf-4243.map"), "{why}");
}

#[test]
fn kernel_names_only_for_the_running_kernel() {
    let mut local = Symbolizer::new(SearchPaths::none());
    let place = local
        .locate(&AddressSpace::new(), 1, 0xffff_ffff_8100_0010)
        .place;
    assert_eq!(place, Place::Kernel(0xffff_ffff_8100_0010));
    match sparkles_symbolize::kernel::KernelSymbols::running() {
        Ok(k) => {
            // A real symbol of this kernel, named through the symbolizer.
            let (sym, _) = k.lookup(u64::MAX).unwrap();
            let named = local.name(&Place::Kernel(sym.addr + 1));
            assert_eq!(named.frames[0].function.as_deref(), Some(sym.name));
            assert_eq!(named.frames[0].symbol_offset, Some(1));
        }
        Err(why) => skip::skip("kallsyms", format!("the named half: {why}")),
    }
    let mut foreign = Symbolizer::new(SearchPaths::none());
    foreign.set_local(Err(NoKernelNames::OtherBuild {
        capture: "aa".into(),
        running: "bb".into(),
    }));
    let named = foreign.name(&Place::Kernel(0xffff_ffff_8100_0010));
    assert_eq!(named.frames.len(), 1);
    assert_eq!(named.frames[0].function.as_deref(), Some("[kernel]"));
    assert!(named.missing.unwrap().contains("build id aa"));
}

#[test]
fn a_capture_from_another_machine_gets_no_kernel_names_from_this_one() {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/callchain/vector_static_gcc.dwarf.perf.data");
    if !file.is_file() {
        skip::skip("fixtures", format!("{} is absent", file.display()));
        return;
    }
    let data = sparkles_perf_data::PerfData::open(&file).unwrap();
    let mut s = Symbolizer::for_capture(&data, SearchPaths::none());
    let why = s
        .kernel_reason()
        .expect("recorded on another machine")
        .to_string();
    assert!(why.contains("not the running kernel"), "{why}");
    let named = s.name(&Place::Kernel(0xffff_ffff_b8a0_1000));
    assert_eq!(named.frames[0].function.as_deref(), Some("[kernel]"));
    assert_eq!(named.missing.as_deref(), Some(why.as_str()));
}

#[test]
fn batches_name_as_one_at_a_time_serially_and_in_parallel() {
    // This test binary: large, with debug info, and many functions.
    let exe = std::env::current_exe().unwrap();
    let bytes = std::fs::read(&exe).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let mut addrs: Vec<u64> = file
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 4)
        .map(|s| s.address() + 3)
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    addrs.truncate(3 * sparkles_symbolize::symbolizer::PARALLEL_BATCH / 2);
    let mut s = Symbolizer::new(SearchPaths::none());
    let module = s.module(exe.to_str().unwrap(), None).unwrap();
    let key = match module.build_id() {
        Some(id) => ModuleKey::BuildId(id.into()),
        None => ModuleKey::Path(exe.to_str().unwrap().to_string()),
    };
    // Repeats and reverse order: the batch sorts and deduplicates.
    let mut places: Vec<Place> = addrs
        .iter()
        .rev()
        .map(|&vaddr| Place::Module {
            key: key.clone(),
            vaddr,
        })
        .collect();
    places.extend(places[..100].to_vec());
    let named = s.name_batch(&places);
    assert_eq!(named.len(), places.len());
    let one_by_one = Module::open_in(&exe, &SearchPaths::none()).unwrap();
    for (p, n) in places.iter().zip(&named) {
        let Place::Module { vaddr, .. } = p else {
            unreachable!()
        };
        assert_eq!(
            &*n.frames,
            one_by_one.frames(*vaddr).as_slice(),
            "{vaddr:#x}"
        );
    }
    let stats = s.stats();
    assert_eq!(stats.named, addrs.len(), "each distinct address named once");
    assert_eq!(
        stats.cached, 100,
        "repeats come from the batch's deduplication"
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if addrs.len() >= sparkles_symbolize::symbolizer::PARALLEL_BATCH && cores > 1 {
        assert_eq!(stats.parallel_runs, 1, "{stats:?}");
    } else {
        eprintln!(
            "note: {} addresses on {cores} cores: named serially",
            addrs.len()
        );
    }
    // Asked again, everything comes from the cache.
    let again = s.name_batch(&places[..10]);
    assert_eq!(again, named[..10].to_vec());
    assert_eq!(s.stats().named, stats.named);
}

/// A stripped shared library whose full symbol table is in a build-id debug file, as
/// libc6-dbg lays out glibc's: the debug file's names win over what strip left
/// (`.dynsym`), a symbol version is taken off a name unless two functions differ by it
/// alone, and a compatibility alias (`crelease@VER_1`) loses to the plain name.
#[test]
fn a_debug_files_symbols_win_and_versions_come_off_names() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/symbolize");
    let src = dir.join("versioned.c");
    let map = format!(
        "-Wl,--version-script={}",
        dir.join("versioned.map").display()
    );
    if !run(
        tmp.path(),
        &[
            "gcc",
            "-O2",
            "-g",
            "-shared",
            "-fPIC",
            &map,
            "-o",
            "libversioned.so",
            src.to_str().unwrap(),
        ],
    ) {
        return;
    }
    let lib = tmp.path().join("libversioned.so");
    let id = hex(&build_id(&lib));
    let at = |name: &str| symbol(&lib, name).0;
    let (helper, twice_v1, twice_v2, release, start) = (
        at("helper"),
        at("twice_v1"),
        at("twice_v2"),
        at("release"),
        at("start_impl"),
    );
    let debug_dir = tmp.path().join("debug");
    let by_id = debug_dir.join(format!(".build-id/{}/{}.debug", &id[..2], &id[2..]));
    std::fs::create_dir_all(by_id.parent().unwrap()).unwrap();
    if !(run(
        tmp.path(),
        &[
            "objcopy",
            "--only-keep-debug",
            "libversioned.so",
            by_id.to_str().unwrap(),
        ],
    ) && run(tmp.path(), &["strip", "libversioned.so"]))
    {
        return;
    }
    let bare = Module::open_in(&lib, &SearchPaths::none()).unwrap();
    assert_eq!(bare.debug_info(), DebugInfo::DynsymOnly);
    // .dynsym has no `helper` (static): the nearest exported name covers it.
    assert_ne!(bare.symbol(helper).map(|s| s.0), Some("helper"));

    let paths = SearchPaths {
        debug_dirs: vec![debug_dir],
        ..SearchPaths::none()
    };
    let m = Module::open_in(&lib, &paths).unwrap();
    assert_eq!(m.debug_info(), DebugInfo::BuildIdDebugFile);
    let name = |addr: u64| m.symbol(addr).map(|s| s.0.to_string());
    assert_eq!(name(helper).as_deref(), Some("helper"));
    // One name at two addresses: the versions tell them apart, and stay.
    assert_eq!(name(twice_v1).as_deref(), Some("twice@VER_1"));
    assert_eq!(name(twice_v2).as_deref(), Some("twice@@VER_2"));
    // A compatibility alias: the plain name wins, and the alias has no version.
    assert_eq!(name(release).as_deref(), Some("release"));
    assert!(
        m.aliases(release).contains(&"crelease"),
        "{:?}",
        m.aliases(release)
    );
    // Only a versioned global: its name without the version, over the local alias.
    assert_eq!(name(start).as_deref(), Some("start"));
    assert_eq!(m.aliases(start), ["start", "start_impl"]);
    for addr in [helper, release, start] {
        assert!(
            m.aliases(addr).iter().all(|n| !n.contains('@')),
            "{:?}",
            m.aliases(addr)
        );
    }
}

/// PLT entries are named as objdump and perf name them (`puts@plt`), though no symbol
/// table lists them: every `<X@plt>` objdump prints, in a gcc build that calls libc
/// through its PLT, with and without IBT's `.plt.sec`.
#[test]
fn plt_entries_are_named_as_objdump_names_them() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("plt.c");
    std::fs::write(
        &src,
        "#include <stdio.h>\n#include <string.h>\nint main(int c, char **v) { for (int i = 0; i < c; i++) puts(v[i]); return (int)strlen(v[0]) - 5; }\n",
    )
    .unwrap();
    for (out, extra) in [
        ("plt", &[][..]),
        ("plt-ibt", &["-fcf-protection=full", "-Wl,-z,ibtplt"][..]),
    ] {
        let mut args = vec!["gcc", "-O1"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["-o", out, "plt.c"]);
        if !run(tmp.path(), &args) {
            return;
        }
        let exe = tmp.path().join(out);
        let dump = match Command::new("objdump").arg("-d").arg(&exe).output() {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
            other => {
                skip::skip("binutils", format!("objdump -d: {other:?}"));
                return;
            }
        };
        // `0000000000001030 <puts@plt>:`, outside .plt.got (entries of GOT slots, not of
        // .rela.plt's relocations).
        let mut named = 0;
        let mut in_got = false;
        for line in dump.lines() {
            if let Some(section) = line.strip_prefix("Disassembly of section ") {
                in_got = section.starts_with(".plt.got");
            }
            let Some((addr, rest)) = line.split_once(" <") else {
                continue;
            };
            let Some(name) = rest.strip_suffix(">:").filter(|n| n.ends_with("@plt")) else {
                continue;
            };
            if in_got {
                continue;
            }
            let addr = u64::from_str_radix(addr.trim(), 16).unwrap();
            let m = Module::open_in(&exe, &SearchPaths::none()).unwrap();
            for at in [addr, addr + 4] {
                let frames = m.frames(at);
                let got = frames.first().and_then(|f| f.function.clone());
                assert_eq!(got.as_deref(), Some(name), "{out} {at:#x}: {frames:?}");
            }
            named += 1;
        }
        assert!(
            named >= 2,
            "{out}: objdump named {named} PLT entries:\n{dump}"
        );
    }
}
