"""n = 1024 LAPACK factorizations as `hlojit bench` workloads (one custom call each, as JAX
lowers them: column-major operand, jaxlib's attributes) plus the same factorizations timed
in scipy on the same inputs. Usage:
    target/venv/bin/python3 benches/lapack/make_workloads.py OUT [PREFIX...]  # writes OUT/<name>/, times scipy
(with PREFIXes, only the workloads whose name starts with one, e.g. `geev gees`)
    target/release/hlojit bench --root OUT --inputs-dir OUT --runs 5
"""
import json, os, sys, time
import numpy as np, scipy.linalg as sl

N = 1024
out = sys.argv[1]
only = sys.argv[2:]
rng = np.random.default_rng(0)
T = {"f32": np.float32, "f64": np.float64}


def workload(name, ty, hlo_call, results, x, scipy_fn, description):
    if only and not any(name.startswith(p) for p in only):
        return
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    shape = f"{ty}[{N},{N}]"
    text = f"""HloModule {name}

ENTRY main {{
  a = {shape}{{0,1}} parameter(0)
  ROOT r = ({results}) custom-call(a), {hlo_call}, operand_layout_constraints={{{shape}{{0,1}}}}, api_version=API_VERSION_TYPED_FFI
}}
"""
    open(os.path.join(d, "module.hlo"), "w").write(text)
    np.save(os.path.join(d, "in0.npy"), x)
    json.dump({"name": name, "description": description, "inputs": [{"dtype": ty, "shape": [N, N]}], "flops": None, "bytes": None},
              open(os.path.join(d, "perf.json"), "w"), indent=1)
    xf = np.asfortranarray(x)
    scipy_fn(xf.copy())
    times = []
    for _ in range(5):
        c = xf.copy()
        t0 = time.perf_counter()
        scipy_fn(c)
        times.append(time.perf_counter() - t0)
    print(f"scipy {name}: min {min(times) * 1e3:.1f} ms, median {sorted(times)[2] * 1e3:.1f} ms")


for ty, t in T.items():
    p = "s" if ty == "f32" else "d"
    a = rng.uniform(-1, 1, (N, N)).astype(t)
    spd = (a @ a.T + N * np.eye(N)).astype(t)
    m, v = f"{ty}[{N},{N}]{{0,1}}", f"{ty}[{N}]{{0}}"
    workload(f"getrf_{ty}", ty, f'custom_call_target="lapack_{p}getrf_ffi", backend_config={{}}',
             f"{m}, s32[{N}]{{0}}, s32[]", a, lambda c: sl.lu_factor(c, overwrite_a=True, check_finite=False), "LU with partial pivoting")
    workload(f"potrf_{ty}", ty, f'custom_call_target="lapack_{p}potrf_ffi", backend_config={{uplo = 76 : ui8}}',
             f"{m}, s32[]", spd, lambda c: sl.cholesky(c, lower=True, overwrite_a=True, check_finite=False), "Cholesky, lower")
    workload(f"geqrf_{ty}", ty, f'custom_call_target="lapack_{p}geqrf_ffi", backend_config={{}}',
             f"{m}, {v}", a, lambda c: sl.qr(c, mode="raw", overwrite_a=True, check_finite=False), "Householder QR (R and the reflectors)")
    workload(f"syevd_{ty}", ty, f'custom_call_target="lapack_{p}syevd_ffi", backend_config={{mode = 86 : ui8, uplo = 76 : ui8}}',
             f"{m}, {v}, s32[]", spd, lambda c: sl.eigh(c, lower=True, overwrite_a=True, check_finite=False, driver="evd"),
             "symmetric eigendecomposition with vectors (divide and conquer)")
    workload(f"gesdd_{ty}", ty, f'custom_call_target="lapack_{p}gesdd_ffi", backend_config={{mode = 65 : ui8}}',
             f"{m}, {v}, {m}, {m}, s32[]", a, lambda c: sl.svd(c, full_matrices=True, overwrite_a=True, check_finite=False, lapack_driver="gesdd"),
             "SVD with full U and Vt (divide and conquer)")
    # Nonsymmetric: jnp.linalg.eig's right eigenvectors (geev, as JAX lowers it: compute_left
    # 'N', compute_right 'V') and jax.scipy.linalg.schur with Schur vectors, unsorted (gees).
    c, r = f"c{64 if ty == 'f32' else 128}[{N},{N}]{{0,1}}", f"{ty}[{N}]{{0}}"
    workload(f"geev_{ty}", ty, f'custom_call_target="lapack_{p}geev_ffi", backend_config={{compute_left = 78 : ui8, compute_right = 86 : ui8}}',
             f"{r}, {r}, {c}, {c}, s32[]", a, lambda c: sl.eig(c, left=False, right=True, overwrite_a=True, check_finite=False),
             "nonsymmetric eigendecomposition with right eigenvectors")
    workload(f"gees_{ty}", ty, f'custom_call_target="lapack_{p}gees_ffi", backend_config={{mode = 86 : ui8, sort = 78 : ui8}}',
             f"{m}, {m}, {r}, {r}, s32[], s32[]", a, lambda c: sl.schur(c, output="real", overwrite_a=True, check_finite=False),
             "real Schur form with Schur vectors")
