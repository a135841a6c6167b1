//! Expands `batch-norm-training`, `batch-norm-inference` and `batch-norm-grad` into
//! elementwise ops, broadcasts and reductions, with the formulas of XLA's BatchNormExpander
//! (so results round like XLA:CPU's). `N` is the number of elements per feature (the product
//! of the non-feature dimensions), `eps` the epsilon converted to the element type, and the
//! sums run over every dimension but `feature_index`:
//!
//! - training: mean = sum(x) / N, var = sum(x*x) / N - mean*mean,
//!   y = (x - mean) * rsqrt(var + eps) * scale + offset; results (y, mean, var).
//! - inference: k = scale * rsqrt(var + eps), y = x * k + (offset - mean * k).
//! - grad: d = x - mean, offset' = sum(dy), s = sum(dy * d), scale' = s * rsqrt(var + eps),
//!   x' = (scale * rsqrt(var + eps) / N) * (dy * N - offset' - d * s / (var + eps));
//!   results (x', scale', offset').

use super::expand_util::{scalar_binary_computation, Builder};
use crate::error::{Error, Result};
use crate::hlo::{CompId, InstrId, Module, Opcode};

/// Replaces every batch-norm instruction of the module by its expansion.
pub fn expand_batch_norm(module: &mut Module) -> Result<bool> {
    let mut changed = false;
    for c in module.comp_ids().collect::<Vec<_>>() {
        let targets: Vec<InstrId> = {
            let comp = module.computation(c);
            comp.ids()
                .filter(|&id| {
                    matches!(
                        comp.get(id).opcode,
                        Opcode::BatchNormTraining | Opcode::BatchNormInference | Opcode::BatchNormGrad
                    )
                })
                .collect()
        };
        if targets.is_empty() {
            continue;
        }
        changed = true;
        for id in targets {
            let new = expand_one(module, c, id)?;
            module.computation_mut(c).replace_all_uses(id, new);
        }
        module.computation_mut(c).compact();
    }
    Ok(changed)
}

fn expand_one(module: &mut Module, c: CompId, id: InstrId) -> Result<InstrId> {
    let inst = module.computation(c).get(id).clone();
    let fail = |why: &str| Error::Unsupported(format!("{}: {} {why}", inst.name, inst.opcode.name()));
    let feature = inst.attrs.feature_index.ok_or_else(|| fail("without feature_index"))?;
    let epsilon = inst.attrs.epsilon.ok_or_else(|| fail("without epsilon"))? as f64;
    let x = *inst.operands.first().ok_or_else(|| fail("without operands"))?;
    let x_shape = module.computation(c).get(x).shape.as_array().ok_or_else(|| fail("on a tuple"))?.clone();
    let t = x_shape.element_type;
    if !t.is_float() {
        return Err(fail(&format!("on {t}")));
    }
    let dims = x_shape.dims.clone();
    let rank = dims.len() as i64;
    if feature < 0 || feature >= rank {
        return Err(fail("with feature_index out of range"));
    }
    let others: Vec<i64> = (0..rank).filter(|&d| d != feature).collect();
    let n: i64 = others.iter().map(|&d| dims[d as usize]).product();
    let add_comp = scalar_binary_computation(module, Opcode::Add, t);
    let mut b = Builder::new(module, c, format!("{}.bn", inst.name));
    let per_feature = |b: &mut Builder, v: InstrId| b.broadcast(v, &dims, vec![feature]);
    let zero = b.scalar(t, 0.0)?;
    let eps = b.scalar(t, epsilon)?;
    let count = b.scalar(t, n as f64)?;
    use Opcode::*;
    match inst.opcode {
        BatchNormTraining => {
            let (scale, offset) = (inst.operands[1], inst.operands[2]);
            let fdims = b.dims(scale)?;
            let count_f = b.broadcast(count, &fdims, vec![])?;
            let x2 = b.binary(Multiply, x, x)?;
            let sum = b.reduce(x, zero, others.clone(), add_comp)?;
            let sum2 = b.reduce(x2, zero, others, add_comp)?;
            let mean = b.binary(Divide, sum, count_f)?;
            let mean_of_squares = b.binary(Divide, sum2, count_f)?;
            let mean_squared = b.binary(Multiply, mean, mean)?;
            let var = b.binary(Subtract, mean_of_squares, mean_squared)?;
            let var_x = per_feature(&mut b, var)?;
            let eps_x = b.broadcast(eps, &dims, vec![])?;
            let var_eps = b.binary(Add, var_x, eps_x)?;
            let inv_std = b.unary(Rsqrt, var_eps)?;
            let mean_x = per_feature(&mut b, mean)?;
            let centered = b.binary(Subtract, x, mean_x)?;
            let normalized = b.binary(Multiply, centered, inv_std)?;
            let scale_x = per_feature(&mut b, scale)?;
            let scaled = b.binary(Multiply, normalized, scale_x)?;
            let offset_x = per_feature(&mut b, offset)?;
            let y = b.binary(Add, scaled, offset_x)?;
            b.tuple(vec![y, mean, var])
        }
        BatchNormInference => {
            let (scale, offset, mean, var) = (inst.operands[1], inst.operands[2], inst.operands[3], inst.operands[4]);
            let fdims = b.dims(scale)?;
            let eps_f = b.broadcast(eps, &fdims, vec![])?;
            let var_eps = b.binary(Add, var, eps_f)?;
            let inv_std = b.unary(Rsqrt, var_eps)?;
            let k = b.binary(Multiply, scale, inv_std)?;
            let mk = b.binary(Multiply, mean, k)?;
            let shift = b.binary(Subtract, offset, mk)?;
            let k_x = per_feature(&mut b, k)?;
            let xk = b.binary(Multiply, x, k_x)?;
            let shift_x = per_feature(&mut b, shift)?;
            b.binary(Add, xk, shift_x)
        }
        BatchNormGrad => {
            let (scale, mean, var, dy) = (inst.operands[1], inst.operands[2], inst.operands[3], inst.operands[4]);
            let fdims = b.dims(scale)?;
            let eps_x = b.broadcast(eps, &dims, vec![])?;
            let eps_f = b.broadcast(eps, &fdims, vec![])?;
            let scale_x = per_feature(&mut b, scale)?;
            let var_x = per_feature(&mut b, var)?;
            let mean_x = per_feature(&mut b, mean)?;
            let var_eps_x = b.binary(Add, var_x, eps_x)?;
            let inv_std_x = b.unary(Rsqrt, var_eps_x)?;
            let var_eps_f = b.binary(Add, var, eps_f)?;
            let inv_std = b.unary(Rsqrt, var_eps_f)?;
            let centered = b.binary(Subtract, x, mean_x)?;
            let dy_centered = b.binary(Multiply, dy, centered)?;
            let s = b.reduce(dy_centered, zero, others.clone(), add_comp)?;
            let grad_offset = b.reduce(dy, zero, others, add_comp)?;
            let grad_scale = b.binary(Multiply, s, inv_std)?;
            let i2 = per_feature(&mut b, grad_offset)?;
            let i3 = per_feature(&mut b, s)?;
            let i4 = b.binary(Multiply, i3, centered)?;
            let var_eps_x2 = b.binary(Add, var_x, eps_x)?;
            let i5 = b.binary(Divide, i4, var_eps_x2)?;
            let scale_inv_std = b.binary(Multiply, scale_x, inv_std_x)?;
            let count_x = b.broadcast(count, &dims, vec![])?;
            let factor = b.binary(Divide, scale_inv_std, count_x)?;
            let i1 = b.binary(Multiply, dy, count_x)?;
            let i12 = b.binary(Subtract, i1, i2)?;
            let i6 = b.binary(Subtract, i12, i5)?;
            let grad_x = b.binary(Multiply, factor, i6)?;
            b.tuple(vec![grad_x, grad_scale, grad_offset])
        }
        _ => Err(fail("is not a batch-norm op")),
    }
}

/// Expands the batch-norm ops into elementwise ops and reductions.
pub struct BatchNormExpander;

impl super::pass::Pass for BatchNormExpander {
    fn name(&self) -> &'static str {
        "batch-norm-expander"
    }

    fn run(&self, module: &mut crate::hlo::Module) -> crate::error::Result<bool> {
        expand_batch_norm(module)
    }
}
