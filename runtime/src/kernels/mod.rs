//! Compute kernels generated code calls for operations better written once in Rust than
//! emitted per module (sorting, FFT, RNG state). Each exported entry point is listed in
//! [`crate::symbols::runtime_symbols`].

pub mod fft;
pub mod rng;
pub mod introsort;
pub mod sort;
pub mod gemm;
pub mod conv;
pub mod rows;
pub mod dot_strips;
pub mod sort_rows;
#[cfg(target_arch = "x86_64")]
mod simd;
