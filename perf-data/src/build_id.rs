//! GNU build ids in ELF note bytes, and the running kernel's (which a capture's
//! `[kernel.kallsyms]` build id is written from and checked against).

/// The GNU build id (`NT_GNU_BUILD_ID` owned by "GNU") in a run of ELF notes, as
/// `/sys/kernel/notes` and a `PT_NOTE` segment hold them (native endian, 4-byte aligned).
pub fn gnu_build_id(notes: &[u8]) -> Option<&[u8]> {
    let word = |o: usize| -> Option<usize> {
        let b = notes.get(o..o + 4)?;
        Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as usize)
    };
    let mut at = 0;
    while at + 12 <= notes.len() {
        let (namesz, descsz, kind) = (word(at)?, word(at + 4)?, word(at + 8)?);
        let name_at = at + 12;
        let desc_at = name_at.checked_add(namesz.checked_next_multiple_of(4)?)?;
        let end = desc_at.checked_add(descsz.checked_next_multiple_of(4)?)?;
        if end > notes.len() {
            return None;
        }
        // NT_GNU_BUILD_ID is 3.
        if kind == 3 && notes[name_at..name_at + namesz].starts_with(b"GNU") {
            return Some(&notes[desc_at..desc_at + descsz]);
        }
        at = end;
    }
    None
}

/// The running kernel's build id, from /sys/kernel/notes.
pub fn running_kernel() -> Option<Vec<u8>> {
    let notes = std::fs::read("/sys/kernel/notes").ok()?;
    gnu_build_id(&notes).map(<[u8]>::to_vec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&(name.len() as u32).to_ne_bytes());
        b.extend_from_slice(&(desc.len() as u32).to_ne_bytes());
        b.extend_from_slice(&kind.to_ne_bytes());
        b.extend_from_slice(name);
        b.resize(b.len().next_multiple_of(4), 0);
        b.extend_from_slice(desc);
        b.resize(b.len().next_multiple_of(4), 0);
        b
    }

    #[test]
    fn the_gnu_note_is_found_among_others() {
        let mut notes = note(b"Xen\0", 6, &[1, 2, 3]);
        notes.extend(note(b"GNU\0", 3, &[0xab; 20]));
        assert_eq!(gnu_build_id(&notes), Some(&[0xab; 20][..]));
        // Cut inside the second note: nothing, no panic.
        assert_eq!(gnu_build_id(&notes[..notes.len() - 4]), None);
        let mut huge = note(b"GNU\0", 3, &[1; 4]);
        huge[4..8].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert_eq!(gnu_build_id(&huge), None);
    }
}
