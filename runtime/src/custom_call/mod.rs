//! Custom calls: the host side of every calling convention XLA:CPU has for `custom-call`
//! targets, the typed-FFI API implementation, the registry targets are resolved from, and the
//! per-thread last error through which a failed call's message reaches the caller.

pub mod api;
pub mod builtin_targets;
pub mod call;
pub mod context;
pub mod descriptor;
pub mod jaxlib_targets;
pub mod last_error;
pub mod process_symbols;
pub mod registry;
pub mod status;

pub use builtin_targets::builtin_target;
pub use context::ExecutionContext;
pub use descriptor::{ffi_dtype, ArrayValue, AttrValue, BufferSpec, CallDescriptor};
pub use last_error::{clear_last_error, take_last_error};
pub use process_symbols::ProcessSymbols;
pub use registry::{resolve_target, CustomCallRegistry, Plugin, PluginError, Resolved};
