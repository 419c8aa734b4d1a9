//! The perf_event edge on Linux: perf-event2 opens, enables and maps; libc reads and
//! polls.

use std::io;
use std::os::fd::AsRawFd;

use perf_event::events::Software;
use perf_event::Builder;
use perf_event_open_sys::bindings::perf_event_attr;
use sparkles_perf_data::attr::Attr;

use super::abi::{CountAndTime, OpenTarget};

/// The kernel's `perf_event_attr` for `attr`: perf.data stores the attr as the kernel
/// reads it (little-endian, which `build.rs` makes this build), so its bytes are copied
/// in whole, zero past what perf.data's layout holds, with the size of this crate's
/// struct.
fn kernel_attr(attr: &Attr) -> perf_event_attr {
    let size = std::mem::size_of::<perf_event_attr>();
    let mut bytes = attr.to_bytes();
    bytes.resize(size.max(bytes.len()), 0);
    // SAFETY: perf_event_attr is plain integers (repr(C), no padding invariants), and
    // `bytes` holds at least size_of::<perf_event_attr>() bytes.
    let mut raw: perf_event_attr =
        unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<perf_event_attr>()) };
    raw.size = size as u32;
    raw
}

/// An open perf event.
#[derive(Debug)]
pub(crate) struct Counter(perf_event::Counter);

impl Counter {
    /// `perf_event_open` of exactly `attr` for `target`, in `group` where given (as its
    /// leader otherwise), close-on-exec.
    pub(crate) fn open(
        attr: &Attr,
        target: OpenTarget,
        group: Option<&mut Counter>,
    ) -> io::Result<Counter> {
        let mut b = Builder::new(Software::DUMMY);
        *b.attrs_mut() = kernel_attr(attr);
        match target {
            OpenTarget::ThisProcess => b.observe_self().any_cpu(),
            OpenTarget::Cpu(cpu) => b.any_pid().one_cpu(cpu),
            OpenTarget::Task { tid, cpu } => {
                b.observe_pid(tid);
                match cpu {
                    Some(c) => b.one_cpu(c),
                    None => b.any_cpu(),
                }
            }
        };
        match group {
            Some(leader) => b.build_with_group(&mut leader.0),
            None => b.build(),
        }
        .map(Counter)
    }

    /// The kernel's id of the event (`PERF_EVENT_IOC_ID`).
    pub(crate) fn id(&self) -> u64 {
        self.0.id()
    }

    pub(crate) fn enable(&mut self) -> io::Result<()> {
        self.0.enable()
    }

    pub(crate) fn disable(&mut self) -> io::Result<()> {
        self.0.disable()
    }

    /// Enables the group it leads (one ioctl).
    pub(crate) fn enable_group(&mut self) -> io::Result<()> {
        self.0.enable_group()
    }

    /// Disables the group it leads (one ioctl).
    pub(crate) fn disable_group(&mut self) -> io::Result<()> {
        self.0.disable_group()
    }

    /// `read(2)` of the counter (the whole group with `PERF_FORMAT_GROUP`) into `buf`.
    pub(crate) fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: reading into a buffer we own, of its length, from an open perf fd.
        let n = unsafe { libc::read(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// Its value and times (its attr's read_format must have both times, and no group).
    pub(crate) fn count_and_time(&mut self) -> io::Result<CountAndTime> {
        let r = self.0.read_count_and_time()?;
        Ok(CountAndTime {
            count: r.count,
            time_enabled: r.time_enabled,
            time_running: r.time_running,
        })
    }

    /// Its first `len` bytes of mmap, read-only: the page the kernel keeps the index,
    /// offset and capabilities of a self-monitoring read in.
    pub(crate) fn map_page(&self, len: usize) -> io::Result<memmap2::MmapRaw> {
        memmap2::MmapOptions::new()
            .len(len)
            .map_raw_read_only(self.0.as_raw_fd())
    }

    /// Maps its ring buffer of `data_bytes` (a power of two of pages) after the control
    /// page.
    pub(crate) fn into_ring(self, data_bytes: usize) -> io::Result<Ring> {
        Ok(Ring {
            sampler: self.0.sampled(data_bytes)?,
            scratch: Vec::with_capacity(16 * 1024),
        })
    }

    /// Sends its records into `ring`'s buffer (`PERF_EVENT_IOC_SET_OUTPUT`).
    pub(crate) fn write_into(&self, ring: &Ring) -> io::Result<()> {
        // SAFETY: both are open perf_event file descriptors.
        let rc = unsafe {
            perf_event_open_sys::ioctls::SET_OUTPUT(
                self.0.as_raw_fd(),
                ring.sampler.as_counter().as_raw_fd(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// An event with its mmap ring buffer.
pub(crate) struct Ring {
    sampler: perf_event::Sampler,
    /// A record split by the end of the ring, joined.
    scratch: Vec<u8>,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("counter", self.sampler.as_counter())
            .finish_non_exhaustive()
    }
}

impl Ring {
    pub(crate) fn enable(&mut self) -> io::Result<()> {
        self.sampler.as_counter_mut().enable()
    }

    pub(crate) fn disable(&mut self) -> io::Result<()> {
        self.sampler.as_counter_mut().disable()
    }

    /// Hands every record now in the buffer to `f` as `(type, misc, body)` (the body
    /// after the 8-byte header), in order, and frees its space.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(u32, u16, &[u8])) {
        while let Some(record) = self.sampler.next_record() {
            let (type_, misc) = (record.ty(), record.misc());
            match record.data() {
                [one] => f(type_, misc, one),
                parts => {
                    self.scratch.clear();
                    for part in parts {
                        self.scratch.extend_from_slice(part);
                    }
                    f(type_, misc, &self.scratch);
                }
            }
        }
    }
}

/// Waiting for ring buffers to fill.
#[derive(Debug)]
pub(crate) struct Poll(Vec<libc::pollfd>);

impl Poll {
    pub(crate) fn new(rings: &[Ring]) -> Poll {
        Poll(
            rings
                .iter()
                .map(|r| libc::pollfd {
                    fd: r.sampler.as_counter().as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                })
                .collect(),
        )
    }

    /// Waits up to `timeout_ms` for a buffer to pass its wakeup mark. A buffer whose task
    /// exited reports POLLHUP for good: it is not polled again, or every poll would
    /// return at once.
    pub(crate) fn wait(&mut self, timeout_ms: i32) {
        // SAFETY: a valid array of pollfd of the given length.
        unsafe {
            libc::poll(
                self.0.as_mut_ptr(),
                self.0.len() as libc::nfds_t,
                timeout_ms,
            )
        };
        for fd in &mut self.0 {
            if fd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
                fd.fd = -1;
            }
            fd.revents = 0;
        }
    }
}
