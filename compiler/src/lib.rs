//! hlojit's compiler: HLO IR, text parser and printer, verifier, passes, LLVM code generation,
//! and the JIT and AOT back ends.

pub mod error;
pub mod executable;
pub mod backend;
pub mod client;
pub mod codegen;
pub mod hlo;
pub mod passes;
pub mod pipeline;

pub use error::{Error, Result};
pub use executable::{Argument, Executable};
pub use pipeline::CompileOptions;
pub use client::Client;
