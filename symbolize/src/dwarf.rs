//! A module's DWARF read from its mapped bytes: one `gimli::Dwarf` per module, built once
//! and shared (`Arc`), whose sections are ranges of the mapped file (decompressed only
//! where the file compresses them); split DWARF from the `.dwp` beside the file or the
//! `.dwo` files its units name.

use std::ops::{Deref, Range};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gimli::{Reader as _, Section as _};

use crate::elf::{map_file, FileBytes};

/// A DWARF section's bytes: a range of a mapped file (no copy), or of the bytes a
/// compressed section decompressed to.
#[derive(Debug, Clone)]
pub struct Section {
    bytes: Arc<FileBytes>,
    range: Range<usize>,
}

impl Section {
    /// No bytes.
    fn empty() -> Section {
        Section::whole(Vec::new())
    }

    /// All of `bytes` (decompressed ones: the vector moves, its bytes are not copied).
    fn whole(bytes: Vec<u8>) -> Section {
        let len = bytes.len();
        Section {
            bytes: Arc::new(FileBytes::Owned(bytes.into_boxed_slice())),
            range: 0..len,
        }
    }
}

impl Deref for Section {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[self.range.clone()]
    }
}

// SAFETY: a Section derefs to bytes behind an `Arc` that are never written or moved
// (a read-only map, or a boxed slice); moving or cloning the Section moves or copies the
// `Arc`, not the bytes, so every deref of it and of its clones gives the same address.
unsafe impl stable_deref_trait::StableDeref for Section {}
// SAFETY: as above; a clone shares the same `Arc`.
unsafe impl stable_deref_trait::CloneStableDeref for Section {}

/// How a module's DWARF is read.
pub type Reader = gimli::EndianReader<gimli::RunTimeEndian, Section>;

fn endian_of(file: &object::File<'_>) -> gimli::RunTimeEndian {
    use object::Object;
    if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    }
}

/// The section `name` of `file` (whose bytes are `bytes`), as a reader: empty where the
/// file has none, a range of the file where it is stored plain, decompressed otherwise.
fn section(
    file: &object::File<'_>,
    bytes: &Arc<FileBytes>,
    name: Option<&str>,
) -> Result<Reader, gimli::Error> {
    section_cached(file, bytes, name, None)
}

/// [`section`], a compressed one kept in the cache of inflated sections under the file's
/// `build_id` ([`crate::cache`]).
fn section_cached(
    file: &object::File<'_>,
    bytes: &Arc<FileBytes>,
    name: Option<&str>,
    build_id: Option<&[u8]>,
) -> Result<Reader, gimli::Error> {
    use object::{Object, ObjectSection};
    let endian = endian_of(file);
    let empty = || Reader::new(Section::empty(), endian);
    let Some(s) = name.and_then(|n| file.section_by_name(n)) else {
        return Ok(empty());
    };
    let plain = s
        .compressed_file_range()
        .ok()
        .filter(|r| r.format == object::CompressionFormat::None)
        .and_then(|r| {
            let end = r.offset.checked_add(r.compressed_size)?;
            (end <= bytes.len() as u64).then_some(r.offset as usize..end as usize)
        });
    let data = match plain {
        Some(range) => Section {
            bytes: Arc::clone(bytes),
            range,
        },
        None => {
            let size = s.compressed_file_range().map_or(0, |r| r.uncompressed_size);
            let name = name.unwrap_or_default();
            match build_id.and_then(|id| crate::cache::read(id, name, size)) {
                Some(kept) => Section {
                    range: 0..kept.len(),
                    bytes: kept,
                },
                None => match s.uncompressed_data() {
                    Ok(data) => {
                        if let Some(id) = build_id {
                            crate::cache::write(id, name, &data);
                        }
                        Section::whole(data.into_owned())
                    }
                    // A section that cannot be read gives no DWARF from it, as if absent.
                    Err(_) => return Ok(empty()),
                },
            }
        }
    };
    Ok(Reader::new(data, endian))
}

/// The DWARF of `file` (whose bytes are `bytes`).
pub fn load(
    file: &object::File<'_>,
    bytes: &Arc<FileBytes>,
) -> Result<gimli::Dwarf<Reader>, gimli::Error> {
    // Location lists (where variables live) and type units name no code: not read, and
    // not decompressed (in a distribution's compressed debug file they are a good part
    // of the bytes).
    let needed = |id: gimli::SectionId| {
        !matches!(
            id,
            gimli::SectionId::DebugLoc
                | gimli::SectionId::DebugLocLists
                | gimli::SectionId::DebugTypes
        )
    };
    let build_id = crate::elf::build_id_of(file);
    gimli::Dwarf::load(|id| {
        section_cached(
            file,
            bytes,
            Some(id.name()).filter(|_| needed(id)),
            build_id.as_deref(),
        )
    })
}

/// The DWARF package beside `path` (`PATH.dwp`), where there is one.
pub fn package(path: &Path) -> Option<gimli::DwarfPackage<Reader>> {
    let mut name = path.as_os_str().to_owned();
    name.push(".dwp");
    let bytes = map_file(Path::new(&name)).ok()?;
    let file = object::File::parse(&**bytes).ok()?;
    let empty = Reader::new(Section::empty(), endian_of(&file));
    gimli::DwarfPackage::load(|id| section(&file, &bytes, id.dwo_name()), empty).ok()
}

/// The split unit `load` asks for: from the package where there is one, else from the
/// `.dwo` file its skeleton names (`comp_dir/path`), checked against its id.
pub fn split_unit(
    load: &addr2line::SplitDwarfLoad<Reader>,
    package: Option<&gimli::DwarfPackage<Reader>>,
) -> Result<Option<Arc<gimli::Dwarf<Reader>>>, gimli::Error> {
    if let Some(dwp) = package {
        if let Some(cu) = dwp.find_cu(load.dwo_id, &load.parent)? {
            return Ok(Some(Arc::new(cu)));
        }
    }
    let mut path = PathBuf::new();
    let text = |r: &Reader| -> Result<String, gimli::Error> {
        Ok(String::from_utf8_lossy(&r.to_slice()?).into_owned())
    };
    if let Some(dir) = &load.comp_dir {
        path.push(text(dir)?);
    }
    let Some(name) = &load.path else {
        return Ok(None);
    };
    path.push(text(name)?);
    // A .dwo that is missing or not this unit's gives no names for the unit, as with
    // binutils.
    let dwo = (|| {
        let bytes = map_file(&path).ok()?;
        let file = object::File::parse(&**bytes).ok()?;
        let mut dwarf = gimli::Dwarf::load(|id| section(&file, &bytes, id.dwo_name())).ok()?;
        let header = dwarf.units().next().ok()??;
        let unit = dwarf.unit(header).ok()?;
        if unit.dwo_id != Some(load.dwo_id) {
            return None;
        }
        dwarf.make_dwo(&load.parent);
        Some(Arc::new(dwarf))
    })();
    Ok(dwo)
}

/// Address ranges of line-table rows with a nonzero discriminator, sorted (binutils prints
/// them; the addr2line crate's locations do not carry them): straight through
/// `.debug_line`, program after program, with no `.debug_info` parsing, since only rows
/// are wanted.
pub fn discriminators(dwarf: &gimli::Dwarf<Reader>, address_size: u8) -> Vec<(u64, u64, u32)> {
    use gimli::Reader as _;
    let data = dwarf.debug_line.reader().clone();
    let bytes = data.to_slice().ok();
    let len = data.len();
    let mut out = Vec::new();
    let mut offset = 0usize;
    while offset < len {
        // Programs that set no discriminator are stepped over from their raw header,
        // without parsing their file tables.
        if let Some((next, false)) = bytes.as_deref().and_then(|b| raw_program(b, offset)) {
            if next <= offset {
                break;
            }
            offset = next;
            continue;
        }
        let Ok(program) =
            dwarf
                .debug_line
                .program(gimli::DebugLineOffset(offset), address_size, None, None)
        else {
            break;
        };
        let header = program.header();
        let initial = match header.format() {
            gimli::Format::Dwarf64 => 12,
            gimli::Format::Dwarf32 => 4,
        };
        let next = offset + initial + header.unit_length();
        rows_with_discriminators(program, &mut out);
        if next <= offset {
            break;
        }
        offset = next;
    }
    out.sort_unstable();
    out
}

/// The line program at `offset` of `.debug_line` read from its raw header (versions 2 to
/// 5): where the next one starts, and whether its opcodes set a discriminator; `None`
/// where the header is not one this reads.
fn raw_program(section: &[u8], offset: usize) -> Option<(usize, bool)> {
    let b = section.get(offset..)?;
    let u16_at = |at: usize| Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?));
    let u64_at = |at: usize| Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?));
    let (unit_length, mut at, offset_size): (usize, usize, usize) = match u32_at(0)? {
        0xffff_ffff => (usize::try_from(u64_at(4)?).ok()?, 12, 8),
        n if n < 0xffff_fff0 => (n as usize, 4, 4),
        _ => return None,
    };
    let end = at.checked_add(unit_length)?;
    let version = u16_at(at)?;
    at += 2;
    if !(2..=5).contains(&version) {
        return None;
    }
    if version >= 5 {
        at += 2; // address_size, segment_selector_size
    }
    let header_length = if offset_size == 8 {
        usize::try_from(u64_at(at)?).ok()?
    } else {
        u32_at(at)? as usize
    };
    at += offset_size;
    let program_start = at.checked_add(header_length)?;
    at += 1; // minimum_instruction_length
    if version >= 4 {
        at += 1; // maximum_operations_per_instruction
    }
    at += 3; // default_is_stmt, line_base, line_range
    let opcode_base = *b.get(at)?;
    at += 1;
    let counts = b.get(at..at + usize::from(opcode_base.checked_sub(1)?))?;
    let opcodes = b.get(program_start..end)?;
    Some((
        offset + end,
        sets_discriminators(opcodes, opcode_base, counts),
    ))
}

/// [`discriminators`] of one line program, sorted.
pub fn program_discriminators(
    program: gimli::IncompleteLineProgram<Reader>,
) -> Vec<(u64, u64, u32)> {
    let mut out = Vec::new();
    rows_with_discriminators(program, &mut out);
    out.sort_unstable();
    out
}

/// Whether a line program's opcodes set a discriminator (`DW_LNE_set_discriminator`),
/// found by stepping over the opcodes without running the row state machine: special
/// opcodes are one byte, standard ones are skipped by their operand counts
/// (`standard_opcode_lengths`, each a ULEB128; `DW_LNS_fixed_advance_pc` a u16), extended
/// ones by their length. Most programs set none (rustc emits none), and need not be
/// decoded. An opcode stream it cannot step through is taken to have some.
fn sets_discriminators(opcodes: &[u8], opcode_base: u8, operand_counts: &[u8]) -> bool {
    const DW_LNS_FIXED_ADVANCE_PC: u8 = 9;
    const DW_LNE_SET_DISCRIMINATOR: u8 = 4;
    let mut at = 0usize;
    while at < opcodes.len() {
        let op = opcodes[at];
        at += 1;
        if op >= opcode_base {
            continue;
        }
        if op == 0 {
            let Some(len) = uleb(opcodes, &mut at) else {
                return true;
            };
            let Some(&sub) = opcodes.get(at) else {
                return true;
            };
            if sub == DW_LNE_SET_DISCRIMINATOR {
                return true;
            }
            let Some(next) = usize::try_from(len).ok().and_then(|l| at.checked_add(l)) else {
                return true;
            };
            at = next;
        } else if op == DW_LNS_FIXED_ADVANCE_PC {
            at += 2;
        } else {
            let count = operand_counts
                .get(usize::from(op) - 1)
                .copied()
                .unwrap_or(0);
            for _ in 0..count {
                if uleb(opcodes, &mut at).is_none() {
                    return true;
                }
            }
        }
    }
    false
}

/// The LEB128 number at `*at` of `bytes` (its value bits; a signed one's sign is not
/// extended), `*at` moved past it; `None` where the bytes end inside it. Raw scans of
/// DWARF step over values with it without decoding what they belong to.
#[inline(always)]
pub(crate) fn uleb(bytes: &[u8], at: &mut usize) -> Option<u64> {
    // Most values are one byte.
    let first = *bytes.get(*at)?;
    if first < 0x80 {
        *at += 1;
        return Some(u64::from(first));
    }
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let b = *bytes.get(*at)?;
        *at += 1;
        if shift < 64 {
            value |= u64::from(b & 0x7f) << shift;
        }
        if b & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
    }
}

/// `(start, end, discriminator)` of each row of `program` with a nonzero discriminator.
fn rows_with_discriminators(
    program: gimli::IncompleteLineProgram<Reader>,
    out: &mut Vec<(u64, u64, u32)>,
) {
    use gimli::Reader as _;
    let header = program.header();
    if let (Ok(opcodes), Ok(counts)) = (
        header.raw_program_buf().to_slice(),
        header.standard_opcode_lengths().to_slice(),
    ) {
        if !sets_discriminators(&opcodes, header.opcode_base(), &counts) {
            return;
        }
    }
    let mut rows = program.rows();
    let mut previous: Option<(u64, u32)> = None;
    while let Ok(Some((_, row))) = rows.next_row() {
        if let Some((start, disc)) = previous {
            if disc != 0 && row.address() > start {
                out.push((start, row.address(), disc));
            }
        }
        previous = (!row.end_sequence()).then(|| (row.address(), row.discriminator() as u32));
    }
}

#[cfg(test)]
mod discriminator_scan_tests {
    use super::sets_discriminators;

    /// DWARF 4's standard opcode operand counts (opcode_base 13).
    const COUNTS: [u8; 12] = [0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1];

    #[test]
    fn opcodes_are_stepped_over_not_pattern_matched() {
        // set_address 0x...0000, then set_file 5 (bytes `00 00 04 05` look like a
        // set_discriminator to a byte search), advance_pc 3, copy, a special opcode,
        // fixed_advance_pc 0x0400, end_sequence: no discriminator.
        let mut program = vec![0x00, 0x09, 0x02, 0x50, 0x34, 0x12, 0, 0, 0, 0, 0];
        program.extend([0x04, 0x05, 0x02, 0x03, 0x01, 0x20, 0x09, 0x00, 0x04]);
        program.extend([0x00, 0x01, 0x01]);
        assert!(!sets_discriminators(&program, 13, &COUNTS));
        // The same with a set_discriminator 7 before the copy.
        let mut with = program.clone();
        with.splice(15..15, [0x00, 0x02, 0x04, 0x07]);
        assert!(sets_discriminators(&with, 13, &COUNTS));
        // Cut short inside an operand: taken to have some (decoded, never skipped wrongly).
        assert!(sets_discriminators(&[0x02, 0x80], 13, &COUNTS));
    }
}
