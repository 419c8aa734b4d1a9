//! The coordinator of a side-by-side comparison: `k` serve processes of the base and `k`
//! of the variant started together, each with a layout of its own (a random pad in its
//! environment moves its stack; the kernel randomizes the rest, a `HashMap` its seed),
//! their cases matched, each case set up in all of them, calibrated once and warmed in
//! every one (no process is special: the one that calibrated takes the same warm-up
//! sample as the rest), then rounds taken until the time budget is spent, one sample of
//! every process a round, the order turned each round so each process is as often early
//! as late. What the rounds mean is [`paired`](crate::paired)'s.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::client::Served;
use crate::error::Error;
use crate::paired::Round;

/// The environment variable whose random length moves each process's stack (its value is
/// never read).
pub const LAYOUT_PAD: &str = "SPARKLES_LAYOUT_PAD";

/// One side's bench executable and the folder it runs in (its package's, as `cargo bench`
/// runs it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Executable {
    /// The executable.
    pub path: PathBuf,
    /// Where it runs.
    pub dir: PathBuf,
}

/// The processes of both sides.
#[derive(Debug)]
pub struct Sides {
    /// The base's processes (base A1, A2, …).
    pub base: Vec<Served>,
    /// The variant's (variant B1, B2, …).
    pub variant: Vec<Served>,
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
    /// Iterations a sample takes (calibrated on A1, the same in every process).
    pub iterations: u64,
    /// Each round's per-iteration ns of every process.
    pub rounds: Vec<Round>,
}

/// A pad of 0 to 4095 bytes, different for each process started.
fn layout_pad(salt: usize) -> String {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ (u64::from(std::process::id()) << 20)
        ^ salt as u64;
    "x".repeat(fastrand::Rng::with_seed(seed).usize(..4096))
}

impl Sides {
    /// Starts `per_side` processes of `base` and of `variant` in serve mode with `args`,
    /// each one's output for people in `logs/a1.log`, `a2.log`, …, `b1.log`, ….
    pub fn start(
        base: &Executable,
        variant: &Executable,
        per_side: usize,
        args: &[String],
        logs: &Path,
    ) -> Result<Sides, Error> {
        let per_side = per_side.max(1);
        let start = |side: &str, letter: char, exe: &Executable, i: usize| {
            let pad = layout_pad(i + if letter == 'b' { 1000 } else { 0 });
            Served::start_with(
                &format!("{side} {}{}", letter.to_ascii_uppercase(), i + 1),
                &exe.path,
                &exe.dir,
                args,
                &[(LAYOUT_PAD, pad)],
                &logs.join(format!("{letter}{}.log", i + 1)),
            )
        };
        // Started in turn, A1 B1 A2 B2 …: neither side's processes all first.
        let mut sides = Sides {
            base: Vec::new(),
            variant: Vec::new(),
        };
        for i in 0..per_side {
            sides.base.push(start("base", 'a', base, i)?);
            sides.variant.push(start("variant", 'b', variant, i)?);
        }
        Ok(sides)
    }

    fn all(&mut self) -> impl Iterator<Item = &mut Served> {
        self.base.iter_mut().chain(self.variant.iter_mut())
    }

    /// The cases the first base and the first variant process serve, matched by name.
    pub fn cases(&mut self) -> Result<Matched, Error> {
        let base = self.base[0].list()?;
        let variant = self.variant[0].list()?;
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

    /// Sets `case` up in every process, calibrates it on A1 to samples of about `sample`,
    /// and takes one sample in every process that is thrown away (the warm-up A1's
    /// calibration gave it alone).
    pub fn prepare(&mut self, case: &str, sample: Duration) -> Result<Timed, Error> {
        for s in self.all() {
            s.setup(case)?;
        }
        let calibrated = self.base[0].calibrate(case, sample)?;
        if calibrated.iterations == 0 {
            return Err(Error::Serve(format!(
                "base A1: calibrate {case}: no iteration count in its answer"
            )));
        }
        for s in self.all() {
            s.sample(case, calibrated.iterations)?;
        }
        Ok(Timed {
            case: case.to_string(),
            iterations: calibrated.iterations,
            rounds: Vec::new(),
        })
    }

    /// Takes rounds of every case until `budget` is spent (two at least), each process's
    /// sample of a round the fastest of `per_round`. The order within a round turns: the
    /// processes interleaved (A1 B1 A2 B2 …), started one further along each round and
    /// walked backwards every other round.
    pub fn take_rounds(
        &mut self,
        cases: &mut [Timed],
        budget: Duration,
        per_round: u32,
    ) -> Result<(), Error> {
        let started = Instant::now();
        let mut round = 0usize;
        let k = self.base.len();
        // (side, index): side 0 the base, 1 the variant.
        let interleaved: Vec<(usize, usize)> = (0..k).flat_map(|i| [(0, i), (1, i)]).collect();
        while !cases.is_empty() && (started.elapsed() < budget || round < 2) {
            let mut order = interleaved.clone();
            order.rotate_left(round % interleaved.len());
            if round % 2 == 1 {
                order.reverse();
            }
            for c in cases.iter_mut() {
                let mut r = Round {
                    base: vec![0.0; k],
                    variant: vec![0.0; self.variant.len()],
                };
                for &(side, i) in &order {
                    let (s, slot) = if side == 0 {
                        (&mut self.base[i], &mut r.base[i])
                    } else {
                        (&mut self.variant[i], &mut r.variant[i])
                    };
                    let mut fastest = u64::MAX;
                    for _ in 0..per_round {
                        fastest = fastest.min(s.sample(&c.case, c.iterations)?);
                    }
                    *slot = fastest as f64 / c.iterations as f64;
                }
                c.rounds.push(r);
            }
            round += 1;
        }
        Ok(())
    }

    /// Finishes `case` in every process (what a process answers is not waited on for
    /// more).
    pub fn finish(&mut self, case: &str) {
        for s in self.all() {
            let _ = s.finish(case);
        }
    }

    /// Asks every process to quit and waits for them.
    pub fn quit(self) {
        for s in self.base.into_iter().chain(self.variant) {
            s.quit();
        }
    }
}
