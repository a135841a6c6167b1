//! select-and-scatter with XLA's semantics: the output starts as the init value everywhere;
//! then for each source element, in the source's layout order, the window it belongs to is
//! scanned over the operand elements it covers in the order XLA:CPU's rewrite into a
//! reduce-window scans it (see [`window_order`]; padding is never selected). The first element is selected; each later element `x` replaces the selection
//! unless `select(selected, x)` holds. The source element is combined into the output at the
//! selected position with `scatter(output, source)`. A window covering only padding selects
//! nothing and scatters nothing.
//!
//! Windows may overlap and scatter into the same output element, so the kernel runs
//! sequentially (one task).

use crate::codegen::elemental::Val;
use crate::codegen::index::Index;
use crate::codegen::kernel::KernelContext;
use crate::codegen::loops::emit_loop_nest;
use crate::codegen::reducer::{loop_nest, LoopDim};
use crate::error::{Error, Result};
use inkwell::values::IntValue;
use inkwell::IntPredicate;

/// Emits a kernel whose root is a select-and-scatter; returns 1 (not splittable).
pub fn emit(kc: &KernelContext) -> Result<i64> {
    let cg = kc.cg;
    let inst = kc.comp.get(kc.root);
    let unsupported = |what: &str| Error::Unsupported(format!("{}: {what}", inst.name));
    if inst.opcode != crate::hlo::Opcode::SelectAndScatter || inst.operands.len() != 3 {
        return Err(unsupported("select-and-scatter inside a multi-output kernel"));
    }
    let (operand, source, init) = (inst.operands[0], inst.operands[1], inst.operands[2]);
    let select = inst.select_computation().ok_or_else(|| unsupported("no select computation"))?;
    let scatter = inst.scatter_computation().ok_or_else(|| unsupported("no scatter computation"))?;
    let window = inst.attrs.window_dims().to_vec();
    let out = kc.outputs.first().ok_or_else(|| Error::Internal(format!("{}: no output buffer", inst.name)))?;
    let mut e = kc.elemental();
    let dims = e.dims(operand).to_vec();
    let source_dims = e.dims(source).to_vec();
    if window.len() != dims.len() {
        return Err(Error::Internal(format!(
            "{}: window rank {} for operand rank {}",
            inst.name,
            window.len(),
            dims.len()
        )));
    }
    if window.iter().any(|w| w.base_dilation != 1) {
        return Err(unsupported("base dilation"));
    }
    let t = e.element_type(operand)?;
    kc.work_elements
        .set(Some(source_dims.iter().product::<i64>() * window.iter().map(|w| w.size.max(1)).product::<i64>()));

    let init_value = e.gen_scalar(init, &Index::scalar(cg))?;
    let out_layout = out.shape.layout_or_default();
    emit_loop_nest(cg, "sas.init", &out.shape.dims, &out_layout, None, |idx| out.store(cg, idx, init_value))?;
    if dims.contains(&0) {
        return Ok(1);
    }

    // The current selection: value, position, and whether anything was selected yet. The
    // value starts defined (zero) so that `select` never sees an undefined input.
    let value_type = cg.value_type(t);
    let selected = cg.entry_alloca(value_type, "sas.value")?;
    let found = cg.entry_alloca(cg.i1().into(), "sas.found")?;
    let position: Vec<_> =
        (0..dims.len()).map(|_| cg.entry_alloca(cg.i64().into(), "sas.pos")).collect::<Result<_>>()?;
    // XLA:CPU rewrites select-and-scatter into a variadic reduce-window over (operand, iotas)
    // and a scatter (`SelectAndScatterExpander`); the order in which that reduce-window folds
    // a window's elements into the selection decides which of equal elements wins. Measured on
    // XLA:CPU (jaxlib 0.10.2, padding patterns of 3-D and 4-D windows of sizes 2 to 4):
    // row-major, except that the last padded dimension of window size 2 comes outermost.
    let window_loops: Vec<LoopDim> = window_order(&window)
        .into_iter()
        .filter(|&d| window[d].size != 1)
        .map(|d| LoopDim::full(cg, d, window[d].size))
        .collect();
    let zero = vec![cg.const_i64(0); dims.len()];
    let source_layout = e.layout_of(source);

    e.scoped(|e| {
        emit_loop_nest(cg, "sas.source", &source_dims, &source_layout, None, |s| {
            cg.b.build_store(selected, value_type.const_zero())?;
            cg.b.build_store(found, cg.const_bool(false))?;
            for p in &position {
                cg.b.build_store(*p, cg.const_i64(0))?;
            }
            e.scoped(|e| {
                loop_nest(cg, "sas.window", &window_loops, &zero, |w| {
                    let mut pos = Vec::with_capacity(dims.len());
                    let mut in_bounds: Option<IntValue> = None;
                    for d in 0..dims.len() {
                        let wd = window[d];
                        let k = if wd.window_reversal && wd.size != 1 {
                            cg.b.build_int_nsw_sub(cg.const_i64(wd.size - 1), w.dims[d], "")?
                        } else {
                            w.dims[d]
                        };
                        let base = cg.b.build_int_nsw_mul(s.dims[d], cg.const_i64(wd.stride), "")?;
                        let k = cg.b.build_int_nsw_mul(k, cg.const_i64(wd.window_dilation), "")?;
                        let p = cg.b.build_int_nsw_add(base, k, "")?;
                        let p = cg.b.build_int_nsw_sub(p, cg.const_i64(wd.padding_low), "")?;
                        let lo = cg.b.build_int_compare(IntPredicate::SGE, p, cg.const_i64(0), "")?;
                        let hi = cg.b.build_int_compare(IntPredicate::SLT, p, cg.const_i64(dims[d]), "")?;
                        let ok = cg.b.build_and(lo, hi, "")?;
                        in_bounds = Some(match in_bounds {
                            Some(c) => cg.b.build_and(c, ok, "")?,
                            None => ok,
                        });
                        pos.push(p);
                    }
                    let cond = in_bounds.unwrap_or(cg.const_bool(true));
                    e.scoped(|e| {
                        cg.if_then("sas.in", cond, || {
                            let x = e.gen_scalar(operand, &Index::new(pos.clone()))?;
                            let current = cg.b.build_load(value_type, selected, "")?;
                            let was_found = cg.b.build_load(cg.i1(), found, "")?.into_int_value();
                            let keep = e
                                .call_scalar(select, vec![Val::Scalar(current), Val::Scalar(x)])?
                                .scalar()?
                                .into_int_value();
                            let keep = cg.b.build_and(keep, was_found, "")?;
                            let value = cg.b.build_select(keep, current, x, "")?;
                            cg.b.build_store(selected, value)?;
                            for (slot, &p) in position.iter().zip(&pos) {
                                let old = cg.b.build_load(cg.i64(), *slot, "")?.into_int_value();
                                cg.b.build_store(*slot, cg.b.build_select(keep, old, p, "")?)?;
                            }
                            cg.b.build_store(found, cg.const_bool(true))?;
                            Ok(())
                        })
                    })
                })
            })?;
            let was_found = cg.b.build_load(cg.i1(), found, "")?.into_int_value();
            e.scoped(|e| {
                cg.if_then("sas.scatter", was_found, || {
                    let at = position
                        .iter()
                        .map(|p| Ok(cg.b.build_load(cg.i64(), *p, "")?.into_int_value()))
                        .collect::<Result<Vec<_>>>()?;
                    let at = Index::new(at);
                    let g = e.gen_scalar(source, s)?;
                    let current = out.load(cg, &at)?;
                    let v = e.call_scalar(scatter, vec![Val::Scalar(current), Val::Scalar(g)])?.scalar()?;
                    out.store(cg, &at, v)
                })
            })
        })
    })?;
    Ok(1)
}

/// The window dimensions, outermost first, in the order XLA:CPU visits a window's elements:
/// row-major, except that the last dimension that is padded and has window size 2 (if any)
/// comes first. (Measured, not derived from XLA's source: a padded size-3 or size-4 dimension
/// leaves the order row-major, a padded size-2 one moves out.)
pub fn window_order(window: &[crate::hlo::WindowDim]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..window.len()).collect();
    let padded = |d: usize| window[d].padding_low != 0 || window[d].padding_high != 0;
    if let Some(p) = (0..window.len()).rev().find(|&d| padded(d) && window[d].size == 2) {
        order.retain(|&d| d != p);
        order.insert(0, p);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::window_order;
    use crate::hlo::WindowDim;

    fn sized(pads: &[(i64, i64, i64)]) -> Vec<WindowDim> {
        pads.iter()
            .map(|&(size, l, h)| WindowDim { size, stride: 1, padding_low: l, padding_high: h, window_dilation: 1, base_dilation: 1, window_reversal: false })
            .collect()
    }

    fn dims(pads: &[(i64, i64)]) -> Vec<WindowDim> {
        sized(&pads.iter().map(|&(l, h)| (2, l, h)).collect::<Vec<_>>())
    }

    #[test]
    fn last_padded_size_two_dimension_goes_outermost() {
        // Orders measured on XLA:CPU with pairs of equal maxima.
        assert_eq!(window_order(&sized(&[(3, 0, 0), (3, 1, 1), (3, 0, 0)])), vec![0, 1, 2]);
        assert_eq!(window_order(&sized(&[(4, 0, 0), (4, 1, 1), (4, 0, 0)])), vec![0, 1, 2]);
        assert_eq!(window_order(&sized(&[(3, 0, 0), (2, 1, 1), (3, 0, 0)])), vec![1, 0, 2]);
        assert_eq!(window_order(&sized(&[(2, 0, 1), (2, 0, 1), (3, 1, 1)])), vec![1, 0, 2]);
        assert_eq!(window_order(&sized(&[(3, 1, 0), (2, 0, 0), (2, 0, 0)])), vec![0, 1, 2]);
        assert_eq!(window_order(&dims(&[(0, 0), (0, 0), (0, 0)])), vec![0, 1, 2]);
        assert_eq!(window_order(&dims(&[(1, 0), (0, 0), (1, 1), (0, 0)])), vec![2, 0, 1, 3]);
        assert_eq!(window_order(&dims(&[(0, 0), (0, 1), (0, 0), (1, 0)])), vec![3, 0, 1, 2]);
        assert_eq!(window_order(&dims(&[(1, 1), (0, 0), (0, 0), (0, 0)])), vec![0, 1, 2, 3]);
        assert_eq!(window_order(&dims(&[(0, 0), (1, 0), (0, 0), (0, 0)])), vec![1, 0, 2, 3]);
    }
}
