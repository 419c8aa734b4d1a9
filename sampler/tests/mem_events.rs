//! Precise memory event selection on the fake sysfs trees of `../shared/fixtures/sysfs/`:
//! the attrs `perf mem record` itself would open there (perf 6.x's
//! `tools/perf/arch/x86/util/mem-events.c`: `ibs_op//` on AMD; `{cpu/mem-loads-aux/,
//! cpu/mem-loads,ldlat=30/}:P` and `cpu/mem-stores/P` on Sapphire Rapids; both core PMUs
//! of a hybrid), and the reason where there is none.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;

mod support;

use sparkles_perf_data::attr::sample_type as st;
use sparkles_sampler::events::EventResolver;
use sparkles_sampler::mem_events::{choose, MemOptions, DEFAULT_LDLAT};
use support::fixtures;

const OPTIONS: MemOptions = MemOptions {
    ldlat: DEFAULT_LDLAT,
    kernel: (6, 1),
    phys_addr: true,
    hypervisor: false,
};

/// `(role, pmu, type, config, config1, precise_ip, leader)` of each chosen event.
type Row = (&'static str, String, u32, u64, u64, u8, Option<usize>);

fn chosen(
    tree: &str,
    options: &MemOptions,
) -> Option<(Vec<Row>, sparkles_sampler::mem_events::MemChoice)> {
    let root = fixtures()?.join("sysfs").join(tree);
    let resolver = EventResolver::new(&root).unwrap();
    let c = choose(&resolver, options);
    let rows = c
        .events
        .iter()
        .map(|e| {
            (
                e.role,
                e.attr.pmu.clone(),
                e.attr.type_,
                e.attr.config,
                e.attr.config1,
                e.attr.precise_ip,
                e.leader,
            )
        })
        .collect();
    Some((rows, c))
}

fn pmu_type(tree: &str, pmu: &str) -> u32 {
    let path = fixtures()
        .unwrap()
        .join("sysfs")
        .join(tree)
        .join("sys/bus/event_source/devices")
        .join(pmu)
        .join("type");
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn zen4_samples_ibs_op_with_its_dynamic_type() {
    let Some((rows, c)) = chosen("amd-zen4", &OPTIONS) else {
        return;
    };
    let ibs = pmu_type("amd-zen4", "ibs_op");
    assert_eq!(rows, [("ibs_op", "ibs_op".to_string(), ibs, 0, 0, 0, None)]);
    assert_eq!(c.kind, "ibs_op");
    assert_eq!(c.events[0].spelling, "ibs_op//");
    assert!(
        c.notes.iter().any(|n| n.contains("l3missonly")),
        "{:?}",
        c.notes
    );
    assert!(c.unavailable.is_none());
}

#[test]
fn sapphire_rapids_groups_loads_under_their_aux_event() {
    for tree in ["intel-sapphire-rapids", "intel-sapphire-rapids-tsx-off"] {
        let Some((rows, c)) = chosen(tree, &OPTIONS) else {
            return;
        };
        assert_eq!(
            rows,
            [
                // mem-loads-aux: event=0x03,umask=0x82; the group's :P is precise 3.
                ("loads-aux", "cpu".to_string(), 4, 0x8203, 0, 3, None),
                // mem-loads: event=0xcd,umask=0x1, ldlat=30 in config1.
                ("loads", "cpu".to_string(), 4, 0x1cd, 30, 3, Some(0)),
                // mem-stores: event=0xcd,umask=0x2.
                ("stores", "cpu".to_string(), 4, 0x2cd, 0, 3, None),
            ],
            "{tree}"
        );
        assert_eq!(c.kind, "pebs");
    }
}

#[test]
fn a_hybrid_machine_samples_both_core_pmus() {
    let Some((rows, _)) = chosen("intel-alder-lake-hybrid", &OPTIONS) else {
        return;
    };
    let atom = pmu_type("intel-alder-lake-hybrid", "cpu_atom");
    let core = pmu_type("intel-alder-lake-hybrid", "cpu_core");
    // The aux leader is event 0: cpu_core's.
    assert_eq!((rows[0].0, rows[0].1.as_str()), ("loads-aux", "cpu_core"));
    let mut rows = rows;
    rows.sort_by_key(|r| (r.1.clone(), r.0));
    assert_eq!(
        rows,
        [
            // cpu_atom: no aux event; mem-loads event=0xd0,umask=0x5; stores 0x6d0.
            ("loads", "cpu_atom".to_string(), atom, 0x5d0, 30, 3, None),
            ("stores", "cpu_atom".to_string(), atom, 0x6d0, 0, 3, None),
            ("loads", "cpu_core".to_string(), core, 0x1cd, 30, 3, Some(0)),
            (
                "loads-aux",
                "cpu_core".to_string(),
                core,
                0x8203,
                0,
                3,
                None
            ),
            ("stores", "cpu_core".to_string(), core, 0x2cd, 0, 3, None),
        ]
    );
}

#[test]
fn sample_fields_follow_the_kernel_and_permissions() {
    let t = sparkles_sampler::mem_events::sample_type(&OPTIONS);
    for bit in [
        st::IP,
        st::TID,
        st::TIME,
        st::ADDR,
        st::CPU,
        st::PERIOD,
        st::CALLCHAIN,
        st::DATA_SRC,
        st::WEIGHT_STRUCT,
        st::PHYS_ADDR,
        st::DATA_PAGE_SIZE,
    ] {
        assert_ne!(t & bit, 0, "{bit:#x}");
    }
    assert_eq!(t & st::WEIGHT, 0);
    let old = sparkles_sampler::mem_events::sample_type(&MemOptions {
        kernel: (5, 10),
        phys_addr: false,
        ..OPTIONS
    });
    assert_ne!(old & st::WEIGHT, 0);
    assert_eq!(
        old & (st::WEIGHT_STRUCT | st::PHYS_ADDR | st::DATA_PAGE_SIZE),
        0
    );
}

#[test]
fn a_tree_without_a_precise_memory_pmu_says_why() {
    let Some(root) = fixtures() else { return };
    // The two-node tree has no PMUs at all.
    let resolver = EventResolver::new(root.join("sysfs/numa-2node")).unwrap();
    let c = choose(&resolver, &OPTIONS);
    assert!(c.events.is_empty());
    assert_eq!(c.kind, "none");
    let why = c.unavailable.unwrap();
    assert!(why.starts_with("no precise memory PMU"), "{why}");
}

#[test]
fn the_live_plan_samples_ibs_on_zen4_and_the_aux_group_on_sapphire_rapids() {
    use sparkles_sampler::mem_events::live_plan;
    let Some(root) = fixtures() else { return };
    // A root session on a kernel that samples IBS per process.
    let system = sparkles_sampler::system::System {
        kernel: Some("6.8.0".into()),
        is_root: true,
        ..sparkles_sampler::system::System::probe()
    };
    let zen4 = EventResolver::new(root.join("sysfs/amd-zen4")).unwrap();
    let plan = live_plan(&zen4, &system).unwrap();
    assert!(!plan.first_touch);
    assert_eq!(plan.events.len(), 1);
    assert_eq!(plan.events[0].attr.pmu, "ibs_op");
    assert!(plan.events[0].leader.is_none());
    assert_ne!(plan.memory.sample_type & st::DATA_SRC, 0);
    assert!(
        plan.note.starts_with("memory sampling: ibs_op// (ibs_op)"),
        "{}",
        plan.note
    );
    // IBS samples one process from Linux 6.2 on, and only where kernel mode is allowed.
    let old = sparkles_sampler::system::System {
        kernel: Some("6.1.0-13-amd64".into()),
        ..system.clone()
    };
    let plan = live_plan(&zen4, &old).unwrap();
    assert!(plan.first_touch);
    assert!(
        plan.note.starts_with(
            "first-touch placement, not access sampling: ibs_op samples whole CPUs only before Linux 6.2 (this kernel is 6.1)"
        ),
        "{}",
        plan.note
    );
    let user = sparkles_sampler::system::System {
        kernel: Some("6.8.0".into()),
        is_root: false,
        perf_event_paranoid: 2,
        ..system.clone()
    };
    let plan = live_plan(&zen4, &user).unwrap();
    assert!(plan.first_touch);
    assert!(
        plan.note
            .contains("ibs_op cannot leave kernel mode out, and perf_event_paranoid is 2"),
        "{}",
        plan.note
    );
    let allowed = sparkles_sampler::system::System {
        perf_event_paranoid: 1,
        ..user
    };
    assert!(!live_plan(&zen4, &allowed).unwrap().first_touch);
    // Sapphire Rapids: mem-loads led by mem-loads-aux (a counting leader: no period, no
    // precise level), and mem-stores on its own.
    let spr = EventResolver::new(root.join("sysfs/intel-sapphire-rapids")).unwrap();
    let plan = live_plan(&spr, &system).unwrap();
    assert!(!plan.first_touch, "{}", plan.note);
    let names: Vec<&str> = plan.events.iter().map(|e| e.attr.name.as_str()).collect();
    assert_eq!(names, ["cpu/mem-loads,ldlat=30/P", "cpu/mem-stores/P"]);
    let loads = &plan.events[0];
    assert_eq!((loads.attr.config, loads.attr.config1), (0x1cd, 30));
    assert!(loads.attr.precise_max);
    let aux = loads.leader.as_ref().unwrap();
    assert_eq!(
        (aux.name.as_str(), aux.config),
        ("cpu/mem-loads-aux/P", 0x8203)
    );
    assert_eq!((aux.precise_ip, aux.precise_max), (0, false));
    assert!(plan.events[1].leader.is_none());
    assert!(plan.events.iter().all(|e| e.cpus.is_none()));
    assert!(
        plan.note.starts_with(
            "memory sampling: {cpu/mem-loads-aux/P,cpu/mem-loads,ldlat=30/P}, cpu/mem-stores/P (pebs)"
        ),
        "{}",
        plan.note
    );
    assert!(
        plan.note.contains("auxiliary leader only counts"),
        "{}",
        plan.note
    );
}

#[test]
fn the_live_plan_on_a_hybrid_opens_each_core_pmus_events_on_its_own_cpus() {
    use sparkles_sampler::mem_events::live_plan;
    let Some(root) = fixtures() else { return };
    let system = sparkles_sampler::system::System::probe();
    let adl = EventResolver::new(root.join("sysfs/intel-alder-lake-hybrid")).unwrap();
    let plan = live_plan(&adl, &system).unwrap();
    assert!(!plan.first_touch, "{}", plan.note);
    let rows: Vec<(&str, bool, Vec<usize>)> = plan
        .events
        .iter()
        .map(|e| {
            (
                e.attr.name.as_str(),
                e.leader.is_some(),
                e.cpus.clone().unwrap(),
            )
        })
        .collect();
    let core: Vec<usize> = (0..16).collect();
    let atom: Vec<usize> = (16..24).collect();
    assert_eq!(
        rows,
        [
            ("cpu_core/mem-loads,ldlat=30/P", true, core.clone()),
            ("cpu_core/mem-stores/P", false, core),
            ("cpu_atom/mem-loads,ldlat=30/P", false, atom.clone()),
            ("cpu_atom/mem-stores/P", false, atom),
        ]
    );
    assert_eq!(
        plan.events[0].leader.as_ref().unwrap().name,
        "cpu_core/mem-loads-aux/P"
    );
}

#[test]
fn the_live_plan_without_a_precise_pmu_is_first_touch_placement_with_the_reason() {
    use sparkles_sampler::mem_events::live_plan;
    let Some(root) = fixtures() else { return };
    let system = sparkles_sampler::system::System::probe();
    let none = EventResolver::new(root.join("sysfs/numa-2node")).unwrap();
    let plan = live_plan(&none, &system).unwrap();
    assert!(plan.first_touch);
    assert_eq!(plan.events.len(), 1);
    assert_eq!(plan.events[0].attr.name, "page-faults");
    assert_eq!(plan.memory.sample_type, st::ADDR);
    assert_ne!(plan.memory.without & st::PERIOD, 0);
    assert!(
        plan.note
            .starts_with("first-touch placement, not access sampling: no precise memory PMU"),
        "{}",
        plan.note
    );
}
