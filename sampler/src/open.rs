//! Opening resolved events, and saying why the kernel refused one.

use sparkles_perf_data::attr::{flag, read_format, Attr};

use crate::errno;
use crate::events::legacy::{PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT};
use crate::events::EventAttr;
use crate::sys::{self, Counter};
use crate::system::System;

pub use crate::errno::name as errno_name;
pub use crate::sys::abi::OpenTarget;

/// What an open is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// A counter.
    Counting,
    /// An overflow-sampling event, one sample every `period` events.
    Sampling {
        /// Events between samples.
        period: u64,
    },
}

/// An opened event.
#[derive(Debug)]
pub struct Opened {
    /// The counter, disabled.
    pub(crate) counter: Counter,
    /// The precise level the kernel accepted (below the asked one after `:P` probing).
    pub precise_ip: u8,
    /// What had to change for the kernel to accept the event, said as perf says it.
    pub fallbacks: Vec<String>,
}

/// A refused open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct OpenFailure {
    /// The errno perf_event_open returned (Linux's numbers, [`crate::errno`]; `ENOSYS`
    /// where the build cannot open events).
    pub errno: i32,
    /// What it means for this event on this machine, and what a user can do.
    pub reason: String,
}

/// The attr `attr` opens with at `precise` for `mode`: the event, its own exclude,
/// pinned and exclusive bits, disabled, with both times in its reads, and in sampling
/// mode its period.
pub fn kernel_attr(attr: &EventAttr, precise: u8, mode: OpenMode) -> Attr {
    let mut flags = flag::DISABLED | (u64::from(precise & 3) << flag::PRECISE_SHIFT);
    for (set, bit) in [
        (attr.exclude_user, flag::EXCLUDE_USER),
        (attr.exclude_kernel, flag::EXCLUDE_KERNEL),
        (attr.exclude_hv, flag::EXCLUDE_HV),
        (attr.exclude_guest, flag::EXCLUDE_GUEST),
        (attr.exclude_host, flag::EXCLUDE_HOST),
        (attr.exclude_idle, flag::EXCLUDE_IDLE),
        (attr.pinned, flag::PINNED),
        (attr.exclusive, flag::EXCLUSIVE),
    ] {
        if set {
            flags |= bit;
        }
    }
    Attr {
        type_: attr.type_,
        config: attr.config,
        config1: attr.config1,
        config2: attr.config2,
        sample_period_or_freq: match mode {
            OpenMode::Sampling { period } => period,
            OpenMode::Counting => 0,
        },
        read_format: read_format::TOTAL_TIME_ENABLED | read_format::TOTAL_TIME_RUNNING,
        flags,
        ..Attr::default()
    }
}

/// Opens `attr` on this process, any CPU. With `:P` the precise level is probed
/// downwards from the resolved maximum, as perf does.
pub fn open(attr: &EventAttr, mode: OpenMode, system: &System) -> Result<Opened, OpenFailure> {
    open_on(attr, mode, OpenTarget::ThisProcess, system)
}

/// Opens `attr` for `target`; see [`open`].
pub fn open_on(
    attr: &EventAttr,
    mode: OpenMode,
    target: OpenTarget,
    system: &System,
) -> Result<Opened, OpenFailure> {
    let levels: Vec<u8> = if attr.precise_max {
        (0..=attr.precise_ip.max(3)).rev().collect()
    } else {
        vec![attr.precise_ip]
    };
    let mut last = None;
    for level in levels {
        match Counter::open(&kernel_attr(attr, level, mode), target, None) {
            Ok(counter) => {
                return Ok(Opened {
                    counter,
                    precise_ip: level,
                    fallbacks: Vec::new(),
                })
            }
            Err(e) => last = Some((e, level)),
        }
    }
    let (errno, level) = last
        .map(|(e, level)| (sys::errno_of(&e), level))
        .unwrap_or((errno::EINVAL, 0));
    // Some PMUs (msr, many uncore ones) reject guest/host filtering: perf retries
    // without it, and so do we, saying so.
    if errno == errno::EINVAL && (attr.exclude_guest || attr.exclude_host) {
        let mut plain = attr.clone();
        plain.exclude_guest = false;
        plain.exclude_host = false;
        if let Ok(mut opened) = open_on(&plain, mode, target, system) {
            opened.fallbacks.push(
                "switched off exclude_guest and exclude_host: the PMU rejects them".to_string(),
            );
            return Ok(opened);
        }
    }
    Err(OpenFailure {
        errno,
        reason: explain(errno, attr, level, mode, system),
    })
}

/// An open that had to drop kernel mode: the attr that opened, and why.
#[derive(Debug)]
pub struct UserOnly {
    /// `attr` with kernel and hypervisor excluded.
    pub attr: EventAttr,
    /// The restriction, with the setting behind it.
    pub reason: String,
}

/// Opens `attr` like [`open`]; where the paranoid level refuses kernel mode, opens it
/// again for user mode only (as perf does for unprivileged users) and says so.
pub fn open_or_user_only(
    attr: &EventAttr,
    mode: OpenMode,
    system: &System,
) -> Result<(Opened, Option<UserOnly>), OpenFailure> {
    match open(attr, mode, system) {
        Ok(o) => Ok((o, None)),
        Err(e) if matches!(e.errno, errno::EACCES | errno::EPERM) && !attr.exclude_kernel => {
            let mut user = attr.clone();
            user.exclude_kernel = true;
            user.exclude_hv = true;
            match open(&user, mode, system) {
                Ok(o) => Ok((
                    o,
                    Some(UserOnly {
                        attr: user,
                        reason: format!(
                            "user mode only: perf_event_paranoid is {} and kernel mode needs CAP_PERFMON or paranoid <= 1",
                            system.perf_event_paranoid
                        ),
                    }),
                )),
                // A refusal for another cause says more than the permission one.
                Err(again) if !matches!(again.errno, errno::EACCES | errno::EPERM) => Err(again),
                Err(_) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Why perf_event_open refused `attr` with `errno`, in terms a user can act on.
pub fn explain(
    errno: i32,
    attr: &EventAttr,
    precise: u8,
    mode: OpenMode,
    system: &System,
) -> String {
    let name = errno_name(errno);
    let hardware = attr.is_hardware();
    let paranoid = system.perf_event_paranoid;
    match errno {
        errno::ENOENT if hardware && system.hypervisor => format!(
            "{name}: no PMU for this event: running under a hypervisor that does not expose it"
        ),
        errno::ENOENT if hardware => {
            format!("{name}: the {} PMU does not provide this event on this CPU", attr.pmu)
        }
        errno::ENOENT => format!("{name}: the kernel does not provide this event"),
        errno::ENODEV => format!("{name}: no such PMU in this kernel ({})", attr.pmu),
        errno::EPERM if crate::system::seccomp_filtered() => format!(
            "{name}: this process runs under a seccomp filter, which refuses perf_event_open (as Docker's default profile does): run it unconfined (docker --security-opt seccomp=unconfined) or with a profile that allows perf_event_open"
        ),
        errno::EACCES | errno::EPERM => {
            let what = match (attr.type_, attr.exclude_kernel) {
                (PERF_TYPE_TRACEPOINT, _) => "tracepoints need perf_event_paranoid <= -1 or CAP_PERFMON",
                (_, false) if paranoid >= 2 => {
                    "counting kernel mode needs perf_event_paranoid <= 1 or CAP_PERFMON; add :u to count user mode only"
                }
                _ if paranoid >= 3 => "perf_event_paranoid 3 forbids perf_event_open to unprivileged users",
                _ => "the caller lacks CAP_PERFMON (or a seccomp filter or LSM forbids perf_event_open)",
            };
            format!("{name}: perf_event_paranoid is {paranoid}: {what} (sysctl kernel.perf_event_paranoid)")
        }
        errno::EOPNOTSUPP if precise > 0 => format!(
            "{name}: precise level {precise} is not supported: it needs PEBS (Intel) or IBS (AMD), which this machine does not expose"
        ),
        errno::EOPNOTSUPP if matches!(mode, OpenMode::Sampling { .. }) => format!(
            "{name}: the {} PMU cannot sample (no overflow interrupts{})",
            attr.pmu,
            if system.hypervisor { ", as under many hypervisors" } else { "" }
        ),
        errno::EOPNOTSUPP => format!("{name}: the {} PMU does not support this configuration", attr.pmu),
        errno::EINVAL if attr.type_ == PERF_TYPE_SOFTWARE => {
            format!("{name}: this kernel does not know software event {}", attr.config)
        }
        errno::EINVAL => format!(
            "{name}: the kernel rejected the attr (a field or value this PMU or kernel does not support)"
        ),
        errno::EBUSY => format!("{name}: the PMU is held exclusively by another user (another profiler, or the NMI watchdog)"),
        errno::EMFILE => format!("{name}: out of file descriptors (ulimit -n)"),
        errno::ENOSPC => format!("{name}: no free hardware slot (breakpoint or counter registers in use)"),
        errno::E2BIG => format!("{name}: the kernel is older than this attr layout"),
        errno::ENOSYS => match sys::UNAVAILABLE {
            Some(why) => why.to_string(),
            None => format!("{name}: this kernel has no perf_event_open (built without CONFIG_PERF_EVENTS)"),
        },
        other => format!("{name} ({other}): {}", std::io::Error::from_raw_os_error(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::EventResolver;

    fn system(paranoid: i32, hypervisor: bool) -> System {
        System {
            kernel: None,
            perf_event_paranoid: paranoid,
            kptr_restrict: Some(0),
            hypervisor,
            hypervisor_vendor: None,
            is_root: false,
            cpu_vendor: None,
        }
    }

    fn attr(spec: &str) -> EventAttr {
        EventResolver::empty("/nonexistent")
            .resolve(spec)
            .unwrap()
            .remove(0)
    }

    #[test]
    fn reasons_name_the_cause_a_user_can_act_on() {
        let cycles = attr("cycles");
        let r = explain(
            errno::ENOENT,
            &cycles,
            0,
            OpenMode::Counting,
            &system(2, true),
        );
        assert!(
            r.starts_with("ENOENT") && r.contains("no PMU") && r.contains("hypervisor"),
            "{r}"
        );
        let r = explain(
            errno::EACCES,
            &cycles,
            0,
            OpenMode::Counting,
            &system(2, false),
        );
        assert!(
            r.contains("perf_event_paranoid is 2") && r.contains(":u"),
            "{r}"
        );
        let r = explain(
            errno::EACCES,
            &attr("cycles:u"),
            0,
            OpenMode::Counting,
            &system(3, false),
        );
        assert!(r.contains("paranoid") && r.contains("3"), "{r}");
        let r = explain(
            errno::EOPNOTSUPP,
            &attr("cycles:pp"),
            2,
            OpenMode::Sampling { period: 1 },
            &system(2, true),
        );
        assert!(r.contains("precise level 2") && r.contains("PEBS"), "{r}");
        let r = explain(
            errno::EOPNOTSUPP,
            &cycles,
            0,
            OpenMode::Sampling { period: 1 },
            &system(2, true),
        );
        assert!(r.contains("cannot sample"), "{r}");
    }

    /// A software event opens wherever perf_event_open is allowed at all; where it is
    /// refused, only for the causes that refuse everything (paranoid 3, a seccomp filter
    /// or LSM, no kernel edge in the build), said with its errno's name.
    #[test]
    fn software_events_open_or_say_the_cause_that_refuses_everything() {
        let system = System::probe();
        match open(&attr("task-clock"), OpenMode::Counting, &system) {
            Ok(o) => assert_eq!(o.precise_ip, 0),
            Err(e) => {
                eprintln!("kernel refused task-clock: {}", e.reason);
                assert!(
                    matches!(e.errno, errno::EACCES | errno::EPERM | errno::ENOSYS),
                    "{e:?}"
                );
                match crate::UNAVAILABLE {
                    Some(why) => assert_eq!(e.reason, why),
                    None => assert!(e.reason.starts_with(errno_name(e.errno)), "{e:?}"),
                }
            }
        }
    }
}
