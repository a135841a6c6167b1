//! select-and-scatter with XLA's semantics: the output starts as the init value everywhere;
//! then for each source element, in the source's layout order, the window it belongs to is
//! scanned over the operand elements it covers in the order XLA:CPU's rewrite into a
//! reduce-window scans it (see [`crate::codegen::window_peel`]; padding is never selected). The first element is selected; each later element `x` replaces the selection
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
    // a window's elements into the selection decides which of equal elements wins: XLA's
    // (`window_peel`), row-major nests of which one may hold a padded dimension's last position.
    let pieces = crate::codegen::window_peel::window_pieces(&window, &dims, &source_dims);
    let source_layout = e.layout_of(source);

    e.scoped(|e| {
        emit_loop_nest(cg, "sas.source", &source_dims, &source_layout, None, |s| {
            cg.b.build_store(selected, value_type.const_zero())?;
            cg.b.build_store(found, cg.const_bool(false))?;
            for p in &position {
                cg.b.build_store(*p, cg.const_i64(0))?;
            }
            e.scoped(|e| {
                let mut visit = crate::codegen::reducer::nest_body(|w| {
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
                });
                crate::codegen::window_peel::visit_pieces(cg, "sas.window", &pieces, &mut visit)
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
