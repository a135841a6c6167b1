//! Expands `rng` (random numbers with a distribution) the way XLA's RngExpander does: Philox
//! bits from `rng-bit-generator`, keyed by a per-instruction constant and seeded by the
//! runtime's counter (`rng-get-and-update-state`, advanced by the number of 32-bit words
//! drawn), turned into values by XLA's distribution formulas:
//!
//! - uniform float in [a, b): the top mantissa-width bits m of each word,
//!   `m * 2^-mantissa * (b - a) + a` (f16/bf16 are drawn as f32 and rounded);
//! - uniform integer in [a, b): `d = bits % (b - a)` (unsigned), `a + d/2 + (d - d/2)`;
//! - normal with mean a and standard deviation b: uniform [0, 1) pairs (x0, x1) along the
//!   dimension XLA splits (see the rng-bit-generator emitter), Box-Muller
//!   `sqrt(-2 log max(x0, 1e-7)) * (sin, cos)(2 pi x1)` filling neighbouring elements, then
//!   `a + b * z`.
//!
//! The key and the runtime counter differ from XLA's, so the numbers are not XLA's numbers;
//! their distribution is.

use super::expand_util::Builder;
use crate::analysis::rng::split_dimension;
use crate::error::{Error, Result};
use crate::hlo::attributes::{RngAlgorithm, RngDistribution, SliceDim};
use crate::hlo::{CompId, InstrId, Instruction, Module, Opcode};
use hlojit_runtime::{ArrayLiteral, ElementType, Shape};

/// Replaces every `rng` instruction of the module by its expansion.
pub fn expand_rng(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    let mut serial = 0u64;
    for c in module.comp_ids().collect::<Vec<_>>() {
        let targets: Vec<InstrId> = {
            let comp = module.computation(c);
            comp.ids().filter(|&id| comp.get(id).opcode == Opcode::Rng).collect()
        };
        if targets.is_empty() {
            continue;
        }
        changed = true;
        for id in targets {
            serial += 1;
            let new = expand_one(module, c, id, serial)?;
            let comp = module.computation_mut(c);
            comp.replace_all_uses(id, new);
            // rng counts as side-effecting, so compaction would keep it: turn it into an unused
            // copy of its replacement, which compaction drops.
            let old = comp.get_mut(id);
            old.opcode = Opcode::Copy;
            old.operands = vec![new];
            old.control_predecessors.clear();
        }
        module.computation_mut(c).compact();
    }
    Ok(changed)
}

fn expand_one(module: &mut Module, c: CompId, id: InstrId, serial: u64) -> Result<InstrId> {
    let inst = module.computation(c).get(id).clone();
    let fail = |why: String| Error::Unsupported(format!("{}: rng {why}", inst.name));
    let distribution = inst.attrs.distribution.ok_or_else(|| fail("without a distribution".into()))?;
    let (a, b) = match inst.operands.as_slice() {
        [a, b] => (*a, *b),
        _ => return Err(fail("takes two operands".into())),
    };
    let shape = inst.shape.as_array().ok_or_else(|| fail("with a tuple shape".into()))?.clone();
    let t = shape.element_type;
    let dims = shape.dims.clone();
    let mut bld = Builder::new(module, c, format!("{}.rng", inst.name));
    let g = Gen { key: key_for(serial) };
    match (distribution, t) {
        (_, ElementType::F16 | ElementType::BF16) => {
            let a32 = bld.convert(a, ElementType::F32)?;
            let b32 = bld.convert(b, ElementType::F32)?;
            let v = g.float(&mut bld, distribution, a32, b32, ElementType::F32, &dims)?;
            bld.convert(v, t)
        }
        (_, ElementType::F32 | ElementType::F64) => g.float(&mut bld, distribution, a, b, t, &dims),
        (RngDistribution::Uniform, _) if t.is_int() && matches!(t.bit_width(), 32 | 64) => {
            g.uniform_int(&mut bld, a, b, t, &dims)
        }
        _ => Err(fail(format!("{} on {t}", distribution.name()))),
    }
}

/// A fixed key per rng instruction of the module (XLA draws one at compile time).
fn key_for(serial: u64) -> u64 {
    0x9E37_79B9_7F4A_7C15u64.wrapping_mul(serial).rotate_left(17) ^ 0x2545_F491_4F6C_DD1D
}

struct Gen {
    key: u64,
}

impl Gen {
    /// Random bits of unsigned type `u` (u32 or u64) and dimensions `dims`.
    fn bits(&self, b: &mut Builder, u: ElementType, dims: &[i64]) -> Result<InstrId> {
        let elements: i64 = dims.iter().product();
        let words = elements * (u.bit_width() as i64 / 32);
        let key = b.constant(ArrayLiteral::from_slice(&[1], &[self.key]).map_err(|e| Error::Internal(e.to_string()))?)?;
        let state_shape = Shape::array(ElementType::U64, vec![2]);
        let mut get = Instruction::new("", Opcode::RngGetAndUpdateState, state_shape, Vec::new());
        get.attrs.rng_delta = Some(words);
        let counter = b.add(get)?;
        let mut concat =
            Instruction::new("", Opcode::Concatenate, Shape::array(ElementType::U64, vec![3]), vec![key, counter]);
        concat.attrs.dimensions = Some(vec![0]);
        let state = b.add(concat)?;
        let data = Shape::array(u, dims.to_vec());
        let mut rbg = Instruction::new(
            "",
            Opcode::RngBitGenerator,
            Shape::Tuple(vec![Shape::array(ElementType::U64, vec![3]), data.clone()]),
            vec![state],
        );
        rbg.attrs.rng_algorithm = Some(RngAlgorithm::Philox);
        let rbg = b.add(rbg)?;
        let mut gte = Instruction::new("", Opcode::GetTupleElement, data, vec![rbg]);
        gte.attrs.tuple_index = Some(1);
        b.add(gte)
    }

    /// Uniform [0, 1) floats of type `t` (f32 or f64) from the top mantissa bits of words.
    fn unit(&self, b: &mut Builder, t: ElementType, dims: &[i64]) -> Result<InstrId> {
        let (u, mantissa) = if t == ElementType::F64 { (ElementType::U64, 52) } else { (ElementType::U32, 23) };
        let bits = self.bits(b, u, dims)?;
        let shift = b.scalar(u, (u.bit_width() - mantissa) as f64)?;
        let shift = b.broadcast(shift, dims, vec![])?;
        let top = b.binary(Opcode::ShiftRightLogical, bits, shift)?;
        let v = b.convert(top, t)?;
        let ulp = b.scalar(t, (-(mantissa as f64)).exp2())?;
        let ulp = b.broadcast(ulp, dims, vec![])?;
        b.binary(Opcode::Multiply, v, ulp)
    }

    fn float(
        &self,
        b: &mut Builder,
        d: RngDistribution,
        lo: InstrId,
        hi: InstrId,
        t: ElementType,
        dims: &[i64],
    ) -> Result<InstrId> {
        match d {
            RngDistribution::Uniform => {
                let u = self.unit(b, t, dims)?;
                let width = b.binary(Opcode::Subtract, hi, lo)?;
                let width = b.broadcast(width, dims, vec![])?;
                let scaled = b.binary(Opcode::Multiply, u, width)?;
                let lo = b.broadcast(lo, dims, vec![])?;
                b.binary(Opcode::Add, scaled, lo)
            }
            RngDistribution::Normal => {
                let z = self.standard_normal(b, t, dims)?;
                let sigma = b.broadcast(hi, dims, vec![])?;
                let mean = b.broadcast(lo, dims, vec![])?;
                let s = b.binary(Opcode::Multiply, sigma, z)?;
                b.binary(Opcode::Add, mean, s)
            }
        }
    }

    /// Standard normal numbers by Box-Muller over pairs of uniforms, paired along the split
    /// dimension as XLA pairs them.
    fn standard_normal(&self, b: &mut Builder, t: ElementType, dims: &[i64]) -> Result<InstrId> {
        // Pairs: the split dimension d becomes (ceil(d/2), 2); a scalar is [2].
        let (split, mut half) = if dims.is_empty() { (0, vec![1]) } else { (split_dimension(dims), dims.to_vec()) };
        let size = if dims.is_empty() { 1 } else { dims[split] };
        half[split] = (size + 1) / 2;
        let mut pairs = half.clone();
        pairs.insert(split + 1, 2);
        let mut half_dims = half.clone();
        half_dims.insert(split + 1, 1);
        let u = self.unit(b, t, &pairs)?;
        let pick = |b: &mut Builder, k: i64| -> Result<InstrId> {
            let slice: Vec<SliceDim> = pairs
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    if i == split + 1 {
                        SliceDim { start: k, limit: k + 1, stride: 1 }
                    } else {
                        SliceDim { start: 0, limit: n, stride: 1 }
                    }
                })
                .collect();
            let mut s = Instruction::new("", Opcode::Slice, Shape::array(t, half_dims.clone()), vec![u]);
            s.attrs.slice = Some(slice);
            b.add(s)
        };
        let x0 = pick(b, 0)?;
        let x1 = pick(b, 1)?;
        let tiny = b.scalar(t, 1.0e-7f32 as f64)?;
        let tiny = b.broadcast(tiny, &half_dims, vec![])?;
        let u1 = b.binary(Opcode::Maximum, x0, tiny)?;
        let two_pi = b.scalar(t, (2.0f32 * std::f32::consts::PI) as f64)?;
        let two_pi = b.broadcast(two_pi, &half_dims, vec![])?;
        let v1 = b.binary(Opcode::Multiply, two_pi, x1)?;
        let minus_two = b.scalar(t, -2.0)?;
        let minus_two = b.broadcast(minus_two, &half_dims, vec![])?;
        let log = b.unary(Opcode::Log, u1)?;
        let m2log = b.binary(Opcode::Multiply, minus_two, log)?;
        let radius = b.unary(Opcode::Sqrt, m2log)?;
        let sin = b.unary(Opcode::Sine, v1)?;
        let cos = b.unary(Opcode::Cosine, v1)?;
        let z0 = b.binary(Opcode::Multiply, sin, radius)?;
        let z1 = b.binary(Opcode::Multiply, cos, radius)?;
        if dims.is_empty() {
            return b.op(Opcode::Reshape, Shape::scalar(t), vec![z0]);
        }
        let mut concat = Instruction::new("", Opcode::Concatenate, Shape::array(t, pairs.clone()), vec![z0, z1]);
        concat.attrs.dimensions = Some(vec![split as i64 + 1]);
        let both = b.add(concat)?;
        let mut even = dims.to_vec();
        even[split] = half[split] * 2;
        let flat = b.op(Opcode::Reshape, Shape::array(t, even.clone()), vec![both])?;
        if even[split] == dims[split] {
            return Ok(flat);
        }
        let slice = dims.iter().map(|&n| SliceDim { start: 0, limit: n, stride: 1 }).collect();
        let mut s = Instruction::new("", Opcode::Slice, Shape::array(t, dims.to_vec()), vec![flat]);
        s.attrs.slice = Some(slice);
        b.add(s)
    }

    fn uniform_int(&self, b: &mut Builder, lo: InstrId, hi: InstrId, t: ElementType, dims: &[i64]) -> Result<InstrId> {
        let u = if t.bit_width() == 64 { ElementType::U64 } else { ElementType::U32 };
        let bits = self.bits(b, u, dims)?;
        let as_unsigned = |b: &mut Builder, v: InstrId| b.op(Opcode::BitcastConvert, Shape::scalar(u), vec![v]);
        let hi_u = as_unsigned(b, hi)?;
        let lo_u = as_unsigned(b, lo)?;
        let range = b.binary(Opcode::Subtract, hi_u, lo_u)?;
        let range = b.broadcast(range, dims, vec![])?;
        let dist = b.binary(Opcode::Remainder, bits, range)?;
        let one = b.scalar(u, 1.0)?;
        let one = b.broadcast(one, dims, vec![])?;
        let half = b.binary(Opcode::ShiftRightLogical, dist, one)?;
        let rest = b.binary(Opcode::Subtract, dist, half)?;
        let half_t = b.op(Opcode::BitcastConvert, Shape::array(t, dims.to_vec()), vec![half])?;
        let rest_t = b.op(Opcode::BitcastConvert, Shape::array(t, dims.to_vec()), vec![rest])?;
        let lo_x = b.broadcast(lo, dims, vec![])?;
        let s = b.binary(Opcode::Add, lo_x, half_t)?;
        b.binary(Opcode::Add, s, rest_t)
    }
}

/// Expands `rng` into bit generation and conversions.
pub struct RngExpander;

impl super::pass::Pass for RngExpander {
    fn name(&self) -> &'static str {
        "rng-expander"
    }

    fn run(&self, module: &mut crate::hlo::Module) -> crate::error::Result<bool> {
        expand_rng(module)
    }
}
