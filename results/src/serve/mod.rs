//! Serve mode between a coordinator and bench processes: the protocol both ends use
//! ([`protocol`]), a process driven from the coordinator's side ([`Served`]), and the
//! coordinator of a side-by-side comparison ([`Sides`]).

mod client;
pub mod protocol;
mod rounds;

pub use client::Served;
pub use rounds::{Executable, Matched, Sides, Timed, LAYOUT_PAD};
