//! Shared by the tests of several crates (included with `#[path]`): running a command as
//! the machines that check this project may: with perf_event_open refused by a seccomp
//! filter (as Docker's default profile refuses it, with EPERM), or as an unprivileged
//! user. Linux only.

#![allow(dead_code)] // each test file uses what it needs

use std::os::unix::process::CommandExt;
use std::process::Command;

/// `struct sock_filter`.
#[repr(C)]
#[derive(Clone, Copy)]
struct SockFilter {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

/// `struct sock_fprog`.
#[repr(C)]
struct SockFprog {
    len: u16,
    filter: *const SockFilter,
}

const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JEQ_K: u16 = 0x15;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
/// `offsetof(struct seccomp_data, arch)`, and of `nr`.
const ARCH_OFFSET: u32 = 4;
const NR_OFFSET: u32 = 0;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const AUDIT_ARCH: u32 = 0;

/// The filter: perf_event_open answers EPERM; every other call (and any call of another
/// architecture's table) is allowed.
fn filter() -> Vec<SockFilter> {
    let op = |code, jt, jf, k| SockFilter { code, jt, jf, k };
    vec![
        op(BPF_LD_W_ABS, 0, 0, ARCH_OFFSET),
        op(BPF_JMP_JEQ_K, 1, 0, AUDIT_ARCH),
        op(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        op(BPF_LD_W_ABS, 0, 0, NR_OFFSET),
        op(BPF_JMP_JEQ_K, 0, 1, libc::SYS_perf_event_open as u32),
        op(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | libc::EPERM as u32),
        op(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]
}

/// Makes `command` run with perf_event_open refused (EPERM) by a seccomp filter
/// installed between fork and exec; `None` on an architecture this filter does not know.
pub fn with_perf_event_refused(command: &mut Command) -> Option<&mut Command> {
    if AUDIT_ARCH == 0 {
        return None;
    }
    let program = filter();
    // SAFETY: the closure runs in the child between fork and exec and calls only prctl,
    // which is async-signal-safe; `program` is moved into it and outlives the calls.
    let command = unsafe {
        command.pre_exec(move || {
            let prog = SockFprog {
                len: program.len() as u16,
                filter: program.as_ptr(),
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const SockFprog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    Some(command)
}

/// The user and group `nobody` is (65534 on Debian and most distributions).
pub const NOBODY: u32 = 65534;

/// Makes `command` run as `nobody` (std drops the supplementary groups with the uid);
/// `None` unless this process is root, the only one allowed to.
pub fn as_nobody(command: &mut Command) -> Option<&mut Command> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    Some(command.gid(NOBODY).uid(NOBODY))
}
