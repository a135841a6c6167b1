//! dot (dot_general): batch, contracting and free dimensions in any position, operands and
//! result in any layout, mixed precision. Big dots of float and integer types run on the
//! blocked GEMM engine (`gemm`); the rest (small, complex, pred, tiled layouts) run a
//! straightforward loop nest that generates operand elements, so fused operands work too.

use super::dot_epilogue::Epilogue;
use super::gemm::accumulate::{emit_sum_per_element_finished, operand_type, Accumulator};
use super::gemm::dims::DotDims;
use super::gemm::loops::nested_loops;
use crate::codegen::index::Index;
use crate::codegen::kernel::KernelContext;
use crate::codegen::loops::{emit_loop_nest, outer_dimension};
use crate::error::{Error, Result};
use crate::hlo::InstrId;
use inkwell::types::BasicType;
use inkwell::values::IntValue;

/// Emits the kernel of a fusion or op whose root is a dot.
pub fn emit_dot(kc: &KernelContext) -> Result<i64> {
    emit(kc, None)
}

/// Emits the dot at `kc`'s root with its values finished by `epilogue` before they are stored
/// (see `dot_epilogue.rs`).
pub fn emit_dot_with_epilogue(kc: &KernelContext, epilogue: &Epilogue) -> Result<i64> {
    emit(kc, Some(epilogue))
}

fn emit(kc: &KernelContext, epilogue: Option<&Epilogue>) -> Result<i64> {
    let dot = kc.comp.get(kc.root);
    if kc.outputs.len() != 1 {
        return Err(Error::Unsupported(format!("{}: dot in a multi-output kernel", dot.name)));
    }
    let (lhs, rhs) = match dot.operands[..] {
        [l, r] => (l, r),
        _ => return Err(Error::Internal(format!("{}: dot takes two operands", dot.name))),
    };
    let dn = dot.attrs.dot_dimension_numbers().clone();
    let dims = DotDims::new(&dn, kc.comp.get(lhs).shape.dims(), kc.comp.get(rhs).shape.dims())
        .map_err(|e| Error::Unsupported(format!("{}: {e}", dot.name)))?;
    if dims.out_dims() != kc.outputs[0].shape.dims {
        return Err(Error::Internal(format!("{}: result dimensions do not match the dimension numbers", dot.name)));
    }
    if let Some(extent) = super::dot_strips::try_emit(kc, lhs, rhs, &dims, epilogue)? {
        return Ok(extent);
    }
    if let Some(extent) = super::gemm::dot::try_emit(kc, lhs, rhs, &dims, epilogue)? {
        return Ok(extent);
    }
    kc.cg.mark_generated_product();
    match epilogue {
        // `row_epilogue` admits only dots the GEMM engine takes.
        Some(epilogue) if epilogue.rows.is_some() => Err(Error::Internal(format!("{}: a whole-row epilogue off the GEMM engine", dot.name))),
        // The row kernel stores sums as it finishes them, in its own order; the per-element
        // loop finishes each through the epilogue.
        Some(epilogue) => emit_per_element(kc, lhs, rhs, &dims, Some(epilogue)),
        None => emit_naive(kc, lhs, rhs, &dims),
    }
}

/// Rows of the result up to this many elements accumulate in a stack buffer (see `emit_rows`).
const MAX_ROW_ELEMENTS: i64 = 4096;

/// Dots too small or too unusual for the GEMM engine. When the result's innermost physical
/// dimension has a few elements or more and the operand it comes from is contiguous along
/// it, a whole row accumulates at once (`emit_rows`); otherwise one element at a time, which
/// reads the operands along their contracting dimensions.
fn emit_naive(kc: &KernelContext, lhs: InstrId, rhs: InstrId, dims: &DotDims) -> Result<i64> {
    let out = &kc.outputs[0].shape;
    match out.layout_or_default().minor_to_major.first().map(|&d| d as usize) {
        Some(d) if (2..=MAX_ROW_ELEMENTS).contains(&out.dims[d]) && row_operand_contiguous(kc, lhs, rhs, dims, d) => {
            emit_rows(kc, lhs, rhs, dims, d)
        }
        _ => emit_per_element(kc, lhs, rhs, dims, None),
    }
}

/// Whether the operand that result dimension `d` indexes (a free dimension of one operand)
/// has that dimension innermost in memory, so a row walks it with stride one.
fn row_operand_contiguous(kc: &KernelContext, lhs: InstrId, rhs: InstrId, dims: &DotDims, d: usize) -> bool {
    let (_, gm, gn) = dims.out_groups();
    let (operand, dim) = if let Some(i) = gn.iter().position(|&o| o == d) {
        (rhs, dims.rhs_free[i])
    } else if let Some(i) = gm.iter().position(|&o| o == d) {
        (lhs, dims.lhs_free[i])
    } else {
        return false;
    };
    let shape = &kc.comp.get(operand).shape;
    shape.as_array().is_some_and(|a| a.layout_or_default().minor_to_major.first() == Some(&(dim as i64)))
}

/// The operand indices that multiply into result element `out` at contracting index `k`.
fn operand_indices<'ctx>(kc: &KernelContext<'_, 'ctx>, lhs: InstrId, rhs: InstrId, dims: &DotDims, out: &[IntValue<'ctx>], k: &[IntValue<'ctx>]) -> (Index<'ctx>, Index<'ctx>) {
    let zero = kc.cg.const_i64(0);
    let mut li = vec![zero; kc.comp.get(lhs).shape.rank()];
    let mut ri = vec![zero; kc.comp.get(rhs).shape.rank()];
    let (gb, gm, gn) = dims.out_groups();
    for (i, &o) in gb.iter().enumerate() {
        li[dims.lhs_batch[i]] = out[o];
        ri[dims.rhs_batch[i]] = out[o];
    }
    for (i, &o) in gm.iter().enumerate() {
        li[dims.lhs_free[i]] = out[o];
    }
    for (i, &o) in gn.iter().enumerate() {
        ri[dims.rhs_free[i]] = out[o];
    }
    for (i, &kv) in k.iter().enumerate() {
        li[dims.lhs_contracting[i]] = kv;
        ri[dims.rhs_contracting[i]] = kv;
    }
    (Index::new(li), Index::new(ri))
}

/// A row of the result (its innermost physical dimension `minor`) at a time: the row's sums
/// live in a stack buffer, and for each contracting index the products are added across the
/// row. The row's elements are independent, so the inner loop vectorizes (a matrix-vector
/// product no longer waits on one add chain per element), and each element still sums its
/// products in contracting order from zero, so the results are the per-element ones exactly.
fn emit_rows<'ctx>(kc: &KernelContext<'_, 'ctx>, lhs: InstrId, rhs: InstrId, dims: &DotDims, minor: usize) -> Result<i64> {
    let cg = kc.cg;
    let out = &kc.outputs[0];
    let acc = Accumulator::new(out.element_type())?;
    let lhs_type = operand_type(kc, lhs)?;
    let rhs_type = operand_type(kc, rhs)?;
    let layout = out.shape.layout_or_default();
    let n = out.shape.dims[minor];
    let mut rows = out.shape.dims.clone();
    rows[minor] = 1;
    let extent = outer_dimension(&rows, &layout).map(|d| rows[d]).unwrap_or(1);
    let acc_type = acc.llvm_type(cg);
    let row_type = acc_type.array_type(n as u32);
    let mut e = kc.elemental();
    emit_loop_nest(cg, "dot.row", &rows, &layout, Some((kc.begin, kc.end)), |row| {
        e.scoped(|e| {
            let buf = cg.entry_alloca(row_type.into(), "dot.row.acc")?;
            let at = |j: IntValue<'ctx>| cg.gep(acc_type, buf, j);
            let element = |j: IntValue<'ctx>| {
                let mut index = row.dims.clone();
                index[minor] = j;
                index
            };
            nested_loops(cg, "dot.zero", &[n], &mut |j| {
                cg.b.build_store(at(j[0])?, acc.zero(cg)?)?;
                Ok(())
            })?;
            nested_loops(cg, "dot.k", &dims.k_sizes, &mut |k| {
                nested_loops(cg, "dot.j", &[n], &mut |j| {
                    e.scoped(|e| {
                        let (li, ri) = operand_indices(kc, lhs, rhs, dims, &element(j[0]), k);
                        acc.add_product(e, at(j[0])?, (lhs, li, lhs_type), (rhs, ri, rhs_type))
                    })
                })
            })?;
            nested_loops(cg, "dot.store", &[n], &mut |j| {
                let total = cg.b.build_load(acc_type, at(j[0])?, "")?;
                out.store(cg, &Index::new(element(j[0])), acc.finish(e, total)?)
            })
        })
    })?;
    Ok(extent.max(1))
}

/// One output element at a time: the sum over the contracting dimensions, in the result's
/// physical order (finished by `epilogue` if any); the outermost dimension is the parallel one.
fn emit_per_element(kc: &KernelContext, lhs: InstrId, rhs: InstrId, dims: &DotDims, epilogue: Option<&Epilogue>) -> Result<i64> {
    let lhs_type = operand_type(kc, lhs)?;
    let rhs_type = operand_type(kc, rhs)?;
    emit_sum_per_element_finished(
        kc,
        "dot",
        |e, acc, index, slot| {
            nested_loops(kc.cg, "dot.k", &dims.k_sizes, &mut |k| {
                e.scoped(|e| {
                    let (li, ri) = operand_indices(kc, lhs, rhs, dims, &index.dims, k);
                    acc.add_product(e, slot, (lhs, li, lhs_type), (rhs, ri, rhs_type))
                })
            })
        },
        |e, index, v| match epilogue {
            Some(ep) => ep.finish_value(e, index, v),
            None => Ok(v),
        },
    )
}
