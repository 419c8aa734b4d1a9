//! pprof export: the profile as a gzipped `profile.proto` (the format of `go tool pprof`,
//! Pyroscope and Parca). The messages are declared here with prost's derive (no protoc,
//! no build script), field numbers as in google/pprof's `proto/profile.proto`.

use std::collections::HashMap;
use std::io::Write;

use prost::Message;

use crate::profile::{Folded, Profile};

/// `perftools.profiles.Profile`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PprofProfile {
    /// What each sample value is.
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// The samples.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<PprofSample>,
    /// Mappings (none: locations carry their functions).
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// Locations.
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// Functions.
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Every string; index 0 is "".
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// The sampling period's type.
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// Comments (string indices).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
}

/// `ValueType`: type and unit as string indices.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueType {
    /// Type.
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// Unit.
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// `Sample`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PprofSample {
    /// Location ids, leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per sample type.
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
}

/// `Mapping` (declared for completeness; not written).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    /// Id.
    #[prost(uint64, tag = "1")]
    pub id: u64,
}

/// `Location`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    /// Id (nonzero).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Its lines (one: the function).
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
}

/// `Line`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Line {
    /// The function's id.
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// Line number (0: unknown).
    #[prost(int64, tag = "2")]
    pub line: i64,
}

/// `Function`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Function {
    /// Id (nonzero).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Name (string index).
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// System name (string index).
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// Source file (string index).
    #[prost(int64, tag = "4")]
    pub filename: i64,
}

/// The profile as pprof messages: one function and one location per frame name, one
/// sample per distinct stack with two values, `samples/count` and the event's weight.
pub fn build(profile: &Profile, folded: &Folded) -> PprofProfile {
    let mut strings: Vec<String> = vec![String::new()];
    let mut index: HashMap<String, i64> = HashMap::new();
    let mut intern = |s: &str, strings: &mut Vec<String>| -> i64 {
        if let Some(&i) = index.get(s) {
            return i;
        }
        strings.push(s.to_string());
        let i = strings.len() as i64 - 1;
        index.insert(s.to_string(), i);
        i
    };
    let files: HashMap<&str, &str> = profile
        .functions
        .iter()
        .filter_map(|e| Some((e.name.as_str(), e.file.as_deref()?)))
        .collect();
    let sample_type = vec![
        ValueType {
            r#type: intern("samples", &mut strings),
            unit: intern("count", &mut strings),
        },
        ValueType {
            r#type: intern(&profile.event, &mut strings),
            unit: intern("events", &mut strings),
        },
    ];
    let period_type = Some(sample_type[1].clone());
    let mut functions: Vec<Function> = Vec::new();
    let mut ids: HashMap<String, u64> = HashMap::new();
    let mut samples = Vec::new();
    for (stack, weight) in &folded.stacks {
        let count = folded.samples.get(stack).copied().unwrap_or(0);
        let mut location_id = Vec::new();
        // Folded stacks are root first; pprof's are leaf first.
        for frame in stack.rsplit(';') {
            let id = match ids.get(frame) {
                Some(&id) => id,
                None => {
                    let id = functions.len() as u64 + 1;
                    let name = intern(frame, &mut strings);
                    let file = files.get(frame).map_or(0, |f| intern(f, &mut strings));
                    functions.push(Function {
                        id,
                        name,
                        system_name: name,
                        filename: file,
                    });
                    ids.insert(frame.to_string(), id);
                    id
                }
            };
            location_id.push(id);
        }
        samples.push(PprofSample {
            location_id,
            value: vec![count as i64, *weight as i64],
        });
    }
    let location = functions
        .iter()
        .map(|f| Location {
            id: f.id,
            line: vec![Line {
                function_id: f.id,
                line: 0,
            }],
        })
        .collect();
    let comment = vec![intern(
        &format!(
            "{}: {} samples, {} lost",
            profile.case, profile.samples, profile.lost
        ),
        &mut strings,
    )];
    PprofProfile {
        sample_type,
        sample: samples,
        mapping: Vec::new(),
        location,
        function: functions,
        string_table: strings,
        period_type,
        comment,
    }
}

/// The gzipped `profile.proto` bytes.
pub fn gzipped(profile: &Profile, folded: &Folded) -> Result<Vec<u8>, crate::Error> {
    let bytes = build(profile, folded).encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&bytes)
        .and_then(|()| gz.finish())
        .map_err(|source| crate::Error::Render {
            what: "gzip",
            source,
        })
}
