//! Kernels whose root is a reduce-window (or a tuple holding one): every output element runs
//! its own loop over the window (see the elemental generator). Variadic reduce-windows have
//! tuple-shaped results, which the generic loop kernel does not store; this one does.

use crate::codegen::elemental::Elemental;
use crate::codegen::kernel::KernelContext;
use crate::codegen::loops::{emit_loop_nest, outer_dimension};
use crate::error::{Error, Result};
use crate::hlo::{InstrId, Opcode};
use inkwell::values::IntValue;

/// Emits a kernel whose hero is a reduce-window; returns the parallel extent.
pub fn emit(kc: &KernelContext) -> Result<i64> {
    let root = kc.comp.get(kc.root);
    let values: Vec<InstrId> = if root.opcode == Opcode::Tuple { root.operands.clone() } else { vec![kc.root] };
    let leaves: usize = values.iter().map(|&v| kc.comp.get(v).shape.array_leaves().len()).sum();
    if leaves != kc.outputs.len() {
        return Err(Error::Internal(format!("{}: {leaves} result leaves for {} buffers", root.name, kc.outputs.len())));
    }
    emit_per_element(kc, kc.elemental(), &values)
}

/// Any mix of outputs, each element computed on its own by the elemental generators (a reduce
/// or reduce-window runs its accumulation loop per output element). Outputs of one shape share
/// one loop nest, split across tasks along its outer dimension.
pub(super) fn emit_per_element<'a, 'ctx>(
    kc: &KernelContext<'a, 'ctx>,
    mut e: Elemental<'a, 'ctx>,
    values: &[InstrId],
) -> Result<i64> {
    let cg = kc.cg;
    let mut slices = Vec::with_capacity(values.len());
    let mut leaf = 0;
    for &v in values {
        let n = kc.comp.get(v).shape.array_leaves().len();
        slices.push((v, leaf..leaf + n));
        leaf += n;
    }
    let shape_of = |r: &std::ops::Range<usize>| {
        kc.outputs.get(r.start).map(|o| (o.shape.dims.clone(), o.shape.layout_or_default()))
    };
    let first = slices.iter().find_map(|(_, r)| shape_of(r));
    let uniform = slices.iter().all(|(_, r)| r.is_empty() || shape_of(r) == first);
    kc.work_elements.set(Some(values.iter().map(|&v| work(kc, v)).sum()));

    let store_all = |e: &mut Elemental<'a, 'ctx>,
                     group: &[(InstrId, std::ops::Range<usize>)],
                     dims: &[i64],
                     layout: &hlojit_runtime::Layout,
                     range: Option<(IntValue<'ctx>, IntValue<'ctx>)>| {
        e.scoped(|e| {
            emit_loop_nest(cg, "elements", dims, layout, range, |idx| {
                for (v, r) in group {
                    let vals = e.gen(*v, idx)?.flatten();
                    for (out, x) in kc.outputs[r.clone()].iter().zip(vals) {
                        out.store(cg, idx, x)?;
                    }
                }
                Ok(())
            })
        })
    };
    match first {
        Some((dims, layout)) if uniform => {
            let range = (!dims.is_empty()).then_some((kc.begin, kc.end));
            store_all(&mut e, &slices, &dims, &layout, range)?;
            Ok(outer_dimension(&dims, &layout).map(|d| dims[d]).unwrap_or(1).max(1))
        }
        _ => {
            for s in &slices {
                if let Some((dims, layout)) = shape_of(&s.1) {
                    store_all(&mut e, std::slice::from_ref(s), &dims, &layout, None)?;
                }
            }
            Ok(1)
        }
    }
}

/// Elements an output costs: its size times the elements folded into each.
fn work(kc: &KernelContext, v: InstrId) -> i64 {
    let inst = kc.comp.get(v);
    let outputs: i64 = inst.shape.array_leaves().first().map(|a| a.element_count()).unwrap_or(0);
    match inst.opcode {
        Opcode::ReduceWindow => outputs * inst.attrs.window_dims().iter().map(|w| w.size.max(1)).product::<i64>(),
        Opcode::Reduce => {
            inst.operands.first().map(|&o| kc.comp.get(o).shape.dims().iter().product::<i64>()).unwrap_or(outputs)
        }
        _ => outputs,
    }
}
