//! Windows: the process's CPU times, the cycle times of the process and of the calling
//! thread (`QueryProcessCycleTime`, `QueryThreadCycleTime`: cycles the scheduler charged,
//! unprivileged), page faults and I/O operation counts.

use windows_sys::Win32::Foundation::FILETIME;
use windows_sys::Win32::System::ProcessStatus::{GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetCurrentThread, GetProcessIoCounters, GetProcessTimes, IO_COUNTERS,
};
use windows_sys::Win32::System::WindowsProgramming::{QueryProcessCycleTime, QueryThreadCycleTime};

use super::{Counters, Field};

const FIELDS: [Field; 9] = [
    Field {
        id: "win.cycles",
        header: "cycles",
        description:
            "CPU cycles charged to the process's threads per iteration (QueryProcessCycleTime)",
        default_visible: true,
    },
    Field {
        id: "win.thread_cycles",
        header: "thr_cycles",
        description:
            "CPU cycles charged to the calling thread per iteration (QueryThreadCycleTime)",
        default_visible: false,
    },
    Field {
        id: "win.user_ns",
        header: "user_ns",
        description: "user-mode CPU time of the process per iteration, ns (GetProcessTimes)",
        default_visible: false,
    },
    Field {
        id: "win.kernel_ns",
        header: "kernel_ns",
        description: "kernel-mode CPU time of the process per iteration, ns (GetProcessTimes)",
        default_visible: false,
    },
    Field {
        id: "win.page_faults",
        header: "faults",
        description:
            "page faults, soft and hard, per iteration (GetProcessMemoryInfo PageFaultCount)",
        default_visible: true,
    },
    Field {
        id: "win.read_ops",
        header: "read_ops",
        description: "read I/O operations per iteration (GetProcessIoCounters)",
        default_visible: true,
    },
    Field {
        id: "win.write_ops",
        header: "write_ops",
        description: "write I/O operations per iteration (GetProcessIoCounters)",
        default_visible: false,
    },
    Field {
        id: "win.read_bytes",
        header: "read_bytes",
        description: "bytes read by I/O operations per iteration (GetProcessIoCounters)",
        default_visible: true,
    },
    Field {
        id: "win.write_bytes",
        header: "write_bytes",
        description: "bytes written by I/O operations per iteration (GetProcessIoCounters)",
        default_visible: false,
    },
];

/// The calling process (and thread), through their pseudo handles.
#[derive(Debug, Default)]
pub(crate) struct Process {
    /// Why each call failed last, in [`FIELDS`]' order of the calls: cycles, thread
    /// cycles, times, memory, I/O.
    failed: [Option<String>; 5],
}

impl Process {
    pub(crate) fn open() -> Process {
        Process::default()
    }
}

fn nanos(t: FILETIME) -> u64 {
    ((u64::from(t.dwHighDateTime) << 32) | u64::from(t.dwLowDateTime)) * 100
}

impl Counters for Process {
    fn fields(&self) -> &'static [Field] {
        &FIELDS
    }

    fn read(&mut self, out: &mut [Option<u64>]) {
        let why = || std::io::Error::last_os_error().to_string();
        // SAFETY: pseudo handles of the calling process and thread, valid for its life;
        // every out-pointer is a local of the type the call writes.
        unsafe {
            let process = GetCurrentProcess();
            let mut cycles = 0u64;
            self.failed[0] = (QueryProcessCycleTime(process, &mut cycles) == 0).then(why);
            out[0] = self.failed[0].is_none().then_some(cycles);
            let mut thread_cycles = 0u64;
            self.failed[1] =
                (QueryThreadCycleTime(GetCurrentThread(), &mut thread_cycles) == 0).then(why);
            out[1] = self.failed[1].is_none().then_some(thread_cycles);
            let zero = FILETIME {
                dwLowDateTime: 0,
                dwHighDateTime: 0,
            };
            let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
            self.failed[2] =
                (GetProcessTimes(process, &mut created, &mut exited, &mut kernel, &mut user) == 0)
                    .then(why);
            if self.failed[2].is_none() {
                out[2] = Some(nanos(user));
                out[3] = Some(nanos(kernel));
            }
            let mut memory: PROCESS_MEMORY_COUNTERS = std::mem::zeroed();
            memory.cb = std::mem::size_of::<PROCESS_MEMORY_COUNTERS>() as u32;
            self.failed[3] = (GetProcessMemoryInfo(process, &mut memory, memory.cb) == 0).then(why);
            out[4] = self.failed[3]
                .is_none()
                .then_some(u64::from(memory.PageFaultCount));
            let mut io: IO_COUNTERS = std::mem::zeroed();
            self.failed[4] = (GetProcessIoCounters(process, &mut io) == 0).then(why);
            if self.failed[4].is_none() {
                out[5] = Some(io.ReadOperationCount);
                out[6] = Some(io.WriteOperationCount);
                out[7] = Some(io.ReadTransferCount);
                out[8] = Some(io.WriteTransferCount);
            }
        }
    }

    fn why_not(&self, field: &Field) -> String {
        let (call, failed) = match field.id {
            "win.cycles" => ("QueryProcessCycleTime", &self.failed[0]),
            "win.thread_cycles" => ("QueryThreadCycleTime", &self.failed[1]),
            "win.user_ns" | "win.kernel_ns" => ("GetProcessTimes", &self.failed[2]),
            "win.page_faults" => ("GetProcessMemoryInfo", &self.failed[3]),
            _ => ("GetProcessIoCounters", &self.failed[4]),
        };
        format!(
            "{call} failed: {}",
            failed.as_deref().unwrap_or("no reason given")
        )
    }
}
