//! Loop helpers shared by the dot and convolution emitters.

use crate::codegen::context::Codegen;
use crate::codegen::loops::for_loop;
use crate::error::Result;
use inkwell::values::IntValue;

/// Emits one loop per entry of `sizes` (outermost first; loops of size 1 are left out and
/// their index is 0) and calls `body` with the indices in the innermost body.
pub fn nested_loops<'ctx>(
    cg: &Codegen<'ctx>,
    name: &str,
    sizes: &[i64],
    body: &mut dyn FnMut(&[IntValue<'ctx>]) -> Result<()>,
) -> Result<()> {
    let mut idx = Vec::with_capacity(sizes.len());
    nest(cg, name, sizes, &mut idx, body)
}

fn nest<'ctx>(
    cg: &Codegen<'ctx>,
    name: &str,
    sizes: &[i64],
    idx: &mut Vec<IntValue<'ctx>>,
    body: &mut dyn FnMut(&[IntValue<'ctx>]) -> Result<()>,
) -> Result<()> {
    let d = idx.len();
    if d == sizes.len() {
        return body(idx);
    }
    if sizes[d] == 1 {
        idx.push(cg.const_i64(0));
        let r = nest(cg, name, sizes, idx, body);
        idx.pop();
        return r;
    }
    for_loop(cg, &format!("{name}.{d}"), cg.const_i64(0), cg.const_i64(sizes[d]), |i| {
        idx.push(i);
        let r = nest(cg, name, sizes, idx, body);
        idx.pop();
        r
    })
}
