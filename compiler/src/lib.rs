//! hlojit's compiler: HLO IR, text parser and printer, verifier, passes, LLVM code generation,
//! and the JIT and AOT back ends.

pub mod error;
pub mod executable;
mod devices;
mod feeds;
pub mod analysis;
pub mod backend;
pub mod cache;
pub mod client;
pub mod codegen;
pub mod dump;
pub mod evaluate;
pub mod hlo;
pub mod passes;
pub mod pipeline;
mod serialized;
pub mod stablehlo;

pub use error::{Error, Result};
pub use backend::aot::{compile_aot, AotOutput};
pub use client::Client;
pub use executable::{Argument, Executable};
pub use hlojit_runtime::custom_call::CustomCallRegistry;
pub use pipeline::{CodeSource, CompileOptions, OutputKind};
