//! What reduce, reduce-window and select-and-scatter share: applying a reducer computation to
//! accumulators and inputs, accumulators kept in stack slots (promoted to registers by LLVM),
//! loop nests over chosen dimensions, and recognizing reducers that may be reassociated.
//!
//! Reassociation: a reducer that is one associative, commutative op of one scalar (add,
//! multiply, maximum, minimum, and, or, xor) on f32/f64 gets LLVM's `reassoc` flag so the loop
//! vectorizer may split the accumulation into independent vector partial results (XLA:CPU also
//! reorders float sums; results stay within tolerance). Integer and pred versions of these ops
//! are exactly associative, so LLVM vectorizes them without a flag. Any other reducer (variadic,
//! non-commutative, f16/bf16 rounding after every step) runs strictly in order. A float
//! max/min result that is a NaN is computed again in order, since which NaN comes out depends
//! on the order.

use super::context::Codegen;
use super::elemental::{Elemental, Val};
use super::index::Index;
use super::loops::{close_loop, open_loop};
use crate::error::{Error, Result};
use crate::hlo::{CompId, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::{ElementType, Shape};
use inkwell::values::{BasicValueEnum, InstructionValue, IntValue, PointerValue};

/// The single op of a reducer `(a, b) -> op(a, b)` (either operand order) that is associative
/// and commutative; `None` for any other reducer.
pub fn associative_op(module: &Module, reducer: CompId) -> Option<Opcode> {
    let comp = module.computation(reducer);
    let params = comp.parameters();
    if params.len() != 2 {
        return None;
    }
    let root = comp.root_instruction();
    use Opcode::*;
    if !matches!(root.opcode, Add | Multiply | Maximum | Minimum | And | Or | Xor) || root.operands.len() != 2 {
        return None;
    }
    let scalar = |s: &Shape| s.as_array().is_some_and(|a| a.dims.is_empty());
    if !scalar(&root.shape) || params.iter().any(|&p| !scalar(&comp.get(p).shape)) {
        return None;
    }
    let same = (root.operands[0] == params[0] && root.operands[1] == params[1])
        || (root.operands[0] == params[1] && root.operands[1] == params[0]);
    same.then_some(root.opcode)
}

/// Whether results of reducer op `op` on `t` may be reassociated (see the module docs).
pub fn may_reassociate(op: Option<Opcode>, t: ElementType) -> bool {
    op.is_some() && (matches!(t, ElementType::F32 | ElementType::F64) || t.is_int() || t.is_pred())
}

/// How one reduction applies its reducer: the computation, and whether it may reassociate.
#[derive(Clone, Copy, Debug)]
pub struct Reducer {
    pub comp: CompId,
    pub reassociate: bool,
    /// The reducer's single associative op, when it has one.
    pub op: Option<Opcode>,
}

impl Reducer {
    /// The reducer `comp` applied to accumulators of `types`.
    pub fn new(module: &Module, comp: CompId, types: &[ElementType]) -> Reducer {
        let op = associative_op(module, comp);
        let reassociate = types.len() == 1 && may_reassociate(op, types[0]);
        Reducer { comp, reassociate, op }
    }

    /// The reducer of a reduce-window: as `new`, except that a float maximum / minimum runs
    /// in window order through XLA's elementwise rule (minmax.rs) instead of the reassociated
    /// intrinsic. XLA:CPU visits each window in order (its vectorizer may split a window into
    /// rows, which gives the same bits, min/max being order-free apart from NaN signs), so a
    /// NaN comes out with its sign ORed (minimum) / ANDed (maximum) with that of the
    /// accumulator before it: fuzz program 9600799, a +NaN after a negative accumulator gives
    /// -NaN there (measured on 51 windows with NaNs, all in order; the intrinsic kept +NaN in 31).
    pub fn for_window(module: &Module, comp: CompId, types: &[ElementType]) -> Reducer {
        let mut r = Reducer::new(module, comp, types);
        let float = types.len() == 1 && (types[0].is_float() || types[0].is_complex());
        if float && matches!(r.op, Some(Opcode::Maximum | Opcode::Minimum)) {
            r.reassociate = false;
        }
        r
    }

    /// The same reducer applied strictly in order, with XLA's elementwise rule.
    pub fn in_order(self) -> Reducer {
        Reducer { reassociate: false, ..self }
    }

    /// Whether a reassociated result may differ from the in-order one in its bits: a float
    /// maximum / minimum, whose NaN result depends on the order (see `redo_in_order_if_nan`).
    pub fn nan_depends_on_order(&self) -> bool {
        self.reassociate && matches!(self.op, Some(Opcode::Maximum | Opcode::Minimum))
    }

    /// After a reassociated float max/min reduction into `accs`: if the result is a NaN,
    /// restores `start` and runs `redo` (the same loops with the in-order reducer it gets).
    ///
    /// Which NaN an in-order max/min returns, and with which sign, depends on the order:
    /// XLA's elementwise rule (minmax.rs) keeps the first NaN, its sign ANDed (maximum) or
    /// ORed (minimum) with the accumulator's before it, and XLA:CPU reduces small arrays in
    /// order (fuzz program 9901030: 37 of 37 NaN results over six shapes). Vectorized partial
    /// results cannot tell the first NaN, so a NaN result is computed again in order; without
    /// a NaN (the case that matters for speed) the results agree bit for bit, the two rules
    /// ordering ±0 alike.
    pub fn redo_in_order_if_nan<'ctx>(
        &self,
        cg: &Codegen<'ctx>,
        accs: &Accumulators<'ctx>,
        start: &[BasicValueEnum<'ctx>],
        redo: impl FnOnce(&Reducer) -> Result<()>,
    ) -> Result<()> {
        if !self.nan_depends_on_order() {
            return Ok(());
        }
        let [value] = accs.load(cg)?[..] else {
            return Err(Error::Internal("a float max/min reduction with several accumulators".into()));
        };
        let BasicValueEnum::FloatValue(v) = value else { return Ok(()) };
        let is_nan = cg.b.build_float_compare(inkwell::FloatPredicate::UNO, v, v, "")?;
        let in_order = self.in_order();
        cg.if_then("reduce.nan", is_nan, || {
            accs.store(cg, start)?;
            redo(&in_order)
        })
    }

    /// `reducer(accumulators..., inputs...)`, flattened to one value per accumulator.
    pub fn apply<'ctx>(
        &self,
        e: &Elemental<'_, 'ctx>,
        accumulators: Vec<BasicValueEnum<'ctx>>,
        inputs: Vec<BasicValueEnum<'ctx>>,
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let n = accumulators.len();
        let float_min_max = self.reassociate
            && matches!(self.op, Some(Opcode::Maximum | Opcode::Minimum))
            && accumulators.len() == 1
            && inputs.len() == 1
            && accumulators[0].is_float_value();
        if let (true, Some(op), [acc], [x]) = (float_min_max, self.op, accumulators.as_slice(), inputs.as_slice()) {
            // XLA's elementwise bits (minmax.rs spells them out in compares and selects)
            // are no reduction LLVM's vectorizer takes; the intrinsic with reassoc is. It
            // differs from them only in which NaN it returns, and a NaN result is computed
            // again in order (`redo_in_order_if_nan`).
            let name = if op == Opcode::Maximum { "llvm.maximum" } else { "llvm.minimum" };
            let (acc, x) = (acc.into_float_value(), x.into_float_value());
            let v = e.cg.call_intrinsic(name, &[acc.get_type().into()], &[acc.into(), x.into()])?;
            if let Some(i) = instruction(v) {
                let _ = i.set_fast_math_flags(inkwell::values::FastMathFlags::AllowReassoc);
            }
            return Ok(vec![v]);
        }
        let args = accumulators.into_iter().chain(inputs).map(Val::Scalar).collect();
        let out = e.call_scalar(self.comp, args)?.flatten();
        if out.len() != n {
            return Err(Error::Internal(format!("reducer returns {} values for {n} accumulators", out.len())));
        }
        if self.reassociate {
            for v in &out {
                if let Some(i) = instruction(*v) {
                    if i.can_use_fast_math_flags() {
                        let _ = i.set_fast_math_flags(inkwell::values::FastMathFlags::AllowReassoc);
                    }
                }
            }
        }
        Ok(out)
    }
}

/// The identity of associative op `op` on `t` (so that partial results may start from it):
/// `-0.0` for float add (keeps the sign of `-0 + -0`), the type's lowest value for maximum, and
/// so on. `None` where there is none hlojit relies on.
pub fn identity<'ctx>(cg: &Codegen<'ctx>, op: Opcode, t: ElementType) -> Option<BasicValueEnum<'ctx>> {
    use Opcode::*;
    if matches!(t, ElementType::F32 | ElementType::F64) {
        let ft = cg.float_type(t);
        let v = match op {
            Add => -0.0,
            Multiply => 1.0,
            Maximum => f64::NEG_INFINITY,
            Minimum => f64::INFINITY,
            _ => return None,
        };
        return Some(ft.const_float(v).into());
    }
    if t.is_pred() {
        return match op {
            And | Minimum => Some(cg.const_bool(true).into()),
            Or | Xor | Maximum => Some(cg.const_bool(false).into()),
            _ => None,
        };
    }
    if !t.is_int() {
        return None;
    }
    let it = cg.value_type(t).into_int_type();
    let bits = t.bit_width();
    let signed = t.is_signed_int();
    let sign_bit = 1u64 << (bits - 1);
    Some(
        match op {
            Add | Or | Xor => it.const_zero(),
            Multiply => it.const_int(1, false),
            And => it.const_all_ones(),
            Maximum if signed => it.const_int(sign_bit, false),
            Maximum => it.const_zero(),
            Minimum if signed => it.const_int(sign_bit - 1, false),
            Minimum => it.const_all_ones(),
            _ => return None,
        }
        .into(),
    )
}

fn instruction(v: BasicValueEnum<'_>) -> Option<InstructionValue<'_>> {
    match v {
        BasicValueEnum::FloatValue(f) => f.as_instruction(),
        BasicValueEnum::IntValue(i) => i.as_instruction(),
        _ => None,
    }
}

/// Accumulators of the given element types in stack slots of the kernel's entry block.
pub struct Accumulators<'ctx> {
    slots: Vec<(PointerValue<'ctx>, ElementType)>,
}

impl<'ctx> Accumulators<'ctx> {
    pub fn new(cg: &Codegen<'ctx>, types: &[ElementType]) -> Result<Accumulators<'ctx>> {
        let slots = types.iter().map(|&t| Ok((cg.entry_alloca(cg.value_type(t), "acc")?, t))).collect::<Result<_>>()?;
        Ok(Accumulators { slots })
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn store(&self, cg: &Codegen<'ctx>, values: &[BasicValueEnum<'ctx>]) -> Result<()> {
        if values.len() != self.slots.len() {
            return Err(Error::Internal(format!("{} values for {} accumulators", values.len(), self.slots.len())));
        }
        for (&(p, _), v) in self.slots.iter().zip(values) {
            cg.b.build_store(p, *v)?;
        }
        Ok(())
    }

    pub fn load(&self, cg: &Codegen<'ctx>) -> Result<Vec<BasicValueEnum<'ctx>>> {
        self.slots.iter().map(|&(p, t)| Ok(cg.b.build_load(cg.value_type(t), p, "acc")?)).collect()
    }
}

/// One loop of a nest: dimension `dim` of the index runs over `[start, end)`.
#[derive(Clone, Copy, Debug)]
pub struct LoopDim<'ctx> {
    pub dim: usize,
    pub start: IntValue<'ctx>,
    pub end: IntValue<'ctx>,
}

impl<'ctx> LoopDim<'ctx> {
    pub fn full(cg: &Codegen<'ctx>, dim: usize, size: i64) -> LoopDim<'ctx> {
        LoopDim { dim, start: cg.const_i64(0), end: cg.const_i64(size) }
    }
}

/// `body` as a loop body that may run for several nests (fixes the closure's signature, which
/// Rust would otherwise not infer before its first use).
pub fn nest_body<'ctx, F: FnMut(&Index<'ctx>) -> Result<()>>(body: F) -> F {
    body
}

/// Emits the loops `loops` (outermost first) around `body`, which gets `base` with the loop
/// dimensions replaced by the induction variables. The builder ends after the nest.
pub fn loop_nest<'ctx>(
    cg: &Codegen<'ctx>,
    name: &str,
    loops: &[LoopDim<'ctx>],
    base: &[IntValue<'ctx>],
    body: impl FnOnce(&Index<'ctx>) -> Result<()>,
) -> Result<()> {
    let mut index = base.to_vec();
    let mut open = Vec::with_capacity(loops.len());
    for l in loops {
        let o = open_loop(cg, &format!("{name}.d{}", l.dim), l.start, l.end)?;
        index[l.dim] = o.induction;
        open.push(o);
    }
    body(&Index::new(index))?;
    while let Some(o) = open.pop() {
        close_loop(cg, o)?;
    }
    Ok(())
}

/// The dimensions of `dims` in `minor_to_major` order reversed (major first), keeping only
/// those in `select` whose size is not 1 (a size-1 dimension needs no loop).
pub fn major_to_minor_selected(minor_to_major: &[i64], dims: &[i64], select: impl Fn(usize) -> bool) -> Vec<usize> {
    minor_to_major.iter().rev().map(|&d| d as usize).filter(|&d| select(d) && dims[d] != 1).collect()
}

/// The pieces of a (variadic) reduce or reduce-window: `n` inputs, then `n` init values.
pub struct Variadic {
    pub inputs: Vec<InstrId>,
    pub inits: Vec<InstrId>,
    pub types: Vec<ElementType>,
}

impl Variadic {
    pub fn of(inst: &Instruction) -> Result<Variadic> {
        let n = inst.operands.len() / 2;
        if n == 0 || inst.operands.len() % 2 != 0 {
            return Err(Error::Internal(format!("{}: expected inputs and as many init values", inst.name)));
        }
        let types = inst.shape.array_leaves().iter().map(|a| a.element_type).collect::<Vec<_>>();
        if types.len() != n {
            return Err(Error::Internal(format!("{}: {} results for {n} inputs", inst.name, types.len())));
        }
        Ok(Variadic { inputs: inst.operands[..n].to_vec(), inits: inst.operands[n..].to_vec(), types })
    }
}
