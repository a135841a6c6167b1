//! Full reductions (no kept dimension larger than 1) of large operands with reassociable
//! reducers. The operand is cut into a fixed number of chunks along its outermost reduced
//! dimension; a helper function computes each chunk's partial results, starting from the
//! reducer's identity, on the thread pool; the kernel then combines the init value with the
//! partials in chunk order. The chunk count does not depend on the number of threads, so the
//! result does not either.

use super::Plan;
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::codegen::array::IrArray;
use crate::codegen::context::Codegen;
use crate::codegen::elemental::{Elemental, Input, Val};
use crate::codegen::index::Index;
use crate::codegen::kernel::KernelContext;
use crate::codegen::loops::for_loop;
use crate::codegen::reducer::{identity, loop_nest, Accumulators, LoopDim};
use crate::error::{Error, Result};
use crate::hlo::InstrId;
use hlojit_runtime::ElementType;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicValueEnum, PointerValue};

/// Operands smaller than this are reduced on the calling thread.
const MIN_ELEMENTS: i64 = 1 << 18;
/// Chunks of the operand, each reduced to one partial result.
const CHUNKS: i64 = 64;

/// Whether the plan's reduction may be split into partial results.
pub(super) fn applies(p: &Plan) -> bool {
    p.elementwise.is_empty()
        && p.dims.iter().product::<i64>() >= MIN_ELEMENTS
        && p.groups.iter().all(|g| g.reducer.reassociate && g.reducer.op.is_some())
}

/// Emits the split reduction; `inner` are the operand's dimensions of size > 1 in loop order.
pub(super) fn emit<'a, 'ctx>(
    kc: &KernelContext<'a, 'ctx>,
    mut e: Elemental<'a, 'ctx>,
    p: &Plan,
    inner: &[usize],
) -> Result<i64> {
    let cg = kc.cg;
    let Some((&chunked, rest)) = inner.split_first() else {
        return Err(Error::Internal("split reduction without a dimension".into()));
    };
    let chunks = CHUNKS.min(p.dims[chunked]);
    let types: Vec<Vec<ElementType>> = p.groups.iter().map(|g| g.reducer_types(&e)).collect::<Result<_>>()?;
    let flat_types: Vec<ElementType> = types.iter().flatten().copied().collect();

    // The helper's table: the kernel's input buffers and spilled scalars, then one partials
    // array per accumulator.
    let mut bound: Vec<(InstrId, Input<'ctx>)> = kc.bindings.iter().map(|(k, v)| (*k, v.clone())).collect();
    bound.sort_by_key(|(k, _)| *k);
    let mut inputs = Vec::new();
    for (_, input) in &bound {
        collect_pointers(cg, input, &mut inputs)?;
    }
    let partials: Vec<(PointerValue, BasicTypeEnum)> = flat_types
        .iter()
        .map(|&t| {
            let ty = cg.value_type(t);
            Ok((cg.entry_alloca(array_of(ty, chunks)?, "partials")?, ty))
        })
        .collect::<Result<_>>()?;
    let slots = inputs.len() + partials.len();
    let table = cg.entry_alloca(cg.ptr().array_type(slots as u32).into(), "split.table")?;
    for (i, ptr) in inputs.iter().copied().chain(partials.iter().map(|(p, _)| *p)).enumerate() {
        let slot = cg.gep(cg.ptr().into(), table, cg.const_i64(i as i64))?;
        cg.b.build_store(slot, ptr)?;
    }

    // The helper: void chunks(ptr table, i64 begin, i64 end).
    let saved = cg.b.get_insert_block();
    let name = format!("{}.chunks", cg.function().get_name().to_string_lossy());
    let fn_type = cg.fn_type(None, &[cg.ptr().into(), cg.i64().into(), cg.i64().into()]);
    let helper = cg.add_function(&name, fn_type, false);
    cg.b.position_at_end(cg.llvm.append_basic_block(helper, "entry"));
    let h_table = helper.get_nth_param(0).expect("table").into_pointer_value();
    let (h_begin, h_end) = (
        helper.get_nth_param(1).expect("begin").into_int_value(),
        helper.get_nth_param(2).expect("end").into_int_value(),
    );
    let loaded: Vec<PointerValue> = (0..slots)
        .map(|i| {
            let slot = cg.gep(cg.ptr().into(), h_table, cg.const_i64(i as i64))?;
            Ok(cg.b.build_load(cg.ptr(), slot, "")?.into_pointer_value())
        })
        .collect::<Result<_>>()?;
    let mut ptrs = loaded[..inputs.len()].iter().copied();
    let bindings = bound.iter().map(|(k, v)| Ok((*k, rebind(cg, v, &mut ptrs)?))).collect::<Result<_>>()?;
    let h_partials = &loaded[inputs.len()..];
    let mut h = Elemental::with_bindings(cg, kc.module, kc.comp, bindings);
    let accs: Vec<Accumulators> = types.iter().map(|t| Accumulators::new(cg, t)).collect::<Result<_>>()?;
    let identities: Vec<Vec<BasicValueEnum>> = p
        .groups
        .iter()
        .zip(&types)
        .map(|(g, ts)| {
            let op = g.reducer.op.ok_or_else(|| Error::Internal("split reduction of a generic reducer".into()))?;
            ts.iter()
                .map(|&t| identity(cg, op, t).ok_or_else(|| Error::Unsupported(format!("identity of {op} on {t}"))))
                .collect()
        })
        .collect::<Result<_>>()?;
    let size = cg.const_i64(p.dims[chunked]);
    let n = cg.const_i64(chunks);
    for_loop(cg, "chunk", h_begin, h_end, |c| {
        let lo = cg.b.build_int_signed_div(cg.b.build_int_nsw_mul(c, size, "")?, n, "")?;
        let next = cg.b.build_int_nsw_add(c, cg.const_i64(1), "")?;
        let hi = cg.b.build_int_signed_div(cg.b.build_int_nsw_mul(next, size, "")?, n, "")?;
        let mut loops = vec![LoopDim { dim: chunked, start: lo, end: hi }];
        loops.extend(rest.iter().map(|&d| LoopDim::full(cg, d, p.dims[d])));
        for (acc, id) in accs.iter().zip(&identities) {
            acc.store(cg, id)?;
        }
        h.scoped(|h| {
            loop_nest(cg, "chunk.reduce", &loops, &vec![cg.const_i64(0); p.dims.len()], |idx| {
                for (g, acc) in p.groups.iter().zip(&accs) {
                    let xs = g.inputs.iter().map(|&x| h.gen_scalar(x, idx)).collect::<Result<Vec<_>>>()?;
                    let r = g.reducer.apply(h, acc.load(cg)?, xs)?;
                    acc.store(cg, &r)?;
                }
                Ok(())
            })
        })?;
        let values: Vec<BasicValueEnum> = accs.iter().map(|a| a.load(cg)).collect::<Result<Vec<_>>>()?.concat();
        for ((v, &base), (_, ty)) in values.iter().zip(h_partials).zip(&partials) {
            let at = cg.gep(*ty, base, c)?;
            cg.b.build_store(at, *v)?;
        }
        Ok(())
    })?;
    cg.b.build_return(None)?;
    if let Some(bb) = saved {
        cg.b.position_at_end(bb);
    }

    // Back in the kernel: run the chunks, then fold the partials into the init values.
    let pf = cg.runtime(RuntimeFunction::ParallelFor)?;
    let helper_ptr = helper.as_global_value().as_pointer_value();
    cg.call_void(pf, &[helper_ptr.into(), table.into(), n.into(), cg.const_i64(1).into()])?;
    let out_accs: Vec<Accumulators> = types.iter().map(|t| Accumulators::new(cg, t)).collect::<Result<_>>()?;
    let inits: Vec<Vec<BasicValueEnum>> = p.groups.iter().map(|g| e.gen_inits(&g.inits)).collect::<Result<_>>()?;
    for (acc, init) in out_accs.iter().zip(&inits) {
        acc.store(cg, init)?;
    }
    for_loop(cg, "combine", cg.const_i64(0), n, |c| {
        let mut k = 0;
        for (g, acc) in p.groups.iter().zip(&out_accs) {
            let mut xs = Vec::with_capacity(acc.len());
            for _ in 0..acc.len() {
                let (base, ty) = partials[k];
                xs.push(cg.b.build_load(ty, cg.gep(ty, base, c)?, "")?);
                k += 1;
            }
            let r = g.reducer.apply(&e, acc.load(cg)?, xs)?;
            acc.store(cg, &r)?;
        }
        Ok(())
    })?;
    // A NaN result is computed again in order, on this thread (see
    // `Reducer::redo_in_order_if_nan`).
    let all: Vec<LoopDim> = inner.iter().map(|&d| LoopDim::full(cg, d, p.dims[d])).collect();
    for ((g, acc), init) in p.groups.iter().zip(&out_accs).zip(&inits) {
        g.reducer.redo_in_order_if_nan(cg, acc, init, |in_order| {
            e.scoped(|e| {
                loop_nest(cg, "reduce.in_order", &all, &vec![cg.const_i64(0); p.dims.len()], |idx| {
                    let xs = g.inputs.iter().map(|&x| e.gen_scalar(x, idx)).collect::<Result<Vec<_>>>()?;
                    let r = in_order.apply(e, acc.load(cg)?, xs)?;
                    acc.store(cg, &r)
                })
            })
        })?;
    }
    for (g, acc) in p.groups.iter().zip(&out_accs) {
        for (&o, v) in g.outputs.iter().zip(acc.load(cg)?) {
            let out = &kc.outputs[o];
            let zero = Index::new(vec![cg.const_i64(0); out.shape.dims.len()]);
            out.store(cg, &zero, v)?;
        }
    }
    Ok(1)
}

fn array_of<'ctx>(ty: BasicTypeEnum<'ctx>, n: i64) -> Result<BasicTypeEnum<'ctx>> {
    use inkwell::types::BasicType;
    Ok(ty.array_type(n as u32).as_basic_type_enum())
}

/// The pointers the helper needs for `input`: its arrays, and its scalars (integer scalar
/// inputs are read once at the kernel's entry, in a function the helper cannot see) spilled to
/// the stack.
fn collect_pointers<'ctx>(cg: &Codegen<'ctx>, input: &Input<'ctx>, out: &mut Vec<PointerValue<'ctx>>) -> Result<()> {
    match input {
        Input::Array(a) => out.push(a.ptr),
        Input::Tuple(parts) => {
            for p in parts {
                collect_pointers(cg, p, out)?;
            }
        }
        Input::Value(v) => {
            let v = v.scalar()?;
            let spill = cg.entry_alloca(v.get_type(), "split.scalar")?;
            cg.b.build_store(spill, v)?;
            out.push(spill);
        }
    }
    Ok(())
}

/// `input` with its arrays' pointers replaced and its scalars read back, in `collect_pointers`
/// order.
fn rebind<'ctx>(cg: &Codegen<'ctx>, input: &Input<'ctx>, ptrs: &mut impl Iterator<Item = PointerValue<'ctx>>) -> Result<Input<'ctx>> {
    Ok(match input {
        Input::Array(a) => {
            let ptr = ptrs.next().ok_or_else(|| Error::Internal("split reduction: missing buffer".into()))?;
            Input::Array(IrArray { ptr, ..a.clone() })
        }
        Input::Tuple(parts) => Input::Tuple(parts.iter().map(|p| rebind(cg, p, ptrs)).collect::<Result<_>>()?),
        Input::Value(v) => {
            let ptr = ptrs.next().ok_or_else(|| Error::Internal("split reduction: missing scalar".into()))?;
            Input::Value(Val::Scalar(cg.b.build_load(v.scalar()?.get_type(), ptr, "")?))
        }
    })
}
