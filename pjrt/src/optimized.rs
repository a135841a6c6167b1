//! `PJRT_Executable_OptimizedProgram`: the program as hlojit compiled it — the module after
//! hlojit's HLO passes (fusion, layouts, expansions), as HLO text in the `hlo` format, with
//! buffer offsets and kernel names as `//` comments (what `hlojit opt` prints).
//!
//! The C API's two-call protocol: with `program->code` null the size is reported, then the
//! caller passes a buffer of that size. The text is made once per executable (it runs the
//! passes again, which only tools asking for it pay for) and kept for the second call.

use crate::abi::args::ExecutableOptimizedProgramArgs;
use crate::abi::{ErrorCode, Program};
use crate::error::{guard, non_null, PjrtError, Result};
use crate::executable::Executable;

/// The format name: HLO text, as `PJRT_Client_Compile` also accepts it.
const FORMAT: &str = "hlo";

pub unsafe extern "C" fn executable_optimized_program(args: *mut ExecutableOptimizedProgramArgs) -> *mut PjrtError {
    unsafe {
        guard(args, |a| {
            let e: &Executable = non_null(a.executable, "executable")?;
            let program: &mut Program = a.program.as_mut().ok_or_else(|| PjrtError::invalid("program is null"))?;
            if program.struct_size < Program::STRUCT_SIZE {
                return Err(PjrtError::invalid(format!("PJRT_Program: struct_size is {}, at least {} needed", program.struct_size, Program::STRUCT_SIZE)));
            }
            let text = optimized_text(e)?;
            program.format = FORMAT.as_ptr().cast();
            program.format_size = FORMAT.len();
            if program.code.is_null() {
                program.code_size = text.len();
                return Ok(());
            }
            if program.code_size < text.len() {
                return Err(PjrtError::invalid(format!("program->code has {} bytes, the optimized program {}", program.code_size, text.len())));
            }
            std::ptr::copy_nonoverlapping(text.as_ptr(), program.code.cast::<u8>(), text.len());
            program.code_size = text.len();
            Ok(())
        })
    }
}

fn optimized_text(e: &Executable) -> Result<&str> {
    let c = &e.1;
    let text = c.optimized.get_or_init(|| hlojit::Client::new().optimized_text(&c.module).map_err(|e| e.to_string()));
    text.as_deref().map_err(|m| PjrtError::new(ErrorCode::Internal, format!("printing the optimized program: {m}")))
}
