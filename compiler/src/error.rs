//! The compiler's errors. Every error a user's input can cause is one of these, with enough
//! context to find the culprit: a line and column, or an instruction's name.

use thiserror::Error;

/// Everything that can go wrong between HLO text (or a builder) and a finished run.
///
/// ```rust
/// use hlojit_compiler::{Client, Error};
///
/// let err = Client::new().compile_text("HloModule m\nENTRY e { x = f32[2] parameter(0)\n ROOT y = f32[3] negate(x) }");
/// assert!(matches!(err, Err(Error::Verify { .. })), "{err:?}");
/// ```
#[derive(Debug, Error, Clone, PartialEq)]
pub enum Error {
    /// HLO text that does not parse.
    #[error("{line}:{column}: {message}")]
    Parse {
        /// 1-based line of the offending token.
        line: usize,
        /// 1-based column of the offending token, in characters.
        column: usize,
        /// What was expected or found.
        message: String,
    },
    /// A module that parses but is not valid HLO.
    #[error("in {computation}{}: {message}", if instruction.is_empty() { String::new() } else { format!(", instruction {instruction}") })]
    Verify {
        /// Name of the computation holding the instruction (the module's name for a
        /// problem with the module as a whole).
        computation: String,
        /// Name of the offending instruction, empty when the problem is not one
        /// instruction's.
        instruction: String,
        /// What is wrong with it.
        message: String,
    },
    /// A builder call that cannot make a valid instruction (wrong rank, mismatched dimensions,
    /// bad dimension numbers, ...): the Rust call site and what is wrong, starting with the op.
    #[error("{location}: {message}")]
    Build {
        /// The calling Rust source location, `file:line:column`.
        location: String,
        /// The op and what is wrong with its operands or attributes.
        message: String,
    },
    /// A StableHLO portable artifact (MLIR bytecode) or jax.export file that does not read:
    /// the byte offset in the file and what is wrong (naming the op, inside one).
    #[error("byte offset {offset}: {message}")]
    Bytecode {
        /// Offset in the file (for jax.export files, in the file as a whole).
        offset: usize,
        /// What was expected or found.
        message: String,
    },
    /// A constant whose values the printer elided (`constant({...})`): the text does not say
    /// what to compute, so no compiler can run the module.
    #[error("constant {0}: its values were elided (`{{...}}`) when the module was printed, so they are not in the text")]
    ElidedConstant(String),
    /// Valid HLO that hlojit cannot compile (yet).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A custom-call target that no registry, plugin or built-in provides (nor, where
    /// `CompileOptions::process_symbols` allows them, the executable's own exports).
    #[error("custom-call target '{0}' not found (not registered, in no loaded plugin, not built in; the process's own symbols are searched only when allowed: CompileOptions::process_symbols, hlojit --allow-process-symbols)")]
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
    /// Memory for a buffer could not be had; names the buffer and its size.
    #[error("out of memory: {0}")]
    OutOfMemory(String),
    /// A run's deadline (`RunOptions::deadline`) passed before it finished.
    #[error("the run's deadline passed ({0})")]
    DeadlineExceeded(String),
    /// A run's cancellation token was cancelled.
    #[error("the run was cancelled")]
    Cancelled,
    /// Anything else that went wrong while compiling, with what we were doing.
    #[error("{0}")]
    Internal(String),
}

/// The compiler's result type, with [`Error`](enum@Error) as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::Verify`] for `instruction` in `computation`.
    pub fn verify(computation: &str, instruction: &str, message: impl Into<String>) -> Error {
        Error::Verify { computation: computation.to_string(), instruction: instruction.to_string(), message: message.into() }
    }
}

impl Error {
    /// Says which instruction a code-generation error came from (errors that already name
    /// their place, verifier and parse errors, are left as they are).
    pub fn in_instruction(self, computation: &str, instruction: &str) -> Error {
        let place = format!("in {computation}, instruction {instruction}");
        match self {
            Error::Unsupported(m) => Error::Unsupported(format!("{place}: {m}")),
            Error::Internal(m) => Error::Internal(format!("{place}: {m}")),
            Error::Llvm(m) => Error::Llvm(format!("{place}: {m}")),
            other => other,
        }
    }
}

impl From<hlojit_runtime::executor::RunError> for Error {
    fn from(e: hlojit_runtime::executor::RunError) -> Error {
        use hlojit_runtime::executor::RunError;
        match e {
            RunError::InvalidArgument(m) => Error::InvalidArgument(m),
            RunError::OutOfMemory(m) => Error::OutOfMemory(m),
            RunError::Failed(m) => Error::Execution(m),
            RunError::DeadlineExceeded(m) => Error::DeadlineExceeded(m),
            RunError::Cancelled => Error::Cancelled,
        }
    }
}
