//! HLO `rng-bit-generator`: XLA's counter-based bit generators, bit-exact with XLA:CPU.
//!
//! The state operand is `u64[n]`: `state[0]` is the key (its low and high 32-bit words are the
//! generator's two key words), the rest holds the counter.
//!
//! - ThreeFry-2x32 (20 rounds), counter `state[1]`. 64-bit outputs: element `i` (row-major)
//!   is the generator applied to `counter + i` (split into low/high words), as `lo | hi << 32`.
//!   Narrower outputs: one dimension (the first even one, else the first largest; a scalar is
//!   treated as `[1]`) is split into pairs; call `counter + L`, where `L` is the row-major
//!   position in the shape with that dimension halved (rounded up), gives the two neighbouring
//!   elements `2h` and `2h + 1` along it; 8- and 16-bit types keep the low bits. The counter
//!   advances by the number of calls.
//! - Philox-4x32 (10 rounds), 128-bit counter `(state[1], state[2])`, or `(state[1], state[0])`
//!   for a two-element state (then only the low word is written back). Call `j` runs on
//!   counter + j and gives 32-bit elements `4j..4j+3` in row-major order (low bits for narrow
//!   types) or 64-bit elements `2j, 2j+1` from word pairs `(0,1)` and `(2,3)`; the counter
//!   advances by the number of calls, carrying into the high word.
//! - `rng_default` is Philox, as on XLA:CPU.
//!
//! Large outputs are generated on the thread pool between reading the state and writing the
//! new one (see [`emit_rng_bit_generator`]).

use crate::codegen::runtime_abi::RuntimeFunction;
use crate::codegen::array::IrArray;
use crate::codegen::context::Codegen;
use crate::codegen::index::{delinearize, Index};
use crate::codegen::kernel::KernelContext;
use crate::codegen::loops::for_loop;
use crate::error::{Error, Result};
use crate::hlo::attributes::RngAlgorithm;
use hlojit_runtime::ElementType;
use inkwell::values::IntValue;
use inkwell::IntPredicate;

/// Below this many output elements the generator runs on the calling thread.
const PARALLEL_MIN_ELEMENTS: i64 = 1 << 15;
/// Elements a parallel task should at least produce.
const PARALLEL_GRAIN_ELEMENTS: i64 = 1 << 13;

/// Emits the rng-bit-generator at the kernel's root.
///
/// The state is read first and the new state written last, on one thread: the state output
/// may share its buffer with the state operand (a donated state), so no task may write it
/// while another still reads it. Large outputs are generated in between by a worker function
/// run on the thread pool; the kernel itself is not split.
pub fn emit_rng_bit_generator(kc: &KernelContext) -> Result<i64> {
    let cg = kc.cg;
    let inst = kc.comp.get(kc.root);
    let fail = |why: String| Error::Unsupported(format!("{}: rng-bit-generator {why}", inst.name));
    let state_id = *inst.operands.first().ok_or_else(|| fail("without a state operand".into()))?;
    let state_shape = kc.comp.get(state_id).shape.as_array().ok_or_else(|| fail("with a tuple state".into()))?.clone();
    if state_shape.element_type != ElementType::U64 || state_shape.rank() != 1 || state_shape.dims[0] < 2 {
        return Err(fail(format!("with state {}: needs u64[n], n >= 2", state_shape.element_type)));
    }
    if kc.outputs.len() != 2 {
        return Err(fail(format!("with {} result buffers", kc.outputs.len())));
    }
    let (state_out, data) = (&kc.outputs[0], &kc.outputs[1]);
    let t = data.element_type();
    let bits = t.bit_width();
    if !(t.is_int() || t.is_float()) || !matches!(bits, 8 | 16 | 32 | 64) || t.is_pred() {
        return Err(cg.unsupported_type("rng-bit-generator", t));
    }

    let n_state = state_shape.dims[0];
    let mut e = kc.elemental();
    let mut state = Vec::new();
    for k in 0..n_state {
        let index = Index::new(vec![cg.const_i64(k)]);
        state.push(e.gen_scalar(state_id, &index)?.into_int_value());
    }
    let algorithm = match inst.attrs.rng_algorithm.unwrap_or(RngAlgorithm::Default) {
        RngAlgorithm::ThreeFry => Algorithm::ThreeFry,
        RngAlgorithm::Philox | RngAlgorithm::Default => Algorithm::Philox,
    };
    // The generator's inputs: key and the counter's low and high words.
    let key = state[0];
    let (lo, hi) = match algorithm {
        Algorithm::ThreeFry => (state[1], cg.i64().const_zero()),
        Algorithm::Philox if n_state >= 3 => (state[1], state[2]),
        Algorithm::Philox => (state[1], state[0]),
    };
    let dims = data.shape.dims.clone();
    let calls = algorithm.calls(&dims, bits);
    let elements: i64 = dims.iter().product();
    if elements > 0 {
        if elements < PARALLEL_MIN_ELEMENTS || calls <= 1 {
            let g = Gen { cg, data, t, algorithm, dims: &dims };
            g.body([key, lo, hi], cg.const_i64(0), cg.const_i64(calls))?;
        } else {
            emit_parallel_body(cg, data, algorithm, [key, lo, hi], calls, elements)?;
        }
    }

    let mut new_state = state.clone();
    let delta = cg.i64().const_int(calls as u64, false);
    match algorithm {
        Algorithm::ThreeFry => new_state[1] = cg.b.build_int_add(lo, delta, "")?,
        Algorithm::Philox => {
            let (lo2, hi2) = add_u128(cg, lo, hi, delta)?;
            new_state[1] = lo2;
            if n_state >= 3 {
                new_state[2] = hi2;
            }
        }
    }
    for (k, v) in new_state.iter().enumerate() {
        state_out.store(cg, &Index::new(vec![cg.const_i64(k as i64)]), (*v).into())?;
    }
    Ok(1)
}

/// Generates calls `[0, calls)` on the thread pool: a worker function `(ctx, begin, end)`
/// reads the data pointer and the generator inputs from `ctx`, a stack block of this kernel.
fn emit_parallel_body<'ctx>(
    cg: &Codegen<'ctx>,
    data: &IrArray<'ctx>,
    algorithm: Algorithm,
    inputs: [IntValue<'ctx>; 3],
    calls: i64,
    elements: i64,
) -> Result<()> {
    let ctx_type = cg.i64().array_type(4);
    let ctx = cg.entry_alloca(ctx_type.into(), "rng.ctx")?;
    let slot = |i: i64| cg.gep(cg.i64().into(), ctx, cg.const_i64(i));
    cg.b.build_store(slot(0)?, data.ptr)?;
    for (i, v) in inputs.iter().enumerate() {
        cg.b.build_store(slot(i as i64 + 1)?, *v)?;
    }

    let outer = cg.function();
    let saved = cg.b.get_insert_block();
    let name = format!("{}.rng", outer.get_name().to_string_lossy());
    let worker = cg.add_function(&name, cg.fn_type(None, &[cg.ptr().into(), cg.i64().into(), cg.i64().into()]), false);
    cg.b.position_at_end(cg.llvm.append_basic_block(worker, "entry"));
    let wctx = worker.get_nth_param(0).expect("ctx").into_pointer_value();
    let begin = worker.get_nth_param(1).expect("begin").into_int_value();
    let end = worker.get_nth_param(2).expect("end").into_int_value();
    let wslot = |i: i64| cg.gep(cg.i64().into(), wctx, cg.const_i64(i));
    let ptr = cg.b.build_load(cg.ptr(), wslot(0)?, "data")?.into_pointer_value();
    let mut loaded = Vec::new();
    for i in 1..4 {
        loaded.push(cg.b.build_load(cg.i64(), wslot(i)?, "")?.into_int_value());
    }
    let array = IrArray::new(ptr, &data.shape)?;
    let dims = data.shape.dims.clone();
    let g = Gen { cg, data: &array, t: data.element_type(), algorithm, dims: &dims };
    g.body([loaded[0], loaded[1], loaded[2]], begin, end)?;
    cg.b.build_return(None)?;
    if let Some(bb) = saved {
        cg.b.position_at_end(bb);
    }

    let per_call = (elements / calls).max(1);
    let min_chunk = (PARALLEL_GRAIN_ELEMENTS / per_call).max(1);
    let pf = cg.runtime(RuntimeFunction::ParallelFor)?;
    let f = worker.as_global_value().as_pointer_value();
    cg.call_void(pf, &[f.into(), ctx.into(), cg.const_i64(calls).into(), cg.const_i64(min_chunk).into()])
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Algorithm {
    ThreeFry,
    Philox,
}

impl Algorithm {
    /// Generator calls needed for an output of `dims` with `bits`-wide elements.
    fn calls(self, dims: &[i64], bits: u32) -> i64 {
        let n: i64 = dims.iter().product();
        match self {
            Algorithm::ThreeFry if bits == 64 => n,
            Algorithm::ThreeFry if dims.is_empty() => 1,
            Algorithm::ThreeFry => {
                let split = split_dimension(dims);
                dims.iter().enumerate().map(|(i, &d)| if i == split { (d + 1) / 2 } else { d }).product()
            }
            Algorithm::Philox if bits == 64 => (n + 1) / 2,
            Algorithm::Philox => (n + 3) / 4,
        }
    }
}

/// Emits `rng-get-and-update-state`: the runtime's 128-bit counter as `u64[2]` (low word
/// first), advanced by the instruction's `delta`.
pub fn emit_rng_get_and_update_state(kc: &KernelContext) -> Result<i64> {
    let cg = kc.cg;
    let inst = kc.comp.get(kc.root);
    // The verifier requires delta (shape inference), so its absence is an internal error.
    let delta = inst.attrs.rng_delta.ok_or_else(|| Error::Internal(format!("{}: no delta", inst.name)))?;
    let out = kc.outputs.first().ok_or_else(|| Error::Internal(format!("{}: no output buffer", inst.name)))?;
    if out.element_type() != ElementType::U64 || out.shape.dims != [2] || !out.physical.is_row_major_dense() {
        return Err(Error::Unsupported(format!("{}: rng-get-and-update-state into {}", inst.name, out.shape)));
    }
    let f = cg.runtime(RuntimeFunction::RngGetAndUpdateState)?;
    cg.call_void(f, &[cg.const_i64(delta).into(), out.ptr.into()])?;
    Ok(1)
}

struct Gen<'a, 'ctx> {
    cg: &'a Codegen<'ctx>,
    data: &'a IrArray<'ctx>,
    t: ElementType,
    algorithm: Algorithm,
    dims: &'a [i64],
}

impl<'a, 'ctx> Gen<'a, 'ctx> {
    /// Runs calls `[begin, end)` of the generator on `[key, counter lo, counter hi]`.
    fn body(&self, [key, lo, hi]: [IntValue<'ctx>; 3], begin: IntValue<'ctx>, end: IntValue<'ctx>) -> Result<()> {
        match self.algorithm {
            Algorithm::ThreeFry if self.t.bit_width() == 64 => self.threefry64(key, lo, begin, end),
            Algorithm::ThreeFry => self.threefry32(key, lo, begin, end),
            Algorithm::Philox => self.philox(key, lo, hi, begin, end),
        }
    }

    /// Stores the low bits of `word` (an i32 or i64) as the element at row-major position
    /// `linear`.
    fn store_linear(&self, linear: IntValue<'ctx>, word: IntValue<'ctx>) -> Result<()> {
        let index = delinearize(self.cg, linear, &self.data.shape.dims)?;
        self.store(&index, word)
    }

    fn store(&self, index: &Index<'ctx>, word: IntValue<'ctx>) -> Result<()> {
        let cg = self.cg;
        let width = self.t.bit_width();
        let narrow = if word.get_type().get_bit_width() == width {
            word
        } else {
            cg.b.build_int_truncate(word, cg.int_type(width), "")?
        };
        let v = if self.t.is_float() { cg.b.build_bit_cast(narrow, cg.value_type(self.t), "")? } else { narrow.into() };
        self.data.store(cg, index, v)
    }

    fn threefry64(
        &self,
        key: IntValue<'ctx>,
        counter: IntValue<'ctx>,
        begin: IntValue<'ctx>,
        end: IntValue<'ctx>,
    ) -> Result<()> {
        let cg = self.cg;
        let (k0, k1) = split_u64(cg, key)?;
        for_loop(cg, "threefry", begin, end, |i| {
            let c = cg.b.build_int_add(counter, i, "")?;
            let (x0, x1) = split_u64(cg, c)?;
            let (y0, y1) = threefry2x32(cg, k0, k1, x0, x1)?;
            self.store_linear(i, join_u64(cg, y0, y1)?)
        })
    }

    fn threefry32(
        &self,
        key: IntValue<'ctx>,
        counter: IntValue<'ctx>,
        begin: IntValue<'ctx>,
        end: IntValue<'ctx>,
    ) -> Result<()> {
        let cg = self.cg;
        let dims = self.dims;
        let (k0, k1) = split_u64(cg, key)?;
        if dims.is_empty() {
            let (y0, _) = threefry2x32_at(cg, k0, k1, counter)?;
            return self.store(&Index::new(Vec::new()), y0);
        }
        let split = split_dimension(dims);
        let mut half = dims.to_vec();
        half[split] = (dims[split] + 1) / 2;
        let odd = dims[split] % 2 != 0;
        for_loop(cg, "threefry", begin, end, |l| {
            let c = cg.b.build_int_add(counter, l, "")?;
            let (y0, y1) = threefry2x32_at(cg, k0, k1, c)?;
            let h = delinearize(cg, l, &half)?;
            let mut index = h.dims.clone();
            let pos0 = cg.b.build_int_nsw_mul(h.dims[split], cg.const_i64(2), "")?;
            index[split] = pos0;
            self.store(&Index::new(index.clone()), y0)?;
            let pos1 = cg.b.build_int_nsw_add(pos0, cg.const_i64(1), "")?;
            index[split] = pos1;
            let second = Index::new(index);
            if odd {
                let inside = cg.b.build_int_compare(IntPredicate::SLT, pos1, cg.const_i64(dims[split]), "")?;
                cg.if_then("threefry.second", inside, || self.store(&second, y1))
            } else {
                self.store(&second, y1)
            }
        })
    }

    fn philox(
        &self,
        key: IntValue<'ctx>,
        lo: IntValue<'ctx>,
        hi: IntValue<'ctx>,
        begin: IntValue<'ctx>,
        end: IntValue<'ctx>,
    ) -> Result<()> {
        let cg = self.cg;
        let n: i64 = self.dims.iter().product();
        let per_call: i64 = if self.t.bit_width() == 64 { 2 } else { 4 };
        let (k0, k1) = split_u64(cg, key)?;
        for_loop(cg, "philox", begin, end, |j| {
            let (c_lo, c_hi) = add_u128(cg, lo, hi, j)?;
            let (w0, w1) = split_u64(cg, c_lo)?;
            let (w2, w3) = split_u64(cg, c_hi)?;
            let w = philox4x32(cg, k0, k1, [w0, w1, w2, w3])?;
            let values: Vec<IntValue> =
                if per_call == 2 { vec![join_u64(cg, w[0], w[1])?, join_u64(cg, w[2], w[3])?] } else { w.to_vec() };
            let base = cg.b.build_int_nsw_mul(j, cg.const_i64(per_call), "")?;
            for (k, v) in values.into_iter().enumerate() {
                let e = cg.b.build_int_nsw_add(base, cg.const_i64(k as i64), "")?;
                if n % per_call == 0 || k == 0 {
                    self.store_linear(e, v)?;
                } else {
                    let inside = cg.b.build_int_compare(IntPredicate::SLT, e, cg.const_i64(n), "")?;
                    cg.if_then("philox.tail", inside, || self.store_linear(e, v))?;
                }
            }
            Ok(())
        })
    }
}

pub use crate::analysis::rng::split_dimension;

fn split_u64<'ctx>(cg: &Codegen<'ctx>, v: IntValue<'ctx>) -> Result<(IntValue<'ctx>, IntValue<'ctx>)> {
    let lo = cg.b.build_int_truncate(v, cg.i32(), "lo")?;
    let shifted = cg.b.build_right_shift(v, cg.i64().const_int(32, false), false, "")?;
    let hi = cg.b.build_int_truncate(shifted, cg.i32(), "hi")?;
    Ok((lo, hi))
}

fn join_u64<'ctx>(cg: &Codegen<'ctx>, lo: IntValue<'ctx>, hi: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
    let lo = cg.b.build_int_z_extend(lo, cg.i64(), "")?;
    let hi = cg.b.build_int_z_extend(hi, cg.i64(), "")?;
    let hi = cg.b.build_left_shift(hi, cg.i64().const_int(32, false), "")?;
    Ok(cg.b.build_or(lo, hi, "")?)
}

/// `(lo, hi) + delta` as 128-bit unsigned integers.
fn add_u128<'ctx>(
    cg: &Codegen<'ctx>,
    lo: IntValue<'ctx>,
    hi: IntValue<'ctx>,
    delta: IntValue<'ctx>,
) -> Result<(IntValue<'ctx>, IntValue<'ctx>)> {
    let sum = cg.b.build_int_add(lo, delta, "")?;
    let carry = cg.b.build_int_compare(IntPredicate::ULT, sum, lo, "carry")?;
    let carry = cg.b.build_int_z_extend(carry, cg.i64(), "")?;
    Ok((sum, cg.b.build_int_add(hi, carry, "")?))
}

fn c32<'ctx>(cg: &Codegen<'ctx>, v: u32) -> IntValue<'ctx> {
    cg.i32().const_int(v as u64, false)
}

fn threefry2x32_at<'ctx>(
    cg: &Codegen<'ctx>,
    k0: IntValue<'ctx>,
    k1: IntValue<'ctx>,
    counter: IntValue<'ctx>,
) -> Result<(IntValue<'ctx>, IntValue<'ctx>)> {
    let (x0, x1) = split_u64(cg, counter)?;
    threefry2x32(cg, k0, k1, x0, x1)
}

/// ThreeFry-2x32 with 20 rounds (Salmon et al., SC 2011), as XLA's prng library computes it.
fn threefry2x32<'ctx>(
    cg: &Codegen<'ctx>,
    k0: IntValue<'ctx>,
    k1: IntValue<'ctx>,
    x0: IntValue<'ctx>,
    x1: IntValue<'ctx>,
) -> Result<(IntValue<'ctx>, IntValue<'ctx>)> {
    const ROTATIONS: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];
    let b = &cg.b;
    let ks2 = b.build_xor(b.build_xor(c32(cg, 0x1BD1_1BDA), k0, "")?, k1, "")?;
    let ks = [k0, k1, ks2];
    let mut x = [b.build_int_add(x0, k0, "")?, b.build_int_add(x1, k1, "")?];
    for block in 0..5usize {
        for &r in &ROTATIONS[block % 2] {
            x[0] = b.build_int_add(x[0], x[1], "")?;
            let rot =
                cg.call_intrinsic("llvm.fshl", &[cg.i32().into()], &[x[1].into(), x[1].into(), c32(cg, r).into()])?;
            x[1] = b.build_xor(x[0], rot.into_int_value(), "")?;
        }
        // Key injection s = block + 1: x0 += ks[s % 3], x1 += ks[(s + 1) % 3] + s.
        let s = block + 1;
        x[0] = b.build_int_add(x[0], ks[s % 3], "")?;
        let k = b.build_int_add(ks[(s + 1) % 3], c32(cg, s as u32), "")?;
        x[1] = b.build_int_add(x[1], k, "")?;
    }
    Ok((x[0], x[1]))
}

/// Philox-4x32 with 10 rounds (Salmon et al., SC 2011), as XLA's prng library computes it.
fn philox4x32<'ctx>(
    cg: &Codegen<'ctx>,
    k0: IntValue<'ctx>,
    k1: IntValue<'ctx>,
    x: [IntValue<'ctx>; 4],
) -> Result<[IntValue<'ctx>; 4]> {
    const W_A: u32 = 0x9E37_79B9;
    const W_B: u32 = 0xBB67_AE85;
    const M_A: u32 = 0xD251_1F53;
    const M_B: u32 = 0xCD9E_8D57;
    let b = &cg.b;
    let mul_hi_lo = |v: IntValue<'ctx>, m: u32| -> Result<(IntValue<'ctx>, IntValue<'ctx>)> {
        let wide = b.build_int_z_extend(v, cg.i64(), "")?;
        let p = b.build_int_mul(wide, cg.i64().const_int(m as u64, false), "")?;
        let (lo, hi) = split_u64(cg, p)?;
        Ok((hi, lo))
    };
    let (mut key0, mut key1) = (k0, k1);
    let mut x = x;
    for _ in 0..10 {
        let (hi0, lo0) = mul_hi_lo(x[0], M_A)?;
        let (hi1, lo1) = mul_hi_lo(x[2], M_B)?;
        x = [
            b.build_xor(b.build_xor(hi1, x[1], "")?, key0, "")?,
            lo1,
            b.build_xor(b.build_xor(hi0, x[3], "")?, key1, "")?,
            lo0,
        ];
        key0 = b.build_int_add(key0, c32(cg, W_A), "")?;
        key1 = b.build_int_add(key1, c32(cg, W_B), "")?;
    }
    Ok(x)
}

#[cfg(test)]
mod tests {
    use super::split_dimension;

    #[test]
    fn split_dimension_prefers_the_first_even_then_the_first_largest() {
        assert_eq!(split_dimension(&[7, 3]), 0);
        assert_eq!(split_dimension(&[3, 1, 5]), 2);
        assert_eq!(split_dimension(&[3, 4, 6]), 1);
        assert_eq!(split_dimension(&[5, 5]), 0);
        assert_eq!(split_dimension(&[5]), 0);
    }
}
