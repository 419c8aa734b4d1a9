//! HEADER_TRACING_DATA: the tracefs format files of a capture's tracepoint events, as
//! perf's `trace-event-info.c` writes them (version 0.6) and `trace-event-read.c` reads
//! them. With it perf prints a tracepoint sample's fields; a report finds a field in a
//! sample's RAW data by the offset the kernel that recorded it gave (sched_switch's
//! `prev_state`), never by assuming one.
//!
//! Layout, host byte order: `\x17\x08\x44tracing`, the version `0.6\0`, one byte
//! big-endian flag, one byte `sizeof(long)`, the page size (u32); `header_page\0` and its
//! file (u64 size, bytes); `header_event\0` and its file; the ftrace formats (u32 count,
//! each u64 size and bytes); the event systems (u32 count; each its name `\0`-ended, u32
//! count, each format as u64 size and bytes); kallsyms (u32 size, bytes); ftrace_printk
//! (u32 size, bytes); saved_cmdline (u64 size, bytes).

use crate::bytes::Cursor;
use crate::error::DataError;

const MAGIC: [u8; 10] = [23, 8, 68, b't', b'r', b'a', b'c', b'i', b'n', b'g'];
const VERSION: &str = "0.6";

/// One field of a tracepoint's format.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Field {
    /// Its name (`prev_state`).
    pub name: String,
    /// Its C declaration (`long prev_state`).
    pub declaration: String,
    /// Its offset in the RAW data.
    pub offset: usize,
    /// Its size in bytes.
    pub size: usize,
    /// Whether it is signed.
    pub signed: bool,
}

/// One tracepoint's format file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EventFormat {
    /// Its system (`sched`).
    pub system: String,
    /// Its name (`sched_switch`).
    pub name: String,
    /// Its id: `perf_event_attr.config` of the tracepoint.
    pub id: u64,
    /// Its fields, the common ones first.
    pub fields: Vec<Field>,
}

impl EventFormat {
    /// Parses a tracefs `format` file of `system`; `None` where it names no event or id.
    pub fn parse(system: &str, text: &str) -> Option<EventFormat> {
        let mut name = None;
        let mut id = None;
        let mut fields = Vec::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(n) = line.strip_prefix("name:") {
                name = Some(n.trim().to_string());
            } else if let Some(i) = line.strip_prefix("ID:") {
                id = i.trim().parse().ok();
            } else if let Some(rest) = line.strip_prefix("field:") {
                fields.extend(parse_field(rest));
            }
        }
        Some(EventFormat {
            system: system.to_string(),
            name: name?,
            id: id?,
            fields,
        })
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The value of field `name` in a sample's RAW data (little-endian, sign-extended
    /// where signed); `None` where the field is absent, wider than 8 bytes or past the data.
    pub fn read(&self, name: &str, raw: &[u8]) -> Option<i64> {
        let f = self.field(name)?;
        let bytes = raw.get(f.offset..f.offset.checked_add(f.size)?)?;
        if bytes.is_empty() || bytes.len() > 8 {
            return None;
        }
        let mut v = [0u8; 8];
        v[..bytes.len()].copy_from_slice(bytes);
        let unsigned = u64::from_le_bytes(v);
        let shift = 64 - 8 * bytes.len() as u32;
        Some(if f.signed {
            ((unsigned << shift) as i64) >> shift
        } else {
            unsigned as i64
        })
    }
}

/// `unsigned char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;`
fn parse_field(text: &str) -> Option<Field> {
    let mut parts = text.split(';').map(str::trim);
    let declaration = parts.next()?.to_string();
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for p in parts {
        if let Some(v) = p.strip_prefix("offset:") {
            offset = v.trim().parse().ok();
        } else if let Some(v) = p.strip_prefix("size:") {
            size = v.trim().parse().ok();
        } else if let Some(v) = p.strip_prefix("signed:") {
            signed = v.trim() == "1";
        }
    }
    let last = declaration.split_whitespace().last()?;
    let name = last.split('[').next()?.trim_start_matches('*').to_string();
    Some(Field {
        name,
        declaration,
        offset: offset?,
        size: size?,
        signed,
    })
}

/// A capture's tracing data, as far as a report needs it.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct TracingData {
    /// The version perf's reader checks (`0.6`).
    pub version: String,
    /// `sizeof(long)` where it was recorded.
    pub long_size: u8,
    /// The page size where it was recorded.
    pub page_size: u32,
    /// The event formats, by system.
    pub events: Vec<EventFormat>,
}

impl TracingData {
    /// The format of the tracepoint whose id is `config`.
    pub fn event(&self, config: u64) -> Option<&EventFormat> {
        self.events.iter().find(|e| e.id == config)
    }

    /// The format of `system:name`.
    pub fn named(&self, system: &str, name: &str) -> Option<&EventFormat> {
        self.events
            .iter()
            .find(|e| e.system == system && e.name == name)
    }

    /// Parses the feature's bytes (at absolute `offset`).
    pub fn parse(data: &[u8], offset: u64) -> Result<TracingData, DataError> {
        let mut c = Cursor::new(data, offset);
        if c.bytes(10, "tracing data magic")? != MAGIC {
            return Err(c.error("tracing data: no \\x17\\x08\\x44tracing magic"));
        }
        let version = c_string(&mut c, "tracing data version")?;
        let big_endian = c.u8("tracing data endianness")?;
        if big_endian != 0 {
            return Err(c.error("tracing data: big-endian formats are not read"));
        }
        let long_size = c.u8("tracing data long size")?;
        let page_size = c.u32("tracing data page size")?;
        for (tag, what) in [
            (&b"header_page\0"[..], "header_page"),
            (&b"header_event\0"[..], "header_event"),
        ] {
            if c.bytes(tag.len(), what)? != tag {
                return Err(c.error(format!("tracing data: no {what}")));
            }
            let size = c.u64(what)?;
            skip(&mut c, size, what)?;
        }
        let ftrace = c.u32("ftrace formats")?;
        for _ in 0..ftrace {
            let size = c.u64("ftrace format size")?;
            skip(&mut c, size, "ftrace format")?;
        }
        let mut events = Vec::new();
        let systems = c.u32("event systems")?;
        for _ in 0..systems {
            let system = c_string(&mut c, "event system name")?;
            let count = c.u32("event formats")?;
            for _ in 0..count {
                let size = c.u64("event format size")?;
                let size = usize::try_from(size)
                    .map_err(|_| c.error("event format size past the data"))?;
                let text = c.bytes(size, "event format")?;
                events.extend(EventFormat::parse(&system, &String::from_utf8_lossy(text)));
            }
        }
        // kallsyms, ftrace_printk and saved_cmdline follow; nothing here needs them.
        Ok(TracingData {
            version,
            long_size,
            page_size,
            events,
        })
    }
}

fn c_string(c: &mut Cursor<'_>, what: &str) -> Result<String, DataError> {
    let mut bytes = Vec::new();
    loop {
        match c.u8(what)? {
            0 => return Ok(String::from_utf8_lossy(&bytes).into_owned()),
            b if bytes.len() < 4096 => bytes.push(b),
            _ => return Err(c.error(format!("{what}: no NUL in 4096 bytes"))),
        }
    }
}

fn skip(c: &mut Cursor<'_>, size: u64, what: &str) -> Result<(), DataError> {
    let size = usize::try_from(size).map_err(|_| c.error(format!("{what}: size past the data")))?;
    c.skip(size, what)
}

/// Tracing data for tracepoint formats `events` (`(system, format file)`), with tracefs's
/// `events/header_page` and `events/header_event`, as perf 6.1 writes it (no ftrace
/// formats, empty kallsyms, printk formats and saved cmdlines).
pub fn encode(header_page: &[u8], header_event: &[u8], events: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(VERSION.as_bytes());
    out.push(0);
    out.push(u8::from(cfg!(target_endian = "big")));
    out.push(std::mem::size_of::<std::ffi::c_long>() as u8);
    out.extend_from_slice(&4096u32.to_ne_bytes());
    for (tag, file) in [
        (&b"header_page\0"[..], header_page),
        (&b"header_event\0"[..], header_event),
    ] {
        out.extend_from_slice(tag);
        out.extend_from_slice(&(file.len() as u64).to_ne_bytes());
        out.extend_from_slice(file);
    }
    out.extend_from_slice(&0u32.to_ne_bytes()); // ftrace formats
    let mut systems: Vec<&str> = events.iter().map(|(s, _)| s.as_str()).collect();
    systems.dedup();
    out.extend_from_slice(&(systems.len() as u32).to_ne_bytes());
    for system in systems {
        out.extend_from_slice(system.as_bytes());
        out.push(0);
        let formats: Vec<&Vec<u8>> = events
            .iter()
            .filter(|(s, _)| s == system)
            .map(|(_, f)| f)
            .collect();
        out.extend_from_slice(&(formats.len() as u32).to_ne_bytes());
        for f in formats {
            out.extend_from_slice(&(f.len() as u64).to_ne_bytes());
            out.extend_from_slice(f);
        }
    }
    out.extend_from_slice(&0u32.to_ne_bytes()); // kallsyms
    out.extend_from_slice(&0u32.to_ne_bytes()); // ftrace_printk
    out.extend_from_slice(&0u64.to_ne_bytes()); // saved_cmdline
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use super::*;

    /// sched_switch's format as Linux 6.1 (x86_64) gives it.
    const SCHED_SWITCH: &str = "name: sched_switch
ID: 316
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;

print fmt: \"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid
";

    #[test]
    fn formats_round_trip_and_fields_read_from_raw_data() {
        let bytes = encode(
            b"header page",
            b"header event",
            &[("sched".into(), SCHED_SWITCH.as_bytes().to_vec())],
        );
        let t = TracingData::parse(&bytes, 0).unwrap();
        assert_eq!(t.version, "0.6");
        assert_eq!(t.long_size, 8);
        let e = t.event(316).unwrap();
        assert_eq!(
            (e.system.as_str(), e.name.as_str()),
            ("sched", "sched_switch")
        );
        assert_eq!(t.named("sched", "sched_switch"), Some(e));
        let f = e.field("prev_comm").unwrap();
        assert_eq!((f.offset, f.size, f.signed), (8, 16, false));
        let mut raw = vec![0u8; 68];
        raw[32..40].copy_from_slice(&2i64.to_le_bytes());
        raw[24..28].copy_from_slice(&(-1i32).to_le_bytes());
        assert_eq!(e.read("prev_state", &raw), Some(2));
        assert_eq!(e.read("prev_pid", &raw), Some(-1));
        assert_eq!(e.read("prev_state", &raw[..36]), None, "cut short");
        assert_eq!(e.read("no_such", &raw), None);
    }

    #[test]
    fn damaged_tracing_data_is_an_error_naming_the_part() {
        let bytes = encode(b"p", b"e", &[("sched".into(), SCHED_SWITCH.into())]);
        let err = TracingData::parse(&bytes[..bytes.len() - 200], 100).unwrap_err();
        assert!(err.to_string().contains("event format"), "{err}");
        let err = TracingData::parse(b"not tracing data", 0).unwrap_err();
        assert!(err.to_string().contains("magic"), "{err}");
    }
}
