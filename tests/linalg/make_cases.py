"""Writes the linear-algebra cases (conformance format, see tests/conformance/README.md): every
jnp.linalg / jax.scipy.linalg / lax.linalg function JAX lowers to a LAPACK custom call on CPU,
real and complex, as `module.hlo` from `jax.jit(f, keep_unused=True).lower(...)`, with inputs and
XLA:CPU's outputs (jaxlib's handlers on scipy's LAPACK). Each case is also checked against
numpy/scipy here (a reconstruction or the same routine), so a wrong reference cannot slip in.
Run with the project's venv: target/venv/bin/python3 tests/linalg/make_cases.py"""
import json, os, shutil
import numpy as np
import scipy.linalg as sl
import jax, jax.numpy as jnp, jax.scipy.linalg as jsl
from jax import lax

jax.config.update("jax_enable_x64", True)
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")
NAMES = {"float32": "f32", "float64": "f64", "complex64": "c64", "complex128": "c128", "int32": "s32", "int64": "s64", "bool": "pred"}
rng = np.random.default_rng(2026)


def mat(shape, dtype):
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def spd(n, dtype, batch=()):
    a = mat(batch + (n, n), dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def herm(n, dtype):
    a = mat((n, n), dtype)
    return ((a + np.conj(a.T)) / 2).astype(dtype)


def tol(dtype):
    single = np.dtype(dtype) in (np.float32, np.complex64)
    return (2e-4, 2e-5) if single else (1e-10, 1e-12)


def write(name, f, args, description, check=None, up_to_phase=False):
    args = tuple(np.asarray(a) for a in args)
    lowered = jax.jit(f, keep_unused=True).lower(*args)
    text = lowered.as_text(dialect="hlo")
    targets = sorted({l.split('custom_call_target="')[1].split('"')[0] for l in text.splitlines() if 'custom_call_target="' in l})
    assert targets, f"{name}: no custom call"
    outs = [np.asarray(o) for o in jax.tree_util.tree_leaves(jax.jit(f)(*args))]
    if check is not None:
        check(*args, *outs)
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "module.hlo"), "w") as fh:
        fh.write(text)
    ins, res = [], []
    for i, a in enumerate(args):
        np.save(os.path.join(d, f"in{i}.npy"), a)
        ins.append({"file": f"in{i}.npy", "dtype": NAMES[str(a.dtype)], "shape": list(a.shape)})
    for j, o in enumerate(outs):
        np.save(os.path.join(d, f"out{j}.npy"), o)
        res.append({"file": f"out{j}.npy", "dtype": NAMES[str(o.dtype)], "shape": list(o.shape)})
    main = [a for a in args if a.dtype.kind in "fc"][0].dtype
    rtol, atol = tol(main)
    case = {"name": name, "group": "linalg", "description": f"{description} (jax {jax.__version__}, XLA:CPU outputs)",
            "hlo_opcodes": [], "inputs": ins, "outputs": res, "rtol": rtol, "atol": atol, "exact": False,
            "x64": any(a.dtype in (np.float64, np.complex128) for a in args), "custom_call_targets": targets}
    if up_to_phase:
        # A complex Schur form is unique only up to the phases of the Schur vectors, which
        # LAPACK builds (OpenBLAS releases, CPU kernels) choose differently.
        case["unique_up_to_phase"] = True
    with open(os.path.join(d, "case.json"), "w") as fh:
        json.dump(case, fh, indent=1)
    print(f"{name}: {', '.join(targets)}")


def close(got, want, dtype):
    rtol, atol = tol(dtype)
    np.testing.assert_allclose(got, want, rtol=rtol * 50, atol=atol * 50)


def ct(a):
    return np.conj(np.swapaxes(a, -1, -2))


if os.path.isdir(HERE):
    shutil.rmtree(HERE)

for t in (np.float32, np.complex64, np.float64, np.complex128):
    s = NAMES[np.dtype(t).name]
    # Singular value decompositions: gesdd (default) and gesvd (QR algorithm).
    a = mat((4, 3), t)
    write(f"svd_full_{s}", lambda a: jnp.linalg.svd(a), (a,), "jnp.linalg.svd, full_matrices",
          lambda a, u, sv, vh: close(u[:, :3] * sv @ vh, a, t))
    a = mat((2, 3, 5), t)
    write(f"svd_thin_batch_{s}", lambda a: jnp.linalg.svd(a, full_matrices=False), (a,), "jnp.linalg.svd of a batch, thin",
          lambda a, u, sv, vh: close((u * sv[:, None, :]) @ vh, a, t))
    write(f"svd_values_{s}", lambda a: jnp.linalg.svd(a, compute_uv=False), (mat((5, 4), t),), "jnp.linalg.svd, values only",
          lambda a, sv: close(sv, np.linalg.svd(a, compute_uv=False), t))
    write(f"svd_qr_{s}", lambda a: lax.linalg.svd(a, algorithm=lax.linalg.SvdAlgorithm.QR), (mat((3, 4), t),),
          "lax.linalg.svd with SvdAlgorithm.QR (gesvd)", lambda a, u, sv, vh: close(sv, np.linalg.svd(a, compute_uv=False), t))
    write(f"pinv_{s}", jnp.linalg.pinv, (mat((4, 3), t),), "jnp.linalg.pinv", lambda a, p: close(p, np.linalg.pinv(a), t))
    write(f"lstsq_{s}", lambda a, b: jnp.linalg.lstsq(a, b), (mat((5, 3), t), mat((5, 2), t)), "jnp.linalg.lstsq",
          lambda a, b, x, *_: close(x, np.linalg.lstsq(a, b, rcond=None)[0], t))
    write(f"matrix_rank_{s}", jnp.linalg.matrix_rank, (mat((4, 2), t) @ mat((2, 4), t),), "jnp.linalg.matrix_rank of a rank-2 matrix",
          lambda a, r: np.testing.assert_equal(r, 2))
    write(f"norm2_{s}", lambda a: jnp.linalg.norm(a, ord=2), (mat((3, 4), t),), "jnp.linalg.norm(ord=2)",
          lambda a, n: close(n, np.linalg.norm(a, ord=2), t))
    # Eigenvalues: geev, syevd/heevd.
    write(f"eig_{s}", jnp.linalg.eig, (mat((4, 4), t),), "jnp.linalg.eig (geev, right eigenvectors)",
          lambda a, w, v: close(a.astype(v.dtype) @ v, v * w, t))
    write(f"eigvals_{s}", jnp.linalg.eigvals, (mat((3, 3), t),), "jnp.linalg.eigvals",
          lambda a, w: close(np.sort_complex(w), np.sort_complex(np.linalg.eigvals(a)), t))
    write(f"eigh_{s}", jnp.linalg.eigh, (herm(4, t),), "jnp.linalg.eigh (syevd/heevd)",
          lambda a, w, v: close(a @ v, v * w, t))
    write(f"eigvalsh_{s}", jnp.linalg.eigvalsh, (herm(3, t),), "jnp.linalg.eigvalsh",
          lambda a, w: close(w, np.linalg.eigvalsh(a), t))
    # QR: geqrf + orgqr/ungqr, pivoted geqp3, ormqr/unmqr.
    write(f"qr_{s}", jnp.linalg.qr, (mat((4, 3), t),), "jnp.linalg.qr (reduced)", lambda a, q, r: close(q @ r, a, t))
    write(f"qr_complete_{s}", lambda a: jnp.linalg.qr(a, mode="complete"), (mat((3, 5), t),), "jnp.linalg.qr complete",
          lambda a, q, r: close(q @ r, a, t))
    write(f"qr_pivoting_{s}", lambda a: jsl.qr(a, pivoting=True), (mat((4, 3), t),), "jax.scipy.linalg.qr(pivoting=True) (geqp3)",
          lambda a, q, r, p: close(q @ r, a[:, p], t))
    h = mat((4, 2), t)
    write(f"ormqr_{s}", lambda a, tau, c: lax.linalg.ormqr(a, tau, c, left=False, transpose=True), (h, mat((2,), t), mat((3, 4), t)),
          "lax.linalg.ormqr, C·Qᴴ")
    write(f"householder_product_{s}", lax.linalg.householder_product, (h, mat((2,), t)), "lax.linalg.householder_product (orgqr/ungqr)")
    # Factorizations and solves: potrf, getrf, trsm.
    write(f"cholesky_{s}", jnp.linalg.cholesky, (spd(4, t, (2,)),), "jnp.linalg.cholesky of a batch",
          lambda a, l: close(l @ ct(l), a, t))
    write(f"lu_{s}", jsl.lu, (mat((4, 3), t),), "jax.scipy.linalg.lu", lambda a, p, l, u: close(p @ l @ u, a, t))
    write(f"lu_factor_{s}", jsl.lu_factor, (mat((4, 4), t),), "jax.scipy.linalg.lu_factor",
          lambda a, lu, piv: close(lu, sl.lu_factor(a)[0], t))
    write(f"solve_{s}", jnp.linalg.solve, (mat((3, 3), t), mat((3, 2), t)), "jnp.linalg.solve",
          lambda a, b, x: close(x, np.linalg.solve(a, b), t))
    write(f"inv_{s}", jnp.linalg.inv, (mat((2, 3, 3), t),), "jnp.linalg.inv of a batch", lambda a, x: close(x, np.linalg.inv(a), t))
    write(f"det_{s}", jnp.linalg.det, (mat((4, 4), t),), "jnp.linalg.det", lambda a, d: close(d, np.linalg.det(a), t))
    write(f"slogdet_{s}", jnp.linalg.slogdet, (mat((4, 4), t),), "jnp.linalg.slogdet",
          lambda a, sg, ld: close(ld, np.linalg.slogdet(a)[1], t))
    write(f"solve_triangular_{s}", lambda a, b: jsl.solve_triangular(a, b, lower=True, trans="C" if s[0] == "c" else "T"),
          (mat((3, 3), t), mat((3, 2), t)), "jax.scipy.linalg.solve_triangular, lower, (conjugate) transposed",
          lambda a, b, x: close(x, sl.solve_triangular(a, b, lower=True, trans=2 if s[0] == "c" else 1), t))
    # Schur, Hessenberg, tridiagonal reduction and solves: gees, gehrd, sytrd/hetrd, gtsv.
    write(f"schur_{s}", jsl.schur, (mat((4, 4), t),), "jax.scipy.linalg.schur",
          lambda a, tt, z: close(z @ tt @ ct(z), a, t), up_to_phase=s[0] == "c")
    write(f"hessenberg_{s}", lambda a: jsl.hessenberg(a, calc_q=True), (mat((4, 4), t),), "jax.scipy.linalg.hessenberg with Q",
          lambda a, hh, q: close(q @ hh @ ct(q), a, t))
    write(f"tridiagonal_{s}", lambda a: lax.linalg.tridiagonal(a, lower=True), (herm(4, t),), "lax.linalg.tridiagonal (sytrd/hetrd)")
    dl, dd, du = mat((2, 4), t), mat((2, 4), t) + 4, mat((2, 4), t)
    dl[:, 0] = 0
    du[:, -1] = 0
    write(f"tridiagonal_solve_{s}", lax.linalg.tridiagonal_solve, (dl, dd, du, mat((2, 4, 3), t)), "lax.linalg.tridiagonal_solve (gtsv) of a batch")

for t in (np.float32, np.float64):
    s = NAMES[np.dtype(t).name]
    d, e = rng.standard_normal(5).astype(t), rng.standard_normal(4).astype(t)
    full = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    write(f"eigh_tridiagonal_{s}", lambda d, e: jsl.eigh_tridiagonal(d, e, eigvals_only=False), (d, e),
          "jax.scipy.linalg.eigh_tridiagonal with eigenvectors (tridiagonal_solve_perturbed_ffi)",
          lambda d, e, w, v: close(full @ v, v * w, t))

# jaxlib's perturbed tridiagonal solver directly, in all four types, on numerically singular
# systems (T - λI for an eigenvalue λ of T, as inverse iteration calls it): the perturbation
# of tiny pivots is jaxlib's own rule, so only XLA's outputs can check it.
for t in (np.float32, np.complex64, np.float64, np.complex128):
    s = NAMES[np.dtype(t).name]
    n = 5
    dl, du = mat((n,), t), mat((n,), t)
    dl[0], du[-1] = 0, 0
    d = mat((n,), t)
    full = np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)
    lam = np.linalg.eigvals(full.astype(np.complex128))[0]
    d = (d - (lam.real if np.dtype(t).kind == "f" else lam)).astype(t)
    b = mat((n, 2), t)

    def perturbed(dl, d, du, b):
        return jax.ffi.ffi_call("tridiagonal_solve_perturbed_ffi", jax.ShapeDtypeStruct(b.shape, b.dtype))(dl, d, du, b)

    write(f"tridiagonal_solve_perturbed_{s}", perturbed, (dl, d, du, b),
          "tridiagonal_solve_perturbed_ffi called directly on a numerically singular system (T - λI)")

# The functions built on the factorizations above (they lower to the same custom calls plus
# generated code): matrix functions on Schur forms and LU solves, polar decomposition by QDWH
# (QR + Cholesky) or SVD, the factor-then-solve pairs, and numpy's SVD-based norms. Written
# after the cases above so that those keep their inputs (one random stream).
for t in (np.float32, np.complex64, np.float64, np.complex128):
    s = NAMES[np.dtype(t).name]
    # expm's small-norm branch (Padé, no squaring) and a norm that needs squarings.
    write(f"expm_{s}", jsl.expm, (mat((4, 4), t) / 4,), "jax.scipy.linalg.expm (Padé + getrf/getrs solve)",
          lambda a, e: close(e, sl.expm(a), t))
    write(f"expm_squaring_{s}", jsl.expm, (mat((4, 4), t) * 3,), "jax.scipy.linalg.expm of a matrix whose norm needs squarings",
          lambda a, e: close(e / np.abs(e).max(), sl.expm(a) / np.abs(e).max(), t))
    a, e = mat((3, 3), t) / 3, mat((3, 3), t)
    write(f"expm_frechet_{s}", jsl.expm_frechet, (a, e), "jax.scipy.linalg.expm_frechet",
          lambda a, e, x, l: (close(x, sl.expm(a), t), close(l, sl.expm_frechet(a, e)[1], t)))
    write(f"sqrtm_{s}", jsl.sqrtm, (spd(4, t),), "jax.scipy.linalg.sqrtm (complex Schur form)",
          lambda a, r: close(r, sl.sqrtm(a.astype(np.complex128)), t))
    write(f"funm_{s}", lambda a: jsl.funm(a, jnp.exp), (mat((3, 3), t) / 2,), "jax.scipy.linalg.funm(a, exp)",
          lambda a, r: close(r, sl.expm(a), t))
    a, b = mat((3, 3), t) + 4 * np.eye(3, dtype=t), mat((2, 2), t) + 4 * np.eye(2, dtype=t)
    write(f"solve_sylvester_{s}", jsl.solve_sylvester, (a, b, mat((3, 2), t)), "jax.scipy.linalg.solve_sylvester (Schur forms)",
          lambda a, b, c, x: close(x, sl.solve_sylvester(a, b, c), t))
    write(f"polar_qdwh_{s}", jsl.polar, (mat((4, 3), t),), "jax.scipy.linalg.polar, QDWH (QR and Cholesky)",
          lambda a, u, p: (close(u, sl.polar(a)[0], t), close(p, sl.polar(a)[1], t)))
    write(f"polar_svd_{s}", lambda a: jsl.polar(a, side="left", method="svd"), (mat((3, 3), t),), "jax.scipy.linalg.polar(side=left, method=svd)",
          lambda a, u, p: (close(u, sl.polar(a, side="left")[0], t), close(p, sl.polar(a, side="left")[1], t)))
    a, b = spd(4, t), mat((4, 2), t)
    write(f"cho_solve_{s}", lambda a, b: jsl.cho_solve(jsl.cho_factor(a), b), (a, b), "jax.scipy.linalg.cho_factor + cho_solve",
          lambda a, b, x: close(x, sl.cho_solve(sl.cho_factor(a), b), t))
    write(f"solve_pos_{s}", lambda a, b: jsl.solve(a, b, assume_a="pos"), (a, b), "jax.scipy.linalg.solve(assume_a=pos) (Cholesky)",
          lambda a, b, x: close(x, sl.solve(a, b, assume_a="pos"), t))
    a, b = mat((4, 4), t), mat((4, 2), t)
    write(f"lu_solve_{s}", lambda a, b: jsl.lu_solve(jsl.lu_factor(a), b, trans=1), (a, b), "jax.scipy.linalg.lu_factor + lu_solve(trans=1)",
          lambda a, b, x: close(x, sl.lu_solve(sl.lu_factor(a), b, trans=1), t))
    write(f"qr_multiply_{s}", lambda a, c: jsl.qr_multiply(a, c), (mat((4, 3), t), mat((2, 4), t)), "jax.scipy.linalg.qr_multiply (C·Q)",
          lambda a, c, cq, r: (close(cq, sl.qr_multiply(a, c)[0], t), close(r, sl.qr_multiply(a, c)[1], t)))
    write(f"cond_{s}", jnp.linalg.cond, (mat((4, 4), t),), "jnp.linalg.cond (singular values)",
          lambda a, c: close(c, np.linalg.cond(a), t))
    write(f"cond_fro_{s}", lambda a: jnp.linalg.cond(a, "fro"), (mat((3, 3), t),), "jnp.linalg.cond(p=fro) (inverse)",
          lambda a, c: close(c, np.linalg.cond(a, "fro"), t))
    write(f"svdvals_{s}", jnp.linalg.svdvals, (mat((3, 5), t),), "jnp.linalg.svdvals",
          lambda a, sv: close(sv, sl.svdvals(a), t))
    write(f"matrix_norm_nuc_{s}", lambda a: jnp.linalg.matrix_norm(a, ord="nuc"), (mat((2, 3, 4), t),), "jnp.linalg.matrix_norm(ord=nuc) of a batch",
          lambda a, n: close(n, np.linalg.norm(a, ord="nuc", axis=(-2, -1)), t))
    write(f"tensorinv_{s}", lambda a: jnp.linalg.tensorinv(a, ind=2), (mat((4, 2, 2, 4), t) + np.eye(8, dtype=t).reshape(4, 2, 2, 4) * 4,),
          "jnp.linalg.tensorinv", lambda a, x: close(x, np.linalg.tensorinv(a, ind=2), t))
    write(f"tensorsolve_{s}", jnp.linalg.tensorsolve, (mat((2, 3, 6), t) + np.eye(6, dtype=t).reshape(2, 3, 6) * 4, mat((2, 3), t)),
          "jnp.linalg.tensorsolve", lambda a, b, x: close(x, np.linalg.tensorsolve(a, b), t))
    write(f"eig_left_{s}", lambda a: lax.linalg.eig(a, compute_left_eigenvectors=True, compute_right_eigenvectors=False), (mat((4, 4), t),),
          "lax.linalg.eig with left eigenvectors (geev jobvl)",
          lambda a, w, vl: close(ct(vl) @ a.astype(vl.dtype), w[:, None] * ct(vl), t))
