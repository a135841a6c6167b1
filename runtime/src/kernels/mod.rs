//! Runtime kernels: heavy ops generated code calls instead of emitting them inline.

pub mod fft;
pub mod rng;
