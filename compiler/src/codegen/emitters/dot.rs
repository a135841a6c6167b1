//! dot (dot_general): batch, contracting and free dimensions in any position, operands and
//! result in any layout, mixed precision. Big dots of float and integer types run on the
//! blocked GEMM engine (`gemm`); the rest (small, complex, pred, tiled layouts) run a
//! straightforward loop nest that generates operand elements, so fused operands work too.

use super::gemm::accumulate::{emit_sum_per_element, operand_type};
use super::gemm::dims::DotDims;
use super::gemm::loops::nested_loops;
use crate::codegen::index::Index;
use crate::codegen::kernel::KernelContext;
use crate::error::{Error, Result};
use crate::hlo::InstrId;

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
    let lhs_type = operand_type(kc, lhs)?;
    let rhs_type = operand_type(kc, rhs)?;
    let lhs_rank = kc.comp.get(lhs).shape.rank();
    let rhs_rank = kc.comp.get(rhs).shape.rank();
    let (gb, gm, gn) = dims.out_groups();
    emit_sum_per_element(kc, "dot", |e, acc, index, slot| {
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
        })
    })
}
