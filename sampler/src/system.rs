//! Facts about the running system that decide what perf_event can do here.

use std::path::Path;

/// The settings and properties every capability reason refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct System {
    /// Kernel release.
    pub kernel: Option<String>,
    /// `kernel.perf_event_paranoid` (2 when unreadable: the kernel default).
    pub perf_event_paranoid: i32,
    /// `kernel.kptr_restrict`, where readable.
    pub kptr_restrict: Option<i32>,
    /// Whether the CPU reports running under a hypervisor.
    pub hypervisor: bool,
    /// The hypervisor's name where the system says (`/sys/hypervisor/type`, or the
    /// vendor of a KVM guest's CPUID leaf as DMI reports it).
    pub hypervisor_vendor: Option<String>,
    /// Whether this process runs as root.
    pub is_root: bool,
    /// CPU vendor string (`GenuineIntel`, `AuthenticAMD`, …).
    pub cpu_vendor: Option<String>,
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

impl System {
    /// Reads this system's facts.
    pub fn probe() -> System {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let hypervisor = cpuinfo
            .lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_whitespace().any(|f| f == "hypervisor"))
            || Path::new("/sys/hypervisor/type").exists();
        let hypervisor_vendor = read_trimmed("/sys/hypervisor/type")
            .or_else(|| read_trimmed("/sys/class/dmi/id/sys_vendor").filter(|_| hypervisor));
        let cpu_vendor = cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "vendor_id").then(|| v.trim().to_string())
        });
        System {
            kernel: read_trimmed("/proc/sys/kernel/osrelease"),
            perf_event_paranoid: read_trimmed("/proc/sys/kernel/perf_event_paranoid")
                .and_then(|s| s.parse().ok())
                .unwrap_or(2),
            kptr_restrict: read_trimmed("/proc/sys/kernel/kptr_restrict")
                .and_then(|s| s.parse().ok()),
            hypervisor,
            hypervisor_vendor,
            is_root: crate::sys::is_root(),
            cpu_vendor,
        }
    }

    /// What the paranoid level forbids an unprivileged user, in a sentence.
    pub fn paranoid_meaning(&self) -> &'static str {
        match self.perf_event_paranoid {
            i32::MIN..=-1 => "no restrictions",
            0 => "CPU-wide events allowed; raw tracepoint data needs privilege",
            1 => "per-process user and kernel events; CPU-wide events need privilege",
            2 => "per-process user-mode events only; kernel mode needs privilege",
            _ => "perf_event_open forbidden to unprivileged users",
        }
    }
}

/// Whether this process runs under a seccomp filter (`Seccomp: 2` in
/// /proc/self/status): then an EPERM from perf_event_open is most likely the filter's
/// (Docker's default profile answers it so), not the paranoid level's (EACCES).
pub fn seccomp_filtered() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Seccomp:").map(|v| v.trim() == "2"))
        })
        .unwrap_or(false)
}
