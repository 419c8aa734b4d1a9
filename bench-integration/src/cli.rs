//! The `sparkles` command: `list`, `event` and `caps` over the sampler's event layer.

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use serde::Serialize;
use sparkles_sampler::caps;
use sparkles_sampler::events::legacy::{PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT};
use sparkles_sampler::events::{EventAttr, EventResolver};
use sparkles_sampler::open::{open, open_on, OpenMode, OpenTarget};
use sparkles_sampler::system::System;

/// sparkles: perf_event events, capabilities and (as they land) profiles.
#[derive(Debug, Parser)]
#[command(name = "sparkles", version, about)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the events this machine exposes, each marked openable or not, with the reason.
    List {
        /// Print JSON (`sparkles.list/1`).
        #[arg(long)]
        json: bool,
        /// Read PMUs from this root's sys/bus/event_source (a fake tree): nothing is opened.
        #[arg(long, value_name = "DIR")]
        sysfs_root: Option<PathBuf>,
        /// Only events whose name contains this.
        filter: Option<String>,
    },
    /// Resolve event spellings into perf_event_attr fields, and say whether each opens here.
    Event {
        /// Event spellings, as perf accepts them (`cycles:u`, `cpu/event=0x3c/`, `sched:sched_switch`).
        #[arg(required = true)]
        names: Vec<String>,
        /// Print JSON (`sparkles.event/1`).
        #[arg(long)]
        json: bool,
        /// Read PMUs from this root's sys/bus/event_source (a fake tree): nothing is opened.
        #[arg(long, value_name = "DIR")]
        sysfs_root: Option<PathBuf>,
    },
    /// Print every record of a perf.data file in time order (like `perf script -D`, readable).
    Script {
        /// The perf.data file (file or pipe mode, compressed or not).
        file: PathBuf,
        /// `text`, or `json`: one JSON object per record.
        #[arg(long, value_enum, default_value = "text")]
        format: ScriptFormat,
        /// Print the header (mode, attrs, features) as one JSON object instead.
        #[arg(long)]
        header: bool,
        /// Print per-type record counts to stderr at the end.
        #[arg(long)]
        stats: bool,
        /// Unwind and name each sample's stack: a `stack` (frames innermost first) and
        /// `truncated` (null, or why the stack ends early) added to each sample.
        #[arg(long)]
        stacks: bool,
        /// How --stacks finds and names frames.
        #[command(flatten)]
        stack_args: StackArgs,
    },
    /// A profile of any perf.data file (ours or `perf record`'s): stacks unwound, named
    /// and aggregated into the `functions` and `symbols` views, a flamegraph, or JSON.
    Report {
        /// The perf.data file.
        file: PathBuf,
        /// `table` (both views), `json` (`sparkles.profile/1`), `folded` (stacks for
        /// flamegraph tools), `svg` (a flamegraph), `pprof` (gzipped profile.proto).
        #[arg(long, value_enum, default_value = "table")]
        format: ReportFormat,
        /// Write here (whole, or not at all) instead of standard output.
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: Option<PathBuf>,
        /// Rows per view in the table.
        #[arg(long, default_value_t = 20)]
        top: usize,
        /// What a sample weighs in the profile and flamegraph: `period` (as perf weighs
        /// samples), `latency` (a memory sample's weight: its access latency in cycles),
        /// `samples` (one each).
        #[arg(long, value_enum, default_value = "period")]
        weight: WeightArg,
        /// Only this event's samples (its name as the capture lists it, e.g.
        /// `cpu/mem-stores/P`); default: every event's, with a note where there are
        /// several.
        #[arg(long, value_name = "NAME")]
        event: Option<String>,
        /// How stacks are found and named.
        #[command(flatten)]
        stack_args: StackArgs,
    },
    /// The hot-function diff of two profiles: each function's share before and now, the
    /// change, and whether it is outside the sampling noise.
    Diff {
        /// The baseline: a perf.data file or a `profile.json`.
        base: PathBuf,
        /// The new run: a perf.data file or a `profile.json`.
        new: PathBuf,
        /// `table` (movers most significant first), `json` (`sparkles.diff/1`), `svg` (a
        /// differential flamegraph; a profile.json needs its folded.txt beside it).
        #[arg(long, value_enum, default_value = "table")]
        format: DiffFormat,
        /// Write here (whole, or not at all) instead of standard output.
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: Option<PathBuf>,
        /// Rows in the table.
        #[arg(long, default_value_t = 20)]
        top: usize,
    },
    /// Sample a command (or a running process) into a perf.data file.
    Record {
        /// Event to sample (any spelling `sparkles event` takes); default: cycles at the
        /// highest precise level, else cpu-clock, with the reason.
        #[arg(long, short = 'e')]
        event: Option<String>,
        /// Samples per second.
        #[arg(long, short = 'F', default_value_t = 4000)]
        freq: u64,
        /// Events between samples (instead of --freq).
        #[arg(long, short = 'c')]
        period: Option<u64>,
        /// `dwarf[,BYTES]` (user registers and stack copies, default 8192) or `fp`.
        #[arg(long, default_value = "dwarf")]
        call_graph: String,
        /// Stop after this many seconds.
        #[arg(long)]
        duration: Option<f64>,
        /// Output file.
        #[arg(short, long, default_value = "sparkles.perf.data")]
        output: PathBuf,
        /// Attach to a running process and its threads.
        #[arg(short, long)]
        pid: Option<u32>,
        /// Keep stack copies at their full size (no compaction).
        #[arg(long)]
        no_compact: bool,
        /// Sample memory accesses: the machine's precise memory event (AMD IBS, Intel
        /// PEBS load latency) with data addresses, else page faults with their data
        /// addresses (first-touch placement), the pages' nodes asked while it runs and
        /// written to OUTPUT.pages.json.
        #[arg(long)]
        mem: bool,
        /// The command to run and sample.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Source locations of addresses in an ELF file, in binutils addr2line's format.
    Addr2line {
        /// The ELF file.
        #[arg(short = 'e', long = "exe", default_value = "a.out")]
        exe: PathBuf,
        /// Print function names.
        #[arg(short = 'f', long = "functions")]
        functions: bool,
        /// Print inlined frames too.
        #[arg(short = 'i', long = "inlines")]
        inlines: bool,
        /// Demangle function names.
        #[arg(short = 'C', long = "demangle")]
        demangle: bool,
        /// Print each address first.
        #[arg(short = 'a', long = "addresses")]
        addresses: bool,
        /// One line per address.
        #[arg(short = 'p', long = "pretty-print")]
        pretty: bool,
        /// Another directory of separate debug files (`.build-id/xx/rest.debug` and debug
        /// links), searched before /usr/lib/debug; repeatable.
        #[arg(long = "debug-dir", value_name = "DIR")]
        debug_dirs: Vec<PathBuf>,
        /// Hex addresses (read from stdin when none are given).
        addrs: Vec<String>,
    },
    /// Probe the seven capabilities (counting, sampling, precise data source, symbolization,
    /// event space, NUMA, event naming) with real perf_event_open calls.
    Caps {
        /// Print JSON (`sparkles.caps/1`).
        #[arg(long)]
        json: bool,
    },
}

fn parse_unwind(s: &str) -> Result<sparkles_unwind::Mode, sparkles_unwind::UnknownMode> {
    s.parse()
}

/// How a capture's stacks are found and named (`script --stacks`, `report`).
#[derive(Debug, Clone, clap::Args)]
pub struct StackArgs {
    /// How user frames are found: `dwarf` (CFI over the stack copy), `fp` (frame
    /// pointers), `auto` (DWARF where the sample has a stack copy, else the kernel's
    /// callchain).
    #[arg(long, default_value = "auto", value_parser = parse_unwind)]
    unwind: sparkles_unwind::Mode,
    /// Look for the capture's files under DIR (their recorded paths, then by name).
    #[arg(long, value_name = "DIR")]
    symfs: Option<PathBuf>,
    /// Another directory of separate debug files, searched before /usr/lib/debug;
    /// repeatable.
    #[arg(long = "debug-dir", value_name = "DIR")]
    debug_dirs: Vec<PathBuf>,
}

impl StackArgs {
    /// The options, or what is wrong with the flags.
    fn options(&self) -> Result<sparkles_report::stacks::StackOptions, String> {
        if let Some(symfs) = self.symfs.as_ref().filter(|d| !d.is_dir()) {
            return Err(format!("--symfs {}: not a directory", symfs.display()));
        }
        Ok(sparkles_report::stacks::StackOptions {
            unwind: self.unwind,
            symfs: self.symfs.clone(),
            debug_dirs: self.debug_dirs.clone(),
            ..sparkles_report::stacks::StackOptions::default()
        })
    }
}

/// `sparkles report --weight`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WeightArg {
    /// The sample's period.
    Period,
    /// The sample's weight field (access latency).
    Latency,
    /// One per sample.
    Samples,
}

/// Output of `sparkles report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// Both flat views, the hot lines, notes.
    Table,
    /// `sparkles.profile/1`.
    Json,
    /// Folded stacks: `root;…;leaf weight` lines.
    Folded,
    /// A flamegraph SVG.
    Svg,
    /// A gzipped profile.proto for `go tool pprof`, Pyroscope, Parca.
    Pprof,
}

fn report_command(
    file: &std::path::Path,
    format: ReportFormat,
    output: Option<&std::path::Path>,
    top: usize,
    options: &sparkles_report::stacks::StackOptions,
) -> Result<(), String> {
    use sparkles_report::{flame, profile};
    let case = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (p, folded) = profile::profile_capture(file, &case, options)?;
    // Everything is made before anything is written.
    let bytes = match format {
        ReportFormat::Table => profile::table(&p, top).into_bytes(),
        ReportFormat::Json => {
            let mut j = serde_json::to_vec_pretty(&p).map_err(|e| e.to_string())?;
            j.push(b'\n');
            j
        }
        ReportFormat::Folded => folded.text().into_bytes(),
        ReportFormat::Svg => flame::svg(&p, &folded)?.into_bytes(),
        ReportFormat::Pprof => sparkles_report::pprof::gzipped(&p, &folded)?,
    };
    emit(output, &bytes)
}

/// Writes a command's output: to OUT whole (or not at all), else to standard output (a
/// reader that went away ends it quietly).
fn emit(output: Option<&std::path::Path>, bytes: &[u8]) -> Result<(), String> {
    match output {
        Some(path) => sparkles_report::profile::write_atomic(path, bytes),
        None => {
            let mut out = std::io::stdout().lock();
            match out.write_all(bytes).and_then(|()| out.flush()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.to_string()),
                _ => Ok(()),
            }
        }
    }
}

/// Output of `sparkles diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    /// Movers, most significant first.
    Table,
    /// `sparkles.diff/1`.
    Json,
    /// A differential flamegraph.
    Svg,
}

/// A profile and its folded stacks from a perf.data file or a profile.json (with the
/// folded.txt beside it, when there is one).
fn load_profile(
    path: &std::path::Path,
) -> Result<
    (
        sparkles_report::profile::Profile,
        Option<sparkles_report::profile::Folded>,
    ),
    String,
> {
    use sparkles_report::profile;
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.starts_with(b"PERFILE2") {
        let case = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (p, f) = profile::profile_capture(
            path,
            &case,
            &sparkles_report::stacks::StackOptions::default(),
        )?;
        return Ok((p, Some(f)));
    }
    let p: profile::Profile = serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "{}: neither a perf.data file nor a sparkles.profile/1 document: {e}",
            path.display()
        )
    })?;
    let folded = path
        .parent()
        .map(|d| d.join("folded.txt"))
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|t| profile::Folded::parse(&t).ok());
    Ok((p, folded))
}

fn diff_command(
    base: &std::path::Path,
    new: &std::path::Path,
    format: DiffFormat,
    output: Option<&std::path::Path>,
    top: usize,
) -> Result<(), String> {
    use sparkles_report::diff;
    let (b, bf) = load_profile(base)?;
    let (n, nf) = load_profile(new)?;
    let d = diff::diff(&format!("{} -> {}", b.case, n.case), &b, &n);
    let bytes = match format {
        DiffFormat::Table => diff::table(&d, top).into_bytes(),
        DiffFormat::Json => {
            let mut j = serde_json::to_vec_pretty(&d).map_err(|e| e.to_string())?;
            j.push(b'\n');
            j
        }
        DiffFormat::Svg => match (bf, nf) {
            (Some(bf), Some(nf)) => diff::svg(&d, &bf, &nf)?.into_bytes(),
            _ => {
                return Err(
                    "--format svg needs folded stacks: give perf.data files, or profile.json files with their folded.txt beside them".into(),
                )
            }
        },
    };
    emit(output, &bytes)
}

/// Output of `sparkles script`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScriptFormat {
    /// One readable line per record.
    Text,
    /// One JSON object per line per record.
    Json,
}

/// Whether one event opens here: `None` when not probed (a fake sysfs tree).
#[derive(Debug, Clone, Serialize)]
struct Openable {
    opens: Option<bool>,
    reason: Option<String>,
    /// With `:P`, the precise level the kernel accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    precise_ip_opened: Option<u8>,
}

fn probe_open(attr: &EventAttr, resolver: &EventResolver, system: &System) -> Openable {
    if !resolver.is_live() {
        return Openable {
            opens: None,
            reason: Some(format!(
                "not probed: {} describes another machine",
                resolver.root().display()
            )),
            precise_ip_opened: None,
        };
    }
    let per_cpu_pmu = !matches!(attr.type_, PERF_TYPE_SOFTWARE | PERF_TYPE_TRACEPOINT)
        && resolver.pmu(&attr.pmu).is_some_and(|p| !p.is_core);
    match open(attr, OpenMode::Counting, system) {
        Ok(opened) => Openable {
            opens: Some(true),
            reason: (!opened.fallbacks.is_empty()).then(|| opened.fallbacks.join("; ")),
            precise_ip_opened: attr.precise_max.then_some(opened.precise_ip),
        },
        // Uncore and MSR PMUs refuse per-task events: they count only CPU-wide.
        Err(_)
            if per_cpu_pmu
                && open_on(attr, OpenMode::Counting, OpenTarget::Cpu(0), system).is_ok() =>
        {
            Openable {
                opens: Some(true),
                reason: Some(format!(
                    "CPU-wide only: the {} PMU does not count per task",
                    attr.pmu
                )),
                precise_ip_opened: None,
            }
        }
        Err(e) => Openable {
            opens: Some(false),
            reason: Some(e.reason),
            precise_ip_opened: None,
        },
    }
}

#[derive(Serialize)]
struct EventRow<'a> {
    #[serde(flatten)]
    attr: &'a EventAttr,
    #[serde(flatten)]
    openable: Openable,
}

fn resolver_for(root: Option<&PathBuf>) -> Result<EventResolver, String> {
    let resolver = match root {
        Some(dir) => {
            if !dir.is_dir() {
                return Err(format!("--sysfs-root: {} is not a folder", dir.display()));
            }
            EventResolver::new(dir)
        }
        None => EventResolver::live(),
    };
    resolver.map_err(|e| e.to_string())
}

fn print_json(value: &impl Serialize) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}") {
        // A reader that went away (`| head`) ends the output, not the command.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.to_string()),
        _ => Ok(()),
    }
}

fn attr_line(a: &EventAttr) -> String {
    let mut parts = vec![
        format!("pmu={}", a.pmu),
        format!("type={}", a.type_),
        format!("config={:#x}", a.config),
    ];
    if a.config1 != 0 {
        parts.push(format!("config1={:#x}", a.config1));
    }
    if a.config2 != 0 {
        parts.push(format!("config2={:#x}", a.config2));
    }
    if a.precise_ip != 0 || a.precise_max {
        parts.push(format!(
            "precise_ip={}{}",
            a.precise_ip,
            if a.precise_max { " (max)" } else { "" }
        ));
    }
    for (set, name) in [
        (a.exclude_user, "exclude_user"),
        (a.exclude_kernel, "exclude_kernel"),
        (a.exclude_hv, "exclude_hv"),
        (a.exclude_guest, "exclude_guest"),
    ] {
        if set {
            parts.push(name.to_string());
        }
    }
    parts.join(" ")
}

fn opens_text(o: &Openable) -> String {
    match (o.opens, &o.reason) {
        (Some(true), reason) => {
            let mut text = "opens here".to_string();
            if let Some(p) = o.precise_ip_opened {
                text.push_str(&format!(" at precise_ip {p}"));
            }
            if let Some(r) = reason {
                text.push_str(&format!(" ({r})"));
            }
            text
        }
        (Some(false), Some(r)) => format!("does not open: {r}"),
        (_, Some(r)) => r.clone(),
        _ => String::new(),
    }
}

fn event(names: &[String], json: bool, root: Option<&PathBuf>) -> Result<(), String> {
    let resolver = resolver_for(root)?;
    let system = System::probe();
    let mut resolved = Vec::new();
    let mut errors = Vec::new();
    for name in names {
        match resolver.resolve(name) {
            Ok(attrs) => resolved.extend(attrs),
            Err(e) => errors.push(e.to_string()),
        }
    }
    if !errors.is_empty() {
        return Err(errors.join("\nerror: "));
    }
    let rows: Vec<EventRow<'_>> = resolved
        .iter()
        .map(|attr| EventRow {
            attr,
            openable: probe_open(attr, &resolver, &system),
        })
        .collect();
    if json {
        print_json(&serde_json::json!({"schema": "sparkles.event/1", "events": rows}))?;
    } else {
        for row in &rows {
            println!("{}: {}", row.attr.name, attr_line(row.attr));
            println!("    {}", opens_text(&row.openable));
        }
    }
    if let Ok(t) = resolver.tracefs() {
        if let Some(note) = &t.mounted_note {
            eprintln!("note: {note}");
        }
    }
    Ok(())
}

#[derive(Serialize)]
struct ListRow<'a> {
    group: &'a str,
    name: &'a str,
    attrs: &'a [EventAttr],
    #[serde(flatten)]
    openable: Openable,
}

fn list(json: bool, root: Option<&PathBuf>, filter: Option<&str>) -> Result<(), String> {
    let resolver = resolver_for(root)?;
    let system = System::probe();
    let events: Vec<_> = resolver
        .list()
        .into_iter()
        .filter(|e| filter.is_none_or(|f| e.name.contains(f)))
        .collect();
    // Opening a tracepoint registers a probe (tens of ms each): access to tracepoints is
    // one permission, so one representative open answers for all of them.
    let tracepoint_probe = events
        .iter()
        .filter(|e| e.group == "tracepoint")
        .min_by_key(|e| e.name != "raw_syscalls:sys_enter")
        .map(|e| {
            let mut o = probe_open(&e.attrs[0], &resolver, &system);
            if o.opens == Some(true) {
                o.reason = Some(format!("tracepoint access probed once, with {}", e.name));
            }
            o
        });
    let rows: Vec<ListRow<'_>> = events
        .iter()
        .map(|e| ListRow {
            group: e.group,
            name: &e.name,
            attrs: &e.attrs,
            // A wildcard event opens when its first PMU's instance does.
            openable: match (&tracepoint_probe, e.group) {
                (Some(probe), "tracepoint") => probe.clone(),
                _ => probe_open(&e.attrs[0], &resolver, &system),
            },
        })
        .collect();
    if json {
        let tracefs = resolver.tracefs().err().map(str::to_string);
        return print_json(&serde_json::json!({
            "schema": "sparkles.list/1",
            "sysfs_root": resolver.root(),
            "tracepoints_unavailable": tracefs,
            "events": rows,
        }));
    }
    let mut out = std::io::stdout().lock();
    let mut group = "";
    let width = rows
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(10)
        .min(48);
    for row in &rows {
        if row.group != group {
            group = row.group;
            let title = match group {
                "hardware" => "Hardware events",
                "software" => "Software events",
                "cache" => "Hardware cache events",
                "pmu" => "PMU event aliases (sysfs)",
                _ => "Tracepoints",
            };
            writeln!(out, "\n{title}:").map_err(|e| e.to_string())?;
            if let (Some(probe), "tracepoint") = (&tracepoint_probe, group) {
                if let Some(reason) = &probe.reason {
                    writeln!(out, "  ({reason})").map_err(|e| e.to_string())?;
                }
            }
        }
        let mark = match row.openable.opens {
            Some(true) => "openable",
            Some(false) => "not openable",
            None => "not probed",
        };
        let reason = row
            .openable
            .reason
            .as_deref()
            .filter(|_| row.openable.opens.is_some() && row.group != "tracepoint")
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        writeln!(out, "  {:<width$}  [{mark}{reason}]", row.name).map_err(|e| e.to_string())?;
    }
    if let Err(reason) = resolver.tracefs() {
        writeln!(out, "\nTracepoints: none listed: {reason}").map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn caps_command(json: bool) -> Result<(), String> {
    let report = caps::probe();
    if json {
        print_json(&report)
    } else {
        print!("{}", caps::render(&report));
        Ok(())
    }
}

fn script(
    file: &std::path::Path,
    format: ScriptFormat,
    header: bool,
    show_stats: bool,
    stacks: Option<&sparkles_report::stacks::StackOptions>,
) -> Result<(), String> {
    use sparkles_perf_data::{script, PerfData, Record};
    let data = PerfData::open(file).map_err(|e| e.to_string())?;
    for problem in &data.feature_problems {
        eprintln!("warning: {}: {problem}", file.display());
    }
    if header {
        let attrs: Vec<_> = data
            .attrs
            .iter()
            .map(|a| serde_json::json!({"name": a.name, "attr": a.attr, "ids": a.ids}))
            .collect();
        return print_json(&serde_json::json!({
            "schema": "sparkles.header/1",
            "mode": data.mode,
            "data_size": data.data_size(),
            "attrs": attrs,
            "features": data.features,
            "feature_problems": data.feature_problems,
        }));
    }
    let mut namer = stacks.map(|o| sparkles_report::stacks::StackNamer::for_capture(&data, o));
    if let Some(n) = &namer {
        for note in &n.notes {
            eprintln!("note: {note}");
        }
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut records = data.records().map_err(|e| e.to_string())?;
    let mut written = Ok(());
    let read = loop {
        let event = match records.next_record() {
            Ok(Some(event)) => event,
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        };
        let stack = namer.as_mut().and_then(|n| {
            n.observe(&event.record);
            match &event.record {
                Record::Sample(s) => Some(n.stack(s)),
                _ => None,
            }
        });
        written = match (format, &stack) {
            (ScriptFormat::Json, Some(st)) => script::write_json_with(
                &mut out,
                &event,
                sparkles_report::stacks::json_members(st).as_bytes(),
            ),
            (ScriptFormat::Json, None) => script::write_json(&mut out, &event),
            (ScriptFormat::Text, _) => {
                script::write_text(&mut out, &event).and_then(|()| match &stack {
                    Some(st) => out.write_all(sparkles_report::stacks::text_lines(st).as_bytes()),
                    None => Ok(()),
                })
            }
        };
        if written.is_err() {
            break Ok(());
        }
    };
    let written = written.and_then(|()| out.flush());
    if let Some(n) = &namer {
        // Unwind errors per cause and the modules that could not be used, with every run.
        eprintln!("sparkles script: {}", n.unwind_stats().summary());
        for why in n.unavailable() {
            eprintln!("note: {why}");
        }
    }
    read.map_err(|e| e.to_string())?;
    match written {
        // A reader that went away (`| head`) ends the output, not the command.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
        Err(e) => return Err(e.to_string()),
        Ok(()) => {}
    }
    if show_stats {
        eprintln!(
            "{}",
            serde_json::to_string_pretty(&records.stats()).map_err(|e| e.to_string())?
        );
    }
    Ok(())
}

fn addr2line_command(
    exe: &std::path::Path,
    options: sparkles_symbolize::binutils::Options,
    debug_dirs: &[PathBuf],
    addrs: &[String],
) -> Result<(), String> {
    use std::io::BufRead;
    let mut paths = sparkles_symbolize::SearchPaths::default();
    paths.debug_dirs.splice(0..0, debug_dirs.iter().cloned());
    let module = sparkles_symbolize::Module::open_in(exe, &paths).map_err(|e| e.to_string())?;
    if let Some(why) = module.debug_info().reason() {
        eprintln!("sparkles addr2line: {}: {why}", exe.display());
    }
    // Two threads, so output still follows each address as it comes (perf and other
    // tools drive addr2line interactively through pipes): this one parses addresses and
    // names them; the writer adds binutils's discriminators, whose table (every line
    // program of the module) is read while names are being found.
    let discriminators = module.discriminators();
    let (tx, rx) = std::sync::mpsc::channel::<(u64, Vec<sparkles_symbolize::Frame>)>();
    let writer = std::thread::spawn(move || -> Result<(), String> {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        // Flushed whenever no further answer is ready, so an interactive reader sees each.
        let mut next = rx.recv().ok();
        while let Some((addr, mut frames)) = next.take() {
            if let Some(first) = frames.first_mut() {
                first.discriminator = discriminators.get(addr);
            }
            let text = sparkles_symbolize::binutils::format(addr, &frames, &options);
            let written = out.write_all(text.as_bytes()).and_then(|()| {
                next = rx.try_recv().ok();
                if next.is_none() {
                    out.flush()?;
                    next = rx.recv().ok();
                }
                Ok(())
            });
            match written {
                // A reader that went away (`| head`) ends the output, not the command.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
                Err(e) => return Err(e.to_string()),
                Ok(()) => {}
            }
        }
        out.flush().or_else(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                Ok(())
            } else {
                Err(e.to_string())
            }
        })
    });
    let one = |text: &str| -> Result<(), String> {
        let t = text.trim();
        // binutils reads every address as hex, with or without 0x.
        let addr = u64::from_str_radix(t.trim_start_matches("0x").trim_start_matches("0X"), 16)
            .map_err(|_| format!("'{t}' is not a hex address"))?;
        let found = module.lookup(addr);
        if let Some(e) = found.error {
            eprintln!("sparkles addr2line: {e}: named from the symbol table");
        }
        // A writer that stopped (broken pipe) ends the reading too.
        tx.send((addr, found.frames)).map_err(|_| String::new())
    };
    let read = if addrs.is_empty() {
        std::io::stdin().lock().lines().try_for_each(|line| {
            let line = line.map_err(|e| e.to_string())?;
            if line.trim().is_empty() {
                Ok(())
            } else {
                one(&line)
            }
        })
    } else {
        addrs.iter().try_for_each(|a| one(a))
    };
    drop(tx);
    let written = writer
        .join()
        .unwrap_or_else(|_| Err("the output thread panicked".into()));
    match read {
        // The writer stopped first: its result is the command's.
        Err(e) if e.is_empty() => written,
        Err(e) => {
            written?;
            Err(e)
        }
        Ok(()) => written,
    }
}

/// Runs the command line `args` (the first is the program name); returns the exit status.
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let result = match &cli.command {
        Command::List {
            json,
            sysfs_root,
            filter,
        } => list(*json, sysfs_root.as_ref(), filter.as_deref()),
        Command::Event {
            names,
            json,
            sysfs_root,
        } => event(names, *json, sysfs_root.as_ref()),
        Command::Caps { json } => caps_command(*json),
        Command::Addr2line {
            exe,
            functions,
            inlines,
            demangle,
            addresses,
            pretty,
            debug_dirs,
            addrs,
        } => addr2line_command(
            exe,
            sparkles_symbolize::binutils::Options {
                functions: *functions,
                inlines: *inlines,
                demangle: *demangle,
                addresses: *addresses,
                pretty: *pretty,
            },
            debug_dirs,
            addrs,
        ),
        Command::Record {
            event,
            freq,
            period,
            call_graph,
            duration,
            output,
            pid,
            no_compact,
            mem,
            command,
        } => crate::record_cmd::record(&crate::record_cmd::RecordArgs {
            event: event.clone(),
            freq: *freq,
            period: *period,
            call_graph: call_graph.clone(),
            duration: *duration,
            output: output.clone(),
            pid: *pid,
            compact: !*no_compact,
            mem: *mem,
            command: command.clone(),
        }),
        Command::Diff {
            base,
            new,
            format,
            output,
            top,
        } => diff_command(base, new, *format, output.as_deref(), *top),
        Command::Report {
            file,
            format,
            output,
            top,
            weight,
            event,
            stack_args,
        } => stack_args.options().and_then(|mut options| {
            use sparkles_report::stacks::Weighting;
            options.event = event.clone();
            options.weight = match weight {
                WeightArg::Period => Weighting::Period,
                WeightArg::Latency => Weighting::Latency,
                WeightArg::Samples => Weighting::Samples,
            };
            report_command(file, *format, output.as_deref(), *top, &options)
        }),
        Command::Script {
            file,
            format,
            header,
            stats,
            stacks,
            stack_args,
        } => match stacks.then(|| stack_args.options()).transpose() {
            // The stack flags are checked only where they are used (--stacks).
            Ok(options) => script(file, *format, *header, *stats, options.as_ref()),
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("error: {message}");
            2
        }
    }
}

/// Prints the capability report (the harness's `--capabilities`).
pub fn print_capabilities() {
    print!("{}", caps::render(&caps::probe()));
}
