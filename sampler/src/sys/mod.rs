//! The kernel edge of the sampler: every `perf_event_open`, ioctl, ring-buffer and counter
//! page mapping, `poll` and `read` of a counter is made here, through [`Counter`],
//! [`Ring`] and [`Poll`], and the other system calls the sampler makes (`move_pages`,
//! `mount`, `gettid`, …) are the functions below; the rest of the crate is written
//! against them.
//!
//! Where the build has the perf_event edge (`cfg(kernel)`: Linux, little-endian, the
//! `perf` feature; see `build.rs`), those three types are `linux.rs`, over perf-event2 and
//! libc. Everywhere else they are `none.rs`: the same names and signatures, where nothing
//! opens and every call says [`UNAVAILABLE`]. The functions below are Linux's on Linux
//! (with or without the `perf` feature: none of them is perf_event) and say why not
//! elsewhere. Event resolution, plans, capture writing and every reason a capability is
//! missing are above this edge, and so compile and run on every target.

use std::io;

pub(crate) mod abi;
#[cfg(kernel)]
mod linux;
#[cfg(kernel)]
pub(crate) use linux::{Counter, Poll, Ring};

#[cfg(not(kernel))]
mod none;
#[cfg(not(kernel))]
pub(crate) use none::{Counter, Poll, Ring};

use crate::errno;

pub use abi::UNAVAILABLE;

/// What a Linux system call answers off Linux.
#[cfg(not(target_os = "linux"))]
fn not_linux(call: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{call} is a Linux system call"),
    )
}

/// The errno behind an error of this module: the kernel's; `ENOSYS` where the build has
/// no kernel edge; `E2BIG` for perf-event2's report of an attr layout the kernel does not
/// know; else `EINVAL`.
pub(crate) fn errno_of(e: &io::Error) -> i32 {
    if let Some(n) = e.raw_os_error() {
        return n;
    }
    match e.kind() {
        io::ErrorKind::Unsupported if UNAVAILABLE.is_some() => errno::ENOSYS,
        io::ErrorKind::Unsupported => errno::E2BIG,
        _ => errno::EINVAL,
    }
}

/// The calling thread's kernel id; 0 off Linux, where no event names a thread.
pub(crate) fn gettid() -> i32 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions and cannot fail.
        unsafe { libc::gettid() }
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// The soft RLIMIT_MEMLOCK, bytes: what the process may pin beyond the perf_event
/// allowance (`None`: unlimited, or no such limit on this OS).
pub(crate) fn memlock_limit() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one rlimit we own.
        let rc = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut limit) };
        if rc != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
            return None;
        }
        usize::try_from(limit.rlim_cur).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// Whether this process runs as root (never on Windows, which has none).
pub(crate) fn is_root() -> bool {
    #[cfg(unix)]
    {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() == 0 }
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// This machine's page size (4096 where the OS does not say).
pub(crate) fn page_size() -> u64 {
    #[cfg(unix)]
    {
        // SAFETY: sysconf has no preconditions.
        let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        u64::try_from(size).ok().filter(|&s| s > 0).unwrap_or(4096)
    }
    #[cfg(not(unix))]
    {
        4096
    }
}

/// `move_pages(2)` with no target nodes for `pid` (0: this process): the node holding
/// each of `pages` (addresses), or a negative errno, into `status`.
#[cfg(target_os = "linux")]
pub(crate) fn move_pages(pid: i32, pages: &[u64], status: &mut [i32]) -> io::Result<()> {
    assert_eq!(pages.len(), status.len());
    let pointers: Vec<*mut libc::c_void> = pages.iter().map(|&a| a as *mut libc::c_void).collect();
    // SAFETY: with a null node array move_pages only reads `pointers` and writes
    // `status`, both of the given length, which outlive the call; it never touches the
    // pages themselves.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid as libc::pid_t,
            pointers.len() as libc::c_ulong,
            pointers.as_ptr(),
            std::ptr::null::<libc::c_int>(),
            status.as_mut_ptr(),
            0 as libc::c_int,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `move_pages(2)`: Linux's.
#[cfg(not(target_os = "linux"))]
pub(crate) fn move_pages(_pid: i32, _pages: &[u64], _status: &mut [i32]) -> io::Result<()> {
    Err(not_linux("move_pages"))
}

/// Mounts tracefs at `/sys/kernel/tracing`.
#[cfg(target_os = "linux")]
pub(crate) fn mount_tracefs() -> io::Result<()> {
    // SAFETY: NUL-terminated strings that outlive the call; no mount data.
    let rc = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            c"/sys/kernel/tracing".as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Mounting tracefs: Linux's.
#[cfg(not(target_os = "linux"))]
pub(crate) fn mount_tracefs() -> io::Result<()> {
    Err(not_linux("mount of tracefs"))
}
