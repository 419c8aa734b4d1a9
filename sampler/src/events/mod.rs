//! Event naming: every spelling perf accepts, resolved into `perf_event_attr` fields.
//!
//! One layer for the whole project: the counting tiers, the sampler and the commands all
//! open events through [`EventResolver::resolve`]. The sysfs root is a parameter, so the
//! same code resolves names for this machine (`/`) and for the fake trees of machines we
//! do not have.
//!
//! Grammar (perf's): `NAME[:MODS]`, `PMU/TERM[=VALUE],…/[MODS]`, `rHEX`, `TYPE:CONFIG`,
//! `SUBSYSTEM:EVENT`. A legacy name (`cycles`) on a hybrid machine opens once per core
//! PMU with the PMU's type in config bits 32-63, so resolution returns a list.

mod closest;
pub mod format;
pub mod legacy;
pub mod pmu;
pub mod tracefs;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Serialize;

pub use crate::error::TracefsUnavailable;
pub use closest::closest;
pub use format::{ConfigWord, FormatField};
pub use pmu::Pmu;
pub use tracefs::Tracefs;

use crate::error::EventError;
use legacy::{PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_SOFTWARE, PERF_TYPE_TRACEPOINT};

/// Characters perf accepts as event modifiers.
const MODIFIER_CHARS: &str = "ukhGHIpPSDeWb";

/// Terms every PMU accepts besides its format terms.
const GENERIC_TERMS: [&str; 6] = ["config", "config1", "config2", "period", "freq", "name"];

/// A resolved event: the `perf_event_attr` fields its spelling sets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventAttr {
    /// The spelling it was resolved from.
    pub name: String,
    /// The PMU that serves it (`cpu`, `software`, `tracepoint`, `ibs_op`, …).
    pub pmu: String,
    /// `perf_event_attr.type`.
    #[serde(rename = "type")]
    pub type_: u32,
    /// `perf_event_attr.config`.
    pub config: u64,
    /// `perf_event_attr.config1`.
    pub config1: u64,
    /// `perf_event_attr.config2`.
    pub config2: u64,
    /// Skid constraint, 0–3.
    pub precise_ip: u8,
    /// Do not count user mode.
    pub exclude_user: bool,
    /// Do not count kernel mode.
    pub exclude_kernel: bool,
    /// Do not count the hypervisor.
    pub exclude_hv: bool,
    /// Do not count in guests.
    pub exclude_guest: bool,
    /// Do not count in the host.
    pub exclude_host: bool,
    /// Do not count while idle.
    pub exclude_idle: bool,
    /// `:D`: always on the PMU.
    pub pinned: bool,
    /// `:e`: alone on the PMU.
    pub exclusive: bool,
    /// `:P`: the highest precise level the PMU accepts; opening probes downwards from
    /// `precise_ip`.
    pub precise_max: bool,
    /// `period=` term.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_period: Option<u64>,
    /// `freq=` term.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_freq: Option<u64>,
    /// `name=` term.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl EventAttr {
    fn new(pmu: &str, type_: u32, config: u64) -> EventAttr {
        EventAttr {
            name: String::new(),
            pmu: pmu.to_string(),
            type_,
            config,
            config1: 0,
            config2: 0,
            precise_ip: 0,
            exclude_user: false,
            exclude_kernel: false,
            exclude_hv: false,
            exclude_guest: false,
            exclude_host: false,
            exclude_idle: false,
            pinned: false,
            exclusive: false,
            precise_max: false,
            sample_period: None,
            sample_freq: None,
            label: None,
        }
    }

    /// Whether the event is served by a hardware PMU (and so needs one).
    pub fn is_hardware(&self) -> bool {
        !matches!(
            self.type_,
            PERF_TYPE_SOFTWARE | PERF_TYPE_TRACEPOINT | legacy::PERF_TYPE_BREAKPOINT
        )
    }
}

fn parse_number(text: &str) -> Option<u64> {
    let t = text.trim();
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => t.parse().ok(),
    }
}

/// Terms of `a=1,b,c=0x2`: `(key, value)` with `None` for a bare term.
fn parse_terms(text: &str) -> Vec<(String, Option<String>)> {
    text.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| match t.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), Some(v.trim().to_string())),
            None => (t.to_string(), None),
        })
        .collect()
}

/// Resolves event spellings against one sysfs tree.
#[derive(Debug)]
pub struct EventResolver {
    root: PathBuf,
    pmus: Vec<Pmu>,
    tracefs: OnceLock<Result<Tracefs, TracefsUnavailable>>,
}

impl EventResolver {
    /// A resolver over the sysfs tree at `root` (`/` for this machine).
    pub fn new(root: impl AsRef<Path>) -> Result<EventResolver, EventError> {
        let root = root.as_ref().to_path_buf();
        Ok(EventResolver {
            pmus: pmu::read_pmus(&root)?,
            root,
            tracefs: OnceLock::new(),
        })
    }

    /// A resolver with no PMUs (software events, tracepoints and `TYPE:CONFIG` still
    /// resolve): for a machine whose sysfs cannot be read.
    pub fn empty(root: impl AsRef<Path>) -> EventResolver {
        EventResolver {
            root: root.as_ref().to_path_buf(),
            pmus: Vec::new(),
            tracefs: OnceLock::new(),
        }
    }

    /// A resolver for this machine.
    pub fn live() -> Result<EventResolver, EventError> {
        EventResolver::new("/")
    }

    /// The sysfs root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the tree is this machine's own (events can be opened).
    pub fn is_live(&self) -> bool {
        self.root == Path::new("/")
    }

    /// Every PMU, core PMUs first.
    pub fn pmus(&self) -> &[Pmu] {
        &self.pmus
    }

    /// The PMU named `name`.
    pub fn pmu(&self, name: &str) -> Option<&Pmu> {
        self.pmus.iter().find(|p| p.name == name)
    }

    /// The CPU core PMUs (one, or several on a hybrid machine).
    pub fn core_pmus(&self) -> impl Iterator<Item = &Pmu> {
        self.pmus.iter().filter(|p| p.is_core)
    }

    /// Whether the machine has more than one core PMU.
    pub fn is_hybrid(&self) -> bool {
        self.core_pmus().count() > 1
    }

    /// tracefs, located (and on the live system mounted, if root and needed) once.
    pub fn tracefs(&self) -> Result<&Tracefs, &TracefsUnavailable> {
        self.tracefs
            .get_or_init(|| tracefs::locate(&self.root))
            .as_ref()
    }

    /// The highest precise level `pmu` accepts: its `caps/max_precise`, raised to 2 on
    /// AMD machines with IBS, whose kernel forwards precise core events to `ibs_op`
    /// although the caps file describes PEBS alone.
    pub fn max_precise(&self, pmu: &str) -> u8 {
        let Some(p) = self.pmu(pmu).filter(|p| p.is_core) else {
            return 0;
        };
        let caps = p.max_precise.unwrap_or(0);
        if self.pmu("ibs_op").is_some() {
            caps.max(2)
        } else {
            caps
        }
    }

    /// Resolves one spelling into the events it opens (several for legacy names on a
    /// hybrid machine and for aliases several PMUs share).
    pub fn resolve(&self, spec: &str) -> Result<Vec<EventAttr>, EventError> {
        let spec = spec.trim();
        let syntax = |message: &str| EventError::Syntax {
            spec: spec.to_string(),
            message: message.to_string(),
        };
        if spec.is_empty() {
            return Err(syntax("empty event name"));
        }
        let (body, modifiers) = if let Some(first) = spec.find('/') {
            let last = spec.rfind('/').unwrap_or(first);
            if last == first {
                return Err(syntax("PMU terms need a closing '/': PMU/TERM=VALUE,…/"));
            }
            let rest = &spec[last + 1..];
            (&spec[..=last], rest.strip_prefix(':').unwrap_or(rest))
        } else {
            match spec.rsplit_once(':') {
                Some((head, tail))
                    if !tail.is_empty() && tail.chars().all(|c| MODIFIER_CHARS.contains(c)) =>
                {
                    (head, tail)
                }
                _ => (spec, ""),
            }
        };
        let mut attrs = if body.contains('/') {
            self.resolve_pmu_terms(spec, body)?
        } else {
            self.resolve_name(body)?
        };
        for attr in &mut attrs {
            attr.name = spec.to_string();
            self.apply_modifiers(attr, modifiers)
                .map_err(|message| syntax(&message))?;
        }
        Ok(attrs)
    }

    fn legacy_on_core_pmus(&self, type_: u32, config: u64) -> Vec<EventAttr> {
        if self.is_hybrid() {
            self.core_pmus()
                .map(|p| EventAttr::new(&p.name, type_, (u64::from(p.type_) << 32) | config))
                .collect()
        } else {
            let name = self.core_pmus().next().map_or("cpu", |p| p.name.as_str());
            vec![EventAttr::new(name, type_, config)]
        }
    }

    fn resolve_name(&self, name: &str) -> Result<Vec<EventAttr>, EventError> {
        if let Some((left, right)) = name.split_once(':') {
            if let (Ok(type_), Some(config)) = (left.parse::<u32>(), parse_number(right)) {
                let pmu = self
                    .pmus
                    .iter()
                    .find(|p| p.type_ == type_)
                    .map_or_else(|| format!("type {type_}"), |p| p.name.clone());
                return Ok(vec![EventAttr::new(&pmu, type_, config)]);
            }
            let tracefs = self.tracefs().map_err(|reason| EventError::NoTracefs {
                name: name.to_string(),
                reason: reason.clone(),
            })?;
            let id = tracefs.id(left, right)?;
            return Ok(vec![EventAttr::new("tracepoint", PERF_TYPE_TRACEPOINT, id)]);
        }
        if let Some(hex) = name.strip_prefix('r') {
            if !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()) {
                let config = u64::from_str_radix(hex, 16).map_err(|_| EventError::Syntax {
                    spec: name.to_string(),
                    message: "raw config wider than 64 bits".to_string(),
                })?;
                let pmu = self
                    .pmus
                    .iter()
                    .find(|p| p.type_ == pmu::PERF_TYPE_RAW)
                    .map_or("cpu", |p| p.name.as_str());
                return Ok(vec![EventAttr::new(pmu, pmu::PERF_TYPE_RAW, config)]);
            }
        }
        if let Some(config) = legacy::hardware(name) {
            return Ok(self.legacy_on_core_pmus(PERF_TYPE_HARDWARE, config));
        }
        if let Some(config) = legacy::software(name) {
            return Ok(vec![EventAttr::new("software", PERF_TYPE_SOFTWARE, config)]);
        }
        if let Some(config) = legacy::cache(name) {
            return Ok(self.legacy_on_core_pmus(PERF_TYPE_HW_CACHE, config));
        }
        let with_alias: Vec<&Pmu> = self
            .pmus
            .iter()
            .filter(|p| p.aliases.contains_key(name))
            .collect();
        if !with_alias.is_empty() {
            return with_alias
                .into_iter()
                .map(|p| self.encode_terms(p, name, &[(name.to_string(), None)]))
                .collect();
        }
        let mut known = legacy::all_names();
        for p in &self.pmus {
            known.extend(p.aliases.keys().cloned());
        }
        Err(EventError::Unknown {
            what: "event",
            name: name.to_string(),
            suggestions: closest(name, known),
        })
    }

    fn resolve_pmu_terms(&self, spec: &str, body: &str) -> Result<Vec<EventAttr>, EventError> {
        let first = body.find('/').unwrap_or(0);
        let pmu_name = &body[..first];
        let terms_text = &body[first + 1..body.len() - 1];
        if pmu_name.is_empty() {
            return Err(EventError::Syntax {
                spec: spec.to_string(),
                message: "no PMU name before '/'".to_string(),
            });
        }
        let Some(pmu) = self.pmu(pmu_name) else {
            return Err(EventError::Unknown {
                what: "PMU",
                name: pmu_name.to_string(),
                suggestions: closest(pmu_name, self.pmus.iter().map(|p| p.name.clone())),
            });
        };
        let terms = parse_terms(terms_text);
        // A legacy name as the only term of a core PMU with no alias of that name:
        // perf opens the legacy event on that PMU.
        if let [(term, None)] = terms.as_slice() {
            if pmu.is_core && !pmu.aliases.contains_key(term) && !pmu.formats.contains_key(term) {
                let legacy = legacy::hardware(term)
                    .map(|c| (PERF_TYPE_HARDWARE, c))
                    .or_else(|| legacy::cache(term).map(|c| (PERF_TYPE_HW_CACHE, c)));
                if let Some((type_, config)) = legacy {
                    let config = if self.is_hybrid() {
                        (u64::from(pmu.type_) << 32) | config
                    } else {
                        config
                    };
                    return Ok(vec![EventAttr::new(&pmu.name, type_, config)]);
                }
            }
        }
        Ok(vec![self.encode_terms(pmu, spec, &terms)?])
    }

    /// Encodes `terms` on `pmu`: aliases' terms first, then the given terms, each
    /// overwriting the bits of its field, so `cpu/mem-loads,ldlat=30/` ends with ldlat 30.
    fn encode_terms(
        &self,
        pmu: &Pmu,
        spec: &str,
        terms: &[(String, Option<String>)],
    ) -> Result<EventAttr, EventError> {
        let mut ordered: Vec<(String, Option<String>)> = Vec::new();
        let mut explicit = Vec::new();
        for (key, value) in terms {
            match (value, pmu.aliases.get(key)) {
                (None, Some(alias)) if !pmu.formats.contains_key(key) => {
                    ordered.extend(parse_terms(alias));
                }
                _ => explicit.push((key.clone(), value.clone())),
            }
        }
        ordered.extend(explicit);
        let mut attr = EventAttr::new(&pmu.name, pmu.type_, 0);
        for (key, value) in &ordered {
            let number = |v: &Option<String>| -> Result<u64, EventError> {
                match v {
                    None => Ok(1),
                    Some(text) => parse_number(text).ok_or_else(|| EventError::Syntax {
                        spec: spec.to_string(),
                        message: format!("term '{key}': '{text}' is not a number"),
                    }),
                }
            };
            match key.as_str() {
                "config" => attr.config = number(value)?,
                "config1" => attr.config1 = number(value)?,
                "config2" => attr.config2 = number(value)?,
                "period" => attr.sample_period = Some(number(value)?),
                "freq" => attr.sample_freq = Some(number(value)?),
                "name" => attr.label = value.clone(),
                _ => {
                    let Some(field) = pmu.formats.get(key) else {
                        let candidates = pmu
                            .formats
                            .keys()
                            .chain(pmu.aliases.keys())
                            .cloned()
                            .chain(GENERIC_TERMS.iter().map(|s| s.to_string()));
                        return Err(EventError::UnknownTerm {
                            pmu: pmu.name.clone(),
                            term: key.clone(),
                            suggestions: closest(key, candidates),
                        });
                    };
                    let v = number(value)?;
                    let placed = field.place(v).ok_or_else(|| EventError::ValueTooBig {
                        pmu: pmu.name.clone(),
                        term: key.clone(),
                        value: v,
                        field: field.to_string(),
                        bits: field.width(),
                    })?;
                    let word = match field.word {
                        ConfigWord::Config => &mut attr.config,
                        ConfigWord::Config1 => &mut attr.config1,
                        ConfigWord::Config2 => &mut attr.config2,
                        ConfigWord::Config3 => {
                            return Err(EventError::Syntax {
                                spec: spec.to_string(),
                                message: format!(
                                    "term '{key}' writes config3, which sparkles does not set"
                                ),
                            })
                        }
                    };
                    *word = (*word & !field.mask()) | placed;
                }
            }
        }
        Ok(attr)
    }

    /// Applies perf's modifiers. Without any, perf excludes guests; with `u`, `k`, `h`
    /// the named levels are counted and the others excluded.
    fn apply_modifiers(&self, attr: &mut EventAttr, modifiers: &str) -> Result<(), String> {
        if modifiers.is_empty() {
            attr.exclude_guest = true;
            return Ok(());
        }
        let (mut eu, mut ek, mut eh) = (false, false, false);
        let (mut e_guest, mut e_host) = (false, false);
        let (mut exclude, mut exclude_gh) = (false, false);
        let mut precise = 0u8;
        for c in modifiers.chars() {
            match c {
                'u' | 'k' | 'h' => {
                    if !exclude {
                        exclude = true;
                        (eu, ek, eh) = (true, true, true);
                    }
                    match c {
                        'u' => {
                            if !exclude_gh {
                                e_guest = true;
                            }
                            eu = false;
                        }
                        'k' => ek = false,
                        _ => eh = false,
                    }
                }
                'G' | 'H' => {
                    if !exclude_gh {
                        exclude_gh = true;
                        (e_guest, e_host) = (true, true);
                    }
                    if c == 'G' {
                        e_guest = false;
                    } else {
                        e_host = false;
                    }
                }
                'I' => attr.exclude_idle = true,
                'p' => {
                    precise += 1;
                    // Precise events require excluding guests.
                    if !exclude_gh {
                        e_guest = true;
                    }
                }
                'P' => attr.precise_max = true,
                'D' => attr.pinned = true,
                'e' => attr.exclusive = true,
                'S' | 'W' | 'b' => {}
                other => return Err(format!("unknown modifier '{other}' in ':{modifiers}'")),
            }
        }
        if precise > 3 {
            return Err(format!(
                "':{modifiers}' asks for precise level {precise}; the most is 3 (ppp)"
            ));
        }
        attr.exclude_user = eu;
        attr.exclude_kernel = ek;
        attr.exclude_hv = eh;
        attr.exclude_guest = e_guest;
        attr.exclude_host = e_host;
        attr.precise_ip = if attr.precise_max {
            self.max_precise(&attr.pmu)
        } else {
            precise
        };
        Ok(())
    }

    /// Every event the tree and tracefs name, grouped as perf list groups them.
    pub fn list(&self) -> Vec<ListedEvent> {
        let mut out = Vec::new();
        let mut push = |group: &'static str, name: String| {
            if let Ok(attrs) = self.resolve(&name) {
                out.push(ListedEvent { group, name, attrs });
            }
        };
        for (_, canonical, _) in legacy::HARDWARE {
            push("hardware", canonical.to_string());
        }
        for (_, canonical, _) in legacy::SOFTWARE {
            push("software", canonical.to_string());
        }
        for (name, _) in legacy::cache_events() {
            push("cache", name);
        }
        for p in &self.pmus {
            for alias in p.aliases.keys() {
                push("pmu", format!("{}/{alias}/", p.name));
            }
        }
        if let Ok(tracefs) = self.tracefs() {
            for (name, id) in tracefs.all() {
                let mut attr = EventAttr::new("tracepoint", PERF_TYPE_TRACEPOINT, id);
                attr.name = name.clone();
                attr.exclude_guest = true;
                out.push(ListedEvent {
                    group: "tracepoint",
                    name,
                    attrs: vec![attr],
                });
            }
        }
        out
    }
}

/// One named event in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedEvent {
    /// `hardware`, `software`, `cache`, `pmu` or `tracepoint`.
    pub group: &'static str,
    /// The spelling.
    pub name: String,
    /// What it resolves to.
    pub attrs: Vec<EventAttr>,
}
