//! The entry point for programs that compile computations: a `Client` holds the target and
//! compilation settings and turns modules (built or parsed) into executables.

use crate::error::{Error, Result};
use hlojit_runtime::custom_call::CustomCallRegistry;
use crate::cache::MemoryCache;
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
///
/// Compiling and running, with settings of one's own:
///
/// ```rust
/// use hlojit_compiler::{Client, CompileOptions};
/// use hlojit_runtime::HostBuffer;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // One LLVM module on the calling thread: the quickest for a tiny module.
/// let client = Client::with_options(CompileOptions { parallel_compile: false, ..CompileOptions::default() });
/// let exe = client.compile_text(
///     "HloModule m
///      ENTRY e {
///        x = f32[3] parameter(0)
///        y = f32[3] parameter(1)
///        ROOT s = f32[3] add(x, y)
///      }",
/// )?;
/// let x = HostBuffer::from_slice(&[3], &[1.0f32, 2.0, 3.0])?;
/// let y = HostBuffer::from_slice(&[3], &[10.0f32, 20.0, 30.0])?;
/// let out = exe.run([&x, &y])?; // borrowed arguments; one buffer per result array
/// assert_eq!(out[0].as_slice::<f32>()?, &[11.0, 22.0, 33.0]);
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct Client {
    options: CompileOptions,
    /// Executables this client (and its clones) compiled, by fingerprint.
    cache: MemoryCache,
}

impl Client {
    /// A client for the host CPU with default settings.
    pub fn new() -> Client {
        Client::default()
    }

    /// A client that compiles with `options` (another target, a registry of custom calls,
    /// serial compilation).
    pub fn with_options(options: CompileOptions) -> Client {
        Client { options, cache: MemoryCache::default() }
    }

    /// The settings every compilation of this client uses.
    pub fn options(&self) -> &CompileOptions {
        &self.options
    }

    /// Verifies, optimizes, compiles and loads a module. A module this client (or a clone of
    /// it) compiled before, in the same canonical text, comes back at once sharing the loaded
    /// code; with `HLOJIT_CACHE_DIR` set, machine code compiled by earlier processes is loaded
    /// from there (see README, "Compilation cache").
    pub fn compile(&self, module: &Module) -> Result<Executable> {
        Executable::compile_cached(module, &self.options, Some(&self.cache))
    }

    /// The module after hlojit's HLO passes with this client's options, as HLO text with buffer
    /// offsets and kernel names as `//` comments (what `hlojit opt` prints): the program
    /// `compile` turns into code, for tools that show it (PJRT's optimized program).
    pub fn optimized_text(&self, module: &Module) -> Result<String> {
        let prepared = crate::pipeline::prepare(module, &self.options)?;
        crate::dump::buffers::annotate(&prepared)
    }

    /// The client's in-process cache of executables (`clear` it to compile everything anew).
    pub fn cache(&self) -> &MemoryCache {
        &self.cache
    }

    /// Parses HLO text (as XLA and JAX print it) and compiles it.
    pub fn compile_text(&self, text: &str) -> Result<Executable> {
        self.compile(&parse_module(text)?)
    }

    /// Compiles a module given as bytes, of whichever kind its content says: StableHLO MLIR
    /// text (as `jax.jit(f).lower(x).as_text()` prints it), HLO text, a StableHLO portable
    /// artifact (MLIR bytecode, `exported.mlir_module_serialized`) or a `jax.export`
    /// serialization (`exported.serialize()`).
    pub fn compile_stablehlo(&self, bytes: &[u8]) -> Result<Executable> {
        self.compile(&crate::stablehlo::parse_any(bytes)?)
    }

    /// The client's custom-call registry: targets registered here are found first (then the
    /// process-wide registry's, then hlojit's built-ins). Register a Rust or C
    /// function with `client.custom_calls().register_ffi_handler(name, handler)` and friends.
    pub fn custom_calls(&self) -> &CustomCallRegistry {
        &self.options.custom_calls
    }

    /// Loads a shared library whose exported symbols become custom-call targets of the
    /// modules this client compiles (after registered functions).
    pub fn load_plugin(&self, path: impl AsRef<std::path::Path>) -> Result<()> {
        self.options.custom_calls.load_plugin(path).map_err(|e| Error::InvalidArgument(e.to_string()))
    }
}
