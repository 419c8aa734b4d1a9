//! What a report says beside its numbers: each note a value, put into words in one place
//! (its `Display`), and written into a profile's `notes` as those words.

use sparkles_symbolize::kernel::NoKernelNames;
use sparkles_symbolize::symbolizer::Unavailable;

/// Something a profile's reader should know about how it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Note {
    /// The capture's stack copies are not walked: its architecture is not supported.
    UnwalkedArch {
        /// The capture's `uname -m`.
        arch: String,
    },
    /// The capture does not name its architecture: taken as this machine's.
    ArchAssumed {
        /// This machine's.
        arch: &'static str,
    },
    /// Kernel addresses get no names from this machine.
    NoKernelNames(NoKernelNames),
    /// The profile mixes the samples of several events: each with its count.
    MixedEvents(Vec<(String, u64)>),
    /// No NUMA section, and why.
    NoNuma(NoNuma),
    /// Samples whose data source says nothing, left out of the memory section.
    UnknownDataSources(u64),
    /// Samples that carry a data source, every one of which says nothing: the event is
    /// not a memory event.
    NotAMemoryEvent {
        /// The event.
        event: String,
    },
    /// A module gave no names (or fewer), and why.
    Module(Unavailable),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::UnwalkedArch { arch } => write!(
                f,
                "stack copies of a {arch} capture are not walked: architecture not supported"
            ),
            Note::ArchAssumed { arch } => write!(
                f,
                "the capture does not name its architecture: taken as this machine's ({arch})"
            ),
            Note::NoKernelNames(why) => write!(f, "kernel addresses are not named: {why}"),
            Note::MixedEvents(events) => {
                let each: Vec<String> = events
                    .iter()
                    .map(|(name, n)| format!("{name} ({n})"))
                    .collect();
                write!(
                    f,
                    "samples of {} events together: {}; each can be reported alone by its name",
                    events.len(),
                    each.join(", ")
                )
            }
            Note::NoNuma(why) => write!(f, "no NUMA section: {why}"),
            Note::UnknownDataSources(n) => write!(
                f,
                "{n} samples' data source says nothing (N/A): left out of the memory section"
            ),
            Note::NotAMemoryEvent { event } => write!(
                f,
                "no memory section: the samples carry a data source, but every one says nothing (N/A): {event} is not a memory event"
            ),
            Note::Module(why) => write!(f, "{why}"),
        }
    }
}

/// Why a profile has no NUMA section.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NoNuma {
    /// Physical addresses were sampled, but the capture has no memory topology.
    NoMemoryTopology,
    /// No physical addresses, and no page table beside the capture.
    NoPhysicalAddresses,
    /// A page table, but no NUMA topology to read it against.
    NoTopology,
    /// The page table beside the capture is unreadable.
    PageTable(String),
}

impl std::fmt::Display for NoNuma {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NoNuma::NoMemoryTopology => "the capture records no memory topology (NUMA_TOPOLOGY and MEM_TOPOLOGY), so physical addresses cannot be placed on nodes",
            NoNuma::NoPhysicalAddresses => "the samples carry no physical address (PHYS_ADDR), and a capture read offline cannot ask the kernel which node a page is on",
            NoNuma::NoTopology => "the capture records no NUMA topology and this machine's sysfs has none",
            NoNuma::PageTable(why) => why,
        })
    }
}
