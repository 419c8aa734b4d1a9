//! `proc_pid_rusage(RUSAGE_INFO_V4)` of this process (macOS 10.14+): retired instructions
//! and cycles (unprivileged, per process, from the kernel's own PMU accounting), page-ins
//! and disk bytes.

use super::{Counters, Field};

const FIELDS: [Field; 6] = [
    Field {
        id: "rusage_info.instructions",
        header: "instr",
        description: "instructions retired per iteration (proc_pid_rusage ri_instructions)",
        default_visible: true,
    },
    Field {
        id: "rusage_info.cycles",
        header: "cycles",
        description: "CPU cycles per iteration (proc_pid_rusage ri_cycles)",
        default_visible: true,
    },
    Field {
        id: "rusage_info.pageins",
        header: "pageins",
        description: "pages read in from disk per iteration (ri_pageins)",
        default_visible: false,
    },
    Field {
        id: "rusage_info.diskio_bytesread",
        header: "disk_rd",
        description: "bytes read from disk per iteration (ri_diskio_bytesread)",
        default_visible: false,
    },
    Field {
        id: "rusage_info.diskio_byteswritten",
        header: "disk_wr",
        description: "bytes written to disk per iteration (ri_diskio_byteswritten)",
        default_visible: false,
    },
    Field {
        id: "rusage_info.logical_writes",
        header: "lwrites",
        description: "bytes of logical writes per iteration, cached or not (ri_logical_writes)",
        default_visible: false,
    },
];

/// proc_pid_rusage of this process.
#[derive(Debug, Default)]
pub(crate) struct RusageInfo {
    /// Why the last call failed.
    failed: Option<String>,
}

impl Counters for RusageInfo {
    fn fields(&self) -> &'static [Field] {
        &FIELDS
    }

    fn read(&mut self, out: &mut [Option<u64>]) {
        // SAFETY: a plain-old-data struct we own, zeroed.
        let mut info: libc::rusage_info_v4 = unsafe { std::mem::zeroed() };
        let pid = std::process::id() as libc::c_int;
        // SAFETY: the buffer is a rusage_info_v4, the flavor asked for; the call writes
        // at most its size.
        let rc = unsafe {
            libc::proc_pid_rusage(
                pid,
                libc::RUSAGE_INFO_V4,
                (&mut info as *mut libc::rusage_info_v4).cast(),
            )
        };
        self.failed = (rc != 0).then(|| std::io::Error::last_os_error().to_string());
        if rc == 0 {
            // A process that has run has retired instructions: zero means the kernel
            // keeps no PMU accounting here (a VM without one), not a count.
            let counted = |v: u64| (v > 0).then_some(v);
            let values = [
                counted(info.ri_instructions),
                counted(info.ri_cycles),
                Some(info.ri_pageins),
                Some(info.ri_diskio_bytesread),
                Some(info.ri_diskio_byteswritten),
                Some(info.ri_logical_writes),
            ];
            for (slot, v) in out.iter_mut().zip(values) {
                *slot = v;
            }
        }
    }

    fn why_not(&self, _field: &Field) -> String {
        match &self.failed {
            Some(e) => format!(
                "proc_pid_rusage(RUSAGE_INFO_V4) failed: {e} (macOS 10.14 or later has it)"
            ),
            None => "proc_pid_rusage reports none here: the kernel keeps no PMU accounting (as in a VM without one)".to_string(),
        }
    }
}
