//! `custom-call`: a call from the sequencing function into a target outside the module,
//! with the calling convention its `api_version` names (see `ffi/include/hlojit_ffi.h`).
//!
//! Operands are passed in the layouts the call constrains them to (row-major when it does not),
//! converted into scratch buffers when their own buffers are laid out differently; results are
//! received the same way. An output aliased to an operand (`output_to_operand_aliasing`)
//! starts out holding that operand's value, so targets that compute in place see their input,
//! while the operand itself stays untouched. Calls that can fail (status-returning and typed
//! FFI) return a status; a failure leaves the function through its failure exit, and the
//! runtime keeps the target's message as the thread's last error.

mod builtin_definition;

use super::array::{buffer_bytes, IrArray};
use super::context::Codegen;
use super::function::{copy_array, pointer_array, sanitize, FunctionLowering, ModuleLowering};
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::error::{Error, Result};
use crate::hlo::attributes::{BackendConfig, CustomCallApiVersion};
use crate::hlo::{Computation, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::custom_call::{ffi_dtype, BufferSpec, CallDescriptor};
use hlojit_runtime::{ArrayShape, Shape};
use inkwell::module::Linkage;
use inkwell::values::{BasicMetadataValueEnum, IntValue, PointerValue};

/// The custom-call targets a module names, each once, in order of appearance (not the ones
/// compiled as ops, like XLA:CPU's `TopK`).
pub fn custom_call_targets(module: &Module) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for comp in &module.computations {
        for inst in &comp.instructions {
            if inst.opcode == Opcode::CustomCall && !crate::codegen::emitters::is_builtin_custom_call(inst) {
                if let Some(t) = &inst.attrs.custom_call_target {
                    if !out.contains(t) {
                        out.push(t.clone());
                    }
                }
            }
        }
    }
    out
}

/// Leaves `[start, start + count)` of `shape`'s flattened array leaves are the subshape at
/// `index`.
fn leaf_range(shape: &Shape, index: &[i64]) -> Option<(usize, usize)> {
    let mut start = 0;
    let mut s = shape;
    for &i in index {
        let elements = s.tuple_elements()?;
        let i = usize::try_from(i).ok().filter(|&i| i < elements.len())?;
        start += elements[..i].iter().map(|e| e.array_leaves().len()).sum::<usize>();
        s = &elements[i];
    }
    Some((start, s.array_leaves().len()))
}

/// The typed-FFI buffers of a value of `shape` (tuples flattened): array leaves take the next
/// (shape, pointer) of `arrays`, tokens get a TOKEN buffer without data.
fn ffi_leaves<'a, 'ctx: 'a>(
    cg: &Codegen<'ctx>,
    shape: &Shape,
    arrays: &mut impl Iterator<Item = (&'a ArrayShape, &'a PointerValue<'ctx>)>,
    out: &mut (Vec<BufferSpec>, Vec<PointerValue<'ctx>>),
) -> Result<()> {
    match shape {
        Shape::Array(_) => {
            let (s, &p) = arrays.next().ok_or_else(|| Error::Internal("custom call: fewer buffers than array leaves".into()))?;
            out.0.push(BufferSpec { dtype: ffi_dtype(s.element_type), dims: s.dims.clone() });
            out.1.push(p);
        }
        Shape::Tuple(elements) => {
            for e in elements {
                ffi_leaves(cg, e, arrays, out)?;
            }
        }
        Shape::Token => {
            out.0.push(BufferSpec { dtype: hlojit_ffi::xla::XLA_FFI_DataType_TOKEN, dims: Vec::new() });
            out.1.push(cg.ptr().const_null());
        }
        Shape::Opaque => return Err(Error::Unsupported("an opaque value as a typed-FFI operand or result".into())),
    }
    Ok(())
}

fn with_layout(shape: &ArrayShape, layout_from: Option<&ArrayShape>) -> ArrayShape {
    let layout = match layout_from {
        Some(s) => s.layout_or_default(),
        None => hlojit_runtime::Layout::row_major(shape.rank()),
    };
    ArrayShape { layout: Some(layout), ..shape.clone() }
}

/// A pointer for a value of `shape` in the legacy ABIs: an array's buffer, or for a tuple an
/// array of its elements' pointers (nested for nested tuples); null for tokens.
fn shape_pointer<'ctx>(
    cg: &Codegen<'ctx>,
    shape: &Shape,
    leaves: &mut impl Iterator<Item = PointerValue<'ctx>>,
) -> Result<PointerValue<'ctx>> {
    match shape {
        Shape::Array(_) => {
            leaves.next().ok_or_else(|| Error::Internal("custom call: fewer buffers than array leaves".into()))
        }
        Shape::Tuple(elements) => {
            let ptrs = elements.iter().map(|e| shape_pointer(cg, e, leaves)).collect::<Result<Vec<_>>>()?;
            pointer_array(cg, &ptrs, "tuple")
        }
        Shape::Token | Shape::Opaque => Ok(cg.ptr().const_null()),
    }
}

impl<'a, 'ctx> ModuleLowering<'a, 'ctx> {
    /// Lowers a custom call of `comp` at the current position of the sequencing function.
    pub(crate) fn lower_custom_call(
        &mut self,
        comp: &Computation,
        id: InstrId,
        fl: &mut FunctionLowering<'_, 'ctx>,
    ) -> Result<()> {
        let cg = self.cg;
        let inst = comp.get(id);
        let verr = |message: String| Error::verify(&comp.name, &inst.name, message);
        let target = inst
            .attrs
            .custom_call_target
            .clone()
            .ok_or_else(|| verr("custom-call without custom_call_target".into()))?;
        let api = inst.attrs.api_version.unwrap_or(CustomCallApiVersion::Original);
        let constraints = inst.attrs.operand_layout_constraints.as_ref();
        if let Some(c) = constraints {
            if c.len() != inst.operands.len() {
                return Err(verr(format!(
                    "{} operand layout constraints for {} operands",
                    c.len(),
                    inst.operands.len()
                )));
            }
        }
        let cleanups_before = fl.cleanups.len();

        // Operands, each leaf in the layout the target reads.
        let mut operand_ptrs: Vec<Vec<PointerValue<'ctx>>> = Vec::new();
        let mut operand_shapes: Vec<Vec<ArrayShape>> = Vec::new();
        for (i, &op) in inst.operands.iter().enumerate() {
            let op_shape = &comp.get(op).shape;
            let constraint = constraints.map(|c| c[i].array_leaves());
            let slots = fl.assignment.leaf_slots(op).to_vec();
            let leaves = op_shape.array_leaves();
            if slots.len() != leaves.len() || constraint.as_ref().is_some_and(|c| c.len() != leaves.len()) {
                return Err(verr(format!("operand {i}'s layout constraint does not match its shape")));
            }
            let mut ptrs = Vec::new();
            let mut shapes = Vec::new();
            for (k, &s) in slots.iter().enumerate() {
                let have = fl.assignment.slots[s].shape.clone();
                let want = with_layout(&have, constraint.as_ref().map(|c| c[k]));
                if constraint.as_ref().is_some_and(|c| c[k].dims != have.dims || c[k].element_type != have.element_type)
                {
                    return Err(verr(format!("operand {i}'s layout constraint does not match its shape")));
                }
                let ptr = fl.slot_ptrs[s];
                if have.layout_or_default() == want.layout_or_default() {
                    ptrs.push(ptr);
                } else {
                    let tmp = self.scratch(fl, &want)?;
                    copy_array(cg, &IrArray::new(ptr, &have)?, &IrArray::new(tmp, &want)?)?;
                    ptrs.push(tmp);
                }
                shapes.push(want);
            }
            operand_ptrs.push(ptrs);
            operand_shapes.push(shapes);
        }

        // Results: the instruction's layouts when the call constrains layouts, row-major
        // otherwise; scratch where the result buffers are laid out differently.
        let result_leaves = inst.shape.array_leaves();
        let slots = fl.assignment.leaf_slots(id).to_vec();
        if slots.len() != result_leaves.len() {
            return Err(Error::Internal(format!(
                "{}: {} result buffers for {} leaves",
                inst.name,
                slots.len(),
                result_leaves.len()
            )));
        }
        let mut result_ptrs = Vec::new();
        let mut result_shapes = Vec::new();
        let mut copy_back = Vec::new();
        for (k, &s) in slots.iter().enumerate() {
            let have = fl.assignment.slots[s].shape.clone();
            let want = with_layout(&have, constraints.map(|_| result_leaves[k]));
            let ptr = fl.slot_ptrs[s];
            if have.layout_or_default() == want.layout_or_default() {
                result_ptrs.push(ptr);
            } else {
                let tmp = self.scratch(fl, &want)?;
                copy_back.push((IrArray::new(tmp, &want)?, IrArray::new(ptr, &have)?));
                result_ptrs.push(tmp);
            }
            result_shapes.push(want);
        }

        // Outputs computed in place start out as their operand's value.
        if let Some(pairs) = &inst.attrs.output_to_operand_aliasing {
            for alias in pairs {
                let out = leaf_range(&inst.shape, &alias.output);
                let operand = inst.operands.get(alias.operand).map(|&o| &comp.get(o).shape);
                let src = operand.and_then(|s| leaf_range(s, &alias.operand_index));
                let (Some((o0, n)), Some((s0, m))) = (out, src) else {
                    return Err(verr(format!(
                        "output_to_operand_aliasing names a missing output or operand: {alias:?}"
                    )));
                };
                if n != m {
                    return Err(verr(format!(
                        "output_to_operand_aliasing pairs values of different shapes: {alias:?}"
                    )));
                }
                for j in 0..n {
                    let src =
                        IrArray::new(operand_ptrs[alias.operand][s0 + j], &operand_shapes[alias.operand][s0 + j])?;
                    let dst = IrArray::new(result_ptrs[o0 + j], &result_shapes[o0 + j])?;
                    copy_array(cg, &src, &dst)?;
                }
            }
        }

        let callee = self.target_pointer(&target)?;
        let status = match api {
            CustomCallApiVersion::Original => {
                let (out, ins) = self.legacy_pointers(comp, inst, &operand_ptrs, &result_ptrs)?;
                let ty = cg.fn_type(None, &[cg.ptr().into(), cg.ptr().into()]);
                cg.b.build_indirect_call(ty, callee, &[out.into(), ins.into()], "")?;
                None
            }
            CustomCallApiVersion::StatusReturning | CustomCallApiVersion::StatusReturningUnified => {
                let unified = api == CustomCallApiVersion::StatusReturningUnified;
                let (out, ins) = self.legacy_pointers(comp, inst, &operand_ptrs, &result_ptrs)?;
                let opaque = match &inst.attrs.backend_config {
                    Some(BackendConfig::Quoted(s)) | Some(BackendConfig::Braced(s)) => s.as_bytes().to_vec(),
                    None => Vec::new(),
                };
                let base = format!("cc.{}.{}", sanitize(&comp.name), sanitize(&inst.name));
                let opaque_ptr = private_bytes(cg, &format!("{base}.opaque"), &opaque, false);
                let name_ptr = private_bytes(cg, &format!("{base}.name"), target.as_bytes(), true);
                let f = cg.runtime(RuntimeFunction::CustomCallStatus)?;
                let args: [BasicMetadataValueEnum; 7] = [
                    callee.into(),
                    cg.const_i32(unified as i32).into(),
                    out.into(),
                    ins.into(),
                    opaque_ptr.into(),
                    cg.const_i64(opaque.len() as i64).into(),
                    name_ptr.into(),
                ];
                Some(cg.call(f, &args)?.into_int_value())
            }
            CustomCallApiVersion::TypedFfi => {
                // Tokens are buffers too in XLA's call frame (dtype TOKEN, no data): handlers
                // count them (jaxlib's host callbacks pass a token operand on as None).
                let mut args = (Vec::new(), Vec::new());
                for (k, &o) in inst.operands.iter().enumerate() {
                    ffi_leaves(cg, &comp.get(o).shape, &mut operand_shapes[k].iter().zip(&operand_ptrs[k]), &mut args)?;
                }
                let mut rets = (Vec::new(), Vec::new());
                ffi_leaves(cg, &inst.shape, &mut result_shapes.iter().zip(&result_ptrs), &mut rets)?;
                let descriptor = CallDescriptor {
                    target: target.clone(),
                    args: args.0,
                    rets: rets.0,
                    attrs: inst.attrs.ffi_attributes.clone(),
                };
                let bytes = descriptor.encode();
                let base = format!("cc.{}.{}", sanitize(&comp.name), sanitize(&inst.name));
                let desc_ptr = private_bytes(cg, &format!("{base}.ffi"), &bytes, false);
                let args = pointer_array(cg, &args.1, "ffi.args")?;
                let rets = pointer_array(cg, &rets.1, "ffi.rets")?;
                let f = cg.runtime(RuntimeFunction::FfiCall)?;
                let call_args: [BasicMetadataValueEnum; 5] =
                    [callee.into(), desc_ptr.into(), cg.const_i64(bytes.len() as i64).into(), args.into(), rets.into()];
                Some(cg.call(f, &call_args)?.into_int_value())
            }
        };
        if let Some(status) = status {
            // On failure the exit frees the scratch still listed in `fl.cleanups`.
            fl.check(cg, status)?;
        }
        for (src, dst) in &copy_back {
            copy_array(cg, src, dst)?;
        }
        self.free_scratch(fl, cleanups_before)
    }

    /// The `out` and `ins` arguments of the legacy ABIs.
    fn legacy_pointers(
        &self,
        comp: &Computation,
        inst: &Instruction,
        operand_ptrs: &[Vec<PointerValue<'ctx>>],
        result_ptrs: &[PointerValue<'ctx>],
    ) -> Result<(PointerValue<'ctx>, PointerValue<'ctx>)> {
        let cg = self.cg;
        let out = shape_pointer(cg, &inst.shape, &mut result_ptrs.iter().copied())?;
        let ins = inst
            .operands
            .iter()
            .zip(operand_ptrs)
            .map(|(&o, ptrs)| shape_pointer(cg, &comp.get(o).shape, &mut ptrs.iter().copied()))
            .collect::<Result<Vec<_>>>()?;
        let ins = pointer_array(cg, &ins, "cc.ins")?;
        Ok((out, ins))
    }

    /// The address of target `name`, an external symbol the JIT or the linker resolves (for
    /// the linker, a built-in target has a weak definition: `builtin_definition.rs`).
    fn target_pointer(&self, name: &str) -> Result<PointerValue<'ctx>> {
        let cg = self.cg;
        if cg.for_linker && hlojit_runtime::custom_call::builtin_target(name).is_some() {
            return Ok(builtin_definition::weak_builtin_definition(cg, name)?.as_global_value().as_pointer_value());
        }
        if let Some(f) = cg.module.get_function(name) {
            if f.count_basic_blocks() > 0 {
                return Err(Error::Unsupported(format!(
                    "custom-call target '{name}' has the name of a generated function"
                )));
            }
            return Ok(f.as_global_value().as_pointer_value());
        }
        let f = cg.module.add_function(name, cg.fn_type(None, &[]), Some(Linkage::External));
        Ok(f.as_global_value().as_pointer_value())
    }

    /// Scratch memory for an array of `shape`, listed in `fl.cleanups` until freed.
    fn scratch(&self, fl: &mut FunctionLowering<'_, 'ctx>, shape: &ArrayShape) -> Result<PointerValue<'ctx>> {
        let cg = self.cg;
        let bytes = buffer_bytes(shape)?.max(1);
        let p = fl.alloc(cg, bytes)?;
        fl.cleanups.push((p, bytes));
        Ok(p)
    }

    /// Frees the scratch allocated since `fl.cleanups` had `len` entries.
    fn free_scratch(&self, fl: &mut FunctionLowering<'_, 'ctx>, len: usize) -> Result<()> {
        let cg = self.cg;
        let free = cg.runtime(RuntimeFunction::Free)?;
        while fl.cleanups.len() > len {
            let (p, size) = fl.cleanups.pop().expect("non-empty");
            let size: IntValue = cg.const_i64(size);
            cg.call_void(free, &[p.into(), size.into()])?;
        }
        Ok(())
    }
}

/// A private constant byte string (NUL-terminated when `c_string`).
fn private_bytes<'ctx>(cg: &Codegen<'ctx>, name: &str, bytes: &[u8], c_string: bool) -> PointerValue<'ctx> {
    if let Some(g) = cg.module.get_global(name) {
        return g.as_pointer_value();
    }
    let init = cg.llvm.const_string(bytes, c_string);
    let g = cg.module.add_global(init.get_type(), None, name);
    g.set_initializer(&init);
    g.set_constant(true);
    g.set_linkage(Linkage::Private);
    g.set_unnamed_addr(true);
    g.as_pointer_value()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_ranges_follow_depth_first_order() {
        let f = |d: &[i64]| Shape::array(hlojit_runtime::ElementType::F32, d.to_vec());
        let shape = Shape::Tuple(vec![f(&[2]), Shape::Tuple(vec![f(&[3]), f(&[4])]), f(&[])]);
        assert_eq!(leaf_range(&shape, &[]), Some((0, 4)));
        assert_eq!(leaf_range(&shape, &[1]), Some((1, 2)));
        assert_eq!(leaf_range(&shape, &[1, 1]), Some((2, 1)));
        assert_eq!(leaf_range(&shape, &[2]), Some((3, 1)));
        assert_eq!(leaf_range(&shape, &[3]), None);
        assert_eq!(leaf_range(&f(&[5]), &[]), Some((0, 1)));
    }
}
