//! Ops that move elements without computing on them: each maps an output index to an operand
//! index (broadcast, reshape, bitcast, transpose, slice, reverse, dynamic-slice), chooses among
//! operands (concatenate, pad), or makes values from the index (iota).

use super::{Elemental, Val};
use crate::codegen::index::{delinearize, Index};
use crate::error::{Error, Result};
use crate::hlo::InstrId;
use hlojit_runtime::physical::PhysicalLayout;
use inkwell::values::{BasicValueEnum, IntValue};
use inkwell::IntPredicate;

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    pub(super) fn gen_broadcast(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let inst = self.comp.get(id);
        let operand = inst.operands[0];
        let dims = inst.attrs.dims().to_vec();
        let mut operand_index = Index::new(dims.iter().map(|&d| index.dims[d as usize]).collect());
        // Broadcasting a scalar or adding only major dimensions keeps linear order intact.
        if dims.is_empty() {
            operand_index.linear = Some(self.cg.const_i64(0));
        }
        self.gen(operand, &operand_index)
    }

    pub(super) fn gen_reshape(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let inst = self.comp.get(id);
        let operand = inst.operands[0];
        let out_dims = inst.shape.dims().to_vec();
        let in_dims = self.dims(operand).to_vec();
        if in_dims == out_dims {
            return self.gen(operand, index);
        }
        let linear = index.linearize(self.cg, &out_dims)?;
        let operand_index = delinearize(self.cg, linear, &in_dims)?;
        self.gen(operand, &operand_index)
    }

    /// A bitcast reinterprets the operand's buffer: the output element sits at the same
    /// physical offset in the output's layout as the operand element does in the operand's.
    pub(super) fn gen_bitcast(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        // XLA also writes same-width reinterpretations (bitcast-convert) as bitcast.
        let from = self.element_type(self.comp.get(id).operands[0])?;
        let to = self.element_type(id)?;
        let v = self.gen_bitcast_elements(id, index)?;
        if from == to {
            return Ok(v);
        }
        let bits = self.to_bits(v.scalar()?, from)?;
        Ok(Val::Scalar(self.from_bits(bits, to)?))
    }

    fn gen_bitcast_elements(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let cg = self.cg;
        let inst = self.comp.get(id);
        let operand = inst.operands[0];
        let out_shape = inst.array_shape().clone();
        let in_shape = self.comp.get(operand).array_shape().clone();
        let out_layout = out_shape.layout_or_default();
        let in_layout = in_shape.layout_or_default();
        if out_shape.dims == in_shape.dims && out_layout.minor_to_major == in_layout.minor_to_major {
            return self.gen(operand, index);
        }
        // XLA forms bitcasts that are no-ops in the layouts' dimension order, tiles aside
        // (XLA:CPU bitcasts a T(8,128) array to its untiled transpose): elements correspond by
        // their position in that order.
        let untiled = |s: &hlojit_runtime::ArrayShape, l: &hlojit_runtime::Layout| hlojit_runtime::ArrayShape {
            layout: Some(hlojit_runtime::Layout::new(l.minor_to_major.clone())),
            ..s.clone()
        };
        let unsupported = |e: hlojit_runtime::physical::LayoutError| Error::Unsupported(e.to_string());
        let out_phys = PhysicalLayout::new(&untiled(&out_shape, &out_layout)).map_err(unsupported)?;
        let mut offset = cg.const_i64(0);
        for d in &out_phys.dims {
            if let (Some(l), true) = (d.logical_dim, d.size > 1) {
                let term = cg.b.build_int_nsw_mul(index.dims[l], cg.const_i64(d.stride), "")?;
                offset = cg.b.build_int_nsw_add(offset, term, "")?;
            }
        }
        // Split the offset along the operand's dimensions, minor to major.
        let mut operand_dims = vec![cg.const_i64(0); in_shape.rank()];
        let mut rest = offset;
        let order = &in_layout.minor_to_major;
        for (i, &d) in order.iter().enumerate() {
            let size = in_shape.dims[d as usize];
            let is_last = order[i + 1..].iter().all(|&m| in_shape.dims[m as usize] == 1);
            if size == 1 {
                continue;
            }
            operand_dims[d as usize] = if is_last { rest } else { cg.b.build_int_unsigned_rem(rest, cg.const_i64(size), "")? };
            if !is_last {
                rest = cg.b.build_int_unsigned_div(rest, cg.const_i64(size), "")?;
            }
        }
        self.gen(operand, &Index::new(operand_dims))
    }

    pub(super) fn gen_transpose(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let inst = self.comp.get(id);
        let operand = inst.operands[0];
        let perm = inst.attrs.dims().to_vec();
        let mut dims = vec![self.cg.const_i64(0); perm.len()];
        for (i, &p) in perm.iter().enumerate() {
            dims[p as usize] = index.dims[i];
        }
        self.gen(operand, &Index::new(dims))
    }

    pub(super) fn gen_slice(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let cg = self.cg;
        let inst = self.comp.get(id);
        let operand = inst.operands[0];
        let slice = inst.attrs.slice_dims().to_vec();
        let mut dims = Vec::with_capacity(slice.len());
        for (d, s) in slice.iter().enumerate() {
            let mut v = index.dims[d];
            if s.stride != 1 {
                v = cg.b.build_int_nsw_mul(v, cg.const_i64(s.stride), "")?;
            }
            if s.start != 0 {
                v = cg.b.build_int_nsw_add(v, cg.const_i64(s.start), "")?;
            }
            dims.push(v);
        }
        self.gen(operand, &Index::new(dims))
    }

    pub(super) fn gen_reverse(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let cg = self.cg;
        let inst = self.comp.get(id);
        let operand = inst.operands[0];
        let sizes = inst.shape.dims().to_vec();
        let mut dims = index.dims.clone();
        for &d in inst.attrs.dims().iter() {
            let d = d as usize;
            dims[d] = cg.b.build_int_nsw_sub(cg.const_i64(sizes[d] - 1), dims[d], "")?;
        }
        self.gen(operand, &Index::new(dims))
    }

    pub(super) fn gen_iota(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let inst = self.comp.get(id);
        let dim = inst.attrs.iota_dimension.unwrap_or(0) as usize;
        let t = self.element_type(id)?;
        let v = index.dims[dim];
        Ok(Val::Scalar(self.int_to_element(v, t)?))
    }

    /// An i64 holding a non-negative count, as a value of element type `t`.
    pub(super) fn int_to_element(&self, v: IntValue<'ctx>, t: hlojit_runtime::ElementType) -> Result<BasicValueEnum<'ctx>> {
        let cg = self.cg;
        if t.is_complex() {
            let part = t.complex_component().expect("complex");
            let re = cg.b.build_signed_int_to_float(v, cg.float_type(part), "")?;
            return cg.make_complex(t, re, cg.float_type(part).const_zero());
        }
        if t.is_native_float() {
            return self.round_to_float(cg.b.build_signed_int_to_float(v, cg.llvm.f64_type(), "")?, t);
        }
        if t.is_float() {
            let wide = cg.b.build_signed_int_to_float(v, cg.llvm.f64_type(), "")?;
            return self.f64_to_small_float(wide, t);
        }
        if t.is_pred() {
            return Ok(cg.b.build_int_compare(IntPredicate::NE, v, cg.const_i64(0), "")?.into());
        }
        Ok(cg.b.build_int_truncate_or_bit_cast(v, cg.value_type(t).into_int_type(), "")?.into())
    }

    pub(super) fn gen_concatenate(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let inst = self.comp.get(id);
        let dim = inst.attrs.dimensions.as_ref().and_then(|d| d.first()).copied().unwrap_or(0) as usize;
        let operands = inst.operands.clone();
        self.concat_from(&operands, 0, dim, index)
    }

    /// The element of the concatenation of `operands` (starting at offset 0 along `dim`).
    fn concat_from(&mut self, operands: &[InstrId], offset: i64, dim: usize, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let cg = self.cg;
        let first = operands[0];
        let size = self.dims(first)[dim];
        let local = |cg: &crate::codegen::context::Codegen<'ctx>| -> Result<Index<'ctx>> {
            let mut dims = index.dims.clone();
            if offset != 0 {
                dims[dim] = cg.b.build_int_nsw_sub(dims[dim], cg.const_i64(offset), "")?;
            }
            Ok(Index::new(dims))
        };
        if operands.len() == 1 {
            let i = local(cg)?;
            return self.gen(first, &i);
        }
        let in_first = cg.b.build_int_compare(IntPredicate::SLT, index.dims[dim], cg.const_i64(offset + size), "")?;
        let rest = operands[1..].to_vec();
        self.select_val("concat", in_first, |e| {
            let i = local(e.cg)?;
            e.gen(first, &i)
        }, |e| e.concat_from(&rest, offset + size, dim, index))
    }

    pub(super) fn gen_pad(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let cg = self.cg;
        let inst = self.comp.get(id);
        let (operand, pad_value) = (inst.operands[0], inst.operands[1]);
        let padding = inst.attrs.pad_dims().to_vec();
        let in_dims = self.dims(operand).to_vec();
        let mut in_bounds = cg.const_bool(true);
        let mut operand_dims = Vec::with_capacity(padding.len());
        for (d, p) in padding.iter().enumerate() {
            // i = index - low must be a non-negative multiple of (interior + 1), below
            // (size - 1) * (interior + 1) + 1.
            let i = cg.b.build_int_nsw_sub(index.dims[d], cg.const_i64(p.low), "")?;
            let ge0 = cg.b.build_int_compare(IntPredicate::SGE, i, cg.const_i64(0), "")?;
            in_bounds = cg.b.build_and(in_bounds, ge0, "")?;
            let step = p.interior + 1;
            let q = if step == 1 {
                i
            } else {
                let rem = cg.b.build_int_signed_rem(i, cg.const_i64(step), "")?;
                let on_grid = cg.b.build_int_compare(IntPredicate::EQ, rem, cg.const_i64(0), "")?;
                in_bounds = cg.b.build_and(in_bounds, on_grid, "")?;
                cg.b.build_int_signed_div(i, cg.const_i64(step), "")?
            };
            let lt = cg.b.build_int_compare(IntPredicate::SLT, q, cg.const_i64(in_dims[d]), "")?;
            in_bounds = cg.b.build_and(in_bounds, lt, "")?;
            operand_dims.push(q);
        }
        let scalar = Index::scalar(cg);
        self.select_val(
            "pad",
            in_bounds,
            |e| e.gen(operand, &Index::new(operand_dims)),
            |e| e.gen(pad_value, &scalar),
        )
    }

    pub(super) fn gen_dynamic_slice(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let cg = self.cg;
        let inst = self.comp.get(id);
        let operand = inst.operands[0];
        let starts = inst.operands[1..].to_vec();
        let in_dims = self.dims(operand).to_vec();
        let out_dims = inst.shape.dims().to_vec();
        let mut clamped = Vec::with_capacity(in_dims.len());
        for d in 0..in_dims.len() {
            clamped.push(self.clamped_start_index(starts[d], in_dims[d] - out_dims[d])?);
        }
        // A slice of a dense row-major array in memory (a scan reading step i of its inputs)
        // reads through a base pointer moved to the slice's start: the start offset is loop
        // invariant, so LLVM sees base + affine(loop indices) and vectorizes the kernel.
        // Folded into the index arithmetic, the start came out of instcombine as `or`s that
        // scalar evolution cannot follow ("cannot identify array bounds"): scalar loops.
        if let Some(super::Input::Array(a)) = self.inputs.get(&operand).cloned() {
            if a.physical.is_row_major_dense() {
                let start = crate::codegen::index::linearize(cg, &clamped, &in_dims)?;
                let base = cg.gep(cg.memory_type(a.element_type()), a.ptr, start)?;
                let view = crate::codegen::array::IrArray { ptr: base, ..a };
                return Ok(Val::Scalar(view.load(cg, &Index::new(index.dims.clone()))?));
            }
        }
        let mut dims = Vec::with_capacity(in_dims.len());
        for d in 0..in_dims.len() {
            dims.push(cg.b.build_int_nsw_add(clamped[d], index.dims[d], "")?);
        }
        self.gen(operand, &Index::new(dims))
    }

    /// A scalar start index operand, as i64 clamped into `[0, max_start]` (XLA clamps
    /// dynamic-slice and dynamic-update-slice starts so that the slice stays in bounds).
    pub fn clamped_start_index(&mut self, start: InstrId, max_start: i64) -> Result<IntValue<'ctx>> {
        let cg = self.cg;
        let t = self.element_type(start)?;
        let v = self.gen_scalar(start, &Index::scalar(cg))?.into_int_value();
        let v = cg.int_to_i64(t, v)?;
        let v = if t.is_unsigned_int() && t.bit_width() == 64 {
            // Huge unsigned values are past the end, not negative.
            let neg = cg.b.build_int_compare(IntPredicate::SLT, v, cg.const_i64(0), "")?;
            cg.b.build_select(neg, cg.const_i64(max_start), v, "")?.into_int_value()
        } else {
            v
        };
        cg.clamp_i64(v, cg.const_i64(0), cg.const_i64(max_start.max(0)))
    }

    /// `cond ? then : otherwise` with real branches, each side in its own cache scope.
    pub fn select_val(
        &mut self,
        name: &str,
        cond: IntValue<'ctx>,
        then: impl FnOnce(&mut Self) -> Result<Val<'ctx>>,
        otherwise: impl FnOnce(&mut Self) -> Result<Val<'ctx>>,
    ) -> Result<Val<'ctx>> {
        let cg = self.cg;
        let then_bb = cg.block(&format!("{name}.then"));
        let else_bb = cg.block(&format!("{name}.else"));
        let done = cg.block(&format!("{name}.done"));
        cg.b.build_conditional_branch(cond, then_bb, else_bb)?;
        cg.b.position_at_end(then_bb);
        let a = self.scoped(then)?;
        let a_end = cg.b.get_insert_block().expect("positioned");
        cg.b.build_unconditional_branch(done)?;
        cg.b.position_at_end(else_bb);
        let c = self.scoped(otherwise)?;
        let c_end = cg.b.get_insert_block().expect("positioned");
        cg.b.build_unconditional_branch(done)?;
        cg.b.position_at_end(done);
        merge_vals(cg, name, &a, a_end, &c, c_end)
    }
}

fn merge_vals<'ctx>(
    cg: &crate::codegen::context::Codegen<'ctx>,
    name: &str,
    a: &Val<'ctx>,
    a_bb: inkwell::basic_block::BasicBlock<'ctx>,
    c: &Val<'ctx>,
    c_bb: inkwell::basic_block::BasicBlock<'ctx>,
) -> Result<Val<'ctx>> {
    match (a, c) {
        (Val::Scalar(x), Val::Scalar(y)) => {
            let phi = cg.b.build_phi(x.get_type(), name)?;
            phi.add_incoming(&[(x, a_bb), (y, c_bb)]);
            Ok(Val::Scalar(phi.as_basic_value()))
        }
        (Val::Tuple(xs), Val::Tuple(ys)) if xs.len() == ys.len() => Ok(Val::Tuple(
            xs.iter().zip(ys).map(|(x, y)| merge_vals(cg, name, x, a_bb, y, c_bb)).collect::<Result<_>>()?,
        )),
        _ => Err(Error::Internal("branches produced values of different structure".into())),
    }
}
