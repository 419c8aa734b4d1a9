//! Tracepoint ids from tracefs: `<tracing>/events/<subsystem>/<event>/id`.

use std::path::{Path, PathBuf};

use crate::error::{EventError, TracefsUnavailable};

/// Where tracefs lives under a root, in the order perf looks.
const CANDIDATES: [&str; 2] = ["sys/kernel/tracing", "sys/kernel/debug/tracing"];

/// A located tracefs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracefs {
    /// The tracing folder (holding `events/`).
    pub dir: PathBuf,
    /// Set when this process mounted it: what to tell the user.
    pub mounted_note: Option<String>,
}

/// Finds tracefs under `root`. On the live system (`root` is `/`) with neither
/// candidate mounted, root mounts tracefs at /sys/kernel/tracing and says so.
pub fn locate(root: &Path) -> Result<Tracefs, TracefsUnavailable> {
    for candidate in CANDIDATES {
        let dir = root.join(candidate);
        match std::fs::read_dir(dir.join("events")) {
            Ok(_) => {
                return Ok(Tracefs {
                    dir,
                    mounted_note: None,
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                return Err(TracefsUnavailable::NotReadable { dir })
            }
            Err(_) => {}
        }
    }
    if root != Path::new("/") {
        return Err(TracefsUnavailable::NotFound {
            root: root.to_path_buf(),
            looked: CANDIDATES.join(", "),
        });
    }
    if !cfg!(target_os = "linux") {
        return Err(TracefsUnavailable::NotLinux);
    }
    if !crate::sys::is_root() {
        return Err(TracefsUnavailable::NotMounted);
    }
    let target = Path::new("/sys/kernel/tracing");
    if let Err(e) = crate::sys::mount_tracefs() {
        return Err(TracefsUnavailable::MountFailed {
            target: target.to_path_buf(),
            reason: e.to_string(),
        });
    }
    Ok(Tracefs {
        dir: target.to_path_buf(),
        mounted_note: Some(format!(
            "mounted tracefs at {} (it was not mounted)",
            target.display()
        )),
    })
}

impl Tracefs {
    /// The id of tracepoint `subsystem:event`.
    pub fn id(&self, subsystem: &str, event: &str) -> Result<u64, EventError> {
        if subsystem.contains('/') || event.contains('/') || subsystem.starts_with('.') {
            return Err(EventError::Unknown {
                what: "tracepoint",
                name: format!("{subsystem}:{event}"),
                suggestions: Vec::new(),
            });
        }
        let path = self
            .dir
            .join("events")
            .join(subsystem)
            .join(event)
            .join("id");
        match std::fs::read_to_string(&path) {
            Ok(text) => text.trim().parse().map_err(|_| EventError::Sysfs {
                path,
                message: format!("'{}' is not a tracepoint id", text.trim()),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(EventError::Unknown {
                what: "tracepoint",
                name: format!("{subsystem}:{event}"),
                suggestions: crate::events::closest::closest(
                    &format!("{subsystem}:{event}"),
                    self.names_near(subsystem),
                ),
            }),
            Err(e) => Err(EventError::Sysfs {
                path,
                message: e.to_string(),
            }),
        }
    }

    /// Tracepoint names worth suggesting for a miss in `subsystem`: that subsystem's
    /// events if it exists, else every subsystem's name.
    fn names_near(&self, subsystem: &str) -> Vec<String> {
        let events = self.dir.join("events");
        let sub = events.join(subsystem);
        if sub.is_dir() {
            dir_names(&sub)
                .into_iter()
                .map(|e| format!("{subsystem}:{e}"))
                .collect()
        } else {
            dir_names(&events)
                .into_iter()
                .map(|s| format!("{s}:"))
                .collect()
        }
    }

    /// Every tracepoint as `(subsystem:event, id)`, sorted.
    pub fn all(&self) -> Vec<(String, u64)> {
        let events = self.dir.join("events");
        let mut out = Vec::new();
        for sub in dir_names(&events) {
            for event in dir_names(&events.join(&sub)) {
                let id = std::fs::read_to_string(events.join(&sub).join(&event).join("id"))
                    .ok()
                    .and_then(|t| t.trim().parse().ok());
                if let Some(id) = id {
                    out.push((format!("{sub}:{event}"), id));
                }
            }
        }
        out
    }
}

fn dir_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}
