use super::*;
use crate::linalg::lu::getrf;

/// Splits a factored `n` x `n` matrix into unit lower `L` and upper `U`.
fn split(a: &[f64], n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut l = vec![0.0; n * n];
    let mut u = vec![0.0; n * n];
    for j in 0..n {
        for i in 0..n {
            match i.cmp(&j) {
                std::cmp::Ordering::Greater => l[j * n + i] = a[j * n + i],
                std::cmp::Ordering::Equal => {
                    l[j * n + i] = 1.0;
                    u[j * n + i] = a[j * n + i];
                }
                std::cmp::Ordering::Less => u[j * n + i] = a[j * n + i],
            }
        }
    }
    (l, u)
}

/// Applies the swaps `ipiv` (1-based) to the rows of `a`, in order: `P·A`.
fn permute(a: &[f64], m: usize, n: usize, ipiv: &[i32]) -> Vec<f64> {
    let mut p = a.to_vec();
    for (j, &r) in ipiv.iter().enumerate() {
        for c in 0..n {
            p.swap(c * m + j, c * m + r as usize - 1);
        }
    }
    p
}

#[test]
fn hand_worked_3x3() {
    // Worked by hand: pivot 7 (row 3), then 6/7 (row 3 again after the first swap).
    let mut a = col_major(&[&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], &[7.0, 8.0, 10.0]]);
    let mut ipiv = [0; 3];
    assert_eq!(getrf(&mut a, 3, 3, &mut ipiv), 0);
    assert_eq!(ipiv, [3, 3, 3]);
    let want = col_major(&[&[7.0, 8.0, 10.0], &[1.0 / 7.0, 6.0 / 7.0, 11.0 / 7.0], &[4.0 / 7.0, 0.5, -0.5]]);
    assert_close(&a, &want, 1e-14);
}

#[test]
fn ties_pick_the_first_row() {
    let mut a = col_major(&[&[2.0, 1.0], &[-2.0, 3.0]]);
    let mut ipiv = [0; 2];
    getrf(&mut a, 2, 2, &mut ipiv);
    assert_eq!(ipiv[0], 1, "|2| = |-2|: the first row stays, as isamax picks it");
}

#[test]
fn reconstructs_rectangular_matrices() {
    for (m, n) in [(6, 6), (7, 4), (4, 7)] {
        let a0 = pseudo_random(m, n, (m * 10 + n) as u64);
        let mut a = a0.clone();
        let k = m.min(n);
        let mut ipiv = vec![0; k];
        assert_eq!(getrf(&mut a, m, n, &mut ipiv), 0);
        // L is m x k (unit lower trapezoid), U is k x n (upper trapezoid).
        let l: Vec<f64> = (0..k)
            .flat_map(|j| (0..m).map(move |i| (i, j)))
            .map(|(i, j)| {
                if i > j {
                    a[j * m + i]
                } else if i == j {
                    1.0
                } else {
                    0.0
                }
            })
            .collect();
        let u: Vec<f64> = (0..n)
            .flat_map(|j| (0..k).map(move |i| (i, j)))
            .map(|(i, j)| if i <= j { a[j * m + i] } else { 0.0 })
            .collect();
        assert_close(&matmul(&l, &u, m, k, n), &permute(&a0, m, n, &ipiv), 1e-13);
        assert!(l.iter().all(|x| x.abs() <= 1.0), "partial pivoting bounds L by 1");
    }
}

#[test]
fn singular_matrix_reports_the_first_zero_pivot() {
    let mut a = col_major(&[&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0], &[1.0, 1.0, 1.0]]);
    let mut ipiv = [0; 3];
    // Rank 2 with the zero pivot at step 3 (1-based): row 2 is twice row 1.
    assert_eq!(getrf(&mut a, 3, 3, &mut ipiv), 3);
    let (l, u) = split(&a, 3);
    let a0 = col_major(&[&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0], &[1.0, 1.0, 1.0]]);
    assert_close(&matmul(&l, &u, 3, 3, 3), &permute(&a0, 3, 3, &ipiv), 1e-14);
}

#[test]
fn f32_agrees_with_f64() {
    let a0 = pseudo_random(5, 5, 3);
    let mut a32: Vec<f32> = a0.iter().map(|&x| x as f32).collect();
    let mut a64 = a0.clone();
    let (mut p32, mut p64) = ([0; 5], [0; 5]);
    getrf(&mut a32, 5, 5, &mut p32);
    getrf(&mut a64, 5, 5, &mut p64);
    assert_eq!(p32, p64);
    assert_close(&a32.iter().map(|&x| x as f64).collect::<Vec<_>>(), &a64, 1e-5);
}
