use super::*;
use crate::linalg::eigh::syevd;

fn symmetric() -> Vec<f64> {
    col_major(&[&[4.0, 1.0, -2.0, 2.0], &[1.0, 2.0, 0.0, 1.0], &[-2.0, 0.0, 3.0, -2.0], &[2.0, 1.0, -2.0, -1.0]])
}

/// numpy: `np.linalg.eigvalsh(A)` for the matrix of [`symmetric`].
const NUMPY_VALUES: [f64; 4] = [-2.197516977439427, 1.0843644637732177, 2.2685314064312423, 6.844621107234966];

#[test]
fn eigenvalues_match_numpy() {
    let e = syevd(&symmetric(), 4, true, false).expect("converges");
    assert_close(&e.values, &NUMPY_VALUES, 1e-14);
    assert!(e.vectors.is_empty());
    // The second-difference matrix tridiag(-1, 2, -1) of order 5 has eigenvalues
    // 2 - 2cos(kπ/6), k = 1..5 (numpy agrees: 0.26794919, 1, 2, 3, 3.73205081).
    let mut t = vec![0.0; 25];
    for i in 0..5 {
        t[i * 5 + i] = 2.0;
        if i + 1 < 5 {
            t[i * 5 + i + 1] = -1.0;
            t[(i + 1) * 5 + i] = -1.0;
        }
    }
    let want: Vec<f64> = (1..=5).map(|k| 2.0 - 2.0 * (k as f64 * std::f64::consts::PI / 6.0).cos()).collect();
    assert_close(&syevd(&t, 5, false, false).unwrap().values, &want, 1e-14);
}

#[test]
fn vectors_are_orthonormal_eigenvectors_with_positive_largest_component() {
    let a = symmetric();
    let e = syevd(&a, 4, true, true).unwrap();
    let av = matmul(&a, &e.vectors, 4, 4, 4);
    for j in 0..4 {
        let v = &e.vectors[j * 4..(j + 1) * 4];
        let lv: Vec<f64> = v.iter().map(|x| x * e.values[j]).collect();
        assert_close(&av[j * 4..(j + 1) * 4], &lv, 1e-13);
        let big = v.iter().cloned().fold(0.0f64, |m, x| if x.abs() > m.abs() { x } else { m });
        assert!(big > 0.0, "vector {j}: {v:?}");
    }
    let vtv = matmul(&transpose(&e.vectors, 4, 4), &e.vectors, 4, 4, 4);
    let eye: Vec<f64> = (0..16).map(|x| if x % 4 == x / 4 { 1.0 } else { 0.0 }).collect();
    assert_close(&vtv, &eye, 1e-14);
}

#[test]
fn only_the_named_triangle_is_read() {
    let mut lower = symmetric();
    let mut upper = symmetric();
    for j in 0..4 {
        for i in 0..4 {
            if i < j {
                lower[j * 4 + i] = 100.0; // above the diagonal: ignored for 'L'
            } else if i > j {
                upper[j * 4 + i] = -100.0; // below: ignored for 'U'
            }
        }
    }
    assert_close(&syevd(&lower, 4, true, false).unwrap().values, &NUMPY_VALUES, 1e-14);
    assert_close(&syevd(&upper, 4, false, false).unwrap().values, &NUMPY_VALUES, 1e-14);
}

#[test]
fn degenerate_and_non_finite_matrices() {
    // A multiple of the identity is already diagonal; the empty matrix has nothing to do.
    let e = syevd(&[3.0, 0.0, 0.0, 3.0], 2, true, true).unwrap();
    assert_eq!(e.values, vec![3.0, 3.0]);
    assert_eq!(e.vectors, vec![1.0, 0.0, 0.0, 1.0]);
    assert!(syevd::<f64>(&[], 0, true, true).unwrap().values.is_empty());
    assert!(syevd(&[f64::NAN, 0.0, 0.0, 1.0], 2, true, true).is_none());
    // Entries whose squares overflow f64: [[0, h], [h, 0]] has eigenvalues -h and h.
    let h = 1e200;
    assert_close(&syevd(&[0.0, h, h, 0.0], 2, true, false).unwrap().values, &[-h, h], 1e-15);
    // A larger random matrix: the trace and Frobenius norm are invariants of the spectrum.
    let n = 12;
    let g = pseudo_random(n, n, 5);
    let a: Vec<f64> = (0..n * n).map(|x| g[x] + g[(x % n) * n + x / n]).collect();
    let e = syevd(&a, n, true, true).unwrap();
    let trace: f64 = (0..n).map(|i| a[i * n + i]).sum();
    let frob: f64 = a.iter().map(|x| x * x).sum();
    assert!((e.values.iter().sum::<f64>() - trace).abs() < 1e-12);
    assert!((e.values.iter().map(|x| x * x).sum::<f64>() - frob).abs() < 1e-11);
    assert!(e.values.windows(2).all(|w| w[0] <= w[1]), "ascending");
}
