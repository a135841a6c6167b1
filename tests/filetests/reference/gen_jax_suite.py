"""Writes the file tests of tests/filetests/jax_suite/: small modules for the classes of
difference that JAX's own test suite found between hlojit and XLA:CPU (`cargo xtask jax-suite`).
Expected values are XLA:CPU's, computed here through jaxlib.
Usage: target/venv/bin/python3 tests/filetests/reference/gen_jax_suite.py tests/filetests"""
import os
import sys
import numpy as np
sys.path.insert(0, os.path.dirname(__file__))
from lib import write

# Host devices for the multi-device cases (set before jax is imported; one-device cases use the first).
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4").strip()
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools"))
from jax_suite_devices import device_grid, run_xla_devices

import jax
from jax.numpy import bfloat16 as jnp_bf16
jax.config.update("jax_enable_x64", True)
from jax._src.lib import xla_client

ROOT = sys.argv[1]
os.makedirs(f"{ROOT}/jax_suite", exist_ok=True)
NOTE = "Expected values: XLA:CPU through jaxlib (tests/filetests/reference/gen_jax_suite.py)."


def xla_run(text, inputs):
    """Compiles and runs HLO text on XLA:CPU; returns the result leaves."""
    mod = xla_client.hlo.hlo_module_from_text(text)
    mlir = xla_client._xla.mlir.hlo_to_stablehlo(mod.as_serialized_hlo_module_proto())
    dev = jax.devices("cpu")[0]
    exe = dev.client.compile_and_load(mlir, xla_client.DeviceList((dev,)), xla_client.CompileOptions())
    res = exe.execute_sharded([jax.device_put(a, dev) for a in inputs]).disassemble_into_single_device_arrays()
    return [np.asarray(r[0]) for r in res]


def devices_case(name, comment, inputs, module):
    """A module for several devices, run as tools/jax_suite_devices.py runs JAX's (SPMD
    partitioning on, each device given its part of each input): inputs and results are
    written stacked over the devices, as file tests take them."""
    inputs = [np.asarray(a) for a in inputs]
    per_device_in, per_device_out = run_xla_devices(module, inputs, *device_grid(module))
    write(f"{ROOT}/jax_suite/{name}.hlo", comment + "\n" + NOTE, [np.stack(p) for p in per_device_in],
          [np.stack(o) for o in per_device_out], module)


def case(name, comment, inputs, module, tolerance=None, expects=None):
    """`expects`: XLA:CPU's values computed another way, for opcodes that XLA's HLO text to
    StableHLO converter (which `xla_run` goes through) does not know."""
    inputs = [np.asarray(a) for a in inputs]
    expects = xla_run(module, inputs) if expects is None else expects
    write(f"{ROOT}/jax_suite/{name}.hlo", comment + "\n" + NOTE, inputs, expects, module, tolerance)


# --- a * b + c is one fused multiply-add on XLA:CPU (LLVM's AllowFPOpFusion=Fast): rounded once.
a = np.array([1 + 2**-12, 2e19, -3e19, 1.5], np.float32)
c = np.array([-(1 + 2**-11), -1e38, 2e38, 0.25], np.float32)
a64 = np.array([1 + 2**-30, 1e200, 3.0], np.float64)
c64 = np.array([-(1 + 2**-29), -1e308, 0.5], np.float64)
case("fused_multiply_add", """a * b + c as XLA:CPU computes it: one fused multiply-add where the CPU has FMA (XLA's
LLVM target options allow FP-op fusion), so the product is not rounded on its own: (1+2^-12)^2
- (1+2^-11) is 2^-24, not 0, and 2e19 * 2e19 - 1e38 is finite, not inf. JAX's suite found
this as infinities of the opposite sign in hyp2f1's derivatives. (Assumes a CPU with FMA, as
XLA's own results do.)""", [a, a, c, a64, a64, c64], """
HloModule fma, entry_computation_layout={(f32[4]{0}, f32[4]{0}, f32[4]{0}, f64[3]{0}, f64[3]{0}, f64[3]{0})->(f32[4]{0}, f64[3]{0})}

ENTRY main {
  a = f32[4]{0} parameter(0)
  b = f32[4]{0} parameter(1)
  c = f32[4]{0} parameter(2)
  m = f32[4]{0} multiply(a, b)
  s = f32[4]{0} add(m, c)
  x = f64[3]{0} parameter(3)
  y = f64[3]{0} parameter(4)
  z = f64[3]{0} parameter(5)
  m64 = f64[3]{0} multiply(x, y)
  r = f64[3]{0} add(m64, z)
  ROOT t = (f32[4]{0}, f64[3]{0}) tuple(s, r)
}""")

# --- is_stable=false: XLA:CPU runs std::sort (libstdc++'s introsort); ties come out in its order.
rng = np.random.default_rng(1)
keys = rng.integers(-2, 3, size=(2, 40)).astype(np.int32)
pos = np.tile(np.arange(40, dtype=np.int32), (2, 1))
case("unstable_sort_ties", """sort with is_stable=false of (s32 keys with many ties, positions) along 40 elements: XLA:CPU
runs std::sort (libstdc++'s introsort: median-of-three partitions down to runs of 16, then
insertion sort), so tied keys end up in that algorithm's order, not in their original one.""",
     [keys, pos], """
HloModule unstable_sort, entry_computation_layout={(s32[2,40]{1,0}, s32[2,40]{1,0})->(s32[2,40]{1,0}, s32[2,40]{1,0})}

lt {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=LT
}

ENTRY main {
  k = s32[2,40]{1,0} parameter(0)
  p = s32[2,40]{1,0} parameter(1)
  ROOT s = (s32[2,40]{1,0}, s32[2,40]{1,0}) sort(k, p), dimensions={1}, to_apply=lt
}""")

x = rng.integers(-3, 4, size=(2, 24)).astype(np.float32)
case("unstable_sort_as_topk", """approx_max_k as JAX lowers it on CPU: an unstable sort of (f32 values with ties, s32 iota)
read through slices [0:5]. XLA:CPU rewrites this pattern into its TopK runtime call, which
breaks ties by position (the stable order); the same sort read whole (slices [0:24], which
XLA's simplifier removes) stays std::sort, with ties in introsort's order.""",
     [x], """
HloModule topk_sort, entry_computation_layout={(f32[2,24]{1,0})->(f32[2,5]{1,0}, s32[2,5]{1,0}, f32[2,24]{1,0}, s32[2,24]{1,0})}

gt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=GT
}

ENTRY main {
  x = f32[2,24]{1,0} parameter(0)
  i = s32[24]{0} iota(), iota_dimension=0
  b = s32[2,24]{1,0} broadcast(i), dimensions={1}
  s = (f32[2,24]{1,0}, s32[2,24]{1,0}) sort(x, b), dimensions={1}, to_apply=gt
  v = f32[2,24]{1,0} get-tuple-element(s), index=0
  vk = f32[2,5]{1,0} slice(v), slice={[0:2], [0:5]}
  p = s32[2,24]{1,0} get-tuple-element(s), index=1
  pk = s32[2,5]{1,0} slice(p), slice={[0:2], [0:5]}
  y = f32[2,24]{1,0} negate(x)
  t = (f32[2,24]{1,0}, s32[2,24]{1,0}) sort(y, b), dimensions={1}, to_apply=gt
  w = f32[2,24]{1,0} get-tuple-element(t), index=0
  wf = f32[2,24]{1,0} slice(w), slice={[0:2], [0:24]}
  q = s32[2,24]{1,0} get-tuple-element(t), index=1
  qf = s32[2,24]{1,0} slice(q), slice={[0:2], [0:24]}
  ROOT r = (f32[2,5]{1,0}, s32[2,5]{1,0}, f32[2,24]{1,0}, s32[2,24]{1,0}) tuple(vk, pk, wf, qf)
}""")

# --- mulhi: the high half of the double-width integer product (lax.mulhi, chlo.mulhi).
types = [("s8", np.int8), ("u8", np.uint8), ("s16", np.int16), ("u16", np.uint16), ("s32", np.int32),
         ("u32", np.uint32), ("s64", np.int64), ("u64", np.uint64)]
ins, params, roots, outs = [], [], [], []
for k, (name, dt) in enumerate(types):
    info = np.iinfo(dt)
    a = np.array([info.max, info.min, info.max, 3, info.max // 3 + 1, 0, -1 if info.min else info.max - 1, 7], dtype=dt)
    b = np.array([info.max, info.min, info.min if info.min else 2, 5, info.max - 2, info.max, info.max, -5 if info.min else 9], dtype=dt)
    ins += [a, b]
    params += [f"  a{k} = {name}[8]{{0}} parameter({2 * k})", f"  b{k} = {name}[8]{{0}} parameter({2 * k + 1})",
               f"  m{k} = {name}[8]{{0}} mulhi(a{k}, b{k})"]
    roots.append(f"m{k}")
    outs.append(f"{name}[8]{{0}}")
case("mulhi", """mulhi (lax.mulhi, chlo.mulhi): the upper N bits of the exact 2N-bit product of two N-bit
integers, read as signed or unsigned by the element type; JAX's lax_test compiles it for every
integer type. Extremes (max * max, min * min, min * max), small products (high half 0 or -1)
and the 64-bit types, whose product needs 128 bits. XLA's HLO-to-StableHLO converter does not
know `mulhi` (it becomes `mhlo.unknown`), so the expected values come from jax.jit(lax.mulhi),
which hands chlo.mulhi to XLA:CPU directly.""", ins, f"""
HloModule mulhi, entry_computation_layout={{({", ".join(o for o in outs for _ in (0, 1))})->({", ".join(outs)})}}

ENTRY main {{
{chr(10).join(params)}
  ROOT t = ({", ".join(outs)}) tuple({", ".join(roots)})
}}""", expects=[np.asarray(jax.jit(jax.lax.mulhi)(ins[2 * k], ins[2 * k + 1]))
                for k in range(len(types))])

# --- dce_sink: jax.lax.dce_sink(y, prevent_mlir_dce=True), a no-op custom call jaxlib registers.
x = np.array([1.5, -2.0, 3.25], np.float32)
case("dce_sink", """jax.lax.dce_sink(y, prevent_mlir_dce=True) as lax_test's test_dce_sink_prevents_xla_dce
compiles it: a side-effecting custom call "dce_sink" on y = x + 1 that returns nothing, while the
program returns x. jaxlib registers a CPU handler for it that does nothing; hlojit had no such
target ("custom-call target 'dce_sink' not found") and now builds it in.""", [x], """
HloModule dce_sink, entry_computation_layout={(f32[3]{0})->f32[3]{0}}

ENTRY main {
  x = f32[3]{0} parameter(0)
  one = f32[] constant(1)
  ones = f32[3]{0} broadcast(one), dimensions={}
  y = f32[3]{0} add(x, ones)
  sink = () custom-call(y), custom_call_target="dce_sink", operand_layout_constraints={f32[3]{0}}, custom_call_has_side_effect=true, api_version=API_VERSION_TYPED_FFI
  ROOT r = f32[3]{0} copy(x)
}""")

# --- which product of a * b + c * d becomes the FMA: LLVM's Reassociate orders the operands.
case("fma_operand_order", """jnp.linspace(10, 7, 10, dtype=uint8) as lax_numpy_test's testLinspaceEndpoints compiles it:
start * (1 - i/9) + stop * (i/9), floored. XLA:CPU fuses one of the two products into an FMA,
and which one follows the operand order LLVM's Reassociate pass gives the add (lower rank
first): here stop's product, whose loop-dependent operand is the shorter chain. At i = 3 that
gives 8.999999 (floored to 8), the other fusion 9. hlojit's lean loop pipeline had no
Reassociate and fused start's product.""", [np.uint8(10), np.uint8(7)], """
HloModule linspace, entry_computation_layout={(u8[], u8[])->u8[10]{0}}

ENTRY main {
  start = u8[] parameter(0)
  start_f = f32[] convert(start)
  start_b = f32[9]{0} broadcast(start_f), dimensions={}
  one = f32[] constant(1)
  ones = f32[9]{0} broadcast(one), dimensions={}
  iota = f32[9]{0} iota(), iota_dimension=0
  nine = f32[] constant(9)
  nines = f32[9]{0} broadcast(nine), dimensions={}
  t = f32[9]{0} divide(iota, nines)
  one_minus_t = f32[9]{0} subtract(ones, t)
  left = f32[9]{0} multiply(start_b, one_minus_t)
  stop = u8[] parameter(1)
  stop_f = f32[] convert(stop)
  stop_b = f32[9]{0} broadcast(stop_f), dimensions={}
  right = f32[9]{0} multiply(stop_b, t)
  sum = f32[9]{0} add(left, right)
  last = f32[1]{0} reshape(stop_f)
  all = f32[10]{0} concatenate(sum, last), dimensions={0}
  floored = f32[10]{0} floor(all)
  ROOT r = u8[10]{0} convert(floored)
}""")

# --- A / broadcast(B) becomes A * broadcast(1 / B) only where the broadcast is B's one user.
rng = np.random.default_rng(29)
x = rng.uniform(-7, 7, (4, 12)).astype(np.float32)
y = rng.uniform(-7, 7, (12, 4)).astype(np.float32)
p, q, r = (rng.uniform(0.3, 7, 4).astype(np.float32) for _ in range(3))
case("divide_by_shared_broadcast", """XLA's simplifier turns A / broadcast(B) into A * broadcast(1 / B) only when the broadcast is B's
one user: `kept` divides by a p the module also returns, and q's two broadcasts (so q has two
users) both keep their divisions; r's single broadcast becomes a product. hijax_test's
quantizing while loop (x / broadcast(scale), the scale also carried to the next iteration)
found it: the products rounded an element to 31.999998 where XLA's quotient is 32, and the
loop's integer results drifted from there. The rule looks at B once the reshapes and
broadcasts in front of it have collapsed, as XLA's does.""", [x, y, p, q, r], """
HloModule divide_by_shared_broadcast, entry_computation_layout={(f32[4,12]{1,0}, f32[12,4]{1,0}, f32[4]{0}, f32[4]{0}, f32[4]{0})->(f32[4,12]{1,0}, f32[4]{0}, f32[4,12]{1,0}, f32[12,4]{1,0}, f32[4,12]{1,0})}

ENTRY main {
  x = f32[4,12]{1,0} parameter(0)
  y = f32[12,4]{1,0} parameter(1)
  p = f32[4]{0} parameter(2)
  p_rows = f32[4,1]{1,0} reshape(p)
  p_rows_b = f32[4,1]{1,0} broadcast(p_rows), dimensions={0,1}
  p_again = f32[4]{0} reshape(p_rows_b)
  pb = f32[4,12]{1,0} broadcast(p_again), dimensions={0}
  kept = f32[4,12]{1,0} divide(x, pb)
  q = f32[4]{0} parameter(3)
  qb0 = f32[4,12]{1,0} broadcast(q), dimensions={0}
  by_q_rows = f32[4,12]{1,0} divide(x, qb0)
  qb1 = f32[12,4]{1,0} broadcast(q), dimensions={1}
  by_q_cols = f32[12,4]{1,0} divide(y, qb1)
  r = f32[4]{0} parameter(4)
  rb = f32[4,12]{1,0} broadcast(r), dimensions={0}
  rewritten = f32[4,12]{1,0} divide(x, rb)
  ROOT t = (f32[4,12]{1,0}, f32[4]{0}, f32[4,12]{1,0}, f32[12,4]{1,0}, f32[4,12]{1,0}) tuple(kept, p, by_q_rows, by_q_cols, rewritten)
}""")

# --- A scan that stacks one value twice, and its reverse loop reading both stacks.
rng = np.random.default_rng(31)
xs = rng.uniform(-1, 1, (4, 2, 3)).astype(np.float32)
h0 = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
case("scan_stacks_one_value_twice", """A scan that stacks the same value twice (api_test's test_remat_checkpoint_dots_outside_scan:
a checkpointed body whose residuals sin(x) and cos(x) are each saved twice) and a reverse loop
that reads both stacks. hlojit's while_residual_remat reads a stack from another when it is a
cheap function of it; for two equal stacks each was the other's, so the pass rewrote the
reverse loop's reads back and forth forever and the compile never finished. Now only the later
stack is read from the earlier, and the forward loop stores one stack fewer:
check: %fw = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) while(""", [xs, h0], """
HloModule scan_stacks_one_value_twice, entry_computation_layout={(f32[4,2,3]{2,1,0}, f32[2,3]{1,0})->f32[2,3]{1,0}}

fbody {
  p = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3], f32[4,2,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  h = f32[2,3] get-tuple-element(p), index=1
  xs = f32[4,2,3] get-tuple-element(p), index=4
  z = s32[] constant(0)
  xd = f32[1,2,3] dynamic-slice(xs, i, z, z), dynamic_slice_sizes={1,2,3}
  x = f32[2,3] reshape(xd)
  s = f32[2,3] add(x, h)
  t = f32[2,3] sine(s)
  tr = f32[1,2,3] reshape(t)
  ys = f32[4,2,3] get-tuple-element(p), index=2
  ys2 = f32[4,2,3] dynamic-update-slice(ys, tr, i, z, z)
  ds = f32[4,2,3] get-tuple-element(p), index=3
  ds2 = f32[4,2,3] dynamic-update-slice(ds, tr, i, z, z)
  ROOT r = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3], f32[4,2,3]) tuple(next, t, ys2, ds2, xs)
}

fcond {
  p = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3], f32[4,2,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}

bbody {
  p = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  g = f32[2,3] get-tuple-element(p), index=1
  n = s32[] constant(3)
  j = s32[] subtract(n, i)
  z = s32[] constant(0)
  ys = f32[4,2,3] get-tuple-element(p), index=2
  yd = f32[1,2,3] dynamic-slice(ys, j, z, z), dynamic_slice_sizes={1,2,3}
  y = f32[2,3] reshape(yd)
  ds = f32[4,2,3] get-tuple-element(p), index=3
  dd = f32[1,2,3] dynamic-slice(ds, j, z, z), dynamic_slice_sizes={1,2,3}
  d = f32[2,3] reshape(dd)
  gy = f32[2,3] multiply(g, y)
  gyd = f32[2,3] add(gy, d)
  ROOT r = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) tuple(next, gyd, ys, ds)
}

bcond {
  p = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}

ENTRY main {
  xs = f32[4,2,3]{2,1,0} parameter(0)
  h0 = f32[2,3]{1,0} parameter(1)
  z = s32[] constant(0)
  c = f32[] constant(0)
  zeros = f32[4,2,3] broadcast(c), dimensions={}
  init = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3], f32[4,2,3]) tuple(z, h0, zeros, zeros, xs)
  fw = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3], f32[4,2,3]) while(init), condition=fcond, body=fbody
  h = f32[2,3] get-tuple-element(fw), index=1
  ys = f32[4,2,3] get-tuple-element(fw), index=2
  ds = f32[4,2,3] get-tuple-element(fw), index=3
  binit = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) tuple(z, h, ys, ds)
  bw = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) while(binit), condition=bcond, body=bbody
  ROOT gout = f32[2,3]{1,0} get-tuple-element(bw), index=1
}""", "rtol=1e-6 atol=1e-6")

# --- bf16 dots and convolutions read as f32 keep XLA:CPU's excess precision.
rng = np.random.default_rng(37)
bf16_values = lambda *shape: rng.uniform(-2, 2, shape).astype(np.float32).astype(jnp_bf16).astype(np.float32)
a, b, x, k = bf16_values(3, 4), bf16_values(4, 3), bf16_values(1, 6, 2), bf16_values(3, 2, 2)
f = rng.uniform(-2, 2, (4,)).astype(np.float32)
case("bf16_product_read_as_f32", """XLA:CPU computes a bf16 dot or convolution in f32 and, allowing excess precision (its
default), drops the f32 -> bf16 -> f32 converts its float normalization made: a bf16 dot
converted to f32 is the unrounded f32 dot (api_test's test_excess_precision_hell found it:
2.5531006 where hlojit gave the bf16 value 2.546875). The dot's own bf16 result (returned as
its bits), the f64 conversion and a round trip written in the program (`trip`) stay rounded,
read from the one f32 product rounded to bf16 (the dot is computed once).
The inputs are bf16 values, passed as f32.
check: dot(
check-not: dot(""", [a, b, x, k, f], """
HloModule bf16_product_read_as_f32, entry_computation_layout={(f32[3,4]{1,0}, f32[4,3]{1,0}, f32[1,6,2]{2,1,0}, f32[3,2,2]{2,1,0}, f32[4]{0})->(f32[3,3]{1,0}, u16[3,3]{1,0}, f64[3,3]{1,0}, f32[1,4,2]{2,1,0}, f32[4]{0})}

ENTRY main {
  a32 = f32[3,4]{1,0} parameter(0)
  a = bf16[3,4]{1,0} convert(a32)
  b32 = f32[4,3]{1,0} parameter(1)
  b = bf16[4,3]{1,0} convert(b32)
  d = bf16[3,3]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  wide = f32[3,3]{1,0} convert(d)
  bits = u16[3,3]{1,0} bitcast-convert(d)
  wider = f64[3,3]{1,0} convert(d)
  x32 = f32[1,6,2]{2,1,0} parameter(2)
  x = bf16[1,6,2]{2,1,0} convert(x32)
  k32 = f32[3,2,2]{2,1,0} parameter(3)
  k = bf16[3,2,2]{2,1,0} convert(k32)
  c = bf16[1,4,2]{2,1,0} convolution(x, k), window={size=3}, dim_labels=b0f_0io->b0f
  cw = f32[1,4,2]{2,1,0} convert(c)
  f = f32[4]{0} parameter(4)
  fb = bf16[4]{0} convert(f)
  trip = f32[4]{0} convert(fb)
  ROOT t = (f32[3,3]{1,0}, u16[3,3]{1,0}, f64[3,3]{1,0}, f32[1,4,2]{2,1,0}, f32[4]{0}) tuple(wide, bits, wider, cw, trip)
}""")


# --- pjit over a mesh with every value replicated: each partition runs the whole program.
x = np.array([[1.5, -2.0, 3.25], [0.5, 4.0, -1.0]], np.float32)
devices_case("replicated_partitions", """jax.jit over a 4-device mesh with replicated in and out shardings, as pjit_test compiles
hundreds: XLA's SPMD partitioner gives every partition the whole program, so the `Sharding`
and Shardy `xla.sdy.FuncResultSharding` markers are identities and each device returns the
whole result. hlojit refused every marker in a program for several partitions before.
Inputs and results are stacked over the 4 devices.""", [x], """
HloModule jit_f, entry_computation_layout={(f32[2,3]{1,0})->(f32[3]{0}, f32[2,3]{1,0})}, num_partitions=4, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=2]>}}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[2,3]{1,0} parameter(0), sharding={replicated}, frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{}, {}]>"}
  zero = f32[] constant(0)
  sum = f32[3]{0} reduce(x, zero), dimensions={0}, to_apply=add
  constrained = f32[3]{0} custom-call(sum), custom_call_target="Sharding", sharding={replicated}, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{}]>]>"}
  result = f32[3]{0} custom-call(constrained), custom_call_target="xla.sdy.FuncResultSharding", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{}]>]>"}
  twice = f32[2,3]{1,0} add(x, x)
  ROOT t = (f32[3]{0}, f32[2,3]{1,0}) tuple(result, twice)
}""")


# --- Values split across partitions: each partition gathers its inputs into whole arrays, runs
# the whole program and returns its part of each result.
rng = np.random.default_rng(7)
x = rng.integers(-4, 5, size=(4, 6)).astype(np.float32)
y = rng.integers(-4, 5, size=(6, 4)).astype(np.float32)
devices_case("tiled_dot_partitions", """A dot of two matrices each tiled on both dimensions over 4 partitions (the second with an
explicit device list), its result tiled the same way: each device receives its 2x3 / 3x2 tiles
and returns its 2x2 tile of the product. hlojit gathers the tiles (one all-gather per
parameter), runs the whole dot on every device and cuts each device's tile out of the result.
Inputs and results are stacked over the 4 devices.""", [x, y], """
HloModule jit_matmul, entry_computation_layout={(f32[4,6]{1,0}, f32[6,4]{1,0})->f32[4,4]{1,0}}, num_partitions=4

ENTRY main {
  x = f32[4,6]{1,0} parameter(0), sharding={devices=[2,2]<=[4]}
  y = f32[6,4]{1,0} parameter(1), sharding={devices=[2,2]0,2,1,3}
  d = f32[4,4]{1,0} dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c = f32[4,4]{1,0} custom-call(d), custom_call_target="Sharding", sharding={devices=[2,2]<=[4]}
  ROOT r = f32[4,4]{1,0} negate(c), sharding={devices=[2,2]<=[4]}
}""")

x = np.arange(24, dtype=np.int32).reshape(8, 3) - 5
devices_case("replicated_subgroup_partitions", """Shardings with copies (`last_tile_dim_replicate`): x is cut in two along its rows, each half
held by two of the 4 partitions; the transposed result is cut in two along its columns, the
product in four along its rows. Inputs and results are stacked over the 4 devices.""", [x], """
HloModule jit_f, entry_computation_layout={(s32[8,3]{1,0})->(s32[3,8]{1,0}, s32[8,3]{1,0})}, num_partitions=4

ENTRY main {
  x = s32[8,3]{1,0} parameter(0), sharding={devices=[2,1,2]<=[4] last_tile_dim_replicate}
  t = s32[3,8]{1,0} transpose(x), dimensions={1,0}
  m = s32[8,3]{1,0} multiply(x, x)
  ROOT r = (s32[3,8]{1,0}, s32[8,3]{1,0}) tuple(t, m), sharding={{devices=[1,2,2]<=[4] last_tile_dim_replicate}, {devices=[4,1]<=[4]}}
}""")

x = (np.arange(16, dtype=np.float32).reshape(4, 4) - 6) / 4
devices_case("iota_transposed_partitions", """Iota tile assignments with a transpose (`<=[2,2]T(1,0)`: devices 0, 2, 1, 3 in tile order),
as JAX writes for a mesh whose axes are used in another order: the parameter tiled on both
dimensions, the result on its rows only. Inputs and results are stacked over the 4 devices.""", [x], """
HloModule jit_f, entry_computation_layout={(f32[4,4]{1,0})->f32[4,4]{1,0}}, num_partitions=4

ENTRY main {
  x = f32[4,4]{1,0} parameter(0), sharding={devices=[2,2]<=[2,2]T(1,0)}
  t = f32[4,4]{1,0} transpose(x), dimensions={1,0}
  s = f32[4,4]{1,0} add(x, t)
  ROOT r = f32[4,4]{1,0} multiply(s, x), sharding={devices=[4,1]<=[2,2]T(1,0)}
}""")

x = (np.arange(16, dtype=np.float32).reshape(8, 2) - 3) / 2
devices_case("manual_region_partitions", """A manual region (shard_map in GSPMD's form): the whole x is cut into each partition's rows by
`SPMDFullToShardShape`, the body sums the parts over all partitions (its all-reduce keeps its
groups: the body's values are per partition) and scales each part by the sum, and
`SPMDShardToFullShape` gathers the parts back into the whole array. Inputs and results are
stacked over the 4 devices.""", [x], """
HloModule shard_map, entry_computation_layout={(f32[8,2]{1,0})->f32[8,2]{1,0}}, num_partitions=4

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  x = f32[8,2]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}
  s = f32[8,2]{1,0} custom-call(x), custom_call_target="Sharding", sharding={devices=[4,1]<=[4]}
  m = f32[2,2]{1,0} custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  r = f32[2,2]{1,0} all-reduce(m), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=add, sharding={manual}
  p = f32[2,2]{1,0} multiply(r, m), sharding={manual}
  f = f32[8,2]{1,0} custom-call(p), custom_call_target="SPMDShardToFullShape", sharding={devices=[4,1]<=[4]}
  ROOT o = f32[8,2]{1,0} add(f, x), sharding={replicated}
}""")

x = (np.arange(8, dtype=np.float32).reshape(4, 2) - 2) * 1.5
devices_case("shard_map_partial_manual", """shard_map over one axis of a 2x2 mesh in Shardy's form (`xla.sdy.GlobalToLocalShape` /
`LocalToGlobalShape`, manual axis "x" only): each partition takes its half of the rows along
"x"; the body sums the halves across "x" (an all-reduce of global device ids: the partitions
that differ in "x" only) and adds the sum to its half; the halves are gathered back. The
parameter is tiled on both axes, the result on "y" only. Inputs and results are stacked over
the 4 devices.""", [x], """
HloModule jit_f, entry_computation_layout={(f32[4,2]{1,0})->f32[4,2]{1,0}}, num_partitions=4, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=2]>}}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

xla.sdy.manual_computation_body.1 {
  part = f32[2,2]{1,0} parameter(0)
  sum = f32[2,2]{1,0} all-reduce(part), channel_id=1, replica_groups={{0,2},{1,3}}, use_global_device_ids=true, to_apply=add
  ROOT r = f32[2,2]{1,0} add(part, sum)
}

ENTRY main {
  x = f32[4,2]{1,0} parameter(0), sharding={devices=[2,2]<=[4]}, frontend_attributes={xla.sdy.sharding="#sdy.sharding<@mesh, [{\\"x\\"}, {\\"y\\"}]>"}
  local = f32[2,2]{1,0} custom-call(x), custom_call_target="xla.sdy.GlobalToLocalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\\"x\\"}, {}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\\"x\\"}>"}
  done = f32[2,2]{1,0} call(local), to_apply=xla.sdy.manual_computation_body.1, frontend_attributes={inlineable="false"}
  whole = f32[4,2]{1,0} custom-call(done), custom_call_target="xla.sdy.LocalToGlobalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\\"x\\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\\"x\\"}, {}]>]>"}
  result = f32[4,2]{1,0} custom-call(whole), custom_call_target="xla.sdy.FuncResultSharding", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.sharding="#sdy.sharding_per_value<[<@mesh, [{}, {\\"y\\"}]>]>"}
  t = (f32[4,2]{1,0}) tuple(result)
  ROOT r = f32[4,2]{1,0} get-tuple-element(t), index=0, sharding={devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
}""")
