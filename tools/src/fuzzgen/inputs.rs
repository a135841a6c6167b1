//! Argument values: mostly small numbers, with the edge values that find bugs (zeros of
//! both signs, ±1, integer extremes, large floats, infinities and NaN now and then).

use hlojit_runtime::{ArrayLiteral, ElementType as T};
use num_complex::Complex64;
use rand::Rng;

pub fn random_array(rng: &mut impl Rng, t: T, dims: &[i64]) -> ArrayLiteral {
    let mut a = ArrayLiteral::zeros(t, dims);
    let specials = rng.gen_bool(0.3);
    for i in 0..a.element_count() {
        if t == T::Pred {
            a.set_i64(i, rng.gen_range(0..2));
        } else if t.is_int() {
            let w = t.bit_width();
            let v: i64 = if specials && rng.gen_bool(0.15) {
                let (min, max) = if t.is_unsigned_int() { (0i128, (1i128 << w) - 1) } else { (-(1i128 << (w - 1)), (1i128 << (w - 1)) - 1) };
                [min, max, 0, -1, w as i128][rng.gen_range(0..5)] as i64
            } else {
                rng.gen_range(-4..12)
            };
            a.set_i64(i, v);
        } else if t.is_complex() {
            // Finite only: with infinities, where a complex dot turns them into NaN depends on
            // how it splits the products (XLA:CPU: per element; GEMM-based: per real part).
            a.set_c128(i, Complex64::new(float(rng, false), float(rng, false)));
        } else {
            a.set_f64(i, float(rng, specials));
        }
    }
    a
}

fn float(rng: &mut impl Rng, specials: bool) -> f64 {
    if specials && rng.gen_bool(0.1) {
        return [0.0, -0.0, 1.0, -1.0, 100.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 0.5][rng.gen_range(0..9)];
    }
    // Rounded to 1/64 so that values are exact in every float type down to f16 and sums of a
    // few are exact too.
    (rng.gen_range(-2.0..2.0f64) * 64.0).round() / 64.0
}
