//! `sparkles list`, `event` and `caps`: the sampler's event layer and capability probe,
//! each event said to open here or not, with the kernel's reason.

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;
use sparkles_sampler::caps;
use sparkles_sampler::events::legacy::{PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT};
use sparkles_sampler::events::{EventAttr, EventResolver};
use sparkles_sampler::open::{open, open_on, OpenMode, OpenTarget};
use sparkles_sampler::system::System;

use crate::error::{self, Error};

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

fn resolver_for(root: Option<&PathBuf>) -> Result<EventResolver, Error> {
    match root {
        Some(dir) => {
            if !dir.is_dir() {
                return Err(Error::usage(
                    "--sysfs-root",
                    format!("{} is not a folder", dir.display()),
                ));
            }
            Ok(EventResolver::new(dir)?)
        }
        None => Ok(EventResolver::live()?),
    }
}

/// Prints `value` as pretty JSON on standard output.
pub fn print_json(value: &impl Serialize) -> Result<(), Error> {
    let text =
        serde_json::to_string_pretty(value).map_err(|e| Error::Output(std::io::Error::other(e)))?;
    let mut out = std::io::stdout().lock();
    error::output(writeln!(out, "{text}"))
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

/// `sparkles event`.
pub fn event(names: &[String], json: bool, root: Option<&PathBuf>) -> Result<(), Error> {
    let resolver = resolver_for(root)?;
    let system = System::probe();
    let mut resolved = Vec::new();
    let mut errors = Vec::new();
    for name in names {
        match resolver.resolve(name) {
            Ok(attrs) => resolved.extend(attrs),
            Err(e) => errors.push(e),
        }
    }
    // Every spelling that does not resolve is said; the last is the command's error.
    if let Some(last) = errors.pop() {
        for e in errors {
            eprintln!("error: {e}");
        }
        return Err(last.into());
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

/// `sparkles list`.
pub fn list(json: bool, root: Option<&PathBuf>, filter: Option<&str>) -> Result<(), Error> {
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
        let tracefs = resolver.tracefs().err().map(ToString::to_string);
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
            error::output(writeln!(out, "\n{title}:"))?;
            if let (Some(probe), "tracepoint") = (&tracepoint_probe, group) {
                if let Some(reason) = &probe.reason {
                    error::output(writeln!(out, "  ({reason})"))?;
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
        error::output(writeln!(out, "  {:<width$}  [{mark}{reason}]", row.name))?;
    }
    if let Err(reason) = resolver.tracefs() {
        error::output(writeln!(out, "\nTracepoints: none listed: {reason}"))?;
    }
    Ok(())
}

/// `sparkles caps`.
pub fn caps(json: bool) -> Result<(), Error> {
    let report = caps::probe();
    if json {
        print_json(&report)
    } else {
        let mut out = std::io::stdout().lock();
        error::output(out.write_all(caps::render(&report).as_bytes()))
    }
}
