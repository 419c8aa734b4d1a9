//! The serve protocol (`sparkles.serve/1`, docs/schemas/serve.md) in types both ends use:
//! the coordinator serializes a [`Request`], the bench process reads it with
//! [`parse_request`] (messages that name the op and the field) and answers with one of
//! the answer types below inside a [`reply`] envelope, which the coordinator reads back
//! into the same type.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::counting::CountingReport;
use crate::profile::ProfileSummary;
use crate::throughput::Throughput;

/// The protocol's name and version, answered to `hello`.
pub const SCHEMA: &str = "sparkles.serve/1";

/// Every op a request may name, in the order the docs give them.
pub const OPS: [&str; 9] = [
    "hello",
    "list",
    "setup",
    "calibrate",
    "sample",
    "count",
    "profile",
    "finish",
    "quit",
];

/// What a request asks: one variant per op, serialized as the object the docs give
/// (`{"op": "sample", "case": …, "iterations": …}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum Op {
    Hello,
    List,
    Setup {
        case: String,
    },
    Calibrate {
        case: String,
        /// How long one sample should take.
        #[serde(rename = "sample_ns", serialize_with = "as_nanos")]
        sample: Duration,
    },
    Sample {
        case: String,
        iterations: u64,
    },
    Count {
        case: String,
        iterations: u64,
        /// Brackets of the counting pass (`--count-brackets` where absent).
        #[serde(skip_serializing_if = "Option::is_none")]
        brackets: Option<u32>,
    },
    Profile {
        case: String,
        /// How long the body runs under the sampler.
        #[serde(rename = "seconds", serialize_with = "as_seconds")]
        duration: Duration,
        /// The capture to write.
        path: PathBuf,
        /// The folder of another profile of the case (its profile.json, folded.txt) to
        /// diff this one against.
        against: Option<PathBuf>,
    },
    Finish {
        case: String,
    },
    Quit,
}

/// One request: its op, and the id its reply echoes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request {
    /// Echoed in the reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// What it asks.
    #[serde(flatten)]
    pub op: Op,
}

/// A request that could not be read: what was wrong, and its id where it had one.
#[derive(Debug, Clone, PartialEq)]
pub struct BadRequest {
    /// The request's id, echoed in the error reply.
    pub id: Option<Value>,
    /// What was wrong, naming the op and the field.
    pub message: String,
}

/// A value as a message quotes it: its JSON, cut short when long.
fn quoted(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// The fields of one request's object, read with messages naming the op and the field.
struct Fields<'a> {
    op: &'a str,
    object: &'a Map<String, Value>,
}

impl Fields<'_> {
    fn get(&self, name: &str) -> Result<&Value, String> {
        self.object
            .get(name)
            .ok_or_else(|| format!("op '{}': field '{name}' is missing", self.op))
    }

    fn string(&self, name: &str) -> Result<String, String> {
        match self.get(name)? {
            Value::String(s) => Ok(s.clone()),
            other => Err(format!(
                "op '{}': field '{name}' must be a string, got {}",
                self.op,
                quoted(other)
            )),
        }
    }

    /// A whole number from 1 to `max`.
    fn count(&self, name: &str, max: u64) -> Result<u64, String> {
        let value = self.get(name)?;
        match value.as_u64() {
            Some(0) => Err(format!(
                "op '{}': field '{name}' must be at least 1, got 0",
                self.op
            )),
            Some(n) if n <= max => Ok(n),
            Some(n) => Err(format!(
                "op '{}': field '{name}' must be at most {max}, got {n}",
                self.op
            )),
            None => Err(format!(
                "op '{}': field '{name}' must be a positive integer, got {}",
                self.op,
                quoted(value)
            )),
        }
    }

    fn case(&self) -> Result<String, String> {
        self.string("case")
    }
}

/// Reads one request line.
pub fn parse_request(line: &[u8]) -> Result<Request, BadRequest> {
    let value: Value = serde_json::from_slice(line).map_err(|e| BadRequest {
        id: None,
        message: format!("the request is not JSON: {e}"),
    })?;
    let Value::Object(object) = value else {
        return Err(BadRequest {
            id: None,
            message: format!(
                "a request must be a JSON object with an 'op', got {}",
                quoted(&value)
            ),
        });
    };
    let id = object.get("id").cloned();
    let bad = |message: String| BadRequest {
        id: id.clone(),
        message,
    };
    let op = match object.get("op") {
        Some(Value::String(op)) => op.as_str(),
        Some(other) => {
            return Err(bad(format!(
                "field 'op' must be a string, got {}",
                quoted(other)
            )))
        }
        None => {
            return Err(bad(format!(
                "the request has no field 'op' (one of: {})",
                OPS.join(", ")
            )))
        }
    };
    let fields = Fields {
        op,
        object: &object,
    };
    let op = match op {
        "hello" => Op::Hello,
        "list" => Op::List,
        "setup" => Op::Setup {
            case: fields.case().map_err(bad)?,
        },
        "calibrate" => Op::Calibrate {
            case: fields.case().map_err(bad)?,
            sample: Duration::from_nanos(fields.count("sample_ns", u64::MAX).map_err(bad)?),
        },
        "sample" => Op::Sample {
            case: fields.case().map_err(bad)?,
            iterations: fields.count("iterations", u64::MAX).map_err(bad)?,
        },
        "count" => Op::Count {
            case: fields.case().map_err(bad)?,
            iterations: fields.count("iterations", u64::MAX).map_err(bad)?,
            // As --count-brackets takes them.
            brackets: match object.get("brackets") {
                None | Some(Value::Null) => None,
                Some(_) => Some(fields.count("brackets", 1000).map_err(bad)? as u32),
            },
        },
        "profile" => Op::Profile {
            case: fields.case().map_err(bad)?,
            duration: seconds(&fields).map_err(bad)?,
            path: PathBuf::from(fields.string("path").map_err(bad)?),
            against: match object.get("against") {
                None | Some(Value::Null) => None,
                Some(_) => Some(PathBuf::from(fields.string("against").map_err(bad)?)),
            },
        },
        "finish" => Op::Finish {
            case: fields.case().map_err(bad)?,
        },
        "quit" => Op::Quit,
        other => {
            return Err(bad(format!(
                "unknown op '{other}' (ops: {})",
                OPS.join(", ")
            )))
        }
    };
    Ok(Request { id, op })
}

/// The `seconds` of a profile request: a positive number.
fn seconds(fields: &Fields<'_>) -> Result<Duration, String> {
    let value = fields.get("seconds")?;
    value
        .as_f64()
        .filter(|s| *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| {
            format!(
                "op 'profile': field 'seconds' must be a positive number, got {}",
                quoted(value)
            )
        })
}

fn as_nanos<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn as_seconds<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// The answer to `hello`: which protocol, suite and process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// Always [`SCHEMA`] from a process that speaks this protocol.
    pub schema: String,
    /// The suite served.
    pub suite: String,
    /// The process.
    pub pid: u32,
    /// The harness's version.
    pub version: String,
}

/// The answer to `list`: the cases served, in suite order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseList {
    /// Their names.
    pub cases: Vec<String>,
}

/// The answer to `setup`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetUp {
    /// The case.
    pub case: String,
    /// What it declared per iteration, if anything.
    pub throughput: Option<Throughput>,
}

/// The answer to `calibrate`: iterations a sample takes, and how long they took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Calibrated {
    /// Iterations per sample.
    pub iterations: u64,
    /// The last calibration run's time, ns.
    pub ns: u64,
}

/// The answer to `sample`: one timing sample of the asked iterations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sampled {
    /// Its time, ns.
    pub ns: u64,
}

/// The answer to `count`: the counting pass's metrics, as a row has them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counted {
    /// Each selected metric's value by id; null where not produced.
    pub metrics: BTreeMap<String, Option<f64>>,
    /// Brackets counted, where a counting tier ran.
    pub brackets: Option<u32>,
    /// Iterations in each, where a counting tier ran.
    pub iterations_per_bracket: Option<u64>,
    /// Why a metric has no value, by id.
    #[serde(default)]
    pub unavailable: BTreeMap<String, String>,
    /// Each counted metric's value in every bracket.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metric_samples: BTreeMap<String, Vec<f64>>,
    /// How the counting tiers counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counting: Option<CountingReport>,
}

/// The answer to `profile`: the case's profile as its row carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profiled {
    /// The summary (its `error` says why no capture was made).
    pub profile: ProfileSummary,
}

/// The answer to `finish` and `quit`: nothing besides `ok`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Done {}

/// Any op's answer, as the bench process sends it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Answer {
    /// To `hello`.
    Hello(Hello),
    /// To `list`.
    List(CaseList),
    /// To `setup`.
    Setup(SetUp),
    /// To `calibrate`.
    Calibrate(Calibrated),
    /// To `sample`.
    Sample(Sampled),
    /// To `count`.
    Count(Box<Counted>),
    /// To `profile`.
    Profile(Box<Profiled>),
    /// To `finish` and `quit`.
    Done(Done),
}

/// The reply line's object: the request's `id` (where it had one), `ok`, then the
/// answer's fields, or `ok: false` and the `error`.
pub fn reply(id: Option<Value>, result: Result<Answer, String>) -> Value {
    let mut reply = Map::new();
    if let Some(id) = id {
        reply.insert("id".into(), id);
    }
    match result.and_then(|answer| {
        serde_json::to_value(answer).map_err(|e| format!("the answer could not be written: {e}"))
    }) {
        Ok(fields) => {
            reply.insert("ok".into(), Value::Bool(true));
            if let Value::Object(fields) = fields {
                reply.extend(fields);
            }
        }
        Err(message) => {
            reply.insert("ok".into(), Value::Bool(false));
            reply.insert("error".into(), Value::String(message));
        }
    }
    Value::Object(reply)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error(line: &str) -> String {
        parse_request(line.as_bytes()).unwrap_err().message
    }

    #[test]
    fn requests_parse_into_ops() {
        let r = parse_request(br#"{"op":"sample","case":"a/b","iterations":8,"id":[1]}"#).unwrap();
        assert_eq!(r.id, Some(json!([1])));
        assert_eq!(
            r.op,
            Op::Sample {
                case: "a/b".into(),
                iterations: 8
            }
        );
        let r = parse_request(br#"{"op":"count","case":"c","iterations":3}"#).unwrap();
        assert_eq!(
            r.op,
            Op::Count {
                case: "c".into(),
                iterations: 3,
                brackets: None
            }
        );
        let r = parse_request(br#"{"op":"profile","case":"c","seconds":0.5,"path":"p"}"#).unwrap();
        assert!(
            matches!(r.op, Op::Profile { duration, against: None, .. } if duration == Duration::from_millis(500))
        );
        let r = parse_request(
            br#"{"op":"profile","case":"c","seconds":1,"path":"p","against":"base/c"}"#,
        )
        .unwrap();
        assert!(
            matches!(r.op, Op::Profile { against: Some(a), .. } if a == std::path::Path::new("base/c"))
        );
    }

    #[test]
    fn requests_serialize_to_what_the_parser_reads() {
        let ops = [
            Op::Hello,
            Op::Calibrate {
                case: "a".into(),
                sample: Duration::from_millis(5),
            },
            Op::Count {
                case: "c".into(),
                iterations: 7,
                brackets: Some(3),
            },
            Op::Profile {
                case: "p".into(),
                duration: Duration::from_millis(250),
                path: "x/capture.perf.data".into(),
                against: Some("base/p".into()),
            },
            Op::Finish { case: "f".into() },
        ];
        for op in ops {
            let request = Request {
                id: Some(json!(4)),
                op,
            };
            let line = serde_json::to_vec(&request).unwrap();
            assert_eq!(parse_request(&line).unwrap(), request);
        }
        let line = serde_json::to_string(&Request {
            id: None,
            op: Op::Sample {
                case: "s".into(),
                iterations: 9,
            },
        })
        .unwrap();
        assert_eq!(line, r#"{"op":"sample","case":"s","iterations":9}"#);
    }

    #[test]
    fn replies_put_id_and_ok_before_the_answer_and_read_back() {
        let line = reply(
            Some(json!("r1")),
            Ok(Answer::Calibrate(Calibrated {
                iterations: 8,
                ns: 1200,
            })),
        );
        assert_eq!(
            line.to_string(),
            r#"{"id":"r1","ok":true,"iterations":8,"ns":1200}"#
        );
        let back: Calibrated = serde_json::from_value(line).unwrap();
        assert_eq!(back.iterations, 8);
        let failed = reply(None, Err("op 'x': no".into()));
        assert_eq!(failed.to_string(), r#"{"ok":false,"error":"op 'x': no"}"#);
        let setup = reply(
            None,
            Ok(Answer::Setup(SetUp {
                case: "c".into(),
                throughput: Some(Throughput::Bytes(64)),
            })),
        );
        assert_eq!(
            setup.to_string(),
            r#"{"ok":true,"case":"c","throughput":{"bytes":64}}"#
        );
    }

    #[test]
    fn bad_requests_name_the_op_and_the_field() {
        assert!(error("{oops").starts_with("the request is not JSON"));
        assert!(error("[1]").contains("JSON object"));
        assert!(error(r#"{"id":1}"#).contains("no field 'op'"));
        assert!(error(r#"{"op":7}"#).contains("field 'op' must be a string"));
        assert!(error(r#"{"op":"frob"}"#).contains("unknown op 'frob'"));
        assert_eq!(
            error(r#"{"op":"setup"}"#),
            "op 'setup': field 'case' is missing"
        );
        assert_eq!(
            error(r#"{"op":"sample","case":"c","iterations":"ten"}"#),
            "op 'sample': field 'iterations' must be a positive integer, got \"ten\""
        );
        assert_eq!(
            error(r#"{"op":"sample","case":"c","iterations":0}"#),
            "op 'sample': field 'iterations' must be at least 1, got 0"
        );
        assert!(
            error(r#"{"op":"count","case":"c","iterations":1,"brackets":1001}"#)
                .contains("at most 1000")
        );
        assert!(
            error(r#"{"op":"profile","case":"c","seconds":-1,"path":"p"}"#)
                .contains("field 'seconds' must be a positive number")
        );
        assert_eq!(
            error(r#"{"op":"profile","case":"c","seconds":1,"path":"p","against":3}"#),
            "op 'profile': field 'against' must be a string, got 3"
        );
        // The id is echoed even when the rest is wrong.
        let bad = parse_request(br#"{"op":"sample","id":"x"}"#).unwrap_err();
        assert_eq!(bad.id, Some(json!("x")));
    }
}
