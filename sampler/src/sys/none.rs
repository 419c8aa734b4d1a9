//! The perf_event edge where the build has none (off Linux, or without the `perf`
//! feature): nothing opens, so no [`Counter`] or [`Ring`] ever exists; opening says
//! [`super::UNAVAILABLE`].

use std::io;

use sparkles_perf_data::attr::Attr;

use super::abi::{unsupported, CountAndTime, OpenTarget};

/// An open perf event: none can be, here.
#[derive(Debug)]
pub(crate) enum Counter {}

impl Counter {
    /// Never opens: says why.
    pub(crate) fn open(
        _attr: &Attr,
        _target: OpenTarget,
        _group: Option<&mut Counter>,
    ) -> io::Result<Counter> {
        Err(unsupported())
    }

    pub(crate) fn id(&self) -> u64 {
        match *self {}
    }

    pub(crate) fn enable(&mut self) -> io::Result<()> {
        match *self {}
    }

    pub(crate) fn disable(&mut self) -> io::Result<()> {
        match *self {}
    }

    pub(crate) fn enable_group(&mut self) -> io::Result<()> {
        match *self {}
    }

    pub(crate) fn disable_group(&mut self) -> io::Result<()> {
        match *self {}
    }

    pub(crate) fn read(&self, _buf: &mut [u8]) -> io::Result<usize> {
        match *self {}
    }

    pub(crate) fn count_and_time(&mut self) -> io::Result<CountAndTime> {
        match *self {}
    }

    pub(crate) fn map_page(&self, _len: usize) -> io::Result<memmap2::MmapRaw> {
        match *self {}
    }

    pub(crate) fn into_ring(self, _data_bytes: usize) -> io::Result<Ring> {
        match self {}
    }

    pub(crate) fn write_into(&self, _ring: &Ring) -> io::Result<()> {
        match *self {}
    }
}

/// A ring buffer: none can be, here.
#[derive(Debug)]
pub(crate) enum Ring {}

impl Ring {
    pub(crate) fn enable(&mut self) -> io::Result<()> {
        match *self {}
    }

    pub(crate) fn disable(&mut self) -> io::Result<()> {
        match *self {}
    }

    pub(crate) fn drain(&mut self, _f: impl FnMut(u32, u16, &[u8])) {
        match *self {}
    }
}

/// Waiting on ring buffers: there are none.
#[derive(Debug)]
pub(crate) struct Poll;

impl Poll {
    pub(crate) fn new(_rings: &[Ring]) -> Poll {
        Poll
    }

    pub(crate) fn wait(&mut self, timeout_ms: i32) {
        std::thread::sleep(std::time::Duration::from_millis(
            u64::try_from(timeout_ms).unwrap_or(0),
        ));
    }
}
