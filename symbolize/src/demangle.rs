//! Demangling: Rust legacy and v0 names through `rustc-demangle`, C++ names through GNU's
//! own demangler where the system has it, else the `cpp_demangle` crate.
//!
//! GNU's demangler is libiberty's `cp-demangle.c`; libstdc++ exports it as
//! `abi::__cxa_demangle`, and binutils, gdb and perf print what it prints. The
//! `cpp_demangle` crate disagrees with it on some names (reference collapsing in pack
//! expansions, `enable_if` return types; docs/symbolize.md lists examples), so where
//! `libstdc++.so.6` can be loaded at run time sparkles asks it, and a user sees the names
//! every other Linux tool shows. Nothing is linked at build time: on a machine without
//! libstdc++ the crate's demangler is used, and [`cxx_demangler`] says which is in use.

use std::borrow::Cow;
use std::ffi::{c_char, c_int, c_void, CStr, CString};

#[cfg(unix)]
use libc::free;

/// Never called: without `dlopen` there is no `__cxa_demangle` whose result to free.
#[cfg(not(unix))]
unsafe fn free(_: *mut c_void) {}

/// `char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status)`.
type CxaDemangle =
    unsafe extern "C" fn(*const c_char, *mut c_char, *mut usize, *mut c_int) -> *mut c_char;

/// libstdc++'s `__cxa_demangle`, looked up once (never on Windows, which has no
/// `dlopen` and no libstdc++ of the system's).
#[cfg(not(unix))]
fn gnu() -> Option<CxaDemangle> {
    None
}

/// libstdc++'s `__cxa_demangle`, looked up once.
#[cfg(unix)]
fn gnu() -> Option<CxaDemangle> {
    use std::sync::OnceLock;
    static GNU: OnceLock<Option<usize>> = OnceLock::new();
    let addr = *GNU.get_or_init(|| {
        // SAFETY: dlopen and dlsym with NUL-terminated names; the handle is never closed,
        // so the symbol stays valid for the life of the process.
        unsafe {
            let handle = libc::dlopen(
                c"libstdc++.so.6".as_ptr(),
                libc::RTLD_NOW | libc::RTLD_LOCAL,
            );
            if handle.is_null() {
                return None;
            }
            let sym = libc::dlsym(handle, c"__cxa_demangle".as_ptr());
            (!sym.is_null()).then_some(sym as usize)
        }
    });
    // SAFETY: the address is `__cxa_demangle`'s, whose C signature CxaDemangle states.
    addr.map(|a| unsafe { std::mem::transmute::<*mut c_void, CxaDemangle>(a as *mut c_void) })
}

/// Which C++ demangler names are printed with.
pub fn cxx_demangler() -> &'static str {
    if gnu().is_some() {
        "GNU (libstdc++ __cxa_demangle)"
    } else {
        "cpp_demangle crate (libstdc++.so.6 not found)"
    }
}

fn gnu_demangle(f: CxaDemangle, name: &str) -> Option<String> {
    let c = CString::new(name).ok()?;
    let mut status: c_int = 0;
    // SAFETY: a NUL-terminated input and a null buffer: __cxa_demangle mallocs the result
    // (or returns null with a nonzero status), and the result is freed here after copying.
    unsafe {
        let out = f(
            c.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut status,
        );
        if out.is_null() {
            return None;
        }
        let s = (status == 0).then(|| CStr::from_ptr(out).to_string_lossy().into_owned());
        free(out.cast());
        s
    }
}

/// A C++ name demangled (`_Z…`, GCC clone suffixes such as `.constprop.0` included).
pub fn cxx(name: &str) -> Option<String> {
    if !name.starts_with("_Z") {
        return None;
    }
    match gnu() {
        Some(f) => gnu_demangle(f, name),
        None => addr2line::demangle(name, gimli::DW_LANG_C_plus_plus),
    }
}

/// A Rust name demangled: legacy (`_ZN…17h<hash>E`, hash kept as binutils keeps it) or v0
/// (`_R…`).
pub fn rust(name: &str) -> Option<String> {
    rustc_demangle::try_demangle(name)
        .ok()
        .map(|d| d.to_string())
}

/// Any symbol or DWARF linkage name demangled; names that are not mangled come back as
/// they are. Rust first: a legacy Rust name is also a valid C++ one, printed worse.
pub fn demangle(name: &str) -> Cow<'_, str> {
    match rust(name).or_else(|| cxx(name)) {
        Some(d) => Cow::Owned(d),
        None => Cow::Borrowed(name),
    }
}

/// A name as profiles show it: demangled, Rust names without their hash or crate
/// disambiguators (`core::ptr::drop_in_place<T>`), as perf report prints them.
pub fn for_display(name: &str) -> Cow<'_, str> {
    match rustc_demangle::try_demangle(name) {
        Ok(d) => Cow::Owned(format!("{d:#}")),
        Err(_) => match cxx(name) {
            Some(d) => Cow::Owned(d),
            None => Cow::Borrowed(name),
        },
    }
}

#[cfg(test)]
#[path = "../../testdata/support/skip.rs"]
mod skip;

#[cfg(test)]
mod tests {
    use super::skip;
    use super::*;

    #[test]
    fn rust_legacy_keeps_its_hash_as_binutils_does() {
        assert_eq!(
            demangle("_ZN4core3ptr13drop_in_place17h0123456789abcdefE"),
            "core::ptr::drop_in_place::h0123456789abcdef"
        );
        // The `$LT$`-style escapes of legacy names.
        assert_eq!(
            demangle("_ZN100_$LT$core..array..iter..iter_inner..PolymorphicIter$LT$DATA$GT$$u20$as$u20$core..ops..drop..Drop$GT$4drop17h2b51aabb97ec841dE"),
            "<core::array::iter::iter_inner::PolymorphicIter<DATA> as core::ops::drop::Drop>::drop::h2b51aabb97ec841d"
        );
    }

    #[test]
    fn profiles_show_rust_names_without_hashes() {
        assert_eq!(
            for_display("_ZN4core3ptr13drop_in_place17h0123456789abcdefE"),
            "core::ptr::drop_in_place"
        );
        assert_eq!(
            for_display("_RNvNtCs1234_7mycrate3foo3bar"),
            "mycrate::foo::bar"
        );
        assert_eq!(for_display("_Z3fooi"), "foo(int)");
        assert_eq!(for_display("profile_pass"), "profile_pass");
    }

    #[test]
    fn rust_v0() {
        // From the v0 mangling RFC's examples; crate disambiguators printed in brackets,
        // as binutils 2.40's c++filt prints them.
        assert_eq!(
            demangle("_RNvNtCs1234_7mycrate3foo3bar"),
            "mycrate[3c1c0]::foo::bar"
        );
        assert_eq!(
            demangle("_RNvMsr_NtCs3ssYzQotkvD_3std4pathNtB5_7PathBuf3newCs15kBYyAo9fc_7mycrate"),
            "<std[284a76a8b41a7fd3]::path::PathBuf>::new"
        );
    }

    #[test]
    fn cxx_names_with_clone_suffixes() {
        assert_eq!(demangle("_Z3fooi"), "foo(int)");
        assert_eq!(
            demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"),
            "std::vector<int, std::allocator<int> >::push_back(int const&)"
        );
        assert_eq!(
            demangle("_Z3fooi.constprop.0"),
            "foo(int) [clone .constprop.0]"
        );
    }

    #[test]
    fn plain_names_pass_through() {
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("operator()"), "operator()");
        assert!(matches!(demangle("_Znot a name"), Cow::Borrowed(_)));
    }

    #[test]
    fn gnu_rules_where_libstdcxx_is_present() {
        if gnu().is_none() {
            skip::skip("libstdcxx", "libstdc++.so.6 is not loadable here");
            return;
        }
        // Names the cpp_demangle crate prints differently (docs/symbolize.md).
        assert_eq!(
            demangle("_ZSt10_ConstructIiJEEvPT_DpOT0_"),
            "void std::_Construct<int>(int*)"
        );
        assert_eq!(
            demangle("_ZSt9__fill_a1IPiiEN9__gnu_cxx11__enable_ifIXsrSt11__is_scalarIT0_E7__valueEvE6__typeET_S8_RKS4_"),
            "__gnu_cxx::__enable_if<std::__is_scalar<int>::__value, void>::__type std::__fill_a1<int*, int>(int*, int*, int const&)"
        );
    }
}
