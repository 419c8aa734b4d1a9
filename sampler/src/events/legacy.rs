//! The kernel's generic event encodings and perf's names for them: hardware
//! (`PERF_TYPE_HARDWARE`), software (`PERF_TYPE_SOFTWARE`) and hardware cache
//! (`PERF_TYPE_HW_CACHE`) events.

/// `PERF_TYPE_HARDWARE`.
pub const PERF_TYPE_HARDWARE: u32 = 0;
/// `PERF_TYPE_SOFTWARE`.
pub const PERF_TYPE_SOFTWARE: u32 = 1;
/// `PERF_TYPE_TRACEPOINT`.
pub const PERF_TYPE_TRACEPOINT: u32 = 2;
/// `PERF_TYPE_HW_CACHE`.
pub const PERF_TYPE_HW_CACHE: u32 = 3;
/// `PERF_TYPE_BREAKPOINT`.
pub const PERF_TYPE_BREAKPOINT: u32 = 5;

/// Hardware events: `(config, canonical name, other names)`, as perf lists them.
pub const HARDWARE: &[(u64, &str, &[&str])] = &[
    (0, "cpu-cycles", &["cycles"]),
    (1, "instructions", &[]),
    (2, "cache-references", &[]),
    (3, "cache-misses", &[]),
    (4, "branch-instructions", &["branches"]),
    (5, "branch-misses", &[]),
    (6, "bus-cycles", &[]),
    (7, "stalled-cycles-frontend", &["idle-cycles-frontend"]),
    (8, "stalled-cycles-backend", &["idle-cycles-backend"]),
    (9, "ref-cycles", &[]),
];

/// Software events: `(config, canonical name, other names)`.
pub const SOFTWARE: &[(u64, &str, &[&str])] = &[
    (0, "cpu-clock", &[]),
    (1, "task-clock", &[]),
    (2, "page-faults", &["faults"]),
    (3, "context-switches", &["cs"]),
    (4, "cpu-migrations", &["migrations"]),
    (5, "minor-faults", &[]),
    (6, "major-faults", &[]),
    (7, "alignment-faults", &[]),
    (8, "emulation-faults", &[]),
    (9, "dummy", &[]),
    (10, "bpf-output", &[]),
    (11, "cgroup-switches", &[]),
];

/// Caches of `PERF_TYPE_HW_CACHE`: `(id, names)`, the first perf's canonical spelling.
const CACHES: &[(u64, &[&str])] = &[
    (0, &["L1-dcache", "l1-d", "l1d", "L1-data"]),
    (1, &["L1-icache", "l1-i", "l1i", "L1-instruction"]),
    (2, &["LLC", "L2"]),
    (3, &["dTLB", "d-tlb", "Data-TLB"]),
    (4, &["iTLB", "i-tlb", "Instruction-TLB"]),
    (5, &["branch", "branches", "bpu", "btb", "bpc"]),
    (6, &["node"]),
];

/// Operations: `(id, names)`, the first two the canonical singular and plural.
const OPS: &[(u64, &[&str])] = &[
    (0, &["load", "loads", "read"]),
    (1, &["store", "stores", "write"]),
    (
        2,
        &[
            "prefetch",
            "prefetches",
            "speculative-read",
            "speculative-load",
        ],
    ),
];

/// Results: `(id, names)`.
const RESULTS: &[(u64, &[&str])] = &[
    (0, &["refs", "Reference", "ops", "access"]),
    (1, &["misses", "miss"]),
];

/// Which operations each cache supports (perf's `evsel__hw_cache_stat`): bit i = op i.
const CACHE_OPS: [u8; 7] = [0b111, 0b101, 0b111, 0b111, 0b001, 0b001, 0b111];

fn lookup(table: &[(u64, &str, &[&str])], name: &str) -> Option<u64> {
    table
        .iter()
        .find(|(_, canonical, others)| *canonical == name || others.contains(&name))
        .map(|(config, _, _)| *config)
}

/// The config of a hardware event name.
pub fn hardware(name: &str) -> Option<u64> {
    lookup(HARDWARE, name)
}

/// The config of a software event name.
pub fn software(name: &str) -> Option<u64> {
    lookup(SOFTWARE, name)
}

/// Strips one word of `table` (and the `-` after it) off the front of lowercase `text`.
fn strip_word<'a>(text: &'a str, table: &[(u64, &[&str])]) -> Option<(u64, &'a str)> {
    table.iter().find_map(|&(id, words)| {
        words.iter().find_map(|w| {
            let rest = text.strip_prefix(w.to_ascii_lowercase().as_str())?;
            match rest.strip_prefix('-') {
                Some(after) if !after.is_empty() => Some((id, after)),
                _ if rest.is_empty() => Some((id, rest)),
                _ => None,
            }
        })
    })
}

/// The `PERF_TYPE_HW_CACHE` config of a name like `L1-dcache-load-misses`:
/// `cache | op << 8 | result << 16`. Names match case-insensitively, as perf's do.
pub fn cache(name: &str) -> Option<u64> {
    let lower = name.to_ascii_lowercase();
    let (cache_id, mut rest) = strip_word(&lower, CACHES)?;
    let (mut op, mut result) = (None, None);
    while !rest.is_empty() {
        if let Some((id, after)) = strip_word(rest, OPS).filter(|_| op.is_none()) {
            op = Some(id);
            rest = after;
        } else if let Some((id, after)) = strip_word(rest, RESULTS).filter(|_| result.is_none()) {
            result = Some(id);
            rest = after;
        } else {
            return None;
        }
    }
    let op = op.unwrap_or(0);
    if CACHE_OPS[cache_id as usize] & (1 << op) == 0 {
        return None;
    }
    Some(cache_id | op << 8 | result.unwrap_or(0) << 16)
}

/// Every valid cache event in perf's canonical spelling, with its config.
pub fn cache_events() -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for &(cache_id, names) in CACHES {
        for &(op, op_names) in OPS {
            if CACHE_OPS[cache_id as usize] & (1 << op) == 0 {
                continue;
            }
            out.push((format!("{}-{}", names[0], op_names[1]), cache_id | op << 8));
            out.push((
                format!("{}-{}-misses", names[0], op_names[0]),
                cache_id | op << 8 | 1 << 16,
            ));
        }
    }
    out
}

/// Every hardware, software and cache name, for suggestions.
pub fn all_names() -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for table in [HARDWARE, SOFTWARE] {
        for (_, canonical, others) in table {
            names.push(canonical.to_string());
            names.extend(others.iter().map(|s| s.to_string()));
        }
    }
    names.extend(cache_events().into_iter().map(|(n, _)| n));
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_to_the_kernel_encoding() {
        assert_eq!(hardware("cycles"), Some(0));
        assert_eq!(hardware("branches"), Some(4));
        assert_eq!(hardware("ref-cycles"), Some(9));
        assert_eq!(software("cs"), Some(3));
        assert_eq!(software("faults"), Some(2));
        assert_eq!(software("dummy"), Some(9));
        assert_eq!(hardware("cylces"), None);
    }

    #[test]
    fn cache_names_encode_cache_op_result() {
        assert_eq!(cache("L1-dcache-load-misses"), Some(0x10000));
        assert_eq!(cache("L1-dcache-loads"), Some(0));
        assert_eq!(cache("LLC-loads"), Some(2));
        assert_eq!(cache("LLC-store-misses"), Some(0x10102));
        assert_eq!(cache("dTLB-load-misses"), Some(0x10003));
        assert_eq!(cache("branch-loads"), Some(5));
        assert_eq!(cache("branch-load-misses"), Some(0x10005));
        assert_eq!(cache("l1d-prefetches"), Some(0x200));
        assert_eq!(cache("L1-icache-load-misses"), Some(0x10001));
        assert_eq!(cache("node-loads"), Some(6));
        // L1-icache has no stores; iTLB only loads.
        assert_eq!(cache("L1-icache-stores"), None);
        assert_eq!(cache("iTLB-prefetches"), None);
        assert_eq!(cache("L1-dcache-bogus"), None);
    }

    #[test]
    fn every_listed_cache_event_parses_back() {
        let events = cache_events();
        assert!(events.len() > 20);
        for (name, config) in events {
            assert_eq!(cache(&name), Some(config), "{name}");
        }
    }
}
