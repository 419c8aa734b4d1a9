//! `sparkles report` and `sparkles diff`: profiles of any perf.data file (ours or `perf
//! record`'s), and the hot-function diff of two; the flags turned into the report
//! library's options here, its errors put in the flags' words.

use std::io::Write;
use std::path::{Path, PathBuf};

use sparkles_report::profile::{self, Folded, Profile};
use sparkles_report::stacks::{StackOptions, Weighting};
use sparkles_report::{diff, flame, pprof};

use crate::error::{self, Error};

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
    /// In an allocation capture (`--profile=alloc`'s), keep the allocator's frames: by
    /// default a stack starts at the first frame outside the allocator and the `alloc`
    /// crate, the code that asked for the bytes.
    #[arg(long)]
    allocator_frames: bool,
}

fn parse_unwind(s: &str) -> Result<sparkles_unwind::Mode, sparkles_unwind::UnknownMode> {
    s.parse()
}

impl StackArgs {
    /// The report library's options, or what is wrong with the flags.
    pub fn options(&self) -> Result<StackOptions, Error> {
        if let Some(symfs) = self.symfs.as_ref().filter(|d| !d.is_dir()) {
            return Err(Error::usage(
                format!("--symfs {}", symfs.display()),
                "not a directory",
            ));
        }
        Ok(StackOptions {
            unwind: self.unwind,
            symfs: self.symfs.clone(),
            debug_dirs: self.debug_dirs.clone(),
            keep_allocator_frames: self.allocator_frames,
            ..StackOptions::default()
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
    /// A self-contained HTML page: the profile's views and its flamegraph.
    Html,
    /// speedscope's file format: a sampled profile per thread.
    Speedscope,
    /// The Firefox Profiler's processed format (gzipped when OUT ends in `.gz`).
    Firefox,
}

/// `sparkles report`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// The perf.data file.
    file: PathBuf,
    /// `table` (both views), `json` (`sparkles.profile/1`), `folded` (stacks for
    /// flamegraph tools), `svg` (a flamegraph), `pprof` (gzipped profile.proto), `html` (a
    /// self-contained page: the views and the flamegraph), `speedscope` (speedscope's file
    /// format), `firefox` (the Firefox Profiler's; gzipped when OUT ends in `.gz`).
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
    /// The wall-clock profile of a capture with switch records (`sparkles record
    /// --off-cpu`): every stack weighed in nanoseconds of thread time, waits under
    /// `[off-cpu: REASON]` frames.
    #[arg(long)]
    wall: bool,
    /// How stacks are found and named.
    #[command(flatten)]
    stack_args: StackArgs,
}

/// The case name a file's profile takes: its file name.
fn case_of(file: &Path) -> String {
    file.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The profile of `file` (with `wall`, its wall-clock profile), its errors said in the
/// words of the flags behind them.
fn profile_of(file: &Path, options: &StackOptions, wall: bool) -> Result<(Profile, Folded), Error> {
    profile_and_annotation(file, options, wall, None).map(|(p, f, _)| (p, f))
}

/// An annotation made in the same reading as a profile, or why it could not be made.
type Annotated = Option<Result<sparkles_report::annotate::Annotation, sparkles_report::Error>>;

/// [`profile_of`], with the annotation `select` asks for made in the same reading of the
/// capture.
fn profile_and_annotation(
    file: &Path,
    options: &StackOptions,
    wall: bool,
    select: Option<&sparkles_report::annotate::Select>,
) -> Result<(Profile, Folded, Annotated), Error> {
    let wants = sparkles_report::reading::Wants {
        profiles: vec![options],
        annotate: select.map(|s| (options, s)),
        ..Default::default()
    };
    let p = sparkles_report::reading::read_capture(file, &case_of(file), options, wants, |_| {})
        .and_then(|mut read| {
            let p = read
                .profiles
                .pop()
                .unwrap_or(Err(sparkles_report::Error::Empty))?;
            Ok((p, read.annotation))
        });
    let (p, annotation) = p.map_err(|e| match e {
        sparkles_report::Error::NoWeight { .. } => Error::usage("--weight latency", e.to_string()),
        sparkles_report::Error::NoSuchEvent { ref wanted, .. } => {
            Error::usage(format!("--event {wanted}"), e.to_string())
        }
        other => other.into(),
    })?;
    if !wall {
        return Ok((p.profile, p.folded, annotation));
    }
    let (w, f) = p.wall.ok_or_else(|| {
        Error::usage(
            "--wall",
            format!(
                "{} has no switch records: record it with `sparkles record --off-cpu` (or the harness's --profile=wall)",
                file.display()
            ),
        )
    })?;
    Ok((w, f, annotation))
}

/// JSON, pretty, ending in a newline.
fn json(value: &impl serde::Serialize) -> Result<Vec<u8>, Error> {
    let mut j = serde_json::to_vec_pretty(value).map_err(|e| Error::Output(e.into()))?;
    j.push(b'\n');
    Ok(j)
}

/// `sparkles report`.
pub fn report(args: &ReportArgs) -> Result<(), Error> {
    let mut options = args.stack_args.options()?;
    options.event = args.event.clone();
    options.weight = match args.weight {
        WeightArg::Period => Weighting::Period,
        WeightArg::Latency => Weighting::Latency,
        WeightArg::Samples => Weighting::Samples,
    };
    if matches!(
        args.format,
        ReportFormat::Speedscope | ReportFormat::Firefox
    ) {
        if args.wall {
            return Err(Error::usage(
                "--wall",
                "the speedscope and Firefox exports are of the on-CPU samples on their time line: leave out --wall",
            ));
        }
        let bytes = export(&args.file, &options, args.format, args.output.as_deref())?;
        return emit(args.output.as_deref(), &bytes);
    }
    // Inside the three hottest functions (for the page), on the same samples (the event
    // chosen, on CPU), from the same reading of the capture.
    let select = sparkles_report::annotate::Select {
        top: 3,
        ..Default::default()
    };
    let html = matches!(args.format, ReportFormat::Html);
    let (p, folded, annotation) =
        profile_and_annotation(&args.file, &options, args.wall, html.then_some(&select))?;
    // Everything is made before anything is written.
    let bytes = match args.format {
        ReportFormat::Table => profile::table(&p, args.top).into_bytes(),
        ReportFormat::Json => json(&p)?,
        ReportFormat::Folded => folded.text().into_bytes(),
        ReportFormat::Svg => flame::svg(&p, &folded)?.into_bytes(),
        ReportFormat::Pprof => pprof::gzipped(&p, &folded)?,
        ReportFormat::Html => {
            // Where the view inside cannot be made, the page says why.
            let inside = match annotation.unwrap_or(Err(sparkles_report::Error::Empty)) {
                Ok(a) => sparkles_report::annotate::sections(&a, 2),
                Err(e) => maud::html! { p { "No view inside the hot functions: " (e) } },
            };
            sparkles_report::html::page(&p, &folded, Some(inside))?.into_bytes()
        }
        ReportFormat::Speedscope | ReportFormat::Firefox => unreachable!("exported above"),
    };
    emit(args.output.as_deref(), &bytes)
}

/// A capture as speedscope's or the Firefox Profiler's file; Firefox's gzipped when the
/// output's name ends in `.gz`.
pub fn export(
    file: &Path,
    options: &StackOptions,
    format: ReportFormat,
    output: Option<&Path>,
) -> Result<Vec<u8>, Error> {
    use sparkles_report::export;
    let timeline =
        export::Timeline::of_capture(file, &case_of(file), options).map_err(|e| match e {
            sparkles_report::Error::NoSuchEvent { ref wanted, .. } => {
                Error::usage(format!("--event {wanted}"), e.to_string())
            }
            other => other.into(),
        })?;
    let viewer = match format {
        ReportFormat::Speedscope => export::Viewer::Speedscope,
        _ => export::Viewer::Firefox,
    };
    let gzip = output.is_some_and(|o| o.extension().is_some_and(|e| e == "gz"));
    Ok(export::viewer_file(&timeline, file, viewer, gzip)?)
}

/// Writes a command's output: to OUT whole (or not at all), else to standard output (a
/// reader that went away ends it quietly). Until the write, SIGINT and SIGTERM end the
/// command as they would (nothing is written yet); during it they are noted, the write
/// finishes or fails whole, and the command then stops, saying which.
pub(crate) fn emit(output: Option<&Path>, bytes: &[u8]) -> Result<(), Error> {
    use sparkles_perf_data::atomic_write;
    match output {
        Some(path) => {
            atomic_write::note_interrupts();
            let written = atomic_write::write_atomically(path, bytes);
            match (atomic_write::interrupted(), written) {
                (None, written) => Ok(written?),
                (Some(signal), Ok(())) => Err(Error::Interrupted {
                    signal,
                    kept: format!("{} written whole", path.display()),
                }),
                (Some(signal), Err(e)) => Err(Error::Interrupted {
                    signal,
                    kept: format!("not written ({e}); {} is as it was", path.display()),
                }),
            }
        }
        None => {
            let mut out = std::io::stdout().lock();
            error::output(out.write_all(bytes).and_then(|()| out.flush()))
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

/// `sparkles diff`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct DiffArgs {
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
    /// Compare the wall-clock profiles of perf.data files with switch records
    /// (`sparkles record --off-cpu`): where the time went, waiting included.
    #[arg(long)]
    wall: bool,
}

/// A profile and its folded stacks from a perf.data file or a profile.json (with the
/// folded.txt beside it, when there is one).
fn load_profile(path: &Path, wall: bool) -> Result<(Profile, Option<Folded>), Error> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if sparkles_perf_data::file::has_perf_data_magic(&bytes) {
        let (p, f) = profile_of(path, &StackOptions::default(), wall)?;
        return Ok((p, Some(f)));
    }
    let p: Profile = serde_json::from_slice(&bytes).map_err(|e| {
        Error::Input(format!(
            "{}: neither a perf.data file nor a sparkles.profile/1 document: {e}",
            path.display()
        ))
    })?;
    let folded = path
        .parent()
        .map(|d| d.join("folded.txt"))
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|t| Folded::parse(&t).ok());
    Ok((p, folded))
}

/// `sparkles diff`.
pub fn diff(args: &DiffArgs) -> Result<(), Error> {
    let (b, bf) = load_profile(&args.base, args.wall)?;
    let (n, nf) = load_profile(&args.new, args.wall)?;
    let d = diff::diff(&format!("{} -> {}", b.case, n.case), &b, &n);
    // The table says what weakens the comparison first; JSON carries it, and so does
    // standard error, where a reader of the JSON or SVG sees it.
    if !matches!(args.format, DiffFormat::Table) {
        for w in &d.warnings {
            eprintln!("sparkles diff: warning: {w}");
        }
    }
    let bytes = match args.format {
        DiffFormat::Table => diff::table(&d, args.top).into_bytes(),
        DiffFormat::Json => json(&d)?,
        DiffFormat::Svg => match (bf, nf) {
            (Some(bf), Some(nf)) => diff::svg(&d, &bf, &nf)?.into_bytes(),
            _ => {
                return Err(Error::usage(
                    "--format svg",
                    "needs folded stacks: give perf.data files, or profile.json files with their folded.txt beside them",
                ))
            }
        },
    };
    emit(args.output.as_deref(), &bytes)
}

/// Output of `sparkles annotate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AnnotateFormat {
    /// Per function its lines, then every instruction with its share (perf annotate's
    /// layout).
    Text,
    /// `sparkles.annotate/1` (docs/schemas/annotate.md).
    Json,
    /// A page of its own: the lines shaded by their samples, each function's whole source,
    /// its instructions.
    Html,
}

/// `sparkles annotate`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct AnnotateArgs {
    /// The perf.data file.
    file: PathBuf,
    /// A function to annotate (its demangled name, or its last path segments);
    /// repeatable. Default: the hottest, by the samples whose IP is in them.
    #[arg(long = "symbol", short = 's', value_name = "NAME")]
    symbols: Vec<String>,
    /// How many of the hottest functions, where no --symbol is given.
    #[arg(long, default_value_t = 5)]
    top: usize,
    /// `text`, `json` (`sparkles.annotate/1`) or `html`.
    #[arg(long, value_enum, default_value = "text")]
    format: AnnotateFormat,
    /// Compare with this: another capture of the same code (its same functions
    /// annotated), or an annotation (`sparkles.annotate/1` JSON, as a profiled baseline
    /// keeps); each line gets its change in share.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Write here (whole, or not at all) instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: Option<PathBuf>,
    /// Only this event's samples (its name as the capture lists it).
    #[arg(long, value_name = "NAME")]
    event: Option<String>,
    /// Look for source files built elsewhere under DIR (by ever shorter tails of the path
    /// DWARF records).
    #[arg(long, value_name = "DIR")]
    source_root: Option<PathBuf>,
    /// How stacks are found and named.
    #[command(flatten)]
    stack_args: StackArgs,
}

/// `sparkles annotate`.
pub fn annotate(args: &AnnotateArgs) -> Result<(), Error> {
    use sparkles_report::annotate;
    let mut options = args.stack_args.options()?;
    options.event = args.event.clone();
    if let Some(root) = args.source_root.as_ref().filter(|d| !d.is_dir()) {
        return Err(Error::usage(
            format!("--source-root {}", root.display()),
            "not a directory",
        ));
    }
    let select = annotate::Select {
        symbols: args.symbols.clone(),
        top: args.top,
        source_root: args.source_root.clone(),
    };
    let mut a = annotate::annotate(&args.file, &options, &select)?;
    if let Some(base) = &args.baseline {
        // The baseline's same functions, by name, whether or not they were its hottest.
        let base_select = annotate::Select {
            symbols: a.functions.iter().map(|f| f.name.clone()).collect(),
            ..select.clone()
        };
        let b = baseline_annotation(base, &options, &base_select)?;
        annotate::compare(&mut a, &b, &base.display().to_string());
    }
    let bytes = match args.format {
        AnnotateFormat::Text => annotate::text(&a).into_bytes(),
        AnnotateFormat::Json => json(&a)?,
        AnnotateFormat::Html => annotate::page(&a, &args.file.display().to_string()).into_bytes(),
    };
    emit(args.output.as_deref(), &bytes)
}

/// `--baseline FILE`: a capture (perf.data's magic), annotated as `select` says, or an
/// annotation's JSON.
fn baseline_annotation(
    file: &Path,
    options: &StackOptions,
    select: &sparkles_report::annotate::Select,
) -> Result<sparkles_report::annotate::Annotation, Error> {
    use std::io::Read;
    let io = |source| Error::Io {
        path: file.to_path_buf(),
        source,
    };
    let mut magic = [0u8; 8];
    let n = std::fs::File::open(file)
        .and_then(|mut f| f.read(&mut magic))
        .map_err(io)?;
    if sparkles_perf_data::file::has_perf_data_magic(&magic[..n]) {
        let mut picked = sparkles_report::annotate::annotate(file, options, select)?;
        // A function the capture has no sample in is simply not in it.
        picked.notes.clear();
        return Ok(picked);
    }
    let bytes = std::fs::read(file).map_err(io)?;
    let a: sparkles_report::annotate::Annotation = serde_json::from_slice(&bytes).map_err(|e| {
        Error::usage(
            format!("--baseline {}", file.display()),
            format!("neither a perf.data file nor an annotation (sparkles.annotate/1 JSON): {e}"),
        )
    })?;
    if a.schema != sparkles_report::annotate::SCHEMA {
        return Err(Error::usage(
            format!("--baseline {}", file.display()),
            format!(
                "its schema is {:?}, not {}",
                a.schema,
                sparkles_report::annotate::SCHEMA
            ),
        ));
    }
    Ok(a)
}
