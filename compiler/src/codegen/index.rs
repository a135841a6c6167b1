//! Multi-dimensional indices in generated code.

use super::context::Codegen;
use crate::error::Result;
use inkwell::values::IntValue;

/// A logical index into an array: one i64 per dimension, and when it is cheap to know, the
/// row-major linear position of the same element. Buffers stored row-major use the linear
/// position directly, which keeps addresses affine through reshapes.
#[derive(Clone, Debug)]
pub struct Index<'ctx> {
    pub dims: Vec<IntValue<'ctx>>,
    pub linear: Option<IntValue<'ctx>>,
}

impl<'ctx> Index<'ctx> {
    pub fn new(dims: Vec<IntValue<'ctx>>) -> Index<'ctx> {
        Index { dims, linear: None }
    }

    pub fn scalar(cg: &Codegen<'ctx>) -> Index<'ctx> {
        Index { dims: Vec::new(), linear: Some(cg.const_i64(0)) }
    }

    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// The row-major linear position of this index in an array of `sizes`.
    pub fn linearize(&self, cg: &Codegen<'ctx>, sizes: &[i64]) -> Result<IntValue<'ctx>> {
        if let Some(l) = self.linear {
            return Ok(l);
        }
        linearize(cg, &self.dims, sizes)
    }
}

/// `sum(index[d] * stride[d])` with row-major strides of `sizes`.
pub fn linearize<'ctx>(cg: &Codegen<'ctx>, index: &[IntValue<'ctx>], sizes: &[i64]) -> Result<IntValue<'ctx>> {
    let mut acc = cg.const_i64(0);
    let mut stride = 1i64;
    for d in (0..index.len()).rev() {
        if sizes[d] != 1 {
            let term = if stride == 1 { index[d] } else { cg.b.build_int_nsw_mul(index[d], cg.const_i64(stride), "")? };
            acc = cg.b.build_int_nsw_add(acc, term, "")?;
        }
        stride *= sizes[d];
    }
    Ok(acc)
}

/// The index of row-major position `linear` in an array of `sizes`.
pub fn delinearize<'ctx>(cg: &Codegen<'ctx>, linear: IntValue<'ctx>, sizes: &[i64]) -> Result<Index<'ctx>> {
    let mut dims = vec![cg.const_i64(0); sizes.len()];
    let mut stride = 1i64;
    for d in (0..sizes.len()).rev() {
        if sizes[d] != 1 {
            let q = if stride == 1 { linear } else { cg.b.build_int_unsigned_div(linear, cg.const_i64(stride), "")? };
            let is_major = sizes[..d].iter().all(|&s| s == 1);
            dims[d] = if is_major { q } else { cg.b.build_int_unsigned_rem(q, cg.const_i64(sizes[d]), "")? };
        }
        stride *= sizes[d];
    }
    Ok(Index { dims, linear: Some(linear) })
}
