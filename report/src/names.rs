//! The names of a report: interned once per capture ([`Names`]), so aggregates key
//! frames by small ids instead of strings; and names that survive a rebuild
//! ([`normalize`]), what diffs and baselines key functions by.

use std::rc::Rc;

use rustc_hash::FxHashMap;

/// A name of a capture's string table: its id, unique within the [`Names`] that made it,
/// and its text, shared.
#[derive(Debug, Clone)]
pub struct Name {
    id: u32,
    text: Rc<str>,
}

impl Name {
    /// Its id in the table that made it.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Its text.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl std::ops::Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

// Two names are equal when their texts are, whichever table made them.
impl PartialEq for Name {
    fn eq(&self, other: &Name) -> bool {
        self.text == other.text
    }
}

impl Eq for Name {}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// A string table: each distinct text once, under one id.
#[derive(Debug, Default)]
pub struct Names {
    ids: FxHashMap<Rc<str>, u32>,
    texts: Vec<Rc<str>>,
}

impl Names {
    /// An empty table.
    pub fn new() -> Names {
        Names::default()
    }

    /// `text`'s name: the one it already has, or a new one.
    pub fn intern(&mut self, text: &str) -> Name {
        if let Some((text, &id)) = self.ids.get_key_value(text) {
            return Name {
                id,
                text: Rc::clone(text),
            };
        }
        let id = self.texts.len() as u32;
        let text: Rc<str> = Rc::from(text);
        self.texts.push(Rc::clone(&text));
        self.ids.insert(Rc::clone(&text), id);
        Name { id, text }
    }

    /// The text of the name with id `id` (from this table).
    pub fn text(&self, id: u32) -> &str {
        &self.texts[id as usize]
    }

    /// How many names.
    pub fn len(&self) -> usize {
        self.texts.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty()
    }
}

/// A function name without what changes when the same code is rebuilt: Rust's
/// `::h<16 hex>` hash, LLVM's `.llvm.NNN`, GCC's clone suffixes (`.constprop.N`,
/// `.isra.N`, `.part.N`, `.cold`, and their demangled ` [clone .constprop.0]` forms).
pub fn normalize(name: &str) -> String {
    let mut s = name.to_string();
    // Demangled C++ clones: "f(int) [clone .constprop.0] [clone .cold]".
    while let Some(i) = s.rfind(" [clone .") {
        if s.ends_with(']') {
            s.truncate(i);
        } else {
            break;
        }
    }
    loop {
        let before = s.len();
        // Mangled suffixes, last first: "f.constprop.0.isra.0", "g.llvm.1234", "h.cold".
        if let Some(i) = s.rfind('.') {
            let tail = &s[i + 1..];
            let is_number = !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit());
            if tail == "cold" {
                s.truncate(i);
            } else if is_number {
                let head = &s[..i];
                for suffix in [
                    ".constprop",
                    ".isra",
                    ".part",
                    ".llvm",
                    ".lto_priv",
                    ".clone",
                ] {
                    if let Some(stem) = head.strip_suffix(suffix) {
                        let stem_len = stem.len();
                        s.truncate(stem_len);
                        break;
                    }
                }
            }
        }
        // Rust's legacy hash: "::h" and 16 hex digits at the end.
        if let Some(i) = s.rfind("::h") {
            let tail = &s[i + 3..];
            if tail.len() == 16 && tail.bytes().all(|b| b.is_ascii_hexdigit()) {
                s.truncate(i);
            }
        }
        if s.len() == before {
            return s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{normalize, Names};

    #[test]
    fn a_text_is_interned_once() {
        let mut names = Names::new();
        let a = names.intern("main");
        let b = names.intern("work");
        let again = names.intern("main");
        assert_eq!((a.id(), b.id(), again.id()), (0, 1, 0));
        assert_eq!(&*again, "main");
        assert_eq!(names.len(), 2);
        // Equal by text across tables.
        assert_eq!(Names::new().intern("work"), b);
    }

    #[test]
    fn rebuild_noise_is_dropped() {
        assert_eq!(
            normalize("core::ptr::drop_in_place::h0123456789abcdef"),
            "core::ptr::drop_in_place"
        );
        assert_eq!(normalize("foo.llvm.1234567"), "foo");
        assert_eq!(normalize("bar.constprop.0.isra.0"), "bar");
        assert_eq!(normalize("baz.part.3.cold"), "baz");
        assert_eq!(
            normalize("std::__adjust_heap(int*, long) [clone .constprop.0] [clone .cold]"),
            "std::__adjust_heap(int*, long)"
        );
        // Names that only look alike stay.
        assert_eq!(normalize("a::hash"), "a::hash");
        assert_eq!(normalize("v1.2"), "v1.2");
        assert_eq!(normalize("main"), "main");
    }
}
