//! Element types, shapes and layouts the generator draws from, and how they print.

use hlojit_runtime::ElementType as T;
use rand::seq::SliceRandom;
use rand::Rng;

/// Every element type a program may use (those XLA:CPU and jaxlib both take as inputs).
pub const ALL: &[T] = &[
    T::Pred, T::S8, T::S16, T::S32, T::S64, T::U8, T::U16, T::U32, T::U64, T::F16, T::BF16, T::F32, T::F64, T::C64, T::C128,
];
pub const FLOATS: &[T] = &[T::F16, T::BF16, T::F32, T::F64];
pub const INTS: &[T] = &[T::S8, T::S16, T::S32, T::S64, T::U8, T::U16, T::U32, T::U64];

/// A type, weighted towards the common ones (f32, s32) so that chains meet often.
pub fn pick_type(rng: &mut impl Rng) -> T {
    match rng.gen_range(0..10) {
        0..=3 => T::F32,
        4 => T::S32,
        _ => *ALL.choose(rng).unwrap(),
    }
}

/// Small dimensions (no zero-size arrays: every value must have an element 0 to draw from).
pub fn pick_dims(rng: &mut impl Rng) -> Vec<i64> {
    let rank = [0, 1, 1, 2, 2, 2, 3, 3, 4].choose(rng).copied().unwrap();
    (0..rank).map(|_| [1, 2, 3, 4, 5, 7, 8].choose(rng).copied().unwrap()).collect()
}

/// A layout (`minor_to_major`) for `rank` dims: the default most of the time, otherwise a
/// random permutation, so that kernels meet column-major and odd orders inside programs.
pub fn pick_layout(rng: &mut impl Rng, rank: usize) -> Option<Vec<usize>> {
    if rank < 2 || rng.gen_bool(0.7) {
        return None;
    }
    let mut p: Vec<usize> = (0..rank).collect();
    p.shuffle(rng);
    Some(p)
}

/// `f32[2,3]` or, with a layout, `f32[2,3]{0,1}`.
pub fn shape_text(t: T, dims: &[i64], layout: Option<&[usize]>) -> String {
    let d: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    match layout {
        Some(l) => {
            let l: Vec<String> = l.iter().map(|d| d.to_string()).collect();
            format!("{t}[{}]{{{}}}", d.join(","), l.join(","))
        }
        None => format!("{t}[{}]", d.join(",")),
    }
}

pub fn list(v: &[i64]) -> String {
    v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}

/// The real type of a complex type's parts.
pub fn real_of(t: T) -> T {
    match t {
        T::C64 => T::F32,
        T::C128 => T::F64,
        t => t,
    }
}

/// A literal of type `t` holding the small integer `v` (true/false for pred).
pub fn scalar_literal(t: T, v: i64) -> String {
    match t {
        T::Pred => (if v != 0 { "true" } else { "false" }).into(),
        T::C64 | T::C128 => format!("({v}, 0)"),
        t if t.is_unsigned_int() => v.max(0).to_string(),
        _ => v.to_string(),
    }
}

/// The identity and the XLA reduction computation kind for a reduction over type `t`.
pub fn reducer_for(rng: &mut impl Rng, t: T) -> (&'static str, String) {
    if t == T::Pred {
        return if rng.gen_bool(0.5) { ("and", "true".into()) } else { ("or", "false".into()) };
    }
    let kinds: &[&str] = if t.is_complex() { &["add", "multiply"] } else { &["add", "maximum", "minimum", "multiply"] };
    let k = *kinds.choose(rng).unwrap();
    let init = match k {
        "add" => scalar_literal(t, 0),
        "multiply" => scalar_literal(t, 1),
        "maximum" if t.is_float() => "-inf".into(),
        "minimum" if t.is_float() => "inf".into(),
        "maximum" => min_value(t),
        _ => max_value(t),
    };
    (k, init)
}

/// The largest (`max`) or smallest value of integer type `t`, as a literal.
pub fn extreme(t: T, max: bool) -> String {
    if max { max_value(t) } else { min_value(t) }
}

fn min_value(t: T) -> String {
    if t.is_unsigned_int() {
        return "0".into();
    }
    (-(1i128 << (t.bit_width() - 1))).to_string()
}

fn max_value(t: T) -> String {
    if t.is_unsigned_int() {
        return ((1u128 << t.bit_width()) - 1).to_string();
    }
    ((1i128 << (t.bit_width() - 1)) - 1).to_string()
}
