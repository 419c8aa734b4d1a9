//! getrusage(2) of the whole process (every Unix): page faults and context switches.

use super::{Counters, Field};

const FIELDS: [Field; 4] = [
    Field {
        id: "rusage.minor_faults",
        header: "minflt",
        description: "minor page faults per iteration (getrusage ru_minflt)",
        default_visible: true,
    },
    Field {
        id: "rusage.major_faults",
        header: "majflt",
        description: "major page faults (needing I/O) per iteration (ru_majflt)",
        default_visible: false,
    },
    Field {
        id: "rusage.vol_ctx_switches",
        header: "vcsw",
        description: "voluntary context switches per iteration (ru_nvcsw)",
        default_visible: true,
    },
    Field {
        id: "rusage.invol_ctx_switches",
        header: "ivcsw",
        description: "involuntary context switches per iteration (ru_nivcsw)",
        default_visible: false,
    },
];

/// getrusage(RUSAGE_SELF).
#[derive(Debug)]
pub(crate) struct Rusage;

impl Counters for Rusage {
    fn fields(&self) -> &'static [Field] {
        &FIELDS
    }

    fn read(&mut self, out: &mut [Option<u64>]) {
        // SAFETY: getrusage writes a plain-old-data struct we own.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a valid, writable rusage.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } == 0 {
            out[0] = u64::try_from(usage.ru_minflt).ok();
            out[1] = u64::try_from(usage.ru_majflt).ok();
            out[2] = u64::try_from(usage.ru_nvcsw).ok();
            out[3] = u64::try_from(usage.ru_nivcsw).ok();
        }
    }

    fn why_not(&self, _field: &Field) -> String {
        format!("getrusage failed: {}", std::io::Error::last_os_error())
    }
}
