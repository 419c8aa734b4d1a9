//! The pprof export read back by an independent reader: Python's protobuf package with
//! the profile.proto messages declared from their field numbers
//! (`testdata/report/read_pprof.py`). Skips, saying so, where python3 or its protobuf
//! package is missing (`.ci/run` installs it).

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

use std::path::PathBuf;
use std::process::Command;

use sparkles_report::names::Names;
use sparkles_report::profile::{Builder, Unwinding};
use sparkles_report::stacks::NamedFrame;

/// A frame whose names are interned in `names` (one table for all a profile's frames).
fn frame(names: &mut Names, name: &str, module: &str) -> NamedFrame {
    NamedFrame {
        addr: 0x1000,
        function: Some(names.intern(name)),
        module: Some(names.intern(module)),
        file: Some(names.intern("src/main.rs")),
        line: Some(7),
        inlined: false,
        symbol: Some(names.intern(name)),
        symbol_offset: None,
        missing: None,
    }
}

#[test]
fn an_independent_reader_decodes_what_we_write() {
    let reader = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/report/read_pprof.py");
    let probe = Command::new("python3")
        .args(["-c", "import google.protobuf"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        skip::skip(
            "protobuf",
            "python3 with the protobuf package is not installed",
        );
        return;
    }
    // 600 samples: parse 3/6 (weight 2 each), render 2/6, the kernel 1/6.
    let mut b = Builder::new();
    let mut names = Names::new();
    let mut frame = |name: &str, module: &str| frame(&mut names, name, module);
    for i in 0..600u64 {
        let main = frame("app::main", "/bin/app");
        match i % 6 {
            0..=2 => b.add(&[frame("app::parse", "/bin/app"), main], false, 2),
            3 | 4 => b.add(&[frame("app::render", "/bin/app"), main], false, 1),
            _ => b.add(
                &[
                    frame("do_syscall_64", "[kernel.kallsyms]"),
                    frame("app::render", "/bin/app"),
                    main,
                ],
                true,
                1,
            ),
        }
    }
    let (profile, folded) = b.finish("app", "cycles", 0, Unwinding::default());
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("profile.pb.gz");
    std::fs::write(
        &path,
        sparkles_report::pprof::gzipped(&profile, &folded).unwrap(),
    )
    .unwrap();
    let out = Command::new("python3")
        .arg(&reader)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "types samples/count cycles/events");
    assert_eq!(lines[1], "total 0 600");
    assert_eq!(lines[2], format!("total 1 {}", profile.weight));
    assert_eq!(lines[3], "self 600 app::parse");
    assert_eq!(lines[4], "self 200 app::render");
    assert_eq!(lines[5], "self 100 do_syscall_64_[k]");
}
