use super::*;
use crate::linalg::cholesky::potrf;

// The classic example: [[4,12,-16],[12,37,-43],[-16,-43,98]] = L·Lᵀ with
// L = [[2,0,0],[6,1,0],[-8,5,3]] (checked by multiplying out by hand).
fn spd() -> Vec<f64> {
    col_major(&[&[4.0, 12.0, -16.0], &[12.0, 37.0, -43.0], &[-16.0, -43.0, 98.0]])
}

#[test]
fn lower_factor_keeps_the_upper_triangle() {
    let mut a = spd();
    // Mark the upper triangle: LAPACK neither reads nor writes it.
    a[3] = 111.0;
    a[6] = 222.0;
    a[7] = 333.0;
    assert_eq!(potrf(&mut a, 3, true), 0);
    let want = col_major(&[&[2.0, 111.0, 222.0], &[6.0, 1.0, 333.0], &[-8.0, 5.0, 3.0]]);
    assert_close(&a, &want, 1e-14);
}

#[test]
fn upper_factor_is_the_transpose() {
    let mut a = spd();
    a[1] = 999.0; // below the diagonal: not read for 'U'
    assert_eq!(potrf(&mut a, 3, false), 0);
    // U = Lᵀ = [[2,6,-8],[0,1,5],[0,0,3]] above the diagonal; below it the input stays.
    let want = col_major(&[&[2.0, 6.0, -8.0], &[999.0, 1.0, 5.0], &[-16.0, -43.0, 3.0]]);
    assert_close(&a, &want, 1e-14);
}

#[test]
fn not_positive_definite_reports_the_minor() {
    // The 2x2 leading minor of [[1,2],[2,1]] has determinant -3.
    let mut a = col_major(&[&[1.0, 2.0], &[2.0, 1.0]]);
    assert_eq!(potrf(&mut a, 2, true), 2);
    assert_eq!(a[0], 1.0);
    assert_eq!(a[1], 2.0);
    assert_eq!(a[3], -3.0, "the failing diagonal holds a[1][1] - l[1][0]², as LAPACK leaves it");
    let mut nan = col_major(&[&[f64::NAN, 0.0], &[0.0, 1.0]]);
    assert_eq!(potrf(&mut nan, 2, true), 1);
}

#[test]
fn reconstructs_a_random_spd_matrix() {
    let n = 7;
    let g = pseudo_random(n, n, 9);
    let mut a = matmul(&g, &transpose(&g, n, n), n, n, n);
    for i in 0..n {
        a[i * n + i] += 0.5;
    }
    let mut f = a.clone();
    assert_eq!(potrf(&mut f, n, true), 0);
    let l: Vec<f64> = (0..n * n).map(|x| if x % n >= x / n { f[x] } else { 0.0 }).collect();
    assert_close(&matmul(&l, &transpose(&l, n, n), n, n, n), &a, 1e-13);
}
