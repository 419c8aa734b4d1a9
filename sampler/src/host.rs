//! The machine a capture is taken on, as its header records it (hostname, kernel
//! release, CPUs and their topology, NUMA nodes and memory), read from /proc and /sys.

use std::path::Path;

use sparkles_perf_data::topology::{numbered, parse_list, Topology};
use sparkles_perf_data::writer::HostInfo;

fn read(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// This machine's facts, from /proc and /sys.
pub fn probe() -> HostInfo {
    let cpus = numbered(Path::new("/sys/devices/system/cpu"), "cpu");
    let topo =
        |cpu: u64, file: &str| read(format!("/sys/devices/system/cpu/cpu{cpu}/topology/{file}"));
    let mut core_siblings: Vec<String> = Vec::new();
    let mut thread_siblings: Vec<String> = Vec::new();
    let mut cpu_places = Vec::new();
    for &cpu in &cpus {
        let package = topo(cpu, "core_siblings_list");
        if !package.is_empty() && !core_siblings.contains(&package) {
            core_siblings.push(package);
        }
        let threads = topo(cpu, "thread_siblings_list");
        if !threads.is_empty() && !thread_siblings.contains(&threads) {
            thread_siblings.push(threads);
        }
        cpu_places.push((
            topo(cpu, "core_id").parse().unwrap_or(0),
            topo(cpu, "physical_package_id").parse().unwrap_or(0),
        ));
    }
    let online = read("/sys/devices/system/cpu/online");
    let cpuinfo = read("/proc/cpuinfo");
    HostInfo {
        hostname: read("/proc/sys/kernel/hostname"),
        osrelease: read("/proc/sys/kernel/osrelease"),
        arch: std::env::consts::ARCH.to_string(),
        nrcpus: (cpus.len() as u32, (parse_list(&online).len() as u32).max(1)),
        cpudesc: cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")?
                    .split_once(':')
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_default(),
        core_siblings,
        thread_siblings,
        cpu_places,
        numa: Vec::new(),
        memory: (0, Vec::new()),
    }
    .with_topology(&Topology::from_sysfs(Path::new("/")).unwrap_or_default())
}
