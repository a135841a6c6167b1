# Generates bit_generators.hlo: expected values from the reference ThreeFry-2x32-20 and
# Philox-4x32-10 in bit_generators_reference.py (which reproduce Random123's published
# known-answer vectors: `python3 bit_generators_reference.py`), arranged as the corpus README
# describes XLA's output ordering and state update. Run: python3 generate.py
import numpy as np
from bit_generators_reference import threefry2x32, philox4x32

M64 = (1 << 64) - 1
def lo32(v): return v & 0xffffffff
def hi32(v): return (v >> 32) & 0xffffffff

def philox_words(key, lo, hi, calls):
    out = []
    for j in range(calls):
        c = ((hi << 64) | lo) + j
        cl, ch = c & M64, (c >> 64) & M64
        out.append(philox4x32(lo32(key), hi32(key), [lo32(cl), hi32(cl), lo32(ch), hi32(ch)]))
    new = ((hi << 64) | lo) + calls
    return out, new & M64, (new >> 64) & M64

def split_dim(dims):
    for i, d in enumerate(dims):
        if d % 2 == 0: return i
    best = 0
    for i, d in enumerate(dims):
        if d > dims[best]: best = i
    return best

def fmt(a, dtype):
    if isinstance(a, list):  # Python ints: exact at any width
        return "{" + ", ".join(str(int(x)) for x in a) + "}"
    a = np.asarray(a, dtype=dtype)
    if a.ndim == 0: return str(a.item())
    if a.ndim == 1: return "{" + ", ".join(str(x) for x in a.tolist()) + "}"
    return "{" + ", ".join(fmt(x, dtype) for x in a) + "}"

# 1. Philox, state [key, lo, hi] with lo about to wrap: u32[3,3] takes 3 calls (4 words each,
#    elements 4j..4j+3 row-major), the counter carries into hi.
key, lo, hi = 0x0123456789abcdef, M64 - 1, 5
words, nlo, nhi = philox_words(key, lo, hi, 3)
v1 = np.array([w for call in words for w in call][:9], dtype=np.uint64).reshape(3, 3)
s1 = [key, nlo, nhi]

# 2. Philox, state [key, lo] (hi = key, only lo written back): s16[7] from 2 calls, low bits.
key2, lo2 = 0xfedcba9876543210, 42
words, nlo2, _ = philox_words(key2, lo2, key2, 2)
v2 = np.array([w & 0xffff for call in words for w in call][:7], dtype=np.uint16).view(np.int16)
s2 = [key2, nlo2]

# 3. ThreeFry, state [key, counter]: s8[5,3]; no even dimension, so the largest (5, dim 0)
#    is split into pairs: half shape [3, 3]; call counter + (3h + j) gives elements
#    (2h, j) and (2h + 1, j); low 8 bits kept. 9 calls.
key3, ctr3 = 0x1111222233334444, 1000
v3 = np.zeros((5, 3), dtype=np.uint8)
for h in range(3):
    for j in range(3):
        c = ctr3 + 3 * h + j
        y = threefry2x32(lo32(key3), hi32(key3), lo32(c), hi32(c))
        for k in range(2):
            if 2 * h + k < 5:
                v3[2 * h + k, j] = y[k] & 0xff
v3 = v3.view(np.int8)
s3 = [key3, ctr3 + 9]

# 4. ThreeFry s64[2,2]: element i is call counter + i as lo | hi << 32.
v4 = np.zeros(4, dtype=np.uint64)
for i in range(4):
    c = s3[1] + i
    y = threefry2x32(lo32(key3), hi32(key3), lo32(c), hi32(c))
    v4[i] = y[0] | (y[1] << 32)
v4 = v4.view(np.int64).reshape(2, 2)
s4 = [key3, s3[1] + 4]

# 5. rng_default (Philox) u64[3] from state [key, lo, hi]: 2 calls, words (0,1) and (2,3).
key5, lo5, hi5 = 7, 9, 11
words, nlo5, nhi5 = philox_words(key5, lo5, hi5, 2)
v5 = np.array([(c[0] | c[1] << 32) if k == 0 else (c[2] | c[3] << 32) for c in words for k in range(2)][:3], dtype=np.uint64)
s5 = [key5, nlo5, nhi5]

text = f"""// rng-bit-generator output ordering and state updates for Philox (3- and 2-element states,
// 128-bit carry, narrow signed types, 64-bit pairs) and ThreeFry (split dimension pairs,
// 64-bit elements). Expected values: generate.py with the reference generators in
// bit_generators_reference.py, checked against Random123's known-answer vectors.
// input: u64[3] {fmt([key, lo, hi], np.uint64)}
// input: u64[2] {fmt([key2, lo2], np.uint64)}
// input: u64[2] {fmt([key3, ctr3], np.uint64)}
// input: u64[3] {fmt([key5, lo5, hi5], np.uint64)}
// expect: u64[3] {fmt(s1, np.uint64)}
// expect: u32[3,3] {fmt(v1, np.uint64)}
// expect: u64[2] {fmt(s2, np.uint64)}
// expect: s16[7] {fmt(v2, np.int16)}
// expect: u64[2] {fmt(s3, np.uint64)}
// expect: s8[5,3] {fmt(v3, np.int8)}
// expect: u64[2] {fmt(s4, np.uint64)}
// expect: s64[2,2] {fmt(v4, np.int64)}
// expect: u64[3] {fmt(s5, np.uint64)}
// expect: u64[3] {fmt(v5, np.uint64)}
HloModule bit_generators

ENTRY main {{
  p3 = u64[3] parameter(0)
  p2 = u64[2] parameter(1)
  t2 = u64[2] parameter(2)
  d3 = u64[3] parameter(3)
  r1 = (u64[3], u32[3,3]) rng-bit-generator(p3), algorithm=rng_philox
  r2 = (u64[2], s16[7]) rng-bit-generator(p2), algorithm=rng_philox
  r3 = (u64[2], s8[5,3]) rng-bit-generator(t2), algorithm=rng_three_fry
  s3 = u64[2] get-tuple-element(r3), index=0
  r4 = (u64[2], s64[2,2]) rng-bit-generator(s3), algorithm=rng_three_fry
  r5 = (u64[3], u64[3]) rng-bit-generator(d3), algorithm=rng_default
  a1 = u64[3] get-tuple-element(r1), index=0
  b1 = u32[3,3] get-tuple-element(r1), index=1
  a2 = u64[2] get-tuple-element(r2), index=0
  b2 = s16[7] get-tuple-element(r2), index=1
  b3 = s8[5,3] get-tuple-element(r3), index=1
  a4 = u64[2] get-tuple-element(r4), index=0
  b4 = s64[2,2] get-tuple-element(r4), index=1
  a5 = u64[3] get-tuple-element(r5), index=0
  b5 = u64[3] get-tuple-element(r5), index=1
  ROOT t = (u64[3], u32[3,3], u64[2], s16[7], u64[2], s8[5,3], u64[2], s64[2,2], u64[3], u64[3]) tuple(a1, b1, a2, b2, s3, b3, a4, b4, a5, b5)
}}
"""
open("bit_generators.hlo", "w").write(text)

# Large outputs are generated on the thread pool: spot-check elements across the whole range.
# ThreeFry u32[200,300]: dim 0 (even) is split into pairs; element (p, j) comes from call
# counter + (p // 2) * 300 + j, word p % 2. Philox u64[50001]: element e from call e // 2,
# words (0,1) or (2,3).
keyA, ctrA = 0xdeadbeefcafef00d, 123456789
def tf32(p, j):
    c = ctrA + (p // 2) * 300 + j
    return threefry2x32(lo32(keyA), hi32(keyA), lo32(c), hi32(c))[p % 2]
picksA = [(0, 0), (1, 0), (0, 299), (137, 42), (199, 299), (100, 150)]
keyB, loB, hiB = 99, M64 - 3, 0
def ph64(e):
    c = ((hiB << 64) | loB) + e // 2
    cl, ch = c & M64, (c >> 64) & M64
    w = philox4x32(lo32(keyB), hi32(keyB), [lo32(cl), hi32(cl), lo32(ch), hi32(ch)])
    return (w[0] | w[1] << 32) if e % 2 == 0 else (w[2] | w[3] << 32)
picksB = [0, 1, 7, 25000, 50000]
newB = ((hiB << 64) | loB) + 25001
slicesA = "\n".join(
    f"  a{k} = u32[1,1] slice(va), slice={{[{p}:{p + 1}], [{j}:{j + 1}]}}" for k, (p, j) in enumerate(picksA))
slicesB = "\n".join(f"  b{k} = u64[1] slice(vb), slice={{[{e}:{e + 1}]}}" for k, e in enumerate(picksB))
namesA = ", ".join(f"a{k}" for k in range(len(picksA)))
namesB = ", ".join(f"b{k}" for k in range(len(picksB)))
typesA = ", ".join("u32[1,1]" for _ in picksA)
typesB = ", ".join("u64[1]" for _ in picksB)
expects = "\n".join([f"// expect: u64[2] {{{keyA}, {ctrA + 100 * 300}}}"]
    + [f"// expect: u32[1,1] {{{{{tf32(p, j)}}}}}" for p, j in picksA]
    + [f"// expect: u64[3] {{{keyB}, {newB & M64}, {newB >> 64}}}"]
    + [f"// expect: u64[1] {{{ph64(e)}}}" for e in picksB])
text = f"""// rng-bit-generator outputs large enough to be generated on the thread pool: elements from
// across the range and the new states. Expected values: generate.py with the reference
// generators in bit_generators_reference.py (Random123 known-answer vectors).
// input: u64[2] {{{keyA}, {ctrA}}}
// input: u64[3] {{{keyB}, {loB}, {hiB}}}
{expects}
HloModule bit_generators_large

ENTRY main {{
  sa = u64[2] parameter(0)
  sb = u64[3] parameter(1)
  ra = (u64[2], u32[200,300]) rng-bit-generator(sa), algorithm=rng_three_fry
  rb = (u64[3], u64[50001]) rng-bit-generator(sb), algorithm=rng_philox
  na = u64[2] get-tuple-element(ra), index=0
  va = u32[200,300] get-tuple-element(ra), index=1
  nb = u64[3] get-tuple-element(rb), index=0
  vb = u64[50001] get-tuple-element(rb), index=1
{slicesA}
{slicesB}
  ROOT t = (u64[2], {typesA}, u64[3], {typesB}) tuple(na, {namesA}, nb, {namesB})
}}
"""
open("bit_generators_large.hlo", "w").write(text)
