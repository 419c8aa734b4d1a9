//! The child's side: the request the parent puts in its environment, and the markers it
//! leaves as each case starts and ends.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Set in the child's environment: the [`ChildRequest`] as JSON.
pub const CHILD_ENV: &str = "SPARKLES_VALGRIND_CHILD";

/// What the parent asks of the child: one case to count (each has a child of its own).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChildRequest {
    /// The suite's name: a bench executable may run several.
    pub suite: String,
    /// The case, with its index in the parent's run.
    pub case: ChildCase,
    /// Brackets, each a base and a full run.
    pub brackets: u32,
    /// Where the child marks each case started and done ([`marker`]).
    pub dir: PathBuf,
}

/// The case of a [`ChildRequest`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChildCase {
    /// Its index in the parent's run: its dumps' and markers' key.
    pub index: u32,
    /// The case's exact name.
    pub name: String,
    /// A bracket's full run is this many iterations longer than its base run (at most:
    /// see `size_by_cost`).
    pub iterations: u64,
    /// Take fewer iterations where one takes long under callgrind
    /// ([`super::pass::sized_by_cost`]); the iterations taken are said in the case's
    /// `iterations` marker.
    #[serde(default)]
    pub size_by_cost: bool,
}

/// The marker file of case `index`: `started` (empty) when the child begins it,
/// `iterations` (the full runs' iterations over their base runs) before it counts,
/// `brackets` (how many it counted), then `done` (empty, or why the case failed) when it
/// is over.
pub fn marker(dir: &Path, index: u32, what: &str) -> PathBuf {
    dir.join(format!("case-{index}.{what}"))
}

/// Writes marker `what` of case `index`, whole (a temporary file renamed into place).
pub fn write_marker(dir: &Path, index: u32, what: &str, text: &str) {
    let path = marker(dir, index, what);
    let temporary = path.with_extension("partial");
    if std::fs::write(&temporary, text).is_ok() {
        let _ = std::fs::rename(&temporary, &path);
    }
}

/// The request in this process's environment, where it is a child; a malformed one is
/// said and ends the process.
pub fn child_request() -> Option<ChildRequest> {
    let text = std::env::var_os(CHILD_ENV)?;
    match serde_json::from_str(&text.to_string_lossy()) {
        Ok(r) => Some(r),
        Err(e) => {
            eprintln!("sparkles: {CHILD_ENV} is not a valgrind child request: {e}");
            std::process::exit(3)
        }
    }
}
