//! The machinery dot and convolution share: canonical dimension groups, accumulation
//! semantics, and the blocked GEMM engine (operand views, packing, register-blocked
//! micro-kernel, parallel driver) that both lower to when the problem is big enough.

pub mod accumulate;
pub mod batch_walk;
pub mod config;
pub mod conv;
pub mod conv_dims;
pub mod depthwise;
pub mod dims;
pub mod dot;
pub mod driver;
pub mod loops;
pub mod microkernel;
pub mod operand;
pub mod pack;
pub mod precompiled;
pub mod precompiled_conv;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod bf16_pairs_tests;
#[cfg(test)]
mod int8_vnni_tests;
#[cfg(test)]
mod conv_tests;
#[cfg(test)]
mod amx_tests;
