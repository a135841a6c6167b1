use super::*;
use crate::linalg::trsm::{trsm, Options};

/// The triangle of the column-major `k` x `k` matrix `a` that `opts` names, with a unit
/// diagonal when asked: the matrix the solver must actually use.
fn triangle(a: &[f64], k: usize, opts: Options) -> Vec<f64> {
    (0..k * k)
        .map(|x| {
            let (i, j) = (x % k, x / k);
            if i == j {
                if opts.unit_diagonal {
                    1.0
                } else {
                    a[x]
                }
            } else if (i > j) == opts.lower {
                a[x]
            } else {
                0.0
            }
        })
        .collect()
}

#[test]
fn every_combination_solves_its_equation() {
    let (m, n) = (4, 3);
    for bits in 0..16 {
        let opts = Options {
            left: bits & 1 != 0,
            lower: bits & 2 != 0,
            transpose: bits & 4 != 0,
            unit_diagonal: bits & 8 != 0,
        };
        let k = if opts.left { m } else { n };
        let mut a = pseudo_random(k, k, bits as u64);
        for i in 0..k {
            a[i * k + i] += if a[i * k + i] < 0.0 { -2.0 } else { 2.0 }; // well conditioned
        }
        let x = pseudo_random(m, n, 100 + bits as u64);
        let mut t = triangle(&a, k, opts);
        if opts.transpose {
            t = transpose(&t, k, k);
        }
        // B = op(A)·X or X·op(A), scaled by 1/alpha so that the solve with alpha gives X.
        let alpha = 2.0;
        let b: Vec<f64> = if opts.left { matmul(&t, &x, m, m, n) } else { matmul(&x, &t, m, n, n) }
            .iter()
            .map(|v| v / alpha)
            .collect();
        let mut got = b.clone();
        trsm(opts, m, n, alpha, &a, &mut got);
        assert_close(&got, &x, 1e-12);
    }
}
