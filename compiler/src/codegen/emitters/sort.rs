//! Sort (variadic, along any dimension) and the sorting engine top-k shares. A kernel task
//! owns a range of rows (1-D slices along the sort dimension); per row it either
//!
//! - computes an unsigned key per element when the comparator is a recognised key order
//!   (see `sort_key`), has the runtime sort the keys (radix sort; a partial selection for
//!   top-k) and gathers every operand through the resulting permutation, or
//! - copies the row of every operand into scratch buffers and has the runtime run a stable
//!   merge sort of positions with the comparator, emitted as a function
//!   `i32 cmp(ptr buffers, i64 a, i64 b)`, then gathers the outputs through the permutation.
//!
//! Both are stable. A `sort` with `is_stable=false` always takes the comparator path with the
//! runtime's port of the unstable sort XLA:CPU runs (`std::sort`), so that ties come out in
//! XLA's order rather than in any valid one.

use super::sort_key::{recognize, KeyKind, KeyOrder};
use crate::codegen::runtime_abi::RuntimeFunction;
use crate::codegen::context::Codegen;
use crate::codegen::elemental::{Elemental, Input, Val};
use crate::codegen::index::{delinearize, Index};
use crate::codegen::kernel::KernelContext;
use crate::codegen::loops::for_loop;
use crate::error::{Error, Result};
use crate::hlo::{CompId, InstrId, Opcode};
use hlojit_runtime::ElementType;
use inkwell::values::{BasicValueEnum, FunctionValue, IntValue, PointerValue};

/// Where the elements being sorted come from.
#[derive(Clone, Copy, Debug)]
pub(super) enum Source {
    /// An operand of the root.
    Operand(InstrId),
    /// The element's position along the sort dimension (top-k's indices), of this type.
    Position(ElementType),
}

/// How rows are ordered.
#[derive(Clone, Debug)]
pub(super) enum Order {
    /// By a key of one source; `comparator` holds the key expression if there is one.
    Key { key: KeyOrder, comparator: Option<CompId> },
    /// By calling a comparator computation on (lhs, rhs) pairs of every source.
    Comparator(CompId),
}

/// One sort: sources of identical dims, sorted along `dim`; the first `k` elements of each
/// sorted row go to the kernel output of the same number.
pub(super) struct SortJob {
    pub sources: Vec<Source>,
    pub dims: Vec<i64>,
    pub dim: usize,
    pub k: i64,
    pub order: Order,
    /// Order ties as XLA:CPU's unstable sort does (needs `Order::Comparator`).
    pub unstable: bool,
}

/// Emits the kernel of a `sort` root.
pub fn emit(kc: &KernelContext) -> Result<i64> {
    let root = kc.comp.get(kc.root);
    if root.opcode != Opcode::Sort {
        return Err(Error::Unsupported(format!("{}: sort fused below the root", root.name)));
    }
    if let Some(extent) = super::sort_rows::try_emit(kc)? {
        return Ok(extent);
    }
    let comparator =
        root.to_apply().ok_or_else(|| Error::Internal(format!("{}: sort without a comparator", root.name)))?;
    let dims = kc.comp.get(root.operands[0]).shape.dims().to_vec();
    let dim = root.attrs.dimensions.as_ref().and_then(|d| d.first()).copied().unwrap_or(0) as usize;
    if dim >= dims.len() {
        return Err(Error::Internal(format!("{}: sort dimension {dim} out of range", root.name)));
    }
    let unstable = !root.attrs.is_stable;
    let order = match recognize(kc.module, comparator, root.operands.len()) {
        Some(key) if !unstable => Order::Key { key, comparator: Some(comparator) },
        _ => Order::Comparator(comparator),
    };
    let job = SortJob {
        sources: root.operands.iter().map(|&o| Source::Operand(o)).collect(),
        k: dims[dim],
        dims,
        dim,
        order,
        unstable,
    };
    emit_sort(kc, &job)
}

/// Emits `job`; returns the parallel extent (the number of rows).
pub(super) fn emit_sort<'ctx>(kc: &KernelContext<'_, 'ctx>, job: &SortJob) -> Result<i64> {
    let cg = kc.cg;
    if kc.outputs.len() != job.sources.len() {
        return Err(Error::Internal(format!("sort: {} outputs for {} operands", kc.outputs.len(), job.sources.len())));
    }
    let n = job.dims[job.dim];
    let row_dims: Vec<usize> = (0..job.dims.len()).filter(|&d| d != job.dim).collect();
    let row_sizes: Vec<i64> = row_dims.iter().map(|&d| job.dims[d]).collect();
    let rows: i64 = row_sizes.iter().product();
    if n == 0 || rows == 0 || job.k == 0 {
        return Ok(1);
    }
    let types: Vec<ElementType> = job.sources.iter().map(|s| source_type(kc, *s)).collect::<Result<_>>()?;
    let packed = matches!(&job.order, Order::Key { key, .. } if key.kind.bits() <= 32) && n <= u32::MAX as i64;

    // Scratch for one row: keys, positions, and (comparator path) a copy of every source.
    let mut bytes = 0i64;
    let mut reserve = |size: i64| {
        let at = bytes;
        bytes += (size + 63) / 64 * 64;
        at
    };
    let keys_at = reserve(n * 8);
    let perm_at = reserve(n * 8);
    let buf_at: Vec<i64> = match job.order {
        Order::Comparator(_) => types.iter().map(|t| reserve(n * t.byte_size() as i64)).collect(),
        Order::Key { .. } => Vec::new(),
    };
    let scratch = cg.scratch_alloc(bytes, "scratch")?;
    let keys = cg.byte_offset(scratch, keys_at)?;
    let perm = cg.byte_offset(scratch, perm_at)?;
    let bufs: Vec<PointerValue> = buf_at.iter().map(|&o| cg.byte_offset(scratch, o)).collect::<Result<_>>()?;

    let mut e = kc.elemental();
    for_loop(cg, "sort.row", kc.begin, kc.end, |r| {
        let row = delinearize(cg, r, &row_sizes)?.dims;
        let at = |i: IntValue<'ctx>| -> Index<'ctx> {
            let mut dims = Vec::with_capacity(job.dims.len());
            let mut rest = row.iter();
            for d in 0..job.dims.len() {
                dims.push(if d == job.dim { i } else { *rest.next().expect("a row dimension") });
            }
            Index::new(dims)
        };
        e.scoped(|e| match &job.order {
            Order::Key { key, comparator } => {
                for_loop(cg, "sort.key", cg.const_i64(0), cg.const_i64(n), |i| {
                    e.scoped(|e| {
                        let v = source_value(kc, e, job.sources[key.operand], &at(i), i)?;
                        let k = ordered_key(kc, key, *comparator, v)?;
                        let stored = if packed {
                            let hi = cg.b.build_left_shift(k, cg.i64().const_int(32, false), "")?;
                            cg.b.build_or(hi, i, "")?
                        } else {
                            k
                        };
                        cg.b.build_store(cg.gep(cg.i64().into(), keys, i)?, stored)?;
                        Ok(())
                    })
                })?;
                // Packed keys use the position buffer as the radix sort's scratch.
                let f = cg.runtime(if packed { RuntimeFunction::SortPackedKeys } else { RuntimeFunction::SortWideKeys })?;
                cg.call_void(f, &[keys.into(), perm.into(), cg.const_i64(n).into(), cg.const_i64(job.k).into()])?;
                for_loop(cg, "sort.out", cg.const_i64(0), cg.const_i64(job.k), |j| {
                    e.scoped(|e| {
                        let p = if packed {
                            let v = cg.b.build_load(cg.i64(), cg.gep(cg.i64().into(), keys, j)?, "")?.into_int_value();
                            cg.b.build_and(v, cg.i64().const_int(0xffff_ffff, false), "")?
                        } else {
                            cg.b.build_load(cg.i64(), cg.gep(cg.i64().into(), perm, j)?, "")?.into_int_value()
                        };
                        for (m, &s) in job.sources.iter().enumerate() {
                            let v = source_value(kc, e, s, &at(p), p)?;
                            kc.outputs[m].store(cg, &at(j), v.scalar()?)?;
                        }
                        Ok(())
                    })
                })
            }
            Order::Comparator(comparator) => {
                for_loop(cg, "sort.copy", cg.const_i64(0), cg.const_i64(n), |i| {
                    e.scoped(|e| {
                        for (m, &s) in job.sources.iter().enumerate() {
                            let v = source_value(kc, e, s, &at(i), i)?;
                            let dst = cg.gep(cg.memory_type(types[m]), bufs[m], i)?;
                            cg.store_element(types[m], dst, v.scalar()?)?;
                        }
                        Ok(())
                    })
                })?;
                let ctx = cg.entry_alloca(cg.ptr().array_type(bufs.len() as u32).into(), "sort.bufs")?;
                for (m, &b) in bufs.iter().enumerate() {
                    cg.b.build_store(cg.gep(cg.ptr().into(), ctx, cg.const_i64(m as i64))?, b)?;
                }
                let cmp = comparator_function(kc, *comparator, &types)?;
                let sort = if job.unstable { RuntimeFunction::SortUnstableByComparator } else { RuntimeFunction::SortByComparator };
                let f = cg.runtime(sort)?;
                let cmp_ptr = cmp.as_global_value().as_pointer_value();
                cg.call_void(f, &[perm.into(), cg.const_i64(n).into(), cmp_ptr.into(), ctx.into()])?;
                for_loop(cg, "sort.out", cg.const_i64(0), cg.const_i64(job.k), |j| {
                    let p = cg.b.build_load(cg.i64(), cg.gep(cg.i64().into(), perm, j)?, "")?.into_int_value();
                    for (m, &b) in bufs.iter().enumerate() {
                        let v = cg.load_element(types[m], cg.gep(cg.memory_type(types[m]), b, p)?)?;
                        kc.outputs[m].store(cg, &at(j), v)?;
                    }
                    Ok(())
                })
            }
        })
    })?;
    cg.scratch_free(scratch, bytes)?;
    Ok(rows.max(1))
}

fn source_type(kc: &KernelContext, s: Source) -> Result<ElementType> {
    match s {
        Source::Operand(id) => {
            kc.comp.get(id).shape.element_type().ok_or_else(|| Error::Internal("sort operand is not an array".into()))
        }
        Source::Position(t) => Ok(t),
    }
}

/// The element of source `s` at `index` (whose sort-dimension position is `position`).
fn source_value<'ctx>(
    kc: &KernelContext<'_, 'ctx>,
    e: &mut Elemental<'_, 'ctx>,
    s: Source,
    index: &Index<'ctx>,
    position: IntValue<'ctx>,
) -> Result<Val<'ctx>> {
    match s {
        Source::Operand(id) => e.gen(id, index),
        Source::Position(t) => {
            let ty = kc.cg.value_type(t).into_int_type();
            Ok(Val::Scalar(kc.cg.b.build_int_truncate_or_bit_cast(position, ty, "")?.into()))
        }
    }
}

/// The unsigned key (as i64, below 2^bits) of element `v` of the keyed operand: the key
/// expression, mapped so that unsigned order is the key order, inverted for descending.
fn ordered_key<'ctx>(
    kc: &KernelContext<'_, 'ctx>,
    key: &KeyOrder,
    comparator: Option<CompId>,
    v: Val<'ctx>,
) -> Result<IntValue<'ctx>> {
    let cg = kc.cg;
    let value = match (key.key, comparator) {
        (Some(expr), Some(comp)) => {
            let c = kc.module.computation(comp);
            let mut params = Vec::new();
            for p in c.parameters() {
                let number = c.get(p).attrs.parameter_number.unwrap_or(-1) as usize;
                if number == 2 * key.operand {
                    params.push(Input::Value(v.clone()));
                } else {
                    let t =
                        c.get(p).shape.element_type().ok_or_else(|| Error::Internal("comparator parameter".into()))?;
                    params.push(Input::Value(Val::Scalar(zero(cg, t)?)));
                }
            }
            // Parameters are bound by position in `parameters()` order, which is by number.
            let mut ke = Elemental::new(cg, kc.module, c, params)?;
            ke.gen_scalar(expr, &Index::scalar(cg))?
        }
        _ => v.scalar()?,
    };
    let bits = key.kind.bits();
    let k = to_ordered_bits(cg, key.kind, value)?;
    if key.descending {
        let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        return Ok(cg.b.build_xor(k, cg.i64().const_int(mask, false), "")?);
    }
    Ok(k)
}

/// Maps a key value to an i64 holding an unsigned number below 2^bits whose order is the key
/// kind's order.
fn to_ordered_bits<'ctx>(cg: &Codegen<'ctx>, kind: KeyKind, v: BasicValueEnum<'ctx>) -> Result<IntValue<'ctx>> {
    let t = kind.element_type();
    let bits = kind.bits();
    match kind {
        KeyKind::Unsigned(_) => Ok(cg.b.build_int_z_extend_or_bit_cast(v.into_int_value(), cg.i64(), "")?),
        KeyKind::Signed(_) => {
            let wide = cg.b.build_int_s_extend_or_bit_cast(v.into_int_value(), cg.i64(), "")?;
            // Adding 2^(bits-1) (flipping the sign bit at 64) maps signed order onto unsigned.
            let bias = 1u64 << (bits - 1);
            if bits >= 64 {
                Ok(cg.b.build_xor(wide, cg.i64().const_int(bias, false), "")?)
            } else {
                Ok(cg.b.build_int_add(wide, cg.i64().const_int(bias, false), "")?)
            }
        }
        KeyKind::FloatTotal(_) => {
            let int_ty = cg.int_type(bits);
            let raw = if t.is_native_float() {
                cg.b.build_bit_cast(v, int_ty, "")?.into_int_value()
            } else {
                cg.b.build_int_truncate_or_bit_cast(v.into_int_value(), int_ty, "")?
            };
            // Negative: all bits flipped; positive: the sign bit set.
            let sign = cg.b.build_right_shift(raw, int_ty.const_int((bits - 1) as u64, false), true, "")?;
            let flip = cg.b.build_or(sign, int_ty.const_int(1u64 << (bits - 1), false), "")?;
            let ordered = cg.b.build_xor(raw, flip, "")?;
            Ok(cg.b.build_int_z_extend_or_bit_cast(ordered, cg.i64(), "")?)
        }
    }
}

fn zero<'ctx>(cg: &Codegen<'ctx>, t: ElementType) -> Result<BasicValueEnum<'ctx>> {
    cg.const_from_bits(t, 0, 0)
}

/// Emits `i32 cmp(ptr buffers, i64 a, i64 b)`: the comparator applied to elements `a` (lhs)
/// and `b` (rhs) of each source's scratch row, `buffers` holding one pointer per source.
fn comparator_function<'ctx>(
    kc: &KernelContext<'_, 'ctx>,
    comp: CompId,
    types: &[ElementType],
) -> Result<FunctionValue<'ctx>> {
    let cg = kc.cg;
    let saved = cg.b.get_insert_block();
    let name = format!("{}.cmp", cg.function().get_name().to_string_lossy());
    let ty = cg.fn_type(Some(cg.i32().into()), &[cg.ptr().into(), cg.i64().into(), cg.i64().into()]);
    let f = cg.add_function(&name, ty, false);
    let entry = cg.llvm.append_basic_block(f, "entry");
    cg.b.position_at_end(entry);
    let ctx = f.get_nth_param(0).expect("ctx").into_pointer_value();
    let a = f.get_nth_param(1).expect("a").into_int_value();
    let b = f.get_nth_param(2).expect("b").into_int_value();
    let mut params = Vec::with_capacity(types.len() * 2);
    for (m, &t) in types.iter().enumerate() {
        let base =
            cg.b.build_load(cg.ptr(), cg.gep(cg.ptr().into(), ctx, cg.const_i64(m as i64))?, "")?.into_pointer_value();
        for i in [a, b] {
            let v = cg.load_element(t, cg.gep(cg.memory_type(t), base, i)?)?;
            params.push(Input::Value(Val::Scalar(v)));
        }
    }
    let c = kc.module.computation(comp);
    let mut e = Elemental::new(cg, kc.module, c, params)?;
    let less = e.gen_scalar(c.root, &Index::scalar(cg))?.into_int_value();
    let r = cg.b.build_int_z_extend(less, cg.i32(), "")?;
    cg.b.build_return(Some(&r))?;
    if let Some(bb) = saved {
        cg.b.position_at_end(bb);
    }
    Ok(f)
}
