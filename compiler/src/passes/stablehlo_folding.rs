//! The folding XLA's StableHLO-to-HLO translation does before any HLO pass.
//!
//! jaxlib (0.10.2: StableHLO 1.17) runs StableHLO's aggressive folder
//! (`StablehloAggressiveFolder.cpp`) on every module it compiles: the ones `jax.jit` lowers,
//! the ones a PJRT client sends, and HLO text, which reaches its compiler only as StableHLO
//! (`hlo_to_stablehlo`, which folds nothing itself; the folding shows in XLA's
//! `before_optimizations` dump). Its results are not those of XLA's later `HloConstantFolding`
//! (`crate::passes::constant_folding`): it computes `exp`, `log`, `logistic`, `tanh`, `erf`,
//! `sin`, `cos`, `tan`, `rsqrt` and `sqrt` of a float constant in `double` (the C library's
//! `double` function) and rounds once to the element type, where the HLO evaluator calls the
//! `float` function (or computes f16/bf16 in f32, rounding twice); its float arithmetic is
//! APFloat's, whose invalid operations (inf - inf, 0 * inf, 0 / 0, inf / inf) give the positive
//! quiet NaN where the evaluator's x86 arithmetic gives the negative one. So it runs first, on
//! every module and every computation (the folder walks every region), before calls are
//! inlined: a call's argument is not a constant inside the callee here (fuzz program 9701156:
//! `0 / 0` of a constant argument is folded after inlining, by the evaluator, to -NaN).
//!
//! What the folder folds, and how (read in its source, measured through
//! `mlir_module_to_xla_computation`):
//!
//! - an op folds when all its operands are constants, which includes ops folded before it
//!   (post order): `exp(a + b)` of constants is one double-precision `exp`;
//! - the ten functions above for every float type (not complex; f8 included), with no element
//!   limit; `log` and `rsqrt` do not fold when any element is `<= 0`, `sqrt` when any is `< 0` (the whole op
//!   stays; NaN passes these tests and folds; an f64 subnormal counts as zero, see below);
//! - exact arithmetic that gives the HLO evaluator's bits (`crate::evaluate`) and only matters
//!   here because it makes the operand of one of the ten a constant: add, subtract, multiply,
//!   divide, remainder, negate, abs, not, and, or, sign, the two roundings, compare, select,
//!   convert, reshape, slice, transpose, reverse, concatenate and the broadcast of a splat.
//!   Differences from the evaluator that are kept: float maximum / minimum (and clamp, which is
//!   max then min) order zeros (`llvm::maximum`: max(-0, +0) = +0) where the evaluator returns
//!   its first operand; a float-to-integer convert folds only when every element is in range
//!   (APFloat refuses NaN and overflow; the evaluator saturates); a float-to-float convert
//!   rounds once (f64 to bf16 directly, not through f32); the sign of either zero is +0 and a
//!   sign of NaN does not fold;
//! - not folded: integer divide or remainder with a zero divisor (jaxlib 0.10.2's folder
//!   divides by zero and the process dies of SIGFPE; HLO constant folding then gives XLA's
//!   evaluator's answer), power, shifts, iota, xor, broadcast of a non-splat, complex numbers;
//! - the ten functions of f8 constants too (the seven f8 types, measured on all 256 values of
//!   each), rounded once from the double to the f8 format;
//! - folded by XLA but not here (open): predicate conversions; and an integer-to-f16/bf16 convert of an integer beyond 2^24
//!   still rounds twice here (through f32, the evaluator's way) where APFloat rounds once;
//! - concatenate, convert, reverse and select results of more than 65,536 elements are left
//!   unless they are splats (`foldOpElementLimit`).
//!
//! The ten functions run with subnormals flushed, as XLA's compile thread has them.
//!
//! A splat (a constant whose elements are all equal) is computed once and, as XLA's exporter
//! writes it, becomes a scalar constant and a broadcast; a splat is never expanded beyond the
//! size of a constant the module already holds.

use crate::evaluate::evaluate;
use crate::hlo::computation::has_side_effect;
use crate::hlo::{Attributes, Computation, InstrId, Instruction, Module, Opcode};
use crate::passes::fused_body::unique_name;
use half::{bf16, f16};
use hlojit_runtime::{ArrayLiteral, ElementType, Literal, Shape};
use std::borrow::Cow;
use std::collections::HashSet;

/// `foldOpElementLimit`'s default, for the ops that check it.
const ELEMENT_LIMIT: usize = 65_536;

/// A constant operand: its whole literal, or one element repeated over `dims`.
#[derive(Clone)]
enum Value<'a> {
    Full(Cow<'a, ArrayLiteral>),
    Splat(ArrayLiteral, Vec<i64>),
}

impl Value<'_> {
    /// The literal with every element present (a splat expanded to its dims).
    fn full(&self) -> Option<Cow<'_, ArrayLiteral>> {
        match self {
            Value::Full(a) => Some(Cow::Borrowed(a.as_ref())),
            Value::Splat(s, dims) => {
                let mut a = ArrayLiteral::try_zeros(s.element_type(), dims).ok()?;
                let bits = s.bits(0);
                for i in 0..a.element_count() {
                    a.set_bits(i, bits);
                }
                Some(Cow::Owned(a))
            }
        }
    }
}

/// Folds what StableHLO's aggressive folder folds, in every computation of `module`; returns
/// whether anything was folded.
pub fn run(module: &mut Module) -> bool {
    let mut changed = false;
    let mut names: HashSet<String> =
        module.computations.iter().flat_map(|c| c.instructions.iter().map(|i| i.name.clone())).collect();
    for comp in &mut module.computations {
        for id in comp.post_order() {
            let inst = comp.get(id);
            if has_side_effect(inst) || !inst.control_predecessors.is_empty() || inst.operands.is_empty() {
                continue;
            }
            // Already what a folded splat becomes.
            if inst.opcode == Opcode::Broadcast && comp.get(inst.operands[0]).opcode == Opcode::Constant && comp.get(inst.operands[0]).shape.is_scalar() {
                continue;
            }
            let Some(folded) = fold(comp, id) else { continue };
            replace(comp, id, folded, &mut names);
            changed = true;
        }
    }
    changed
}

/// Folds constants as jaxlib's StableHLO-to-HLO translation does.
pub struct StablehloFolding;

impl super::pass::Pass for StablehloFolding {
    fn name(&self) -> &'static str {
        "stablehlo-folding"
    }

    fn run(&self, module: &mut Module) -> crate::error::Result<bool> {
        Ok(run(module))
    }
}

/// `id` becomes a constant, or for a splat a broadcast of a new scalar constant.
fn replace(comp: &mut Computation, id: InstrId, value: Value<'static>, names: &mut HashSet<String>) {
    let literal = match value {
        // XLA's exporter writes a splat of more than one element as a broadcast scalar.
        Value::Splat(scalar, dims) if dims.iter().product::<i64>() > 1 => {
            let name = unique_name(names, &format!("{}.splat", comp.get(id).name));
            let mut c = Instruction::new(name, Opcode::Constant, Shape::scalar(scalar.element_type()), Vec::new());
            c.attrs.literal = Some(Literal::Array(scalar));
            let c = comp.add(c);
            let inst = comp.get_mut(id);
            inst.opcode = Opcode::Broadcast;
            inst.operands = vec![c];
            inst.called.clear();
            inst.attrs = Attributes { dimensions: Some(Vec::new()), ..Attributes::default() };
            return;
        }
        splat @ Value::Splat(..) => match splat.full() {
            Some(a) => a.into_owned(),
            None => return,
        },
        Value::Full(a) => a.into_owned(),
    };
    let inst = comp.get_mut(id);
    inst.opcode = Opcode::Constant;
    inst.operands.clear();
    inst.called.clear();
    inst.attrs = Attributes { literal: Some(Literal::Array(literal)), ..Attributes::default() };
}

/// The constant value of `id`, if it has one: a constant, or a broadcast of a splat.
fn value_of(comp: &Computation, id: InstrId) -> Option<Value<'_>> {
    let inst = comp.get(id);
    match inst.opcode {
        Opcode::Constant => {
            let a = inst.array_literal().ok()?;
            let n = a.element_count();
            if n > 0 && (1..n).all(|i| a.bits(i) == a.bits(0)) {
                Some(Value::Splat(first_element(a)?, a.dims().to_vec()))
            } else {
                Some(Value::Full(Cow::Borrowed(a)))
            }
        }
        Opcode::Broadcast => match value_of(comp, inst.operands[0])? {
            Value::Splat(s, _) => Some(Value::Splat(s, inst.shape.as_array()?.dims.clone())),
            Value::Full(_) => None,
        },
        _ => None,
    }
}

fn first_element(a: &ArrayLiteral) -> Option<ArrayLiteral> {
    let mut s = ArrayLiteral::try_zeros(a.element_type(), &[]).ok()?;
    s.set_bits(0, a.bits(0));
    Some(s)
}

/// The folded value of `id`, or `None` where the folder leaves it.
fn fold(comp: &Computation, id: InstrId) -> Option<Value<'static>> {
    let inst = comp.get(id);
    let shape = inst.shape.as_array()?;
    if shape.dynamic.iter().any(|&d| d) {
        return None;
    }
    let t = shape.element_type;
    let operands: Vec<Value> = inst.operands.iter().map(|&o| value_of(comp, o)).collect::<Option<_>>()?;
    let in_type = comp.get(inst.operands[0]).shape.element_type()?;
    if !foldable(inst, t, in_type, &operands) {
        return None;
    }
    let all_splat = operands.iter().all(|v| matches!(v, Value::Splat(..)));
    let limited = matches!(inst.opcode, Opcode::Concatenate | Opcode::Convert | Opcode::Reverse | Opcode::Select);
    if all_splat && splat_preserving(inst, &operands) {
        // One element computes the whole result; data movement only moves it.
        if moves_data(inst.opcode) {
            let Value::Splat(s, _) = &operands[0] else { unreachable!("all operands are splats") };
            return Some(Value::Splat(s.clone(), shape.dims.clone()));
        }
        let scalars: Vec<ArrayLiteral> = operands.iter().map(|v| match v {
            Value::Splat(s, _) => s.clone(),
            Value::Full(_) => unreachable!("all operands are splats"),
        }).collect();
        let mut on_scalars = inst.clone();
        on_scalars.shape = Shape::scalar(t);
        let scalar = compute(&on_scalars, &scalars.iter().collect::<Vec<_>>())?;
        return Some(Value::Splat(scalar, shape.dims.clone()));
    }
    if limited && shape.element_count() as usize > ELEMENT_LIMIT {
        return None;
    }
    // A splat is expanded only next to a full constant of its size (elementwise ops) or into
    // a result no larger than the limit above.
    let largest_full = operands.iter().filter_map(|v| match v {
        Value::Full(a) => Some(a.element_count()),
        Value::Splat(..) => None,
    }).max();
    let result_size = shape.element_count() as usize;
    if result_size > largest_full.unwrap_or(0).max(ELEMENT_LIMIT) {
        return None;
    }
    let fulls: Vec<Cow<ArrayLiteral>> = operands.iter().map(Value::full).collect::<Option<_>>()?;
    let refs: Vec<&ArrayLiteral> = fulls.iter().map(|c| c.as_ref()).collect();
    compute(inst, &refs).map(|a| Value::Full(Cow::Owned(a)))
}

/// Whether an op whose operands are all splats has a splat result (every op folded here but a
/// concatenate of different splats).
fn splat_preserving(inst: &Instruction, operands: &[Value]) -> bool {
    inst.opcode != Opcode::Concatenate
        || operands.windows(2).all(|w| match (&w[0], &w[1]) {
            (Value::Splat(a, _), Value::Splat(b, _)) => a.bits(0) == b.bits(0),
            _ => false,
        })
}

/// The ops that only move elements.
fn moves_data(op: Opcode) -> bool {
    matches!(op, Opcode::Reshape | Opcode::Slice | Opcode::Transpose | Opcode::Reverse | Opcode::Concatenate | Opcode::Broadcast)
}

/// The functions the folder computes in double.
fn in_double(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::Exp | Opcode::Log | Opcode::Logistic | Opcode::Tanh | Opcode::Erf | Opcode::Sine | Opcode::Cosine
            | Opcode::Tan | Opcode::Rsqrt | Opcode::Sqrt
    )
}

/// Whether the folder folds `inst` (result type `t`, first operand type `from`) on these values.
fn foldable(inst: &Instruction, t: ElementType, from: ElementType, operands: &[Value]) -> bool {
    let op = inst.opcode;
    if in_double(op) {
        // Every float type, the f8 formats included (measured: each of the ten functions of
        // each f8 type folds, as double rounded once, which differs from computing it in f32
        // with XLA's per-op rounding of the expanded logistic at run time).
        if !(is_wide_float(t) || is_measured_f8(t)) {
            return false;
        }
        let Some(a) = operands[0].full_or_scalar() else { return false };
        // The folder's test runs with subnormals flushed too: an f64 subnormal compares as
        // zero, so `log(5e-324)` is left to the HLO evaluator. (An f32, f16 or bf16 element
        // widens to a normal double first.)
        let flushed = |x: f64| if t == ElementType::F64 && x != 0.0 && x.abs() < f64::MIN_POSITIVE { 0.0 } else { x };
        let refuse = |x: f64| match op {
            Opcode::Log | Opcode::Rsqrt => x <= 0.0,
            Opcode::Sqrt => x < 0.0,
            _ => false,
        };
        return !(0..a.element_count()).any(|i| refuse(flushed(a.get_f64(i))));
    }
    let evaluated = |ty: ElementType| ty == ElementType::Pred || ty.is_signed_int() || ty.is_unsigned_int() || is_wide_float(ty);
    if !evaluated(t) || !evaluated(from) {
        return false;
    }
    let int = t.is_signed_int() || t.is_unsigned_int();
    match op {
        Opcode::Add | Opcode::Subtract | Opcode::Multiply | Opcode::Maximum | Opcode::Minimum | Opcode::Clamp
        | Opcode::Negate | Opcode::Abs | Opcode::Compare | Opcode::Select | Opcode::Reshape | Opcode::Slice
        | Opcode::Transpose | Opcode::Reverse | Opcode::Concatenate => true,
        // Only a splat broadcasts into a constant (a splat again).
        Opcode::Broadcast => matches!(operands[0], Value::Splat(..)),
        Opcode::Not | Opcode::And | Opcode::Or => t == ElementType::Pred || int,
        // APFloat's sign of NaN does not fold.
        Opcode::Sign => {
            t.is_signed_int()
                || is_wide_float(t) && operands[0].full_or_scalar().is_some_and(|a| (0..a.element_count()).all(|i| !a.get_f64(i).is_nan()))
        }
        Opcode::RoundNearestAfz | Opcode::RoundNearestEven => is_wide_float(t),
        // Integer division by zero: see the module documentation.
        Opcode::Divide | Opcode::Remainder => {
            !int || operands[1].full_or_scalar().is_some_and(|d| (0..d.element_count()).all(|i| d.bits(i) != 0))
        }
        Opcode::Convert => convertible(from, t, &operands[0]),
        _ => false,
    }
}

/// Whether APFloat / APInt convert every element: a float becomes an integer only when it is
/// a number whose truncation fits; predicates stay out (`i1` conversions are not modelled).
fn convertible(from: ElementType, to: ElementType, v: &Value) -> bool {
    if from == ElementType::Pred || to == ElementType::Pred {
        return false;
    }
    if !is_wide_float(from) || is_wide_float(to) {
        return true;
    }
    let Some(a) = v.full_or_scalar() else { return false };
    let bits = to.bit_width();
    let (lo, hi) = if to.is_signed_int() {
        (-(2f64.powi(bits as i32 - 1)), 2f64.powi(bits as i32 - 1))
    } else {
        (0.0, 2f64.powi(bits as i32))
    };
    (0..a.element_count()).all(|i| {
        let x = a.get_f64(i).trunc();
        x >= lo && x < hi
    })
}

impl Value<'_> {
    /// The elements to check a condition on: the scalar of a splat, the whole of a constant.
    fn full_or_scalar(&self) -> Option<&ArrayLiteral> {
        match self {
            Value::Full(a) => Some(a.as_ref()),
            Value::Splat(s, _) => Some(s),
        }
    }
}

/// f16, bf16, f32, f64: the float types the folder's arithmetic is reproduced for here.
fn is_wide_float(t: ElementType) -> bool {
    matches!(t, ElementType::F16 | ElementType::BF16 | ElementType::F32 | ElementType::F64)
}

/// The f8 types whose folding was measured (f8e8m0fnu and f4e2m1fn were not; they stay to
/// the HLO pipeline).
fn is_measured_f8(t: ElementType) -> bool {
    use ElementType::*;
    matches!(t, F8E5M2 | F8E4M3FN | F8E4M3B11FNUZ | F8E5M2FNUZ | F8E4M3FNUZ | F8E4M3 | F8E3M4)
}

/// `inst` on these operands as the folder computes it.
fn compute(inst: &Instruction, operands: &[&ArrayLiteral]) -> Option<ArrayLiteral> {
    let t = inst.shape.element_type()?;
    let op = inst.opcode;
    if in_double(op) {
        let a = operands[0];
        // XLA compiles with subnormals flushed (FTZ/DAZ in MXCSR), so the C library's double
        // functions see a subnormal f64 operand as zero and flush subnormal results (measured:
        // log(5e-324) = -inf, exp(-740) = 0). APFloat's conversions are software: the rounding
        // to `t` below runs outside the guard, as it keeps f32 subnormals.
        // The operands widen to double outside the guard (APFloat's widening keeps f32
        // subnormals, which are normal doubles); `black_box` keeps each call between the
        // guard's two MXCSR writes, which the optimizer may otherwise move a pure call across.
        let inputs: Vec<f64> = (0..a.element_count()).map(|i| widen_keeping_nan(a, i, t)).collect();
        let results: Vec<f64> = {
            let _flush = hlojit_runtime::float_env::FlushDenormals::new();
            inputs.iter().map(|&x| std::hint::black_box(double_function(op, std::hint::black_box(x)))).collect()
        };
        let mut out = ArrayLiteral::try_zeros(t, a.dims()).ok()?;
        for (i, &r) in results.iter().enumerate() {
            out.set_bits(i, round_from_double(r, t));
        }
        return Some(out);
    }
    if is_wide_float(t) && matches!(op, Opcode::Maximum | Opcode::Minimum | Opcode::Clamp) {
        return max_min(inst, operands);
    }
    let from = operands[0].element_type();
    if is_wide_float(t) && (op == Opcode::Sign || op == Opcode::Convert && is_wide_float(from)) {
        // APFloat converts f64 to bf16 in one rounding (the evaluator goes through f32), and
        // its sign of either zero is +0 (the evaluator keeps the zero's sign).
        let a = operands[0];
        let mut out = ArrayLiteral::try_zeros(t, a.dims()).ok()?;
        for i in 0..a.element_count() {
            let x = a.get_f64(i);
            let v = if op == Opcode::Sign { if x == 0.0 { 0.0 } else { 1f64.copysign(x) } } else { x };
            out.set_bits(i, round_from_double(v, t));
        }
        return Some(out);
    }
    let mut result = evaluate(inst, operands)?;
    if is_wide_float(t) && matches!(op, Opcode::Add | Opcode::Subtract | Opcode::Multiply | Opcode::Divide) {
        invalid_is_positive_nan(operands, &mut result);
    }
    Some(result)
}

/// APFloat's result of an invalid operation on two numbers is the positive quiet NaN (measured
/// through jaxlib for f64, f32, f16 and bf16 add, subtract, multiply and divide); a NaN operand
/// passes through as the evaluator computes it.
fn invalid_is_positive_nan(operands: &[&ArrayLiteral], result: &mut ArrayLiteral) {
    let quiet_nan = match result.element_type() {
        ElementType::F64 => 0x7ff8_0000_0000_0000,
        ElementType::F32 => 0x7fc0_0000,
        ElementType::F16 => 0x7e00,
        ElementType::BF16 => 0x7fc0,
        _ => return,
    };
    for i in 0..result.element_count() {
        if result.get_f64(i).is_nan() && operands.iter().all(|o| !o.get_f64(i).is_nan()) {
            result.set_bits(i, quiet_nan);
        }
    }
}

/// The folder's `EvaluateOp(double)` of each function: the C library's `double` functions
/// (Rust's f64 methods call the same ones; erf is not among them).
fn double_function(op: Opcode, x: f64) -> f64 {
    extern "C" {
        fn erf(x: f64) -> f64;
    }
    match op {
        Opcode::Exp => x.exp(),
        Opcode::Log => x.ln(),
        Opcode::Logistic => 1.0 / (1.0 + (-x).exp()),
        Opcode::Tanh => x.tanh(),
        // SAFETY: a pure C library function of one number.
        Opcode::Erf => unsafe { erf(x) },
        Opcode::Sine => x.sin(),
        Opcode::Cosine => x.cos(),
        Opcode::Tan => x.tan(),
        Opcode::Rsqrt => 1.0 / x.sqrt(),
        Opcode::Sqrt => x.sqrt(),
        _ => unreachable!("in_double() lists the functions"),
    }
}

/// `x` rounded to nearest even in `t`, as `APFloat::convert` does: once, from the double.
/// f16 and bf16 go through f32 rounded to odd, which keeps enough bits for a second rounding
/// to give the single correct one (the `half` crate's f64 conversions drop the low 32 bits
/// before rounding, which breaks near-ties).
fn round_from_double(x: f64, t: ElementType) -> u64 {
    match t {
        ElementType::F64 => x.to_bits(),
        ElementType::F32 => (x as f32).to_bits() as u64,
        ElementType::F16 => f16::from_f32(to_f32_odd(x)).to_bits() as u64,
        ElementType::BF16 => bf16::from_f32(to_f32_odd(x)).to_bits() as u64,
        // The f8 formats: APFloat's one rounding to nearest even, with each format's overflow
        // (inf, or NaN where it has no inf) and NaN encodings.
        _ => match t.float_format() {
            Some(fmt) if x.is_nan() => f8_nan(x, fmt),
            Some(fmt) => hlojit_runtime::float_bits::encode(x, fmt),
            None => unreachable!("foldable() admits only float types"),
        },
    }
}

/// Element `i` of `a` (of float type `t`) as a double, as APFloat widens it: an f8 NaN keeps its
/// sign and its mantissa bits at the top of the double's (the C library's functions then carry
/// them through, and `f8_nan` brings them back: measured, e.g. logistic of the e3m4 NaN 0x71
/// is 0xf9 on XLA).
fn widen_keeping_nan(a: &ArrayLiteral, i: usize, t: ElementType) -> f64 {
    let x = a.get_f64(i);
    let Some(fmt) = t.float_format().filter(|_| x.is_nan() && is_measured_f8(t)) else { return x };
    let bits = a.bits(i);
    let m = fmt.mantissa_bits;
    let sign = (bits >> (fmt.exponent_bits + m)) & 1;
    let mantissa = (bits & ((1 << m) - 1)) << (52 - m);
    // Quiet, as the first operation on it would make it anyway.
    f64::from_bits(sign << 63 | 0x7ff0_0000_0000_0000 | mantissa | 1 << 51)
}

/// A double NaN in f8 format `fmt` as APFloat converts it: IEEE-style formats keep the sign and
/// the top mantissa bits, quiet; e4m3fn-style ones have one NaN per sign; the fnuz ones one NaN.
fn f8_nan(x: f64, fmt: hlojit_runtime::element_type::FloatFormat) -> u64 {
    use hlojit_runtime::element_type::FloatEncoding;
    let (e, m) = (fmt.exponent_bits, fmt.mantissa_bits);
    let sign = (x.to_bits() >> 63) << (e + m);
    match fmt.encoding {
        FloatEncoding::Ieee => {
            let payload = (x.to_bits() >> (52 - m)) & ((1 << m) - 1);
            sign | ((1 << e) - 1) << m | payload | 1 << (m - 1)
        }
        FloatEncoding::FiniteAllOnesNan => sign | ((1 << (e + m)) - 1),
        _ => hlojit_runtime::float_bits::encode(x, fmt),
    }
}

/// `x` as f32 rounded to odd: an inexact result gets its last bit set.
fn to_f32_odd(x: f64) -> f32 {
    let r = x as f32;
    if r.is_nan() || r.is_infinite() || r as f64 == x || r.to_bits() & 1 == 1 {
        return r;
    }
    // Inexact and even: the neighbour on x's side is odd.
    let toward = if (r as f64) < x { 1i32 } else { -1 };
    let step = if r.is_sign_negative() { -toward } else { toward };
    if r == 0.0 {
        // Zero rounded from a tiny x: the smallest subnormal of x's sign.
        return f32::from_bits(1).copysign(x as f32);
    }
    f32::from_bits((r.to_bits() as i32 + step) as u32)
}

/// Float maximum / minimum / clamp as `llvm::maximum` / `llvm::minimum`: the first NaN, and
/// +0 above -0.
fn max_min(inst: &Instruction, operands: &[&ArrayLiteral]) -> Option<ArrayLiteral> {
    let t = inst.shape.element_type()?;
    let dims = &inst.shape.as_array()?.dims;
    let get = |a: &ArrayLiteral, i: usize| if a.element_count() == 1 { a.get_f64(0) } else { a.get_f64(i) };
    let max = |a: f64, b: f64| if a.is_nan() { a } else if b.is_nan() { b } else if a == b { if a.is_sign_negative() { b } else { a } } else { a.max(b) };
    let min = |a: f64, b: f64| if a.is_nan() { a } else if b.is_nan() { b } else if a == b { if a.is_sign_negative() { a } else { b } } else { a.min(b) };
    let mut out = ArrayLiteral::try_zeros(t, dims).ok()?;
    for i in 0..out.element_count() {
        let v = match (inst.opcode, operands) {
            (Opcode::Maximum, [a, b]) => max(get(a, i), get(b, i)),
            (Opcode::Minimum, [a, b]) => min(get(a, i), get(b, i)),
            (Opcode::Clamp, [lo, x, hi]) => min(get(hi, i), max(get(lo, i), get(x, i))),
            _ => return None,
        };
        // Exact: v is one of the operands' values, which t holds.
        out.set_f64(i, v);
    }
    Some(out)
}
