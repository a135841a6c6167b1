//! hlojit's compiler: HLO IR, text parser and printer, verifier, passes, LLVM code generation,
//! and the JIT and AOT back ends.

pub mod error;
pub mod hlo;

pub use error::{Error, Result};
