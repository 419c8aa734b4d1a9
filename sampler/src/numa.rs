//! Live NUMA placement: asking the kernel (`move_pages(2)` with no target nodes) which
//! node holds each sampled data page while the sampled processes run. The table and the
//! topology it is read against live in `sparkles_perf_data` (`pages`, `topology`).

use sparkles_perf_data::pages::PageNodes;

/// This machine's page size.
pub fn page_size() -> u64 {
    crate::sys::page_size()
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
            let pages: Vec<u64> = chunk.iter().map(|&(_, a)| table.page(a)).collect();
            let mut status = vec![i32::MIN; pages.len()];
            let failed = crate::sys::move_pages(pid as i32, &pages, &mut status)
                .err()
                .map(|e| -crate::sys::errno_of(&e));
            for (&(_, a), st) in chunk.iter().zip(status) {
                table.answer(pid, a, failed.unwrap_or(st));
            }
        }
    }
    pending.clear();
}
