//! Records what built the results crate (the same rustc and profile as the harness beside
//! it), so a baseline can say where it was measured.

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let version = Command::new(&rustc)
        .arg("-V")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=SPARKLES_RUSTC_VERSION={version}");
    for (var, name) in [
        ("PROFILE", "SPARKLES_BUILD_PROFILE"),
        ("OPT_LEVEL", "SPARKLES_OPT_LEVEL"),
    ] {
        let value = std::env::var(var).unwrap_or_else(|_| "unknown".to_string());
        println!("cargo:rustc-env={name}={value}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
