//! Shared by the cli's benches: a number from their flags; a capture `perf record
//! --call-graph dwarf` makes of `testdata/unwind/callchains.c`, recorded once into the
//! bench-data folder; running a peer tool's shell pipeline. Each bench uses what it
//! needs.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sparkles_perf_data::sample::{Regs, StackUser};
use sparkles_perf_data::Sample;

#[path = "../../../testdata/support/commands.rs"]
mod commands;

/// The number after flag `name` on this bench's command line (`--runs 5`), else `default`.
pub fn number_arg(name: &str, default: f64) -> f64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn run(dir: &Path, program: &str, args: &[&str]) -> Result<(), String> {
    let status = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("{program}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{program} {args:?} failed ({status})"))
    }
}

/// Samples a capture needs with user registers and a stack copy to be worth measuring.
const MIN_STACK_SAMPLES: usize = 20;

/// A sample's user registers and stack copy, where it has both (a sample of a kernel
/// thread has no user registers; a copy can be empty).
pub fn user_stack<'a, 's>(s: &'s Sample<'a>) -> Option<(&'s Regs<'a>, &'s StackUser<'a>)> {
    match (&s.regs_user, &s.stack_user) {
        (Some(r), Some(st)) if r.abi != 0 && !st.valid().is_empty() => Some((r, st)),
        _ => None,
    }
}

/// Samples in a capture, and those of them with user registers and a stack copy.
pub fn stack_samples(path: &Path) -> Result<(usize, usize), String> {
    use sparkles_perf_data::{PerfData, Record};
    let data = PerfData::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (mut all, mut with_stacks) = (0, 0);
    data.for_each_record(|e| {
        if let Record::Sample(s) = &e.record {
            all += 1;
            with_stacks += usize::from(user_stack(s).is_some());
        }
        Ok::<(), sparkles_perf_data::Error>(())
    })
    .map_err(|e| format!("{}: {e:?}", path.display()))?;
    Ok((all, with_stacks))
}

/// `NAME-ROUNDS.perf.data` in `dir`: the program built with `gcc -O2 -g` and recorded with
/// `perf record -F FREQ --call-graph dwarf,STACK`; each of `rounds` extra arguments is
/// another 240 rounds of the program (about 0.3 s). Where the kernel's frequency limit is
/// below `freq`, more rounds are run, so that the capture still has enough samples. A
/// capture without enough samples with stacks is an error that says what it held, and is
/// not kept. Recorded once, reused after.
pub fn callchains_capture(
    dir: &Path,
    name: &str,
    rounds: usize,
    freq: u32,
    stack: u32,
) -> Result<PathBuf, String> {
    // A run of the program (a round of arguments: argc counts the name) is about 0.25 s.
    let runs = commands::runs_for(4 * MIN_STACK_SAMPLES as u64, u64::from(freq), 0.25);
    let rounds = rounds.max(runs - 1);
    let path = dir.join(format!("{name}-{rounds}.perf.data"));
    if path.is_file() {
        return Ok(path);
    }
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/unwind/callchains.c");
    let src = src.to_str().ok_or("source path is not UTF-8")?;
    run(dir, "gcc", &["-O2", "-g", "-o", "callchains", src])?;
    let tmp = path.with_extension("tmp");
    let tmp_s = tmp.to_str().ok_or("path is not UTF-8")?.to_string();
    let (freq, call_graph) = (freq.to_string(), format!("dwarf,{stack}"));
    let mut args = vec![
        "record",
        "-q",
        "-F",
        &freq,
        "--call-graph",
        &call_graph,
        "-o",
        &tmp_s,
        "./callchains",
    ];
    let extra = vec!["x"; rounds];
    args.extend(extra.iter().copied());
    run(dir, "perf", &args)?;
    let (all, with_stacks) = stack_samples(&tmp)?;
    if with_stacks < MIN_STACK_SAMPLES {
        let _ = std::fs::remove_file(&tmp);
        let limit = sparkles_sampler::session::max_sample_rate()
            .map_or("unreadable".to_string(), |l| format!("{l} Hz"));
        return Err(format!(
            "perf record -F {freq} of {} rounds gave {all} samples, {with_stacks} with a user \
             stack (fewer than {MIN_STACK_SAMPLES}; kernel.perf_event_max_sample_rate: {limit})",
            240 * (rounds + 1)
        ));
    }
    std::fs::rename(&tmp, &path).map_err(|e| e.to_string())?;
    Ok(path)
}

/// Runs a shell pipeline, its output discarded; the bytes it printed.
pub fn shell(script: &str) -> Result<u64, String> {
    let out = Command::new("sh")
        .args(["-c", script])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("`{script}` failed ({})", out.status));
    }
    Ok(out.stdout.len() as u64)
}

/// `NAME-fp.perf.data` in `dir`: the program of [`callchains_capture`] (built by it, so
/// call that first) recorded with `perf record -F FREQ -g` (the kernel's frame-pointer
/// callchains). Recorded once, reused after.
pub fn callchains_fp_capture(dir: &Path, name: &str, freq: u32) -> Result<PathBuf, String> {
    let path = dir.join(format!("{name}-fp.perf.data"));
    if path.is_file() {
        return Ok(path);
    }
    let tmp = path.with_extension("tmp");
    let tmp_s = tmp.to_str().ok_or("path is not UTF-8")?.to_string();
    let freq = freq.to_string();
    run(
        dir,
        "perf",
        &[
            "record",
            "-q",
            "-F",
            &freq,
            "-g",
            "-o",
            &tmp_s,
            "./callchains",
            "x",
            "x",
        ],
    )?;
    std::fs::rename(&tmp, &path).map_err(|e| e.to_string())?;
    Ok(path)
}

/// A capture of exactly `n` samples made from `source`: its records in file order, then
/// its samples again and again (each later in time than the last) until there are `n`.
/// Written uncompressed, stacks as they are, with the source's events and the features
/// reports read (architecture, kernel release, host). Made once, reused after.
pub fn synthesized(source: &Path, n: u64, out: &Path) -> Result<(), String> {
    use sparkles_perf_data::reader::RecordReader;
    use sparkles_perf_data::record::kind;
    use sparkles_perf_data::writer::{CaptureWriter, Compression, WrittenEvent};
    if out.is_file() {
        return Ok(());
    }
    let data = sparkles_perf_data::PerfData::open(source).map_err(|e| e.to_string())?;
    let first = data
        .attrs
        .first()
        .ok_or("the source capture has no events")?;
    let name = |a: &sparkles_perf_data::AttrEntry| a.name.clone().unwrap_or_default();
    let mut w = CaptureWriter::new(first.attr.clone(), first.ids.clone(), name(first));
    w.more_events = data.attrs[1..]
        .iter()
        .map(|a| WrittenEvent {
            attr: a.attr.clone(),
            ids: a.ids.clone(),
            name: name(a),
        })
        .collect();
    w.compact_stacks = false;
    w.compression = Compression::Off;
    let f = &data.features;
    w.host.arch = f.arch.clone().unwrap_or_default();
    w.host.osrelease = f.osrelease.clone().unwrap_or_default();
    w.host.hostname = f.hostname.clone().unwrap_or_default();
    let time_at = first.format.time_in_sample;
    let range = data.data_section();
    let mut records = RecordReader::from_bytes(data.bytes(), range.start, range.end);
    let (mut samples, mut written, mut last_time) = (Vec::<Vec<u8>>::new(), 0u64, 0u64);
    let mut rounds = 0usize;
    while let Some(raw) = records.advance().map_err(|e| e.to_string())? {
        if written >= n {
            break;
        }
        let bytes = records.current();
        rounds += usize::from(raw.header.type_ == kind::FINISHED_ROUND);
        if raw.header.type_ == kind::SAMPLE {
            if let Some(at) = time_at {
                let t = bytes
                    .get(8 + at..16 + at)
                    .ok_or("a sample shorter than its time")?;
                last_time = last_time.max(u64::from_le_bytes(t.try_into().unwrap_or_default()));
            }
            samples.push(bytes.to_vec());
            written += 1;
        }
        w.push(bytes);
    }
    if samples.is_empty() {
        return Err(format!("{} has no samples", source.display()));
    }
    let count = samples.len();
    // The repeats end a round (FINISHED_ROUND, as perf record writes after each pass over
    // its ring buffers) as often as the source does: a reader may hand out a round's
    // records once the next has ended, and a capture of a million samples with no rounds
    // in it would make every reader hold all of them to the end, as no real one does.
    let per_round = (count / rounds.max(1)).max(1);
    const FINISHED_ROUND: [u8; 8] = [68, 0, 0, 0, 0, 0, 8, 0];
    for (k, i) in (0..count).cycle().enumerate() {
        if written >= n {
            break;
        }
        if k > 0 && k % per_round == 0 {
            w.push(&FINISHED_ROUND);
        }
        let record = &mut samples[i];
        if let Some(at) = time_at {
            last_time += 50_000;
            record[8 + at..16 + at].copy_from_slice(&last_time.to_le_bytes());
        }
        w.push(&samples[i]);
        written += 1;
    }
    std::fs::create_dir_all(out.parent().unwrap_or(Path::new("."))).map_err(|e| e.to_string())?;
    w.write(out).map_err(|e| e.to_string())?;
    Ok(())
}

/// Runs `program ARGS`, its output discarded: its peak resident memory in KiB, as GNU
/// time (`/usr/bin/time -f %M`) measures it; `None` where that is not installed. Not
/// wait4's `ru_maxrss` of our own child: Linux keeps a process's high-water mark across
/// exec, and a child starts with its parent's (a bench that has read a large capture
/// in-process gave every child the same 751 MiB). Time's child starts from time's.
pub fn peak_memory(program: &Path, args: &[&str]) -> Result<Option<u64>, String> {
    peak_memory_fed(program, args, None)
}

/// [`peak_memory`] with the file `input` (where given) on the program's standard input.
pub fn peak_memory_fed(
    program: &Path,
    args: &[&str],
    input: Option<&Path>,
) -> Result<Option<u64>, String> {
    let time = Path::new("/usr/bin/time");
    if !time.is_file() {
        return Ok(None);
    }
    let out = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let status = Command::new(time)
        .args(["-f", "%M", "-o"])
        .arg(out.path())
        .arg(program)
        .args(args)
        .stdin(match input {
            Some(path) => Stdio::from(
                std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?,
            ),
            None => Stdio::null(),
        })
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("{}: {e}", time.display()))?;
    let said = std::fs::read_to_string(out.path()).unwrap_or_default();
    if !status.success() {
        return Err(format!(
            "{} {} failed ({status})",
            program.display(),
            args.join(" ")
        ));
    }
    Ok(said
        .trim()
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok()))
}
