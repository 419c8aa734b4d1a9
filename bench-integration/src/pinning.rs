//! One CPU for the threads the timing pass holds against each other in a round: a case
//! and its group's reference ([`crate::suite::Group::reference`]) run on threads of
//! their own, and two threads of one process running the very same code on this
//! machine's two CPUs read up to 7% apart (one CPU's cache or clock against the
//! other's; about 1% pinned to one). Each round pins them all to one CPU, a CPU a round
//! in turn, and the pass ends with them free again.

/// The calling thread's kernel id, where threads can be pinned (Linux).
pub(crate) fn this_thread() -> Option<i32> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions.
        Some(unsafe { libc::gettid() })
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The CPUs this process may run on, in order (empty where unknown or not Linux).
pub(crate) fn allowed_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a zeroed cpu_set_t is an empty set; the kernel writes at most its size.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let ok =
            unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) }
                == 0;
        if !ok {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: cpu is below CPU_SETSIZE.
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .collect()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Vec::new()
    }
}

/// Lets thread `thread` run on `cpus` only; whether the kernel took it.
pub(crate) fn pin(thread: i32, cpus: &[usize]) -> bool {
    #[cfg(target_os = "linux")]
    {
        if cpus.is_empty() {
            return false;
        }
        // SAFETY: as in allowed_cpus; every cpu set is below CPU_SETSIZE.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        unsafe {
            libc::sched_setaffinity(thread, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (thread, cpus);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_pinned_runs_on_that_cpu_only() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        let last = *cpus.last().unwrap_or(&0);
        let (tx, rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(this_thread()).ok();
            go_rx.recv().ok();
            // SAFETY: sched_getcpu has no preconditions.
            let on = unsafe { libc::sched_getcpu() };
            (on, allowed_cpus())
        });
        let id = rx.recv().ok().flatten();
        let Some(id) = id else {
            panic!("no thread id on Linux");
        };
        assert!(pin(id, &[last]));
        go_tx.send(()).ok();
        let (on, allowed) = t.join().unwrap_or((-1, Vec::new()));
        assert_eq!(on, last as i32);
        assert_eq!(allowed, [last]);
    }
}
