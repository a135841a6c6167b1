//! GEMM operands as matrices `[batch][rows][cols]` over whatever the HLO operand really is: a
//! buffer whose dimension groups collapse to single strides (read directly), or any
//! instruction of the kernel's computation (elements generated, so fused producers, tiled
//! layouts and odd strides all work).
//!
//! The engine runs its work in separate task functions (so that the runtime can spread them
//! over threads); [`Captures`] carries the kernel's buffer pointers into them, and the values
//! it holds in registers (a small loop state: `codegen/while_registers.rs`) through stack slots.

use crate::codegen::array::IrArray;
use crate::codegen::context::Codegen;
use crate::codegen::elemental::{Elemental, Input, Val};
use crate::codegen::index::{delinearize, Index};
use crate::codegen::kernel::KernelContext;
use crate::error::{Error, Result};
use crate::hlo::InstrId;
use hlojit_runtime::ElementType;
use inkwell::types::{BasicTypeEnum, StructType};
use super::batch_walk::BatchWalk;
use super::microkernel::set_vector_attributes;
use inkwell::values::{BasicValueEnum, FunctionValue, IntValue, PointerValue};
use std::collections::HashMap;

/// Which logical dimensions of an array hold the batch, row and column indices of a matrix
/// view: each index is the row-major linearization of its group's `(dimension, size)` list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMap {
    pub rank: usize,
    pub batch: Vec<(usize, i64)>,
    pub row: Vec<(usize, i64)>,
    pub col: Vec<(usize, i64)>,
}

impl GroupMap {
    pub fn transposed(&self) -> GroupMap {
        GroupMap { rank: self.rank, batch: self.batch.clone(), row: self.col.clone(), col: self.row.clone() }
    }

    /// The array index of matrix element `(b, r, c)`.
    pub fn index<'ctx>(&self, cg: &Codegen<'ctx>, b: IntValue<'ctx>, r: IntValue<'ctx>, c: IntValue<'ctx>) -> Result<Index<'ctx>> {
        let mut dims = vec![cg.const_i64(0); self.rank];
        for (group, linear) in [(&self.batch, b), (&self.row, r), (&self.col, c)] {
            let sizes: Vec<i64> = group.iter().map(|&(_, s)| s).collect();
            let idx = delinearize(cg, linear, &sizes)?;
            for (&(d, _), v) in group.iter().zip(idx.dims) {
                dims[d] = v;
            }
        }
        Ok(Index::new(dims))
    }
}

/// Where an operand's elements come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A buffer: the captured pointer `slot`, where its batches lie, and the element strides
    /// of row and column.
    Strided { slot: usize, batch: BatchWalk, row: i64, col: i64 },
    /// Elements of instruction `id`, generated at the index `map` gives.
    Generated { id: InstrId, map: GroupMap },
    /// A convolution kernel as `[group][taps * Cg][Og]` matrices.
    ConvKernel(ConvKernelMap),
}

/// A convolution kernel seen as one `[taps * Cg][Og]` matrix per group: element `(g, k, n)` is
/// the kernel at input feature `k % Cg`, output feature `g * Og + n` and the window position
/// of tap `k / Cg` (taps row-major over the window; mirrored in reversed dimensions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvKernelMap {
    pub id: InstrId,
    pub rank: usize,
    pub in_feature: usize,
    pub out_feature: usize,
    /// Kernel spatial dimension, window size and reversal, in spatial order.
    pub spatial: Vec<(usize, i64, bool)>,
    pub group_in: i64,
    pub group_out: i64,
    /// Rows are output features and columns taps x input features.
    pub transposed: bool,
}

impl ConvKernelMap {
    fn index<'ctx>(&self, cg: &Codegen<'ctx>, g: IntValue<'ctx>, r: IntValue<'ctx>, c: IntValue<'ctx>) -> Result<Index<'ctx>> {
        let (k, n) = if self.transposed { (c, r) } else { (r, c) };
        let mut dims = vec![cg.const_i64(0); self.rank];
        let gc = cg.const_i64(self.group_in);
        let tap = cg.b.build_int_unsigned_div(k, gc, "tap")?;
        dims[self.in_feature] = cg.b.build_int_unsigned_rem(k, gc, "ci")?;
        let base = cg.b.build_int_nsw_mul(g, cg.const_i64(self.group_out), "")?;
        dims[self.out_feature] = cg.b.build_int_nsw_add(base, n, "")?;
        let sizes: Vec<i64> = self.spatial.iter().map(|&(_, s, _)| s).collect();
        let t = delinearize(cg, tap, &sizes)?;
        for (&(d, size, reversed), v) in self.spatial.iter().zip(t.dims) {
            dims[d] = if reversed { cg.b.build_int_nsw_sub(cg.const_i64(size - 1), v, "")? } else { v };
        }
        Ok(Index::new(dims))
    }
}

/// One GEMM operand: a `[batch][rows][cols]` matrix of `ty` elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operand {
    pub source: Source,
    pub ty: ElementType,
    pub rows: i64,
    pub cols: i64,
}

impl Operand {
    pub fn transposed(&self) -> Operand {
        let source = match &self.source {
            Source::Strided { slot, batch, row, col } => Source::Strided { slot: *slot, batch: *batch, row: *col, col: *row },
            Source::Generated { id, map } => Source::Generated { id: *id, map: map.transposed() },
            Source::ConvKernel(m) => Source::ConvKernel(ConvKernelMap { transposed: !m.transposed, ..m.clone() }),
        };
        Operand { source, ty: self.ty, rows: self.cols, cols: self.rows }
    }

    /// Loads element `(b, r, c)` (indices in range) in its own type.
    pub fn load<'ctx>(
        &self,
        ptrs: &[PointerValue<'ctx>],
        e: &mut Elemental<'_, 'ctx>,
        b: IntValue<'ctx>,
        r: IntValue<'ctx>,
        c: IntValue<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let cg = e.cg;
        match &self.source {
            Source::Strided { slot, batch, row, col } => {
                let mut off = batch.offset(cg, b)?;
                for (v, s) in [(r, *row), (c, *col)] {
                    if s != 0 {
                        let t = if s == 1 { v } else { cg.b.build_int_nsw_mul(v, cg.const_i64(s), "")? };
                        off = cg.b.build_int_nsw_add(off, t, "")?;
                    }
                }
                let p = cg.gep(cg.memory_type(self.ty), ptrs[*slot], off)?;
                cg.load_element(self.ty, p)
            }
            Source::Generated { id, map } => {
                let index = map.index(cg, b, r, c)?;
                e.gen_scalar(*id, &index)
            }
            Source::ConvKernel(m) => {
                let index = m.index(cg, b, r, c)?;
                e.gen_scalar(m.id, &index)
            }
        }
    }
}

/// What a task function sees: the captured buffer pointers and an elemental generator bound
/// to them.
pub struct TaskEnv<'a, 'ctx> {
    pub ptrs: Vec<PointerValue<'ctx>>,
    pub ints: Vec<IntValue<'ctx>>,
    pub e: Elemental<'a, 'ctx>,
}

/// The kernel's buffer pointers (its operand bindings, then its output) and some integers,
/// passed to task functions through a stack struct.
pub struct Captures<'ctx> {
    /// Bound instructions in slot order (each with its first slot and its binding).
    bound: Vec<(InstrId, usize, Input<'ctx>)>,
    pub ptrs: Vec<PointerValue<'ctx>>,
    /// Slot of the output buffer.
    pub out_slot: usize,
    ints: usize,
}

impl<'ctx> Captures<'ctx> {
    /// Captures every binding of the kernel and its (single) output; `ints` integers follow.
    pub fn new(kc: &KernelContext<'_, 'ctx>, ints: usize) -> Result<Captures<'ctx>> {
        let mut ids: Vec<InstrId> = kc.bindings.keys().copied().collect();
        ids.sort();
        let mut ptrs = Vec::new();
        let mut bound = Vec::new();
        for id in ids {
            let input = kc.bindings[&id].clone();
            bound.push((id, ptrs.len(), input.clone()));
            flatten(kc.cg, &input, &mut ptrs)?;
        }
        let out_slot = ptrs.len();
        ptrs.push(kc.outputs.first().ok_or_else(|| Error::Internal("kernel without output".into()))?.ptr);
        Ok(Captures { bound, ptrs, out_slot, ints })
    }

    /// The slot of a bound array instruction, if `id` is one.
    pub fn slot_of(&self, id: InstrId) -> Option<usize> {
        self.bound.iter().find(|(i, _, input)| *i == id && matches!(input, Input::Array(_))).map(|&(_, s, _)| s)
    }

    /// The bound array of instruction `id`, if any.
    pub fn array_of(&self, id: InstrId) -> Option<&IrArray<'ctx>> {
        self.bound.iter().find(|(i, _, _)| *i == id).and_then(|(_, _, input)| match input {
            Input::Array(a) => Some(a),
            _ => None,
        })
    }

    fn struct_type(&self, cg: &Codegen<'ctx>) -> StructType<'ctx> {
        let ptrs: BasicTypeEnum = cg.ptr().array_type(self.ptrs.len() as u32).into();
        let ints: BasicTypeEnum = cg.i64().array_type(self.ints.max(1) as u32).into();
        cg.llvm.struct_type(&[ptrs, ints], false)
    }

    /// Stores the pointers and `ints` into a new stack struct and returns its address.
    pub fn store(&self, cg: &Codegen<'ctx>, ints: &[IntValue<'ctx>]) -> Result<PointerValue<'ctx>> {
        let ty = self.struct_type(cg);
        let ctx = cg.entry_alloca(ty.into(), "gemm.ctx")?;
        for (i, p) in self.ptrs.iter().enumerate() {
            let at = self.field(cg, ctx, 0, i)?;
            cg.b.build_store(at, *p)?;
        }
        for (i, v) in ints.iter().enumerate() {
            let at = self.field(cg, ctx, 1, i)?;
            cg.b.build_store(at, *v)?;
        }
        Ok(ctx)
    }

    fn field(&self, cg: &Codegen<'ctx>, ctx: PointerValue<'ctx>, part: u32, i: usize) -> Result<PointerValue<'ctx>> {
        let ty = self.struct_type(cg);
        let arr = cg.b.build_struct_gep(ty, ctx, part, "")?;
        let elem: BasicTypeEnum = if part == 0 { cg.ptr().into() } else { cg.i64().into() };
        cg.gep(elem, arr, cg.const_i64(i as i64))
    }

    /// Starts a task function `void name(ptr ctx, i64 begin, i64 end)` and loads the captures
    /// in it; returns the function, its task range and the loaded captures.
    pub fn begin_task<'a>(
        &self,
        kc: &KernelContext<'a, 'ctx>,
        name: &str,
    ) -> Result<(FunctionValue<'ctx>, IntValue<'ctx>, IntValue<'ctx>, TaskEnv<'a, 'ctx>)> {
        let cg = kc.cg;
        let fn_type = cg.fn_type(None, &[cg.ptr().into(), cg.i64().into(), cg.i64().into()]);
        let f = cg.add_function(name, fn_type, false);
        set_vector_attributes(cg, f);
        let entry = cg.llvm.append_basic_block(f, "entry");
        cg.b.position_at_end(entry);
        let ctx = f.get_nth_param(0).expect("ctx").into_pointer_value();
        let begin = f.get_nth_param(1).expect("begin").into_int_value();
        let end = f.get_nth_param(2).expect("end").into_int_value();
        Ok((f, begin, end, self.load(kc, ctx)?))
    }

    /// In a task function: loads the captures from `ctx` and binds an elemental generator of
    /// the kernel's computation to them.
    pub fn load<'a>(&self, kc: &KernelContext<'a, 'ctx>, ctx: PointerValue<'ctx>) -> Result<TaskEnv<'a, 'ctx>> {
        let cg = kc.cg;
        let mut ptrs = Vec::with_capacity(self.ptrs.len());
        for i in 0..self.ptrs.len() {
            let at = self.field(cg, ctx, 0, i)?;
            ptrs.push(cg.b.build_load(cg.ptr(), at, &format!("cap{i}"))?.into_pointer_value());
        }
        let mut ints = Vec::with_capacity(self.ints);
        for i in 0..self.ints {
            let at = self.field(cg, ctx, 1, i)?;
            ints.push(cg.b.build_load(cg.i64(), at, "")?.into_int_value());
        }
        let mut bindings = HashMap::new();
        for (id, slot, input) in &self.bound {
            let mut next = *slot;
            bindings.insert(*id, rebind(cg, input, &ptrs, &mut next)?);
        }
        let e = Elemental::with_bindings(cg, kc.module, kc.comp, bindings);
        Ok(TaskEnv { ptrs, ints, e })
    }
}

/// Appends the slots of `input`: an array's buffer, or a stack slot holding each scalar of a
/// value (stored here, in the kernel, before any task runs; tasks run while the kernel waits).
fn flatten<'ctx>(cg: &Codegen<'ctx>, input: &Input<'ctx>, out: &mut Vec<PointerValue<'ctx>>) -> Result<()> {
    match input {
        Input::Array(a) => out.push(a.ptr),
        Input::Tuple(parts) => {
            for p in parts {
                flatten(cg, p, out)?;
            }
        }
        Input::Value(v) => spill(cg, v, out)?,
    }
    Ok(())
}

fn spill<'ctx>(cg: &Codegen<'ctx>, v: &Val<'ctx>, out: &mut Vec<PointerValue<'ctx>>) -> Result<()> {
    match v {
        Val::Scalar(x) => {
            let slot = cg.entry_alloca(x.get_type(), "captured.value")?;
            cg.b.build_store(slot, *x)?;
            out.push(slot);
        }
        Val::Tuple(parts) => {
            for p in parts {
                spill(cg, p, out)?;
            }
        }
    }
    Ok(())
}

/// `input` over the slots loaded in a task function, from slot `next` on (see [`flatten`]).
fn rebind<'ctx>(cg: &Codegen<'ctx>, input: &Input<'ctx>, ptrs: &[PointerValue<'ctx>], next: &mut usize) -> Result<Input<'ctx>> {
    Ok(match input {
        Input::Array(a) => {
            let mut a = a.clone();
            a.ptr = ptrs[*next];
            *next += 1;
            Input::Array(a)
        }
        Input::Tuple(parts) => Input::Tuple(parts.iter().map(|p| rebind(cg, p, ptrs, next)).collect::<Result<_>>()?),
        Input::Value(v) => Input::Value(reload(cg, v, ptrs, next)?),
    })
}

fn reload<'ctx>(cg: &Codegen<'ctx>, v: &Val<'ctx>, ptrs: &[PointerValue<'ctx>], next: &mut usize) -> Result<Val<'ctx>> {
    Ok(match v {
        Val::Scalar(x) => {
            let slot = ptrs[*next];
            *next += 1;
            Val::Scalar(cg.b.build_load(x.get_type(), slot, "captured.value")?)
        }
        Val::Tuple(parts) => Val::Tuple(parts.iter().map(|p| reload(cg, p, ptrs, next)).collect::<Result<_>>()?),
    })
}
