# Generates the batch-norm file tests: textbook formulas evaluated in float64 with numpy
# (mean and biased variance over every dimension but the feature one). Run: python3 generate.py
import numpy as np
rng = np.random.default_rng(11)
def num(x): return repr(float(x))
def lit(a):
    if a.ndim == 0: return num(a)
    if a.ndim == 1: return "{" + ", ".join(num(x) for x in a) + "}"
    return "{" + ", ".join(lit(x) for x in a) + "}"
def shape(t, a): return f"{t}[{','.join(map(str, a.shape))}]"

# training, feature dim 0 of a rank-3 f64 operand in a column-major layout.
x = rng.standard_normal((3, 4, 5)) * 2 + 1
sc = rng.standard_normal(3); of = rng.standard_normal(3); eps = 0.5
axes = (1, 2)
mean = x.mean(axis=axes); var = x.var(axis=axes)
y = (x - mean[:, None, None]) / np.sqrt(var[:, None, None] + eps) * sc[:, None, None] + of[:, None, None]
open("training_f64_feature0.hlo", "w").write(f"""// batch-norm-training on f64 with feature_index=0 and a column-major operand.
// Expected values: numpy, mean and biased variance over dims (1, 2),
// y = (x - mean) / sqrt(var + 0.5) * scale + offset, in float64 (see generate.py).
// input: {shape('f64', x)} {lit(x)}
// input: f64[3] {lit(sc)}
// input: f64[3] {lit(of)}
// expect: {shape('f64', y)} {lit(y)}
// expect: f64[3] {lit(mean)}
// expect: f64[3] {lit(var)}
// tolerance: rtol=1e-10 atol=1e-10
HloModule training_f64_feature0, entry_computation_layout={{(f64[3,4,5]{{0,1,2}}, f64[3]{{0}}, f64[3]{{0}})->(f64[3,4,5]{{0,1,2}}, f64[3]{{0}}, f64[3]{{0}})}}

ENTRY main {{
  x = f64[3,4,5]{{0,1,2}} parameter(0)
  sc = f64[3]{{0}} parameter(1)
  of = f64[3]{{0}} parameter(2)
  ROOT bn = (f64[3,4,5]{{0,1,2}}, f64[3]{{0}}, f64[3]{{0}}) batch-norm-training(x, sc, of), epsilon=0.5, feature_index=0
}}
""")

# inference, feature dim 1 of a rank-2 f32 operand.
x = rng.standard_normal((4, 3)).astype(np.float32)
sc, of, m = [rng.standard_normal(3).astype(np.float32) for _ in range(3)]
v = (rng.random(3) + 0.5).astype(np.float32); eps = np.float32(0.001)
xd = x.astype(np.float64)
y = (xd - m) / np.sqrt(v.astype(np.float64) + float(eps)) * sc + of
open("inference_f32_feature1.hlo", "w").write(f"""// batch-norm-inference on f32 with feature_index=1.
// Expected values: numpy, y = (x - mean) / sqrt(var + 0.001) * scale + offset in float64
// from the f32 inputs (see generate.py).
// input: f32[4,3] {lit(x)}
// input: f32[3] {lit(sc)}
// input: f32[3] {lit(of)}
// input: f32[3] {lit(m)}
// input: f32[3] {lit(v)}
// expect: f32[4,3] {lit(y)}
// tolerance: rtol=1e-5 atol=1e-5
HloModule inference_f32_feature1

ENTRY main {{
  x = f32[4,3] parameter(0)
  sc = f32[3] parameter(1)
  of = f32[3] parameter(2)
  m = f32[3] parameter(3)
  v = f32[3] parameter(4)
  ROOT y = f32[4,3] batch-norm-inference(x, sc, of, m, v), epsilon=0.001, feature_index=1
}}
""")

# grad, feature dim 1 of a rank-3 f64 operand; reference: the textbook gradient of
# y = (x - mean) * rsqrt(var + eps) * scale + offset with mean/var given (not recomputed),
# i.e. the formula XLA documents for batch-norm-grad.
x = rng.standard_normal((2, 3, 4)); sc = rng.standard_normal(3)
m = x.mean(axis=(0, 2)); v = x.var(axis=(0, 2)); dy = rng.standard_normal((2, 3, 4)); eps = 0.25
N = 8
b = lambda a: a[None, :, None]
inv = 1 / np.sqrt(v + eps)
gofs = dy.sum(axis=(0, 2))
s = (dy * (x - b(m))).sum(axis=(0, 2))
gsc = s * inv
gx = b(sc * inv) / N * (N * dy - b(gofs) - (x - b(m)) * b(s) / b(v + eps))
open("grad_f64_feature1.hlo", "w").write(f"""// batch-norm-grad on f64 with feature_index=1 (N = 8 elements per feature).
// Expected values: numpy in float64 (see generate.py):
//   grad_offset = sum(dy), grad_scale = sum(dy * (x - mean)) / sqrt(var + eps),
//   grad_x = scale / sqrt(var + eps) / N * (N dy - sum(dy) - (x - mean) sum(dy (x - mean)) / (var + eps))
// input: f64[2,3,4] {lit(x)}
// input: f64[3] {lit(sc)}
// input: f64[3] {lit(m)}
// input: f64[3] {lit(v)}
// input: f64[2,3,4] {lit(dy)}
// expect: f64[2,3,4] {lit(gx)}
// expect: f64[3] {lit(gsc)}
// expect: f64[3] {lit(gofs)}
// tolerance: rtol=1e-10 atol=1e-10
HloModule grad_f64_feature1

ENTRY main {{
  x = f64[2,3,4] parameter(0)
  sc = f64[3] parameter(1)
  m = f64[3] parameter(2)
  v = f64[3] parameter(3)
  dy = f64[2,3,4] parameter(4)
  ROOT g = (f64[2,3,4], f64[3], f64[3]) batch-norm-grad(x, sc, m, v, dy), epsilon=0.25, feature_index=1
}}
""")

# Cross-check of the grad formula against central finite differences of the training op
# (mean and var taken from the batch, as when batch-norm-grad follows batch-norm-training).
def train_loss(xx):
    mm = xx.mean(axis=(0, 2)); vv = xx.var(axis=(0, 2))
    yy = (xx - b(mm)) / np.sqrt(b(vv) + eps) * b(sc)
    return (yy * dy).sum()
h = 1e-6
fd = np.zeros_like(x)
for idx in np.ndindex(x.shape):
    e = np.zeros_like(x); e[idx] = h
    fd[idx] = (train_loss(x + e) - train_loss(x - e)) / (2 * h)
assert np.allclose(fd, gx, rtol=1e-5, atol=1e-6), "grad formula disagrees with finite differences"
