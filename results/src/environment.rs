//! Where a run was measured: stored with every baseline, compared when one is read.

use std::path::Path;
use std::process::Command;

use serde::{Deserialize, Serialize};

/// The schema name of an environment record.
pub const SCHEMA: &str = "sparkles.environment/1";

/// The machine, toolchain and build a run was measured with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The suite (bench target) the run measured.
    pub suite: String,
    /// `rustc -V` of the toolchain that built the harness.
    pub rustc: String,
    /// Cargo profile directory of the build (`release` under cargo bench).
    pub profile: String,
    /// Optimization level of the build.
    pub opt_level: String,
    /// Whether debug assertions were compiled in.
    pub debug_assertions: bool,
    /// `git rev-parse HEAD` of the current directory, when it is in a repository.
    pub git_commit: Option<String>,
    /// Whether tracked files differed from that commit.
    pub git_dirty: Option<bool>,
    /// The branch checked out; where the checkout is detached (as CI services make it),
    /// the branch the service names (GITHUB_HEAD_REF or GITHUB_REF_NAME,
    /// CI_COMMIT_REF_NAME, BUILDKITE_BRANCH); absent from records written before it was
    /// kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_branch: Option<String>,
    /// CPU model name from /proc/cpuinfo.
    pub cpu_model: Option<String>,
    /// The operating system (`linux`, `macos`, `windows`, …); empty in records written
    /// before it was kept.
    #[serde(default)]
    pub os: String,
    /// Kernel release.
    pub kernel: Option<String>,
    /// cpufreq governor of CPU 0; null where the machine exposes no cpufreq.
    pub governor: Option<String>,
    /// Host name.
    pub hostname: Option<String>,
    /// When the run started, seconds since the Unix epoch.
    pub unix_time: u64,
    /// The machine probe's timing in this run; absent from records written before the
    /// probe was timed, and until the run has measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_probe: Option<crate::machine_probe::MachineProbe>,
    /// The bench executable's identity (its ELF build id, hex), where the harness read
    /// one: runs of one build tell the between-run noise apart from changes of code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bench_build: Option<String>,
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn cpu_model(cpuinfo: &str) -> Option<String> {
    // x86 says "model name"; other architectures name the core differently.
    ["model name", "Model", "cpu model", "Hardware"]
        .iter()
        .find_map(|key| {
            cpuinfo.lines().find_map(|line| {
                let (k, v) = line.split_once(':')?;
                (k.trim() == *key).then(|| v.trim().to_string())
            })
        })
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// uname(2)'s release and node name, where /proc does not say (macOS, the BSDs).
#[cfg(unix)]
fn uname() -> Option<(String, String)> {
    // SAFETY: an all-zero utsname is valid, and uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return None;
    }
    let text = |field: &[libc::c_char]| {
        let bytes: Vec<u8> = field
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    Some((text(&u.release), text(&u.nodename)))
}

/// Windows keeps neither where this reads.
#[cfg(not(unix))]
fn uname() -> Option<(String, String)> {
    None
}

impl Environment {
    /// Reads the environment of this process, for suite `suite`.
    pub fn current(suite: &str) -> Environment {
        let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
        let git_commit = git(&cwd, &["rev-parse", "HEAD"]);
        let git_dirty = git_commit.as_ref().and_then(|_| {
            git(&cwd, &["status", "--porcelain", "--untracked-files=no"]).map(|s| !s.is_empty())
        });
        let git_branch = git_commit.as_ref().and_then(|_| {
            git(&cwd, &["rev-parse", "--abbrev-ref", "HEAD"])
                .filter(|b| b != "HEAD" && !b.is_empty())
                .or_else(|| {
                    [
                        "GITHUB_HEAD_REF",
                        "GITHUB_REF_NAME",
                        "CI_COMMIT_REF_NAME",
                        "BUILDKITE_BRANCH",
                    ]
                    .iter()
                    .find_map(|v| std::env::var(v).ok().filter(|b| !b.is_empty()))
                })
        });
        Environment {
            schema: SCHEMA.to_string(),
            suite: suite.to_string(),
            rustc: env!("SPARKLES_RUSTC_VERSION").to_string(),
            profile: env!("SPARKLES_BUILD_PROFILE").to_string(),
            opt_level: env!("SPARKLES_OPT_LEVEL").to_string(),
            debug_assertions: cfg!(debug_assertions),
            git_commit,
            git_dirty,
            git_branch,
            cpu_model: std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .and_then(|t| cpu_model(&t)),
            os: std::env::consts::OS.to_string(),
            kernel: read_trimmed("/proc/sys/kernel/osrelease").or_else(|| uname().map(|u| u.0)),
            governor: read_trimmed("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            hostname: read_trimmed("/proc/sys/kernel/hostname").or_else(|| uname().map(|u| u.1)),
            unix_time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            machine_probe: None,
            bench_build: None,
        }
    }

    /// The fields that make timings incomparable where they differ, as
    /// `(field, baseline's value, this run's value)`. The commit is not among them:
    /// comparing commits is what a baseline is for.
    pub fn differences(&self, now: &Environment) -> Vec<(&'static str, String, String)> {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".to_string());
        let pairs = [
            ("rustc", self.rustc.clone(), now.rustc.clone()),
            ("profile", self.profile.clone(), now.profile.clone()),
            ("opt_level", self.opt_level.clone(), now.opt_level.clone()),
            (
                "debug_assertions",
                self.debug_assertions.to_string(),
                now.debug_assertions.to_string(),
            ),
            ("os", self.os.clone(), now.os.clone()),
            ("cpu_model", show(&self.cpu_model), show(&now.cpu_model)),
            ("kernel", show(&self.kernel), show(&now.kernel)),
            ("governor", show(&self.governor), show(&now.governor)),
            ("hostname", show(&self.hostname), show(&now.hostname)),
        ];
        pairs
            .into_iter()
            // A record from before `os` was kept says nothing about it.
            .filter(|(field, a, b)| *field != "os" || !(a.is_empty() || b.is_empty()))
            .filter(|(_, a, b)| a != b)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cpu_model_lines() {
        let text = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9654 96-Core Processor\n";
        assert_eq!(
            cpu_model(text).as_deref(),
            Some("AMD EPYC 9654 96-Core Processor")
        );
        assert_eq!(cpu_model("processor : 0\n"), None);
    }

    #[test]
    fn differences_ignore_the_commit_and_time() {
        let a = Environment::current("demo");
        let mut b = a.clone();
        b.git_commit = Some("other".into());
        b.unix_time += 100;
        assert!(a.differences(&b).is_empty());
        b.hostname = Some("elsewhere".into());
        b.governor = Some("powersave".into());
        let fields: Vec<_> = a.differences(&b).into_iter().map(|d| d.0).collect();
        assert_eq!(fields, ["governor", "hostname"]);
    }

    #[test]
    fn current_environment_names_the_toolchain_and_kernel() {
        let e = Environment::current("demo");
        assert!(e.rustc.starts_with("rustc "), "{}", e.rustc);
        assert_eq!(e.os, std::env::consts::OS);
        if cfg!(unix) {
            assert!(e.kernel.is_some());
        }
        assert_eq!(e.schema, SCHEMA);
    }
}
