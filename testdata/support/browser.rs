//! Shared by the tests that open pages in a browser (included with `#[path]`).

#![allow(dead_code)] // each test file uses what it needs

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

/// The DOM of the page at `page` once `chromium` has loaded it headless (its scripts run),
/// given a minute.
pub fn rendered(chromium: &str, page: &std::path::Path) -> String {
    let out = Command::new("timeout")
        .args([
            "60",
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("timeout runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
