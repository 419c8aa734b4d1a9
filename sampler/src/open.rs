//! Opening resolved events with perf-event2, and saying why the kernel refused one.

use std::io;

use perf_event::events::Event;
use perf_event::{Builder, Counter};
use perf_event_open_sys::bindings::perf_event_attr;

use crate::events::legacy::{PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT};
use crate::events::EventAttr;
use crate::system::System;

/// Writes a resolved event's fields into the attr perf-event2 builds.
struct Resolved<'a>(&'a EventAttr, u8);

impl Event for Resolved<'_> {
    fn update_attrs(self, attr: &mut perf_event_attr) {
        let e = self.0;
        attr.type_ = e.type_;
        attr.config = e.config;
        attr.config1 = e.config1;
        attr.config2 = e.config2;
        attr.set_precise_ip(u64::from(self.1));
    }
}

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

/// Whom an event counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenTarget {
    /// This process, on any CPU.
    ThisProcess,
    /// Everything on one CPU (uncore and MSR PMUs count only this way).
    Cpu(usize),
    /// One task (a thread id, or a process id for its main thread), on one CPU or any.
    Task {
        /// The thread.
        tid: i32,
        /// The CPU, or any.
        cpu: Option<usize>,
    },
}

/// An opened event.
#[derive(Debug)]
pub struct Opened {
    /// The counter, disabled.
    pub counter: Counter,
    /// The precise level the kernel accepted (below the asked one after `:P` probing).
    pub precise_ip: u8,
    /// What had to change for the kernel to accept the event, said as perf says it.
    pub fallbacks: Vec<String>,
}

/// A refused open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct OpenFailure {
    /// The errno perf_event_open returned.
    pub errno: i32,
    /// What it means for this event on this machine, and what a user can do.
    pub reason: String,
}

/// A perf-event2 builder for `attr` at `precise` level, with the attr's own exclude bits
/// (perf-event2 would otherwise exclude the kernel and hypervisor).
pub fn builder_for(
    attr: &EventAttr,
    precise: u8,
    mode: OpenMode,
    target: OpenTarget,
) -> Builder<'static> {
    let mut b = Builder::new(Resolved(attr, precise));
    // perf-event2 defaults to excluding the kernel and hypervisor: use the attr's own.
    b.exclude_user(attr.exclude_user)
        .exclude_kernel(attr.exclude_kernel)
        .exclude_hv(attr.exclude_hv)
        .exclude_guest(attr.exclude_guest)
        .exclude_host(attr.exclude_host)
        .exclude_idle(attr.exclude_idle)
        .pinned(attr.pinned)
        .exclusive(attr.exclusive);
    match target {
        OpenTarget::ThisProcess => b.observe_self().any_cpu(),
        OpenTarget::Cpu(cpu) => b.any_pid().one_cpu(cpu),
        OpenTarget::Task { tid, cpu } => {
            b.observe_pid(tid);
            match cpu {
                Some(c) => b.one_cpu(c),
                None => b.any_cpu(),
            }
        }
    };
    if let OpenMode::Sampling { period } = mode {
        b.sample_period(period);
    }
    b
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
        match builder_for(attr, level, mode, target).build() {
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
    let (error, level) = last.unwrap_or_else(|| (io::Error::from_raw_os_error(libc::EINVAL), 0));
    let errno = error.raw_os_error().unwrap_or(libc::EINVAL);
    // Some PMUs (msr, many uncore ones) reject guest/host filtering: perf retries
    // without it, and so do we, saying so.
    if errno == libc::EINVAL && (attr.exclude_guest || attr.exclude_host) {
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
        Err(e) if matches!(e.errno, libc::EACCES | libc::EPERM) && !attr.exclude_kernel => {
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
                Err(again) if !matches!(again.errno, libc::EACCES | libc::EPERM) => Err(again),
                Err(_) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// The name of an errno (`ENOENT`).
pub fn errno_name(errno: i32) -> &'static str {
    match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EACCES => "EACCES",
        libc::EBUSY => "EBUSY",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::EMFILE => "EMFILE",
        libc::ENOSPC => "ENOSPC",
        libc::E2BIG => "E2BIG",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOSYS => "ENOSYS",
        libc::ENODATA => "ENODATA",
        libc::EFAULT => "EFAULT",
        libc::EOVERFLOW => "EOVERFLOW",
        _ => "errno",
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
        libc::ENOENT if hardware && system.hypervisor => format!(
            "{name}: no PMU for this event: running under a hypervisor that does not expose it"
        ),
        libc::ENOENT if hardware => {
            format!("{name}: the {} PMU does not provide this event on this CPU", attr.pmu)
        }
        libc::ENOENT => format!("{name}: the kernel does not provide this event"),
        libc::ENODEV => format!("{name}: no such PMU in this kernel ({})", attr.pmu),
        libc::EACCES | libc::EPERM => {
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
        libc::EOPNOTSUPP if precise > 0 => format!(
            "{name}: precise level {precise} is not supported: it needs PEBS (Intel) or IBS (AMD), which this machine does not expose"
        ),
        libc::EOPNOTSUPP if matches!(mode, OpenMode::Sampling { .. }) => format!(
            "{name}: the {} PMU cannot sample (no overflow interrupts{})",
            attr.pmu,
            if system.hypervisor { ", as under many hypervisors" } else { "" }
        ),
        libc::EOPNOTSUPP => format!("{name}: the {} PMU does not support this configuration", attr.pmu),
        libc::EINVAL if attr.type_ == PERF_TYPE_SOFTWARE => {
            format!("{name}: this kernel does not know software event {}", attr.config)
        }
        libc::EINVAL => format!(
            "{name}: the kernel rejected the attr (a field or value this PMU or kernel does not support)"
        ),
        libc::EBUSY => format!("{name}: the PMU is held exclusively by another user (another profiler, or the NMI watchdog)"),
        libc::EMFILE => format!("{name}: out of file descriptors (ulimit -n)"),
        libc::ENOSPC => format!("{name}: no free hardware slot (breakpoint or counter registers in use)"),
        libc::E2BIG => format!("{name}: the kernel is older than this attr layout"),
        other => format!("{name} ({other}): {}", io::Error::from_raw_os_error(other)),
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
            libc::ENOENT,
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
            libc::EACCES,
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
            libc::EACCES,
            &attr("cycles:u"),
            0,
            OpenMode::Counting,
            &system(3, false),
        );
        assert!(r.contains("paranoid") && r.contains("3"), "{r}");
        let r = explain(
            libc::EOPNOTSUPP,
            &attr("cycles:pp"),
            2,
            OpenMode::Sampling { period: 1 },
            &system(2, true),
        );
        assert!(r.contains("precise level 2") && r.contains("PEBS"), "{r}");
        let r = explain(
            libc::EOPNOTSUPP,
            &cycles,
            0,
            OpenMode::Sampling { period: 1 },
            &system(2, true),
        );
        assert!(r.contains("cannot sample"), "{r}");
    }

    #[test]
    fn software_events_open_as_root_or_say_why() {
        let system = System::probe();
        match open(&attr("task-clock"), OpenMode::Counting, &system) {
            Ok(o) => assert_eq!(o.precise_ip, 0),
            Err(e) => {
                eprintln!("kernel refused task-clock: {}", e.reason);
                assert!(!e.reason.is_empty());
            }
        }
    }
}
