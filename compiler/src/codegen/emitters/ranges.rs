//! Loop nests over boxes of an index space whose bounds are run-time values: the update
//! region of a dynamic-update-slice, a task's share of a scatter or sort.

use crate::codegen::context::Codegen;
use crate::codegen::index::Index;
use crate::codegen::loops::Nest;
use crate::error::Result;
use inkwell::values::IntValue;

/// Half-open bounds of one dimension.
#[derive(Clone, Copy, Debug)]
pub struct Bounds<'ctx> {
    pub start: IntValue<'ctx>,
    pub end: IntValue<'ctx>,
}

impl<'ctx> Bounds<'ctx> {
    pub fn new(start: IntValue<'ctx>, end: IntValue<'ctx>) -> Self {
        Bounds { start, end }
    }

    /// `[0, size)`.
    pub fn full(cg: &Codegen<'ctx>, size: i64) -> Self {
        Bounds { start: cg.const_i64(0), end: cg.const_i64(size) }
    }

    /// Whether the range is known to hold exactly the index 0 (no loop needed).
    fn is_unit(&self) -> bool {
        self.start.get_sign_extended_constant() == Some(0) && self.end.get_sign_extended_constant() == Some(1)
    }
}

/// Emits loops over every index in `bounds` (one per dimension), the outermost over
/// `order[0]` (pass a layout's major-to-minor order for contiguous accesses), and calls
/// `body` once in the innermost loop. Empty ranges run no iterations.
pub fn box_loop<'ctx>(
    cg: &Codegen<'ctx>,
    name: &str,
    bounds: &[Bounds<'ctx>],
    order: &[usize],
    body: impl FnOnce(&Index<'ctx>) -> Result<()>,
) -> Result<()> {
    let mut nest = Nest::new(bounds.iter().map(|b| b.start).collect());
    for &d in order {
        if !bounds[d].is_unit() {
            nest.enter(cg, &format!("{name}.d{d}"), Some(d), bounds[d].start, bounds[d].end)?;
        }
    }
    nest.finish(cg, body)
}

/// `max(a, b)` and `min(a, b)` of i64 values.
pub fn smax<'ctx>(cg: &Codegen<'ctx>, a: IntValue<'ctx>, b: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
    Ok(cg.call_intrinsic("llvm.smax", &[cg.i64().into()], &[a.into(), b.into()])?.into_int_value())
}

pub fn smin<'ctx>(cg: &Codegen<'ctx>, a: IntValue<'ctx>, b: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
    Ok(cg.call_intrinsic("llvm.smin", &[cg.i64().into()], &[a.into(), b.into()])?.into_int_value())
}

/// Dimensions `0..rank` most major first in `layout` (the loop order for an array in it).
pub fn major_to_minor(layout: &hlojit_runtime::Layout) -> Vec<usize> {
    layout.major_to_minor().into_iter().map(|d| d as usize).collect()
}
