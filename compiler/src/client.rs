//! The entry point for programs that compile computations: a `Client` holds the target and
//! compilation settings and turns modules (built or parsed) into executables.

use crate::error::Result;
use crate::executable::Executable;
use crate::hlo::text::parse_module;
use crate::hlo::Module;
use crate::pipeline::CompileOptions;

/// Compiles HLO modules for this machine.
///
/// ```no_run
/// let client = hlojit_compiler::Client::new();
/// let exe = client.compile_text("HloModule m\nENTRY e { x = f32[2] parameter(0)\n ROOT y = f32[2] negate(x) }")?;
/// # Ok::<(), hlojit_compiler::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Client {
    options: CompileOptions,
}

impl Client {
    /// A client for the host CPU with default settings.
    pub fn new() -> Client {
        Client::default()
    }

    pub fn with_options(options: CompileOptions) -> Client {
        Client { options }
    }

    pub fn options(&self) -> &CompileOptions {
        &self.options
    }

    /// Verifies, optimizes, compiles and loads a module.
    pub fn compile(&self, module: &Module) -> Result<Executable> {
        Executable::compile(module, &self.options)
    }

    /// Parses HLO text (as XLA and JAX print it) and compiles it.
    pub fn compile_text(&self, text: &str) -> Result<Executable> {
        self.compile(&parse_module(text)?)
    }
}
