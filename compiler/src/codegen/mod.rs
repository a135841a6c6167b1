//! LLVM code generation: elemental generators composed into loop-nest kernels, heavy-op
//! emitters, and the functions that sequence kernels over a computation's buffers.

pub mod array;
pub mod constants;
pub mod context;
pub mod collectives;
pub mod custom_call;
pub mod transfers;
pub mod elemental;
pub mod index;
pub mod loops;
pub mod independent_loops;
pub mod transpose_tiling;
pub mod plan;
pub mod reducer;
pub mod window_peel;
pub mod row_loops;
pub mod streaming_stores;
pub mod small_loops;
pub mod while_registers;
pub mod loop_inlining;
pub mod types;
pub mod vectors;
pub mod function;
pub mod runtime_abi;
pub mod scratch;
pub mod thread_cost;
pub mod kernel;
pub mod emitters;
