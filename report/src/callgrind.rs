//! callgrind's profiles: its out files read (valgrind's callgrind format, version 1),
//! each function's self instructions per source line and each call edge's inclusive
//! instructions; dumps added and subtracted exactly; a `sparkles.profile/1` profile and
//! folded stacks of them; and the exact hot-function diff of two.
//!
//! callgrind records call edges, not stacks. The folded stacks are expanded from the
//! edges, from each function that nothing collected called (the harness's timing loop):
//! a function's self cost and its calls are shared among the paths that reach it in
//! proportion to what each caller's calls to it cost. That is exact for a function with
//! one caller, and gprof's assumption for one with several; the flat views (self and
//! inclusive costs, lines) are exact either way.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::names::{normalize, Names};
use crate::profile::{Builder, Folded, Profile, Unwinding};
use crate::stacks::NamedFrame;

/// A function as callgrind names it: its object and its name, `'N` recursion-depth
/// suffixes and Rust hashes dropped, so that the same function keys the same row in
/// every dump and every build.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FnKey {
    /// The ELF object's path.
    pub object: String,
    /// The demangled, normalized name.
    pub name: String,
}

/// One function's costs: self instructions (Ir), and per source line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FnCosts {
    /// Its source file, where a line names one.
    pub file: Option<String>,
    /// Instructions executed in it.
    pub self_: i64,
    /// Of those, per (file, line); line 0 where callgrind had no line.
    pub lines: BTreeMap<(String, u32), i64>,
}

/// The instruction costs of one dump, or of dumps added and subtracted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Costs {
    /// Each function's own costs.
    pub functions: BTreeMap<FnKey, FnCosts>,
    /// Each call edge (caller, callee): instructions executed in the calls, callees'
    /// callees included.
    pub calls: BTreeMap<(FnKey, FnKey), i64>,
}

/// What went wrong reading an out file: the file, the line, and why.
#[derive(Debug, thiserror::Error)]
#[error("{path}:{line}: {message}")]
pub struct ParseError {
    /// The file.
    pub path: String,
    /// The 1-based line.
    pub line: usize,
    /// What is wrong there.
    pub message: String,
}

/// callgrind's event counts of one dump, by event name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Events(Vec<(String, u64)>);

impl From<Vec<(String, u64)>> for Events {
    fn from(counts: Vec<(String, u64)>) -> Events {
        Events(counts)
    }
}

impl Events {
    /// The count of `event`; 0 where the dump does not list it.
    pub fn get(&self, event: &str) -> u64 {
        self.0
            .iter()
            .find(|(e, _)| e == event)
            .map_or(0, |(_, v)| *v)
    }

    /// Whether the dump lists `event` (callgrind lists a simulation's events only where
    /// it ran with the simulation on).
    pub fn has(&self, event: &str) -> bool {
        self.0.iter().any(|(e, _)| e == event)
    }
}

/// One dump file: its trigger's label and its counts.
#[derive(Debug, Clone, PartialEq)]
pub struct Dump {
    /// What `desc: Trigger:` says, less callgrind's `Client Request: ` prefix.
    pub trigger: String,
    /// The `summary:` line under the `events:` names (callgrind leaves trailing zeros
    /// out).
    pub events: Events,
}

/// Reads a callgrind dump's header: its trigger, event names and summary (what the
/// harness's `--instructions` pass counts; [`Costs::parse`] reads the costs that follow).
/// `path` names the file in errors.
pub fn parse_dump(text: &str, path: &Path) -> Result<Dump, ParseError> {
    let mut trigger = None;
    let mut names: Option<Vec<&str>> = None;
    let mut summary: Option<(usize, &str)> = None;
    let mut read = 0;
    let error = |line: usize, message: String| ParseError {
        path: path.display().to_string(),
        line,
        message,
    };
    for (i, line) in text.lines().enumerate() {
        read = i + 1;
        if let Some(t) = line.strip_prefix("desc: Trigger:") {
            let t = t.trim();
            trigger = Some(t.strip_prefix("Client Request:").unwrap_or(t).trim());
        } else if let Some(e) = line.strip_prefix("events:") {
            names = Some(e.split_whitespace().collect());
        } else if let Some(s) = line.strip_prefix("summary:") {
            summary = Some((i + 1, s));
        } else if line.starts_with("fn=") || line.starts_with("totals:") {
            // The header is over: costs follow.
            break;
        }
        if i > 10_000 {
            break;
        }
    }
    let names = names.ok_or_else(|| error(read, "no 'events:' line".to_string()))?;
    let (at, summary) = summary.ok_or_else(|| error(read, "no 'summary:' line".to_string()))?;
    let values = summary
        .split_whitespace()
        .map(|v| {
            v.parse::<u64>()
                .map_err(|_| error(at, format!("summary value '{v}' is not a count")))
        })
        .collect::<Result<Vec<u64>, ParseError>>()?;
    if values.len() > names.len() {
        return Err(error(
            at,
            format!(
                "the summary has {} values for {} events",
                values.len(),
                names.len()
            ),
        ));
    }
    Ok(Dump {
        trigger: trigger.unwrap_or_default().to_string(),
        events: Events(
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.to_string(), values.get(i).copied().unwrap_or(0)))
                .collect(),
        ),
    })
}

/// Name compression: `(id) name` defines, `(id)` refers.
fn compressed(value: &str, table: &mut BTreeMap<u64, String>) -> Result<String, String> {
    let value = value.trim();
    let Some(rest) = value.strip_prefix('(') else {
        return Ok(value.to_string());
    };
    let (id, name) = rest
        .split_once(')')
        .ok_or_else(|| format!("'{value}': an unclosed name id"))?;
    let id: u64 = id
        .parse()
        .map_err(|_| format!("'{value}': name id '{id}' is not a number"))?;
    let name = name.trim();
    if name.is_empty() {
        table
            .get(&id)
            .cloned()
            .ok_or_else(|| format!("'{value}': name id {id} is used before it is defined"))
    } else {
        table.insert(id, name.to_string());
        Ok(name.to_string())
    }
}

/// `name` without callgrind's recursion-depth suffix (`f'2`) and as the profiles name it.
fn function_name(name: &str) -> String {
    let base = match name.rsplit_once('\'') {
        Some((f, depth)) if !depth.is_empty() && depth.bytes().all(|b| b.is_ascii_digit()) => f,
        _ => name,
    };
    normalize(base)
}

/// A function as an out file is read: its key, file id, self cost and cost per (file id,
/// line).
type ParsedFn = (FnKey, Option<u32>, i64, HashMap<(u32, u32), i64>);

impl Costs {
    /// Reads one callgrind out file (`positions: line` or `instr line`); only the `Ir`
    /// event is kept. `path` names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Costs, ParseError> {
        // Functions and files are numbered as they come, and each cost line adds to
        // numbered slots: no name is copied or compared per line.
        let mut fn_ids: HashMap<FnKey, usize> = HashMap::new();
        let mut fn_rows: Vec<ParsedFn> = Vec::new();
        let mut file_ids: HashMap<String, u32> = HashMap::new();
        let mut file_names: Vec<String> = Vec::new();
        let mut calls: HashMap<(usize, usize), i64> = HashMap::new();
        let mut intern_file = |name: String| -> u32 {
            let next = file_names.len() as u32;
            *file_ids.entry(name).or_insert_with_key(|n| {
                file_names.push(n.clone());
                next
            })
        };
        let mut intern_fn = |k: FnKey, rows: &mut Vec<_>| -> usize {
            let next = rows.len();
            *fn_ids.entry(k).or_insert_with_key(|k| {
                rows.push((k.clone(), None, 0, HashMap::new()));
                next
            })
        };
        let mut files = BTreeMap::new();
        let mut fns = BTreeMap::new();
        let mut objects = BTreeMap::new();
        let mut positions = 1usize;
        let mut ir: Option<usize> = None;
        let mut object = String::new();
        let mut fn_file: Option<u32> = None;
        let mut file: Option<u32> = None;
        let mut current: Option<usize> = None;
        let (mut call_object, mut call_name): (Option<String>, Option<String>) = (None, None);
        // After `calls=`: the next cost line is the call's, to this callee.
        let mut pending_call: Option<usize> = None;
        let mut last_line = 0i64;
        for (i, line) in text.lines().enumerate() {
            let err = |message: String| ParseError {
                path: path.display().to_string(),
                line: i + 1,
                message,
            };
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let first = line.as_bytes()[0];
            if first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'*') {
                let mut fields = line.split_ascii_whitespace();
                // The positions: the last is the line (with `instr line`, the first is
                // the address).
                let mut at_line = last_line;
                for p in 0..positions {
                    let f = fields
                        .next()
                        .ok_or_else(|| err("a cost line without its positions".into()))?;
                    if p + 1 == positions {
                        at_line = match f.as_bytes()[0] {
                            b'*' => last_line,
                            b'+' => last_line + parse_num(&f[1..]).map_err(err)?,
                            b'-' => last_line - parse_num(&f[1..]).map_err(err)?,
                            _ => parse_num(f).map_err(err)?,
                        };
                    }
                }
                last_line = at_line;
                let ir_index =
                    ir.ok_or_else(|| err("costs before an 'events:' line naming Ir".into()))?;
                let value = match fields.nth(ir_index) {
                    Some(v) => parse_num(v).map_err(err)?,
                    None => 0,
                };
                let Some(f) = current else {
                    return Err(err("costs before any 'fn=' line".into()));
                };
                match pending_call.take() {
                    Some(callee) => *calls.entry((f, callee)).or_default() += value,
                    None => {
                        let row = &mut fn_rows[f];
                        row.2 += value;
                        let at = (
                            file.or(fn_file).unwrap_or(u32::MAX),
                            u32::try_from(at_line).unwrap_or(0),
                        );
                        *row.3.entry(at).or_default() += value;
                    }
                }
                continue;
            }
            let Some((key, value)) = line.split_once('=').or_else(|| line.split_once(':')) else {
                continue;
            };
            match key {
                "events" => {
                    ir = value.split_ascii_whitespace().position(|e| e == "Ir");
                    if ir.is_none() {
                        return Err(err(format!(
                            "the events '{}' do not include Ir",
                            value.trim()
                        )));
                    }
                }
                "positions" => positions = value.split_ascii_whitespace().count().max(1),
                "ob" => object = compressed(value, &mut objects).map_err(err)?,
                "fl" => {
                    fn_file = Some(intern_file(compressed(value, &mut files).map_err(err)?));
                    file = None;
                }
                "fi" | "fe" => {
                    file = Some(intern_file(compressed(value, &mut files).map_err(err)?));
                }
                "fn" => {
                    let name = compressed(value, &mut fns).map_err(err)?;
                    let k = FnKey {
                        object: object.clone(),
                        name: function_name(&name),
                    };
                    let id = intern_fn(k, &mut fn_rows);
                    fn_rows[id].1 = fn_rows[id].1.or(fn_file);
                    current = Some(id);
                    file = None;
                }
                "cob" => call_object = Some(compressed(value, &mut objects).map_err(err)?),
                "cfi" | "cfl" => {
                    compressed(value, &mut files).map_err(err)?;
                }
                "cfn" => call_name = Some(compressed(value, &mut fns).map_err(err)?),
                "calls" => {
                    let name = call_name
                        .take()
                        .ok_or_else(|| err("'calls=' without a 'cfn=' before it".into()))?;
                    let k = FnKey {
                        object: call_object.take().unwrap_or_else(|| object.clone()),
                        name: function_name(&name),
                    };
                    pending_call = Some(intern_fn(k, &mut fn_rows));
                }
                _ => {}
            }
        }
        let file_name = |id: u32| file_names.get(id as usize).cloned().unwrap_or_default();
        let keys: Vec<FnKey> = fn_rows.iter().map(|r| r.0.clone()).collect();
        let mut costs = Costs::default();
        for (k, file, self_, lines) in fn_rows {
            costs.functions.insert(
                k,
                FnCosts {
                    file: file.map(file_name),
                    self_,
                    lines: lines
                        .into_iter()
                        .map(|((f, l), v)| ((file_name(f), l), v))
                        .collect(),
                },
            );
        }
        for ((a, b), v) in calls {
            costs.calls.insert((keys[a].clone(), keys[b].clone()), v);
        }
        Ok(costs)
    }

    /// Adds `other` times `sign` (1 to add, -1 to subtract) into these costs.
    pub fn add(&mut self, other: &Costs, sign: i64) {
        for (k, f) in &other.functions {
            let entry = self.functions.entry(k.clone()).or_default();
            if entry.file.is_none() {
                entry.file.clone_from(&f.file);
            }
            entry.self_ += sign * f.self_;
            for (at, v) in &f.lines {
                *entry.lines.entry(at.clone()).or_default() += sign * v;
            }
        }
        for (edge, v) in &other.calls {
            *self.calls.entry(edge.clone()).or_default() += sign * v;
        }
    }

    /// What is left after a subtraction: the rows and edges with a cost above zero.
    pub fn positive(mut self) -> Costs {
        for f in self.functions.values_mut() {
            f.lines.retain(|_, v| *v > 0);
            f.self_ = f.self_.max(0);
        }
        self.functions.retain(|_, f| f.self_ > 0);
        self.calls.retain(|_, v| *v > 0);
        self
    }

    /// All instructions: every function's self cost.
    pub fn total(&self) -> i64 {
        self.functions.values().map(|f| f.self_).sum()
    }
}

fn parse_num(s: &str) -> Result<i64, String> {
    if let Some(hex) = s.strip_prefix("0x") {
        return i64::from_str_radix(hex, 16).map_err(|_| format!("'{s}' is not a number"));
    }
    s.parse().map_err(|_| format!("'{s}' is not a number"))
}

/// Paths deeper than this end where they are: a deeper call's cost is its caller's leaf.
const MAX_DEPTH: usize = 128;

/// The profile of `costs`, rooted at `case` as a sampled profile is (the harness's frames
/// folded into the case's root), its weights instructions over `iterations` iterations.
pub fn profile(costs: &Costs, case: &str, iterations: u64) -> (Profile, Folded) {
    let mut names = Names::new();
    let mut builder = Builder::rooted_at(case);
    // What reaches each function through its callers.
    let mut incoming: BTreeMap<&FnKey, i64> = BTreeMap::new();
    let mut out: BTreeMap<&FnKey, Vec<(&FnKey, i64)>> = BTreeMap::new();
    for ((caller, callee), v) in &costs.calls {
        *incoming.entry(callee).or_default() += v;
        out.entry(caller).or_default().push((callee, *v));
    }
    let mut roots: BTreeSet<&FnKey> = costs
        .functions
        .keys()
        .filter(|k| !incoming.contains_key(k))
        .collect();
    roots.extend(out.keys().filter(|k| !incoming.contains_key(*k)));
    let mut expansion = Expansion {
        costs,
        incoming: &incoming,
        out: &out,
        names: &mut names,
        builder: &mut builder,
        path: Vec::new(),
        frames: Vec::new(),
    };
    for root in roots {
        let inclusive = costs.functions.get(root).map_or(0, |f| f.self_)
            + out.get(root).map_or(0, |e| e.iter().map(|(_, v)| v).sum());
        if inclusive > 0 {
            expansion.expand(root, 1.0);
        }
    }
    let unwinding = Unwinding {
        mode: "callgrind".into(),
        ..Unwinding::default()
    };
    let (mut p, folded) = builder.finish(case, "instructions (callgrind)", 0, unwinding);
    p.samples = 0;
    p.weighting = "instructions".into();
    p.iterations = Some(iterations);
    p.notes.push(format!(
        "weights are instructions callgrind counted over {iterations} iterations; stacks are expanded from callgrind's call edges (a function called from several places has its cost shared among them in proportion)"
    ));
    (p, folded)
}

struct Expansion<'a, 'c> {
    costs: &'c Costs,
    incoming: &'a BTreeMap<&'c FnKey, i64>,
    out: &'a BTreeMap<&'c FnKey, Vec<(&'c FnKey, i64)>>,
    names: &'a mut Names,
    builder: &'a mut Builder,
    /// Root first.
    path: Vec<&'c FnKey>,
    /// The path's frames, root first (reversed for the builder).
    frames: Vec<NamedFrame>,
}

impl<'c> Expansion<'_, 'c> {
    fn frame(&mut self, k: &FnKey, file: Option<&str>, line: Option<u32>) -> NamedFrame {
        let function = self.names.intern(&k.name);
        NamedFrame {
            addr: 0,
            function: Some(function.clone()),
            symbol: Some(function),
            module: Some(self.names.intern(&k.object)),
            file: file.map(|f| self.names.intern(f)),
            line,
            inlined: false,
            symbol_offset: None,
            missing: None,
        }
    }

    /// Adds the path's stack with `leaf` innermost, weighing `weight`.
    fn emit(&mut self, leaf: NamedFrame, weight: f64) {
        let w = weight.round();
        if w < 1.0 {
            return;
        }
        let mut stack: Vec<NamedFrame> = Vec::with_capacity(self.frames.len() + 1);
        stack.push(leaf);
        stack.extend(self.frames.iter().rev().cloned());
        self.builder.add(&stack, false, w as u64);
    }

    fn expand(&mut self, f: &'c FnKey, scale: f64) {
        if let Some(c) = self.costs.functions.get(f) {
            for ((file, line), v) in &c.lines {
                let file = (!file.is_empty()).then_some(file.as_str());
                let leaf = self.frame(f, file, (*line > 0).then_some(*line));
                self.emit(leaf, *v as f64 * scale);
            }
        }
        let Some(edges) = self.out.get(f) else {
            return;
        };
        let here = self.frame(f, None, None);
        self.path.push(f);
        self.frames.push(here);
        for &(g, v) in edges {
            let share = v as f64 * scale;
            if share < 0.5 {
                continue;
            }
            if self.path.contains(&g) || self.path.len() >= MAX_DEPTH {
                let leaf = self.frame(g, None, None);
                self.emit(leaf, share);
                continue;
            }
            let reaching = self.incoming.get(g).copied().unwrap_or(v).max(1);
            self.expand(g, share / reaching as f64);
        }
        self.frames.pop();
        self.path.pop();
    }
}

/// One function's exact change in an instruction diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstructionMover {
    /// The function (the profiles' `functions` view).
    pub name: String,
    /// Its self instructions per iteration in the baseline.
    pub base: f64,
    /// And in this run.
    pub new: f64,
    /// `new - base`.
    pub delta: f64,
    /// The change against the baseline's, percent; absent where it had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_pct: Option<f64>,
}

/// Two instruction profiles' difference (`diff-instructions.json`): exact, with no
/// sampling noise, so every function that moved is listed, largest change first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstructionDiff {
    /// `sparkles.instruction-diff/1`.
    pub schema: String,
    /// The case.
    pub case: String,
    /// All instructions per iteration, in the baseline and in this run.
    pub base_total: f64,
    /// See `base_total`.
    pub new_total: f64,
    /// Every function whose self instructions per iteration changed, by the size of the
    /// change, largest first.
    pub movers: Vec<InstructionMover>,
}

/// The exact per-function difference of two instruction profiles, per iteration.
pub fn diff(case: &str, base: &Profile, new: &Profile) -> InstructionDiff {
    let per = |p: &Profile| p.iterations.unwrap_or(1).max(1) as f64;
    let (bi, ni) = (per(base), per(new));
    let mut rows: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for e in &base.functions {
        rows.entry(&e.name).or_default().0 += e.self_ as f64 / bi;
    }
    for e in &new.functions {
        rows.entry(&e.name).or_default().1 += e.self_ as f64 / ni;
    }
    let mut movers: Vec<InstructionMover> = rows
        .into_iter()
        // Below a hundredth of an instruction an iteration: the expansion's rounding.
        .filter(|(_, (b, n))| (n - b).abs() >= 0.01)
        .map(|(name, (b, n))| InstructionMover {
            name: name.to_string(),
            base: b,
            new: n,
            delta: n - b,
            delta_pct: (b > 0.0).then(|| (n / b - 1.0) * 100.0),
        })
        .collect();
    movers.sort_by(|a, b| {
        b.delta
            .abs()
            .total_cmp(&a.delta.abs())
            .then(a.name.cmp(&b.name))
    });
    InstructionDiff {
        schema: "sparkles.instruction-diff/1".into(),
        case: case.into(),
        base_total: base.weight as f64 / bi,
        new_total: new.weight as f64 / ni,
        movers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dump of a timing loop that calls `body` twice, which calls `leaf` twice, and
    /// spends some of its own instructions on two lines.
    const DUMP: &str = "# callgrind format
version: 1
creator: callgrind-3.19.0
positions: line
events: Ir Dr Dw
summary: 1130

ob=(1) /bin/case
fl=(1) src/bench.rs
fn=(1) <sparkles_bench::bencher::Plain<F> as sparkles_bench::bencher::Routine>::run
10 30
cfn=(2) case::body::h0123456789abcdef
calls=2 20
11 1100
fl=(2) src/body.rs
fn=(2)
20 80 8
+2 20
cfn=(3) case::leaf'2
calls=2 40
* 1000
fn=(3)
40 1000
";

    fn parsed() -> Costs {
        Costs::parse(DUMP, Path::new("cg.out.2")).unwrap()
    }

    fn key(name: &str) -> FnKey {
        FnKey {
            object: "/bin/case".into(),
            name: name.into(),
        }
    }

    #[test]
    fn an_out_file_gives_self_costs_per_line_and_inclusive_calls() {
        let c = parsed();
        let body = &c.functions[&key("case::body")];
        assert_eq!(body.self_, 100);
        assert_eq!(body.file.as_deref(), Some("src/body.rs"));
        assert_eq!(body.lines[&("src/body.rs".to_string(), 20)], 80);
        assert_eq!(body.lines[&("src/body.rs".to_string(), 22)], 20);
        // The recursion-depth suffix is dropped: one row for the function.
        assert_eq!(c.functions[&key("case::leaf")].self_, 1000);
        assert_eq!(c.calls[&(key("case::body"), key("case::leaf"))], 1000);
        assert_eq!(c.total(), 1130);
    }

    #[test]
    fn dumps_subtract_exactly() {
        let mut full = parsed();
        full.add(&parsed(), 1);
        full.add(&parsed(), -1);
        assert_eq!(full, parsed());
        let mut none = parsed();
        none.add(&parsed(), -1);
        assert!(none.positive().functions.is_empty());
    }

    #[test]
    fn malformed_lines_are_named_with_their_file_and_line() {
        let e = Costs::parse("events: Ir\nfn=(1) f\n10 x\n", Path::new("/t/cg.out.4")).unwrap_err();
        assert_eq!(e.to_string(), "/t/cg.out.4:3: 'x' is not a number");
        let e = Costs::parse("events: Ir\nfn=(7)\n", Path::new("f")).unwrap_err();
        assert!(e.to_string().contains("used before it is defined"), "{e}");
        let e = Costs::parse("events: Dr\n", Path::new("f")).unwrap_err();
        assert!(e.to_string().contains("do not include Ir"), "{e}");
    }

    #[test]
    fn the_profile_is_rooted_at_the_case_and_weighs_instructions() {
        let (p, folded) = profile(&parsed(), "mycase", 10);
        assert_eq!(p.weighting, "instructions");
        assert_eq!(p.iterations, Some(10));
        assert_eq!(p.weight, 1130);
        let row = |name: &str| p.functions.iter().find(|e| e.name == name).unwrap();
        assert_eq!(row("case::leaf").self_, 1000);
        assert_eq!(row("case::body").self_, 100);
        assert_eq!(row("case::body").total, 1100);
        // The harness's loop is the case's root.
        assert_eq!(row("mycase").self_, 30);
        assert_eq!(folded.stacks["mycase;case::body;case::leaf"], 1000);
        assert_eq!(folded.stacks["mycase;case::body"], 100);
        assert!(p
            .lines
            .iter()
            .any(|l| l.function == "case::body" && l.line == 20 && l.self_ == 80));
    }

    #[test]
    fn a_callee_of_two_callers_is_shared_in_proportion() {
        // a calls c for 300, b calls c for 100; c's own 400 splits 3:1.
        let mut c = Costs::default();
        for (name, own) in [("a", 10), ("b", 10), ("c", 400)] {
            c.functions.insert(
                key(name),
                FnCosts {
                    self_: own,
                    lines: [((String::new(), 0), own)].into(),
                    ..FnCosts::default()
                },
            );
        }
        c.calls.insert((key("a"), key("c")), 300);
        c.calls.insert((key("b"), key("c")), 100);
        let (_, folded) = profile(&c, "case", 1);
        assert_eq!(folded.stacks["a;c"], 300);
        assert_eq!(folded.stacks["b;c"], 100);
    }

    #[test]
    fn the_diff_is_exact_per_iteration_and_ranks_the_largest_change_first() {
        let (base, _) = profile(&parsed(), "mycase", 10);
        let mut more = parsed();
        more.functions
            .get_mut(&key("case::leaf"))
            .unwrap()
            .lines
            .insert(("".into(), 41), 100);
        more.functions.get_mut(&key("case::leaf")).unwrap().self_ += 100;
        more.calls
            .insert((key("case::body"), key("case::leaf")), 1100);
        let (new, _) = profile(&more, "mycase", 10);
        let d = diff("mycase", &base, &new);
        assert_eq!(d.movers.len(), 1, "{d:?}");
        assert_eq!(d.movers[0].name, "case::leaf");
        assert_eq!(d.movers[0].delta, 10.0);
        assert!(
            (d.movers[0].delta_pct.unwrap() - 10.0).abs() < 1e-9,
            "{d:?}"
        );
        assert_eq!((d.base_total, d.new_total), (113.0, 123.0));
    }
}
