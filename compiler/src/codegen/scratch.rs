//! Scratch memory that kernels allocate themselves (packed GEMM panels, staging copies, sort
//! keys). A kernel is a `void` function run over a range, possibly on a pool thread, so it
//! cannot return a status: when an allocation fails it frees what it holds and returns at once,
//! and `hlojit_rt_alloc` has recorded the failure. The sequencing code asks the runtime after
//! every kernel that allocates (`hlojit_rt_take_failure`, which also collects failures of the
//! pool threads the kernel ran on) and leaves through its failure exit, so running out of
//! memory inside a kernel is an error the host sees, never a write through a null pointer.

use super::context::Codegen;
use super::runtime_abi::RuntimeFunction;
use crate::error::Result;
use inkwell::values::{FunctionValue, PointerValue};

/// Scratch held by the functions being generated, in allocation order.
#[derive(Default)]
pub struct ScratchState<'ctx> {
    held: Vec<(FunctionValue<'ctx>, PointerValue<'ctx>, i64)>,
    /// Whether a kernel emitted since the last [`Codegen::take_kernel_may_fail`] allocates.
    may_fail: bool,
}

impl<'ctx> Codegen<'ctx> {
    /// Allocates `bytes` of scratch in the current (void) function; if the allocation fails,
    /// the function frees the scratch it holds and returns.
    pub fn scratch_alloc(&self, bytes: i64, name: &str) -> Result<PointerValue<'ctx>> {
        let alloc = self.runtime(RuntimeFunction::Alloc)?;
        let ptr = self.call(alloc, &[self.const_i64(bytes).into()])?.into_pointer_value();
        ptr.set_name(name);
        let function = self.function();
        let failed = self.block(&format!("{name}.failed"));
        let ok = self.block(&format!("{name}.ok"));
        let is_null = self.b.build_is_null(ptr, "")?;
        self.b.build_conditional_branch(is_null, failed, ok)?;
        self.b.position_at_end(failed);
        let free = self.runtime(RuntimeFunction::Free)?;
        for (p, size) in self.held_by(function) {
            self.call_void(free, &[p.into(), self.const_i64(size).into()])?;
        }
        self.b.build_return(None)?;
        self.b.position_at_end(ok);
        let mut state = self.scratch.borrow_mut();
        state.held.push((function, ptr, bytes));
        state.may_fail = true;
        Ok(ptr)
    }

    /// Frees scratch from [`Codegen::scratch_alloc`] of the same size.
    pub fn scratch_free(&self, ptr: PointerValue<'ctx>, bytes: i64) -> Result<()> {
        let free = self.runtime(RuntimeFunction::Free)?;
        self.call_void(free, &[ptr.into(), self.const_i64(bytes).into()])?;
        self.scratch.borrow_mut().held.retain(|&(_, p, _)| p != ptr);
        Ok(())
    }

    /// Whether a kernel emitted since the last call allocates scratch (so its caller must ask
    /// the runtime whether it failed); resets the answer.
    pub fn take_kernel_may_fail(&self) -> bool {
        std::mem::take(&mut self.scratch.borrow_mut().may_fail)
    }

    fn held_by(&self, function: FunctionValue<'ctx>) -> Vec<(PointerValue<'ctx>, i64)> {
        let state = self.scratch.borrow();
        state.held.iter().filter(|(f, _, _)| *f == function).map(|&(_, p, s)| (p, s)).collect()
    }
}
