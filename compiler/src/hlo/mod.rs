//! HLO: the IR (modules, computations, instructions), its text format and its verifier.

pub mod attribute_schema;
pub mod attributes;
pub mod builder;
pub mod computation;
pub mod ffi_attributes;
pub mod instruction;
pub mod module;
pub mod opcode;
pub mod shape_inference;
pub mod sharding;
pub mod shardy;
pub mod text;
pub mod verifier;

pub use attributes::*;
pub use computation::Computation;
pub use instruction::{CompId, InstrId, Instruction};
pub use module::{AliasEntry, AliasKind, Module, ProgramShape};
pub use opcode::Opcode;
pub use verifier::verify_module;
