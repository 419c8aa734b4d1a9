//! `sparkles script` output: one line per record, as JSON or text.

use std::io::{self, Write};

use crate::features::hex;
use crate::file::Event;
use crate::record::{kind_name, Record};
use crate::sample::{ReadValues, Sample};

/// A JSON object written key by key (records are many; no intermediate tree).
struct Obj<'w, W: Write> {
    out: &'w mut W,
    first: bool,
}

impl<'w, W: Write> Obj<'w, W> {
    fn new(out: &'w mut W) -> io::Result<Self> {
        out.write_all(b"{")?;
        Ok(Obj { out, first: true })
    }

    fn key(&mut self, k: &str) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",")?;
        }
        self.first = false;
        write!(self.out, "\"{k}\":")
    }

    fn int(&mut self, k: &str, v: impl std::fmt::Display) -> io::Result<()> {
        self.key(k)?;
        write!(self.out, "{v}")
    }

    fn hex(&mut self, k: &str, v: u64) -> io::Result<()> {
        self.key(k)?;
        write!(self.out, "\"{v:#x}\"")
    }

    fn boolean(&mut self, k: &str, v: bool) -> io::Result<()> {
        self.key(k)?;
        write!(self.out, "{v}")
    }

    fn str(&mut self, k: &str, v: &[u8]) -> io::Result<()> {
        self.key(k)?;
        serde_json::to_writer(&mut *self.out, &String::from_utf8_lossy(v)).map_err(io::Error::other)
    }

    fn hex_list(&mut self, k: &str, values: impl Iterator<Item = u64>) -> io::Result<()> {
        self.key(k)?;
        self.out.write_all(b"[")?;
        for (i, v) in values.enumerate() {
            if i > 0 {
                self.out.write_all(b",")?;
            }
            write!(self.out, "\"{v:#x}\"")?;
        }
        self.out.write_all(b"]")
    }

    fn end(self) -> io::Result<()> {
        self.out.write_all(b"}\n")
    }
}

/// Writes one record as a JSON line.
pub fn write_json<W: Write>(out: &mut W, e: &Event<'_>) -> io::Result<()> {
    write_json_with(out, e, b"")
}

/// Writes one record as a JSON line, with `extra` (more `,"key":value` members, already
/// JSON) before its closing brace: how `sparkles script --stacks` adds a sample's stack.
pub fn write_json_with<W: Write>(out: &mut W, e: &Event<'_>, extra: &[u8]) -> io::Result<()> {
    let mut o = Obj::new(out)?;
    o.key("type")?;
    match e.record {
        Record::Throttle {
            throttled: false, ..
        } => write!(o.out, "\"unthrottle\"")?,
        _ => write!(o.out, "\"{}\"", kind_name(e.header.type_))?,
    }
    o.int("offset", e.offset)?;
    if let Some(t) = e.time {
        o.int("time", t)?;
    }
    if let Some(a) = e.attr {
        o.int("attr", a)?;
    }
    // Records that name their own process say it below; the trailer's would repeat the
    // key (and for the kernel's MMAP, disagree: -1 against 0).
    let own_pid = matches!(
        e.record,
        Record::Mmap(_)
            | Record::Comm { .. }
            | Record::Fork(_)
            | Record::Exit(_)
            | Record::BuildId { .. }
    );
    if let Some(s) = &e.sample_id {
        if let (Some(pid), Some(tid), false) = (s.pid, s.tid, own_pid) {
            o.int("pid", pid as i32)?;
            o.int("tid", tid as i32)?;
        }
        if let Some(cpu) = s.cpu {
            o.int("cpu", cpu)?;
        }
    }
    record_members(&mut o, e)?;
    o.out.write_all(extra)?;
    o.end()
}

/// Writes one record as a line of text.
pub fn write_text<W: Write>(out: &mut W, e: &Event<'_>) -> io::Result<()> {
    let time = e
        .time
        .map(|t| format!("{}.{:09}", t / 1_000_000_000, t % 1_000_000_000))
        .unwrap_or_else(|| "-".into());
    write!(out, "{time:>20} {:<14}", kind_name(e.header.type_))?;
    match &e.record {
        Record::Sample(s) => {
            write!(
                out,
                " {}/{}",
                s.pid.map(|p| p as i32).unwrap_or(-1),
                s.tid.map(|p| p as i32).unwrap_or(-1)
            )?;
            if let Some(cpu) = s.cpu {
                write!(out, " cpu {cpu}")?;
            }
            if let Some(p) = s.period {
                write!(out, " period {p}")?;
            }
            if let Some(ip) = s.ip {
                write!(out, " ip {ip:#x}")?;
            }
            if let Some(a) = s.addr {
                write!(out, " addr {a:#x}")?;
            }
            if let Some(d) = s.data_src {
                write!(out, " data_src {d:#x} {}", crate::DataSource::new(d))?;
            }
            if let Some(w) = s.weight {
                write!(out, " weight {}", w.latency())?;
            }
            if let Some(c) = s.callchain {
                write!(out, " callchain {}", c.len())?;
            }
            if let Some(st) = s.stack_user {
                write!(out, " stack {}", st.dyn_size)?;
            }
        }
        Record::Mmap(m) => write!(
            out,
            " {}/{} [{:#x}({:#x}) @ {:#x}] {}",
            m.pid as i32,
            m.tid as i32,
            m.addr,
            m.len,
            m.pgoff,
            String::from_utf8_lossy(m.filename)
        )?,
        Record::Comm {
            pid,
            tid,
            comm,
            exec,
        } => write!(
            out,
            " {}/{} {}{}",
            *pid as i32,
            *tid as i32,
            String::from_utf8_lossy(comm),
            if *exec { " (exec)" } else { "" }
        )?,
        Record::Fork(t) | Record::Exit(t) => write!(
            out,
            " {}/{} parent {}/{}",
            t.pid as i32, t.tid as i32, t.ppid as i32, t.ptid as i32
        )?,
        Record::Lost { lost, .. } | Record::LostSamples { lost } => write!(out, " {lost} lost")?,
        Record::Switch {
            out: away,
            preempt,
            next_prev,
        } => {
            let tid = e.sample_id.as_ref().and_then(|i| i.tid);
            write!(
                out,
                " {}{}",
                if *away { "OUT" } else { "IN" },
                if *preempt { " preempt" } else { "" }
            )?;
            if let Some(tid) = tid {
                write!(out, " tid {}", tid as i32)?;
            }
            if let Some((pid, tid)) = next_prev {
                write!(
                    out,
                    " {} {}/{}",
                    if *away { "next" } else { "prev" },
                    *pid as i32,
                    *tid as i32
                )?;
            }
        }
        Record::Other { type_, body } => write!(out, " type {type_}, {} bytes", body.len())?,
        _ => {}
    }
    out.write_all(b"\n")
}

/// The members of a record of each type.
fn record_members<W: Write>(o: &mut Obj<'_, W>, e: &Event<'_>) -> io::Result<()> {
    match &e.record {
        Record::Sample(s) => sample_members(o, s, e.header.misc)?,
        Record::Mmap(m) => {
            o.int("pid", m.pid as i32)?;
            o.int("tid", m.tid as i32)?;
            o.hex("addr", m.addr)?;
            o.hex("len", m.len)?;
            o.hex("pgoff", m.pgoff)?;
            if let Some((maj, min, ino, generation)) = m.inode {
                o.int("maj", maj)?;
                o.int("min", min)?;
                o.int("ino", ino)?;
                o.int("ino_generation", generation)?;
            }
            if let Some(b) = m.build_id {
                o.str("build_id", hex(b).as_bytes())?;
            }
            if let Some(p) = m.prot {
                o.int("prot", p)?;
            }
            if let Some(f) = m.flags {
                o.int("flags", f)?;
            }
            o.str("filename", m.filename)?;
        }
        Record::Comm {
            pid,
            tid,
            comm,
            exec,
        } => {
            o.int("pid", *pid as i32)?;
            o.int("tid", *tid as i32)?;
            o.str("comm", comm)?;
            o.boolean("exec", *exec)?;
        }
        Record::Fork(t) | Record::Exit(t) => {
            o.int("pid", t.pid as i32)?;
            o.int("ppid", t.ppid as i32)?;
            o.int("tid", t.tid as i32)?;
            o.int("ptid", t.ptid as i32)?;
        }
        Record::Lost { id, lost } => {
            o.int("id", id)?;
            o.int("lost", lost)?;
        }
        Record::LostSamples { lost } => o.int("lost", lost)?,
        Record::Throttle { id, stream_id, .. } => {
            o.int("id", id)?;
            o.int("stream_id", stream_id)?;
        }
        Record::Switch {
            out,
            preempt,
            next_prev,
        } => {
            o.boolean("out", *out)?;
            o.boolean("preempt", *preempt)?;
            if let Some((pid, tid)) = next_prev {
                o.int("next_prev_pid", *pid as i32)?;
                o.int("next_prev_tid", *tid as i32)?;
            }
        }
        Record::Ksymbol {
            addr,
            len,
            ksym_type,
            flags,
            name,
        } => {
            o.hex("addr", *addr)?;
            o.int("len", len)?;
            o.int("ksym_type", ksym_type)?;
            o.int("flags", flags)?;
            o.str("name", name)?;
        }
        Record::Cgroup { id, path } => {
            o.int("id", id)?;
            o.str("path", path)?;
        }
        Record::BuildId {
            pid,
            build_id,
            filename,
        } => {
            o.int("pid", pid)?;
            o.str("build_id", hex(build_id).as_bytes())?;
            o.str("filename", filename)?;
        }
        Record::HeaderAttr { attr, ids } => {
            o.int("attr_type", attr.type_)?;
            o.hex("config", attr.config)?;
            o.int("ids", ids.len())?;
        }
        Record::HeaderFeature { feature, data } => {
            o.int("feature", feature)?;
            o.int("size", data.len())?;
        }
        Record::Other { type_, body } => {
            o.int("type_number", type_)?;
            o.int("size", body.len())?;
        }
        _ => {}
    }
    Ok(())
}

/// A sample's members: who, where, what it sampled.
fn sample_members<W: Write>(o: &mut Obj<'_, W>, s: &Sample<'_>, misc: u16) -> io::Result<()> {
    if let (Some(pid), Some(tid)) = (s.pid, s.tid) {
        o.int("pid", pid as i32)?;
        o.int("tid", tid as i32)?;
    }
    if let Some(cpu) = s.cpu {
        o.int("cpu", cpu)?;
    }
    if let Some(p) = s.period {
        o.int("period", p)?;
    }
    if let Some(id) = s.id {
        o.int("id", id)?;
    }
    o.int("cpumode", misc & crate::record_kind::misc::CPUMODE_MASK)?;
    if let Some(ip) = s.ip {
        o.hex("ip", ip)?;
    }
    if let Some(a) = s.addr {
        o.hex("addr", a)?;
    }
    if let Some(d) = s.data_src {
        o.hex("data_src", d)?;
        // The same value decoded, the level as perf 6.4+ names it.
        let decoded = crate::DataSource::new(d);
        o.str("mem", decoded.to_string().as_bytes())?;
        if let Some(region) = decoded.region_name() {
            o.str("mem_region", region.as_bytes())?;
        }
    }
    if let Some(p) = s.phys_addr {
        o.hex("phys_addr", p)?;
    }
    if let Some(w) = s.weight {
        o.int("weight", w.latency())?;
        if let Some(l) = w.ins_lat() {
            o.int("ins_lat", l)?;
        }
    }
    if let Some(c) = s.callchain {
        o.hex_list("callchain", c.iter())?;
    }
    if let Some(r) = s.regs_user {
        o.key("regs_user")?;
        let mut regs = Obj::new(&mut *o.out)?;
        regs.int("abi", r.abi)?;
        regs.hex("mask", r.mask)?;
        regs.hex_list("values", r.values.iter())?;
        regs.out.write_all(b"}")?;
    }
    if let Some(st) = s.stack_user {
        o.int("stack_user_size", st.dyn_size)?;
    }
    if let Some(raw) = s.raw {
        o.int("raw_size", raw.len())?;
    }
    if let Some(b) = s.branch_stack {
        o.int("branch_stack_size", b.entries.len() / 3)?;
    }
    if let Some(t) = s.transaction {
        o.hex("transaction", t)?;
    }
    if let Some(c) = s.cgroup {
        o.int("cgroup", c)?;
    }
    if let Some(p) = s.data_page_size {
        o.int("data_page_size", p)?;
    }
    if let Some(p) = s.code_page_size {
        o.int("code_page_size", p)?;
    }
    if let Some(r) = s.read {
        read_members(o, &r)?;
    }
    Ok(())
}

/// A sample's counter values: `[{"value": …, "id": …}, …]`.
fn read_members<W: Write>(o: &mut Obj<'_, W>, r: &ReadValues<'_>) -> io::Result<()> {
    o.key("read")?;
    o.out.write_all(b"[")?;
    for (i, (value, id, _)) in r.entries().into_iter().enumerate() {
        if i > 0 {
            o.out.write_all(b",")?;
        }
        match id {
            Some(id) => write!(o.out, "{{\"value\":{value},\"id\":{id}}}")?,
            None => write!(o.out, "{{\"value\":{value}}}")?,
        }
    }
    o.out.write_all(b"]")
}
