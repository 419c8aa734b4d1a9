//! Data addresses named as memory reports name them: this test process's own variables
//! (a `.data` static, a `.bss` array larger than a page, a `.rodata` table) by their ELF
//! data symbols, and its heap, anonymous memory and stack by mapping kind, through the
//! address-space model built from its own /proc/self/maps.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use sparkles_perf_data::synth::parse_maps;
use sparkles_symbolize::address_space::{AddressSpace, Mapping};
use sparkles_symbolize::symbolizer::{DataKind, Symbolizer};
use sparkles_symbolize::SearchPaths;

#[no_mangle]
static SPARKLES_TEST_DATA: AtomicU64 = AtomicU64::new(0x1234);

#[no_mangle]
static SPARKLES_TEST_BSS: [AtomicU64; 65536] = [const { AtomicU64::new(0) }; 65536];

#[no_mangle]
static SPARKLES_TEST_RODATA: [u64; 64] = {
    let mut t = [0u64; 64];
    let mut i = 0;
    while i < 64 {
        t[i] = (i as u64) * 0x9e37_79b9;
        i += 1;
    }
    t
};

/// A symbolizer, and this process's mappings as an address space.
fn symbolizer_of_this_process() -> (Symbolizer, AddressSpace, u32) {
    let pid = std::process::id();
    let s = Symbolizer::new(SearchPaths::default());
    let mut space = AddressSpace::new();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    for m in parse_maps(&maps) {
        space.map(
            pid,
            Mapping {
                start: m.start,
                end: m.end,
                pgoff: m.offset,
                path: m.path.as_str().into(),
                build_id: None,
                prot: None,
            },
        );
    }
    (s, space, pid)
}

#[test]
fn variables_are_named_by_their_data_symbols() {
    // Touch them so the mappings exist and the linker keeps them.
    SPARKLES_TEST_DATA.fetch_add(1, Ordering::Relaxed);
    SPARKLES_TEST_BSS[65535].store(7, Ordering::Relaxed);
    black_box(&SPARKLES_TEST_RODATA);
    let (mut s, space, pid) = symbolizer_of_this_process();
    let cases = [
        (
            &SPARKLES_TEST_DATA as *const _ as u64 + 4,
            "SPARKLES_TEST_DATA",
            ".data",
        ),
        // The last element of a 512 KiB .bss array: past the file's pages.
        (
            &SPARKLES_TEST_BSS[65535] as *const _ as u64,
            "SPARKLES_TEST_BSS",
            ".bss",
        ),
        (
            &SPARKLES_TEST_RODATA[63] as *const _ as u64,
            "SPARKLES_TEST_RODATA",
            ".rodata",
        ),
    ];
    for (addr, name, section) in cases {
        let o = s.data_object(&space, pid, addr);
        assert_eq!(o.kind, DataKind::Global, "{name} at {addr:#x}: {o:?}");
        let sym = o.symbol.as_ref().unwrap();
        assert_eq!(&*sym.name, name);
        assert!(
            sym.section.starts_with(section),
            "{name} in {} (expected {section})",
            sym.section
        );
        assert!(o.mapping.as_deref().unwrap().ends_with(
            std::env::current_exe()
                .unwrap()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
        ));
    }
}

#[test]
fn heap_anonymous_and_stack_memory_are_told_apart() {
    let (mut s, space, pid) = symbolizer_of_this_process();
    let maps = parse_maps(&std::fs::read_to_string("/proc/self/maps").unwrap());
    // A big allocation is its own anonymous mapping.
    let big = vec![1u8; 64 << 20];
    let (mut s2, space2, _) = symbolizer_of_this_process();
    let o = s2.data_object(&space2, pid, big.as_ptr() as u64 + 12345);
    assert_eq!(o.kind, DataKind::Anon, "{o:?}");
    assert!(o.symbol.is_none());
    for m in &maps {
        let o = s.data_object(&space, pid, m.start);
        let want = match m.path.as_str() {
            "[heap]" => DataKind::Heap,
            "[stack]" => DataKind::Stack,
            _ => continue,
        };
        assert_eq!(o.kind, want, "{}", m.path);
        assert_eq!(o.mapping_start, m.start);
    }
    assert_eq!(
        s.data_object(&space, pid, 0xffff_ffff_8100_0000).kind,
        DataKind::Kernel
    );
    assert_eq!(s.data_object(&space, pid, 8).kind, DataKind::Unknown);
    // A read-only file mapping without variables at the address: the file itself.
    if let Some(m) = maps
        .iter()
        .find(|m| m.path.starts_with("/usr/lib") && m.path.contains("libc.so"))
    {
        let o = s.data_object(&space, pid, m.start);
        assert!(matches!(o.kind, DataKind::File | DataKind::Global), "{o:?}");
        assert_eq!(o.mapping.as_deref(), Some(m.path.as_str()));
    }
}
