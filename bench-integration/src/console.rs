//! What a measuring run prints on the console: the header line, the table, the comparison
//! line, the file it saved. To standard output, or to standard error while the JSON rows
//! or an export go to standard output (`--bench-json -`, `--bench-format` without
//! `--bench-out`).

use std::io::{IsTerminal, Write};

use crate::args::{ColorChoice, HarnessArgs, SampleOrder};
use crate::catalog::{Selection, Source};
use crate::runner::Protocol;
use sparkles_results::baseline::Baseline;
use sparkles_results::error::Error;
use sparkles_results::row::BenchRow;
use sparkles_results::stats::Verdict;
use sparkles_results::table;

/// A failed write to the console.
pub(crate) fn write_error(e: std::io::Error) -> Error {
    Error::io("standard output", e)
}

/// Whether to colour: as asked, or where the output is a terminal and NO_COLOR is unset.
pub(crate) fn use_colour(choice: ColorChoice, terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => terminal && std::env::var_os("NO_COLOR").is_none(),
    }
}

/// The console of a measuring run.
pub(crate) struct Console {
    out: Box<dyn Write>,
    terminal: bool,
}

impl Console {
    pub(crate) fn new(args: &HarnessArgs) -> Console {
        let stdout_taken = args.bench_json.as_deref() == Some("-")
            || (args.bench_format.is_some() && args.bench_out.is_none());
        if stdout_taken {
            Console {
                out: Box::new(std::io::stderr()),
                terminal: std::io::stderr().is_terminal(),
            }
        } else {
            Console {
                out: Box::new(std::io::stdout()),
                terminal: std::io::stdout().is_terminal(),
            }
        }
    }

    /// One line.
    pub(crate) fn line(&mut self, text: std::fmt::Arguments<'_>) -> Result<(), Error> {
        writeln!(self.out, "{text}").map_err(write_error)
    }

    /// `sparkles: suite S, N cases (M filtered out), K samples of ≥ T (order)…`.
    pub(crate) fn header(
        &mut self,
        suite: &str,
        cases: usize,
        filtered_out: usize,
        own_settings: usize,
        protocol: &Protocol,
        args: &HarnessArgs,
    ) -> Result<(), Error> {
        let wide = protocol.suite_wide();
        self.line(format_args!(
            "sparkles: suite {suite}, {cases} cases ({filtered_out} filtered out), {} samples of ≥ {:?}{} ({}){}",
            wide.samples,
            wide.sample_time,
            match own_settings {
                0 => String::new(),
                n => format!(
                    " ({n} case{} with settings of {}: `--list` shows them)",
                    if n == 1 { "" } else { "s" },
                    if n == 1 { "its own" } else { "their own" }
                ),
            },
            match args.sample_order {
                SampleOrder::RoundRobin => "round-robin",
                SampleOrder::Blocked => "blocked",
            },
            match (protocol.count_plan.is_some(), protocol.count_brackets) {
                (false, _) => String::new(),
                (true, 1) => ", then one counting pass".to_string(),
                (true, n) => format!(", then one counting pass in {n} brackets"),
            }
        ))
    }

    /// The table: a flag-selected tier's headline columns (all of them are in the
    /// JSON); `--metrics` shows exactly what it names.
    pub(crate) fn results(
        &mut self,
        rows: &[BenchRow],
        selection: &Selection,
        args: &HarnessArgs,
    ) -> Result<(), Error> {
        let columns: Vec<_> = selection
            .metrics()
            .iter()
            .filter(|m| selection.is_filtered() || m.source != Source::Perf || m.default_visible)
            .cloned()
            .collect();
        let colour = use_colour(args.color, self.terminal);
        write!(self.out, "{}", table::render(rows, &columns, colour)).map_err(write_error)
    }

    /// `compared N of M cases with BASELINE: …`.
    pub(crate) fn comparison(
        &mut self,
        rows: &[BenchRow],
        base: &Baseline,
        compared: usize,
        method: &str,
    ) -> Result<(), Error> {
        let count = |v: Verdict| {
            rows.iter()
                .filter(|r| r.comparison.as_ref().map(|c| c.verdict) == Some(v))
                .count()
        };
        self.line(format_args!(
            "compared {compared} of {} cases with {} ({}): {} regressions, {} improvements, {} inside the noise, {} underpowered",
            rows.len(),
            base.path.display(),
            method.split(';').next().unwrap_or(method).split(':').next().unwrap_or(method),
            count(Verdict::Regression),
            count(Verdict::Improvement),
            count(Verdict::InsideTheNoise),
            count(Verdict::Underpowered),
        ))
    }

    /// `thread sweeps:` and a line a sweep; nothing where there is none.
    pub(crate) fn sweeps(&mut self, rows: &[BenchRow]) -> Result<(), Error> {
        let sweeps = sparkles_results::sweep::sweeps(rows);
        if sweeps.is_empty() {
            return Ok(());
        }
        self.line(format_args!(
            "thread sweeps (the body on N threads at once; time per call per thread, throughput of all threads against the first count's):"
        ))?;
        for sweep in &sweeps {
            self.line(format_args!("  {}", sweep.line()))?;
        }
        Ok(())
    }

    /// `against their group's reference:` and a line a case held to one (the reference's
    /// own line its twin's); nothing where no case was.
    pub(crate) fn references(&mut self, rows: &[BenchRow]) -> Result<(), Error> {
        if rows.iter().all(|r| r.reference.is_none()) {
            return Ok(());
        }
        self.line(format_args!(
            "against their group's reference (in the same rounds; the reference's twin, the same code on another thread, is the null):"
        ))?;
        let width = rows
            .iter()
            .map(|r| r.case.chars().count())
            .max()
            .unwrap_or(0);
        for row in rows {
            let Some(r) = &row.reference else {
                continue;
            };
            if r.case == row.case {
                self.line(format_args!(
                    "  {:width$}  reference; its twin {:.3}x{}",
                    row.case,
                    r.null_ratio,
                    sparkles_results::paired::ratio_interval(r.null_ci_low, r.null_ci_high)
                        .map(|i| format!(" {i}"))
                        .unwrap_or_default(),
                ))?;
            } else {
                self.line(format_args!("  {:width$}  {}", row.case, r.line()))?;
            }
        }
        Ok(())
    }
}
