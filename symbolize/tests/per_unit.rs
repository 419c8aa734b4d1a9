//! A module whose compilation units can each be read alone is read one unit at a time
//! (each when an address in it is first named): every address of a 40-unit gcc program,
//! and of libc where its debug file is installed, is named exactly as with one context
//! over the whole module. Builds with gcc and skips, saying so, without it.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSymbol, SymbolKind};
use sparkles_symbolize::{Module, SearchPaths};

const UNITS: usize = 40;

/// A program of `UNITS` files, each with an inlined helper, a function that loops over
/// it, and a `switch` (several line rows per line, discriminators in the line table).
fn build(dir: &Path) -> Option<PathBuf> {
    let mut files = Vec::new();
    let mut main = String::from("#include <stdlib.h>\n");
    for i in 0..UNITS {
        let name = format!("unit{i}.c");
        std::fs::write(
            dir.join(&name),
            format!(
                "static inline int helper{i}(int x) {{\n  return x * {k} + (x >> 2);\n}}\n\
                 __attribute__((noinline)) int work{i}(int n) {{\n  int s = 0;\n  \
                 for (int k = 0; k < n; k++) {{\n    switch (k & 3) {{ case 0: s += helper{i}(k); break;\n    \
                 case 1: s ^= k; break; default: s -= helper{i}(s); }}\n  }}\n  return s;\n}}\n",
                k = i + 3
            ),
        )
        .unwrap();
        main.push_str(&format!("int work{i}(int);\n"));
        files.push(name);
    }
    main.push_str("int main(int argc, char **argv) {\n  int s = 0;\n");
    for i in 0..UNITS {
        main.push_str(&format!("  s += work{i}(argc * {i});\n"));
    }
    main.push_str("  return s & (argv != 0);\n}\n");
    std::fs::write(dir.join("main.c"), main).unwrap();
    let mut args = vec!["-O2", "-g", "-o", "units", "main.c"];
    args.extend(files.iter().map(String::as_str));
    match Command::new("gcc").args(&args).current_dir(dir).output() {
        Ok(o) if o.status.success() => Some(dir.join("units")),
        Ok(o) => {
            skip::skip(
                "gcc",
                format!("gcc: {}", String::from_utf8_lossy(&o.stderr)),
            );
            None
        }
        Err(e) => {
            skip::skip("gcc", format!("gcc: {e}"));
            None
        }
    }
}

/// Every byte of every function symbol of `path`, at most `limit` addresses, spread
/// evenly over them.
fn function_addresses(path: &Path, limit: usize) -> Vec<u64> {
    let bytes = std::fs::read(path).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let mut addrs: Vec<u64> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
        .flat_map(|s| s.address()..s.address() + s.size())
        .collect();
    addrs.sort_unstable();
    addrs.dedup();
    let step = addrs.len().div_ceil(limit).max(1);
    addrs.into_iter().step_by(step).collect()
}

/// Opens `path` both ways and compares what every one of `addrs` is named (frames and
/// discriminators); returns how many addresses had DWARF frames.
fn compare(path: &Path, addrs: &[u64]) -> usize {
    let paths = SearchPaths::default();
    let whole = Module::open_with(path, &paths, usize::MAX).unwrap();
    let per_unit = Module::open_with(path, &paths, 1).unwrap();
    assert!(!whole.per_unit());
    assert!(
        per_unit.per_unit(),
        "{}: its units should each be readable alone",
        path.display()
    );
    let mut with_lines = 0;
    for &addr in addrs {
        let (a, b) = (whole.lookup(addr), per_unit.lookup(addr));
        assert_eq!(a.frames, b.frames, "{}: {addr:#x}", path.display());
        assert_eq!(a.error.is_some(), b.error.is_some(), "{addr:#x}");
        assert_eq!(
            whole.discriminator(addr),
            per_unit.discriminator(addr),
            "{addr:#x}"
        );
        with_lines += usize::from(b.frames.iter().any(|f| f.line.is_some()));
    }
    with_lines
}

#[test]
fn units_read_one_at_a_time_name_every_address_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bin) = build(tmp.path()) else {
        return;
    };
    let addrs = function_addresses(&bin, usize::MAX);
    let named = compare(&bin, &addrs);
    // The work functions and main are all in units with line tables.
    assert!(named * 2 > addrs.len(), "{named} of {} named", addrs.len());
    let paths = SearchPaths::default();
    // A module with fewer units than asked for is read whole.
    let m = Module::open_with(&bin, &paths, UNITS + 10).unwrap();
    assert!(!m.per_unit());
    // The default: 41 units are enough to read them one at a time.
    assert!(Module::open_in(&bin, &paths).unwrap().per_unit());
    // An inlined helper is named from its own unit.
    let (start, size) = {
        let bytes = std::fs::read(&bin).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        let s = file.symbols().find(|s| s.name() == Ok("work17")).unwrap();
        (s.address(), s.size())
    };
    let frames: Vec<_> = (start..start + size)
        .flat_map(|a| Module::open_in(&bin, &paths).unwrap().frames(a))
        .collect();
    assert!(frames.iter().any(|f| f.inlined
        && f.function.as_deref() == Some("helper17")
        && f.file.as_deref().is_some_and(|p| p.ends_with("unit17.c"))));
}

#[test]
fn libc_is_named_alike_read_one_unit_at_a_time() {
    // The running libc and its debug file found by build id (libc6-dbg on Debian).
    let libc = [
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libc.so.6",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.exists());
    let Some(libc) = libc else {
        skip::skip("libc_dbg", "no /lib/x86_64-linux-gnu/libc.so.6");
        return;
    };
    let m = Module::open(&libc).unwrap();
    if m.dwarf_path() == libc {
        skip::skip(
            "libc_dbg",
            format!("{} has no debug file installed (libc6-dbg)", libc.display()),
        );
        return;
    }
    assert!(
        m.per_unit(),
        "gcc's libc debug file: its units each read alone"
    );
    let addrs = function_addresses(&libc, 20_000);
    let named = compare(&libc, &addrs);
    assert!(named * 2 > addrs.len(), "{named} of {} named", addrs.len());
}
