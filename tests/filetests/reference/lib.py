"""Helpers to write hlojit file tests: format numpy arrays as HLO literals and reference
implementations of gather / scatter / sort / topk written from the XLA operation semantics."""
import itertools
import math
import struct
import numpy as np

HLO_TYPES = {
    np.dtype(np.float32): "f32", np.dtype(np.float64): "f64", np.dtype(np.float16): "f16",
    np.dtype(np.int8): "s8", np.dtype(np.int16): "s16", np.dtype(np.int32): "s32", np.dtype(np.int64): "s64",
    np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16", np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64",
    np.dtype(np.bool_): "pred",
}
try:
    import ml_dtypes
    HLO_TYPES[np.dtype(ml_dtypes.bfloat16)] = "bf16"
except ImportError:
    pass


def fmt_scalar(v, dt):
    if dt == np.bool_:
        return "true" if v else "false"
    if np.issubdtype(dt, np.floating):
        f = float(v)
        if math.isnan(f):
            neg = struct.pack(">d", f)[0] & 0x80
            return "-nan" if neg else "nan"
        if math.isinf(f):
            return "-inf" if f < 0 else "inf"
        if f == 0 and math.copysign(1, f) < 0:
            return "-0"
        return repr(f)
    return str(int(v))


def fmt_array(a):
    a = np.asarray(a)
    if HLO_TYPES.get(a.dtype) == "bf16":
        a = a.astype(np.float32)  # exact; numpy does not count bf16 as floating
    if a.ndim == 0:
        return fmt_scalar(a[()], a.dtype)

    def rec(x):
        if x.ndim == 1:
            return "{" + ", ".join(fmt_scalar(v, a.dtype) for v in x) + "}"
        return "{" + ", ".join(rec(s) for s in x) + "}"
    return rec(a)


def shape_text(a):
    a = np.asarray(a)
    return f"{HLO_TYPES[a.dtype]}[{','.join(str(d) for d in a.shape)}]"


def directive(kind, a):
    return f"// {kind}: {shape_text(a)} {fmt_array(a)}"


def write(path, comment, inputs, expects, module, tolerance=None):
    lines = ["// " + l for l in comment.strip().splitlines()]
    lines += [directive("input", a) for a in inputs]
    lines += [directive("expect", a) for a in expects]
    if tolerance:
        lines.append(f"// tolerance: {tolerance}")
    open(path, "w").write("\n".join(lines) + "\n" + module.strip() + "\n")


def gather(operand, indices, offset_dims, collapsed, start_index_map, ivd, slice_sizes,
           operand_batching=(), indices_batching=()):
    """XLA gather by its definition, out-of-bounds starts clamped."""
    operand = np.asarray(operand)
    indices = np.asarray(indices)
    if ivd == indices.ndim:
        indices = indices[..., None]
    batch_shape = [d for i, d in enumerate(indices.shape) if i != ivd]
    offset_operand_dims = [d for d in range(operand.ndim) if d not in collapsed and d not in operand_batching]
    out_rank = len(batch_shape) + len(offset_dims)
    batch_dims = [d for d in range(out_rank) if d not in offset_dims]
    out_shape = [0] * out_rank
    for d, s in zip(batch_dims, batch_shape):
        out_shape[d] = s
    for d, od in zip(offset_dims, offset_operand_dims):
        out_shape[d] = slice_sizes[od]
    out = np.zeros(out_shape, operand.dtype)
    for idx in itertools.product(*[range(s) for s in out_shape]):
        g = [idx[d] for d in batch_dims]
        start = [0] * operand.ndim
        for k, od in enumerate(start_index_map):
            pos = list(g)
            pos.insert(ivd, k)
            v = int(indices[tuple(pos)])
            start[od] = min(max(v, 0), operand.shape[od] - slice_sizes[od])
        for ob, ib in zip(operand_batching, indices_batching):
            pos = ib if ib < ivd else ib - 1
            start[ob] = g[pos]
        src = list(start)
        for od, d in zip(offset_operand_dims, offset_dims):
            src[od] += idx[d]
        out[idx] = operand[tuple(src)]
    return out


def scatter(operands, indices, updates, update_window_dims, inserted, sd2od, ivd, combine,
            input_batching=(), indices_batching=()):
    """XLA scatter by its definition: updates in row-major order of the scatter dims; a
    window whose start is outside [0, operand_dim - window_size] in any dim is skipped."""
    outs = [np.array(o, copy=True) for o in operands]
    indices = np.asarray(indices)
    if ivd == indices.ndim:
        indices = indices[..., None]
    upd = [np.asarray(u) for u in updates]
    rank = outs[0].ndim
    scatter_dims = [d for d in range(upd[0].ndim) if d not in update_window_dims]
    windowed = [d for d in range(rank) if d not in inserted and d not in input_batching]
    wsize = [1] * rank
    for od, ud in zip(windowed, update_window_dims):
        wsize[od] = upd[0].shape[ud]
    for g in itertools.product(*[range(upd[0].shape[d]) for d in scatter_dims]):
        start = [0] * rank
        for k, od in enumerate(sd2od):
            pos = list(g)
            pos.insert(ivd, k)
            start[od] = int(indices[tuple(pos)])
        for ob, ib in zip(input_batching, indices_batching):
            pos = ib if ib < ivd else ib - 1
            start[ob] = g[pos]
        if any(not (0 <= start[d] <= outs[0].shape[d] - wsize[d]) for d in range(rank)):
            continue
        for w in itertools.product(*[range(wsize[d]) for d in range(rank)]):
            target = tuple(s + o for s, o in zip(start, w))
            uidx = [0] * upd[0].ndim
            for k, d in enumerate(scatter_dims):
                uidx[d] = g[k]
            for od, ud in zip(windowed, update_window_dims):
                uidx[ud] = w[od]
            cur = [o[target] for o in outs]
            new = combine(*cur, *[u[tuple(uidx)] for u in upd])
            if not isinstance(new, tuple):
                new = (new,)
            for o, v in zip(outs, new):
                o[target] = v
    return outs


def total_order_key(x):
    """Float total order of XLA's TOTALORDER compare: -NaN < -inf < ... < -0 < +0 < ... < NaN."""
    x = np.asarray(x)
    bits = x.view({2: np.int16, 4: np.int32, 8: np.int64}[x.dtype.itemsize]).astype(np.int64)
    w = x.dtype.itemsize * 8
    return np.where(bits < 0, (bits ^ ((1 << (w - 1)) - 1)), bits)


def sort_rows(arrays, dim, keyfn):
    """Stable sort of every row along `dim` by keyfn(list of row elements per operand) -> key."""
    arrays = [np.asarray(a) for a in arrays]
    outs = [np.array(a, copy=True) for a in arrays]
    moved = [np.moveaxis(a, dim, -1) for a in arrays]
    omoved = [np.moveaxis(o, dim, -1) for o in outs]
    for r in itertools.product(*[range(s) for s in moved[0].shape[:-1]]):
        n = moved[0].shape[-1]
        order = sorted(range(n), key=lambda i: keyfn([m[r + (i,)] for m in moved]))
        for m, o in zip(moved, omoved):
            o[r] = m[r][order]
    return outs


def reducer(name, op, dtype):
    """HLO text of a scalar reducer computation `name`: `op(a, b)` on `dtype` (e.g. "f32")."""
    return f"""{name} {{
  a = {dtype}[] parameter(0)
  b = {dtype}[] parameter(1)
  ROOT r = {dtype}[] {op}(a, b)
}}
"""


def run_hlo_on_xla_cpu(module, inputs):
    """XLA:CPU's outputs (numpy arrays) for HLO text `module` compiled as it is (jaxlib's XLA,
    the module converted to StableHLO only to reach the compiler), on numpy `inputs`."""
    import os
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    from jax._src.lib import xla_client
    jax.config.update("jax_enable_x64", True)
    dev = jax.devices("cpu")[0]
    mod = xla_client.hlo.hlo_module_from_text(module)
    mlir = xla_client._xla.mlir.hlo_to_stablehlo(mod.as_serialized_hlo_module_proto())
    exe = dev.client.compile_and_load(mlir, xla_client.DeviceList((dev,)), xla_client.CompileOptions())
    res = exe.execute_sharded([jax.device_put(a, dev) for a in inputs]).disassemble_into_single_device_arrays()
    return [np.asarray(r[0]) for r in res]
