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
        None => match s.uncompressed_data() {
            Ok(data) => Section::whole(data.into_owned()),
            // A section that cannot be read gives no DWARF from it, as if absent.
            Err(_) => return Ok(empty()),
        },
    };
    Ok(Reader::new(data, endian))
}

/// The DWARF of `file` (whose bytes are `bytes`), its abbreviations cached.
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
    let mut dwarf =
        gimli::Dwarf::load(|id| section(file, bytes, Some(id.name()).filter(|_| needed(id))))?;
    dwarf.populate_abbreviations_cache(gimli::AbbreviationsCacheStrategy::Duplicates);
    Ok(dwarf)
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
    let data = dwarf.debug_line.reader().clone();
    let len = data.len();
    let mut out = Vec::new();
    let mut offset = 0usize;
    while offset < len {
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

/// [`discriminators`] of one line program, sorted.
pub fn program_discriminators(
    program: gimli::IncompleteLineProgram<Reader>,
) -> Vec<(u64, u64, u32)> {
    let mut out = Vec::new();
    rows_with_discriminators(program, &mut out);
    out.sort_unstable();
    out
}

/// `(start, end, discriminator)` of each row of `program` with a nonzero discriminator.
fn rows_with_discriminators(
    program: gimli::IncompleteLineProgram<Reader>,
    out: &mut Vec<(u64, u64, u32)>,
) {
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
