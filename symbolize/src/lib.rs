//! sparkles-symbolize: the address-space model (which module is mapped where, and when),
//! module loading (ELF, build ids, debug links and directories), DWARF symbolization with
//! inlined frames, demangling and the caches they share.
//!
//! The crate is laid out by the workspace foundation; its contents arrive with the
//! symbolization work (issue 6).
