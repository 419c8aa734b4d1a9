//! Records built byte by byte from the kernel ABI (include/uapi/linux/perf_event.h and
//! the order of kernel/events/core.c `perf_output_sample`), decoded back: every sample
//! field, every read_format, every kernel record with its sample_id trailer, and whole
//! files in file and pipe mode with several attrs and rounds.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use sparkles_perf_data::attr::{flag, read_format as rf, sample_type as st, Attr};
use sparkles_perf_data::record::{kind, misc, parse_record};
use sparkles_perf_data::sample::{Sample, SampleFormat, Weight};
use sparkles_perf_data::{PerfData, Record, RecordHeader};

/// Little-endian byte writer.
#[derive(Default, Clone)]
struct W(Vec<u8>);

impl W {
    fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u16(mut self, v: u16) -> Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    fn pad8(mut self) -> Self {
        while !self.0.len().is_multiple_of(8) {
            self.0.push(0);
        }
        self
    }
}

fn record(type_: u32, misc: u16, body: &[u8]) -> Vec<u8> {
    W::default()
        .u32(type_)
        .u16(misc)
        .u16((8 + body.len()) as u16)
        .bytes(body)
        .0
}

fn format(sample_type: u64) -> SampleFormat {
    SampleFormat::of(&Attr {
        sample_type,
        ..Attr::default()
    })
}

#[test]
fn every_sample_field_in_kernel_order() {
    let all = st::IDENTIFIER
        | st::IP
        | st::TID
        | st::TIME
        | st::ADDR
        | st::ID
        | st::STREAM_ID
        | st::CPU
        | st::PERIOD
        | st::READ
        | st::CALLCHAIN
        | st::RAW
        | st::BRANCH_STACK
        | st::REGS_USER
        | st::STACK_USER
        | st::WEIGHT_STRUCT
        | st::DATA_SRC
        | st::TRANSACTION
        | st::REGS_INTR
        | st::PHYS_ADDR
        | st::CGROUP
        | st::DATA_PAGE_SIZE
        | st::CODE_PAGE_SIZE
        | st::AUX;
    let f = SampleFormat::of(&Attr {
        sample_type: all,
        read_format: rf::TOTAL_TIME_ENABLED | rf::ID,
        sample_regs_user: 0b1011,
        sample_regs_intr: 0b11,
        branch_sample_type: sparkles_perf_data::attr::BRANCH_HW_INDEX,
        ..Attr::default()
    });
    let body = W::default()
        .u64(77) // identifier
        .u64(0x401000) // ip
        .u32(10)
        .u32(11) // pid, tid
        .u64(123_456) // time
        .u64(0xdead_0000) // addr
        .u64(77) // id
        .u64(78) // stream_id
        .u32(3)
        .u32(0) // cpu, res
        .u64(4000) // period
        .u64(999) // read: value
        .u64(1000) // time_enabled
        .u64(77) // id
        .u64(3) // callchain nr
        .u64(0xffff_ffff_ffff_fe00) // PERF_CONTEXT_USER
        .u64(0x401000)
        .u64(0x402000)
        .u32(4)
        .bytes(&[1, 2, 3, 4]) // raw: size 4 + 4 bytes = 8
        .u64(1) // branch nr
        .u64(5) // hw_idx
        .u64(0x1)
        .u64(0x2)
        .u64(0x3) // from, to, flags
        .u64(2) // regs_user abi 64
        .u64(100)
        .u64(101)
        .u64(103) // 3 regs (mask 0b1011)
        .u64(16) // stack size
        .bytes(&[9; 16])
        .u64(12) // dyn_size
        .u32(250)
        .u16(40)
        .u16(1) // weight struct
        .u64(0x6810_0142) // data_src
        .u64(0x5) // transaction
        .u64(2) // regs_intr abi
        .u64(200)
        .u64(201)
        .u64(0x1_2345_6000) // phys_addr
        .u64(42) // cgroup
        .u64(4096) // data page size
        .u64(2 << 20) // code page size
        .u64(8)
        .bytes(&[7; 8]); // aux
    let s = Sample::parse(&body.0, 0, &f).unwrap();
    assert_eq!(s.id, Some(77));
    assert_eq!(s.ip, Some(0x401000));
    assert_eq!((s.pid, s.tid), (Some(10), Some(11)));
    assert_eq!(s.time, Some(123_456));
    assert_eq!(s.addr, Some(0xdead_0000));
    assert_eq!(s.stream_id, Some(78));
    assert_eq!(s.cpu, Some(3));
    assert_eq!(s.period, Some(4000));
    let read = s.read.unwrap();
    assert_eq!(read.time_enabled, Some(1000));
    assert_eq!(read.time_running, None);
    assert_eq!(read.entries(), vec![(999, Some(77), None)]);
    let chain: Vec<u64> = s.callchain.unwrap().iter().collect();
    assert_eq!(chain, [0xffff_ffff_ffff_fe00, 0x401000, 0x402000]);
    assert_eq!(s.raw, Some(&[1u8, 2, 3, 4][..]));
    let branches = s.branch_stack.unwrap();
    assert_eq!(branches.hw_idx, Some(5));
    assert_eq!(branches.iter().collect::<Vec<_>>(), [(1, 2, 3)]);
    let regs = s.regs_user.unwrap();
    assert_eq!(regs.abi, 2);
    assert_eq!(
        (regs.get(0), regs.get(1), regs.get(2), regs.get(3)),
        (Some(100), Some(101), None, Some(103))
    );
    let stack = s.stack_user.unwrap();
    assert_eq!(stack.data.len(), 16);
    assert_eq!(stack.valid().len(), 12);
    assert_eq!(
        s.weight,
        Some(Weight::Struct {
            var1: 250,
            var2: 40,
            var3: 1
        })
    );
    assert_eq!(s.weight.unwrap().latency(), 250);
    assert_eq!(s.data_src, Some(0x6810_0142));
    assert_eq!(s.transaction, Some(5));
    assert_eq!(
        s.regs_intr.unwrap().values.iter().collect::<Vec<_>>(),
        [200, 201]
    );
    assert_eq!(s.phys_addr, Some(0x1_2345_6000));
    assert_eq!(s.cgroup, Some(42));
    assert_eq!(s.data_page_size, Some(4096));
    assert_eq!(s.code_page_size, Some(2 << 20));
    assert_eq!(s.aux, Some(&[7u8; 8][..]));
    // Every byte consumed; one byte short is an error naming an offset, never a panic.
    for cut in 0..body.0.len() {
        let e = Sample::parse(&body.0[..cut], 1000, &f).unwrap_err();
        assert!(e.offset >= 1000 && e.offset <= 1000 + cut as u64, "{e}");
    }
}

#[test]
fn weight_u64_and_absent_optional_parts() {
    // ip; user regs with abi 0 (a kernel thread: no values); a user stack of size 0 (no
    // dyn_size word follows); then the u64 weight, in the kernel's order.
    let f = SampleFormat {
        regs_user_mask: 0xff,
        ..format(st::IP | st::WEIGHT | st::REGS_USER | st::STACK_USER)
    };
    let body = W::default().u64(1).u64(0).u64(0).u64(77);
    let s = Sample::parse(&body.0, 0, &f).unwrap();
    assert_eq!(s.ip, Some(1));
    assert_eq!(s.regs_user.unwrap().abi, 0);
    assert!(s.regs_user.unwrap().values.is_empty());
    assert_eq!(s.stack_user.unwrap().data.len(), 0);
    assert_eq!(s.weight, Some(Weight::Full(77)));
    assert_eq!(s.weight.unwrap().ins_lat(), None);
}

#[test]
fn every_read_format() {
    for format_bits in 0..32u64 {
        let group = format_bits & rf::GROUP != 0;
        let has = |b: u64| format_bits & b != 0;
        let mut w = W::default();
        let n = if group { 2 } else { 1 };
        w = w.u64(if group { n } else { 500 });
        if has(rf::TOTAL_TIME_ENABLED) {
            w = w.u64(10);
        }
        if has(rf::TOTAL_TIME_RUNNING) {
            w = w.u64(9);
        }
        let mut want = Vec::new();
        for i in 0..n {
            if group {
                w = w.u64(500 + i);
            }
            let id = has(rf::ID).then_some(40 + i);
            if let Some(id) = id {
                w = w.u64(id);
            }
            let lost = has(rf::LOST).then_some(3 + i);
            if let Some(lost) = lost {
                w = w.u64(lost);
            }
            want.push((500 + i, id, lost));
        }
        let f = SampleFormat {
            read_format: format_bits,
            ..format(st::READ)
        };
        let s = Sample::parse(&w.0, 0, &f).unwrap();
        let read = s.read.unwrap();
        assert_eq!(read.entries(), want, "read_format {format_bits:#b}");
        assert_eq!(read.time_enabled, has(rf::TOTAL_TIME_ENABLED).then_some(10));
        assert_eq!(read.time_running, has(rf::TOTAL_TIME_RUNNING).then_some(9));
    }
}

fn attr_with(sample_type: u64, sample_id_all: bool) -> Attr {
    Attr {
        size: 136,
        sample_type,
        flags: if sample_id_all {
            flag::SAMPLE_ID_ALL
        } else {
            0
        },
        ..Attr::default()
    }
}

/// The sample_id trailer for `st::TID | st::TIME | st::CPU | st::IDENTIFIER`.
fn trailer() -> W {
    W::default().u32(5).u32(6).u64(9_000).u32(2).u32(0).u64(77)
}

#[test]
fn every_kernel_record_with_its_trailer() {
    let a = attr_with(st::TID | st::TIME | st::CPU | st::IDENTIFIER, true);
    let f = SampleFormat::of(&a);
    let cases: Vec<(u32, u16, W)> = vec![
        (
            kind::MMAP,
            0,
            W::default()
                .u32(5)
                .u32(6)
                .u64(0x400000)
                .u64(0x1000)
                .u64(0)
                .bytes(b"/bin/true\0")
                .pad8(),
        ),
        (
            kind::MMAP2,
            0,
            W::default()
                .u32(5)
                .u32(6)
                .u64(0x400000)
                .u64(0x1000)
                .u64(0)
                .u32(8)
                .u32(1)
                .u64(1234)
                .u64(1)
                .u32(5)
                .u32(2)
                .bytes(b"/lib/x.so\0")
                .pad8(),
        ),
        (
            kind::MMAP2,
            misc::MMAP_BUILD_ID,
            W::default()
                .u32(5)
                .u32(6)
                .u64(0x400000)
                .u64(0x1000)
                .u64(0)
                .bytes(&[20, 0, 0, 0])
                .bytes(&[0xab; 20])
                .u32(5)
                .u32(2)
                .bytes(b"/lib/y.so\0")
                .pad8(),
        ),
        (
            kind::COMM,
            misc::COMM_EXEC,
            W::default().u32(5).u32(6).bytes(b"bench\0").pad8(),
        ),
        (
            kind::FORK,
            0,
            W::default().u32(5).u32(1).u32(6).u32(1).u64(8_000),
        ),
        (
            kind::EXIT,
            0,
            W::default().u32(5).u32(1).u32(6).u32(1).u64(8_000),
        ),
        (kind::LOST, 0, W::default().u64(77).u64(12)),
        (kind::LOST_SAMPLES, 0, W::default().u64(3)),
        (kind::THROTTLE, 0, W::default().u64(1).u64(77).u64(78)),
        (kind::UNTHROTTLE, 0, W::default().u64(1).u64(77).u64(78)),
        (
            kind::SWITCH,
            misc::SWITCH_OUT | misc::SWITCH_OUT_PREEMPT,
            W::default(),
        ),
        (kind::SWITCH_CPU_WIDE, 0, W::default().u32(7).u32(8)),
        (
            kind::NAMESPACES,
            0,
            W::default().u32(5).u32(6).u64(1).u64(4).u64(0xeffffff),
        ),
        (
            kind::KSYMBOL,
            0,
            W::default()
                .u64(0xffff_0000)
                .u32(64)
                .u16(1)
                .u16(0)
                .bytes(b"bpf_prog\0")
                .pad8(),
        ),
        (
            kind::BPF_EVENT,
            0,
            W::default().u16(1).u16(0).u32(9).bytes(&[1; 8]),
        ),
        (kind::CGROUP, 0, W::default().u64(5).bytes(b"/sys\0").pad8()),
        (
            kind::TEXT_POKE,
            0,
            W::default()
                .u64(0xffff_1000)
                .u16(2)
                .u16(2)
                .bytes(&[1, 2, 3, 4])
                .pad8(),
        ),
        (kind::AUX, 0, W::default().u64(0).u64(4096).u64(1)),
        (kind::ITRACE_START, 0, W::default().u32(5).u32(6)),
        (kind::READ, 0, W::default().u32(5).u32(6).u64(77)),
        (kind::AUX_OUTPUT_HW_ID, 0, W::default().u64(3)),
    ];
    for (type_, misc_bits, body) in cases {
        let body = body.bytes(&trailer().0);
        let bytes = record(type_, misc_bits, &body.0);
        let header = RecordHeader::parse(&bytes, 0).unwrap();
        let (rec, sid) = parse_record(header, &bytes[8..], 0, Some(&f)).unwrap();
        let sid = sid.unwrap_or_else(|| panic!("type {type_}: no trailer"));
        assert_eq!(
            (sid.pid, sid.tid, sid.time, sid.cpu, sid.id),
            (Some(5), Some(6), Some(9_000), Some(2), Some(77)),
            "type {type_}"
        );
        match (type_, rec) {
            (kind::MMAP, Record::Mmap(m)) => assert_eq!(m.filename, b"/bin/true"),
            (kind::MMAP2, Record::Mmap(m)) if misc_bits == 0 => {
                assert_eq!(m.inode, Some((8, 1, 1234, 1)));
                assert_eq!((m.prot, m.flags), (Some(5), Some(2)));
                assert_eq!(m.filename, b"/lib/x.so");
            }
            (kind::MMAP2, Record::Mmap(m)) => {
                assert_eq!(m.build_id, Some(&[0xab; 20][..]));
                assert_eq!(m.filename, b"/lib/y.so");
            }
            (kind::COMM, Record::Comm { comm, exec, .. }) => assert!(comm == b"bench" && exec),
            (kind::FORK, Record::Fork(t)) | (kind::EXIT, Record::Exit(t)) => {
                assert_eq!((t.pid, t.ppid, t.time), (5, 1, 8_000))
            }
            (kind::LOST, Record::Lost { id, lost }) => assert_eq!((id, lost), (77, 12)),
            (kind::LOST_SAMPLES, Record::LostSamples { lost }) => assert_eq!(lost, 3),
            (kind::THROTTLE, Record::Throttle { throttled, .. }) => assert!(throttled),
            (kind::UNTHROTTLE, Record::Throttle { throttled, .. }) => assert!(!throttled),
            (
                kind::SWITCH,
                Record::Switch {
                    out,
                    preempt,
                    next_prev,
                },
            ) => assert!(out && preempt && next_prev.is_none()),
            (kind::SWITCH_CPU_WIDE, Record::Switch { out, next_prev, .. }) => {
                assert!(!out && next_prev == Some((7, 8)))
            }
            (kind::NAMESPACES, Record::Namespaces { namespaces, .. }) => {
                assert_eq!(namespaces.len(), 2)
            }
            (kind::KSYMBOL, Record::Ksymbol { name, len, .. }) => {
                assert!(name == b"bpf_prog" && len == 64)
            }
            (kind::BPF_EVENT, Record::BpfEvent { id, tag, .. }) => {
                assert!(id == 9 && tag == [1; 8])
            }
            (kind::CGROUP, Record::Cgroup { id, path }) => assert!(id == 5 && path == b"/sys"),
            (kind::TEXT_POKE, Record::TextPoke { old, new, .. }) => {
                assert!(old == [1, 2] && new == [3, 4])
            }
            (kind::AUX, Record::Aux { size, .. }) => assert_eq!(size, 4096),
            (kind::ITRACE_START, Record::ItraceStart { pid, tid }) => {
                assert_eq!((pid, tid), (5, 6))
            }
            (kind::READ, Record::Read { values, .. }) => {
                assert_eq!(values.entries(), vec![(77, None, None)])
            }
            (kind::AUX_OUTPUT_HW_ID, Record::AuxOutputHwId { hw_id }) => assert_eq!(hw_id, 3),
            (t, r) => panic!("type {t} decoded as {r:?}"),
        }
    }
}

/// A file-mode perf.data: header, attrs with their id sections, data, no features.
fn file_mode(attrs: &[(Attr, Vec<u64>)], records: &[Vec<u8>]) -> Vec<u8> {
    let attr_size = 136 + 16;
    let attrs_off = 104u64;
    let ids_off = attrs_off + (attrs.len() * attr_size) as u64;
    let id_bytes: usize = attrs.iter().map(|(_, ids)| ids.len() * 8).sum();
    let data_off = ids_off + id_bytes as u64;
    let data: Vec<u8> = records.concat();
    let mut w = W::default()
        .bytes(b"PERFILE2")
        .u64(104)
        .u64(attr_size as u64)
        .u64(attrs_off)
        .u64((attrs.len() * attr_size) as u64)
        .u64(data_off)
        .u64(data.len() as u64)
        .u64(0)
        .u64(0)
        .u64(0)
        .u64(0)
        .u64(0)
        .u64(0);
    let mut next_ids = ids_off;
    for (a, ids) in attrs {
        w = w
            .u32(a.type_)
            .u32(136)
            .u64(a.config)
            .u64(a.sample_period_or_freq)
            .u64(a.sample_type)
            .u64(a.read_format)
            .u64(a.flags)
            .bytes(&[0; 136 - 48])
            .u64(next_ids)
            .u64((ids.len() * 8) as u64);
        next_ids += (ids.len() * 8) as u64;
    }
    for (_, ids) in attrs {
        for id in ids {
            w = w.u64(*id);
        }
    }
    w.bytes(&data).0
}

fn sample(id: u64, time: u64, ip: u64) -> Vec<u8> {
    record(
        kind::SAMPLE,
        2,
        &W::default().u64(id).u64(ip).u32(1).u32(1).u64(time).0,
    )
}

#[test]
fn several_attrs_matched_by_identifier_and_rounds_ordered_by_time() {
    let st = st::IDENTIFIER | st::IP | st::TID | st::TIME;
    let a = Attr {
        type_: 1,
        config: 0,
        ..attr_with(st, true)
    };
    let b = Attr {
        type_: 1,
        config: 2,
        ..attr_with(st, true)
    };
    let records = vec![
        sample(10, 300, 0xa),
        sample(20, 100, 0xb),
        record(kind::FINISHED_ROUND, 0, &[]),
        sample(20, 200, 0xc), // earlier than the first round's 300: still ordered
        sample(10, 400, 0xd),
        // A non-sample record timed by its sample_id trailer (time 150, attr id 10).
        record(
            kind::COMM,
            0,
            &W::default()
                .u32(1)
                .u32(1)
                .bytes(b"x\0")
                .pad8()
                .u32(1)
                .u32(1)
                .u64(150)
                .u64(10)
                .0,
        ),
        // Flushes up to the first round's latest time (300); 400 waits for the end.
        record(kind::FINISHED_ROUND, 0, &[]),
    ];
    let bytes = file_mode(&[(a.clone(), vec![10]), (b.clone(), vec![20])], &records);
    let data = PerfData::from_bytes(bytes).unwrap();
    assert_eq!(data.attrs.len(), 2);
    let mut seen = Vec::new();
    data.for_each_record(|e| {
        if let Record::Sample(s) = &e.record {
            seen.push((e.time.unwrap(), e.attr.unwrap(), s.ip.unwrap()));
        }
        if let Record::Comm { .. } = &e.record {
            seen.push((e.time.unwrap(), e.attr.unwrap(), 0));
        }
        Ok::<(), sparkles_perf_data::Error>(())
    })
    .unwrap();
    assert_eq!(
        seen,
        [
            (100, 1, 0xb),
            (150, 0, 0),
            (200, 1, 0xc),
            (300, 0, 0xa),
            (400, 0, 0xd)
        ]
    );
    // A sample whose id is in no attr's list is an error at its offset.
    let bytes = file_mode(&[(a, vec![10]), (b, vec![20])], &[sample(30, 1, 1)]);
    let data = PerfData::from_bytes(bytes).unwrap();
    let e = data
        .for_each_record(|_| Ok::<(), sparkles_perf_data::Error>(()))
        .unwrap_err();
    assert!(e.to_string().contains("matches no attr"), "{e}");
}

#[test]
fn samples_matched_by_id_position_without_identifier() {
    // ID after IP and TIME: position 2 in the body.
    let st = st::IP | st::TIME | st::ID;
    let a = attr_with(st, false);
    let b = Attr {
        config: 1,
        ..attr_with(st, false)
    };
    let rec =
        |id: u64, time: u64| record(kind::SAMPLE, 0, &W::default().u64(0x1).u64(time).u64(id).0);
    let bytes = file_mode(
        &[(a.clone(), vec![5]), (b.clone(), vec![6])],
        &[rec(6, 2), rec(5, 1)],
    );
    let data = PerfData::from_bytes(bytes).unwrap();
    let mut attrs = Vec::new();
    data.for_each_record(|e| {
        attrs.push(e.attr.unwrap());
        Ok::<(), sparkles_perf_data::Error>(())
    })
    .unwrap();
    assert_eq!(attrs, [0, 1]);
}

#[test]
fn pipe_mode_carries_attrs_in_the_stream() {
    let a = attr_with(st::IP | st::TID | st::TIME, true);
    let attr_body = W::default()
        .u32(1)
        .u32(136)
        .u64(0)
        .u64(4000)
        .u64(a.sample_type)
        .u64(0)
        .u64(a.flags)
        .bytes(&[0; 136 - 48])
        .u64(99);
    let records = [
        record(kind::HEADER_ATTR, 0, &attr_body.0),
        record(
            kind::SAMPLE,
            2,
            &W::default().u64(0x10).u32(3).u32(3).u64(7).0,
        ),
        record(
            kind::HEADER_FEATURE,
            0,
            &W::default().u64(3).u32(8).bytes(b"host\0\0\0\0").0,
        ),
    ];
    let bytes = W::default()
        .bytes(b"PERFILE2")
        .u64(16)
        .bytes(&records.concat())
        .0;
    let data = PerfData::from_bytes(bytes).unwrap();
    assert_eq!(data.attrs.len(), 1);
    assert_eq!(data.attrs[0].ids, [99]);
    assert_eq!(data.features.hostname.as_deref(), Some("host"));
    let stats = data
        .for_each_record(|_| Ok::<(), sparkles_perf_data::Error>(()))
        .unwrap();
    assert_eq!(stats.samples, 1);
}

#[test]
fn attrs_of_every_layout_size() {
    for size in [64usize, 72, 80, 96, 104, 112, 120, 128, 136, 152, 200] {
        let mut w = W::default()
            .u32(4)
            .u32(size as u32)
            .u64(0x3c)
            .u64(1000)
            .u64(st::IP)
            .u64(0)
            .u64(flag::SAMPLE_ID_ALL | flag::FREQ)
            .u32(0)
            .u32(0)
            .u64(7); // config1
        while w.0.len() < size {
            w = w.u64(0x11);
        }
        w.0.truncate(size);
        let mut c = sparkles_perf_data::bytes::Cursor::new(&w.0, 0);
        let a = Attr::parse(&mut c, size).unwrap();
        assert_eq!((a.type_, a.config, a.config1), (4, 0x3c, 7), "size {size}");
        assert!(a.sample_id_all() && a.freq());
        assert_eq!(a.config2 != 0, size >= 72, "size {size}");
        assert_eq!(c.remaining(), 0, "size {size}: the whole attr is consumed");
    }
    let mut c = sparkles_perf_data::bytes::Cursor::new(&[0u8; 40], 0);
    assert!(Attr::parse(&mut c, 40).is_err());
}

#[test]
fn big_endian_and_foreign_files_are_refused_clearly() {
    let mut be = W::default().bytes(b"2ELIFREP").u64(104).0;
    be.resize(200, 0);
    let e = PerfData::from_bytes(be).unwrap_err();
    let e = e.as_data().unwrap();
    assert_eq!(e.offset, 0);
    assert!(e.message.contains("big-endian"), "{e}");
    let e = PerfData::from_bytes(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0".to_vec()).unwrap_err();
    let e = e.as_data().unwrap();
    assert!(e.message.contains("not a perf.data file"), "{e}");
    let e = PerfData::from_bytes(W::default().bytes(b"PERFILE2").u64(40).0).unwrap_err();
    let e = e.as_data().unwrap();
    assert!(e.message.contains("header size 40"), "{e}");
}
