//! The compiler's errors. Every error a user's input can cause is one of these, with enough
//! context to find the culprit: a line and column, or an instruction's name.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum Error {
    /// HLO text that does not parse.
    #[error("{line}:{column}: {message}")]
    Parse { line: usize, column: usize, message: String },
    /// A module that parses but is not valid HLO.
    #[error("in {computation}, instruction {instruction}: {message}")]
    Verify { computation: String, instruction: String, message: String },
    /// A builder call that cannot make a valid instruction (wrong rank, mismatched dimensions,
    /// bad dimension numbers, ...): the Rust call site and what is wrong, starting with the op.
    #[error("{location}: {message}")]
    Build { location: String, message: String },
    /// A constant whose values the printer elided (`constant({...})`): the text does not say
    /// what to compute, so no compiler can run the module.
    #[error("constant {0}: its values were elided (`{{...}}`) when the module was printed, so they are not in the text")]
    ElidedConstant(String),
    /// Valid HLO that hlojit cannot compile (yet).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A custom-call target that no registry, plugin or process symbol provides.
    #[error("custom-call target '{0}' not found (not registered, in no loaded plugin, not exported by the process)")]
    MissingCustomCallTarget(String),
    /// LLVM rejected what we generated, or the JIT could not load it.
    #[error("LLVM: {0}")]
    Llvm(String),
    /// An argument that does not match the computation's parameters.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The computation failed while running (a custom call reported an error, say).
    #[error("execution failed: {0}")]
    Execution(String),
    /// Anything else that went wrong while compiling, with what we were doing.
    #[error("{0}")]
    Internal(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn verify(computation: &str, instruction: &str, message: impl Into<String>) -> Error {
        Error::Verify { computation: computation.to_string(), instruction: instruction.to_string(), message: message.into() }
    }
}
