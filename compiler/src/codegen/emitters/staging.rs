//! Row-major staging for emitters that hand whole arrays to a runtime kernel or walk them in
//! an order of their own: an operand is used in place when it is already a row-major buffer,
//! otherwise it is generated (fused producers included) into a temporary; an output is
//! written in place when its buffer is row-major, otherwise through a temporary copied out.

use crate::codegen::array::IrArray;
use crate::codegen::elemental::Input;
use crate::codegen::kernel::KernelContext;
use crate::codegen::loops::emit_loop_nest;
use crate::error::{Error, Result};
use crate::hlo::InstrId;
use hlojit_runtime::{ArrayShape, Layout};
use inkwell::values::PointerValue;

/// A row-major array an emitter works on, and the temporary behind it if there is one.
pub struct Staged<'ctx> {
    pub array: IrArray<'ctx>,
    temp: Option<(PointerValue<'ctx>, i64)>,
}

/// The value of `operand` as a row-major array: its buffer when it is bound to one in that
/// layout, else a temporary filled with its generated elements. Release it with [`release`].
pub fn stage_operand<'ctx>(kc: &KernelContext<'_, 'ctx>, operand: InstrId) -> Result<Staged<'ctx>> {
    if let Some(Input::Array(a)) = kc.bindings.get(&operand) {
        if a.physical.is_row_major_dense() {
            return Ok(Staged { array: a.clone(), temp: None });
        }
    }
    let shape = row_major(kc.comp.get(operand).shape.as_array().ok_or_else(|| {
        Error::Unsupported(format!("{}: a tuple-shaped operand cannot be staged", kc.comp.get(operand).name))
    })?);
    let staged = temporary(kc, &shape)?;
    let mut e = kc.elemental();
    let layout = shape.layout_or_default();
    emit_loop_nest(kc.cg, "stage", &shape.dims, &layout, None, |index| {
        let v = e.gen_scalar(operand, index)?;
        staged.array.store(kc.cg, index, v)
    })?;
    Ok(staged)
}

/// Output `k` of the kernel as a row-major array: its buffer if it is laid out so, else a
/// temporary that [`finish_output`] copies into the buffer.
pub fn stage_output<'ctx>(kc: &KernelContext<'_, 'ctx>, k: usize) -> Result<Staged<'ctx>> {
    let out = kc.outputs.get(k).ok_or_else(|| Error::Internal(format!("kernel has no output {k}")))?;
    if out.physical.is_row_major_dense() {
        return Ok(Staged { array: out.clone(), temp: None });
    }
    temporary(kc, &row_major(&out.shape))
}

/// Copies a staged output into output `k` (if it went through a temporary) and frees it.
pub fn finish_output<'ctx>(kc: &KernelContext<'_, 'ctx>, staged: Staged<'ctx>, k: usize) -> Result<()> {
    if staged.temp.is_some() {
        let out = &kc.outputs[k];
        crate::codegen::function::copy_array(kc.cg, &staged.array, out)?;
    }
    release(kc, staged)
}

/// Frees a staged array's temporary, if any.
pub fn release<'ctx>(kc: &KernelContext<'_, 'ctx>, staged: Staged<'ctx>) -> Result<()> {
    if let Some((ptr, bytes)) = staged.temp {
        let cg = kc.cg;
        cg.scratch_free(ptr, bytes)?;
    }
    Ok(())
}

fn row_major(shape: &ArrayShape) -> ArrayShape {
    ArrayShape { layout: Some(Layout::row_major(shape.rank())), ..shape.clone() }
}

fn temporary<'ctx>(kc: &KernelContext<'_, 'ctx>, shape: &ArrayShape) -> Result<Staged<'ctx>> {
    let cg = kc.cg;
    let bytes = crate::codegen::array::buffer_bytes(shape)?.max(1);
    let ptr = cg.scratch_alloc(bytes, "scratch")?;
    Ok(Staged { array: IrArray::new(ptr, shape)?, temp: Some((ptr, bytes)) })
}
