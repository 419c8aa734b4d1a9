//! A git repository of a package whose sparkles bench plants changes: a commit whose bench
//! does not build, the base, and the variant, in which each planted case does more work
//! (and, where asked, a case only the variant has); where asked, a criterion bench beside
//! it plants the same work. For `sparkles compare`'s test and its power bench.

#![allow(dead_code)] // each user takes what it needs
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::path::Path;
use std::process::Command;

/// Two unchanged cases whose speed depends on the process they run in, for the benches
/// with `luck`: a std `HashMap` of 5,000 keys (its hasher's keys are random per process),
/// and a model of layout luck, a spin whose length each process draws once from its
/// `RandomState` (±1%).
const LUCK_SPARKLES: &str = r#"    suite.case("luck/hashmap_insert_5k", |b| b.iter(|| insert_5k()));
    suite.case("luck/layout_model", |b| {
        let n = 40_000 + luck_draw() % 801 - 400;
        b.iter(|| spin(n))
    });
"#;

/// [`LUCK_SPARKLES`]'s cases in criterion's words.
const LUCK_CRITERION: &str = r#"    c.bench_function("luck/hashmap_insert_5k", |b| b.iter(|| insert_5k()));
    let n = 40_000 + luck_draw() % 801 - 400;
    c.bench_function("luck/layout_model", |b| b.iter(|| spin(n)));
"#;

/// What the luck cases call.
const LUCK_FUNCTIONS: &str = r#"
fn insert_5k() -> usize {
    let mut m = std::collections::HashMap::new();
    for i in 0..5_000u64 {
        m.insert(i, i);
    }
    m.len()
}

fn luck_draw() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new().build_hasher().finish()
}
"#;

/// The bench at one side: `spin/same` spins 20,000 rounds, each planted case its own
/// count; `spin/new` where `extra_case`; the luck cases where `luck`.
fn bench_source(planted: &[(&str, u64)], extra_case: bool, luck: bool) -> String {
    let mut cases = String::from("    suite.case(\"spin/same\", |b| b.iter(|| spin(20_000)));\n");
    for (name, work) in planted {
        cases.push_str(&format!(
            "    suite.case(\"{name}\", |b| b.iter(|| spin({work})));\n"
        ));
    }
    if extra_case {
        cases.push_str("    suite.case(\"spin/new\", |b| b.iter(|| spin(1_000)));\n");
    }
    let functions = if luck {
        cases.push_str(LUCK_SPARKLES);
        LUCK_FUNCTIONS
    } else {
        ""
    };
    format!(
        r#"use sparkles_bench::Suite;
{functions}
fn spin(n: u64) -> u64 {{
    let mut x = 1u64;
    for i in 0..n {{
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }}
    x
}}

fn main() {{
    let mut suite = Suite::new("planted");
{cases}    sparkles_bench::main(suite);
}}
"#
    )
}

/// The criterion bench at one side: the same cases, names and `spin` work as
/// [`bench_source`]'s.
fn criterion_source(planted: &[(&str, u64)], extra_case: bool, luck: bool) -> String {
    let mut cases =
        String::from("    c.bench_function(\"spin/same\", |b| b.iter(|| spin(20_000)));\n");
    for (name, work) in planted {
        cases.push_str(&format!(
            "    c.bench_function(\"{name}\", |b| b.iter(|| spin({work})));\n"
        ));
    }
    if extra_case {
        cases.push_str("    c.bench_function(\"spin/new\", |b| b.iter(|| spin(1_000)));\n");
    }
    let functions = if luck {
        cases.push_str(LUCK_CRITERION);
        LUCK_FUNCTIONS
    } else {
        ""
    };
    format!(
        r#"use criterion::{{criterion_group, criterion_main, Criterion}};
{functions}
fn spin(n: u64) -> u64 {{
    let mut x = 1u64;
    for i in 0..n {{
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
    }}
    x
}}

fn cases(c: &mut Criterion) {{
{cases}}}

criterion_group!(planted, cases);
criterion_main!(planted);
"#
    )
}

/// Runs git in `dir`, which must succeed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The repository in `dir`: HEAD~2 a bench that does not build, HEAD~1 the base, HEAD the
/// variant; `planted` names each case with its base and variant work; the package depends
/// on the harness at `harness` (bench-integration/).
pub fn repository(dir: &Path, harness: &Path, planted: &[(&str, u64, u64)], extra_case: bool) {
    make(dir, harness, planted, extra_case, false);
}

/// [`repository`], whose package also has a criterion bench, `crit` (criterion 0.8 as the
/// workspace builds it, without default features), with the same cases and work at every
/// commit (the base's at HEAD~2); both benches also have the luck cases, unchanged cases
/// whose speed depends on the process they run in.
pub fn repository_with_criterion(
    dir: &Path,
    harness: &Path,
    planted: &[(&str, u64, u64)],
    extra_case: bool,
) {
    make(dir, harness, planted, extra_case, true);
}

/// The planted package's dependencies (the harness and everything under it) built
/// unoptimized: their optimized build was most of compare's tests' time (3.5 of 4 minutes
/// on a 2-core machine), and what the tests check is compare's. The cases' code (this
/// package's and its workspace's crates, which `"*"` leaves out) keeps the bench profile's
/// optimization, and so does the harness's generic timing loop, compiled into it: an
/// unoptimized spin loop's speed moves with where the build put it, so a planted 25%
/// measured 20%.
const UNOPTIMIZED_DEPENDENCIES: &str = r#"
[profile.bench.package."*"]
opt-level = 0
"#;

fn make(
    dir: &Path,
    harness: &Path,
    planted: &[(&str, u64, u64)],
    extra_case: bool,
    criterion: bool,
) {
    let harness = harness.canonicalize().unwrap();
    // Without rayon and plotters (criterion's defaults), which the workspace's lock file
    // does not hold: the package then resolves offline.
    let (criterion_dep, criterion_bench) = if criterion {
        (
            "criterion = { version = \"0.8\", default-features = false, features = [\"cargo_bench_support\"] }\n",
            "\n[[bench]]\nname = \"crit\"\nharness = false\n",
        )
    } else {
        ("", "")
    };
    // criterion's analysis is its own code: optimized as a user's build has it.
    let unoptimized = if criterion {
        ""
    } else {
        UNOPTIMIZED_DEPENDENCIES
    };
    std::fs::create_dir_all(dir.join("benches")).unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            r#"[package]
name = "planted"
version = "0.1.0"
edition = "2021"

[workspace]

[dev-dependencies]
sparkles-bench = {{ path = "{}" }}
{criterion_dep}
[[bench]]
name = "planted"
harness = false
{criterion_bench}
[profile.bench]
debug = "line-tables-only"
{unoptimized}"#,
            harness.display()
        ),
    )
    .unwrap();
    init(dir, &harness);
    std::fs::write(dir.join("benches/planted.rs"), "fn main() { not rust }\n").unwrap();
    let base: Vec<(&str, u64)> = planted.iter().map(|&(n, b, _)| (n, b)).collect();
    let variant: Vec<(&str, u64)> = planted.iter().map(|&(n, _, v)| (n, v)).collect();
    if criterion {
        std::fs::write(
            dir.join("benches/crit.rs"),
            criterion_source(&base, false, true),
        )
        .unwrap();
    }
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "a bench that does not build"]);
    std::fs::write(
        dir.join("benches/planted.rs"),
        bench_source(&base, false, criterion),
    )
    .unwrap();
    git(dir, &["commit", "-q", "-am", "base"]);
    std::fs::write(
        dir.join("benches/planted.rs"),
        bench_source(&variant, extra_case, criterion),
    )
    .unwrap();
    if criterion {
        std::fs::write(
            dir.join("benches/crit.rs"),
            criterion_source(&variant, extra_case, true),
        )
        .unwrap();
    }
    git(dir, &["commit", "-q", "-am", "variant: more work planted"]);
}

/// A repository of a workspace of `crates` local crates (`crates/c0` …) and the bench
/// package `planted` at its root, which depends on every one of them: case `c{i}/spin`
/// calls crate `c{i}`'s `spin`. Two commits: the base, and the variant, in which `c0`
/// spins 25% more. For compare's test of what a second build compiles.
pub fn workspace_repository(dir: &Path, harness: &Path, crates: usize) {
    let harness = harness.canonicalize().unwrap();
    let mut deps = String::new();
    let mut cases = String::new();
    for i in 0..crates {
        let krate = dir.join(format!("crates/c{i}"));
        std::fs::create_dir_all(krate.join("src")).unwrap();
        std::fs::write(
            krate.join("Cargo.toml"),
            format!("[package]\nname = \"c{i}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
        )
        .unwrap();
        std::fs::write(krate.join("src/lib.rs"), crate_source(20_000)).unwrap();
        deps.push_str(&format!("c{i} = {{ path = \"crates/c{i}\" }}\n"));
        cases.push_str(&format!(
            "    suite.case(\"c{i}/spin\", |b| b.iter(|| c{i}::spin()));\n"
        ));
    }
    std::fs::create_dir_all(dir.join("benches")).unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            r#"[package]
name = "planted"
version = "0.1.0"
edition = "2021"

[workspace]
members = ["crates/*"]

[dependencies]
{deps}
[dev-dependencies]
sparkles-bench = {{ path = "{}" }}

[[bench]]
name = "planted"
harness = false

[profile.bench]
debug = "line-tables-only"
{UNOPTIMIZED_DEPENDENCIES}"#,
            harness.display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("benches/planted.rs"),
        format!(
            "fn main() {{\n    let mut suite = sparkles_bench::Suite::new(\"planted\");\n{cases}    sparkles_bench::main(suite);\n}}\n"
        ),
    )
    .unwrap();
    init(dir, &harness);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "base"]);
    std::fs::write(dir.join("crates/c0/src/lib.rs"), crate_source(25_000)).unwrap();
    git(dir, &["commit", "-q", "-am", "variant: c0 spins 25% more"]);
}

/// A local crate of [`workspace_repository`]: one function spinning `n` rounds.
pub fn crate_source(n: u64) -> String {
    format!(
        "pub fn spin() -> u64 {{\n    let mut x = 1u64;\n    for i in 0..{n}u64 {{\n        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));\n    }}\n    x\n}}\n"
    )
}

/// The package's empty library, the workspace's lock file (the package builds with the
/// versions the harness was built and tested with, already on this machine, with no
/// registry look-up), and a git repository around it.
fn init(dir: &Path, harness: &Path) {
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    let lock = harness.join("../Cargo.lock");
    if lock.is_file() {
        std::fs::copy(&lock, dir.join("Cargo.lock")).unwrap();
    }
    std::fs::write(dir.join(".gitignore"), "/target\n").unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["config", "user.email", "test@example.invalid"]);
    git(dir, &["config", "user.name", "test"]);
}
