//! Elementwise families: unary and binary arithmetic for every type, compare, select, clamp,
//! convert and bitcast-convert.

use super::{Comp, Gen, Value};
use hlojit_runtime::ElementType as T;
use rand::seq::SliceRandom;
use rand::Rng;

/// Float unary ops that are continuous (and their results `approx` when not exact IEEE ops).
const FLOAT_UNARY: &[(&str, bool)] = &[
    ("abs", false), ("negate", false), ("exponential", true), ("log", true), ("sqrt", false), ("rsqrt", true),
    ("tanh", true), ("sine", true), ("cosine", true), ("exponential-minus-one", true), ("log-plus-one", true),
    ("logistic", true), ("cbrt", true), ("tan", true),
];
/// Float unary ops with jumps: only on exact operands.
const FLOAT_STEP: &[&str] = &["floor", "ceil", "round-nearest-afz", "round-nearest-even", "sign", "is-finite"];
const INT_UNARY: &[&str] = &["abs", "negate", "not", "popcnt", "count-leading-zeros", "sign"];
const COMPLEX_UNARY: &[&str] = &["negate", "exponential", "sqrt", "log", "tanh", "abs", "real", "imag", "sign"];
const FLOAT_BINARY: &[(&str, bool)] = &[
    ("add", false), ("subtract", false), ("multiply", false), ("divide", false), ("maximum", false), ("minimum", false),
    ("power", true), ("atan2", true), ("remainder", false),
];
const INT_BINARY: &[&str] = &[
    "add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and", "or", "xor", "shift-left",
    "shift-right-logical", "shift-right-arithmetic", "power",
];
const PRED_BINARY: &[&str] = &["and", "or", "xor", "maximum", "minimum"];
const COMPLEX_BINARY: &[&str] = &["add", "subtract", "multiply", "divide"];

/// One unary or binary elementwise op on a random value.
pub fn unary_or_binary(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let a = g.any_value(c)?;
    let t = a.ty;
    let small = matches!(t, T::F16 | T::BF16);
    if g.rng.gen_bool(0.4) {
        // Unary.
        let (op, approx, rt) = if t == T::Pred {
            ("not", false, t)
        } else if t.is_complex() {
            let mut op = *COMPLEX_UNARY.choose(&mut g.rng).unwrap();
            if op == "log" && c.is_constant(&a) {
                // XLA expands complex log into real ops with atan2; on values its kernel can see
                // as constants (iota-derived) LLVM folds XLA's atan2 to NaN for atan2(0, 0),
                // at run time it is 0 (documented in fuzz/README.md): keep log to run-time values.
                op = "negate";
            }
            let rt = if matches!(op, "abs" | "real" | "imag") { super::types::real_of(t) } else { t };
            (op, op != "negate" && op != "real" && op != "imag", rt)
        } else if t.is_float() {
            if !a.approx && g.rng.gen_bool(0.25) {
                let op = *FLOAT_STEP.choose(&mut g.rng).unwrap();
                (op, false, if op == "is-finite" { T::Pred } else { t })
            } else {
                let (op, approx) = *FLOAT_UNARY.choose(&mut g.rng).unwrap();
                (op, approx || (small && op == "sqrt"), t)
            }
        } else {
            let mut op = *INT_UNARY.choose(&mut g.rng).unwrap();
            if t.is_unsigned_int() && (op == "abs" || op == "sign") {
                // StableHLO (which XLA's HLO→StableHLO path goes through) has no unsigned abs/sign.
                op = "not";
            }
            if op == "count-leading-zeros" && c.is_constant(&a) {
                // XLA's constant folder gets clz of negative numbers wrong (clz(s32 -1) folds
                // to -32, at run time it is 0): keep clz to run-time values.
                op = "popcnt";
            }
            (op, false, t)
        };
        let approx = a.approx || approx;
        return Some(c.emit(&mut g.rng, rt, &a.dims.clone(), &format!("{op}({})", a.name), approx));
    }
    let (op, approx) = if t == T::Pred {
        (*PRED_BINARY.choose(&mut g.rng).unwrap(), false)
    } else if t.is_complex() {
        (*COMPLEX_BINARY.choose(&mut g.rng).unwrap(), true)
    } else if t.is_float() {
        let (op, ap) = *FLOAT_BINARY.choose(&mut g.rng).unwrap();
        // bf16/f16 arithmetic may round through f32 differently; remainder jumps.
        if op == "remainder" && a.approx {
            ("add", small)
        } else {
            (op, ap || (small && !matches!(op, "maximum" | "minimum")))
        }
    } else {
        (*INT_BINARY.choose(&mut g.rng).unwrap(), false)
    };
    let exact = op == "remainder";
    let b = g.coerce(c, t, &a.dims, exact);
    // XLA's constant folder computes integer x / 0 and x % 0 on the host, which dies of
    // SIGFPE: only divide where an operand comes from a parameter (then XLA's run-time
    // semantics apply: x / 0 == -1, x % 0 == x).
    let op = if matches!(op, "divide" | "remainder") && !t.is_float() && c.is_constant(&a) && c.is_constant(&b) { "add" } else { op };
    // atan2 of values XLA's kernel sees as constants: LLVM folds XLA's atan2 formula to NaN
    // for atan2(0, 0) (0 at run time and in XLA's constant folder; fuzz/README.md).
    let op = if op == "atan2" && c.is_constant(&a) && c.is_constant(&b) { "add" } else { op };
    // Integer power of two constants: XLA's evaluator folds pow(-1, -1) to 0 (as hlojit's
    // folder does) where its run-time code gives -1, and a constant exponent of all -1 becomes
    // 1 / x first (fuzz program 7001574; fuzz/README.md): keep integer powers to run-time values.
    let op = if op == "power" && !t.is_float() && c.is_constant(&a) && c.is_constant(&b) { "multiply" } else { op };
    let approx = approx || a.approx || b.approx;
    let (x, y) = if g.rng.gen_bool(0.5) { (a.name.clone(), b.name.clone()) } else { (b.name.clone(), a.name.clone()) };
    // XLA's algebraic simplifier rewrites A / constant as A * (1 / constant); for complex
    // numbers 1 / (0+0i) is (inf, NaN), so A / 0 becomes NaN where a run-time zero divisor
    // (XLA's and hlojit's) gives infinities: keep complex divisors to run-time values.
    let op = if op == "divide" && t.is_complex() && c.constants.contains(&y) { "multiply" } else { op };
    // XLA's algebraic simplifier rewrites A / pow(B, C) as A * pow(B, -C) for integers too,
    // so XLA:CPU computes pow(x, x) / pow(x, x) == 0 for s32: keep integer pow out of divisors.
    let op = if op == "divide" && !t.is_float() && c.powers.contains(&y) { "multiply" } else { op };
    Some(c.emit(&mut g.rng, t, &a.dims, &format!("{op}({x}, {y})"), approx))
}

/// compare (with a direction, sometimes TOTALORDER) followed, often, by a select.
pub fn compare_select(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let a = g.value_where(c, |v| !v.approx && !v.ty.is_complex())?;
    let b = g.coerce(c, a.ty, &a.dims, true);
    let dir = *["EQ", "NE", "LT", "LE", "GT", "GE"].choose(&mut g.rng).unwrap();
    let ty = if a.ty.is_float() && g.rng.gen_bool(0.3) { ", type=TOTALORDER" } else { "" };
    let p = c.emit(&mut g.rng, T::Pred, &a.dims, &format!("compare({}, {}), direction={dir}{ty}", a.name, b.name), false);
    if g.rng.gen_bool(0.3) {
        return Some(p);
    }
    let on = g.any_value(c)?;
    let x = g.coerce(c, on.ty, &a.dims, false);
    let y = g.coerce(c, on.ty, &a.dims, false);
    let approx = x.approx || y.approx;
    Some(c.emit(&mut g.rng, on.ty, &a.dims, &format!("select({}, {}, {})", p.name, x.name, y.name), approx))
}

/// clamp(lo, x, hi) with scalar or full-shape bounds.
pub fn clamp(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let x = g.value_where(c, |v| !v.ty.is_complex() && v.ty != T::Pred)?;
    let scalar = g.rng.gen_bool(0.5);
    let dims = if scalar { vec![] } else { x.dims.clone() };
    let lo = g.coerce(c, x.ty, &dims, false);
    let hi = g.coerce(c, x.ty, &dims, false);
    let approx = x.approx || lo.approx || hi.approx;
    Some(c.emit(&mut g.rng, x.ty, &x.dims, &format!("clamp({}, {}, {})", lo.name, x.name, hi.name), approx))
}

/// Whether `v` may be converted to `t` without relying on undefined behaviour or rounding
/// that differs in the last bit: no complex → real, no approx float → int/pred.
pub fn convertible(v: &Value, t: T) -> bool {
    if v.ty.is_complex() && !t.is_complex() {
        return false;
    }
    if v.approx && !(t.is_float() || t.is_complex()) {
        return false;
    }
    true
}

pub fn emit_convert(g: &mut Gen, c: &mut Comp, v: &Value, t: T) -> Value {
    // A narrowing float convert keeps an approx value approx; a widening one of an exact
    // value is exact.
    c.emit(&mut g.rng, t, &v.dims.clone(), &format!("convert({})", v.name), v.approx)
}

/// convert to a random type, or bitcast-convert between types of one width.
pub fn convert(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let v = g.any_value(c)?;
    if g.rng.gen_bool(0.2) && !v.approx && v.ty != T::Pred && !v.ty.is_complex() {
        let same: Vec<T> = super::types::ALL
            .iter()
            .copied()
            .filter(|t| t.bit_width() == v.ty.bit_width() && *t != v.ty && !t.is_complex() && *t != T::Pred)
            .collect();
        if let Some(&t) = same.choose(&mut g.rng) {
            // Bits reinterpreted as floats may be NaN with payloads or subnormals: exact
            // comparisons treat any NaN alike; they are not fed to arithmetic as exact.
            return Some(c.emit(&mut g.rng, t, &v.dims.clone(), &format!("bitcast-convert({})", v.name), t.is_float()));
        }
    }
    let t = super::types::pick_type(&mut g.rng);
    if !convertible(&v, t) || t == v.ty {
        return None;
    }
    Some(emit_convert(g, c, &v, t))
}

/// map: a scalar computation of a few random elementwise steps applied per element to one
/// or two operands of one shape.
pub fn map(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let a = g.value_where(c, |v| v.ty != T::Pred)?;
    let n = g.rng.gen_range(1..=2);
    let mut ops = vec![a.clone()];
    for _ in 1..n {
        ops.push(g.coerce(c, a.ty, &a.dims, false));
    }
    let name = g.comp_name("mapped");
    let mut m = Comp::new(false);
    for _ in 0..n {
        m.parameter(&mut g.rng, a.ty, &[]);
    }
    for _ in 0..g.rng.gen_range(1..=3) {
        unary_or_binary(g, &mut m);
    }
    let r = g.coerce(&mut m, a.ty, &[], false);
    let approx = ops.iter().any(|o| o.approx) || m.values.iter().any(|v| v.approx);
    g.add_computation(m.finish(&name, &[r], false));
    let names: Vec<&str> = ops.iter().map(|o| o.name.as_str()).collect();
    let dims: Vec<i64> = (0..a.dims.len() as i64).collect();
    let op = format!("map({}), dimensions={{{}}}, to_apply={name}", names.join(", "), super::types::list(&dims));
    Some(c.emit(&mut g.rng, a.ty, &a.dims.clone(), &op, approx))
}

/// reduce-precision to a random float format (IEEE half, bfloat16, the f8 formats, ...):
/// deterministic rounding, so only on exact operands.
pub fn reduce_precision(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let a = g.value_where(c, |v| matches!(v.ty, T::F32 | T::F64 | T::F16 | T::BF16) && !v.approx)?;
    let (e, m) = *[(5, 10), (8, 7), (4, 3), (5, 2), (8, 23), (3, 1), (11, 52), (2, 1)].choose(&mut g.rng).unwrap();
    let op = format!("reduce-precision({}), exponent_bits={e}, mantissa_bits={m}", a.name);
    Some(c.emit(&mut g.rng, a.ty, &a.dims.clone(), &op, false))
}

/// complex(re, im) from two reals of one shape.
pub fn complex(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let re = g.value_where(c, |v| matches!(v.ty, T::F32 | T::F64))?;
    let im = g.coerce(c, re.ty, &re.dims, false);
    let t = if re.ty == T::F32 { T::C64 } else { T::C128 };
    let approx = re.approx || im.approx;
    Some(c.emit(&mut g.rng, t, &re.dims.clone(), &format!("complex({}, {})", re.name, im.name), approx))
}

/// Narrow types that never appear as program inputs (jaxlib's buffers of them are awkward)
/// but do inside programs: a round trip through one of them, f8/f4 formats for floats (each
/// with its own rounding, saturation and NaN rules) and s4/u4/s2/u2 for integers (wrapping).
pub fn narrow_round_trip(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    // Rounding to 3 mantissa bits is discontinuous: only exact operands.
    let v = g.value_where(c, |v| !v.approx && (v.ty.is_int() || matches!(v.ty, T::F16 | T::BF16 | T::F32 | T::F64)))?;
    let narrow = if v.ty.is_int() {
        *[T::S4, T::U4, T::S2, T::U2].choose(&mut g.rng).unwrap()
    } else {
        *[T::F8E5M2, T::F8E4M3FN, T::F8E4M3B11FNUZ, T::F8E5M2FNUZ, T::F8E4M3FNUZ, T::F8E4M3, T::F8E3M4, T::F4E2M1FN]
            .choose(&mut g.rng)
            .unwrap()
    };
    // XLA's constant folder converts an infinity to f4e2m1fn (no inf, no NaN) as 0, its
    // run-time code as 6 (the saturated maximum), both measured through jaxlib (fuzz program
    // 8001901): a constant goes through f8e4m3fn instead.
    let narrow = if narrow == T::F4E2M1FN && c.is_constant(&v) { T::F8E4M3FN } else { narrow };
    let n = c.emit(&mut g.rng, narrow, &v.dims.clone(), &format!("convert({})", v.name), false);
    // Out of the pool: arithmetic in these formats and results of them (which fuzz_xla.py
    // would have to save) are not what this tests.
    c.values.pop();
    Some(c.emit(&mut g.rng, v.ty, &v.dims.clone(), &format!("convert({})", n.name), false))
}
