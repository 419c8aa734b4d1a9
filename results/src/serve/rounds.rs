//! The coordinator of a side-by-side comparison: three serve processes (base A1, the
//! variant B, base A2) started together, their cases matched, each case set up in all
//! three and calibrated once, then rounds taken until the time budget is spent, A1 B A2
//! and A2 B A1 in turn so each base process is as often first as last. What the rounds
//! mean is [`paired`](crate::paired)'s.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::client::Served;
use crate::error::Error;
use crate::paired::Round;

/// One side's bench executable and the folder it runs in (its package's, as `cargo bench`
/// runs it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Executable {
    /// The executable.
    pub path: PathBuf,
    /// Where it runs.
    pub dir: PathBuf,
}

/// The three processes.
#[derive(Debug)]
pub struct Trio {
    /// The first base process.
    pub a1: Served,
    /// The variant's.
    pub b: Served,
    /// The second base process.
    pub a2: Served,
}

/// The cases both sides serve, and those only one does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Matched {
    /// In both, in the base's order.
    pub common: Vec<String>,
    /// Only in the base.
    pub only_base: Vec<String>,
    /// Only in the variant.
    pub only_variant: Vec<String>,
}

/// One case's timing: its calibrated iterations and the rounds taken so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Timed {
    /// The case.
    pub case: String,
    /// Iterations a sample takes (calibrated on A1, the same in all three).
    pub iterations: u64,
    /// Each round's per-iteration ns of the three processes.
    pub rounds: Vec<Round>,
}

impl Trio {
    /// Starts `base` twice and `variant` once in serve mode with `args`, each process's
    /// output for people in `logs/a1.log`, `b.log` and `a2.log`.
    pub fn start(
        base: &Executable,
        variant: &Executable,
        args: &[String],
        logs: &Path,
    ) -> Result<Trio, Error> {
        let start = |name: &str, exe: &Executable, log: &str| {
            Served::start(name, &exe.path, &exe.dir, args, &logs.join(log))
        };
        Ok(Trio {
            a1: start("base A1", base, "a1.log")?,
            b: start("variant B", variant, "b.log")?,
            a2: start("base A2", base, "a2.log")?,
        })
    }

    /// The cases A1 and B serve, matched by name.
    pub fn cases(&mut self) -> Result<Matched, Error> {
        let base = self.a1.list()?;
        let variant = self.b.list()?;
        let (common, only_base): (Vec<String>, Vec<String>) =
            base.into_iter().partition(|c| variant.contains(c));
        let only_variant = variant
            .into_iter()
            .filter(|c| !common.contains(c))
            .collect();
        Ok(Matched {
            common,
            only_base,
            only_variant,
        })
    }

    /// Sets `case` up in all three and calibrates it on A1 to samples of about `sample`.
    pub fn prepare(&mut self, case: &str, sample: Duration) -> Result<Timed, Error> {
        for s in [&mut self.a1, &mut self.b, &mut self.a2] {
            s.setup(case)?;
        }
        let calibrated = self.a1.calibrate(case, sample)?;
        if calibrated.iterations == 0 {
            return Err(Error::Serve(format!(
                "base A1: calibrate {case}: no iteration count in its answer"
            )));
        }
        Ok(Timed {
            case: case.to_string(),
            iterations: calibrated.iterations,
            rounds: Vec::new(),
        })
    }

    /// Takes rounds of every case until `budget` is spent (two at least), each process's
    /// sample of a round the fastest of `per_round`.
    pub fn take_rounds(
        &mut self,
        cases: &mut [Timed],
        budget: Duration,
        per_round: u32,
    ) -> Result<(), Error> {
        let started = Instant::now();
        let mut round = 0usize;
        while !cases.is_empty() && (started.elapsed() < budget || round < 2) {
            for c in cases.iter_mut() {
                let take = |s: &mut Served| -> Result<f64, Error> {
                    let mut fastest = u64::MAX;
                    for _ in 0..per_round {
                        fastest = fastest.min(s.sample(&c.case, c.iterations)?);
                    }
                    Ok(fastest as f64 / c.iterations as f64)
                };
                // A1 B A2, then A2 B A1: each base process as often first as last.
                let (base1, variant, base2) = if round.is_multiple_of(2) {
                    let x = take(&mut self.a1)?;
                    let y = take(&mut self.b)?;
                    (x, y, take(&mut self.a2)?)
                } else {
                    let z = take(&mut self.a2)?;
                    let y = take(&mut self.b)?;
                    (take(&mut self.a1)?, y, z)
                };
                c.rounds.push(Round {
                    base1,
                    variant,
                    base2,
                });
            }
            round += 1;
        }
        Ok(())
    }

    /// Finishes `case` in all three (what a process answers is not waited on for more).
    pub fn finish(&mut self, case: &str) {
        for s in [&mut self.a1, &mut self.b, &mut self.a2] {
            let _ = s.finish(case);
        }
    }

    /// Asks all three to quit and waits for them.
    pub fn quit(self) {
        self.a1.quit();
        self.b.quit();
        self.a2.quit();
    }
}
