//! Built-in custom-call targets in objects for the system linker. The JIT binds a target
//! name to hlojit's built-in handler (the LAPACK and solver targets jaxlib registers, and its
//! other CPU targets) when no registry, plugin or process symbol has it; an AOT object gets the
//! same binding as a weak definition under the target's name that hands the call frame to the
//! runtime's `hlojit_rt_builtin_target_call`. A program that defines the name itself keeps
//! its own, as a registered target comes first in the JIT.

use super::private_bytes;
use crate::codegen::context::Codegen;
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::error::{Error, Result};
use inkwell::module::Linkage;
use inkwell::values::FunctionValue;

/// The weak definition of built-in target `name`, made on first use: `(frame) -> error`.
pub(super) fn weak_builtin_definition<'ctx>(
    cg: &Codegen<'ctx>,
    name: &str,
) -> Result<FunctionValue<'ctx>> {
    if let Some(f) = cg.module.get_function(name) {
        return match f.get_linkage() {
            Linkage::WeakAny => Ok(f),
            _ => Err(Error::Unsupported(format!("custom-call target '{name}' has the name of a generated function"))),
        };
    }
    let call = cg.runtime(RuntimeFunction::BuiltinTargetCall)?;
    let f = cg.module.add_function(
        name,
        cg.fn_type(Some(cg.ptr().into()), &[cg.ptr().into()]),
        Some(Linkage::WeakAny),
    );
    let b = cg.llvm.create_builder();
    b.position_at_end(cg.llvm.append_basic_block(f, "entry"));
    let name_string = private_bytes(cg, &format!("builtin.{name}"), name.as_bytes(), true);
    let frame = f.get_nth_param(0).expect("one parameter");
    let error = b
        .build_call(call, &[name_string.into(), frame.into()], "error")?
        .try_as_basic_value()
        .basic()
        .ok_or_else(|| Error::Llvm("hlojit_rt_builtin_target_call returns void".into()))?;
    b.build_return(Some(&error))?;
    Ok(f)
}
