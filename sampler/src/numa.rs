//! Live NUMA placement: asking the kernel (`move_pages(2)` with no target nodes) which
//! node holds each sampled data page while the sampled processes run. The table and the
//! topology it is read against live in `sparkles_perf_data` (`pages`, `topology`).

use sparkles_perf_data::pages::PageNodes;

/// This machine's page size.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|&s| s > 0).unwrap_or(4096)
}

/// An empty table for `pid` (and the processes it starts), keyed by this machine's pages.
pub fn page_table(pid: u32) -> PageNodes {
    PageNodes::new(pid, page_size())
}

/// Asks the kernel about `(pid, address)` pages, one call per process and batch, and
/// records each answer (a node, or a negative errno) in `table`.
pub fn ask(table: &mut PageNodes, pending: &mut Vec<(u32, u64)>) {
    pending.sort_unstable();
    for run in pending.chunk_by(|a, b| a.0 == b.0) {
        let pid = run[0].0;
        for chunk in run.chunks(4096) {
            let pages: Vec<*mut libc::c_void> = chunk
                .iter()
                .map(|&(_, a)| table.page(a) as *mut libc::c_void)
                .collect();
            let mut status = vec![i32::MIN; pages.len()];
            // SAFETY: move_pages with a null node array only reads `pages` and writes
            // `status`, both of `pages.len()` entries that outlive the call.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_move_pages,
                    pid as libc::pid_t,
                    pages.len() as libc::c_ulong,
                    pages.as_ptr(),
                    std::ptr::null::<libc::c_int>(),
                    status.as_mut_ptr(),
                    0 as libc::c_int,
                )
            };
            let failed = (rc != 0).then(|| {
                -std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EINVAL)
            });
            for (&(_, a), st) in chunk.iter().zip(status) {
                table.answer(pid, a, failed.unwrap_or(st));
            }
        }
    }
    pending.clear();
}
