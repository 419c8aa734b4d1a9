//! Off-CPU capture: what a session adds so that a report can account for the whole wall
//! time of the sampled threads. Every sampled thread's SWITCH records (the attr's
//! `context_switch`) say when it ran and when it waited, and whether it was preempted;
//! where the kernel allows it, a `sched:sched_switch` sample at each switch-out (period
//! 1, with the session's stacks and its RAW data) says where it blocked and in which
//! state (`prev_state`), and the capture carries that tracepoint's format (TRACING_DATA)
//! so that the field is read at the offset the recording kernel gave.

use crate::events::EventResolver;
use crate::session::{SampledEvent, SamplingConfig};

/// The tracepoint whose samples name where and how a thread blocked.
pub const SCHED_SWITCH: &str = "sched:sched_switch";

/// How a session captures off-CPU time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OffCpuSource {
    /// `sched:sched_switch` samples with stacks and states, plus SWITCH records.
    SchedSwitch,
    /// SWITCH records only: a wait is placed under the thread's last on-CPU stack.
    SwitchRecords {
        /// Why the tracepoint is not sampled.
        reason: String,
    },
}

impl std::fmt::Display for OffCpuSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OffCpuSource::SchedSwitch => write!(
                f,
                "off-CPU: {SCHED_SWITCH} samples (where and in which state each thread blocked) and switch records"
            ),
            OffCpuSource::SwitchRecords { reason } => write!(
                f,
                "off-CPU: switch records only ({SCHED_SWITCH} not sampled: {reason}); each wait is shown under the thread's last on-CPU stack, and is `preempted` or `blocked` (sleep and I/O cannot be told apart)"
            ),
        }
    }
}

/// Adds off-CPU capture to `config`: switch records always; the `sched:sched_switch`
/// event, RAW data and the tracepoint's format where tracefs gives them. Says which.
/// (The kernel may still refuse the tracepoint when the session opens it, for an
/// unprivileged user's RAW data: the session then says so, and the capture holds
/// switch records only.)
pub fn add_off_cpu(config: &mut SamplingConfig, resolver: &EventResolver) -> OffCpuSource {
    config.context_switches = true;
    match sched_switch(resolver) {
        Ok((event, tracing_data)) => {
            config.events.push(event);
            config.raw = true;
            config.tracing_data = Some(tracing_data);
            OffCpuSource::SchedSwitch
        }
        Err(reason) => OffCpuSource::SwitchRecords { reason },
    }
}

fn sched_switch(resolver: &EventResolver) -> Result<(SampledEvent, Vec<u8>), String> {
    let mut attrs = resolver.resolve(SCHED_SWITCH).map_err(|e| e.to_string())?;
    let mut attr = attrs
        .drain(..)
        .next()
        .ok_or_else(|| format!("{SCHED_SWITCH} resolves to no event"))?;
    attr.name = SCHED_SWITCH.to_string();
    let tracefs = resolver.tracefs().map_err(|e| e.to_string())?;
    let read = |rel: &str| {
        let path = tracefs.dir.join(rel);
        read_whole(&path).map_err(|e| format!("{}: {e}", path.display()))
    };
    let data = sparkles_perf_data::tracing::encode(
        &read("events/header_page")?,
        &read("events/header_event")?,
        &[(
            "sched".to_string(),
            read("events/sched/sched_switch/format")?,
        )],
    );
    let event = SampledEvent {
        period: Some(1),
        ..SampledEvent::from(attr)
    };
    Ok((event, data))
}

/// A tracefs file read with reads of 64 KiB: `events/header_page` and `header_event` give
/// their text to the first read only (a read past offset 0 returns nothing), so a small
/// first read, as `std::fs::read` makes for a file whose size says 0, would cut them.
fn read_whole(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut out = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        match file.read(&mut chunk)? {
            0 => return Ok(out),
            n => out.extend_from_slice(&chunk[..n]),
        }
    }
}
