//! The two sides of a comparison as bench executables: revisions resolved by git, each
//! checked out in a worktree under `target/sparkles/revs/<commit>` (the working tree is
//! the variant unless `--variant` names a commit), built by `cargo bench --no-run` into
//! the package's one target folder, the executables found in cargo's JSON messages.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::Error;

/// One side, resolved.
#[derive(Debug, Clone)]
pub struct Side {
    /// What the user named (`HEAD~1`, or `working tree`).
    pub named: String,
    /// The commit; for the working tree, the commit it is at.
    pub commit: String,
    /// Whether it is the working tree with uncommitted changes.
    pub dirty: bool,
    /// The folder that holds the package at this side (the working tree's own, or a
    /// worktree's).
    pub package_dir: PathBuf,
    /// The tree the side is checked out in.
    pub tree: PathBuf,
}

impl Side {
    /// `abc1234 (HEAD~1)`, or `the working tree at abc1234, with uncommitted changes`.
    pub fn describe(&self) -> String {
        let short = &self.commit[..self.commit.len().min(10)];
        if self.named == "working tree" {
            if self.dirty {
                format!("the working tree at {short}, with uncommitted changes")
            } else {
                format!("the working tree at {short}")
            }
        } else {
            format!("{short} ({})", self.named)
        }
    }

    /// The revision as rows name it: the commit, `+dirty` for uncommitted changes.
    pub fn rev(&self) -> String {
        if self.dirty {
            format!("{}+dirty", self.commit)
        } else {
            self.commit.clone()
        }
    }
}

/// A bench executable of one side.
#[derive(Debug, Clone)]
pub struct BenchExe {
    /// The bench target's name (`cargo bench --bench NAME`).
    pub name: String,
    /// The executable.
    pub path: PathBuf,
    /// Its package's folder (where `cargo bench` runs it).
    pub dir: PathBuf,
}

fn git(dir: &Path, args: &[&str]) -> Result<std::process::Output, Error> {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::Input(format!("git {}: {e} (is git installed?)", args.join(" "))))
}

fn stdout_line(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The repository holding `dir`, and `dir`'s path within it.
pub fn repository(dir: &Path) -> Result<(PathBuf, PathBuf), Error> {
    let out = git(dir, &["rev-parse", "--show-toplevel"])?;
    if !out.status.success() {
        return Err(Error::Input(format!(
            "{}: not in a git repository: `sparkles compare` builds revisions of one ({})",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let root = PathBuf::from(stdout_line(&out));
    let here = dir.canonicalize().map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let root = root.canonicalize().unwrap_or(root);
    let within = here
        .strip_prefix(&root)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    Ok((root, within))
}

/// The commit `rev` names in the repository at `root`.
pub fn resolve(root: &Path, rev: &str, flag: &str) -> Result<String, Error> {
    let spec = format!("{rev}^{{commit}}");
    let out = git(root, &["rev-parse", "--verify", "--quiet", &spec])?;
    if !out.status.success() {
        return Err(Error::usage(
            flag,
            format!(
                "'{rev}' does not name a commit in {} (try a commit id, a branch, a tag or HEAD~1)",
                root.display()
            ),
        ));
    }
    Ok(stdout_line(&out))
}

/// The working tree as the variant: its commit, and whether tracked files changed.
pub fn working_tree(root: &Path, within: &Path) -> Result<Side, Error> {
    let commit = resolve(root, "HEAD", "the working tree")?;
    let status = git(root, &["status", "--porcelain", "--untracked-files=no"])?;
    Ok(Side {
        named: "working tree".into(),
        commit,
        dirty: !status.stdout.is_empty(),
        package_dir: root.join(within),
        tree: root.to_path_buf(),
    })
}

/// `rev` checked out (detached) in `revs/<commit>`, reused where it is there already.
pub fn checkout(
    root: &Path,
    within: &Path,
    revs: &Path,
    rev: &str,
    flag: &str,
) -> Result<Side, Error> {
    let commit = resolve(root, rev, flag)?;
    let tree = revs.join(&commit);
    let at = git(&tree, &["rev-parse", "HEAD"])
        .ok()
        .filter(|o| o.status.success());
    if at.as_ref().map(stdout_line).as_deref() != Some(commit.as_str()) {
        std::fs::create_dir_all(revs).map_err(|source| Error::Io {
            path: revs.to_path_buf(),
            source,
        })?;
        // A folder left by an earlier, broken checkout is replaced.
        let _ = git(root, &["worktree", "prune"]);
        if tree.exists() {
            let _ = std::fs::remove_dir_all(&tree);
        }
        let tree_arg = tree.to_string_lossy().into_owned();
        let out = git(
            root,
            &["worktree", "add", "--detach", "--force", &tree_arg, &commit],
        )?;
        if !out.status.success() {
            return Err(Error::Input(format!(
                "{rev} ({commit}) could not be checked out in {}: {}",
                tree.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
    }
    Ok(Side {
        named: rev.to_string(),
        commit,
        dirty: false,
        package_dir: tree.join(within),
        tree,
    })
}

/// `cargo metadata --format-version 1 EXTRA…` of the package in `dir`, parsed; a refusal
/// is said after `failed`.
fn cargo_metadata(dir: &Path, extra: &[&str], failed: &str) -> Result<serde_json::Value, Error> {
    let out = Command::new("cargo")
        .args(["metadata", "--format-version", "1"])
        .args(extra)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::Input(format!("cargo metadata: {e} (is cargo installed?)")))?;
    if !out.status.success() {
        return Err(Error::Input(format!(
            "{failed}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| Error::Input(format!("cargo metadata's output: {e}")))
}

/// The target folder cargo builds the package in `dir` into.
pub fn target_dir(dir: &Path) -> Result<PathBuf, Error> {
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        return Ok(PathBuf::from(t));
    }
    let meta = cargo_metadata(
        dir,
        &["--no-deps"],
        &format!("{}: not a cargo package", dir.display()),
    )?;
    meta["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| Error::Input("cargo metadata named no target_directory".into()))
}

/// The target folder `side` builds into: the package's own for the working tree (where
/// `cargo bench` builds it too), and `target/sparkles/compare/target-<role>` for a
/// revision checked out in a worktree. Cargo names a path package's build the same in
/// every tree, so two trees building into one folder would each rebuild every local
/// crate on every run; a folder a role keeps a second compare against the same base
/// down to what changed (the dependencies are built once more, the first time, for it).
pub fn side_target(side: &Side, target: &Path, role: &str) -> PathBuf {
    if side.named == "working tree" {
        target.to_path_buf()
    } else {
        target
            .join("sparkles")
            .join("compare")
            .join(format!("target-{role}"))
    }
}

/// The file in `target` naming the tree whose local packages were last built there.
fn last_tree_record(target: &Path) -> PathBuf {
    target.join("sparkles").join("compare").join("last-tree")
}

/// Removes the build records (`.fingerprint`) of the packages within `side`'s tree from
/// `target`'s bench profile where another tree built them last: cargo names a path
/// package's build the same at every revision and judges it fresh by the files it read
/// last time (the other tree's), so it would hand this side the other's executables.
/// Where this tree built them last (a second compare against the same base, the working
/// tree in its own folder), cargo's own records stand and only what changed is rebuilt.
/// Dependencies from registries and outside the repository are kept, and built once.
fn forget_local_builds(side: &Side, target: &Path) -> Result<(), Error> {
    let tree = side
        .tree
        .canonicalize()
        .unwrap_or_else(|_| side.tree.clone());
    let record = last_tree_record(target);
    let last = std::fs::read_to_string(&record).ok();
    if last.as_deref() == Some(tree.to_string_lossy().as_ref()) {
        return Ok(());
    }
    let meta = cargo_metadata(
        &side.package_dir,
        &[],
        &format!("{}: cargo metadata", side.describe()),
    )?;
    let local: Vec<String> = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["source"].is_null())
        .filter(|p| {
            p["manifest_path"].as_str().is_some_and(|m| {
                let m = Path::new(m);
                m.canonicalize()
                    .unwrap_or_else(|_| m.to_path_buf())
                    .starts_with(&tree)
            })
        })
        .filter_map(|p| p["name"].as_str().map(String::from))
        .collect();
    let fingerprints = target.join("release").join(".fingerprint");
    if let Ok(entries) = std::fs::read_dir(&fingerprints) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let package = name.rsplit_once('-').map_or(name.as_str(), |(p, _)| p);
            if local.iter().any(|l| l == package) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    // Said before the build: a build cut short leaves this tree's records or none.
    if let Some(dir) = record.parent() {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    sparkles_perf_data::atomic_write::write_atomically(&record, tree.to_string_lossy().as_bytes())?;
    Ok(())
}

/// Builds `side`'s bench targets (`benches`, or all) with `cargo bench --no-run` into
/// its target folder ([`side_target`] of the package's `target`, as `role`): their
/// executables. What cargo compiled, and what it found fresh, is said on stderr.
pub fn build(
    side: &Side,
    target: &Path,
    role: &str,
    package: Option<&str>,
    benches: &[String],
) -> Result<Vec<BenchExe>, Error> {
    let built_in = side_target(side, target, role);
    let mut cmd = Command::new("cargo");
    cmd.args([
        "bench",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ])
    .current_dir(&side.package_dir)
    .env("CARGO_TARGET_DIR", &built_in)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    if let Some(p) = package {
        cmd.args(["-p", p]);
    }
    for b in benches {
        cmd.args(["--bench", b]);
    }
    forget_local_builds(side, &built_in)?;
    eprintln!(
        "compare: building the benches of {} in {}",
        side.describe(),
        built_in.display()
    );
    let started = std::time::Instant::now();
    let out = cmd
        .output()
        .map_err(|e| Error::Input(format!("cargo bench --no-run: {e} (is cargo installed?)")))?;
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = said.lines().rev().take(25).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(Error::Input(format!(
            "the benches of {} do not build (cargo bench --no-run in {}):\n{}",
            side.describe(),
            side.package_dir.display(),
            tail.join("\n")
        )));
    }
    let mut exes = Vec::new();
    let mut compiled: Vec<String> = Vec::new();
    let mut fresh = 0usize;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" {
            continue;
        }
        if msg["fresh"] == true {
            fresh += 1;
        } else if let Some(name) = msg["target"]["name"].as_str() {
            compiled.push(name.to_string());
        }
        let is_bench = msg["target"]["kind"]
            .as_array()
            .is_some_and(|k| k.iter().any(|k| k == "bench"));
        let (Some(exe), Some(name), Some(manifest)) = (
            msg["executable"].as_str(),
            msg["target"]["name"].as_str(),
            msg["manifest_path"].as_str(),
        ) else {
            continue;
        };
        if is_bench {
            exes.push(BenchExe {
                name: name.to_string(),
                path: PathBuf::from(exe),
                dir: Path::new(manifest)
                    .parent()
                    .map_or_else(|| side.package_dir.clone(), Path::to_path_buf),
            });
        }
    }
    eprintln!(
        "{}",
        build_line(side, &compiled, fresh, started.elapsed().as_secs_f64())
    );
    // Cargo gives a package's bench the same file name at every revision, and a role's
    // folder builds each revision it is given: each side's are kept apart by commit.
    let kept = target
        .join("sparkles")
        .join("compare")
        .join("bin")
        .join(side.rev());
    std::fs::create_dir_all(&kept).map_err(|source| Error::Io {
        path: kept.clone(),
        source,
    })?;
    for exe in &mut exes {
        let copy = kept.join(&exe.name);
        let _ = std::fs::remove_file(&copy);
        std::fs::copy(&exe.path, &copy).map_err(|source| Error::Io {
            path: copy.clone(),
            source,
        })?;
        exe.path = copy;
    }
    if exes.is_empty() {
        return Err(Error::Input(format!(
            "{} has no bench targets to compare{}",
            side.describe(),
            if benches.is_empty() {
                String::new()
            } else {
                format!(" named {}", benches.join(", "))
            }
        )));
    }
    Ok(exes)
}

/// `compare: built …: 3 targets compiled (c5, planted), 112 fresh, in 0.5 s`: the line
/// that says what a side's build cost (a second compare against the same base compiles
/// nothing of the base).
fn build_line(side: &Side, compiled: &[String], fresh: usize, secs: f64) -> String {
    let what = if compiled.is_empty() {
        "nothing compiled".to_string()
    } else {
        // Each package once (a library and its bench are two targets of one name), the
        // last ones built (the local packages, above their dependencies) named.
        let mut names: Vec<&str> = Vec::new();
        for name in compiled.iter().rev() {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
        const NAMED: usize = 12;
        let more = names.len().saturating_sub(NAMED);
        names.truncate(NAMED);
        names.reverse();
        format!(
            "{} target{} compiled ({}{})",
            compiled.len(),
            if compiled.len() == 1 { "" } else { "s" },
            if more > 0 {
                format!("{more} more, then ")
            } else {
                String::new()
            },
            names.join(", ")
        )
    };
    format!(
        "compare: built the benches of {}: {what}, {fresh} fresh, in {secs:.1} s",
        side.describe()
    )
}
