//! Thread sweeps (`Suite::case_threads`): the rows of one sweep, `NAME/threads=N`, read
//! together, how the time per call per thread and the throughput of all threads go with
//! N, for the console and the run report.

use crate::row::BenchRow;

/// One thread count of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    pub threads: usize,
    /// The median time per iteration per thread, ns.
    pub per_thread_ns: f64,
    /// The throughput of all threads against the sweep's first count's (its calls per
    /// second over the first's).
    pub scaling: f64,
}

/// A sweep's rows, by thread count as registered.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The name without `/threads=N`.
    pub name: String,
    pub points: Vec<SweepPoint>,
}

impl Sweep {
    /// `sync/counter: threads 1 2.75 µs, 2 5.60 µs a call per thread; all threads' calls 1.00x, 0.98x`.
    pub fn line(&self) -> String {
        let times: Vec<String> = self
            .points
            .iter()
            .map(|p| format!("{} {}", p.threads, crate::units::format_ns(p.per_thread_ns)))
            .collect();
        let scaling: Vec<String> = self
            .points
            .iter()
            .map(|p| format!("{:.2}x", p.scaling))
            .collect();
        format!(
            "{}: threads {} a call per thread; all threads' throughput {}",
            self.name,
            times.join(", "),
            scaling.join(", ")
        )
    }
}

/// The sweeps among `rows` (rows carrying `threads` and named `NAME/threads=N`), each
/// with the points whose timing is known, in the rows' order; a sweep of fewer than two
/// such points is none.
pub fn sweeps(rows: &[BenchRow]) -> Vec<Sweep> {
    let mut out: Vec<Sweep> = Vec::new();
    for row in rows {
        let (Some(threads), Some(timing)) = (row.threads, row.timing.as_ref()) else {
            continue;
        };
        let Some(name) = row.case.strip_suffix(&format!("/threads={threads}")) else {
            continue;
        };
        let per_thread_ns = timing.summary.median;
        if per_thread_ns.is_nan() || per_thread_ns <= 0.0 {
            continue;
        }
        let point = SweepPoint {
            threads,
            per_thread_ns,
            scaling: 1.0,
        };
        match out.iter_mut().find(|s| s.name == name) {
            Some(sweep) => sweep.points.push(point),
            None => out.push(Sweep {
                name: name.to_string(),
                points: vec![point],
            }),
        }
    }
    out.retain(|s| s.points.len() >= 2);
    for sweep in &mut out {
        let first = &sweep.points[0];
        let base = first.threads as f64 / first.per_thread_ns;
        for p in &mut sweep.points {
            p.scaling = p.threads as f64 / p.per_thread_ns / base;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(case: &str, threads: Option<usize>, ns: f64) -> BenchRow {
        let mut r = crate::row::ok_row(case, vec![ns, ns, ns]);
        r.threads = threads;
        r
    }

    #[test]
    fn a_sweeps_rows_read_together_with_the_throughput_of_all_threads() {
        let rows = [
            row("lock/threads=1", Some(1), 100.0),
            row("own/threads=1", Some(1), 50.0),
            row("lock/threads=2", Some(2), 200.0),
            row("plain", None, 10.0),
            row("own/threads=4", Some(4), 50.0),
            row("alone/threads=2", Some(2), 5.0),
        ];
        let s = sweeps(&rows);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0].name, "lock");
        assert_eq!(
            s[0].points.iter().map(|p| p.threads).collect::<Vec<_>>(),
            [1, 2]
        );
        // Twice the time per thread at twice the threads: no more calls in all.
        assert!((s[0].points[1].scaling - 1.0).abs() < 1e-9);
        // The same time per thread at four threads: four times the calls.
        assert_eq!(s[1].name, "own");
        assert!((s[1].points[1].scaling - 4.0).abs() < 1e-9);
        assert_eq!(
            s[0].line(),
            "lock: threads 1 100 ns, 2 200 ns a call per thread; all threads' throughput 1.00x, 1.00x"
        );
    }
}
