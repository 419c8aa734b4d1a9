//! Record type numbers and `misc` bits: what the 8-byte header of every record says.

/// Record type numbers (`PERF_RECORD_*`; perf's own from 64).
pub mod kind {
    #![allow(missing_docs)]
    pub const MMAP: u32 = 1;
    pub const LOST: u32 = 2;
    pub const COMM: u32 = 3;
    pub const EXIT: u32 = 4;
    pub const THROTTLE: u32 = 5;
    pub const UNTHROTTLE: u32 = 6;
    pub const FORK: u32 = 7;
    pub const READ: u32 = 8;
    pub const SAMPLE: u32 = 9;
    pub const MMAP2: u32 = 10;
    pub const AUX: u32 = 11;
    pub const ITRACE_START: u32 = 12;
    pub const LOST_SAMPLES: u32 = 13;
    pub const SWITCH: u32 = 14;
    pub const SWITCH_CPU_WIDE: u32 = 15;
    pub const NAMESPACES: u32 = 16;
    pub const KSYMBOL: u32 = 17;
    pub const BPF_EVENT: u32 = 18;
    pub const CGROUP: u32 = 19;
    pub const TEXT_POKE: u32 = 20;
    pub const AUX_OUTPUT_HW_ID: u32 = 21;
    pub const HEADER_ATTR: u32 = 64;
    pub const HEADER_EVENT_TYPE: u32 = 65;
    pub const HEADER_TRACING_DATA: u32 = 66;
    pub const HEADER_BUILD_ID: u32 = 67;
    pub const FINISHED_ROUND: u32 = 68;
    pub const ID_INDEX: u32 = 69;
    pub const AUXTRACE_INFO: u32 = 70;
    pub const AUXTRACE: u32 = 71;
    pub const AUXTRACE_ERROR: u32 = 72;
    pub const THREAD_MAP: u32 = 73;
    pub const CPU_MAP: u32 = 74;
    pub const STAT_CONFIG: u32 = 75;
    pub const STAT: u32 = 76;
    pub const STAT_ROUND: u32 = 77;
    pub const EVENT_UPDATE: u32 = 78;
    pub const TIME_CONV: u32 = 79;
    pub const HEADER_FEATURE: u32 = 80;
    pub const COMPRESSED: u32 = 81;
    pub const FINISHED_INIT: u32 = 82;
    pub const COMPRESSED2: u32 = 83;
}

/// The name of a record type, as `sparkles script` prints it (`"mmap2"`).
pub fn kind_name(type_: u32) -> &'static str {
    match type_ {
        kind::MMAP => "mmap",
        kind::LOST => "lost",
        kind::COMM => "comm",
        kind::EXIT => "exit",
        kind::THROTTLE => "throttle",
        kind::UNTHROTTLE => "unthrottle",
        kind::FORK => "fork",
        kind::READ => "read",
        kind::SAMPLE => "sample",
        kind::MMAP2 => "mmap2",
        kind::AUX => "aux",
        kind::ITRACE_START => "itrace_start",
        kind::LOST_SAMPLES => "lost_samples",
        kind::SWITCH => "switch",
        kind::SWITCH_CPU_WIDE => "switch_cpu_wide",
        kind::NAMESPACES => "namespaces",
        kind::KSYMBOL => "ksymbol",
        kind::BPF_EVENT => "bpf_event",
        kind::CGROUP => "cgroup",
        kind::TEXT_POKE => "text_poke",
        kind::AUX_OUTPUT_HW_ID => "aux_output_hw_id",
        kind::HEADER_ATTR => "header_attr",
        kind::HEADER_EVENT_TYPE => "header_event_type",
        kind::HEADER_TRACING_DATA => "header_tracing_data",
        kind::HEADER_BUILD_ID => "header_build_id",
        kind::FINISHED_ROUND => "finished_round",
        kind::ID_INDEX => "id_index",
        kind::AUXTRACE_INFO => "auxtrace_info",
        kind::AUXTRACE => "auxtrace",
        kind::AUXTRACE_ERROR => "auxtrace_error",
        kind::THREAD_MAP => "thread_map",
        kind::CPU_MAP => "cpu_map",
        kind::STAT_CONFIG => "stat_config",
        kind::STAT => "stat",
        kind::STAT_ROUND => "stat_round",
        kind::EVENT_UPDATE => "event_update",
        kind::TIME_CONV => "time_conv",
        kind::HEADER_FEATURE => "header_feature",
        kind::COMPRESSED => "compressed",
        kind::FINISHED_INIT => "finished_init",
        kind::COMPRESSED2 => "compressed2",
        _ => "unknown",
    }
}

/// `misc` bits.
pub mod misc {
    /// The low three bits: where the sample was taken.
    pub const CPUMODE_MASK: u16 = 7;
    /// COMM: the task exec'd.
    pub const COMM_EXEC: u16 = 1 << 13;
    /// SWITCH: switching out (else in).
    pub const SWITCH_OUT: u16 = 1 << 13;
    /// SWITCH out: the task was preempted.
    pub const SWITCH_OUT_PREEMPT: u16 = 1 << 14;
    /// MMAP2: the build-id form.
    pub const MMAP_BUILD_ID: u16 = 1 << 14;
    /// MMAP: a data (non-exec) mapping.
    pub const MMAP_DATA: u16 = 1 << 13;
    /// HEADER_BUILD_ID: the size byte is valid.
    pub const BUILD_ID_SIZE: u16 = 1 << 15;
}
