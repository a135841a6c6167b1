//! hlojit: a compiler for XLA's HLO. Parse or build an HLO module, compile it with LLVM, run
//! it on host arrays; or write an object file and a C header for ahead-of-time use.
//!
//! ```no_run
//! use hlojit::{parse_module, CompileOptions, Executable, ArrayLiteral};
//! let module = parse_module("HloModule m\nENTRY e { x = f32[4] parameter(0)\n ROOT y = f32[4] add(x, x) }")?;
//! let exe = Executable::compile(&module, &CompileOptions::default())?;
//! let out = exe.run_literals(&[ArrayLiteral::from_slice(&[4], &[1.0f32, 2.0, 3.0, 4.0])?.into()])?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

/// The C ABI for custom-call plugins (XLA FFI types, legacy status, Rust handler helpers).
pub use hlojit_ffi as ffi;

pub use hlojit_compiler::hlo::text::{parse_module, print_module};
pub use hlojit_compiler::stablehlo::{self, parse_any as parse_module_bytes};
pub use hlojit_compiler::hlo::builder::{Builder, CustomCallOptions, Op, SubComputation};
pub use hlojit_compiler::backend::target::TargetOptions;
pub use hlojit_compiler::dump::DumpOptions;
pub use hlojit_compiler::{compile_aot, hlo, Argument, AotOutput, Client, CompileOptions, CustomCallRegistry, Error, Executable, OutputKind};
pub use hlojit_runtime::custom_call::ProcessSymbols;
/// What connects the devices of a multi-device run ([`Executable::run_distributed`]).
pub use hlojit_runtime::collectives::Communicator;
pub use hlojit_runtime::executor::{CancellationToken, RunOptions};
pub use hlojit_runtime::{npy, release_cached_memory, ArrayLiteral, ArrayShape, ArrayView, ElementType, HostBuffer, Layout, Literal, Shape};
