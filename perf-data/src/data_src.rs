//! `PERF_SAMPLE_DATA_SRC`: which memory level served a sampled access, decoded from the
//! kernel's `union perf_mem_data_src` bit by bit, and named as perf 6.4 and later name it.
//!
//! The layout (little-endian bitfields, `include/uapi/linux/perf_event.h`):
//!
//! | bits  | field       | values |
//! |-------|-------------|--------|
//! | 0–4   | mem_op      | NA, LOAD, STORE, PFETCH, EXEC (one bit each) |
//! | 5–18  | mem_lvl     | NA, HIT, MISS, L1, LFB, L2, L3, LOC_RAM, REM_RAM1, REM_RAM2, REM_CCE1, REM_CCE2, IO, UNC |
//! | 19–23 | mem_snoop   | NA, NONE, HIT, MISS, HITM |
//! | 24–25 | mem_lock    | NA, LOCKED |
//! | 26–32 | mem_dtlb    | NA, HIT, MISS, L1, L2, WK (walker), OS (fault handler) |
//! | 33–36 | mem_lvl_num | L1 1, L2 2, L3 3, L4 4, L2_MHB 5, MSC 6, L0 7, UNC 8, CXL 9, IO 0xa, ANY_CACHE 0xb, LFB 0xc, RAM 0xd, PMEM 0xe, NA 0xf |
//! | 37    | mem_remote  | remote |
//! | 38–39 | mem_snoopx  | FWD, PEER |
//! | 40–42 | mem_blk     | NA, DATA, ADDR |
//! | 43–45 | mem_hops    | 1 remote core same node, 2 node same socket, 3 socket same board, 4 board |
//!
//! `mem_lvl` is the older namespace; `mem_lvl_num` with `mem_remote` and `mem_hops`
//! replaced it. The level is named from `mem_lvl_num` when it is set, else from `mem_lvl`
//! (`perf_mem__lvl_scnprintf` in perf 6.4+); perf 6.1 printed both joined ("L1 or L1 hit").

use std::fmt;

/// `PERF_MEM_OP_*`.
pub mod op {
    /// Not available.
    pub const NA: u8 = 0x01;
    /// Load.
    pub const LOAD: u8 = 0x02;
    /// Store.
    pub const STORE: u8 = 0x04;
    /// Prefetch.
    pub const PFETCH: u8 = 0x08;
    /// Code (execution).
    pub const EXEC: u8 = 0x10;
}

/// `PERF_MEM_LVL_*` (the older level namespace, one bit each).
pub mod lvl {
    /// Not available.
    pub const NA: u16 = 0x01;
    /// Hit.
    pub const HIT: u16 = 0x02;
    /// Miss.
    pub const MISS: u16 = 0x04;
    /// L1.
    pub const L1: u16 = 0x08;
    /// Line fill buffer (AMD: miss address buffer).
    pub const LFB: u16 = 0x10;
    /// L2.
    pub const L2: u16 = 0x20;
    /// L3.
    pub const L3: u16 = 0x40;
    /// Local DRAM.
    pub const LOC_RAM: u16 = 0x80;
    /// Remote DRAM, one hop.
    pub const REM_RAM1: u16 = 0x100;
    /// Remote DRAM, two hops.
    pub const REM_RAM2: u16 = 0x200;
    /// Remote cache, one hop.
    pub const REM_CCE1: u16 = 0x400;
    /// Remote cache, two hops.
    pub const REM_CCE2: u16 = 0x800;
    /// I/O memory.
    pub const IO: u16 = 0x1000;
    /// Uncached memory.
    pub const UNC: u16 = 0x2000;
}

/// `PERF_MEM_LVLNUM_*`.
pub mod lvl_num {
    /// L1.
    pub const L1: u8 = 0x01;
    /// L2.
    pub const L2: u8 = 0x02;
    /// L3.
    pub const L3: u8 = 0x03;
    /// L4.
    pub const L4: u8 = 0x04;
    /// L2 miss handling buffer.
    pub const L2_MHB: u8 = 0x05;
    /// Memory-side cache.
    pub const MSC: u8 = 0x06;
    /// L0.
    pub const L0: u8 = 0x07;
    /// Uncached.
    pub const UNC: u8 = 0x08;
    /// CXL.
    pub const CXL: u8 = 0x09;
    /// I/O.
    pub const IO: u8 = 0x0a;
    /// Any cache.
    pub const ANY_CACHE: u8 = 0x0b;
    /// Line fill buffer / L1 miss handling buffer.
    pub const LFB: u8 = 0x0c;
    /// RAM.
    pub const RAM: u8 = 0x0d;
    /// Persistent memory.
    pub const PMEM: u8 = 0x0e;
    /// Not available.
    pub const NA: u8 = 0x0f;
}

/// `PERF_MEM_SNOOP_*`.
pub mod snoop {
    /// Not available.
    pub const NA: u8 = 0x01;
    /// No snoop.
    pub const NONE: u8 = 0x02;
    /// Snoop hit.
    pub const HIT: u8 = 0x04;
    /// Snoop miss.
    pub const MISS: u8 = 0x08;
    /// Snoop hit modified.
    pub const HITM: u8 = 0x10;
}

/// `PERF_MEM_SNOOPX_*`.
pub mod snoopx {
    /// Forward.
    pub const FWD: u8 = 0x01;
    /// Transfer from a peer.
    pub const PEER: u8 = 0x02;
}

/// `PERF_MEM_LOCK_*`.
pub mod lock {
    /// Not available.
    pub const NA: u8 = 0x01;
    /// A locked transaction.
    pub const LOCKED: u8 = 0x02;
}

/// `PERF_MEM_TLB_*`.
pub mod tlb {
    /// Not available.
    pub const NA: u8 = 0x01;
    /// Hit.
    pub const HIT: u8 = 0x02;
    /// Miss.
    pub const MISS: u8 = 0x04;
    /// L1.
    pub const L1: u8 = 0x08;
    /// L2.
    pub const L2: u8 = 0x10;
    /// Hardware walker.
    pub const WK: u8 = 0x20;
    /// OS fault handler.
    pub const OS: u8 = 0x40;
}

/// `PERF_MEM_BLK_*`.
pub mod blk {
    /// Not available.
    pub const NA: u8 = 0x01;
    /// Data could not be forwarded.
    pub const DATA: u8 = 0x02;
    /// Address conflict.
    pub const ADDR: u8 = 0x04;
}

/// The shifts of each field.
pub mod shift {
    /// mem_op.
    pub const OP: u32 = 0;
    /// mem_lvl.
    pub const LVL: u32 = 5;
    /// mem_snoop.
    pub const SNOOP: u32 = 19;
    /// mem_lock.
    pub const LOCK: u32 = 24;
    /// mem_dtlb.
    pub const TLB: u32 = 26;
    /// mem_lvl_num.
    pub const LVL_NUM: u32 = 33;
    /// mem_remote.
    pub const REMOTE: u32 = 37;
    /// mem_snoopx.
    pub const SNOOPX: u32 = 38;
    /// mem_blk.
    pub const BLK: u32 = 40;
    /// mem_hops.
    pub const HOPS: u32 = 43;
    /// mem_region: which cache or memory region served the access, where the PMU says.
    pub const REGION: u32 = 46;
}

/// The bits that decide the level's name: mem_lvl, mem_lvl_num, mem_remote, mem_hops.
pub const LEVEL_BITS: u64 =
    (0x3fff << shift::LVL) | (0xf << shift::LVL_NUM) | (1 << shift::REMOTE) | (0x7 << shift::HOPS);

/// One `perf_mem_data_src` value, field by field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DataSource {
    /// The raw value.
    pub raw: u64,
    /// mem_op (5 bits).
    pub op: u8,
    /// mem_lvl (14 bits).
    pub lvl: u16,
    /// mem_snoop (5 bits).
    pub snoop: u8,
    /// mem_lock (2 bits).
    pub lock: u8,
    /// mem_dtlb (7 bits).
    pub tlb: u8,
    /// mem_lvl_num (4 bits).
    pub lvl_num: u8,
    /// mem_remote (1 bit).
    pub remote: bool,
    /// mem_snoopx (2 bits).
    pub snoopx: u8,
    /// mem_blk (3 bits).
    pub blk: u8,
    /// mem_hops (3 bits).
    pub hops: u8,
    /// mem_region (5 bits).
    pub region: u8,
}

/// `mem_lvl` bit names, in bit order (perf's `mem_lvl[]`).
const LVL_NAMES: [&str; 14] = [
    "N/A",
    "HIT",
    "MISS",
    "L1",
    "LFB/MAB",
    "L2",
    "L3",
    "Local RAM",
    "Remote RAM (1 hop)",
    "Remote RAM (2 hops)",
    "Remote Cache (1 hop)",
    "Remote Cache (2 hops)",
    "I/O",
    "Uncached",
];

/// `mem_hops` names (perf prints "Remote " before them).
const HOPS_NAMES: [&str; 5] = [
    "N/A",
    "core, same node",
    "node, same socket",
    "socket, same board",
    "board",
];

/// `mem_region` values' meanings, from 0, as the kernel's `PERF_MEM_REGION_*` comments
/// say them.
const REGION_NAMES: [&str; 16] = [
    "N/A",
    "Reserved",
    "Local CA shared cache",
    "Local CA non-shared cache",
    "Other CA IO agent",
    "Other CA shared cache",
    "Other CA non-shared cache",
    "MMIO",
    "Memory region 0",
    "Memory region 1",
    "Memory region 2",
    "Memory region 3",
    "Memory region 4",
    "Memory region 5",
    "Memory region 6",
    "Memory region 7",
];

const SNOOP_NAMES: [&str; 5] = ["N/A", "None", "Hit", "Miss", "HitM"];
const SNOOPX_NAMES: [&str; 2] = ["Fwd", "Peer"];
const TLB_NAMES: [&str; 7] = ["N/A", "HIT", "MISS", "L1", "L2", "Walker", "Fault"];

/// The name of a `mem_lvl_num` value, as perf's `mem_lvlnum[]` gives it.
pub fn lvl_num_name(n: u8) -> Option<&'static str> {
    Some(match n {
        lvl_num::L1 => "L1",
        lvl_num::L2 => "L2",
        lvl_num::L3 => "L3",
        lvl_num::L4 => "L4",
        lvl_num::L2_MHB => "L2 MHB",
        lvl_num::MSC => "Memory-side Cache",
        lvl_num::L0 => "L0",
        lvl_num::UNC => "Uncached",
        lvl_num::CXL => "CXL",
        lvl_num::IO => "I/O",
        lvl_num::ANY_CACHE => "Any cache",
        lvl_num::LFB => "LFB/MAB",
        lvl_num::RAM => "RAM",
        lvl_num::PMEM => "PMEM",
        lvl_num::NA => "N/A",
        _ => return None,
    })
}

/// The names of the set bits of `bits`, in bit order, joined by " or ".
fn joined(bits: u64, names: &[&str], out: &mut String) {
    for (i, name) in names.iter().enumerate() {
        if bits & (1 << i) != 0 {
            if !out.is_empty() {
                out.push_str(" or ");
            }
            out.push_str(name);
        }
    }
}

impl DataSource {
    /// Decodes a raw value.
    pub fn new(raw: u64) -> DataSource {
        let field = |shift: u32, bits: u32| ((raw >> shift) & ((1 << bits) - 1)) as u16;
        DataSource {
            raw,
            op: field(shift::OP, 5) as u8,
            lvl: field(shift::LVL, 14),
            snoop: field(shift::SNOOP, 5) as u8,
            lock: field(shift::LOCK, 2) as u8,
            tlb: field(shift::TLB, 7) as u8,
            lvl_num: field(shift::LVL_NUM, 4) as u8,
            remote: field(shift::REMOTE, 1) != 0,
            snoopx: field(shift::SNOOPX, 2) as u8,
            blk: field(shift::BLK, 3) as u8,
            hops: field(shift::HOPS, 3) as u8,
            region: field(shift::REGION, 5) as u8,
        }
    }

    /// Whether the value says nothing: no operation and no level (the kernel's
    /// `PERF_MEM_NA`, which any event that is not a memory event reports, or 0).
    pub fn is_na(&self) -> bool {
        (self.op == 0 || self.op & op::NA != 0)
            && (self.lvl_num == 0 || self.lvl_num == lvl_num::NA)
            && self.lvl & !lvl::NA == 0
    }

    /// Whether the level says hit (`mem_lvl` HIT).
    pub fn hit(&self) -> bool {
        self.lvl & lvl::HIT != 0
    }

    /// Whether the level says miss (`mem_lvl` MISS, and not HIT).
    pub fn miss(&self) -> bool {
        !self.hit() && self.lvl & lvl::MISS != 0
    }

    /// The level that served the access, as perf 6.4+ prints it (`perf mem report`'s
    /// "Memory access" column): "L1 hit", "LFB/MAB hit", "RAM hit",
    /// "Remote node, same socket RAM hit", "Remote socket, same board Any cache hit",
    /// "PMEM hit", "N/A". From `mem_lvl_num` (with `mem_remote` and `mem_hops`) when it
    /// names a level, else from the `mem_lvl` bits. Where neither hit nor miss is set
    /// perf leaves a trailing space; it is dropped here.
    pub fn level(&self) -> String {
        let hit_miss = if self.hit() {
            " hit"
        } else if self.miss() {
            " miss"
        } else {
            ""
        };
        let mut out = String::new();
        if self.lvl_num != 0 && self.lvl_num != lvl_num::NA {
            if self.remote {
                out.push_str("Remote ");
            }
            if self.hops != 0 {
                out.push_str(HOPS_NAMES.get(self.hops as usize).copied().unwrap_or("N/A"));
                out.push(' ');
            }
            match lvl_num_name(self.lvl_num) {
                Some(n) => out.push_str(n),
                None => out.push_str(&format!("Unknown level {}", self.lvl_num)),
            }
            out.push_str(hit_miss);
            return out;
        }
        let levels = u64::from(self.lvl & !(lvl::NA | lvl::HIT | lvl::MISS));
        if levels == 0 {
            return "N/A".into();
        }
        joined(levels, &LVL_NAMES, &mut out);
        out.push_str(hit_miss);
        out
    }

    /// The op: "LOAD", "STORE", "PFETCH", "EXEC", "N/A", or "No" (none set).
    pub fn op_name(&self) -> &'static str {
        if self.op & op::NA != 0 {
            "N/A"
        } else if self.op & op::LOAD != 0 {
            "LOAD"
        } else if self.op & op::STORE != 0 {
            "STORE"
        } else if self.op & op::PFETCH != 0 {
            "PFETCH"
        } else if self.op & op::EXEC != 0 {
            "EXEC"
        } else {
            "No"
        }
    }

    /// The snoop: mem_snoop's then mem_snoopx's names joined by " or " ("None", "HitM",
    /// "Hit or Fwd"), "N/A" when none is set.
    pub fn snoop_name(&self) -> String {
        let mut out = String::new();
        joined(u64::from(self.snoop), &SNOOP_NAMES, &mut out);
        joined(u64::from(self.snoopx), &SNOOPX_NAMES, &mut out);
        if out.is_empty() {
            out.push_str("N/A");
        }
        out
    }

    /// Whether the snoop found the line modified in another cache (HITM).
    pub fn hitm(&self) -> bool {
        self.snoop & snoop::HITM != 0
    }

    /// The TLB access: "L1 or L2 hit", "L2 miss", "Walker hit", "N/A".
    pub fn tlb_name(&self) -> String {
        let mut out = String::new();
        joined(
            u64::from(self.tlb & !(tlb::HIT | tlb::MISS)),
            &TLB_NAMES,
            &mut out,
        );
        if out.is_empty() {
            out.push_str("N/A");
        }
        if self.tlb & tlb::HIT != 0 {
            out.push_str(" hit");
        }
        if self.tlb & tlb::MISS != 0 {
            out.push_str(" miss");
        }
        out
    }

    /// Locked: "Yes", "No", "N/A".
    pub fn lock_name(&self) -> &'static str {
        if self.lock & lock::NA != 0 {
            "N/A"
        } else if self.lock & lock::LOCKED != 0 {
            "Yes"
        } else {
            "No"
        }
    }

    /// Whether the access was a locked one.
    pub fn locked(&self) -> bool {
        self.lock & lock::NA == 0 && self.lock & lock::LOCKED != 0
    }

    /// Blocked: "N/A", "Data", "Addr", "Data Addr".
    pub fn blk_name(&self) -> String {
        if self.blk == 0 || self.blk & blk::NA != 0 {
            return "N/A".into();
        }
        let mut out = Vec::new();
        if self.blk & blk::DATA != 0 {
            out.push("Data");
        }
        if self.blk & blk::ADDR != 0 {
            out.push("Addr");
        }
        out.join(" ")
    }

    /// The hop count's name ("core, same node", …), where set.
    pub fn hops_name(&self) -> Option<&'static str> {
        (self.hops != 0).then(|| HOPS_NAMES.get(self.hops as usize).copied().unwrap_or("N/A"))
    }

    /// The cache or memory region that served the access ("Other CA shared cache",
    /// "Memory region 2", …), where set; a value past the kernel's is named by its
    /// number.
    pub fn region_name(&self) -> Option<String> {
        (self.region != 0).then(|| match REGION_NAMES.get(self.region as usize) {
            Some(name) => (*name).to_string(),
            None => format!("region {:#x}", self.region),
        })
    }

    /// The `mem_lvl` bits' names (without HIT and MISS), in bit order.
    pub fn lvl_names(&self) -> Vec<&'static str> {
        (0..LVL_NAMES.len())
            .filter(|i| self.lvl & (1 << i) != 0 && (1 << i) as u16 & (lvl::HIT | lvl::MISS) == 0)
            .map(|i| LVL_NAMES[i])
            .collect()
    }

    /// Whether the access was served by another node, socket or board (`mem_remote`,
    /// or a remote `mem_lvl` bit where `mem_lvl_num` is not set).
    pub fn is_remote(&self) -> bool {
        self.remote
            || (self.lvl_num == 0
                && self.lvl & (lvl::REM_RAM1 | lvl::REM_RAM2 | lvl::REM_CCE1 | lvl::REM_CCE2) != 0)
    }
}

/// perf script's form: `|OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A`
/// (the level named as perf 6.4+ names it).
impl fmt::Display for DataSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "|OP {}|LVL {}|SNP {}|TLB {}|LCK {}|BLK  {}",
            self.op_name(),
            self.level(),
            self.snoop_name(),
            self.tlb_name(),
            self.lock_name(),
            self.blk_name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_come_from_their_bits() {
        // A Skylake-SP PEBS load: LFB hit (mem_lvl) and LFB (lvl_num 0xc), no snoop, TLB
        // L1 or L2 hit, not blocked.
        let d = DataSource::new(0x118_6810_0242);
        assert_eq!(d.op, op::LOAD);
        assert_eq!(d.lvl, lvl::HIT | lvl::LFB);
        assert_eq!(d.snoop, snoop::NONE);
        assert_eq!(d.lock, 0);
        assert_eq!(d.tlb, tlb::HIT | tlb::L1 | tlb::L2);
        assert_eq!(d.lvl_num, lvl_num::LFB);
        assert!(!d.remote);
        assert_eq!(d.blk, blk::NA);
        assert_eq!(d.hops, 0);
        assert_eq!(d.level(), "LFB/MAB hit");
        assert!(!d.is_na());
        // PERF_MEM_NA: what a cycles sample with DATA_SRC carries.
        let na = DataSource::new(0x508_0021);
        assert!(na.is_na());
        assert_eq!(
            na.to_string(),
            "|OP N/A|LVL N/A|SNP N/A|TLB N/A|LCK N/A|BLK  N/A"
        );
        assert!(DataSource::new(0).is_na());
        assert_eq!(
            d.to_string(),
            "|OP LOAD|LVL LFB/MAB hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A"
        );
    }
}
