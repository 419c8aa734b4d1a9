//! Compilation units read one at a time, where a module allows it.
//!
//! addr2line's `Context` reads every unit's abbreviations and line-program header when it
//! is made: for a distribution's libc (about 2,000 units) that was a third of a small
//! report. Where each unit can be read alone (no reference leaves its unit, no split
//! DWARF, `.debug_aranges` places every compilation unit and no two of its ranges
//! overlap), the module keeps an index from address to unit, built from the raw sections
//! without parsing any unit, and makes a context over a unit's bytes alone the first time
//! an address in it is asked about. Anything else keeps one context over the whole
//! module, as before.

use std::cell::OnceCell;
use std::ops::Range;

use gimli::{Reader as _, Section as _};

use crate::dwarf::{uleb, Reader};

/// Modules with fewer compilation units than this get one context over all of them
/// (making it costs little; the index would save nothing).
pub const MIN_UNITS: usize = 32;

/// Where each compilation unit of a module lies: its bytes in `.debug_info` and the
/// address ranges `.debug_aranges` gives it.
#[derive(Debug)]
pub struct UnitIndex {
    /// `(start, end, unit)`, sorted by start, not overlapping.
    ranges: Vec<(u64, u64, u32)>,
    /// Each unit's bytes in `.debug_info`, header included.
    units: Vec<Range<usize>>,
}

impl UnitIndex {
    /// The index of `dwarf`'s units, where every one of them can be read alone and there
    /// are at least `min_units`; `None` where the module must be read as a whole.
    pub fn of(dwarf: &gimli::Dwarf<Reader>, min_units: usize) -> Option<UnitIndex> {
        if dwarf.sup.is_some() || dwarf.debug_aranges.reader().is_empty() {
            return None;
        }
        let mut units = Vec::new();
        let mut offsets = Vec::new();
        let mut headers = dwarf.units();
        while let Some(header) = headers.next().ok()? {
            match header.type_() {
                gimli::UnitType::Compilation => {}
                // Type units name no code: their bytes are simply not indexed.
                gimli::UnitType::Type { .. } => continue,
                _ => return None,
            }
            let start = header.debug_info_offset()?.0;
            units.push(start..start + header.length_including_self());
            offsets.push(start);
        }
        if units.len() < min_units.max(1) {
            return None;
        }
        let abbrev = dwarf.debug_abbrev.reader().to_slice().ok()?;
        if !abbreviations_stay_in_unit(&abbrev) {
            return None;
        }
        let mut ranges = Vec::new();
        let mut placed = vec![false; units.len()];
        let mut sets = dwarf.debug_aranges.headers();
        while let Some(set) = sets.next().ok()? {
            let unit = offsets.binary_search(&set.debug_info_offset().0).ok()?;
            placed[unit] = true;
            let mut entries = set.entries();
            while let Some(entry) = entries.next().ok()? {
                let range = entry.range();
                if range.end > range.begin {
                    ranges.push((range.begin, range.end, unit as u32));
                }
            }
        }
        if placed.contains(&false) {
            return None;
        }
        ranges.sort_unstable();
        if ranges.windows(2).any(|w| w[1].0 < w[0].1) {
            return None;
        }
        Some(UnitIndex { ranges, units })
    }

    /// How many compilation units the module has.
    pub fn units(&self) -> usize {
        self.units.len()
    }

    /// The unit whose code holds `addr`.
    pub fn unit_of(&self, addr: u64) -> Option<usize> {
        let i = self.ranges.partition_point(|r| r.0 <= addr);
        let r = self.ranges.get(i.checked_sub(1)?)?;
        (addr < r.1).then_some(r.2 as usize)
    }

    /// `dwarf` with `.debug_info` cut down to unit `unit` alone (its references are all
    /// within it, and every other section is shared whole), and no `.debug_aranges`
    /// (whose offsets are of the whole section): addr2line reads the unit's ranges from
    /// its root entry.
    pub fn unit_dwarf(&self, dwarf: &gimli::Dwarf<Reader>, unit: usize) -> gimli::Dwarf<Reader> {
        let info = dwarf.debug_info.reader().range(self.units[unit].clone());
        let none = dwarf.debug_aranges.reader().range(0..0);
        gimli::Dwarf {
            debug_abbrev: dwarf.debug_abbrev.clone(),
            debug_addr: dwarf.debug_addr.clone(),
            debug_aranges: none.into(),
            debug_info: info.into(),
            debug_line: dwarf.debug_line.clone(),
            debug_line_str: dwarf.debug_line_str.clone(),
            debug_macinfo: dwarf.debug_macinfo.clone(),
            debug_macro: dwarf.debug_macro.clone(),
            debug_names: dwarf.debug_names.clone(),
            debug_str: dwarf.debug_str.clone(),
            debug_str_offsets: dwarf.debug_str_offsets.clone(),
            debug_types: dwarf.debug_types.clone(),
            locations: dwarf.locations.clone(),
            ranges: dwarf.ranges.clone(),
            file_type: dwarf.file_type,
            sup: None,
            abbreviations_cache: Default::default(),
        }
    }
}

/// Whether no abbreviation in `.debug_abbrev` (every table, read raw) lets an entry
/// point out of its unit or into a split or supplementary file: no `DW_FORM_ref_addr`,
/// `DW_FORM_ref_sup4/8`, `DW_FORM_GNU_ref_alt` or `DW_FORM_indirect` (whose form is only
/// known per entry), and no `DW_AT_dwo_name`/`DW_AT_GNU_dwo_name`/`DW_AT_GNU_dwo_id`.
/// Bytes it cannot read count as a reference out.
pub fn abbreviations_stay_in_unit(section: &[u8]) -> bool {
    const DW_FORM_REF_ADDR: u64 = 0x10;
    const DW_FORM_INDIRECT: u64 = 0x16;
    const DW_FORM_REF_SUP4: u64 = 0x1c;
    const DW_FORM_IMPLICIT_CONST: u64 = 0x21;
    const DW_FORM_REF_SUP8: u64 = 0x24;
    const DW_FORM_GNU_REF_ALT: u64 = 0x1f20;
    const DW_AT_DWO_NAME: u64 = 0x76;
    const DW_AT_GNU_DWO_NAME: u64 = 0x2130;
    const DW_AT_GNU_DWO_ID: u64 = 0x2131;
    let mut at = 0usize;
    while at < section.len() {
        // A table is declarations up to a zero code; tables follow each other.
        let Some(code) = uleb(section, &mut at) else {
            return false;
        };
        if code == 0 {
            continue;
        }
        // Tag, then the children flag.
        if uleb(section, &mut at).is_none() || section.get(at).is_none() {
            return false;
        }
        at += 1;
        loop {
            let (Some(name), Some(form)) = (uleb(section, &mut at), uleb(section, &mut at)) else {
                return false;
            };
            if name == 0 && form == 0 {
                break;
            }
            if form == DW_FORM_IMPLICIT_CONST && uleb(section, &mut at).is_none() {
                return false;
            }
            if matches!(
                form,
                DW_FORM_REF_ADDR
                    | DW_FORM_INDIRECT
                    | DW_FORM_REF_SUP4
                    | DW_FORM_REF_SUP8
                    | DW_FORM_GNU_REF_ALT
            ) || matches!(name, DW_AT_DWO_NAME | DW_AT_GNU_DWO_NAME | DW_AT_GNU_DWO_ID)
            {
                return false;
            }
        }
    }
    true
}

/// A worker's addr2line contexts: one over the whole module, or one per unit made on
/// first use.
pub enum Contexts {
    Whole(addr2line::Context<Reader>),
    PerUnit(Vec<OnceCell<Result<addr2line::Context<Reader>, gimli::Error>>>),
}

impl Contexts {
    /// Contexts for a module with `index` (per unit, none made yet), else one over all of
    /// `dwarf`.
    pub fn new(
        dwarf: &std::sync::Arc<gimli::Dwarf<Reader>>,
        index: Option<&UnitIndex>,
    ) -> Result<Contexts, gimli::Error> {
        Ok(match index {
            Some(index) => Contexts::PerUnit((0..index.units()).map(|_| OnceCell::new()).collect()),
            None => Contexts::Whole(addr2line::Context::from_arc_dwarf(std::sync::Arc::clone(
                dwarf,
            ))?),
        })
    }

    /// The context that names `addr`: the whole module's, or that of the unit holding it
    /// (made now if it is the first address there). `Ok(None)` where no unit holds it
    /// (the symbol table names it then); the error where its unit cannot be read, as
    /// making the whole module's context would have said.
    pub fn for_address(
        &self,
        addr: u64,
        dwarf: &gimli::Dwarf<Reader>,
        index: Option<&UnitIndex>,
    ) -> Result<Option<&addr2line::Context<Reader>>, gimli::Error> {
        match self {
            Contexts::Whole(context) => Ok(Some(context)),
            Contexts::PerUnit(contexts) => {
                let Some((index, unit)) = index.and_then(|i| Some((i, i.unit_of(addr)?))) else {
                    return Ok(None);
                };
                let Some(cell) = contexts.get(unit) else {
                    return Ok(None);
                };
                cell.get_or_init(|| addr2line::Context::from_dwarf(index.unit_dwarf(dwarf, unit)))
                    .as_ref()
                    .map(Some)
                    .map_err(|e| *e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::abbreviations_stay_in_unit;

    /// One table: code 1, DW_TAG_compile_unit, children, (DW_AT_name, DW_FORM_strp),
    /// (DW_AT_language, DW_FORM_implicit_const 12); code 2, DW_TAG_subprogram, no
    /// children, (DW_AT_abstract_origin, FORM), end.
    fn table(form: u8) -> Vec<u8> {
        let mut t = vec![0x01, 0x11, 0x01, 0x03, 0x0e, 0x13, 0x21, 0x0c, 0x00, 0x00];
        t.extend([0x02, 0x2e, 0x00, 0x31, form, 0x00, 0x00, 0x00]);
        t
    }

    #[test]
    fn references_out_of_a_unit_are_found_in_any_table() {
        // DW_FORM_ref4 stays in the unit; DW_FORM_ref_addr does not.
        assert!(abbreviations_stay_in_unit(&table(0x13)));
        assert!(!abbreviations_stay_in_unit(&table(0x10)));
        // In the second of two tables.
        let mut two = table(0x13);
        two.extend(table(0x10));
        assert!(!abbreviations_stay_in_unit(&two));
        // An implicit_const whose value looks like ref_addr (0x10) is a value, not a form.
        let t = vec![0x01, 0x11, 0x00, 0x13, 0x21, 0x10, 0x00, 0x00, 0x00];
        assert!(abbreviations_stay_in_unit(&t));
        // DW_FORM_GNU_ref_alt (0x1f20, two LEB bytes) and a DW_AT_GNU_dwo_id.
        let t = vec![0x01, 0x11, 0x00, 0x31, 0xa0, 0x3e, 0x00, 0x00, 0x00];
        assert!(!abbreviations_stay_in_unit(&t));
        let t = vec![0x01, 0x11, 0x00, 0xb1, 0x42, 0x07, 0x00, 0x00, 0x00];
        assert!(!abbreviations_stay_in_unit(&t));
        // Cut short: taken as a reference out.
        assert!(!abbreviations_stay_in_unit(&[0x01, 0x11]));
    }
}
