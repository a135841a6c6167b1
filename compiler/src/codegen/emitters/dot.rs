//! dot (dot_general): batch, contracting and free dimensions in any position, operands and
//! result in any layout, mixed precision. Big dots of float and integer types run on the
//! blocked GEMM engine (`gemm`); the rest (small, complex, pred, tiled layouts) run a
//! straightforward loop nest that generates operand elements, so fused operands work too.

use super::gemm::accumulate::Accumulator;
use super::gemm::dims::DotDims;
use super::gemm::loops::nested_loops;
use crate::codegen::index::Index;
use crate::codegen::kernel::KernelContext;
use crate::codegen::loops::{emit_loop_nest, outer_dimension};
use crate::error::{Error, Result};
use crate::hlo::InstrId;
use hlojit_runtime::ElementType;

/// Emits the kernel of a fusion or op whose root is a dot.
pub fn emit_dot(kc: &KernelContext) -> Result<i64> {
    let dot = kc.comp.get(kc.root);
    if kc.outputs.len() != 1 {
        return Err(Error::Unsupported(format!("{}: dot in a multi-output kernel", dot.name)));
    }
    let (lhs, rhs) = match dot.operands[..] {
        [l, r] => (l, r),
        _ => return Err(Error::Internal(format!("{}: dot takes two operands", dot.name))),
    };
    let dn = dot.attrs.dot_dims.clone().unwrap_or_default();
    let dims = DotDims::new(&dn, kc.comp.get(lhs).shape.dims(), kc.comp.get(rhs).shape.dims())
        .map_err(|e| Error::Unsupported(format!("{}: {e}", dot.name)))?;
    if dims.out_dims() != kc.outputs[0].shape.dims {
        return Err(Error::Internal(format!("{}: result dimensions do not match the dimension numbers", dot.name)));
    }
    if let Some(extent) = super::gemm::dot::try_emit(kc, lhs, rhs, &dims)? {
        return Ok(extent);
    }
    emit_naive(kc, lhs, rhs, &dims)
}

/// One output element at a time: the sum over the contracting dimensions, in the result's
/// physical order; the outermost dimension is the parallel one.
fn emit_naive(kc: &KernelContext, lhs: InstrId, rhs: InstrId, dims: &DotDims) -> Result<i64> {
    let cg = kc.cg;
    let out = &kc.outputs[0];
    let acc = Accumulator::new(out.element_type())?;
    let lhs_type = element_type(kc, lhs)?;
    let rhs_type = element_type(kc, rhs)?;
    let lhs_rank = kc.comp.get(lhs).shape.rank();
    let rhs_rank = kc.comp.get(rhs).shape.rank();
    let out_dims = out.shape.dims.clone();
    let layout = out.shape.layout_or_default();
    let extent = outer_dimension(&out_dims, &layout).map(|d| out_dims[d]).unwrap_or(1);
    let (gb, gm, gn) = dims.out_groups();
    let mut e = kc.elemental();
    let range = Some((kc.begin, kc.end)).filter(|_| !out_dims.is_empty());
    emit_loop_nest(cg, "dot", &out_dims, &layout, range, |index| {
        e.scoped(|e| {
            let zero = cg.const_i64(0);
            let mut li = vec![zero; lhs_rank];
            let mut ri = vec![zero; rhs_rank];
            for (i, &o) in gb.iter().enumerate() {
                li[dims.lhs_batch[i]] = index.dims[o];
                ri[dims.rhs_batch[i]] = index.dims[o];
            }
            for (i, &o) in gm.iter().enumerate() {
                li[dims.lhs_free[i]] = index.dims[o];
            }
            for (i, &o) in gn.iter().enumerate() {
                ri[dims.rhs_free[i]] = index.dims[o];
            }
            let slot = cg.entry_alloca(acc.llvm_type(cg), "dot.acc")?;
            cg.b.build_store(slot, acc.zero(cg)?)?;
            nested_loops(cg, "dot.k", &dims.k_sizes, &mut |k| {
                e.scoped(|e| {
                    let mut li = li.clone();
                    let mut ri = ri.clone();
                    for (i, &kv) in k.iter().enumerate() {
                        li[dims.lhs_contracting[i]] = kv;
                        ri[dims.rhs_contracting[i]] = kv;
                    }
                    acc.add_product(e, slot, (lhs, Index::new(li), lhs_type), (rhs, Index::new(ri), rhs_type))
                })
            })?;
            let sum = cg.b.build_load(acc.llvm_type(cg), slot, "")?;
            out.store(cg, index, acc.finish(e, sum)?)
        })
    })?;
    Ok(extent.max(1))
}

fn element_type(kc: &KernelContext, id: InstrId) -> Result<ElementType> {
    let inst = kc.comp.get(id);
    inst.shape.element_type().ok_or_else(|| Error::Internal(format!("{}: dot operand is not an array", inst.name)))
}
