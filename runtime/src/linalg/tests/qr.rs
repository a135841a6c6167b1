use super::*;
use crate::linalg::qr::{geqrf, orgqr};

#[test]
fn hand_worked_reflector() {
    // x = (3, 4): ‖x‖ = 5, beta = -5 (opposite sign to alpha), tau = (-5 - 3) / -5 = 1.6,
    // v = (1, 4 / (3 + 5)) = (1, 0.5).
    let mut a = vec![3.0, 4.0];
    let mut tau = [0.0];
    geqrf(&mut a, 2, 1, &mut tau);
    assert_close(&a, &[-5.0, 0.5], 1e-15);
    assert_close(&tau, &[1.6], 1e-15);
}

#[test]
fn column_already_reduced_gets_tau_zero() {
    // Below-diagonal part zero: H = I, whatever the sign of alpha.
    let mut a = col_major(&[&[-2.0, 1.0], &[0.0, 3.0], &[0.0, 4.0]]);
    let mut tau = [9.0, 9.0];
    geqrf(&mut a, 3, 2, &mut tau);
    assert_eq!(tau[0], 0.0);
    assert_eq!(a[0], -2.0);
    // Second column below row 0: (3, 4) -> beta = -5, tau = 1.6.
    assert_close(&[a[4], a[5], tau[1]], &[-5.0, 0.5, 1.6], 1e-15);
}

#[test]
fn q_times_r_reconstructs_and_q_is_orthonormal() {
    for (m, n) in [(6, 4), (5, 5), (8, 3)] {
        let a0 = pseudo_random(m, n, (m + 100 * n) as u64);
        let mut a = a0.clone();
        let mut tau = vec![0.0; n];
        geqrf(&mut a, m, n, &mut tau);
        let r: Vec<f64> = (0..n * n).map(|x| if x % n <= x / n { a[(x / n) * m + x % n] } else { 0.0 }).collect();
        let mut q = a.clone();
        orgqr(&mut q, m, n, &tau);
        assert_close(&matmul(&q, &r, m, n, n), &a0, 1e-13);
        let qtq = matmul(&transpose(&q, m, n), &q, n, m, n);
        let eye: Vec<f64> = (0..n * n).map(|x| if x % n == x / n { 1.0 } else { 0.0 }).collect();
        assert_close(&qtq, &eye, 1e-13);
    }
}

#[test]
fn wide_matrix_factors_its_leading_square() {
    // m < n: min(m, n) reflectors; R is the whole upper trapezoid.
    let (m, n) = (3, 5);
    let a0 = pseudo_random(m, n, 77);
    let mut a = a0.clone();
    let mut tau = vec![0.0; m];
    geqrf(&mut a, m, n, &mut tau);
    let mut q = a[..m * m].to_vec();
    orgqr(&mut q, m, m, &tau);
    let r: Vec<f64> = (0..m * n).map(|x| if x % m <= x / m { a[x] } else { 0.0 }).collect();
    assert_close(&matmul(&q, &r, m, m, n), &a0, 1e-13);
}
