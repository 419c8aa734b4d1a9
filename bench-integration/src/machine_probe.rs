//! The machine probe as the runner times it: a fixed reference loop timed beside the
//! cases of every run, so a comparison with a saved baseline can tell a changed machine
//! from changed code.
//!
//! The loop is the same code in every build (integer arithmetic on registers: no memory
//! traffic, no allocation), so where its time per iteration moved between the baseline's
//! run and this one, the machine's speed moved, and every verdict of that comparison is
//! marked rather than trusted.

pub use sparkles_results::machine_probe::*;

use crate::suite::Case;

/// The probe's name, as progress lines and errors show it; never a row.
pub(crate) const NAME: &str = "sparkles/machine_probe";

/// The probe as a case the runner drives like any other; what its thread used while it
/// ran (its involuntary switches: [`crate::busy`]) is sent on `usage` when it ends.
pub(crate) fn case(usage: std::sync::mpsc::Sender<crate::busy::ThreadUsage>) -> Case {
    Case {
        name: NAME.to_string(),
        settings: crate::suite::Settings::default(),
        twin: None,
        threads: None,
        body: Box::new(move |b| {
            let before = crate::busy::ThreadUsage::now();
            let mut seed = 0u64;
            b.iter(|| {
                seed = reference_loop(std::hint::black_box(seed));
                seed
            });
            if let Some(used) = crate::busy::ThreadUsage::now()
                .zip(before)
                .map(|(a, b)| a.since(b))
            {
                let _ = usage.send(used);
            }
            Ok(())
        }),
    }
}
