//! The one-line summary `hlojit run` prints for each result: type, dimensions, the first
//! elements (complex ones as `re+imj`) and, for floating-point results, the range and mean of
//! the finite values with the count of NaNs and infinities, so an all-NaN result says so
//! instead of showing `min inf max -inf`.

use hlojit::ArrayLiteral;

/// How many leading elements are shown.
const HEAD: usize = 6;

fn element(a: &ArrayLiteral, i: usize) -> String {
    let t = a.element_type();
    if t.is_complex() {
        let c = a.get_c128(i);
        format!("{:.6}{:+.6}j", c.re, c.im)
    } else if t.is_floating() {
        format!("{:.6}", a.get_f64(i))
    } else {
        a.get_i64(i).to_string()
    }
}

/// Range, mean and non-finite counts of some values.
fn stats(values: impl Iterator<Item = f64>) -> String {
    let (mut min, mut max, mut sum, mut finite, mut nan, mut inf) = (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0usize, 0usize, 0usize);
    for v in values {
        if v.is_nan() {
            nan += 1;
        } else if v.is_infinite() {
            inf += 1;
        } else {
            min = min.min(v);
            max = max.max(v);
            sum += v;
            finite += 1;
        }
    }
    let mut s = if finite > 0 { format!("min {min:.6} max {max:.6} mean {:.6}", sum / finite as f64) } else { "no finite values".to_string() };
    if nan > 0 {
        s.push_str(&format!(", {nan} NaN"));
    }
    if inf > 0 {
        s.push_str(&format!(", {inf} infinite"));
    }
    s
}

/// `f32[2, 3] [1.0, ...] min .. max .. mean ..`.
pub fn summarize(a: &ArrayLiteral) -> String {
    let n = a.element_count();
    let head: Vec<String> = (0..n.min(HEAD)).map(|i| element(a, i)).collect();
    let mut s = format!("{}{:?} [{}{}]", a.element_type(), a.dims(), head.join(", "), if n > HEAD { ", ..." } else { "" });
    let t = a.element_type();
    if n > 0 && t.is_complex() {
        s.push_str(&format!(" real: {}; imaginary: {}", stats((0..n).map(|i| a.get_c128(i).re)), stats((0..n).map(|i| a.get_c128(i).im))));
    } else if n > 0 && t.is_float() {
        s.push(' ');
        s.push_str(&stats((0..n).map(|i| a.get_f64(i))));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex32;

    #[test]
    fn all_nan_says_so_and_complex_shows_imaginary_parts() {
        let nan = ArrayLiteral::from_slice(&[3], &[f32::NAN, f32::NAN, f32::NAN]).unwrap();
        let s = summarize(&nan);
        assert!(s.contains("no finite values, 3 NaN") && !s.contains("inf"), "{s}");
        let mixed = ArrayLiteral::from_slice(&[3], &[1.0f32, f32::INFINITY, 3.0]).unwrap();
        assert!(summarize(&mixed).ends_with("min 1.000000 max 3.000000 mean 2.000000, 1 infinite"), "{}", summarize(&mixed));
        let c = ArrayLiteral::from_slice(&[2], &[Complex32::new(1.0, -2.0), Complex32::new(0.5, 4.0)]).unwrap();
        let s = summarize(&c);
        assert!(s.contains("[1.000000-2.000000j, 0.500000+4.000000j]"), "{s}");
        assert!(s.contains("imaginary: min -2.000000 max 4.000000"), "{s}");
    }
}
