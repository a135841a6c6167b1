//! Kernels whose root is a reduce, or a tuple of reduces over the same operand dimensions (a
//! multi-output fusion, possibly with elementwise outputs of the operand's dimensions).
//!
//! The operand is walked once, in its layout order (major to minor). Reduced dimensions at the
//! minor end (a "row" reduction: the innermost loops reduce contiguous memory) accumulate in
//! registers, and for a reassociable reducer LLVM vectorizes that loop with partial sums. When
//! a reduced dimension sits further out (a "column" reduction), the outputs are initialized
//! first and accumulated in memory with the kept minor dimensions innermost, so both the
//! operand's and the output's accesses run contiguous (and vectorize without reassociation:
//! every output element still sees its inputs in order); several rows are folded per load and
//! store of an output element. The most major kept dimension is the parallel one: tasks own
//! disjoint output elements (in a column reduction, page-sized blocks of them). A reduction
//! with no kept dimension is split into chunks with partial results (see `split`).

use crate::codegen::array::IrArray;
use crate::codegen::elemental::Elemental;
use crate::codegen::index::Index;
use crate::codegen::kernel::KernelContext;
use crate::codegen::loops::for_loop;
use crate::codegen::reducer::{loop_nest, major_to_minor_selected, Accumulators, LoopDim, Reducer, Variadic};
use crate::error::{Error, Result};
use crate::hlo::{InstrId, Opcode};
use inkwell::values::BasicValueEnum;

mod precompiled;
mod split;

/// Elements of the parallel dimension's block in a column reduction (a page of f32).
const COLUMN_BLOCK_ELEMENTS: i64 = 1024;
/// Rows a column reduction folds into each output element per load and store of it.
const COLUMN_UNROLL: i64 = 8;

/// One reduce among the kernel's outputs.
struct Group {
    inputs: Vec<InstrId>,
    inits: Vec<InstrId>,
    reducer: Reducer,
    /// Indices into the kernel's outputs, one per input.
    outputs: Vec<usize>,
}

/// The kernel's outputs as one walk over a common operand space.
struct Plan {
    dims: Vec<i64>,
    reduced: Vec<usize>,
    minor_to_major: Vec<i64>,
    groups: Vec<Group>,
    /// Outputs with the operand's dimensions, stored as the walk visits each element.
    elementwise: Vec<(InstrId, usize)>,
}

/// Emits a kernel whose hero is a reduce; returns the parallel extent.
pub fn emit(kc: &KernelContext) -> Result<i64> {
    let root = kc.comp.get(kc.root);
    let values: Vec<InstrId> = if root.opcode == Opcode::Tuple { root.operands.clone() } else { vec![kc.root] };
    let leaves: usize = values.iter().map(|&v| kc.comp.get(v).shape.array_leaves().len()).sum();
    if leaves != kc.outputs.len() {
        return Err(Error::Internal(format!("{}: {leaves} result leaves for {} buffers", root.name, kc.outputs.len())));
    }
    let e = kc.elemental();
    match plan(kc, &e, &values)? {
        Some(p) => match precompiled::emit(kc, &p)? {
            Some(extent) => Ok(extent),
            None => emit_plan(kc, e, &p),
        },
        None => super::reduce_window::emit_per_element(kc, e, &values),
    }
}

/// The common walk of `values`, if every one is a reduce of the same dimensions of operands
/// of the same dimensions and layout, or an elementwise output of those dimensions.
fn plan(kc: &KernelContext, e: &Elemental, values: &[InstrId]) -> Result<Option<Plan>> {
    let mut common: Option<(Vec<i64>, Vec<usize>, Vec<i64>)> = None;
    let mut groups = Vec::new();
    let mut pending_elementwise = Vec::new();
    let mut leaf = 0;
    for &v in values {
        let inst = kc.comp.get(v);
        let n = inst.shape.array_leaves().len();
        if inst.opcode == Opcode::Reduce {
            let var = Variadic::of(inst)?;
            let dims = e.dims(var.inputs[0]).to_vec();
            let mut reduced: Vec<usize> =
                inst.attrs.dims().iter().map(|&d| d as usize).collect();
            reduced.sort_unstable();
            let m2m = e.layout_of(var.inputs[0]).minor_to_major;
            let this = (dims, reduced, m2m);
            match &common {
                None => common = Some(this),
                Some(c) if *c == this => {}
                Some(_) => return Ok(None),
            }
            let comp =
                inst.to_apply().ok_or_else(|| Error::Internal(format!("{}: reduce without to_apply", inst.name)))?;
            groups.push(Group {
                reducer: Reducer::new(kc.module, comp, &var.types),
                inputs: var.inputs,
                inits: var.inits,
                outputs: (leaf..leaf + n).collect(),
            });
        } else if n == 1 && inst.shape.is_array() {
            pending_elementwise.push((v, leaf));
        } else {
            return Ok(None);
        }
        leaf += n;
    }
    let Some((dims, reduced, minor_to_major)) = common else { return Ok(None) };
    if pending_elementwise.iter().any(|&(v, _)| kc.comp.get(v).shape.dims() != dims.as_slice()) {
        return Ok(None);
    }
    Ok(Some(Plan { dims, reduced, minor_to_major, groups, elementwise: pending_elementwise }))
}

fn emit_plan<'a, 'ctx>(kc: &KernelContext<'a, 'ctx>, mut e: Elemental<'a, 'ctx>, p: &Plan) -> Result<i64> {
    let cg = kc.cg;
    let rank = p.dims.len();
    let is_reduced = |d: usize| p.reduced.contains(&d);
    let kept: Vec<usize> = (0..rank).filter(|&d| !is_reduced(d)).collect();
    kc.work_elements.set(Some(p.dims.iter().product::<i64>()));
    if kept.iter().any(|&d| p.dims[d] == 0) {
        return Ok(1); // no output elements
    }

    // Loop order: the operand's layout, major to minor; the reduced dimensions at the minor
    // end accumulate in registers.
    let order = major_to_minor_selected(&p.minor_to_major, &p.dims, |_| true);
    let split = order.iter().rposition(|&d| !is_reduced(d)).map(|i| i + 1).unwrap_or(0);
    let (outer, inner) = order.split_at(split);
    let column = outer.iter().any(|&d| is_reduced(d));
    let par = outer.iter().copied().find(|&d| !is_reduced(d));
    if par.is_none() && split::applies(p) {
        return split::emit(kc, e, p, inner);
    }
    // A task takes `block` consecutive indices of the parallel dimension. In a column
    // reduction each task walks every row of its block: a block of about a page per row keeps
    // those runs long enough for the prefetchers.
    let block = match par {
        Some(d) if column => {
            let after: i64 =
                order[order.iter().position(|&o| o == d).map_or(0, |i| i + 1)..].iter().map(|&o| p.dims[o]).product();
            (COLUMN_BLOCK_ELEMENTS / after.max(1)).clamp(1, p.dims[d].max(1))
        }
        _ => 1,
    };
    let (task_start, task_end) = if block == 1 {
        (kc.begin, kc.end)
    } else {
        let b = cg.const_i64(block);
        let start = cg.b.build_int_nsw_mul(kc.begin, b, "")?;
        let end = cg.b.build_int_nsw_mul(kc.end, b, "")?;
        let size = cg.const_i64(par.map_or(1, |d| p.dims[d]));
        let end = cg.call_intrinsic("llvm.smin", &[cg.i64().into()], &[end.into(), size.into()])?.into_int_value();
        (start, end)
    };
    let range = |d: usize| -> LoopDim<'ctx> {
        if Some(d) == par {
            LoopDim { dim: d, start: task_start, end: task_end }
        } else {
            LoopDim::full(cg, d, p.dims[d])
        }
    };
    let outer_loops: Vec<LoopDim> = outer.iter().map(|&d| range(d)).collect();
    let inner_loops: Vec<LoopDim> = inner.iter().map(|&d| LoopDim::full(cg, d, p.dims[d])).collect();
    let zero = vec![cg.const_i64(0); rank];
    let kept_index = |idx: &Index<'ctx>| Index::new(kept.iter().map(|&d| idx.dims[d]).collect());

    let inits: Vec<Vec<BasicValueEnum>> = p.groups.iter().map(|g| e.gen_inits(&g.inits)).collect::<Result<_>>()?;
    let accs: Vec<Accumulators> =
        p.groups.iter().map(|g| Accumulators::new(cg, &g.reducer_types(&e)?)).collect::<Result<_>>()?;
    let outputs = |g: &Group| -> Vec<&IrArray<'ctx>> { g.outputs.iter().map(|&o| &kc.outputs[o]).collect() };

    if column {
        // Every output element starts at its init value; the walk accumulates into memory.
        let out_dims: Vec<i64> = kept.iter().map(|&d| p.dims[d]).collect();
        let out_par = par.and_then(|d| kept.iter().position(|&k| k == d));
        let out_layout = kc.outputs[p.groups[0].outputs[0]].shape.layout_or_default();
        let out_order = major_to_minor_selected(&out_layout.minor_to_major, &out_dims, |_| true);
        let init_loops: Vec<LoopDim> = out_order
            .iter()
            .map(|&d| {
                if Some(d) == out_par {
                    LoopDim { dim: d, start: task_start, end: task_end }
                } else {
                    LoopDim::full(cg, d, out_dims[d])
                }
            })
            .collect();
        loop_nest(cg, "reduce.init", &init_loops, &vec![cg.const_i64(0); out_dims.len()], |idx| {
            for (g, init) in p.groups.iter().zip(&inits) {
                for (out, v) in outputs(g).into_iter().zip(init) {
                    out.store(cg, idx, *v)?;
                }
            }
            Ok(())
        })?;
    }

    // One visit: the accumulators of the output element shared by `indices` (operand indices
    // that differ only in reduced dimensions, in walk order) take each index's inner loops.
    // With no inner loop, a visit applies each reducer once per index: in order, so it takes
    // XLA's elementwise rule directly (see `Reducer::redo_in_order_if_nan`).
    let reducers: Vec<Reducer> =
        p.groups.iter().map(|g| if inner_loops.is_empty() { g.reducer.in_order() } else { g.reducer }).collect();
    let accumulate = |e: &mut Elemental<'a, 'ctx>, group: &Group, reducer: &Reducer, acc: &Accumulators<'ctx>, idx: &Index<'ctx>| {
        let xs = group.inputs.iter().map(|&x| e.gen_scalar(x, idx)).collect::<Result<Vec<_>>>()?;
        let r = reducer.apply(e, acc.load(cg)?, xs)?;
        acc.store(cg, &r)
    };
    let visit = |e: &mut Elemental<'a, 'ctx>, indices: &[Index<'ctx>]| -> Result<()> {
        let out_idx = kept_index(&indices[0]);
        let mut starts = Vec::with_capacity(p.groups.len());
        for (g, (acc, init)) in p.groups.iter().zip(accs.iter().zip(&inits)) {
            let start = if column {
                outputs(g).iter().map(|o| o.load(cg, &out_idx)).collect::<Result<Vec<_>>>()?
            } else {
                init.clone()
            };
            acc.store(cg, &start)?;
            starts.push(start);
        }
        for idx in indices {
            e.scoped(|e| {
                loop_nest(cg, "reduce.inner", &inner_loops, &idx.dims, |idx| {
                    for ((g, r), acc) in p.groups.iter().zip(&reducers).zip(&accs) {
                        accumulate(e, g, r, acc, idx)?;
                    }
                    for &(v, o) in &p.elementwise {
                        let x = e.gen_scalar(v, idx)?;
                        kc.outputs[o].store(cg, idx, x)?;
                    }
                    Ok(())
                })
            })?;
        }
        for ((g, r), (acc, start)) in p.groups.iter().zip(&reducers).zip(accs.iter().zip(&starts)) {
            r.redo_in_order_if_nan(cg, acc, start, |in_order| {
                for idx in indices {
                    e.scoped(|e| {
                        loop_nest(cg, "reduce.in_order", &inner_loops, &idx.dims, |idx| {
                            accumulate(e, g, in_order, acc, idx)
                        })
                    })?;
                }
                Ok(())
            })?;
        }
        for (g, acc) in p.groups.iter().zip(&accs) {
            for (out, v) in outputs(g).into_iter().zip(acc.load(cg)?) {
                out.store(cg, &out_idx, v)?;
            }
        }
        Ok(())
    };

    // A column reduction accumulating in memory takes COLUMN_UNROLL consecutive indices of
    // its innermost reduced dimension per load and store of the output (still in order).
    let unroll =
        outer.iter().rposition(|&d| is_reduced(d)).filter(|&i| inner.is_empty() && p.dims[outer[i]] >= COLUMN_UNROLL);
    match unroll {
        None => {
            e.scoped(|e| loop_nest(cg, "reduce", &outer_loops, &zero, |idx| visit(e, std::slice::from_ref(idx))))?
        }
        Some(ri) => {
            let r = outer[ri];
            let (pre, post) = (&outer_loops[..ri], &outer_loops[ri + 1..]);
            let steps = p.dims[r] / COLUMN_UNROLL;
            e.scoped(|e| {
                loop_nest(cg, "reduce", pre, &zero, |base| {
                    for_loop(cg, "reduce.rows", cg.const_i64(0), cg.const_i64(steps), |step| {
                        let r0 = cg.b.build_int_nsw_mul(step, cg.const_i64(COLUMN_UNROLL), "")?;
                        let mut at = base.dims.clone();
                        at[r] = r0;
                        e.scoped(|e| {
                            loop_nest(cg, "reduce.cols", post, &at, |idx| {
                                let indices = (0..COLUMN_UNROLL)
                                    .map(|u| {
                                        let mut dims = idx.dims.clone();
                                        dims[r] = cg.b.build_int_nsw_add(r0, cg.const_i64(u), "")?;
                                        Ok(Index::new(dims))
                                    })
                                    .collect::<Result<Vec<_>>>()?;
                                visit(e, &indices)
                            })
                        })
                    })?;
                    let rest = cg.const_i64(steps * COLUMN_UNROLL);
                    for_loop(cg, "reduce.rest", rest, cg.const_i64(p.dims[r]), |row| {
                        let mut at = base.dims.clone();
                        at[r] = row;
                        e.scoped(|e| loop_nest(cg, "reduce.cols", post, &at, |idx| visit(e, std::slice::from_ref(idx))))
                    })
                })
            })?
        }
    }
    Ok(par.map(|d| (p.dims[d] + block - 1) / block).unwrap_or(1).max(1))
}

impl Group {
    fn reducer_types(&self, e: &Elemental) -> Result<Vec<hlojit_runtime::ElementType>> {
        self.inputs.iter().map(|&i| e.element_type(i)).collect()
    }
}
