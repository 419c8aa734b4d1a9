//! `sparkles script`: every record of a perf.data file in time order, as text or JSON
//! lines, each sample's named stack added with `--stacks`; or the header as one document.

use std::io::Write;
use std::path::PathBuf;

use sparkles_perf_data::{script, PerfData, Record};
use sparkles_report::stacks::{json_members, text_lines, StackNamer};

use crate::error::{self, Error};
use crate::events::print_json;
use crate::report::StackArgs;

/// Output of `sparkles script`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScriptFormat {
    /// One readable line per record.
    Text,
    /// One JSON object per line per record.
    Json,
}

/// `sparkles script`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct ScriptArgs {
    /// The perf.data file (file or pipe mode, compressed or not; a pipe is read as it
    /// comes).
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
}

/// `sparkles script`.
pub fn script(args: &ScriptArgs) -> Result<(), Error> {
    // The stack flags are checked only where they are used (--stacks).
    let stacks = args.stacks.then(|| args.stack_args.options()).transpose()?;
    let data = PerfData::open(&args.file)?;
    for problem in &data.feature_problems {
        eprintln!("warning: {}: {problem}", args.file.display());
    }
    if args.header {
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
    let mut namer = stacks.map(|o| StackNamer::for_capture(&data, &o));
    if let Some(n) = &namer {
        for note in &n.notes {
            eprintln!("note: {note}");
        }
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut records = data.records()?;
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
        written = match (args.format, &stack) {
            (ScriptFormat::Json, Some(st)) => {
                script::write_json_with(&mut out, &event, json_members(st).as_bytes())
            }
            (ScriptFormat::Json, None) => script::write_json(&mut out, &event),
            (ScriptFormat::Text, _) => {
                script::write_text(&mut out, &event).and_then(|()| match &stack {
                    Some(st) => out.write_all(text_lines(st).as_bytes()),
                    None => Ok(()),
                })
            }
        };
        // A reader that went away (`| head`) ends the reading too.
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
    read?;
    error::output(written)?;
    if args.stats {
        let stats =
            serde_json::to_string_pretty(&records.stats()).map_err(|e| Error::Output(e.into()))?;
        eprintln!("{stats}");
    }
    Ok(())
}
