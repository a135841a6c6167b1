//! Tests of the built-in LAPACK routines against results known independently of them:
//! hand-worked factorizations, reconstructions (`P·A = L·U`, `Q·R = A`, `A·v = λ·v`), and
//! eigenvalues computed with numpy.

mod cholesky;
mod eigh;
mod ffi;
mod lu;
mod qr;
mod trsm;

/// A column-major matrix from its rows.
pub fn col_major(rows: &[&[f64]]) -> Vec<f64> {
    let (m, n) = (rows.len(), rows[0].len());
    (0..n).flat_map(|j| (0..m).map(move |i| rows[i][j])).collect()
}

/// `a` (m x k) times `b` (k x n), column-major.
pub fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for j in 0..n {
        for l in 0..k {
            for i in 0..m {
                c[j * m + i] += a[l * m + i] * b[j * k + l];
            }
        }
    }
    c
}

/// The transpose of the column-major `m` x `n` matrix `a`.
pub fn transpose(a: &[f64], m: usize, n: usize) -> Vec<f64> {
    (0..m).flat_map(|i| (0..n).map(move |j| a[j * m + i])).collect()
}

pub fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "element {i}: got {g}, want {w}\ngot  {got:?}\nwant {want:?}");
    }
}

/// A deterministic pseudo-random column-major `m` x `n` matrix with entries in [-1, 1).
pub fn pseudo_random(m: usize, n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..m * n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}
