//! Shared by the tests of every crate (included with `#[path]`): a test that cannot run
//! here says what it lacks and why, and is counted; where the machine is meant to have
//! it, it fails instead.
//!
//! - `SPARKLES_TEST_REQUIRE` (a comma list of [`NEEDS`]): a skip for a listed need is a
//!   failure, so a machine that is meant to run a test cannot pass by skipping it.
//! - `SPARKLES_TEST_SKIPS` (a file): each skip is appended to it as
//!   `need<TAB>test<TAB>why`, for CI to count.

#![allow(dead_code)] // each test file uses what it needs

use std::io::Write;

/// What a test can lack, as `SPARKLES_TEST_REQUIRE` names it.
pub const NEEDS: [&str; 26] = [
    // perf_event_open allowed at all (not refused by paranoid 3, seccomp, or the build).
    "perf_event",
    // hardware counters and sampling (a CPU PMU).
    "pmu",
    // user-space rdpmc.
    "rdpmc",
    // tracefs readable and tracepoints allowed.
    "tracefs",
    // root (CAP_SYS_ADMIN): another user, seccomp filters installed for a child.
    "root",
    // more than one CPU online.
    "cpus",
    // the perf tool, reading and recording.
    "perf",
    // ../shared/fixtures beside the checkout.
    "fixtures",
    // gcc and g++.
    "gcc",
    // git (`sparkles compare` checks revisions out with it).
    "git",
    // binutils (addr2line, objcopy, strip).
    "binutils",
    // a dwp that packs split DWARF.
    "dwp",
    // python3 with the protobuf package.
    "protobuf",
    // libstdc++'s demangler, loadable at run time.
    "libstdcxx",
    // a vDSO mapped in the process.
    "vdso",
    // a Sapphire Rapids (or same-coded) CPU PMU.
    "sapphire_rapids",
    // the build without the kernel edge (`--no-default-features`, or off Linux).
    "portable",
    // the build with the kernel edge.
    "kernel_edge",
    // this machine's sysfs (CPU and NUMA topology) readable.
    "sysfs",
    // /proc/self/io readable (tier 0's syscall and byte counts).
    "proc_io",
    // the running kernel's symbols readable (/proc/kallsyms with addresses).
    "kallsyms",
    // a headless Chromium (the run report's and the speedscope export's browser tests).
    "chromium",
    // valgrind's callgrind (the --instructions tier).
    "valgrind",
    // npm able to fetch packages (speedscope's schema and app, a JSON-schema validator).
    "npm",
    // the running libc's separate debug file (Debian's libc6-dbg).
    "libc_dbg",
    // a thread's run-queue wait readable (/proc/thread-self/schedstat).
    "schedstat",
];

/// Whether `SPARKLES_TEST_REQUIRE` lists `need`.
pub fn required(need: &str) -> bool {
    std::env::var("SPARKLES_TEST_REQUIRE")
        .map(|list| list.split(',').any(|n| n.trim() == need))
        .unwrap_or(false)
}

/// Says that the calling test cannot run here for lack of `need`, and why (the caller
/// then returns); counts it in `SPARKLES_TEST_SKIPS`. Fails the test instead where
/// `SPARKLES_TEST_REQUIRE` lists `need`.
pub fn skip(need: &str, why: impl std::fmt::Display) {
    assert!(NEEDS.contains(&need), "unknown test need '{need}'");
    let test = std::thread::current().name().unwrap_or("?").to_string();
    if required(need) {
        panic!("{test}: SPARKLES_TEST_REQUIRE lists {need}, and it is missing here: {why}");
    }
    eprintln!("skipped ({need}): {why}");
    if let Some(path) = std::env::var_os("SPARKLES_TEST_SKIPS") {
        let line = format!(
            "{need}\t{test}\t{}\n",
            why.to_string().replace(['\t', '\n'], " ")
        );
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
}
