//! perf.data header features (`HEADER_*`): the ones sparkles uses are parsed, the rest
//! are named and skipped by size.

use serde::Serialize;

use crate::attr::Attr;
use crate::bytes::Cursor;
use crate::error::DataError;

/// Feature ids (bit numbers of the header's feature bitmap).
pub mod id {
    #![allow(missing_docs)]
    pub const TRACING_DATA: u32 = 1;
    pub const BUILD_ID: u32 = 2;
    pub const HOSTNAME: u32 = 3;
    pub const OSRELEASE: u32 = 4;
    pub const VERSION: u32 = 5;
    pub const ARCH: u32 = 6;
    pub const NRCPUS: u32 = 7;
    pub const CPUDESC: u32 = 8;
    pub const CPUID: u32 = 9;
    pub const TOTAL_MEM: u32 = 10;
    pub const CMDLINE: u32 = 11;
    pub const EVENT_DESC: u32 = 12;
    pub const CPU_TOPOLOGY: u32 = 13;
    pub const NUMA_TOPOLOGY: u32 = 14;
    pub const GROUP_DESC: u32 = 17;
    pub const MEM_TOPOLOGY: u32 = 22;
    pub const CLOCKID: u32 = 23;
    pub const COMPRESSED: u32 = 27;
    pub const CLOCK_DATA: u32 = 29;
}

/// The name of feature `id`, as perf spells it.
pub fn feature_name(id: u32) -> String {
    let name = match id {
        1 => "tracing_data",
        2 => "build_id",
        3 => "hostname",
        4 => "osrelease",
        5 => "version",
        6 => "arch",
        7 => "nrcpus",
        8 => "cpudesc",
        9 => "cpuid",
        10 => "total_mem",
        11 => "cmdline",
        12 => "event_desc",
        13 => "cpu_topology",
        14 => "numa_topology",
        15 => "branch_stack",
        16 => "pmu_mappings",
        17 => "group_desc",
        18 => "auxtrace",
        19 => "stat",
        20 => "cache",
        21 => "sample_time",
        22 => "mem_topology",
        23 => "clockid",
        24 => "dir_format",
        25 => "bpf_prog_info",
        26 => "bpf_btf",
        27 => "compressed",
        28 => "cpu_pmu_caps",
        29 => "clock_data",
        30 => "hybrid_topology",
        31 => "pmu_caps",
        _ => return format!("feature_{id}"),
    };
    name.to_string()
}

/// CPUs the recording machine had.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NrCpus {
    /// Available (possible) CPUs.
    pub available: u32,
    /// Online CPUs.
    pub online: u32,
}

/// One event's description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventDesc {
    /// Its name (`cycles:u`).
    pub name: String,
    /// Its attr.
    pub attr: Attr,
    /// Its ids.
    pub ids: Vec<u64>,
}

/// One event group of GROUP_DESC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupDesc {
    /// Its name (`{anon_group}` where it has none).
    pub name: String,
    /// The index of its leader among the capture's attrs.
    pub leader: u32,
    /// Events in it, the leader included.
    pub members: u32,
}

/// Where one CPU sits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CpuPlace {
    /// Core id.
    pub core_id: u32,
    /// Socket id.
    pub socket_id: u32,
    /// Die id, where recorded.
    pub die_id: Option<u32>,
}

/// CPU_TOPOLOGY.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct CpuTopology {
    /// CPU lists of cores sharing a package (`0-3`).
    pub core_siblings: Vec<String>,
    /// CPU lists of threads sharing a core.
    pub thread_siblings: Vec<String>,
    /// Per CPU, where recorded.
    pub cpus: Vec<CpuPlace>,
    /// CPU lists sharing a die, where recorded.
    pub die_siblings: Vec<String>,
}

/// One NUMA node of NUMA_TOPOLOGY.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NumaNode {
    /// Node number.
    pub node: u32,
    /// Memory, kB.
    pub mem_total_kb: u64,
    /// Free memory, kB.
    pub mem_free_kb: u64,
    /// Its CPUs as a list (`0-3`).
    pub cpus: String,
}

/// One node of MEM_TOPOLOGY.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemNode {
    /// Node number.
    pub node: u64,
    /// Bytes.
    pub size: u64,
    /// Memory block numbers (each `block_size` bytes of physical memory) on this node.
    pub blocks: Vec<u64>,
}

/// MEM_TOPOLOGY.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemTopology {
    /// Format version.
    pub version: u64,
    /// Bytes per memory block.
    pub block_size: u64,
    /// Nodes.
    pub nodes: Vec<MemNode>,
}

/// CLOCK_DATA.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClockData {
    /// Format version.
    pub version: u32,
    /// The clock samples were timed with.
    pub clockid: u32,
    /// Wall-clock time at the reference point, ns.
    pub wall_clock_ns: u64,
    /// The sample clock at the reference point, ns.
    pub clockid_time_ns: u64,
}

/// A build id perf recorded for a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BuildIdEntry {
    /// Process id (-1 for the kernel).
    pub pid: i32,
    /// The build id, hex.
    pub build_id: String,
    /// The file.
    pub filename: String,
}

/// The header features of a file.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Features {
    /// HOSTNAME.
    pub hostname: Option<String>,
    /// OSRELEASE.
    pub osrelease: Option<String>,
    /// VERSION (of perf).
    pub version: Option<String>,
    /// ARCH.
    pub arch: Option<String>,
    /// NRCPUS.
    pub nrcpus: Option<NrCpus>,
    /// CPUDESC.
    pub cpudesc: Option<String>,
    /// CPUID.
    pub cpuid: Option<String>,
    /// TOTAL_MEM, kB.
    pub total_mem_kb: Option<u64>,
    /// CMDLINE.
    pub cmdline: Option<Vec<String>>,
    /// EVENT_DESC.
    pub event_desc: Option<Vec<EventDesc>>,
    /// GROUP_DESC: each event group.
    pub group_desc: Option<Vec<GroupDesc>>,
    /// CPU_TOPOLOGY.
    pub cpu_topology: Option<CpuTopology>,
    /// NUMA_TOPOLOGY.
    pub numa_topology: Option<Vec<NumaNode>>,
    /// MEM_TOPOLOGY.
    pub mem_topology: Option<MemTopology>,
    /// CLOCKID: the clock's resolution, ns.
    pub clockid_res_ns: Option<u64>,
    /// CLOCK_DATA.
    pub clock_data: Option<ClockData>,
    /// BUILD_ID.
    pub build_ids: Vec<BuildIdEntry>,
    /// TRACING_DATA: the formats of the capture's tracepoints.
    pub tracing_data: Option<crate::tracing::TracingData>,
    /// Every feature present, by name.
    pub present: Vec<String>,
    /// Features present and not parsed (skipped by size).
    pub skipped: Vec<String>,
}

fn string(c: &mut Cursor<'_>, what: &str) -> Result<String, DataError> {
    let len = c.u32(what)? as usize;
    let bytes = c.bytes(len, what)?;
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    Ok(String::from_utf8_lossy(&bytes[..end]).into_owned())
}

fn strings(c: &mut Cursor<'_>, what: &str) -> Result<Vec<String>, DataError> {
    let nr = c.u32(what)?;
    // Each string takes at least its 4-byte length: bound the count by what is left.
    if nr as usize > c.remaining() / 4 {
        return Err(c.error(format!(
            "{what}: {nr} strings cannot fit in {} bytes",
            c.remaining()
        )));
    }
    (0..nr).map(|_| string(c, what)).collect()
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Features {
    /// Parses feature `id` from its data (at absolute `offset`) into `self`.
    pub fn parse_one(&mut self, id: u32, data: &[u8], offset: u64) -> Result<(), DataError> {
        let mut c = Cursor::new(data, offset);
        let name = feature_name(id);
        self.present.push(name.clone());
        match id {
            id::HOSTNAME => self.hostname = Some(string(&mut c, "hostname")?),
            id::OSRELEASE => self.osrelease = Some(string(&mut c, "osrelease")?),
            id::VERSION => self.version = Some(string(&mut c, "version")?),
            id::ARCH => self.arch = Some(string(&mut c, "arch")?),
            id::CPUDESC => self.cpudesc = Some(string(&mut c, "cpudesc")?),
            id::CPUID => self.cpuid = Some(string(&mut c, "cpuid")?),
            id::NRCPUS => {
                self.nrcpus = Some(NrCpus {
                    available: c.u32("nrcpus available")?,
                    online: c.u32("nrcpus online")?,
                })
            }
            id::TOTAL_MEM => self.total_mem_kb = Some(c.u64("total_mem")?),
            id::TRACING_DATA => {
                self.tracing_data = Some(crate::tracing::TracingData::parse(data, offset)?)
            }
            id::CMDLINE => self.cmdline = Some(strings(&mut c, "cmdline")?),
            id::CLOCKID => self.clockid_res_ns = Some(c.u64("clockid resolution")?),
            id::CLOCK_DATA => {
                self.clock_data = Some(ClockData {
                    version: c.u32("clock_data version")?,
                    clockid: c.u32("clock_data clockid")?,
                    wall_clock_ns: c.u64("clock_data wall clock")?,
                    clockid_time_ns: c.u64("clock_data clock time")?,
                })
            }
            id::EVENT_DESC => {
                let nr = c.u32("event_desc nr")?;
                let attr_size = c.u32("event_desc attr size")? as usize;
                if attr_size == 0 || nr as usize > c.remaining() / attr_size.max(1) {
                    return Err(c.error(format!(
                        "event_desc: {nr} attrs of {attr_size} bytes do not fit"
                    )));
                }
                let mut events = Vec::new();
                for _ in 0..nr {
                    let attr = Attr::parse(&mut c, attr_size)?;
                    let nr_ids = c.u32("event_desc nr_ids")?;
                    let name = string(&mut c, "event_desc name")?;
                    let ids = c
                        .u64s(u64::from(nr_ids), "event_desc ids")?
                        .iter()
                        .collect();
                    events.push(EventDesc { name, attr, ids });
                }
                self.event_desc = Some(events);
            }
            id::GROUP_DESC => {
                let nr = c.u32("group_desc nr")?;
                // Each group is at least a 4-byte name length and two u32s.
                if nr as usize > c.remaining() / 12 {
                    return Err(c.error(format!("group_desc: {nr} groups do not fit")));
                }
                let mut groups = Vec::new();
                for _ in 0..nr {
                    groups.push(GroupDesc {
                        name: string(&mut c, "group_desc name")?,
                        leader: c.u32("group_desc leader index")?,
                        members: c.u32("group_desc members")?,
                    });
                }
                self.group_desc = Some(groups);
            }
            id::CPU_TOPOLOGY => {
                let mut t = CpuTopology {
                    core_siblings: strings(&mut c, "cpu_topology core siblings")?,
                    thread_siblings: strings(&mut c, "cpu_topology thread siblings")?,
                    ..CpuTopology::default()
                };
                let nr = self.nrcpus.as_ref().map(|n| n.available as usize);
                if let Some(nr) = nr.filter(|&n| c.remaining() >= n * 8 && n > 0) {
                    for _ in 0..nr {
                        t.cpus.push(CpuPlace {
                            core_id: c.u32("cpu_topology core id")?,
                            socket_id: c.u32("cpu_topology socket id")?,
                            die_id: None,
                        });
                    }
                    if c.remaining() >= 4 {
                        t.die_siblings = strings(&mut c, "cpu_topology die siblings")?;
                        if c.remaining() >= nr * 4 {
                            for place in &mut t.cpus {
                                place.die_id = Some(c.u32("cpu_topology die id")?);
                            }
                        }
                    }
                }
                self.cpu_topology = Some(t);
            }
            id::NUMA_TOPOLOGY => {
                let nr = c.u32("numa_topology nr")?;
                if nr as usize > c.remaining() / 24 {
                    return Err(c.error(format!("numa_topology: {nr} nodes cannot fit")));
                }
                let mut nodes = Vec::new();
                for _ in 0..nr {
                    nodes.push(NumaNode {
                        node: c.u32("numa node")?,
                        mem_total_kb: c.u64("numa mem_total")?,
                        mem_free_kb: c.u64("numa mem_free")?,
                        cpus: string(&mut c, "numa cpus")?,
                    });
                }
                self.numa_topology = Some(nodes);
            }
            id::MEM_TOPOLOGY => {
                let version = c.u64("mem_topology version")?;
                let block_size = c.u64("mem_topology block size")?;
                let nr = c.u64("mem_topology nr")?;
                if nr > (c.remaining() / 24) as u64 {
                    return Err(c.error(format!("mem_topology: {nr} nodes cannot fit")));
                }
                let mut nodes = Vec::new();
                for _ in 0..nr {
                    let node = c.u64("mem node")?;
                    let size = c.u64("mem node size")?;
                    let bits = c.u64("mem node bitmap bits")?;
                    let words = c.u64s(bits.div_ceil(64), "mem node bitmap")?;
                    let mut blocks = Vec::new();
                    for (w, word) in words.iter().enumerate() {
                        let mut word = word;
                        while word != 0 {
                            let b = u64::from(word.trailing_zeros());
                            let block = w as u64 * 64 + b;
                            if block < bits {
                                blocks.push(block);
                            }
                            word &= word - 1;
                        }
                    }
                    nodes.push(MemNode { node, size, blocks });
                }
                self.mem_topology = Some(MemTopology {
                    version,
                    block_size,
                    nodes,
                });
            }
            id::BUILD_ID => {
                while c.remaining() >= 8 {
                    let at = c.offset();
                    let _type = c.u32("build_id header type")?;
                    let misc = c.u16("build_id header misc")?;
                    let size = c.u16("build_id header size")? as usize;
                    if size < 8 + 4 + 24 || size - 8 > c.remaining() {
                        return Err(DataError::new(
                            at,
                            format!("build_id entry of {size} bytes does not fit"),
                        ));
                    }
                    let mut e = Cursor::new(c.bytes(size - 8, "build_id entry")?, at + 8);
                    let pid = e.u32("build_id pid")? as i32;
                    let raw = e.bytes(24, "build_id")?;
                    let len = if misc & crate::record::misc::BUILD_ID_SIZE != 0 {
                        usize::from(raw[20]).min(20)
                    } else {
                        20
                    };
                    let filename = String::from_utf8_lossy(e.c_str_rest()).into_owned();
                    self.build_ids.push(BuildIdEntry {
                        pid,
                        build_id: hex(&raw[..len]),
                        filename,
                    });
                }
            }
            _ => self.skipped.push(name),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GROUP_DESC as perf's `write_group_desc` lays it out: the count, then per group a
    /// string (u32 length, NUL-padded to 64), the leader's index and the member count.
    fn group_desc(groups: &[(&str, u32, u32)]) -> Vec<u8> {
        let mut b = (groups.len() as u32).to_le_bytes().to_vec();
        for (name, leader, members) in groups {
            let len = (name.len() + 1).next_multiple_of(64);
            b.extend_from_slice(&(len as u32).to_le_bytes());
            let mut s = name.as_bytes().to_vec();
            s.resize(len, 0);
            b.extend_from_slice(&s);
            b.extend_from_slice(&leader.to_le_bytes());
            b.extend_from_slice(&members.to_le_bytes());
        }
        b
    }

    #[test]
    fn group_desc_names_each_group_its_leader_and_size() {
        let mut f = Features::default();
        let bytes = group_desc(&[("{anon_group}", 0, 2), ("mem", 3, 3)]);
        f.parse_one(id::GROUP_DESC, &bytes, 0).unwrap();
        let groups = f.group_desc.unwrap();
        let rows: Vec<(&str, u32, u32)> = groups
            .iter()
            .map(|g| (g.name.as_str(), g.leader, g.members))
            .collect();
        assert_eq!(rows, [("{anon_group}", 0, 2), ("mem", 3, 3)]);
    }

    #[test]
    fn a_group_count_larger_than_the_section_is_an_error_at_its_offset() {
        let mut f = Features::default();
        let mut bytes = group_desc(&[("{anon_group}", 0, 2)]);
        bytes[0] = 200;
        let e = f.parse_one(id::GROUP_DESC, &bytes, 4096).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("200 groups do not fit"), "{text}");
        assert!(text.contains("offset 4100"), "{text}");
    }
}
