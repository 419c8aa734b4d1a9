//! sparkles-unwind: turns one sample (kernel callchain, user registers, user stack bytes)
//! into a list of return addresses with framehop's DWARF CFI, frame pointers and kernel
//! callchains.
//!
//! The crate is laid out by the workspace foundation; its contents arrive with the
//! unwinding work (issue 7).
