//! Passes over HLO: one pass per file.

pub mod buffer_assignment;
pub mod entry_layout;
pub mod fusion;
pub mod inline_calls;
