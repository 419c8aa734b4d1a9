//! The `sparkles` command as a user runs it: `event`, `list` and `caps`.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/skip.rs"]
mod skip;
mod support;

use std::path::PathBuf;
use std::process::{Command, Output};

use support::{perf_reads, recorded, refused, sparkles};

use serde_json::Value;

#[path = "../../testdata/support/callchain_fixture.rs"]
mod callchain_fixture;
#[path = "../../testdata/support/fixtures.rs"]
mod fixtures;

fn json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A file or folder of the shared fixtures, or `None`, saying so, where it is absent.
fn fixture(rel: &str) -> Option<PathBuf> {
    let path = fixtures::fixtures()?.join(rel);
    if path.exists() {
        Some(path)
    } else {
        skip::skip("fixtures", format!("{} is absent", path.display()));
        None
    }
}

/// One of the fake sysfs trees of the shared fixtures.
fn fixture_tree(name: &str) -> Option<PathBuf> {
    fixture(&format!("sysfs/{name}"))
}

#[test]
fn misspelt_events_fail_with_a_suggestion() {
    // A PMU's terms are its sysfs tree's: the Sapphire Rapids tree's `cpu`, whatever PMU
    // this machine has (a guest may have none).
    let Some(tree) = fixture_tree("intel-sapphire-rapids") else {
        return;
    };
    let root = tree.to_str().unwrap();
    for (spelling, hint) in [
        ("cylces", "did you mean 'cycles'"),
        ("cpu/evnt=0x3c/", "did you mean 'event'"),
    ] {
        let out = sparkles(&["event", "--sysfs-root", root, spelling]);
        assert_eq!(out.status.code(), Some(2), "{spelling}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(hint), "{spelling}: {err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn event_json_has_the_pinned_fields_as_integers() {
    let Some(tree) = fixture_tree("intel-sapphire-rapids") else {
        return;
    };
    let v = json(&sparkles(&[
        "event",
        "--json",
        "--sysfs-root",
        tree.to_str().unwrap(),
        "cpu/mem-loads,ldlat=30/P",
    ]));
    assert_eq!(v["schema"], "sparkles.event/1");
    let e = &v["events"][0];
    assert_eq!(e["name"], "cpu/mem-loads,ldlat=30/P");
    assert_eq!(e["pmu"], "cpu");
    assert_eq!(e["type"], 4);
    assert_eq!(e["config"], 0x1cd);
    assert_eq!(e["config1"], 30);
    assert_eq!(e["config2"], 0);
    assert_eq!(e["precise_ip"], 3);
    assert_eq!(e["exclude_user"], false);
    assert_eq!(e["exclude_kernel"], false);
    // A fake tree describes another machine: nothing is opened.
    assert!(e["opens"].is_null());
    assert!(e["reason"].as_str().unwrap().contains("not probed"));
}

/// What the sampler says of counting `spelling` on this machine, in this process: whether
/// it opens, and the reason it does not. The command must say the same.
fn opens_here(spelling: &str) -> (bool, Option<String>) {
    use sparkles_sampler::open::{open, OpenMode};
    let resolver = sparkles_sampler::EventResolver::live()
        .unwrap_or_else(|_| sparkles_sampler::EventResolver::empty("/"));
    let attr = resolver.resolve(spelling).unwrap().remove(0);
    match open(
        &attr,
        OpenMode::Counting,
        &sparkles_sampler::system::System::probe(),
    ) {
        Ok(_) => (true, None),
        Err(e) => (false, Some(e.reason)),
    }
}

#[test]
fn software_events_open_here_or_say_why_not() {
    let v = json(&sparkles(&[
        "event",
        "--json",
        "cpu-clock",
        "page-faults:u",
    ]));
    for (e, spelling) in v["events"]
        .as_array()
        .unwrap()
        .iter()
        .zip(["cpu-clock", "page-faults:u"])
    {
        assert_eq!(e["type"], 1);
        let (opens, reason) = opens_here(spelling);
        assert_eq!(e["opens"].as_bool(), Some(opens), "{e}");
        if !opens {
            assert_eq!(e["reason"].as_str(), reason.as_deref(), "{e}");
        }
    }
}

#[test]
fn list_marks_each_event_openable_or_not_with_a_reason() {
    let v = json(&sparkles(&["list", "--json"]));
    let events = v["events"].as_array().unwrap();
    let find = |name: &str| events.iter().find(|e| e["name"] == name).unwrap();
    for (name, group) in [
        ("cpu-clock", "software"),
        ("task-clock", "software"),
        ("page-faults", "software"),
        ("cpu-cycles", "hardware"),
    ] {
        let e = find(name);
        assert_eq!(e["group"], group);
        let (opens, reason) = opens_here(name);
        assert_eq!(e["opens"].as_bool(), Some(opens), "{e}");
        if !opens {
            assert_eq!(e["reason"].as_str(), reason.as_deref(), "{e}");
        }
    }
    for e in events.iter().filter(|e| e["opens"] == false) {
        assert!(e["reason"].is_string(), "{e}");
    }
    if v["tracepoints_unavailable"].is_null() {
        assert!(events.iter().any(|e| e["group"] == "tracepoint"));
    }
    let text = sparkles(&["list"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Software events:") && text.contains("cpu-clock"));
}

#[test]
fn caps_reports_the_seven_concerns_with_reasons() {
    let v = json(&sparkles(&["caps", "--json"]));
    assert_eq!(v["schema"], "sparkles.caps/1");
    let env = &v["environment"];
    for key in [
        "kernel",
        "perf_event_paranoid",
        "hypervisor",
        "pmus",
        "tracefs",
        "numa_nodes",
    ] {
        assert!(env.get(key).is_some(), "environment lacks {key}");
    }
    let concerns = v["concerns"].as_array().unwrap();
    let ids: Vec<&str> = concerns.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "scalar_counting",
            "overflow_sampling",
            "precise_data_source",
            "symbolization",
            "event_space",
            "numa_topology",
            "event_naming"
        ]
    );
    for c in concerns {
        let status = c["status"].as_str().unwrap();
        assert!(["available", "partial", "absent"].contains(&status));
        assert!(!c["tried"].as_array().unwrap().is_empty(), "{}", c["id"]);
        if status != "available" {
            assert!(
                !c["reasons"].as_array().unwrap().is_empty(),
                "{} {status} without a reason",
                c["id"]
            );
        }
    }
    let by = |id: &str| concerns.iter().find(|c| c["id"] == id).unwrap();
    // Whether the attempt starting with `what` worked, and worked in full.
    let attempt = |c: &Value, what: &str| -> (bool, bool) {
        c["tried"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["what"].as_str().unwrap().starts_with(what))
            .map_or((false, false), |a| {
                (a["ok"] == true, a["ok"] == true && a["limited"].is_null())
            })
    };
    // The verdicts follow from the attempts, whatever this machine is.
    let counting = by("scalar_counting");
    let (sw, sw_full) = attempt(counting, "count task-clock");
    let (cy, cy_full) = attempt(counting, "count cycles");
    let (ins, ins_full) = attempt(counting, "count instructions");
    if sw {
        assert_ne!(counting["status"], "absent");
    }
    if sw_full && cy_full && ins_full {
        assert_eq!(counting["status"], "available");
    } else if sw && !(cy && ins) {
        assert_eq!(counting["status"], "partial");
        if env["hypervisor"] == true {
            let reasons = counting["reasons"].to_string();
            assert!(reasons.contains("hypervisor"), "{reasons}");
        }
    }
    let sampling = by("overflow_sampling");
    match attempt(sampling, "sample cpu-clock") {
        (true, true) => assert_eq!(sampling["status"], "available"),
        (true, false) => assert_ne!(sampling["status"], "absent"),
        _ => {}
    }
    let pmus: Vec<&str> = env["pmus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let precise = by("precise_data_source");
    if !pmus.contains(&"ibs_op") && precise["status"] == "absent" {
        assert!(precise["reasons"].to_string().contains("ibs_op"));
    }
    // Tracepoints count: available; else probe PMUs alone: partial; else absent.
    let space = by("event_space");
    let (tracepoints, _) = attempt(space, "count raw_syscalls:sys_enter");
    let (probes, _) = attempt(space, "find kprobe");
    let expected = match (tracepoints, probes) {
        (true, _) => "available",
        (false, true) => "partial",
        (false, false) => "absent",
    };
    assert_eq!(space["status"], expected, "{space}");
}

#[test]
fn the_harness_prints_capabilities() {
    let mut suite = sparkles_bench::Suite::new("caps");
    suite.case("x", |b| b.iter(|| 1));
    assert_eq!(
        sparkles_bench::run_main(suite, ["bench", "--capabilities"]),
        0
    );
}

#[test]
fn script_json_lines_have_the_pinned_sample_fields() {
    let Some(file) = fixture("pebs/skx-ldlat-weight_struct.perf.data") else {
        return;
    };
    let out = sparkles(&["script", "--format", "json", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 12964);
    let samples: Vec<&Value> = lines.iter().filter(|l| l["type"] == "sample").collect();
    assert_eq!(samples.len(), 14);
    let s = samples[0];
    for key in ["ip", "addr", "data_src"] {
        assert!(s[key].as_str().unwrap().starts_with("0x"), "{key}: {s}");
    }
    assert_eq!(s["addr"], "0x55ffba5cda08");
    assert_eq!(s["data_src"], "0x11868100242");
    assert_eq!(
        s["mem"],
        "|OP LOAD|LVL LFB/MAB hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A"
    );
    assert_eq!(s["weight"], 225);
    assert!(s["ins_lat"].is_u64());
    for key in ["time", "pid", "tid", "cpu", "attr"] {
        assert!(s[key].is_number(), "{key}: {s}");
    }
    assert!(lines
        .iter()
        .any(|l| l["type"] == "mmap2" && l["filename"].is_string()));
    assert!(lines.iter().any(|l| l["type"] == "comm"));
}

#[test]
fn script_callchains_and_user_regs() {
    let Some(file) = fixture("callchain/vector_static_gcc.dwarf.perf.data") else {
        return;
    };
    let out = sparkles(&["script", "--format", "json", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    let sample: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["type"] == "sample" && l["cpumode"] == 2)
        .unwrap();
    assert!(sample["callchain"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a.as_str().unwrap().starts_with("0x")));
    assert_eq!(sample["regs_user"]["mask"], "0xff0fff");
    assert!(sample["stack_user_size"].as_u64().unwrap() > 0);
}

#[test]
fn script_header_and_errors() {
    let Some(file) = fixture("pebs/ivb-ep-mem-loads.perf.data") else {
        return;
    };
    let v = json(&sparkles(&["script", "--header", file.to_str().unwrap()]));
    assert_eq!(v["schema"], "sparkles.header/1");
    assert_eq!(v["mode"], "file");
    assert!(v["features"]["hostname"].is_string());
    assert!(v["attrs"][0]["attr"]["sample_type"].is_u64());
    // A corrupt file: an error naming the file and the offset, exit status 2.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.data");
    let mut bytes = std::fs::read(&file).unwrap();
    let data_start = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    bytes[data_start + 6..data_start + 8].copy_from_slice(&3u16.to_le_bytes());
    std::fs::write(&bad, bytes).unwrap();
    let out = sparkles(&["script", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.data") && err.contains(&format!("offset {data_start}")),
        "{err}"
    );
    let out = sparkles(&["script", "/nonexistent/perf.data"]);
    assert_eq!(out.status.code(), Some(2));
}

fn samples_with_stacks(path: &std::path::Path) -> (u64, u64) {
    let out = sparkles(&["script", "--format", "json", path.to_str().unwrap()]);
    assert!(out.status.success());
    let mut samples = 0;
    let mut stacks = 0;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["type"] == "sample" {
            samples += 1;
            if v["regs_user"].is_object() && v["stack_user_size"].as_u64().unwrap_or(0) > 0 {
                stacks += 1;
            }
        }
    }
    (samples, stacks)
}

/// A shell loop long enough for 200 samples or more at the rate `sparkles record` samples
/// at here: 4000 Hz, or the kernel's lower limit (which it lowers itself when sampling
/// interrupts run long, as a VM's do); 150,000 rounds are about 0.45 s.
fn busy() -> String {
    let rate = sparkles_sampler::session::allowed_frequency(4000);
    let rounds = 150_000 * (200 / (rate * 45 / 100).max(1) + 1);
    format!("i=0; while [ $i -lt {rounds} ]; do i=$((i+1)); done")
}

#[test]
fn record_a_command() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cmd.perf.data");
    let Some(out) = recorded(&[
        "record",
        "-o",
        path.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &busy(),
    ]) else {
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("samples") && err.contains("event"), "{err}");
    let (samples, stacks) = samples_with_stacks(&path);
    assert!(samples > 50, "{samples} samples");
    assert!(stacks > 0, "no sample carries user registers and a stack");
    perf_reads(&path);
}

/// A command that cannot be started is an error naming it and why, with a shell's
/// status (127 not found, 126 not executable), and no capture written (an earlier file
/// at the path stays as it was); a command that fails passes its status on (128 + N for
/// signal N), its capture written and its end said.
#[test]
fn record_says_how_the_command_ended_and_passes_its_status_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cmd.perf.data");
    std::fs::write(&path, b"an earlier file").unwrap();
    let o = path.to_str().unwrap();
    for (command, status, why) in [
        ("no-such-command-here", 127, "No such file or directory"),
        ("/etc/passwd", 126, "Permission denied"),
    ] {
        let out = sparkles(&["record", "-o", o, "--", command]);
        if refused(&out) {
            return;
        }
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "{err}");
        assert!(
            err.contains(&format!("error: cannot run '{command}': {why}")),
            "{err}"
        );
        assert!(!err.contains("written"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"an earlier file");
    }
    let out = sparkles(&["record", "-o", o, "--", "sh", "-c", "exit 3"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("'sh' exited with status 3"), "{err}");
    assert!(err.contains("written to"), "{err}");
    assert_ne!(std::fs::read(&path).unwrap(), b"an earlier file");
    let out = sparkles(&["record", "-o", o, "--", "sh", "-c", "kill -TERM $$"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + 15), "{err}");
    assert!(err.contains("'sh' was ended by signal 15"), "{err}");
    let out = sparkles(&["record", "-o", o, "--", "true"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn record_a_running_process_for_a_duration() {
    let mut child = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pid.perf.data");
    let out = sparkles(&[
        "record",
        "-p",
        &child.id().to_string(),
        "--duration",
        "0.5",
        "-o",
        path.to_str().unwrap(),
    ]);
    let _ = child.kill();
    let _ = child.wait();
    if refused(&out) {
        return;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (samples, stacks) = samples_with_stacks(&path);
    assert!(samples > 20, "{samples} samples");
    assert!(stacks > 0);
    perf_reads(&path);
}

#[test]
fn record_rejects_bad_arguments() {
    let out = sparkles(&["record", "--call-graph", "lbr", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--call-graph"));
    let out = sparkles(&["record"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `gcc -O2 -g` of the C test program into `dir`, or why not.
fn c_program(dir: &std::path::Path) -> Option<PathBuf> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/symbolize/inlining.c");
    let out = dir.join("prog");
    match Command::new("gcc")
        .args(["-O2", "-g", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
    {
        Ok(s) if s.success() => Some(out),
        other => {
            skip::skip(
                "gcc",
                format!("gcc could not build {}: {other:?}", src.display()),
            );
            None
        }
    }
}

/// The address of `main`.
fn main_of(bin: &std::path::Path) -> u64 {
    use object::{Object, ObjectSymbol};
    let bytes = std::fs::read(bin).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    file.symbols()
        .find(|s| s.name() == Ok("main"))
        .unwrap()
        .address()
}

#[test]
fn addr2line_stands_in_for_binutils() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bin) = c_program(tmp.path()) else {
        return;
    };
    let Some(gnu) = sparkles_symbolize::binutils::gnu_addr2line() else {
        skip::skip("binutils", "binutils addr2line is not installed");
        return;
    };
    let main = main_of(&bin);
    let addrs: Vec<String> = (0..64).map(|i| format!("{:#x}", main + i)).collect();
    let exe = bin.to_str().unwrap();
    for flags in [
        &["-a"][..],
        &["-f", "-i", "-C", "-a"],
        &["-p", "-f", "-i", "-a"],
    ] {
        let mut args = vec!["addr2line", "-e", exe];
        args.extend_from_slice(flags);
        args.extend(addrs.iter().map(String::as_str));
        let ours = sparkles(&args);
        assert!(
            ours.status.success(),
            "{}",
            String::from_utf8_lossy(&ours.stderr)
        );
        let theirs = Command::new(&gnu).args(&args[1..]).output().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&theirs.stdout),
            "{flags:?}"
        );
    }
    // Addresses from stdin when none are given.
    let mut child = Command::new(env!("CARGO_BIN_EXE_sparkles"))
        .args(["addr2line", "-e", exe, "-f"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    writeln!(child.stdin.take().unwrap(), "{main:x}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("main\n"));
    // Bad input: named, non-zero; what came before it is answered.
    let bad = sparkles(&["addr2line", "-e", exe, "-f", &format!("{main:#x}"), "0xzz"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("'0xzz' is not a hex address"));
    assert!(String::from_utf8_lossy(&bad.stdout).starts_with("main\n"));
    let missing = sparkles(&["addr2line", "-e", "/nonexistent/prog", "0x10"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/prog"));
}

#[test]
fn addr2line_finds_debug_files_by_build_id_in_a_debug_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bin) = c_program(tmp.path()) else {
        return;
    };
    let bytes = std::fs::read(&bin).unwrap();
    let id: String = {
        use object::Object;
        let f = object::File::parse(&*bytes).unwrap();
        f.build_id()
            .unwrap()
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let debug = tmp.path().join("dbg");
    let target = debug.join(format!(".build-id/{}/{}.debug", &id[..2], &id[2..]));
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let stripped = tmp.path().join("stripped");
    for args in [
        vec![
            "--only-keep-debug".into(),
            bin.clone().into_os_string(),
            target.clone().into_os_string(),
        ],
        vec![
            "--strip-debug".into(),
            bin.clone().into_os_string(),
            stripped.clone().into_os_string(),
        ],
    ] {
        if !Command::new("objcopy")
            .args(&args)
            .status()
            .is_ok_and(|s| s.success())
        {
            skip::skip("binutils", "objcopy failed");
            return;
        }
    }
    let exe = stripped.to_str().unwrap();
    let at = format!("{:#x}", main_of(&bin) + 8);
    let plain = sparkles(&["addr2line", "-e", bin.to_str().unwrap(), "-f", "-i", &at]);
    assert!(String::from_utf8_lossy(&plain.stdout).contains("inlining.c:"));
    let without = sparkles(&["addr2line", "-e", exe, "-f", "-i", &at]);
    let with = sparkles(&[
        "addr2line",
        "-e",
        exe,
        "--debug-dir",
        debug.to_str().unwrap(),
        "-f",
        "-i",
        &at,
    ]);
    assert_eq!(with.stdout, plain.stdout, "named as the unstripped file");
    assert!(
        String::from_utf8_lossy(&without.stderr).contains("no debug info"),
        "{}",
        String::from_utf8_lossy(&without.stderr)
    );
}

#[test]
fn script_stacks_unwind_and_name_each_sample() {
    let Some(data) = fixture("callchain/vector_static_gcc.dwarf.perf.data") else {
        return;
    };
    let Some(dir) = callchain_fixture::callchain_dir() else {
        return;
    };
    // The binary where the capture recorded it, under a --symfs root.
    let symfs = tempfile::tempdir().unwrap();
    callchain_fixture::place_binary(&dir, symfs.path());

    let out = sparkles(&[
        "script",
        data.to_str().unwrap(),
        "--stacks",
        "--format",
        "json",
        "--symfs",
        symfs.path().to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "sample")
        .collect();
    assert_eq!(samples.len(), 45);
    let mut reach_main = 0;
    for s in &samples {
        let stack = s["stack"].as_array().expect("every sample has a stack");
        assert!(s.get("truncated").is_some());
        for f in stack {
            assert!(f["addr"].as_str().unwrap().starts_with("0x"));
            for key in ["function", "module", "file", "line", "inlined"] {
                assert!(f.get(key).is_some(), "{key} in {f}");
            }
        }
        if stack.iter().any(|f| f["function"] == "main") {
            reach_main += 1;
            assert_eq!(s["truncated"], Value::Null);
        }
    }
    assert!(reach_main >= 40, "{reach_main} of 45 reach main");
    // The one in generate_n: an inlined frame with its file and line, inside main.
    let inlined = samples
        .iter()
        .flat_map(|s| s["stack"].as_array().unwrap())
        .find(|f| f["inlined"] == true)
        .expect("an inlined frame");
    assert!(inlined["file"].as_str().is_some() && inlined["line"].as_u64().is_some());
    // Another machine's kernel: one [kernel] frame per run, and the reason on stderr.
    let kernel = samples
        .iter()
        .find(|s| s["cpumode"] == 1)
        .expect("a kernel sample");
    let frames = kernel["stack"].as_array().unwrap();
    assert_eq!(frames[0]["function"], "[kernel]");
    assert_ne!(
        frames.get(1).map(|f| &f["function"]),
        Some(&Value::from("[kernel]"))
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not the running kernel"), "{stderr}");
    assert!(stderr.contains("samples unwound"), "{stderr}");

    // Text: frames under each sample line.
    let text = sparkles(&[
        "script",
        data.to_str().unwrap(),
        "--stacks",
        "--symfs",
        symfs.path().to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&text.stdout).contains(" main "));

    // Bad flags: named, non-zero.
    let bad = sparkles(&[
        "script",
        data.to_str().unwrap(),
        "--stacks",
        "--unwind",
        "lbr",
    ]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown unwind mode 'lbr'"));
    let bad = sparkles(&[
        "script",
        data.to_str().unwrap(),
        "--stacks",
        "--symfs",
        "/nonexistent/dir",
    ]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--symfs /nonexistent/dir"));
}

#[test]
fn report_profiles_any_capture_in_each_format() {
    let Some(data) = fixture("callchain/vector_static_gcc.dwarf.perf.data") else {
        return;
    };
    let Some(dir) = callchain_fixture::callchain_dir() else {
        return;
    };
    let symfs = tempfile::tempdir().unwrap();
    callchain_fixture::place_binary(&dir, symfs.path());
    let file = data.to_str().unwrap();
    let root = symfs.path().to_str().unwrap();
    let table = sparkles(&["report", file, "--symfs", root, "--top", "5"]);
    assert!(
        table.status.success(),
        "{}",
        String::from_utf8_lossy(&table.stderr)
    );
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("functions") && text.contains("symbols"),
        "{text}"
    );
    // This capture's hottest function (perf agrees: its golden's top user symbol).
    assert!(text.contains("__cos_fma"), "{text}");

    let json = sparkles(&["report", file, "--symfs", root, "--format", "json"]);
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["schema"], "sparkles.profile/1");
    assert_eq!(v["samples"], 45);
    let folded = sparkles(&["report", file, "--symfs", root, "--format", "folded"]);
    assert!(String::from_utf8_lossy(&folded.stdout).contains("main;"));

    // A self-contained page: the views, and the flamegraph as a data: frame.
    let page = symfs.path().join("page.html");
    let html = sparkles(&[
        "report",
        file,
        "--symfs",
        root,
        "--format",
        "html",
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(
        html.status.success(),
        "{}",
        String::from_utf8_lossy(&html.stderr)
    );
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(
        text.starts_with("<!DOCTYPE html>"),
        "{}",
        &text[..60.min(text.len())]
    );
    assert!(
        text.contains("__cos_fma") && text.contains("45 samples"),
        "{text}"
    );
    assert!(text.contains("src=\"data:image/svg+xml;base64,"));
    // Inside the hottest functions: their lines and instructions, as `sparkles annotate`
    // gives them.
    assert!(
        text.contains("Inside the hot functions") && text.contains("instructions</summary>"),
        "no view inside the hot functions"
    );
    for fetch in ["src=\"http", "href=\"http", "<link"] {
        assert!(!text.contains(fetch), "the page fetches something: {fetch}");
    }

    // -o writes the SVG whole; a failed run leaves it as it was.
    let out = symfs.path().join("flame.svg");
    let svg = sparkles(&[
        "report",
        file,
        "--symfs",
        root,
        "--format",
        "svg",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        svg.status.success(),
        "{}",
        String::from_utf8_lossy(&svg.stderr)
    );
    let written = std::fs::read_to_string(&out).unwrap();
    assert!(written.trim_end().ends_with("</svg>"));
    let failed = sparkles(&[
        "report",
        "/nonexistent/perf.data",
        "--format",
        "svg",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!failed.status.success());
    assert!(String::from_utf8_lossy(&failed.stderr).contains("/nonexistent/perf.data"));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), written);
    // Unknown formats and flags: named, non-zero.
    let bad = sparkles(&["report", file, "--format", "pdf"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("pdf"));
    let bad = sparkles(&["report", file, "--symfs", "/nonexistent/dir"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--symfs /nonexistent/dir"));
}

#[test]
fn diff_compares_profiles_and_names_bad_input() {
    let Some(data) = fixture("callchain/vector_static_gcc.dwarf.perf.data") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let file = data.to_str().unwrap();
    // A capture against itself: every share equal, nothing significant.
    let json = sparkles(&["diff", file, file, "--format", "json"]);
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["schema"], "sparkles.diff/1");
    let movers = v["movers"].as_array().unwrap();
    assert!(!movers.is_empty());
    assert!(movers
        .iter()
        .all(|m| m["significant"] == false && m["change_pp"] == 0.0));
    // profile.json documents work as inputs too, and the table says the verdicts.
    let profile = tmp.path().join("profile.json");
    let report = sparkles(&[
        "report",
        file,
        "--format",
        "json",
        "-o",
        profile.to_str().unwrap(),
    ]);
    assert!(report.status.success());
    let table = sparkles(&["diff", profile.to_str().unwrap(), file]);
    assert!(
        table.status.success(),
        "{}",
        String::from_utf8_lossy(&table.stderr)
    );
    assert!(String::from_utf8_lossy(&table.stdout).contains("noise"));
    // A differential flamegraph from two captures.
    let svg = sparkles(&["diff", file, file, "--format", "svg"]);
    assert!(String::from_utf8_lossy(&svg.stdout)
        .trim_end()
        .ends_with("</svg>"));
    // Input that is neither: named.
    let junk = tmp.path().join("junk.txt");
    std::fs::write(&junk, "hello").unwrap();
    let bad = sparkles(&["diff", junk.to_str().unwrap(), file]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("junk.txt: neither a perf.data file nor"));
}

/// Sums the weights of `stack weight` lines.
fn folded_total(text: &str) -> u64 {
    text.lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum()
}

#[test]
fn report_json_has_the_pinned_memory_section() {
    let Some(file) = fixture("pebs/skx-ldlat-weight_struct.perf.data") else {
        return;
    };
    let p = json(&sparkles(&[
        "report",
        "--format",
        "json",
        file.to_str().unwrap(),
    ]));
    let m = &p["memory"];
    assert_eq!(m["samples"], 14);
    assert_eq!(m["weight_total"], 1725);
    let levels = m["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 4);
    for l in levels {
        for key in ["samples", "weight_total", "weight_p90"] {
            assert!(l[key].is_u64(), "{key}: {l}");
        }
        for key in ["share", "weight_mean"] {
            assert!(l[key].is_f64(), "{key}: {l}");
        }
        assert!(l["level"].is_string());
    }
    assert_eq!(levels[0]["level"], "LFB/MAB hit");
    assert_eq!(levels[0]["samples"], 5);
    assert_eq!(levels[0]["weight_total"], 729);
    assert!(!m["code"].as_array().unwrap().is_empty());
    let objects = m["data_objects"].as_array().unwrap();
    assert!(objects.iter().any(|o| o["kind"] == "anon"));
    assert!(objects
        .iter()
        .all(|o| o["samples"].is_u64() && o["weight_total"].is_u64()));
    assert_eq!(p["weighting"], "period");
    // The table shows it too.
    let out = sparkles(&["report", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("memory: 14 samples"), "{text}");
    assert!(text.contains("LFB/MAB hit"), "{text}");
    // And the page: the levels with their bars, the heaviest code.
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("mem.html");
    let out = sparkles(&[
        "report",
        "--format",
        "html",
        "-o",
        page.to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Memory levels"), "no memory section");
    assert!(html.contains("<td class=\"name\">LFB/MAB hit</td><td>5</td>"));
    let code = m["code"][0]["function"].as_str().unwrap();
    assert!(
        html.contains(code),
        "the heaviest code {code} is not on the page"
    );
    assert!(
        !html.contains("NUMA placement"),
        "no node is known for these samples"
    );
}

#[test]
fn report_weight_latency_weighs_stacks_by_access_latency() {
    let Some(file) = fixture("pebs/ivb-ep-mem-loads.perf.data") else {
        return;
    };
    let f = file.to_str().unwrap();
    let out = sparkles(&["report", "--weight", "latency", "--format", "folded", f]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // perf mem report: "Total weight : 621"; by period the same samples weigh 5911.
    assert_eq!(folded_total(&String::from_utf8_lossy(&out.stdout)), 621);
    let out = sparkles(&["report", "--format", "folded", f]);
    assert_ne!(folded_total(&String::from_utf8_lossy(&out.stdout)), 621);
    let tmp = tempfile::tempdir().unwrap();
    let svg = tmp.path().join("latency.svg");
    let out = sparkles(&[
        "report",
        "--weight",
        "latency",
        "--format",
        "svg",
        "-o",
        svg.to_str().unwrap(),
        f,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("weighted by access latency"));
    // A capture whose samples carry no weight: refused, naming the flag and the file,
    // and nothing written.
    let Some(plain) = fixture("callchain/vector_static_gcc.dwarf.perf.data") else {
        return;
    };
    let out_file = tmp.path().join("never.svg");
    let out = sparkles(&[
        "report",
        "--weight",
        "latency",
        "--format",
        "svg",
        "-o",
        out_file.to_str().unwrap(),
        plain.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--weight latency") && err.contains("vector_static_gcc"),
        "{err}"
    );
    assert!(!out_file.exists());
    // Its samples have DATA_SRC, all N/A (cycles): no memory section, and a note why.
    let p = json(&sparkles(&[
        "report",
        "--format",
        "json",
        plain.to_str().unwrap(),
    ]));
    assert!(p.get("memory").is_none());
    assert!(p["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().contains("not a memory event")));
}

/// A real hybrid capture (`cpu_atom/cycles:Pu/`, `cpu_core/cycles:Pu/` and perf's
/// tracking `dummy:HGu`, recorded by perf ≥ 6.3): the profile is named by the event that
/// sampled, and `--event` keeps one event's samples or names the events it lacks.
#[test]
fn report_event_keeps_one_event_of_a_hybrid_capture() {
    let Some(file) = fixture("callchain/cpp-inlining.perf-ge6.3.perf.data") else {
        return;
    };
    let f = file.to_str().unwrap();
    let p = json(&sparkles(&["report", "--format", "json", f]));
    // Every sample is cpu_core's (ids 540 and 541 of its attr).
    assert_eq!(p["event"], "cpu_core/cycles:Pu/");
    assert_eq!(p["samples"], 539);
    let p = json(&sparkles(&[
        "report",
        "--format",
        "json",
        "--event",
        "cpu_atom/cycles:Pu/",
        f,
    ]));
    assert_eq!(p["event"], "cpu_atom/cycles:Pu/");
    assert_eq!(p["samples"], 0);
    let tmp = tempfile::tempdir().unwrap();
    let out_file = tmp.path().join("r.json");
    let out = sparkles(&[
        "report",
        "--event",
        "cycles",
        "-o",
        out_file.to_str().unwrap(),
        f,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--event cycles: ")
            && err.contains("its events: cpu_atom/cycles:Pu/, cpu_core/cycles:Pu/, dummy:HGu"),
        "{err}"
    );
    assert!(!out_file.exists());
}

#[cfg(target_os = "linux")]
#[path = "../../testdata/support/confine.rs"]
mod confine;

/// `sparkles ARGS` run as `confine` makes it; `None` where it cannot be confined so.
#[cfg(target_os = "linux")]
fn sparkles_confined(
    args: &[&str],
    confine: impl FnOnce(&mut Command) -> Option<&mut Command>,
) -> Option<Output> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sparkles"));
    command.args(args);
    confine(&mut command)?;
    Some(command.output().unwrap())
}

/// With perf_event_open refused by a seccomp filter (Docker's default profile): `record`
/// fails saying so (not blaming the paranoid level) and writes nothing; `caps` reports
/// every perf_event concern absent with that reason; reading a capture needs no
/// perf_event at all.
#[test]
#[cfg(target_os = "linux")]
fn where_perf_event_open_is_refused_record_says_so_and_reading_works() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("refused.perf.data");
    let record = ["record", "-o", path.to_str().unwrap(), "--", "true"];
    let Some(out) = sparkles_confined(&record, confine::with_perf_event_refused) else {
        skip::skip("perf_event", "no seccomp filter for this architecture here");
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("seccomp"), "{err}");
    assert!(!err.contains("perf_event_paranoid is"), "{err}");
    assert!(!path.exists(), "a failed record wrote {}", path.display());

    let out = sparkles_confined(&["caps", "--json"], confine::with_perf_event_refused).unwrap();
    assert!(out.status.success());
    let v = json(&out);
    let counting = v["concerns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "scalar_counting")
        .unwrap();
    assert_eq!(counting["status"], "absent", "{counting}");
    assert!(
        counting["reasons"].to_string().contains("seccomp"),
        "{counting}"
    );

    let Some(capture) = fixture("callchain/vector_static_gcc.dwarf.perf.data") else {
        return;
    };
    let out = sparkles_confined(
        &["report", capture.to_str().unwrap(), "--format", "json"],
        confine::with_perf_event_refused,
    )
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(json(&out)["samples"].as_u64().unwrap() > 0);
}

/// As an unprivileged user: `caps` runs and says it is not root; `record` samples user
/// mode where the paranoid level allows it (and says so), and where it does not (3),
/// fails naming the setting and writes nothing.
#[test]
#[cfg(target_os = "linux")]
fn as_an_unprivileged_user_record_samples_user_mode_or_names_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let Some(out) = sparkles_confined(&["caps", "--json"], confine::as_nobody) else {
        skip::skip("root", "only root runs a command as another user");
        return;
    };
    if !out.status.success() && out.stdout.is_empty() {
        skip::skip(
            "root",
            format!(
                "nobody cannot run {} from where it is: {}",
                env!("CARGO_BIN_EXE_sparkles"),
                String::from_utf8_lossy(&out.stderr)
            ),
        );
        return;
    }
    assert_eq!(json(&out)["environment"]["root"], false);
    let path = dir.path().join("user.perf.data");
    let out = sparkles_confined(
        &[
            "record",
            "-o",
            path.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &busy(),
        ],
        confine::as_nobody,
    )
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let paranoid = sparkles_sampler::system::System::probe().perf_event_paranoid;
    if sparkles_sampler::system::seccomp_filtered() {
        // This process's filter is the child's too: it refuses, and says so.
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("seccomp"), "{err}");
        return;
    }
    match paranoid {
        3.. => {
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(err.contains("perf_event_paranoid is 3"), "{err}");
            assert!(!path.exists());
        }
        2 => {
            assert!(out.status.success(), "{err}");
            assert!(err.contains("user mode only"), "{err}");
            let (samples, _) = samples_with_stacks(&path);
            assert!(samples > 0, "{err}");
        }
        _ => assert!(out.status.success(), "{err}"),
    }
}

/// Discriminators as binutils prints them, from DWARF 5 and DWARF 4 line tables, for
/// every byte of the program's functions and of `_start` (which no unit covers: its
/// discriminators come from the module's whole line table), in one batch (named on
/// every core) and one address at a time.
#[test]
fn addr2line_prints_binutils_discriminators() {
    let Some(gnu) = sparkles_symbolize::binutils::gnu_addr2line() else {
        skip::skip("binutils", "binutils addr2line is not installed");
        return;
    };
    let src =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/symbolize/discriminators.c");
    let tmp = tempfile::tempdir().unwrap();
    for dwarf in ["-gdwarf-5", "-gdwarf-4"] {
        let bin = tmp.path().join(format!("disc{dwarf}"));
        match Command::new("gcc")
            .args(["-O2", "-fno-inline", dwarf, "-o"])
            .arg(&bin)
            .arg(&src)
            .status()
        {
            Ok(s) if s.success() => {}
            other => {
                skip::skip(
                    "gcc",
                    format!("gcc could not build {}: {other:?}", src.display()),
                );
                return;
            }
        }
        let bytes = std::fs::read(&bin).unwrap();
        use object::{Object, ObjectSymbol};
        let file = object::File::parse(&*bytes).unwrap();
        let addrs: Vec<String> = file
            .symbols()
            .filter(|s| matches!(s.name(), Ok("f" | "main" | "_start")))
            .flat_map(|s| (s.address()..s.address() + s.size().max(16)).map(|a| format!("{a:#x}")))
            .collect();
        assert!(addrs.len() > 100, "{}", addrs.len());
        let exe = bin.to_str().unwrap();
        // Repeated until the batch is large enough to be named on every core.
        let repeats = 1200usize.div_ceil(addrs.len());
        let input = vec![addrs.join("\n"); repeats].join("\n") + "\n";
        let run = |program: &std::path::Path, args: &[&str]| {
            use std::io::Write;
            let mut child = Command::new(program)
                .args(args)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
            String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
        };
        let theirs = run(&gnu, &["-e", exe, "-a", "-f"]);
        assert!(
            theirs.contains("(discriminator "),
            "gcc {dwarf} wrote no discriminator: the test shows nothing"
        );
        let ours = run(
            std::path::Path::new(env!("CARGO_BIN_EXE_sparkles")),
            &["addr2line", "-e", exe, "-a", "-f"],
        );
        assert_eq!(ours, theirs, "{dwarf}");
        // One at a time (arguments, a batch of one each).
        for a in addrs.iter().step_by(7) {
            let one = sparkles(&["addr2line", "-e", exe, "-a", "-f", a]);
            let gnu_one = Command::new(&gnu)
                .args(["-e", exe, "-a", "-f", a])
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&one.stdout),
                String::from_utf8_lossy(&gnu_one.stdout),
                "{dwarf} {a}"
            );
        }
    }
}

/// A report with kernel frames names them alike from /proc/kallsyms read afresh and from
/// the copy kept for this boot (`<cache>/kallsyms/<boot id>`, private), which the first
/// report writes and the second reads.
#[test]
fn kernel_names_kept_for_the_boot_are_the_fresh_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kernel.perf.data");
    // A command that spends its time in the kernel: small reads of /dev/zero.
    let Some(_) = recorded(&[
        "record",
        "-o",
        path.to_str().unwrap(),
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=512",
        "count=400000",
    ]) else {
        return;
    };
    let cache = dir.path().join("cache");
    let report = |cache: &std::path::Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_sparkles"))
            .args(["report", "--format", "json", path.to_str().unwrap()])
            .env("SPARKLES_CACHE_DIR", cache)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    // What the machine allows, read from it (not from what the report did): kernel
    // samples in a capture (root, or perf_event_paranoid 1 or less) and kernel addresses
    // in /proc/kallsyms (kptr_restrict lets this user see them).
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(2);
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .is_some_and(|l| l.split_whitespace().nth(2) == Some("0"))
    });
    let addresses = std::fs::read_to_string("/proc/kallsyms").is_ok_and(|t| {
        t.lines().take(1000).any(|l| {
            l.split(' ')
                .next()
                .is_some_and(|a| a.bytes().any(|b| b != b'0'))
        })
    });
    if !(root || paranoid <= 1) {
        skip::skip(
            "kallsyms",
            format!("no kernel samples for this user (perf_event_paranoid {paranoid}, not root)"),
        );
        return;
    }
    if !addresses {
        skip::skip(
            "kallsyms",
            "/proc/kallsyms shows this user no addresses (kptr_restrict)",
        );
        return;
    }
    let fresh = report(&cache);
    let kept_dir = cache.join("kallsyms");
    let kept: Vec<_> = std::fs::read_dir(&kept_dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert_eq!(kept.len(), 1, "{kept:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&kept[0]).unwrap().permissions().mode();
        assert_eq!(
            mode & 0o077,
            0,
            "kernel addresses readable by others: {mode:o}"
        );
    }
    let v: Value = serde_json::from_str(&fresh).unwrap();
    let kernel_named = v["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "kernel" && f["name"] != "[kernel]")
        .count();
    assert!(kernel_named > 0, "no kernel function named: {fresh}");
    assert_eq!(report(&cache), fresh, "kept names differ from fresh ones");
}
