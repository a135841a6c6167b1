//! Back ends: the target machine, the in-process JIT and AOT object output.

pub mod aot;
pub mod cpu_features;
pub mod jit;
pub mod library_program;
pub mod optimization;
pub mod strength_reduction;
pub mod target;
