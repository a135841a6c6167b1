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
    let context = Context::create();
    let mut cg = Codegen::new(&context, &module.name, options.target.is_x86_64());
    let machine = options.target.machine(for_jit)?;
    cg.simd_bytes = crate::backend::target::simd_bytes(&machine);
    cg.avx512_bf16 = crate::backend::target::has_feature(&machine, "avx512bf16");
    cg.module.set_triple(&machine.get_triple());
    cg.module.set_data_layout(&machine.get_target_data().get_data_layout());
    lower(&cg, module, entry_name)?;
    optimize(&cg.module, &machine)?;
    if let Ok(path) = std::env::var("HLOJIT_DUMP_IR") {
        let _ = cg.module.print_to_file(path);
    }
    match output {
        OutputKind::LlvmIr => Ok(cg.module.print_to_string().to_bytes().to_vec()),
        OutputKind::Assembly => emit_object(&cg.module, &machine, FileType::Assembly),
        OutputKind::Object => emit_object(&cg.module, &machine, FileType::Object),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    LlvmIr,
    Assembly,
    Object,
}
