//! Where the shared fixtures are, for the test files of every crate that reads them.

use std::path::PathBuf;

use crate::skip;

/// `../shared/fixtures` beside this checkout (or `$SPARKLES_SHARED/fixtures`); `None`,
/// saying so, where it is absent (a user's fresh clone).
pub fn fixtures() -> Option<PathBuf> {
    let dir = std::env::var_os("SPARKLES_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"))
        .join("fixtures");
    if dir.is_dir() {
        Some(dir)
    } else {
        skip::skip(
            "fixtures",
            format!(
                "{} is absent (the shared fixtures are not beside this checkout)",
                dir.display()
            ),
        );
        None
    }
}
