//! Back ends: the target machine, the in-process JIT and AOT object output.

pub mod jit;
pub mod target;
