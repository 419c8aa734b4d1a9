//! sparkles-symbolize: the address-space model (which module is mapped where, and when),
//! module loading (ELF, build ids, debug links and directories), DWARF symbolization with
//! inlined frames, demangling and the caches they share.
//!
//! - [`Module`]: one ELF file's symbol tables, segments and DWARF, read once from the
//!   mapped file (one `gimli::Dwarf`, shared) and named through an addr2line `Context`
//!   per worker; its separate debug file found by `.gnu_debuglink` or build id, split
//!   DWARF and compressed sections; [`Module::frames`] names an address, innermost frame
//!   first, and [`Module::lookup`] says when DWARF failed.
//! - [`symbolizer::Symbolizer`]: a capture's address-space model fed in time order,
//!   modules loaded once per build id and checked against the capture's, kernel names
//!   only for the running kernel, the vDSO, JIT perf maps, and cached, batched naming.
//! - [`search::SearchPaths`]: `--symfs`, debug directories, perf's build-id cache.
//! - [`demangle`]: Rust legacy and v0, C++ by GNU's demangler where present.
//! - [`binutils`]: the output format of `sparkles addr2line`.

pub mod address_space;
pub mod binutils;
mod cache;
pub mod demangle;
pub mod dwarf;
pub mod elf;
pub mod kernel;
pub mod module;
pub mod perf_map;
pub mod search;
pub mod symbolizer;
mod units;
pub mod vdso;

use std::path::PathBuf;

pub use elf::{DataSymbol, DebugInfo, FileBytes};
pub use module::{Discriminators, Lookup, Module};
pub use search::SearchPaths;

/// Why a module could not be loaded, or an address not named from its DWARF.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be opened or mapped.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not an object file this crate reads.
    #[error("{}: not an object file: {source}", path.display())]
    NotObject {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        source: object::Error,
    },
    /// The DWARF is malformed (at an address, when a lookup found it so).
    #[error("{}: DWARF{}: {source}", path.display(), addr.map(|a| format!(" at {a:#x}")).unwrap_or_default())]
    Dwarf {
        /// The file the DWARF was read from.
        path: PathBuf,
        /// The address being named, for a lookup.
        addr: Option<u64>,
        /// What gimli said.
        source: gimli::Error,
    },
    /// No image of the running kernel's vDSO could be read.
    #[error("[vdso]: {0}")]
    NoVdso(String),
}

/// One frame of an address: the innermost first, each inlined call a frame of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The function's name as stored (linkage name where DWARF has one).
    pub function: Option<String>,
    /// The function's name demangled (Rust legacy and v0, C++).
    pub demangled: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Line (0 or absent when unknown).
    pub line: Option<u32>,
    /// Whether this frame was inlined into the next one.
    pub inlined: bool,
    /// The line row's discriminator, for the innermost frame, where nonzero: filled by
    /// [`binutils::frames`] only ([`Module::discriminator`] reads it).
    pub discriminator: Option<u32>,
    /// The address's offset from the symbol's start, when the name comes from a symbol
    /// table (ELF, kallsyms, a perf map) and not from DWARF.
    pub symbol_offset: Option<u64>,
}

impl Frame {
    /// A frame named only by a symbol table: `name+offset`, no line.
    pub fn from_symbol(name: &str, offset: u64, file: Option<String>) -> Frame {
        Frame {
            function: Some(name.to_string()),
            demangled: Some(demangle::demangle(name).into_owned()),
            file,
            line: None,
            inlined: false,
            discriminator: None,
            symbol_offset: Some(offset),
        }
    }
}

#[cfg(test)]
mod tests {
    /// Batches are named in parallel by workers moved to other threads.
    #[test]
    fn a_module_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<super::Module>();
    }
}
