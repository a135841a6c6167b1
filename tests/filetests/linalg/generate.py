# Generates the linalg file tests (expected values from numpy/scipy in float64). Run: python3 generate.py
import numpy as np, scipy.linalg as sl
rng = np.random.default_rng(7)
def num(x):
    return repr(float(x))
def cplx(x):
    return f"({num(x.real)}, {num(x.imag)})"
def lit(a, f):
    if a.ndim == 0: return f(a)
    if a.ndim == 1: return "{" + ", ".join(f(x) for x in a) + "}"
    return "{" + ", ".join(lit(x, f) for x in a) + "}"
def spd(n, complex_=False):
    m = rng.standard_normal((n, n)) + (1j*rng.standard_normal((n, n)) if complex_ else 0)
    return m @ m.conj().T + n*np.eye(n)

# 1. c128 lower cholesky, batch 2, garbage above the diagonal; result must be zero there.
A = np.stack([spd(3, True), spd(3, True)])
L = np.stack([np.linalg.cholesky(a) for a in A])
G = A.copy()
for b in range(2):
    G[b][np.triu_indices(3, 1)] = 100 + 50j   # never read
open("cholesky_c128_lower.hlo","w").write(f"""// Complex Hermitian cholesky (lower) over a batch of 2; the strictly upper triangle of the
// operand holds garbage (100+50i) that must not be read, and the result is zero there.
// Expected values: numpy.linalg.cholesky of the Hermitian matrices, float64.
// input: c128[2,3,3] {lit(G, cplx)}
// expect: c128[2,3,3] {lit(L, cplx)}
// tolerance: rtol=1e-12 atol=1e-12
HloModule cholesky_c128_lower

ENTRY main {{
  a = c128[2,3,3] parameter(0)
  ROOT l = c128[2,3,3] cholesky(a), lower=true
}}
""")

# 2. f32 upper cholesky of 2*x (fused multiply) with non-default layouts; garbage below.
A = spd(4) / 2
U = np.linalg.cholesky(2*A).T
G = A.copy(); G[np.tril_indices(4, -1)] = -7.0
open("cholesky_f32_upper_fused_layout.hlo","w").write(f"""// Upper cholesky of 2*x, where the doubling can be fused into the cholesky's operand; operand
// and result are column-major; the strictly lower triangle holds garbage (-7) that must not
// be read, and the result is zero there. Expected values: numpy.linalg.cholesky(2*x).T in
// float64 (x symmetric positive definite).
// input: f32[4,4] {lit(G, num)}
// expect: f32[4,4] {lit(U, num)}
// tolerance: rtol=1e-5 atol=1e-5
HloModule cholesky_f32_upper_fused_layout, entry_computation_layout={{(f32[4,4]{{0,1}})->f32[4,4]{{0,1}}}}

ENTRY main {{
  x = f32[4,4]{{0,1}} parameter(0)
  two = f32[] constant(2)
  t = f32[4,4]{{0,1}} broadcast(two), dimensions={{}}
  a = f32[4,4]{{0,1}} multiply(x, t)
  ROOT u = f32[4,4]{{0,1}} cholesky(a), lower=false
}}
""")

# 3. Not positive definite: NaN appears (sqrt of a negative pivot).
open("cholesky_not_positive_definite.hlo","w").write("""// A matrix that is not positive definite: the second pivot is 1 - 2*2 = -3 < 0, whose
// square root is NaN, which then spreads to the rest of the factor. Worked out by hand:
// l00 = sqrt(1) = 1, l10 = 2 / 1 = 2, l11 = sqrt(1 - 4) = NaN.
// input: f64[2,2] {{1, 0}, {2, 1}}
// expect: f64[2,2] {{1, 0}, {2, nan}}
HloModule cholesky_not_positive_definite

ENTRY main {
  a = f64[2,2] parameter(0)
  ROOT l = f64[2,2] cholesky(a), lower=true
}
""")

# 4. triangular-solve c128, right side, adjoint, upper, batch [2,1], column-major a.
def tri(n, lower, complex_=True):
    m = rng.standard_normal((n, n)) + (1j*rng.standard_normal((n, n)) if complex_ else 0)
    m = m + 3*np.eye(n)
    return np.tril(m) if lower else np.triu(m)
Au = np.stack([tri(3, False), tri(3, False)]).reshape(2,1,3,3)
B = (rng.standard_normal((2,1,2,3)) + 1j*rng.standard_normal((2,1,2,3)))
X = np.empty_like(B)
for i in range(2):
    # X A^H = B  <=>  A X^H = B^H
    X[i,0] = sl.solve_triangular(Au[i,0], B[i,0].conj().T, lower=False).conj().T
G = Au.copy()
for i in range(2):
    G[i,0][np.tril_indices(3, -1)] = 9 - 9j
open("trsm_c128_right_adjoint.hlo","w").write(f"""// triangular-solve X * adjoint(A) = B with upper A (garbage 9-9i below the diagonal, never
// read), complex, batch dims [2,1], A column-major in its matrix dims.
// Expected values: scipy.linalg.solve_triangular(A, B^H, lower=False)^H in float64.
// input: c128[2,1,3,3] {lit(G, cplx)}
// input: c128[2,1,2,3] {lit(B, cplx)}
// expect: c128[2,1,2,3] {lit(X, cplx)}
// tolerance: rtol=1e-12 atol=1e-12
HloModule trsm_c128_right_adjoint, entry_computation_layout={{(c128[2,1,3,3]{{2,3,1,0}}, c128[2,1,2,3]{{3,2,1,0}})->c128[2,1,2,3]{{3,2,1,0}}}}

ENTRY main {{
  a = c128[2,1,3,3]{{2,3,1,0}} parameter(0)
  b = c128[2,1,2,3]{{3,2,1,0}} parameter(1)
  ROOT x = c128[2,1,2,3]{{3,2,1,0}} triangular-solve(a, b), left_side=false, lower=false, unit_diagonal=false, transpose_a=ADJOINT
}}
""")

# 5. f64 left, lower, unit diagonal, transpose; diagonal holds garbage that must be ignored.
Al = tri(4, True, False)
Aunit = Al.copy(); np.fill_diagonal(Aunit, 1.0)
B = rng.standard_normal((4,2))
X = sl.solve_triangular(Aunit.T, B, lower=False)
G = Al.copy(); np.fill_diagonal(G, 1000.0); G[np.triu_indices(4, 1)] = -5.0
open("trsm_f64_left_transpose_unit.hlo","w").write(f"""// triangular-solve transpose(A) * X = B with lower A and unit_diagonal=true: neither the
// diagonal (1000) nor the strictly upper triangle (-5) may be read.
// Expected values: scipy.linalg.solve_triangular(A_unit.T, B, lower=False) in float64,
// with A_unit = A's strictly lower triangle plus the identity.
// input: f64[4,4] {lit(G, num)}
// input: f64[4,2] {lit(B, num)}
// expect: f64[4,2] {lit(X, num)}
// tolerance: rtol=1e-12 atol=1e-12
HloModule trsm_f64_left_transpose_unit

ENTRY main {{
  a = f64[4,4] parameter(0)
  b = f64[4,2] parameter(1)
  ROOT x = f64[4,2] triangular-solve(a, b), left_side=true, lower=true, unit_diagonal=true, transpose_a=TRANSPOSE
}}
""")

# 6. f32 right side, lower, no transpose: X A = B.
Al = tri(3, True, False)
B = rng.standard_normal((2,3))
X = sl.solve_triangular(Al.T, B.T, lower=False).T
G = Al.copy(); G[np.triu_indices(3, 1)] = 4.0
open("trsm_f32_right_lower.hlo","w").write(f"""// triangular-solve X * A = B with lower A (garbage 4 above the diagonal), single precision.
// Expected values: scipy.linalg.solve_triangular(A.T, B.T, lower=False).T in float64.
// input: f32[3,3] {lit(G, num)}
// input: f32[2,3] {lit(B, num)}
// expect: f32[2,3] {lit(X, num)}
// tolerance: rtol=1e-5 atol=1e-5
HloModule trsm_f32_right_lower

ENTRY main {{
  a = f32[3,3] parameter(0)
  b = f32[2,3] parameter(1)
  ROOT x = f32[2,3] triangular-solve(a, b), left_side=false, lower=true, unit_diagonal=false, transpose_a=NO_TRANSPOSE
}}
""")
