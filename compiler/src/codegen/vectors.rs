//! Vector helpers the hand-vectorized kernels share: splats, lane masks for partial vectors,
//! masked loads.

use super::context::Codegen;
use crate::error::Result;
use inkwell::types::VectorType;
use inkwell::values::{BasicValueEnum, IntValue, PointerValue, VectorValue};
use inkwell::IntPredicate;

/// A vector with every lane `s`.
pub fn splat<'ctx>(cg: &Codegen<'ctx>, vt: VectorType<'ctx>, s: BasicValueEnum<'ctx>) -> Result<VectorValue<'ctx>> {
    let one = cg.b.build_insert_element(vt.get_undef(), s, cg.const_i32(0), "")?;
    Ok(cg.b.build_shuffle_vector(one, vt.get_undef(), cg.i32().vec_type(vt.get_size()).const_zero(), "")?)
}

/// Lanes `0 .. min(valid, lanes)` set.
pub fn lane_mask<'ctx>(cg: &Codegen<'ctx>, lanes: i64, valid: IntValue<'ctx>) -> Result<VectorValue<'ctx>> {
    let iota: Vec<IntValue> = (0..lanes).map(|l| cg.const_i64(l)).collect();
    let iota = VectorType::const_vector(&iota);
    let vt = cg.i64().vec_type(lanes as u32);
    let valid = splat(cg, vt, valid.into())?;
    Ok(cg.b.build_int_compare(IntPredicate::SLT, iota, valid, "mask")?)
}

pub fn masked_load<'ctx>(
    cg: &Codegen<'ctx>,
    vt: VectorType<'ctx>,
    ptr: PointerValue<'ctx>,
    align: IntValue<'ctx>,
    mask: VectorValue<'ctx>,
) -> Result<VectorValue<'ctx>> {
    Ok(cg
        .call_intrinsic("llvm.masked.load", &[vt.into(), cg.ptr().into()], &[ptr.into(), align.into(), mask.into(), vt.const_zero().into()])?
        .into_vector_value())
}
