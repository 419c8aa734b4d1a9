//! Names that survive a rebuild: what diffs and baselines key functions by.

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
    use super::normalize;

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
