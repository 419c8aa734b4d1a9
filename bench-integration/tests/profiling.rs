//! The `--profile` pass end to end (the harness's `profile` feature): a capture per
//! case, read into a profile, diffed against a profiled baseline, and memory placement.
//! Each skips, saying why, where the kernel refuses to sample.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

#[path = "../../testdata/support/browser.rs"]
mod browser;
#[path = "../../testdata/support/skip.rs"]
mod skip;

#[path = "../benches/demo_suite/mod.rs"]
mod demo;
mod support;

use std::path::Path;

use sparkles_bench::Suite;
use support::{run, SERIAL};

/// `suite` run with `--bench --profile` on `event` for `profile_time`, three timing
/// samples of a millisecond, and `extra`.
fn run_profiled(
    suite: Suite,
    profile_time: &str,
    event: &str,
    extra: &[&str],
) -> sparkles_bench::Outcome {
    let mut args = vec![
        "--bench",
        "--bench-min-time",
        "1ms",
        "--samples",
        "3",
        "--profile",
        "--profile-time",
        profile_time,
        "--profile-event",
        event,
    ];
    args.extend(extra);
    run(suite, &args)
}

#[test]
fn profile_writes_a_capture_per_case() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut suite = Suite::new("prof");
    suite.case("spin/loop", |b| {
        b.iter(|| {
            let mut x = 1u64;
            for i in 0..1000u64 {
                x = std::hint::black_box(x.wrapping_mul(i | 1));
            }
            x
        })
    });
    // 300 ms at 4000 Hz, or long enough for 400 samples at the kernel's lower limit (which
    // it lowers itself when sampling interrupts run long, as a VM's do).
    let rate = sparkles_sampler::session::allowed_frequency(4000);
    let profile_time = format!("{}ms", (400_000 / rate).max(300));
    let outcome = run_profiled(
        suite,
        &profile_time,
        "cpu-clock",
        &[
            "--profile-format",
            // The Firefox Profiler's format is feature `firefox`'s (on where the workspace
            // is built with the sparkles command).
            if sparkles_report::export::FIREFOX {
                "speedscope,firefox"
            } else {
                "speedscope"
            },
            "--out-dir",
            dir.path().to_str().unwrap(),
        ],
    );
    let row = &outcome.rows[0];
    let profile = row.profile.as_ref().expect("a profile summary");
    if let Some(error) = &profile.error {
        skip::skip(
            "perf_event",
            format!("the sampler could not start here: {error}"),
        );
        return;
    }
    let capture = dir.path().join("profile/spin_loop/capture.perf.data");
    assert_eq!(profile.capture.as_deref(), Some(capture.to_str().unwrap()));
    assert!(profile.samples > 100, "{profile:?}");
    assert_eq!(row.metrics["profile.samples"], Some(profile.samples as f64));
    let data = sparkles_perf_data::PerfData::open(&capture).unwrap();
    let stats = data
        .for_each_record(|_| Ok::<(), sparkles_perf_data::Error>(()))
        .unwrap();
    assert_eq!(stats.samples, profile.samples);
    // Ring buffers sized for 250 ms keep up on a busy machine; where a drain waited longer
    // still, what was lost is counted in the row, in the capture, and said.
    assert_eq!(
        (profile.lost, profile.lost_samples),
        (stats.lost, stats.lost_samples)
    );
    assert_eq!(
        profile.notes.iter().any(|n| n.starts_with("lost ")),
        profile.lost + profile.lost_samples > 0,
        "{:?}",
        profile.notes
    );
    // The timing pass ran before, with nothing enabled: its samples are untouched.
    assert_eq!(row.timing.as_ref().unwrap().samples.len(), 3);
    // Its stacks unwind through the case to the thread's root, with at most 1% errors.
    let u = profile.unwind.as_ref().expect("the capture was unwound");
    eprintln!("{}", u.describe());
    assert!(u.user_samples * 10 >= u.samples * 9, "{u:?}");
    let pct = |n: u64| 100.0 * n as f64 / u.user_samples as f64;
    assert!(pct(u.reached_case) >= 95.0, "{u:?}");
    assert!(pct(u.reached_root) >= 95.0, "{u:?}");
    assert!(pct(u.truncated.values().sum()) <= 1.0, "{u:?}");
    // The case's artifacts beside its capture, and its hottest functions in its row.
    let dir = capture.parent().unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("profile.json")).unwrap()).unwrap();
    assert_eq!(json["schema"], "sparkles.profile/1");
    assert_eq!(json["case"], "spin/loop");
    assert_eq!(json["samples"].as_u64(), Some(profile.samples));
    // The diff's blocks hold whole iterations of the body, as many as the pass ran.
    assert!(profile.iterations > 0, "{profile:?}");
    if profile.samples >= sparkles_report::profile::MIN_BLOCKED_SAMPLES {
        assert_eq!(json["blocked_by"], "iterations", "{}", json["blocked_by"]);
    }
    let svg = std::fs::read_to_string(dir.join("flamegraph.svg")).unwrap();
    assert!(svg.contains("spin/loop: ") && svg.trim_end().ends_with("</svg>"));
    // With the `annotate` feature (on in the workspace's tests: the sparkles command's
    // dev-dependency turns it on), the views inside the hot functions; without it, none,
    // and the run report says how to get them.
    #[cfg(not(feature = "annotate"))]
    {
        assert!(!dir.join("annotate.json").exists());
        let page = std::fs::read_to_string(dir.join("../../report/index.html")).unwrap();
        assert!(!page.contains("Inside the hot functions"));
        assert!(page.contains("need sparkles-bench's `annotate` feature"));
    }
    #[cfg(feature = "annotate")]
    {
        // Inside the hottest function: annotate.json's lines and instructions, and the run
        // report's view of them (the function the flat profile puts first by symbol).
        let a: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("annotate.json")).unwrap()).unwrap();
        assert_eq!(a["schema"], "sparkles.annotate/1");
        assert_eq!(a["precise"], false, "cpu-clock is not precise");
        // Its two views agree: the samples of each source line the instructions carry (the
        // innermost frame's) are those the lines view gives it, as a function's own line or
        // under one as inlined code.
        let hottest = &a["functions"][0];
        let at =
            |v: &serde_json::Value| (v["file"].as_str().map(str::to_string), v["line"].as_u64());
        let mut by_instruction: std::collections::BTreeMap<_, u64> = Default::default();
        let mut sampled = 0;
        for i in hottest["instructions"].as_array().unwrap() {
            let n = i["samples"].as_u64().unwrap();
            sampled += n;
            if n > 0 && i["line"].is_u64() {
                *by_instruction.entry(at(i)).or_default() += n;
            }
        }
        if cfg!(target_arch = "x86_64") || cfg!(target_arch = "aarch64") {
            assert_eq!(Some(sampled), hottest["samples"].as_u64(), "{hottest}");
        }
        let mut by_line: std::collections::BTreeMap<_, u64> = Default::default();
        for l in hottest["lines"].as_array().unwrap() {
            let inlined = l["inlined"].as_array().cloned().unwrap_or_default();
            let under: u64 = inlined.iter().map(|c| c["samples"].as_u64().unwrap()).sum();
            let own = l["samples"].as_u64().unwrap() - under;
            if own > 0 {
                *by_line.entry(at(l)).or_default() += own;
            }
            for c in &inlined {
                *by_line.entry(at(c)).or_default() += c["samples"].as_u64().unwrap();
            }
        }
        if !by_instruction.is_empty() {
            assert_eq!(by_instruction, by_line, "{hottest}");
        }
        // A function of this file (the case's closure, where it is among the hottest) has its
        // whole source listed: this file's lines, the loop's among them.
        let this_file = std::fs::read_to_string(file!())
            .or_else(|_| {
                std::fs::read_to_string(
                    Path::new(env!("CARGO_MANIFEST_DIR"))
                        .join("..")
                        .join(file!()),
                )
            })
            .unwrap();
        let mut listed_here = false;
        for f in a["functions"].as_array().unwrap() {
            let Some(src) = f.get("source").filter(|s| {
                s["file"]
                    .as_str()
                    .is_some_and(|p| p.ends_with("tests/profiling.rs"))
            }) else {
                continue;
            };
            listed_here = true;
            for l in src["lines"].as_array().unwrap() {
                let n = l["line"].as_u64().unwrap() as usize;
                assert_eq!(
                    l["text"].as_str(),
                    this_file.lines().nth(n - 1).map(str::trim_end),
                    "{l}"
                );
            }
        }
        let page = std::fs::read_to_string(dir.join("../../report/index.html")).unwrap();
        assert!(page.contains("Inside the hot functions"));
        assert!(page.contains("Not a precise event"));
        match browser::chromium() {
            Some(chromium) => {
                let page_path = dir.join("../../report/index.html");
                let rendered = browser::rendered(chromium, &page_path.canonicalize().unwrap());
                assert!(
                    rendered.contains("Inside the hot functions"),
                    "not rendered"
                );
                assert!(
                    rendered.contains("instructions</summary>"),
                    "no instruction view"
                );
                if listed_here {
                    assert!(
                        rendered.contains("whole function: profiling.rs"),
                        "no source view"
                    );
                }
            }
            None => skip::skip(
                "chromium",
                "no chromium here: the source view was checked as text only",
            ),
        }
    }
    let folded = std::fs::read_to_string(dir.join("folded.txt")).unwrap();
    let weight: u64 = folded
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(Some(weight), json["weight"].as_u64());
    // Rooted at the case: the harness's frames are folded into one root named after it,
    // and the case's samples (all but a few on other threads) are under it.
    // (A sample in harness code the loop calls, `drop_in_place<sparkles_bench::…>`, is
    // under the case like any other.)
    assert!(
        !folded
            .lines()
            .any(|l| l.split(';').any(|f| f.starts_with("sparkles_bench::"))),
        "{folded}"
    );
    let under_case: u64 = folded
        .lines()
        .filter(|l| l.starts_with("spin/loop;"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert!(
        under_case * 10 >= weight * 9,
        "{under_case} of {weight}:\n{folded}"
    );
    // The hottest symbols by self, five at most, each with self time of its own (a
    // thread's root at 100% total and no self never fills the list).
    assert!((1..=5).contains(&profile.top.len()), "{:?}", profile.top);
    assert!(
        profile.top.iter().all(|h| h.self_pct >= 0.05),
        "{:?}",
        profile.top
    );
    assert!(profile
        .top
        .windows(2)
        .all(|w| w[0].self_pct >= w[1].self_pct));
    // --profile-format: the viewers' files beside the capture, every sample in them.
    let speedscope: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("profile.speedscope.json")).unwrap())
            .unwrap();
    let in_speedscope: usize = speedscope["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["samples"].as_array().unwrap().len())
        .sum();
    assert_eq!(in_speedscope as u64, profile.samples);
    // Rooted at the case, as the flamegraph is.
    assert!(speedscope["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["name"] == "spin/loop"));
    if !sparkles_report::export::FIREFOX {
        assert!(!dir.join("profile.firefox.json.gz").exists());
        return;
    }
    let gz = std::fs::File::open(dir.join("profile.firefox.json.gz")).unwrap();
    let firefox: serde_json::Value =
        serde_json::from_reader(flate2::read::GzDecoder::new(gz)).unwrap();
    let in_firefox: u64 = firefox["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["samples"]["length"].as_u64().unwrap())
        .sum();
    assert_eq!(in_firefox, profile.samples);
}

#[test]
fn a_profiled_baseline_gives_each_case_a_hot_function_diff() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let suite = || {
        let mut suite = Suite::new("profdiff");
        // The hot code is one function (libc's memset): a loop of tiny debug-build calls
        // (black_box, Range::next, lt) splits its samples among them differently from
        // run to run, as a periodic sampler and the loop beat. Each call is long (1 MiB,
        // tens of µs): the harness's loop between calls, compiled unoptimized in this
        // test, is a few tenths of a percent of the samples. With 64 KiB calls it was
        // 1-2%, and once on a busy CI machine 0.9% in one run, 9.7% in the next, evenly
        // over that capture: a skew of where the timer's samples land that grows with
        // the calls a second.
        suite.case("spin", |b| {
            let mut buffer = vec![0u8; 1 << 20];
            let mut i = 0u8;
            b.iter(move || {
                i = i.wrapping_add(1);
                std::hint::black_box(&mut buffer).fill(i);
                buffer[i as usize]
            })
        });
        suite
    };
    // User mode only: the share of interrupts taken in the kernel differs between a busy
    // machine's runs, and memset's share is what is left of it.
    let event = "cpu-clock:u";
    let out = dir.path().to_str().unwrap();
    let first = run_profiled(
        suite(),
        "300ms",
        event,
        &["--out-dir", out, "--save-baseline", "main"],
    );
    if let Some(e) = first.rows[0]
        .profile
        .as_ref()
        .and_then(|p| p.error.as_ref())
    {
        skip::skip(
            "perf_event",
            format!("the sampler could not start here: {e}"),
        );
        return;
    }
    let kept = dir.path().join("baselines/main/profile/spin");
    assert!(kept.join("profile.json").is_file() && kept.join("folded.txt").is_file());
    // What the next run's warning about an unprofiled baseline asks.
    let saved = sparkles_bench::baseline::load("main", dir.path(), "profdiff").unwrap();
    assert!(saved.has_profiles());
    let second = run_profiled(
        suite(),
        "300ms",
        event,
        &["--out-dir", out, "--baseline", "main"],
    );
    let p = second.rows[0].profile.as_ref().unwrap();
    assert!(!p.movers.is_empty(), "{p:?}");
    // The same code: no significant mover.
    assert!(p.movers.iter().all(|m| !m.significant), "{:?}", p.movers);
    let case = dir.path().join("profile/spin");
    #[cfg(feature = "annotate")]
    {
        // The annotation kept with the baseline is the first run's alone; the second run's
        // has each line's change against it, its hottest function (memset, the same code)
        // found there.
        let kept_annotation: serde_json::Value =
            serde_json::from_slice(&std::fs::read(kept.join("annotate.json")).unwrap()).unwrap();
        assert!(kept_annotation.get("baseline").is_none());
        let compared: serde_json::Value =
            serde_json::from_slice(&std::fs::read(case.join("annotate.json")).unwrap()).unwrap();
        assert!(
            compared["baseline"]["source"]
                .as_str()
                .unwrap()
                .ends_with("baselines/main/profile/spin/annotate.json"),
            "{}",
            compared["baseline"]
        );
        let hottest = &compared["functions"][0];
        assert_eq!(hottest["name"], kept_annotation["functions"][0]["name"]);
        assert!(
            hottest["base"]["samples"].as_u64().unwrap() > 0,
            "{hottest}"
        );
        for l in hottest["lines"].as_array().unwrap() {
            assert!(l["change"].is_f64() && l["base_share"].is_f64(), "{l}");
        }
    }
    let diff: serde_json::Value =
        serde_json::from_slice(&std::fs::read(case.join("diff.json")).unwrap()).unwrap();
    assert_eq!(diff["schema"], "sparkles.diff/1");
    assert!(std::fs::read_to_string(case.join("diff.svg"))
        .unwrap()
        .trim_end()
        .ends_with("</svg>"));
    // A later run without the baseline leaves no diff of the earlier one beside its
    // capture.
    let third = run_profiled(suite(), "300ms", event, &["--out-dir", out]);
    assert!(third.rows[0].profile.as_ref().unwrap().movers.is_empty());
    assert!(!case.join("diff.json").exists() && !case.join("diff.svg").exists());
    #[cfg(feature = "annotate")]
    {
        let alone: serde_json::Value =
            serde_json::from_slice(&std::fs::read(case.join("annotate.json")).unwrap()).unwrap();
        assert!(alone.get("baseline").is_none(), "{}", alone["baseline"]);
    }
}

/// `--profile=mem` on a case that touches a fresh 4 MiB buffer each iteration: on a
/// machine without a precise memory PMU (this one: a VM), the fallback is said with its
/// reason and the capture is page faults with data addresses; every placed page is on
/// one of the machine's nodes (here all on node 0, the only one), asked of the kernel
/// while the case ran; the code that touched them is the case's.
#[test]
fn profile_mem_places_first_touched_pages_on_their_nodes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut suite = Suite::new("mem");
    suite.case("touch/4MiB", |b| {
        b.try_iter(|| demo::touch_fresh_pages(4 << 20))
    });
    let outcome = run(
        suite,
        &[
            "--bench",
            "--bench-min-time",
            "1ms",
            "--samples",
            "3",
            "--profile=mem",
            "--profile-time",
            "300ms",
            "--out-dir",
            dir.path().to_str().unwrap(),
        ],
    );
    let row = &outcome.rows[0];
    let profile = row.profile.as_ref().expect("a profile summary");
    if let Some(error) = &profile.error {
        skip::skip(
            "perf_event",
            format!("the sampler could not start here: {error}"),
        );
        return;
    }
    let numa = profile.numa.as_ref().expect("a numa section");
    let topology = sparkles_perf_data::topology::Topology::from_sysfs(Path::new("/")).unwrap();
    let nodes: Vec<u32> = topology.nodes.iter().map(|n| n.id).collect();
    // The plan the run made, as this machine and kernel make it.
    let plan = sparkles_sampler::mem_events::live_plan(
        &sparkles_sampler::EventResolver::live().unwrap(),
        &sparkles_sampler::system::System::probe(),
    )
    .unwrap();
    if plan.first_touch {
        let why = &plan.note;
        // The fallback, said with its reason.
        assert_eq!(numa.source, "first_touch");
        assert_eq!(numa.node_source.as_deref(), Some("move_pages"));
        assert_eq!(profile.event, "page-faults");
        let json: serde_json::Value = serde_json::from_slice(
            &std::fs::read(dir.path().join("profile/touch_4MiB/profile.json")).unwrap(),
        )
        .unwrap();
        let note = json["event_note"].as_str().unwrap();
        assert!(
            note.contains("first-touch placement") && note.contains(why.as_str()),
            "{note}"
        );
    }
    assert!(numa.samples > 0, "{numa:?}");
    // A page the case freed before the drain asked about it has no node any more: on a
    // busy machine, where the drain waits for a CPU while the case frees its pages, a
    // good part of them. Those are counted with that reason; every other page is placed.
    let gone = |why: &str| why.contains("freed");
    let unplaced: u64 = numa
        .unplaced
        .iter()
        .filter(|(why, _)| !gone(why))
        .map(|(_, n)| n)
        .sum();
    assert!(
        numa.samples >= 4 * unplaced,
        "pages unplaced for reasons other than being freed: {numa:?}"
    );
    for cell in &numa.matrix {
        assert!(
            nodes.contains(&cell.mem_node) && nodes.contains(&cell.cpu_node),
            "{cell:?}"
        );
    }
    if nodes.len() == 1 {
        assert_eq!(numa.matrix.len(), 1);
        assert_eq!(
            (numa.matrix[0].cpu_node, numa.matrix[0].mem_node),
            (nodes[0], nodes[0])
        );
        assert_eq!(numa.local_share, 1.0);
    }
    // The code that touched them: the case's function (the write inlined into it).
    assert!(
        numa.code
            .iter()
            .any(|c| c.function.contains("touch_fresh_pages")
                || c.symbol
                    .as_deref()
                    .is_some_and(|s| s.contains("touch_fresh_pages"))),
        "{:?}",
        numa.code
    );
    assert!(numa
        .data_objects
        .iter()
        .all(|d| d.kind == "anon" || d.kind == "heap"));
    // The page table is beside the capture, and `sparkles report` on the capture alone
    // finds it.
    let capture = dir.path().join("profile/touch_4MiB/capture.perf.data");
    assert!(sparkles_perf_data::pages::PageNodes::read_beside(&capture)
        .unwrap()
        .is_some());
    let (p, _) = sparkles_report::capture::profile_capture(
        &capture,
        "touch",
        &sparkles_report::stacks::StackOptions::default(),
    )
    .unwrap();
    assert_eq!(p.numa.as_ref().unwrap().samples, numa.samples);
    assert!(profile.numa_line().unwrap().starts_with("numa ("));
}

#[inline(never)]
fn spin_for(d: std::time::Duration) {
    let start = std::time::Instant::now();
    while start.elapsed() < d {
        std::hint::black_box(start.elapsed());
    }
}

/// When each of `sleep_for`'s sleeps began and ended, as the sleeping thread saw them.
static SLEEPS: std::sync::Mutex<Vec<(std::time::Instant, std::time::Instant)>> =
    std::sync::Mutex::new(Vec::new());

/// Seconds of the sleeps logged in `SLEEPS` that fall within `seconds` before the last
/// one ended: what the case slept in its last pass of that length (the profile pass), as
/// timed around each call (a busy machine's wait for a CPU after the wakeup included),
/// and at least asleep (each call's time, up to the `asked` sleep: the kernel sleeps no
/// less).
fn slept_in_last(seconds: f64, asked: std::time::Duration) -> (f64, f64) {
    let sleeps = SLEEPS.lock().unwrap_or_else(|e| e.into_inner());
    let Some(&(_, end)) = sleeps.last() else {
        return (0.0, 0.0);
    };
    let from = end - std::time::Duration::from_secs_f64(seconds);
    let within = || {
        sleeps
            .iter()
            .map(move |&(a, b)| b.saturating_duration_since(a.max(from)))
    };
    (
        within().map(|d| d.as_secs_f64()).sum(),
        within().map(|d| d.min(asked).as_secs_f64()).sum(),
    )
}

#[inline(never)]
fn sleep_for(d: std::time::Duration) -> u32 {
    let start = std::time::Instant::now();
    std::thread::sleep(d);
    let end = std::time::Instant::now();
    SLEEPS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((start, end));
    // Work after the call: a tail call would leave no frame of this function.
    std::hint::black_box(7)
}

/// `--profile=wall` of a case that spins 6 ms and sleeps 4 ms: the row's `offcpu` says
/// what share of its thread's time was spent waiting (not counting time preempted): at
/// least the sleeps it asked for, at most what the thread timed around them (both 40% on
/// an idle machine; on a busy one the wait for a CPU after each wakeup is between them,
/// and a spin preempted near its end overshoots, so waiting is less), the wall-clock flamegraph
/// hangs the sleep under its own frame, and a wall baseline gives a wall diff.
#[test]
fn a_wall_profile_accounts_for_the_time_a_case_waits() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let suite = || {
        let mut suite = Suite::new("wall");
        suite.case("spin_then_sleep", |b| {
            b.iter(|| {
                spin_for(std::time::Duration::from_millis(6));
                sleep_for(std::time::Duration::from_millis(4));
            })
        });
        suite
    };
    let flags = |extra: &'static str, name: &'static str| {
        vec![
            "--bench",
            "--bench-min-time",
            "1ms",
            "--samples",
            "3",
            "--profile=wall",
            "--profile-time",
            "1s",
            "--profile-event",
            "cpu-clock",
            "--out-dir",
            dir.path().to_str().unwrap(),
            extra,
            name,
        ]
    };
    let first = run(suite(), &flags("--save-baseline", "w"));
    let p = first.rows[0].profile.as_ref().unwrap();
    if let Some(e) = &p.error {
        skip::skip(
            "perf_event",
            format!("the sampler could not start here: {e}"),
        );
        return;
    }
    let o = p
        .offcpu
        .as_ref()
        .expect("a wall profile has an offcpu section");
    let share = |reason: &str| {
        o.reasons
            .iter()
            .find(|r| r.reason == reason)
            .map_or(0.0, |r| r.share)
    };
    let waiting = o.off_cpu_share - share("preempted");
    eprintln!("{}", o.line());
    // The profile pass was the last to run the body: its sleeps are the last p.seconds'.
    // Waiting is the sleeps' time, not the wait for a CPU after each wakeup (preempted,
    // tens of percent of the time beside one busy loop per CPU): between what the calls
    // asked and what the thread timed around them.
    let thread_time = o.on_cpu_seconds + o.off_cpu_seconds;
    let (timed, asked) = slept_in_last(p.seconds, std::time::Duration::from_millis(4));
    let (timed, asked) = (timed / thread_time, asked / thread_time);
    eprintln!(
        "the case timed {:.1}% of its time in its sleeps, which asked for {:.1}%",
        timed * 100.0,
        asked * 100.0
    );
    assert!(
        waiting > asked - 0.03 && waiting < timed + 0.03,
        "asked {asked}, timed {timed}: {o:?}"
    );
    assert!(
        (0.9..1.2).contains(&(o.on_cpu_seconds + o.off_cpu_seconds)),
        "{o:?}"
    );
    if o.source == "sched_switch" {
        // The top wait is where the thread spent most time off the CPU: the sleep, unless
        // a busy machine preempted the spinning for longer.
        let top = if share("sleep") > share("preempted") {
            "sleep_for"
        } else {
            "spin_for"
        };
        assert!(o.top_wait.as_deref().unwrap_or("").ends_with(top), "{o:?}");
        // The switch-outs are counted apart from the samples of time on a CPU.
        assert!(p.switch_samples > 0, "{p:?}");
    }
    let capture = dir.path().join("profile/spin_then_sleep/capture.perf.data");
    let stats = sparkles_perf_data::PerfData::open(&capture)
        .unwrap()
        .for_each_record(|_| Ok::<(), sparkles_perf_data::Error>(()))
        .unwrap();
    assert_eq!(stats.samples, p.samples + p.switch_samples);
    let case = dir.path().join("profile/spin_then_sleep");
    let wall = std::fs::read_to_string(case.join("flamegraph-wall.svg")).unwrap();
    assert!(wall.contains("[off-cpu: "), "no wait frame");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(case.join("profile.json")).unwrap()).unwrap();
    assert_eq!(json["offcpu"]["source"], o.source.as_str());
    assert!(json["offcpu"]["functions"].is_array());
    // The row carries the section without its functions.
    let row = serde_json::to_value(&first.rows[0]).unwrap();
    assert!(row["profile"]["offcpu"]["functions"].is_null());
    assert!(dir
        .path()
        .join("baselines/w/profile/spin_then_sleep/profile-wall.json")
        .is_file());
    // Against the wall baseline: the diff is of wall profiles (waits are rows in it).
    let second = run(suite(), &flags("--baseline", "w"));
    let p = second.rows[0].profile.as_ref().unwrap();
    assert!(!p.movers.is_empty(), "{p:?}");
    let diff: serde_json::Value =
        serde_json::from_slice(&std::fs::read(case.join("diff.json")).unwrap()).unwrap();
    let text = diff.to_string();
    assert!(text.contains("[off-cpu: "), "{text}");
}

/// A case whose body never runs on a CPU while it is sampled (it only sleeps) has a
/// capture with no samples: the run still passes (nothing the user asked for was lost:
/// there is nothing to draw), the row says why it has no profile, and the case beside it
/// is profiled as ever. Beside a busy loop per CPU a case of mostly kernel time took no
/// user-mode sample this way on a CI machine, and the run failed for want of a
/// flamegraph.
#[test]
fn a_case_with_no_samples_says_so_and_the_run_passes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut suite = Suite::new("empty");
    suite.case("sleeps", |b| {
        b.iter(|| std::thread::sleep(std::time::Duration::from_millis(5)))
    });
    suite.case("spins", |b| {
        b.iter(|| spin_for(std::time::Duration::from_millis(1)))
    });
    let outcome = run_profiled(
        suite,
        "300ms",
        "cpu-clock",
        &[
            // A sample each 20 ms on a CPU: the sleeper's 60 wakeups take far less, the
            // spinner, beside a busy loop per CPU, at least a third of its 300 ms.
            "--profile-period",
            "20000000",
            "--out-dir",
            dir.path().to_str().unwrap(),
        ],
    );
    let sleeps = outcome.rows[0].profile.as_ref().expect("a profile summary");
    if let Some(error) = &sleeps.error {
        skip::skip(
            "perf_event",
            format!("the sampler could not start here: {error}"),
        );
        return;
    }
    assert_eq!(sleeps.samples, 0, "{sleeps:?}");
    assert!(sleeps.not_written.is_empty(), "{sleeps:?}");
    assert!(outcome.not_written.is_empty(), "{:?}", outcome.not_written);
    assert!(outcome.all_ok());
    assert!(!dir.path().join("profile/sleeps/flamegraph.svg").exists());
    assert!(dir.path().join("profile/sleeps/capture.perf.data").exists());
    assert!(
        sleeps.notes.iter().any(|n| n.contains("no samples")),
        "{:?}",
        sleeps.notes
    );
    let spins = outcome.rows[1].profile.as_ref().unwrap();
    assert!(
        spins.samples > 0 && spins.not_written.is_empty(),
        "{spins:?}"
    );
    assert!(dir.path().join("profile/spins/flamegraph.svg").exists());
    assert!(!spins.notes.iter().any(|n| n.contains("no samples")));
}
