//! `PJRT_Executable_OptimizedProgram`: the program as hlojit compiled it — the module after
//! hlojit's HLO passes (fusion, layouts, expansions) — as a serialized
//! `HloModuleProtoWithConfig` in the `hlo_with_config` format, the one jaxlib's
//! `PjRtCApiExecutable::GetHloModules` parses (it accepts that or MLIR, nothing else), so
//! `compiled.as_text()` shows it as XLA prints modules.
//!
//! The C API's two-call protocol: with `program->code` null the size is reported, then the
//! caller passes a buffer of that size. The proto is made once per executable (it runs the
//! passes again, which only tools asking for it pay for) and kept for the second call.

use crate::abi::args::ExecutableOptimizedProgramArgs;
use crate::abi::{ErrorCode, Program};
use crate::error::{guard, non_null, PjrtError, Result};
use crate::executable::Executable;

/// The format name jaxlib expects for an `HloModuleProtoWithConfig` (`pjrt::kHloWithConfigFormat`).
const FORMAT: &str = "hlo_with_config";

pub unsafe extern "C" fn executable_optimized_program(args: *mut ExecutableOptimizedProgramArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let e: &Executable = non_null(a.executable, "executable")?;
            let program: &mut Program = a.program.as_mut().ok_or_else(|| PjrtError::invalid("program is null"))?;
            if program.struct_size < Program::STRUCT_SIZE {
                return Err(PjrtError::invalid(format!("PJRT_Program: struct_size is {}, at least {} needed", program.struct_size, Program::STRUCT_SIZE)));
            }
            let code = optimized_proto(e)?;
            program.format = FORMAT.as_ptr().cast();
            program.format_size = FORMAT.len();
            if program.code.is_null() {
                program.code_size = code.len();
                return Ok(());
            }
            if program.code_size < code.len() {
                return Err(PjrtError::invalid(format!("program->code has {} bytes, the optimized program {}", program.code_size, code.len())));
            }
            std::ptr::copy_nonoverlapping(code.as_ptr(), program.code.cast::<u8>(), code.len());
            program.code_size = code.len();
            Ok(())
        })
    }
}

fn optimized_proto(e: &Executable) -> Result<&[u8]> {
    let c = &e.1;
    let code = c.optimized.get_or_init(|| {
        let module = hlojit_compiler::pipeline::prepare(&c.module, &hlojit::CompileOptions::default()).map_err(|e| e.to_string())?;
        Ok(crate::hlo_proto::module_with_config(&module, c.options.replicas, c.options.partitions))
    });
    code.as_deref().map_err(|m| PjrtError::new(ErrorCode::Internal, format!("optimizing the program for its HloModuleProto: {m}")))
}
