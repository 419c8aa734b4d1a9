//! The PMUs a sysfs tree describes: `sys/bus/event_source/devices/<pmu>/` with its
//! `type`, `format/*`, `events/*`, `caps/*` and (hybrid core PMUs) `cpus`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::format::FormatField;
use crate::error::EventError;

/// `PERF_TYPE_RAW`: the type of the (big) core PMU.
pub const PERF_TYPE_RAW: u32 = 4;

/// One PMU read from sysfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pmu {
    /// Its name, the folder's name (`cpu`, `cpu_core`, `ibs_op`, …).
    pub name: String,
    /// Its `type`, the value of `perf_event_attr.type` for its events.
    pub type_: u32,
    /// Format terms by name.
    pub formats: BTreeMap<String, FormatField>,
    /// Event aliases by name, each the terms text of its `events/` file.
    pub aliases: BTreeMap<String, String>,
    /// `caps/max_precise`, where present.
    pub max_precise: Option<u8>,
    /// The CPUs it counts on (`cpus` of hybrid core PMUs).
    pub cpus: Option<String>,
    /// Whether it is a CPU core PMU (legacy hardware events are served by it).
    pub is_core: bool,
}

fn read_trimmed(path: &Path) -> Result<Option<String>, EventError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text.trim().to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(EventError::Sysfs {
            path: path.to_path_buf(),
            message: e.to_string(),
        }),
    }
}

fn files_in(dir: &Path) -> Result<Vec<(String, PathBuf)>, EventError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(EventError::Sysfs {
                path: dir.to_path_buf(),
                message: e.to_string(),
            })
        }
    };
    let mut files: Vec<(String, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    files.sort();
    Ok(files)
}

/// The folder holding the PMUs under a sysfs root (`/` on a live system).
pub fn devices_dir(sysfs_root: &Path) -> PathBuf {
    sysfs_root.join("sys/bus/event_source/devices")
}

impl Pmu {
    /// Reads one PMU folder.
    pub fn read(dir: &Path) -> Result<Pmu, EventError> {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let type_path = dir.join("type");
        let type_text = read_trimmed(&type_path)?.ok_or_else(|| EventError::Sysfs {
            path: type_path.clone(),
            message: "missing".to_string(),
        })?;
        let type_: u32 = type_text.parse().map_err(|_| EventError::Sysfs {
            path: type_path.clone(),
            message: format!("'{type_text}' is not a PMU type number"),
        })?;
        let mut formats = BTreeMap::new();
        for (term, path) in files_in(&dir.join("format"))? {
            let text = read_trimmed(&path)?.unwrap_or_default();
            let field = FormatField::parse(&text).map_err(|e| EventError::Sysfs {
                path: path.clone(),
                message: e.to_string(),
            })?;
            formats.insert(term, field);
        }
        let mut aliases = BTreeMap::new();
        for (event, path) in files_in(&dir.join("events"))? {
            // `.scale`, `.unit`, `.snapshot` and `.per-pkg` describe an alias; they are none.
            if event.contains('.') {
                continue;
            }
            aliases.insert(event, read_trimmed(&path)?.unwrap_or_default());
        }
        let max_precise =
            read_trimmed(&dir.join("caps/max_precise"))?.and_then(|t| t.parse::<u8>().ok());
        let cpus = read_trimmed(&dir.join("cpus"))?;
        let is_core =
            name == "cpu" || (cpus.is_some() && name.starts_with("cpu")) || type_ == PERF_TYPE_RAW;
        Ok(Pmu {
            name,
            type_,
            formats,
            aliases,
            max_precise,
            cpus,
            is_core,
        })
    }
}

/// Every PMU under `sysfs_root`, core PMUs first (by type), then the rest by name. A root
/// without the folder has none.
pub fn read_pmus(sysfs_root: &Path) -> Result<Vec<Pmu>, EventError> {
    let mut pmus = Vec::new();
    for (_, path) in files_in(&devices_dir(sysfs_root))? {
        if path.join("type").exists() {
            pmus.push(Pmu::read(&path)?);
        }
    }
    pmus.sort_by(|a, b| {
        b.is_core.cmp(&a.is_core).then_with(|| {
            if a.is_core {
                a.type_.cmp(&b.type_)
            } else {
                a.name.cmp(&b.name)
            }
        })
    });
    Ok(pmus)
}
