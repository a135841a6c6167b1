//! hlojit's runtime: what both JIT-compiled and AOT-compiled computations need at run time and
//! what host programs use to talk to them. It never links LLVM.

pub mod abi_identity;
pub mod block_cache;
pub mod buffer;
pub mod collectives;
pub mod custom_call;
pub mod element_type;
pub mod executor;
pub mod float_bits;
pub mod float_env;
pub mod host;
pub mod kernels;
pub mod libcalls;
pub mod limits;
pub mod linalg;
pub mod literal;
pub mod npy;
pub mod parallel_loop;
pub mod physical;
pub mod profile;
pub mod shape;
pub mod symbols;
pub mod transfers;

pub use block_cache::release_cached_memory;
pub use buffer::AlignedBuffer;
pub use element_type::ElementType;
pub use host::{ArrayView, HostBuffer, HostError};
pub use literal::{ArrayLiteral, Literal, NativeType};
pub use shape::{ArrayShape, Layout, Shape, Tile};
