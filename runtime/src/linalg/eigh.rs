//! `syevd`: eigenvalues and eigenvectors of a symmetric matrix, by cyclic Jacobi rotations in
//! `f64` (accurate to a few ulps of the matrix norm, which is what LAPACK's divide and conquer
//! guarantees too; any accurate method agrees with it up to rounding).

use super::args::{batch_then, char_attr, counted, expect_counts, expect_dims, split_batch};
use super::scalar::Real;
use hlojit_ffi::handler::{Call, Error, HandlerResult};

/// Sweeps before giving up; Jacobi converges quadratically, in well under 20 in practice.
const MAX_SWEEPS: usize = 60;

/// The eigen-decomposition of one symmetric `n` x `n` matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Eigh {
    /// Eigenvalues, ascending.
    pub values: Vec<f64>,
    /// Column-major `n` x `n`: column `j` is the unit eigenvector of `values[j]`, signed so
    /// that its component of largest magnitude (the first such) is positive. Empty unless
    /// vectors were asked for.
    pub vectors: Vec<f64>,
}

/// Decomposes the symmetric matrix whose `lower` (or upper) triangle the column-major `a`
/// holds; the other triangle is not read, as in LAPACK. `None` when the matrix is not finite
/// or the iteration does not converge (LAPACK's `info > 0`).
pub fn syevd<T: Real>(a: &[T], n: usize, lower: bool, vectors: bool) -> Option<Eigh> {
    let mut s = vec![0.0f64; n * n];
    for j in 0..n {
        for i in 0..n {
            let stored = if (i >= j) == lower { a[j * n + i] } else { a[i * n + j] };
            s[j * n + i] = stored.to_f64();
        }
    }
    if s.iter().any(|v| !v.is_finite()) {
        return None;
    }
    // Work on A / max|a| so that the sums of squares of the convergence test cannot overflow;
    // the eigenvalues scale back (eigenvectors do not change).
    let scale = s.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if scale > 0.0 {
        s.iter_mut().for_each(|x| *x /= scale);
    }
    let mut v = if vectors { identity(n) } else { Vec::new() };
    let norm2: f64 = s.iter().map(|x| x * x).sum();
    let mut converged = false;
    for _ in 0..MAX_SWEEPS {
        let off: f64 = (0..n).flat_map(|q| (0..q).map(move |p| (p, q))).map(|(p, q)| s[q * n + p].powi(2)).sum();
        if off == 0.0 || off <= (f64::EPSILON * f64::EPSILON) * norm2 * 1e-2 {
            converged = true;
            break;
        }
        for q in 1..n {
            for p in 0..q {
                rotate(&mut s, &mut v, n, p, q);
            }
        }
    }
    if !converged {
        return None;
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| s[x * n + x].total_cmp(&s[y * n + y]));
    let values = order.iter().map(|&j| s[j * n + j] * if scale > 0.0 { scale } else { 1.0 }).collect();
    let mut sorted = Vec::with_capacity(if vectors { n * n } else { 0 });
    if vectors {
        for &j in &order {
            let col = &v[j * n..(j + 1) * n];
            let big = col.iter().enumerate().fold(0, |b, (i, x)| if x.abs() > col[b].abs() { i } else { b });
            let sign = if col[big] < 0.0 { -1.0 } else { 1.0 };
            sorted.extend(col.iter().map(|x| x * sign));
        }
    }
    Some(Eigh { values, vectors: sorted })
}

fn identity(n: usize) -> Vec<f64> {
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    v
}

/// One Jacobi rotation in the (p, q) plane that zeroes `s[p][q]` (both triangles of `s` are
/// kept), accumulated into the columns of `v` when vectors are wanted.
fn rotate(s: &mut [f64], v: &mut [f64], n: usize, p: usize, q: usize) {
    let apq = s[q * n + p];
    let (app, aqq) = (s[p * n + p], s[q * n + q]);
    // An element this small next to its diagonal moves the eigenvalues by less than an ulp:
    // dropping it is what lets the sweeps end with an exactly diagonal matrix.
    if apq.abs() <= f64::EPSILON * 0.5 * (app * aqq).abs().sqrt() {
        s[q * n + p] = 0.0;
        s[p * n + q] = 0.0;
        return;
    }
    let theta = (aqq - app) / (2.0 * apq);
    // The smaller root of t² + 2θt - 1 = 0, stable for large θ (where θ² would overflow).
    let t =
        if theta.abs() > 1e150 { 0.5 / theta } else { theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt()) };
    let c = 1.0 / (t * t + 1.0).sqrt();
    let sn = t * c;
    s[p * n + p] = app - t * apq;
    s[q * n + q] = aqq + t * apq;
    s[q * n + p] = 0.0;
    s[p * n + q] = 0.0;
    for r in 0..n {
        if r == p || r == q {
            continue;
        }
        let (arp, arq) = (s[p * n + r], s[q * n + r]);
        let (np, nq) = (c * arp - sn * arq, sn * arp + c * arq);
        s[p * n + r] = np;
        s[r * n + p] = np;
        s[q * n + r] = nq;
        s[r * n + q] = nq;
    }
    if !v.is_empty() {
        for r in 0..n {
            let (vp, vq) = (v[p * n + r], v[q * n + r]);
            v[p * n + r] = c * vp - sn * vq;
            v[q * n + r] = sn * vp + c * vq;
        }
    }
}

/// The `lapack_?syevd_ffi` handler: `(a) -> (vectors, values: [..., n], info: s32[...])` with
/// attributes `uplo` (`'L'`/`'U'`) and `mode` (`'V'` vectors too, `'N'` values only; then
/// the first result keeps the input, whose contents LAPACK leaves unspecified). A matrix that
/// is not finite gets `info = 1` and NaN results.
pub fn handler<T: Real>(mut call: Call<'_>) -> HandlerResult {
    expect_counts(call.args.len(), call.rets.len(), &[1], 3)?;
    let lower = char_attr(&call.attrs, "uplo", b"LU")? == b'L';
    let vectors = char_attr(&call.attrs, "mode", b"VN")? == b'V';
    let x = call.arg(0)?;
    let dims = x.dims();
    let b = split_batch(dims, "the matrix")?;
    if b.rows != b.cols {
        return Err(Error::invalid_argument(format!("the matrix must be square, has shape {dims:?}")));
    }
    let n = b.rows;
    let input = x.as_slice::<T>()?;
    let [out, w, info, ..] = &mut call.rets[..] else { return Err(counted()) };
    expect_dims(out.dims(), dims, "the eigenvector result")?;
    expect_dims(w.dims(), &batch_then(dims, &[n as i64]), "the eigenvalue result")?;
    expect_dims(info.dims(), &batch_then(dims, &[]), "the info result")?;
    let out = out.as_mut_slice::<T>()?;
    let w = w.as_mut_slice::<T>()?;
    let info = info.as_mut_slice::<i32>()?;
    out.copy_from_slice(input);
    let len = b.matrix_len();
    for i in 0..b.count {
        let (a, vs, ws) =
            (&input[i * len..(i + 1) * len], &mut out[i * len..(i + 1) * len], &mut w[i * n..(i + 1) * n]);
        match syevd(a, n, lower, vectors) {
            Some(e) => {
                info[i] = 0;
                for (w, v) in ws.iter_mut().zip(&e.values) {
                    *w = T::from_f64(*v);
                }
                for (o, v) in vs.iter_mut().zip(&e.vectors) {
                    *o = T::from_f64(*v);
                }
            }
            None => {
                info[i] = 1;
                ws.fill(T::from_f64(f64::NAN));
                vs.fill(T::from_f64(f64::NAN));
            }
        }
    }
    Ok(())
}
