//! `sparkles report FILE --format speedscope|firefox` on a real recording (the shared
//! fixture of a small C program, 45 samples): speedscope's file validated against the
//! schema the npm package `speedscope` ships (by ajv, an independent reader) and opened
//! in that package's own web app in headless Chromium; the Firefox Profiler's processed
//! format checked for its processes, threads, samples, categories and frames, plain and
//! gzipped. Each part skips, saying why, where its tool or the fixture is absent.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/browser.rs"]
mod browser;
#[path = "../../testdata/support/skip.rs"]
mod skip;
mod support;

#[path = "../../testdata/support/callchain_fixture.rs"]
mod callchain_fixture;
#[path = "../../testdata/support/fixtures.rs"]
mod fixtures;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::sparkles;

/// The fixture capture and a symfs with its binary, or `None` (said).
fn capture() -> Option<(PathBuf, tempfile::TempDir)> {
    let data = fixtures::fixtures()?.join("callchain/vector_static_gcc.dwarf.perf.data");
    if !data.exists() {
        skip::skip("fixtures", format!("{} is absent", data.display()));
        return None;
    }
    let dir = callchain_fixture::callchain_dir()?;
    let symfs = tempfile::tempdir().unwrap();
    callchain_fixture::place_binary(&dir, symfs.path());
    Some((data, symfs))
}

fn export(data: &Path, symfs: &Path, format: &str, out: &Path) {
    let run = sparkles(&[
        "report",
        data.to_str().unwrap(),
        "--symfs",
        symfs.to_str().unwrap(),
        "--format",
        format,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// `npm pack speedscope` and `npm install ajv` into `dir`: the package's folder, or
/// `None` (said) where npm is absent or cannot fetch.
fn speedscope_package(dir: &Path) -> Option<PathBuf> {
    let run = |args: &[&str]| {
        Command::new("timeout")
            .arg("180")
            .args(args)
            .current_dir(dir)
            .output()
    };
    let packed = run(&["npm", "pack", "--silent", "speedscope"]);
    let name = match &packed {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        other => {
            skip::skip("npm", format!("npm pack speedscope: {other:?}"));
            return None;
        }
    };
    let untar = run(&["tar", "xzf", &name]);
    let ajv = run(&["npm", "install", "--no-save", "--silent", "ajv@8"]);
    match (untar, ajv) {
        (Ok(t), Ok(a)) if t.status.success() && a.status.success() => Some(dir.join("package")),
        other => {
            skip::skip("npm", format!("speedscope's package or ajv: {other:?}"));
            None
        }
    }
}

/// Serves the files of `root` over HTTP on a loopback port until the process ends: the
/// speedscope app fetches the profile it is given by URL, which Chromium refuses from
/// `file://`. Its address.
fn serve(root: PathBuf) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let root = root.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(&stream);
                let mut request = String::new();
                if reader.read_line(&mut request).is_err() {
                    return;
                }
                let path = request.split_whitespace().nth(1).unwrap_or("/");
                let path = path.split(['?', '#']).next().unwrap_or("/");
                let file = root.join(path.trim_start_matches('/'));
                let mut headers = String::new();
                while reader.read_line(&mut headers).is_ok_and(|n| n > 2) {
                    headers.clear();
                }
                let (status, body) = match std::fs::read(&file) {
                    Ok(b) if file.starts_with(&root) => ("200 OK", b),
                    _ => ("404 Not Found", Vec::new()),
                };
                let kind = match file.extension().and_then(|e| e.to_str()) {
                    Some("html") => "text/html",
                    Some("js") => "text/javascript",
                    Some("css") => "text/css",
                    Some("json") => "application/json",
                    Some("wasm") => "application/wasm",
                    _ => "application/octet-stream",
                };
                let mut out = &stream;
                let _ = write!(
                    out,
                    "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = out.write_all(&body);
            });
        }
    });
    format!("http://{addr}")
}

#[test]
fn speedscope_export_follows_the_schema_and_opens_in_speedscope() {
    let Some((data, symfs)) = capture() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("profile.speedscope.json");
    export(&data, symfs.path(), "speedscope", &out);
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(
        v["$schema"],
        "https://www.speedscope.app/file-format-schema.json"
    );
    let frames = v["shared"]["frames"].as_array().unwrap();
    let profiles = v["profiles"].as_array().unwrap();
    assert!(!profiles.is_empty());
    let mut samples = 0;
    for p in profiles {
        assert_eq!(p["type"], "sampled");
        let s = p["samples"].as_array().unwrap();
        let w = p["weights"].as_array().unwrap();
        assert_eq!(s.len(), w.len());
        samples += s.len();
        for stack in s {
            for f in stack.as_array().unwrap() {
                assert!((f.as_u64().unwrap() as usize) < frames.len());
            }
        }
        let total: f64 = w.iter().map(|x| x.as_f64().unwrap()).sum();
        assert_eq!(p["endValue"].as_f64().unwrap(), total);
    }
    // Every sample of the capture (`sparkles report --format json` counts 45).
    assert_eq!(samples, 45);
    let named = |name: &str| frames.iter().find(|f| f["name"] == name);
    assert!(named("__cos_fma").is_some(), "{frames:?}");
    let main = named("main").expect("main is a frame");
    assert!(main["file"].is_string() && main["line"].is_u64(), "{main}");

    let npm = tempfile::tempdir().unwrap();
    let Some(package) = speedscope_package(npm.path()) else {
        return;
    };
    let release = package.join("dist/release");
    let script = npm.path().join("validate.js");
    std::fs::write(&script, support::AJV_VALIDATE_JS).unwrap();
    let valid = Command::new("node")
        .arg(&script)
        .arg(release.join("file-format-schema.json"))
        .arg(&out)
        .current_dir(npm.path())
        .output()
        .unwrap();
    assert!(
        valid.status.success(),
        "not valid against speedscope's schema: {}",
        String::from_utf8_lossy(&valid.stderr)
    );

    let Some(browser) = browser::chromium() else {
        skip::skip("chromium", "no chromium: speedscope's app not opened");
        return;
    };
    std::fs::copy(&out, release.join("sparkles-profile.json")).unwrap();
    let base = serve(release.clone());
    let url = format!("{base}/index.html#profileURL={base}/sparkles-profile.json");
    let dom = Command::new("timeout")
        .args(["90", browser, "--headless", "--no-sandbox", "--disable-gpu"])
        .arg("--virtual-time-budget=10000")
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&dom.stdout);
    // speedscope titles the page after the profile it loaded.
    let title = format!(
        "<title>{} - speedscope</title>",
        v["name"].as_str().unwrap()
    );
    assert!(
        text.contains(&title),
        "speedscope did not load the profile: {text}"
    );
}

#[test]
fn firefox_export_has_threads_samples_categories_and_gzips() {
    let Some((data, symfs)) = capture() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join("profile.json");
    export(&data, symfs.path(), "firefox", &out);
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(v["meta"]["version"].is_u64(), "{}", v["meta"]);
    let categories: Vec<&str> = v["meta"]["categories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for c in ["User", "Kernel", "Library"] {
        assert!(categories.contains(&c), "{categories:?}");
    }
    let threads = v["threads"].as_array().unwrap();
    assert!(!threads.is_empty());
    let samples: u64 = threads
        .iter()
        .map(|t| t["samples"]["length"].as_u64().unwrap())
        .sum();
    assert_eq!(samples, 45);
    let strings = v["shared"]["stringArray"]
        .as_array()
        .or_else(|| threads[0]["stringArray"].as_array())
        .or_else(|| threads[0]["stringTable"].as_array())
        .expect("a string table");
    assert!(
        strings
            .iter()
            .any(|s| s.as_str().is_some_and(|s| s.starts_with("__cos_fma"))),
        "{strings:?}"
    );
    // Gzipped where the name says so.
    let gz = work.path().join("profile.json.gz");
    export(&data, symfs.path(), "firefox", &gz);
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&gz).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let unzipped: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(unzipped["threads"].as_array().unwrap().len(), threads.len());
}

#[test]
fn exports_refuse_wall_and_say_why() {
    let Some((data, symfs)) = capture() else {
        return;
    };
    let out = sparkles(&[
        "report",
        data.to_str().unwrap(),
        "--symfs",
        symfs.path().to_str().unwrap(),
        "--format",
        "speedscope",
        "--wall",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--wall"));
}
