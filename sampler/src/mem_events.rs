//! Choosing the precise memory events a machine has, as `perf mem record` chooses them
//! (`tools/perf/util/mem-events.c`, `arch/x86/util/mem-events.c`), from any sysfs tree:
//!
//! - AMD: the `ibs_op` PMU (its dynamic type read from sysfs), `ibs_op//`; with
//!   `ibs_op/ldlat=N/` where `caps/ldlat` says the PMU filters on load latency. Where the
//!   format has `l3missonly`, it is offered (a note), not set: perf does not set it.
//! - Intel: each core PMU with a `mem-loads` alias (`cpu`, or `cpu_core` and `cpu_atom`
//!   on a hybrid machine): `PMU/mem-loads,ldlat=N/P` (N 30 by default), as the group
//!   `{PMU/mem-loads-aux/,PMU/mem-loads,ldlat=N/}:P` where the PMU has `mem-loads-aux`
//!   (Sapphire Rapids, Alder Lake's P-cores: the load-latency event needs its auxiliary
//!   event as group leader), and `PMU/mem-stores/P`.
//! - Neither: no precise memory PMU, with the reason; callers fall back to page-fault
//!   samples with data addresses, labelled first-touch placement.
//!
//! The sample fields: IP, TID, TIME, ADDR, CPU, PERIOD, CALLCHAIN, DATA_SRC,
//! WEIGHT_STRUCT (WEIGHT before Linux 5.12), PHYS_ADDR where the caller may read
//! physical addresses, DATA_PAGE_SIZE (Linux 5.11 and later).

use crate::events::{EventAttr, EventResolver};
use sparkles_perf_data::attr::sample_type as st;

/// One page fault in this many is sampled in first-touch placement: every fault, with
/// an 8 KiB stack copy each, outruns the drain (4 MiB of fresh pages is 1024 faults).
/// A prime: buffers are mostly a power of two of pages, and a period of 16 would sample
/// the same 64 of a 1024-page buffer's pages on every pass; 17 walks all of them.
pub const FIRST_TOUCH_PERIOD: u64 = 17;

/// Load-latency threshold perf uses by default (`perf_mem_events__loads_ldlat`).
pub const DEFAULT_LDLAT: u32 = 30;

/// What the caller can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemOptions {
    /// Load-latency threshold, cycles.
    pub ldlat: u32,
    /// The kernel's `(major, minor)`.
    pub kernel: (u32, u32),
    /// Whether physical addresses may be sampled (CAP_SYS_ADMIN or CAP_PERFMON).
    pub phys_addr: bool,
    /// Whether the machine is a virtual machine (the reason a PMU lacks them).
    pub hypervisor: bool,
}

/// One event to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemEvent {
    /// What it samples: `loads`, `loads-aux` (the group leader that only enables
    /// `loads`), `stores`, `ibs_op` (loads and stores).
    pub role: &'static str,
    /// The spelling, as perf's would be.
    pub spelling: String,
    /// The resolved attr.
    pub attr: EventAttr,
    /// Index (into the choice's events) of its group leader, where grouped.
    pub leader: Option<usize>,
}

/// The choice for one machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemChoice {
    /// `ibs_op`, `pebs` or `none`.
    pub kind: &'static str,
    /// Events, each leader before its members.
    pub events: Vec<MemEvent>,
    /// The sample_type every event samples with.
    pub sample_type: u64,
    /// What was chosen and why, and each refusal with its reason.
    pub notes: Vec<String>,
    /// Why there is no precise memory event (then `events` is empty).
    pub unavailable: Option<String>,
}

/// The sample fields for `options`.
pub fn sample_type(options: &MemOptions) -> u64 {
    let mut t = st::IP
        | st::TID
        | st::TIME
        | st::ADDR
        | st::CPU
        | st::PERIOD
        | st::CALLCHAIN
        | st::DATA_SRC;
    t |= if options.kernel >= (5, 12) {
        st::WEIGHT_STRUCT
    } else {
        st::WEIGHT
    };
    if options.phys_addr {
        t |= st::PHYS_ADDR;
    }
    if options.kernel >= (5, 11) {
        t |= st::DATA_PAGE_SIZE;
    }
    t
}

fn resolve(resolver: &EventResolver, spelling: &str, notes: &mut Vec<String>) -> Option<EventAttr> {
    match resolver.resolve(spelling) {
        Ok(mut attrs) if !attrs.is_empty() => Some(attrs.remove(0)),
        Ok(_) => {
            notes.push(format!("{spelling}: resolves to no event"));
            None
        }
        Err(e) => {
            notes.push(format!("{spelling}: {e}"));
            None
        }
    }
}

/// The precise memory events the machine `resolver` describes has.
pub fn choose(resolver: &EventResolver, options: &MemOptions) -> MemChoice {
    let mut notes = Vec::new();
    let mut events: Vec<MemEvent> = Vec::new();
    let devices = crate::events::pmu::devices_dir(resolver.root());
    let kind = if let Some(ibs) = resolver.pmu("ibs_op") {
        let caps = devices.join("ibs_op/caps");
        let ldlat = caps.join("ldlat").is_file() && ibs.formats.contains_key("ldlat");
        let spelling = if ldlat {
            format!("ibs_op/ldlat={}/", options.ldlat)
        } else {
            "ibs_op//".to_string()
        };
        notes.push(format!(
            "AMD IBS: {spelling} (PMU type {}, read from sysfs){}",
            ibs.type_,
            if ldlat {
                ""
            } else {
                "; no load-latency filter (no caps/ldlat)"
            }
        ));
        if ibs.formats.contains_key("l3missonly") {
            notes.push(
                "ibs_op has l3missonly: `ibs_op/l3missonly=1/` samples only L3 misses (not set, as perf mem does not)".into(),
            );
        }
        if let Some(attr) = resolve(resolver, &spelling, &mut notes) {
            events.push(MemEvent {
                role: "ibs_op",
                spelling,
                attr,
                leader: None,
            });
        }
        "ibs_op"
    } else {
        for pmu in resolver.core_pmus() {
            let name = &pmu.name;
            if !pmu.aliases.contains_key("mem-loads") {
                notes.push(format!(
                    "{name}: no mem-loads event: no load-latency sampling"
                ));
                continue;
            }
            if pmu.aliases.contains_key("mem-loads-aux") {
                let aux = format!("{name}/mem-loads-aux/P");
                let loads = format!("{name}/mem-loads,ldlat={}/P", options.ldlat);
                if let (Some(a), Some(l)) = (
                    resolve(resolver, &aux, &mut notes),
                    resolve(resolver, &loads, &mut notes),
                ) {
                    let leader = events.len();
                    events.push(MemEvent {
                        role: "loads-aux",
                        spelling: aux,
                        attr: a,
                        leader: None,
                    });
                    events.push(MemEvent {
                        role: "loads",
                        spelling: loads,
                        attr: l,
                        leader: Some(leader),
                    });
                    notes.push(format!(
                        "{name}: {{{name}/mem-loads-aux/,{name}/mem-loads,ldlat={}/}}:P (the load-latency event needs its auxiliary event as group leader)",
                        options.ldlat
                    ));
                }
            } else {
                let loads = format!("{name}/mem-loads,ldlat={}/P", options.ldlat);
                if let Some(l) = resolve(resolver, &loads, &mut notes) {
                    events.push(MemEvent {
                        role: "loads",
                        spelling: loads.clone(),
                        attr: l,
                        leader: None,
                    });
                    notes.push(format!("{name}: {loads}"));
                }
            }
            if pmu.aliases.contains_key("mem-stores") {
                let stores = format!("{name}/mem-stores/P");
                if let Some(s) = resolve(resolver, &stores, &mut notes) {
                    events.push(MemEvent {
                        role: "stores",
                        spelling: stores.clone(),
                        attr: s,
                        leader: None,
                    });
                    notes.push(format!("{name}: {stores}"));
                }
            } else {
                notes.push(format!("{name}: no mem-stores event: loads only"));
            }
        }
        if events.is_empty() {
            "none"
        } else {
            "pebs"
        }
    };
    let unavailable = events.is_empty().then(|| {
        let core: Vec<&str> = resolver.core_pmus().map(|p| p.name.as_str()).collect();
        if core.is_empty() {
            "no precise memory PMU: no CPU PMU in sysfs (no hardware PMU, as in a VM without one)".to_string()
        } else {
            format!(
                "no precise memory PMU: {} has neither AMD IBS (ibs_op) nor Intel PEBS load-latency events (mem-loads){}",
                core.join(", "),
                if options.hypervisor {
                    "; this is a virtual machine, whose PMU does not pass them through"
                } else {
                    ""
                }
            )
        }
    });
    MemChoice {
        kind,
        events,
        sample_type: sample_type(options),
        notes,
        unavailable,
    }
}

/// How a live process's memory is sampled: the events, what they sample, and the line
/// saying what was chosen and why.
#[derive(Debug, Clone)]
pub struct LivePlan {
    /// The events to open (the first names the profile).
    pub events: Vec<crate::session::SampledEvent>,
    /// Its memory sampling.
    pub memory: crate::session::MemorySampling,
    /// Whether it is the page-fault fallback (first-touch placement).
    pub first_touch: bool,
    /// A period to sample with instead of the caller's rate.
    pub period: Option<u64>,
    /// The most stack bytes to copy per sample (first-touch placement: the faulting
    /// instruction is the sample's IP, and a page fault's user stack is copied whole).
    pub max_stack: Option<u32>,
    /// What was chosen, and why.
    pub note: String,
}

impl LivePlan {
    /// Sets `config` to sample as planned: the event, its memory fields, the period and
    /// the stack size; the note to print.
    pub fn apply(self, config: &mut crate::session::SamplingConfig) -> String {
        use crate::session::{CallGraph, Rate};
        config.events = self.events;
        config.memory = Some(self.memory);
        if let Some(p) = self.period {
            config.rate = Rate::Period(p);
        }
        if let (Some(max), CallGraph::Dwarf(bytes)) = (self.max_stack, config.call_graph) {
            config.call_graph = CallGraph::Dwarf(bytes.min(max));
        }
        self.note
    }
}

/// The plan for this machine: its precise memory event where the sampler can open it,
/// else page faults with their data addresses (first-touch placement), with the reason.
pub fn live_plan(
    resolver: &EventResolver,
    system: &crate::system::System,
) -> Result<LivePlan, crate::EventError> {
    let kernel = system
        .kernel
        .as_deref()
        .and_then(|k| {
            let mut parts = k.split(|c: char| !c.is_ascii_digit());
            Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
        })
        .unwrap_or((0, 0));
    let options = MemOptions {
        ldlat: DEFAULT_LDLAT,
        kernel,
        phys_addr: system.is_root,
        hypervisor: system.hypervisor,
    };
    let choice = choose(resolver, &options);
    // Every choice and refusal, with its reason, goes into the note.
    let considered = if choice.notes.is_empty() {
        String::new()
    } else {
        format!(" [{}]", choice.notes.join("; "))
    };
    if let Some(why) = &choice.unavailable {
        return first_touch(resolver, why, &considered);
    }
    if let Some(why) = ibs_refusal(&choice, options.kernel, system) {
        return first_touch(resolver, &why, &considered);
    }
    let events = sampled_events(resolver, &choice);
    let spellings: Vec<String> = events.iter().map(|e| e.spelling()).collect();
    Ok(LivePlan {
        events,
        memory: crate::session::MemorySampling {
            sample_type: choice.sample_type & !st::CALLCHAIN,
            resolve_pages: !options.phys_addr,
            without: 0,
            wakeup_events: 0,
        },
        first_touch: false,
        period: None,
        max_stack: None,
        note: format!(
            "memory sampling: {} ({}){considered}{}{}",
            spellings.join(", "),
            choice.kind,
            if choice.events.iter().any(|e| e.role == "loads-aux") {
                "; each auxiliary leader only counts (as perf 5.12's {…}:S had it): its samples would carry no data source"
            } else {
                ""
            },
            if options.phys_addr {
                "; physical addresses place pages on nodes"
            } else {
                "; not root: pages placed on nodes by move_pages while the process runs"
            }
        ),
    })
}

/// Why `ibs_op` cannot sample one process here, where it cannot (perf-amd-ibs(1)): IBS
/// samples whole CPUs only before Linux 6.2, and it cannot leave kernel mode out, so
/// it needs kernel mode allowed (root, CAP_PERFMON, or perf_event_paranoid at most 1).
fn ibs_refusal(
    choice: &MemChoice,
    kernel: (u32, u32),
    system: &crate::system::System,
) -> Option<String> {
    if choice.kind != "ibs_op" {
        return None;
    }
    if kernel < (6, 2) {
        return Some(format!(
            "ibs_op samples whole CPUs only before Linux 6.2 (this kernel is {}.{}), and a profile samples one process",
            kernel.0, kernel.1
        ));
    }
    if !system.is_root && system.perf_event_paranoid > 1 {
        return Some(format!(
            "ibs_op cannot leave kernel mode out, and perf_event_paranoid is {} (sysctl kernel.perf_event_paranoid=1, or CAP_PERFMON, lets it sample)",
            system.perf_event_paranoid
        ));
    }
    None
}

/// The session's events for a choice: each sampling event with its auxiliary leader, and
/// the CPUs of its PMU where the PMU says (a hybrid machine's `cpu_core`, `cpu_atom`).
pub fn sampled_events(
    resolver: &EventResolver,
    choice: &MemChoice,
) -> Vec<crate::session::SampledEvent> {
    choice
        .events
        .iter()
        .filter(|e| e.role != "loads-aux")
        .map(|e| {
            let mut attr = e.attr.clone();
            attr.name = e.spelling.clone();
            let leader = e.leader.map(|l| {
                let mut aux = choice.events[l].attr.clone();
                aux.name = choice.events[l].spelling.clone();
                // A counting leader is not sampled: no precise level.
                aux.precise_ip = 0;
                aux.precise_max = false;
                aux
            });
            let cpus = resolver
                .pmu(&e.attr.pmu)
                .and_then(|p| p.cpus.as_deref())
                .map(|list| {
                    sparkles_perf_data::topology::parse_list(list)
                        .into_iter()
                        .map(|c| c as usize)
                        .collect()
                });
            crate::session::SampledEvent {
                attr,
                leader,
                cpus,
                period: None,
            }
        })
        .collect()
}

/// Page faults with their data addresses: where pages were first touched, and by which
/// code; their nodes asked of the kernel while the process runs.
fn first_touch(
    resolver: &EventResolver,
    why_not: &str,
    considered: &str,
) -> Result<LivePlan, crate::EventError> {
    let mut event = resolver.resolve("page-faults")?.remove(0);
    event.name = "page-faults".into();
    Ok(LivePlan {
        events: vec![event.into()],
        memory: crate::session::MemorySampling {
            sample_type: st::ADDR,
            resolve_pages: true,
            // A software event sampling PERIOD in period mode samples every event,
            // whatever the period (perf_swevent_event: `data->period = nr`, overflow by
            // one): without PERIOD the kernel keeps one fault in FIRST_TOUCH_PERIOD.
            without: st::PERIOD,
            // Every 4 samples (64 faults, 256 KiB): pages are asked about while the code
            // that touched them still holds them.
            wakeup_events: 4,
        },
        first_touch: true,
        period: Some(FIRST_TOUCH_PERIOD),
        max_stack: Some(2048),
        note: format!(
            "first-touch placement, not access sampling: {why_not}{considered}; sampling one page fault in {FIRST_TOUCH_PERIOD} with its data address (where pages were first touched, and from which code), their nodes asked of the kernel (move_pages) while the process runs"
        ),
    })
}
