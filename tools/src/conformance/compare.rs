//! The corpus's comparison rule: bitwise equality (any NaN matching any NaN) for exact cases,
//! `|got - want| <= atol + rtol * |want|` for the others, with NaN positions and infinities
//! matching exactly and integers always equal.

use hlojit_runtime::{ArrayLiteral, ElementType};

/// `None` when `got` matches `want`, else a description of the first mismatch.
pub fn compare(got: &ArrayLiteral, want: &ArrayLiteral, exact: bool, rtol: f64, atol: f64) -> Option<String> {
    if got.element_type() != want.element_type() || got.dims() != want.dims() {
        return Some(format!(
            "result is {}{:?}, expected {}{:?}",
            got.element_type(),
            got.dims(),
            want.element_type(),
            want.dims()
        ));
    }
    let t = want.element_type();
    let mut mismatches = 0usize;
    let mut first = None;
    for i in 0..want.element_count() {
        let ok = if t.is_complex() {
            let (g, w) = (got.get_c128(i), want.get_c128(i));
            if exact {
                same_float(g.re, w.re) && same_float(g.im, w.im)
            } else {
                complex_close(g, w, rtol, atol)
            }
        } else if t.is_float() {
            let (g, w) = (got.get_f64(i), want.get_f64(i));
            if exact {
                (is_nan(got, i) && is_nan(want, i)) || got.bits(i) == want.bits(i)
            } else {
                close(g, w, rtol, atol)
            }
        } else {
            got.bits(i) == want.bits(i)
        };
        if !ok {
            mismatches += 1;
            if first.is_none() {
                first = Some(format!("element {i}: got {}, expected {}", show(got, i), show(want, i)));
            }
        }
    }
    first.map(|f| format!("{mismatches} of {} elements differ; {f}", want.element_count()))
}

/// [`compare`] of complex arrays by the magnitudes of their elements: for results that are
/// unique only up to unit-modulus factors (the Schur vectors of a complex Schur form, and with
/// them the Schur form's off-diagonal elements), which different LAPACK builds choose
/// differently. Other element types compare as [`compare`] does.
pub fn compare_up_to_phase(got: &ArrayLiteral, want: &ArrayLiteral, rtol: f64, atol: f64) -> Option<String> {
    if !want.element_type().is_complex() || got.element_type() != want.element_type() || got.dims() != want.dims() {
        return compare(got, want, false, rtol, atol);
    }
    let mut mismatches = 0usize;
    let mut first = None;
    for i in 0..want.element_count() {
        let (g, w) = (got.get_c128(i).norm(), want.get_c128(i).norm());
        if !close(g, w, rtol, atol) {
            mismatches += 1;
            if first.is_none() {
                first = Some(format!("element {i}: got {} (magnitude {g:e}), expected {} (magnitude {w:e})", show(got, i), show(want, i)));
            }
        }
    }
    first.map(|f| format!("{mismatches} of {} elements differ in magnitude; {f}", want.element_count()))
}

fn is_nan(a: &ArrayLiteral, i: usize) -> bool {
    a.get_f64(i).is_nan()
}

fn same_float(g: f64, w: f64) -> bool {
    (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits()
}

fn close(g: f64, w: f64, rtol: f64, atol: f64) -> bool {
    if w.is_nan() || g.is_nan() {
        return w.is_nan() && g.is_nan();
    }
    if w.is_infinite() || g.is_infinite() {
        return g == w;
    }
    (g - w).abs() <= atol + rtol * w.abs()
}

fn complex_close(g: num_complex::Complex64, w: num_complex::Complex64, rtol: f64, atol: f64) -> bool {
    let g_nan = g.re.is_nan() || g.im.is_nan();
    let w_nan = w.re.is_nan() || w.im.is_nan();
    if g_nan || w_nan {
        return g_nan && w_nan;
    }
    let g_inf = g.re.is_infinite() || g.im.is_infinite();
    let w_inf = w.re.is_infinite() || w.im.is_infinite();
    if g_inf || w_inf {
        // The distance is infinite or NaN here, so compare the parts: infinite parts must be
        // equal, finite ones close (`(-3.1415925, inf)` against `(-3.1415923, inf)` is close).
        return close(g.re, w.re, rtol, atol) && close(g.im, w.im, rtol, atol);
    }
    (g - w).norm() <= atol + rtol * w.norm()
}

fn show(a: &ArrayLiteral, i: usize) -> String {
    let t = a.element_type();
    if t.is_complex() {
        let c = a.get_c128(i);
        format!("({}, {})", c.re, c.im)
    } else if t.is_float() {
        let v = a.get_f64(i);
        match t {
            ElementType::F32 | ElementType::F64 => format!("{v:e}"),
            _ => format!("{v:e} (bits {:#x})", a.bits(i)),
        }
    } else {
        format!("{}", a.get_i64(i))
    }
}
