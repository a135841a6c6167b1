//! The compilation pipeline: HLO passes, lowering to LLVM, optimization and object code.

use crate::backend::target::{emit_object, optimize, TargetOptions};
use crate::codegen::context::Codegen;
use crate::codegen::function::ModuleLowering;
use crate::error::{Error, Result};
use crate::hlo::Module;
use crate::passes;
use hlojit_runtime::custom_call::CustomCallRegistry;
use inkwell::context::Context;
use inkwell::targets::FileType;

/// What to produce from a module.
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    pub target: TargetOptions,
    /// Where custom-call targets are looked up first (then the process-wide registry, then
    /// the process's exported symbols). Ignored for AOT output, whose targets the linker
    /// resolves.
    pub custom_calls: CustomCallRegistry,
}

/// Runs the HLO passes that prepare a module for code generation.
pub fn prepare(module: &Module) -> Result<Module> {
    crate::hlo::verify_module(module)?;
    let mut m = module.clone();
    passes::entry_layout::apply_entry_layout(&mut m)?;
    passes::inline_calls::inline_calls(&mut m)?;
    passes::dynamic_padder::pad_dynamic_dimensions(&mut m)?;
    passes::batch_norm_expander::expand_batch_norm(&mut m)?;
    passes::rng_expander::expand_rng(&mut m)?;
    passes::fusion::fuse(&mut m)?;
    Ok(m)
}

/// Lowers a prepared module into `cg` with its entry exported as `entry_name`.
pub fn lower(cg: &Codegen, module: &Module, entry_name: &str) -> Result<()> {
    let mut lowering = ModuleLowering::new(cg, module);
    lowering.lower_entry(entry_name, &module.entry_result_shape())?;
    cg.module.verify().map_err(|e| Error::Llvm(format!("generated IR is invalid: {}", e.to_string())))
}

/// Compiles a prepared module to optimized LLVM IR text, assembly or an object file.
pub fn compile_to(module: &Module, entry_name: &str, options: &CompileOptions, output: OutputKind, for_jit: bool) -> Result<Vec<u8>> {
    compile_timed(module, entry_name, options, output, for_jit).map(|(code, _)| code)
}

/// Where compilation time goes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CompileStats {
    /// Verification and HLO passes.
    pub prepare: std::time::Duration,
    /// Generating LLVM IR.
    pub lower: std::time::Duration,
    /// LLVM's optimization pipeline.
    pub optimize: std::time::Duration,
    /// Machine code generation.
    pub codegen: std::time::Duration,
    /// Loading the object into the JIT.
    pub load: std::time::Duration,
}

impl std::fmt::Display for CompileStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        write!(
            f,
            "passes {:.1} ms, LLVM IR {:.1} ms, optimization {:.1} ms, machine code {:.1} ms, loading {:.1} ms",
            ms(self.prepare),
            ms(self.lower),
            ms(self.optimize),
            ms(self.codegen),
            ms(self.load)
        )
    }
}

/// [`compile_to`], also timing the phases (`prepare` and `load` are left for the caller).
pub fn compile_timed(
    module: &Module,
    entry_name: &str,
    options: &CompileOptions,
    output: OutputKind,
    for_jit: bool,
) -> Result<(Vec<u8>, CompileStats)> {
    let mut stats = CompileStats::default();
    let start = std::time::Instant::now();
    let context = Context::create();
    let mut cg = Codegen::new(&context, &module.name, options.target.is_x86_64());
    let machine = options.target.machine(for_jit)?;
    cg.simd_bytes = crate::backend::target::simd_bytes(&machine);
    cg.avx512_bf16 = crate::backend::target::has_feature(&machine, "avx512bf16");
    cg.module.set_triple(&machine.get_triple());
    cg.module.set_data_layout(&machine.get_target_data().get_data_layout());
    lower(&cg, module, entry_name)?;
    stats.lower = start.elapsed();
    let t = std::time::Instant::now();
    optimize(&cg.module, &machine)?;
    stats.optimize = t.elapsed();
    if let Ok(path) = std::env::var("HLOJIT_DUMP_IR") {
        let _ = cg.module.print_to_file(path);
    }
    let t = std::time::Instant::now();
    let code = match output {
        OutputKind::LlvmIr => cg.module.print_to_string().to_bytes().to_vec(),
        OutputKind::Assembly => emit_object(&cg.module, &machine, FileType::Assembly)?,
        OutputKind::Object => emit_object(&cg.module, &machine, FileType::Object)?,
    };
    stats.codegen = t.elapsed();
    Ok((code, stats))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    LlvmIr,
    Assembly,
    Object,
}
