//! Compute kernels generated code calls for operations that are better written once in Rust
//! than emitted per module (sorting). Each exported entry point is listed in
//! [`crate::symbols::runtime_symbols`].

pub mod sort;
