//! Shared by the tests that open pages in a browser (included with `#[path]`).

use std::process::Command;

/// A headless-capable Chromium on PATH, by the names distributions give it.
pub fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}
