//! `cfg(kernel)`: the build has the kernel edge (`src/sys/linux.rs`), that is Linux,
//! little-endian (the attr bytes handed to perf_event_open are perf.data's, which are
//! little-endian), with the `perf` feature. Every other build compiles `src/sys/none.rs`,
//! where nothing opens and each call says why.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(kernel)");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    let little = std::env::var("CARGO_CFG_TARGET_ENDIAN").as_deref() == Ok("little");
    let perf = std::env::var_os("CARGO_FEATURE_PERF").is_some();
    if linux && little && perf {
        println!("cargo::rustc-cfg=kernel");
    }
    println!("cargo::rerun-if-changed=build.rs");
}
