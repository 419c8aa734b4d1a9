//! The valgrind program this run would use, or why there is none; the tier's metrics and
//! its line in `--capabilities`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use sparkles_results::metric::{Availability, MetricClass, MetricDescriptor, MetricFormat, Source};

use super::client::request;

/// Why the tier is absent here: valgrind not found, or not supported on this platform.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Absent(pub String);

/// The valgrind program to run, where it is not `valgrind` on `PATH` (a path, or a name
/// looked up on `PATH`).
pub const PROGRAM_ENV: &str = "SPARKLES_VALGRIND";

/// The valgrind program this run would use, or why there is none.
pub fn program() -> Result<PathBuf, Absent> {
    find_program(
        std::env::var_os(PROGRAM_ENV).as_deref(),
        std::env::var_os("PATH").as_deref(),
    )
}

/// valgrind as [`PROGRAM_ENV`] names it (`named`), else `valgrind` on `path`.
pub(super) fn find_program(named: Option<&OsStr>, path: Option<&OsStr>) -> Result<PathBuf, Absent> {
    if !request::SUPPORTED {
        return Err(Absent(format!(
            "valgrind client requests are implemented for x86_64 and aarch64 Linux only (this is {} {})",
            std::env::consts::ARCH,
            std::env::consts::OS
        )));
    }
    let (name, from) = match named {
        Some(n) if !n.is_empty() => (PathBuf::from(n), PROGRAM_ENV),
        _ => (PathBuf::from("valgrind"), "PATH"),
    };
    if name.components().count() > 1 {
        return if executable(&name) {
            Ok(name)
        } else {
            Err(Absent(format!(
                "{} (from {from}) is not an executable file",
                name.display()
            )))
        };
    }
    path.into_iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(&name))
        .find(|p| executable(p))
        .ok_or_else(|| {
            Absent(format!(
                "{} not found on PATH (install valgrind: apt-get install valgrind; or name it in {PROGRAM_ENV})",
                name.display()
            ))
        })
}

#[cfg(unix)]
fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn executable(p: &Path) -> bool {
    p.is_file()
}

/// The tier as `--capabilities` lists it.
pub fn capability() -> String {
    match program() {
        Ok(p) => format!(
            "valgrind (--instructions): available: {}: exact instruction counts and simulated cache and branch misses per iteration, each case in a child under callgrind",
            p.display()
        ),
        Err(why) => format!("valgrind (--instructions): absent: {why}"),
    }
}

/// What callgrind simulates beside its instruction count (`--valgrind-sim`): each
/// simulation slows the count, neither changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Simulation {
    /// The caches: metrics `valgrind.l1_misses`, `valgrind.ll_misses` and
    /// `valgrind.estimated_cycles`.
    pub cache: bool,
    /// The branch predictor: `valgrind.branch_misses`.
    pub branch: bool,
}

impl Default for Simulation {
    /// Both, as gungraun runs callgrind.
    fn default() -> Simulation {
        Simulation {
            cache: true,
            branch: true,
        }
    }
}

impl Simulation {
    /// `--valgrind-sim`'s value: `cache`, `branch` or both, comma-separated, or `none`
    /// alone (beside another name it would say two things at once).
    pub fn parse(text: &str) -> Result<Simulation, String> {
        let mut simulation = Simulation {
            cache: false,
            branch: false,
        };
        let names: Vec<&str> = text.split(',').map(str::trim).collect();
        for name in &names {
            match *name {
                "cache" => simulation.cache = true,
                "branch" => simulation.branch = true,
                "none" if names.len() == 1 => {}
                "none" => return Err(format!("'{text}': 'none' stands alone")),
                other => {
                    return Err(format!(
                        "'{other}' is not a simulation (cache, branch, or none)"
                    ))
                }
            }
        }
        Ok(simulation)
    }
}

/// The tier's metrics, available where [`program`] finds valgrind and `simulation`
/// simulates what they count.
pub fn descriptors(simulation: Simulation) -> Vec<MetricDescriptor> {
    let found = match program() {
        Ok(_) => Availability::Available,
        Err(why) => Availability::Unavailable(why.0),
    };
    descriptors_where(found, simulation)
}

/// The tier's metrics where valgrind is `found` (or why not).
pub(super) fn descriptors_where(
    found: Availability,
    simulation: Simulation,
) -> Vec<MetricDescriptor> {
    let simulated = |on: bool, what: &str| match (&found, on) {
        (Availability::Available, false) => Availability::Unavailable(format!(
            "not simulated: --valgrind-sim leaves the {what} simulation out"
        )),
        _ => found.clone(),
    };
    let cache = simulated(simulation.cache, "cache");
    let branch = simulated(simulation.branch, "branch");
    let d = |id: &'static str,
             header: &'static str,
             description: &'static str,
             class,
             availability: &Availability| MetricDescriptor {
        id: id.into(),
        header: header.into(),
        description: description.into(),
        format: MetricFormat::Count,
        class,
        source: Source::Valgrind,
        default_visible: false,
        availability: availability.clone(),
    };
    vec![
        d(
            "valgrind.instructions",
            "vg.instr",
            "instructions executed per iteration, counted exactly by callgrind (Ir)",
            MetricClass::Quantitative,
            &found,
        ),
        d(
            "valgrind.l1_misses",
            "vg.L1miss",
            "simulated L1 misses per iteration, instruction and data (I1mr + D1mr + D1mw; the cache model is not this machine's)",
            MetricClass::Diagnostic,
            &cache,
        ),
        d(
            "valgrind.ll_misses",
            "vg.LLmiss",
            "simulated last-level cache misses per iteration (ILmr + DLmr + DLmw)",
            MetricClass::Diagnostic,
            &cache,
        ),
        d(
            "valgrind.branch_misses",
            "vg.brmiss",
            "simulated branch mispredictions per iteration, conditional and indirect (Bcm + Bim)",
            MetricClass::Diagnostic,
            &branch,
        ),
        d(
            "valgrind.estimated_cycles",
            "vg.est.cyc",
            "L1 hits + 5 x LL hits + 35 x RAM accesses per iteration, from the simulated caches (gungraun's estimate)",
            MetricClass::Diagnostic,
            &cache,
        ),
    ]
}
