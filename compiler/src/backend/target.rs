//! The machine code is generated for: the host CPU (with all its features, so AVX-512 is used
//! where present) unless a triple and CPU are given for cross compilation.

use crate::error::{Error, Result};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple};
use inkwell::OptimizationLevel;
use std::sync::Once;

/// Target selection and optimization settings.
///
/// ```rust
/// use hlojit_compiler::backend::target::TargetOptions;
///
/// // Cross-compile (AOT) for AArch64 Linux with the Neoverse V1's features.
/// let arm = TargetOptions {
///     triple: Some("aarch64-unknown-linux-gnu".into()),
///     cpu: Some("neoverse-v1".into()),
///     features: None, // with a triple, no host features are assumed
/// };
/// assert!(!arm.is_host() && !arm.is_x86_64());
/// assert!(TargetOptions::default().is_host());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TargetOptions {
    /// LLVM target triple; the host's when `None`.
    pub triple: Option<String>,
    /// CPU name (`skylake-avx512`, `znver4`, ...); the host CPU when `None` and no triple is given.
    pub cpu: Option<String>,
    /// Feature string (`+avx2,-avx512f`); the host's features when `None` and no triple is given.
    pub features: Option<String>,
}

fn initialize() {
    static INIT: Once = Once::new();
    INIT.call_once(|| Target::initialize_all(&InitializationConfig::default()));
}

impl TargetOptions {
    /// True when no triple is given, so code is generated for the machine running the
    /// compiler (cpu and features may still be overridden).
    pub fn is_host(&self) -> bool {
        self.triple.is_none()
    }

    /// The LLVM target triple: the one given, or the host's default triple.
    pub fn triple(&self) -> TargetTriple {
        match &self.triple {
            Some(t) => TargetTriple::create(t),
            None => TargetMachine::get_default_triple(),
        }
    }

    /// Whether the target is x86-64 (the MXCSR controls flush-to-zero there).
    pub fn is_x86_64(&self) -> bool {
        self.triple().as_str().to_string_lossy().starts_with("x86_64")
    }

    /// A target machine for code that is relocatable (AOT) or loaded in this process (JIT).
    pub fn machine(&self, for_jit: bool) -> Result<TargetMachine> {
        initialize();
        let triple = self.triple();
        let target = Target::from_triple(&triple).map_err(|e| Error::Llvm(format!("unknown target {triple}: {e}")))?;
        let (cpu, features) = match (&self.triple, &self.cpu, &self.features) {
            (None, cpu, features) => (
                cpu.clone().unwrap_or_else(|| TargetMachine::get_host_cpu_name().to_string()),
                features.clone().unwrap_or_else(|| TargetMachine::get_host_cpu_features().to_string()),
            ),
            (Some(_), cpu, features) => (cpu.clone().unwrap_or_else(|| "generic".into()), features.clone().unwrap_or_default()),
        };
        // Position-independent code for the JIT too: it maps code anywhere in the address space.
        let _ = for_jit;
        let reloc = RelocMode::PIC;
        target
            .create_target_machine(&triple, &cpu, &features, OptimizationLevel::Aggressive, reloc, CodeModel::Default)
            .ok_or_else(|| Error::Llvm(format!("cannot create a target machine for {triple} / {cpu}")))
    }
}

/// Bytes in the widest SIMD register the machine's features enable (AVX-512: 64, AVX: 32,
/// otherwise 16).
pub fn simd_bytes(machine: &TargetMachine) -> u32 {
    if has_feature(machine, "avx512f") {
        64
    } else if has_feature(machine, "avx") {
        32
    } else {
        16
    }
}

/// Whether the machine's feature string enables `feature` (`avx512bf16`, say).
pub fn has_feature(machine: &TargetMachine, feature: &str) -> bool {
    let features = machine.get_feature_string().to_string_lossy().into_owned();
    features.split(',').any(|x| x.strip_prefix('+') == Some(feature))
}

/// Runs LLVM's optimization pipeline on a module.
pub fn optimize(module: &inkwell::module::Module, machine: &TargetMachine) -> Result<()> {
    let options = PassBuilderOptions::create();
    options.set_loop_vectorization(true);
    options.set_loop_slp_vectorization(true);
    options.set_loop_unrolling(false);
    module
        .run_passes("default<O3>", machine, options)
        .map_err(|e| Error::Llvm(format!("optimization failed: {e}")))
}

/// Compiles a module to an object file in memory.
pub fn emit_object(module: &inkwell::module::Module, machine: &TargetMachine, file_type: FileType) -> Result<Vec<u8>> {
    let buffer = machine
        .write_to_memory_buffer(module, file_type)
        .map_err(|e| Error::Llvm(format!("code generation failed: {e}")))?;
    Ok(buffer.as_slice().to_vec())
}
