//! The errno values `perf_event_open` and the calls around it answer with: Linux's
//! numbers on every build (they come from the Linux kernel, and a build without the
//! kernel edge answers `ENOSYS`), so reasons read the same wherever they are made.

/// Operation not permitted.
pub const EPERM: i32 = 1;
/// No such file or directory (no such event).
pub const ENOENT: i32 = 2;
/// No such process.
pub const ESRCH: i32 = 3;
/// Argument list too long (an attr layout newer than the kernel).
pub const E2BIG: i32 = 7;
/// Permission denied.
pub const EACCES: i32 = 13;
/// Bad address.
pub const EFAULT: i32 = 14;
/// Device or resource busy.
pub const EBUSY: i32 = 16;
/// No such device (no such PMU).
pub const ENODEV: i32 = 19;
/// Invalid argument.
pub const EINVAL: i32 = 22;
/// Too many open files.
pub const EMFILE: i32 = 24;
/// No space left on device (no free hardware slot).
pub const ENOSPC: i32 = 28;
/// Function not implemented.
pub const ENOSYS: i32 = 38;
/// No data available.
pub const ENODATA: i32 = 61;
/// Value too large for defined data type.
pub const EOVERFLOW: i32 = 75;
/// Operation not supported.
pub const EOPNOTSUPP: i32 = 95;

/// The name of an errno (`ENOENT`), or `errno` for one not listed.
pub fn name(errno: i32) -> &'static str {
    match errno {
        EPERM => "EPERM",
        ENOENT => "ENOENT",
        ESRCH => "ESRCH",
        EACCES => "EACCES",
        EBUSY => "EBUSY",
        ENODEV => "ENODEV",
        EINVAL => "EINVAL",
        EMFILE => "EMFILE",
        ENOSPC => "ENOSPC",
        E2BIG => "E2BIG",
        EOPNOTSUPP => "EOPNOTSUPP",
        ENOSYS => "ENOSYS",
        ENODATA => "ENODATA",
        EFAULT => "EFAULT",
        EOVERFLOW => "EOVERFLOW",
        _ => "errno",
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn the_numbers_are_linuxs() {
        for (ours, libc) in [
            (super::EPERM, libc::EPERM),
            (super::ENOENT, libc::ENOENT),
            (super::ESRCH, libc::ESRCH),
            (super::E2BIG, libc::E2BIG),
            (super::EACCES, libc::EACCES),
            (super::EFAULT, libc::EFAULT),
            (super::EBUSY, libc::EBUSY),
            (super::ENODEV, libc::ENODEV),
            (super::EINVAL, libc::EINVAL),
            (super::EMFILE, libc::EMFILE),
            (super::ENOSPC, libc::ENOSPC),
            (super::ENOSYS, libc::ENOSYS),
            (super::ENODATA, libc::ENODATA),
            (super::EOVERFLOW, libc::EOVERFLOW),
            (super::EOPNOTSUPP, libc::EOPNOTSUPP),
        ] {
            assert_eq!(ours, libc, "{}", super::name(ours));
        }
    }
}
