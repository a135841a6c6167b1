# Generates the LAPACK custom-call file tests: modules calling JAX's lapack_*_ffi targets the
# way jax.numpy.linalg lowers them (column-major operands, one-character u8 options), with
# expected values from numpy/scipy (reference LAPACK through scipy, float64).
# Run: python3 generate.py
import numpy as np, scipy.linalg as sl
rng = np.random.default_rng(11)
def num(x):
    return repr(float(x))
def lit(a, f=num):
    a = np.asarray(a)
    if a.ndim == 0: return f(a)
    return "{" + ", ".join(lit(x, f) for x in a) + "}"
def ints(a):
    return lit(np.asarray(a), lambda x: str(int(x)))

# 1. Batched f32 getrf; the second matrix has a zero column, so its third pivot is zero.
A = rng.standard_normal((2, 4, 4)).astype(np.float32)
A[1][:, 2] = 0.0
lus, pivs, infos = [], [], []
for a in A.astype(np.float64):
    with np.errstate(all="ignore"):
        import warnings; warnings.simplefilter("ignore")
        lu, piv = sl.lu_factor(a)
    lus.append(lu); pivs.append(piv + 1)   # LAPACK's 1-based pivots
    zero = np.nonzero(np.diag(lu) == 0)[0]
    infos.append(zero[0] + 1 if len(zero) else 0)
open("getrf_f32_batch.hlo", "w").write(f"""// lapack_sgetrf_ffi on a batch of two 4x4 matrices (column-major {{1,2,0}} layout); the
// second has a zero third column, so info = 3 there. Expected values: scipy.linalg.lu_factor
// (LAPACK getrf) in float64, pivots made 1-based; see generate.py.
// input: f32[2,4,4] {lit(A)}
// expect: f32[2,4,4] {lit(np.stack(lus))}
// expect: s32[2,4] {ints(pivs)}
// expect: s32[2] {ints(infos)}
// tolerance: rtol=1e-5 atol=1e-5
HloModule getrf_f32_batch

ENTRY main {{
  a = f32[2,4,4]{{1,2,0}} parameter(0)
  lu = (f32[2,4,4]{{1,2,0}}, s32[2,4]{{1,0}}, s32[2]{{0}}) custom-call(a), custom_call_target="lapack_sgetrf_ffi", operand_layout_constraints={{f32[2,4,4]{{1,2,0}}}}, output_to_operand_aliasing={{{{0}}: (0, {{}})}}, api_version=API_VERSION_TYPED_FFI, backend_config={{}}
  f = f32[2,4,4]{{1,2,0}} get-tuple-element(lu), index=0
  p = s32[2,4]{{1,0}} get-tuple-element(lu), index=1
  i = s32[2]{{0}} get-tuple-element(lu), index=2
  ROOT r = (f32[2,4,4], s32[2,4], s32[2]) tuple(f, p, i)
}}
""")

# 2. f64 upper potrf: the strictly lower triangle is not read and keeps its input.
g = rng.standard_normal((3, 3))
A = g @ g.T + 3 * np.eye(3)
G = A.copy(); G[np.tril_indices(3, -1)] = -7.0
U = np.linalg.cholesky(A).T
want = U.copy(); want[np.tril_indices(3, -1)] = -7.0
open("potrf_f64_upper.hlo", "w").write(f"""// lapack_dpotrf_ffi with uplo = 'U' (85): the factor U (A = UᵀU) on and above the diagonal,
// the input's strictly lower triangle (-7, never read) left as it was, as LAPACK does.
// Expected values: numpy.linalg.cholesky(A).T; see generate.py.
// input: f64[3,3] {lit(G)}
// expect: f64[3,3] {lit(want)}
// expect: s32[] 0
// tolerance: rtol=1e-12 atol=1e-12
HloModule potrf_f64_upper

ENTRY main {{
  a = f64[3,3] parameter(0)
  c = (f64[3,3]{{0,1}}, s32[]) custom-call(a), custom_call_target="lapack_dpotrf_ffi", operand_layout_constraints={{f64[3,3]{{0,1}}}}, output_to_operand_aliasing={{{{0}}: (0, {{}})}}, api_version=API_VERSION_TYPED_FFI, backend_config={{uplo = 85 : ui8}}
  f = f64[3,3]{{0,1}} get-tuple-element(c), index=0
  i = s32[] get-tuple-element(c), index=1
  ROOT r = (f64[3,3], s32[]) tuple(f, i)
}}
""")

# 3. f64 geqrf then orgqr, as jnp.linalg.qr lowers: LAPACK's reflector signs and tau.
A = rng.standard_normal((5, 3))
(qr, tau), _ = sl.qr(A, mode="raw")
Q, _ = sl.qr(A, mode="economic")
open("geqrf_orgqr_f64.hlo", "w").write(f"""// lapack_dgeqrf_ffi (R and the Householder vectors, tau) then lapack_dorgqr_ffi (Q) of a 5x3
// matrix. Expected values: scipy.linalg.qr(mode="raw") (LAPACK geqrf) and
// scipy.linalg.qr(mode="economic") for Q; see generate.py.
// input: f64[5,3] {lit(A)}
// expect: f64[5,3] {lit(qr)}
// expect: f64[3] {lit(tau)}
// expect: f64[5,3] {lit(Q)}
// tolerance: rtol=1e-12 atol=1e-12
HloModule geqrf_orgqr_f64

ENTRY main {{
  a = f64[5,3] parameter(0)
  g = (f64[5,3]{{0,1}}, f64[3]{{0}}) custom-call(a), custom_call_target="lapack_dgeqrf_ffi", operand_layout_constraints={{f64[5,3]{{0,1}}}}, output_to_operand_aliasing={{{{0}}: (0, {{}})}}, api_version=API_VERSION_TYPED_FFI, backend_config={{}}
  f = f64[5,3]{{0,1}} get-tuple-element(g), index=0
  t = f64[3]{{0}} get-tuple-element(g), index=1
  q = f64[5,3]{{0,1}} custom-call(f, t), custom_call_target="lapack_dorgqr_ffi", operand_layout_constraints={{f64[5,3]{{0,1}}, f64[3]{{0}}}}, output_to_operand_aliasing={{{{}}: (0, {{}})}}, api_version=API_VERSION_TYPED_FFI, backend_config={{}}
  ROOT r = (f64[5,3], f64[3], f64[5,3]) tuple(f, t, q)
}}
""")

# 4. f64 syevd with vectors, reading the upper triangle (garbage below).
g = rng.standard_normal((4, 4))
A = g + g.T
G = A.copy(); G[np.tril_indices(4, -1)] = 50.0
# LAPACK's own signs: dsyevd on the upper triangle, as the target calls it. (hlojit's pure-Rust
# fallback makes each vector's largest component positive; for this matrix the two agree.)
w, V = sl.eigh(G, lower=False, driver="evd")
open("syevd_f64_upper_vectors.hlo", "w").write(f"""// lapack_dsyevd_ffi with mode = 'V' (86) and uplo = 'U' (85): ascending eigenvalues and unit
// eigenvectors (columns) with the signs LAPACK's algorithm gives them (hlojit's pure-Rust
// fallback makes each vector's largest component positive, which agrees here). The strictly
// lower triangle (50) must not be read.
// Expected values: scipy.linalg.eigh(lower=False, driver="evd"), i.e. LAPACK dsyevd; see generate.py.
// input: f64[4,4] {lit(G)}
// expect: f64[4,4] {lit(V)}
// expect: f64[4] {lit(w)}
// expect: s32[] 0
// tolerance: rtol=1e-11 atol=1e-11
HloModule syevd_f64_upper_vectors

ENTRY main {{
  a = f64[4,4] parameter(0)
  e = (f64[4,4]{{0,1}}, f64[4]{{0}}, s32[]) custom-call(a), custom_call_target="lapack_dsyevd_ffi", operand_layout_constraints={{f64[4,4]{{0,1}}}}, output_to_operand_aliasing={{{{0}}: (0, {{}})}}, api_version=API_VERSION_TYPED_FFI, backend_config={{mode = 86 : ui8, uplo = 85 : ui8}}
  v = f64[4,4]{{0,1}} get-tuple-element(e), index=0
  w = f64[4]{{0}} get-tuple-element(e), index=1
  i = s32[] get-tuple-element(e), index=2
  ROOT r = (f64[4,4], f64[4], s32[]) tuple(v, w, i)
}}
""")

# 5. f32 trsm: X·op(A) = B with A upper, transposed, on the right.
A = np.triu(rng.standard_normal((3, 3))) + 3 * np.eye(3)
G = A.copy(); G[np.tril_indices(3, -1)] = 9.0
B = rng.standard_normal((4, 3))
X = np.linalg.solve(A, B.T).T   # X·Aᵀ = B  <=>  A·Xᵀ = Bᵀ
open("trsm_f32_right_upper_transpose.hlo", "w").write(f"""// lapack_strsm_ffi solving X·Aᵀ = B (side 'R', uplo 'U', trans_x 'T', diag 'N'); the strictly
// lower triangle of A (9) must not be read. Expected values: numpy.linalg.solve(A, B.T).T in
// float64; see generate.py.
// input: f32[3,3] {lit(G.astype(np.float32))}
// input: f32[4,3] {lit(B.astype(np.float32))}
// expect: f32[4,3] {lit(X)}
// tolerance: rtol=1e-5 atol=1e-5
HloModule trsm_f32_right_upper_transpose

ENTRY main {{
  a = f32[3,3] parameter(0)
  b = f32[4,3] parameter(1)
  ROOT x = f32[4,3]{{0,1}} custom-call(a, b), custom_call_target="lapack_strsm_ffi", operand_layout_constraints={{f32[3,3]{{0,1}}, f32[4,3]{{0,1}}}}, output_to_operand_aliasing={{{{}}: (1, {{}})}}, api_version=API_VERSION_TYPED_FFI, backend_config={{diag = 78 : ui8, side = 82 : ui8, trans_x = 84 : ui8, uplo = 85 : ui8}}
}}
""")
