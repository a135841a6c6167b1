//! reduce and reduce-window, one output element at a time: each output element runs its own
//! accumulation loop. This is how they are computed inside a fusion whose root is something
//! else (an epilogue such as `divide(x, broadcast(reduce(...)))`); a fusion or op whose root
//! is a reduce gets the loop-nest emitter in `emitters::reduce` instead.

use super::{Elemental, Input, Val};
use crate::codegen::index::Index;
use crate::codegen::reducer::{loop_nest, major_to_minor_selected, Accumulators, LoopDim, Reducer, Variadic};
use crate::error::{Error, Result};
use crate::hlo::InstrId;
use hlojit_runtime::Layout;
use inkwell::values::{BasicValueEnum, IntValue};
use inkwell::IntPredicate;

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    /// The layout in which `id`'s elements are stored: its buffer's when it is read from
    /// memory, otherwise the layout its shape declares.
    pub fn layout_of(&self, id: InstrId) -> Layout {
        match self.inputs.get(&id) {
            Some(Input::Array(a)) => a.shape.layout_or_default(),
            _ => self
                .comp
                .get(id)
                .shape
                .as_array()
                .map(|a| a.layout_or_default())
                .unwrap_or_else(|| Layout::row_major(0)),
        }
    }

    /// The init values of a reduction, generated once.
    pub fn gen_inits(&mut self, inits: &[InstrId]) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let scalar = Index::scalar(self.cg);
        inits.iter().map(|&i| self.gen_scalar(i, &scalar)).collect()
    }

    /// A reduce's result values, one per input, as a value of its shape.
    pub fn pack(&self, id: InstrId, values: Vec<BasicValueEnum<'ctx>>) -> Val<'ctx> {
        if self.comp.get(id).shape.is_tuple() {
            Val::Tuple(values.into_iter().map(Val::Scalar).collect())
        } else {
            Val::Scalar(values[0])
        }
    }

    pub(super) fn gen_reduce(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let cg = self.cg;
        let inst = self.comp.get(id);
        let v = Variadic::of(inst)?;
        let reducer_comp =
            inst.to_apply().ok_or_else(|| Error::Internal(format!("{}: reduce without to_apply", inst.name)))?;
        let reduced: Vec<usize> =
            inst.attrs.dims().iter().map(|&d| d as usize).collect();
        let dims = self.dims(v.inputs[0]).to_vec();
        let layout = self.layout_of(v.inputs[0]);

        // Kept dimensions take the output index in order; reduced ones are looped over.
        let mut base = Vec::with_capacity(dims.len());
        let mut kept = index.dims.iter();
        for d in 0..dims.len() {
            base.push(if reduced.contains(&d) {
                cg.const_i64(0)
            } else {
                *kept.next().ok_or_else(|| Error::Internal(format!("{}: output index rank", inst.name)))?
            });
        }
        let loops: Vec<LoopDim> = major_to_minor_selected(&layout.minor_to_major, &dims, |d| reduced.contains(&d))
            .into_iter()
            .map(|d| LoopDim::full(cg, d, dims[d]))
            .collect();

        let reducer = Reducer::new(self.module, reducer_comp, &v.types);
        let init = self.gen_inits(&v.inits)?;
        let accs = Accumulators::new(cg, &v.types)?;
        accs.store(cg, &init)?;
        let accumulate = |e: &mut Self, reducer: &Reducer| {
            e.scoped(|e| {
                loop_nest(cg, "reduce", &loops, &base, |idx| {
                    let xs = v.inputs.iter().map(|&x| e.gen_scalar(x, idx)).collect::<Result<Vec<_>>>()?;
                    let r = reducer.apply(e, accs.load(cg)?, xs)?;
                    accs.store(cg, &r)
                })
            })
        };
        accumulate(self, &reducer)?;
        reducer.redo_in_order_if_nan(cg, &accs, &init, |in_order| accumulate(self, in_order))?;
        let out = accs.load(cg)?;
        Ok(self.pack(id, out))
    }

    pub(super) fn gen_reduce_window(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let cg = self.cg;
        let inst = self.comp.get(id);
        let v = Variadic::of(inst)?;
        let reducer_comp =
            inst.to_apply().ok_or_else(|| Error::Internal(format!("{}: reduce-window without to_apply", inst.name)))?;
        let window = inst.attrs.window_dims().to_vec();
        let dims = self.dims(v.inputs[0]).to_vec();
        let out_dims = inst.shape.array_leaves().first().map(|a| a.dims.clone()).unwrap_or_default();
        if window.len() != dims.len() {
            return Err(Error::Internal(format!(
                "{}: window rank {} for operand rank {}",
                inst.name,
                window.len(),
                dims.len()
            )));
        }

        // Window positions are visited in XLA:CPU's order (reversed along `rhs_reversal`
        // dimensions): row-major in the nests of `window_peel` (one padded window dimension
        // may have its last position visited after all others).
        let pieces = crate::codegen::window_peel::window_pieces(&window, &dims, &out_dims);

        let reducer = Reducer::for_window(self.module, reducer_comp, &v.types);
        let init = self.gen_inits(&v.inits)?;
        let accs = Accumulators::new(cg, &v.types)?;
        accs.store(cg, &init)?;
        let any_window = dims.iter().all(|&d| d > 0) && window.iter().all(|w| w.size > 0);
        if !any_window {
            return Ok(self.pack(id, init));
        }
        self.scoped(|e| {
            let mut visit = crate::codegen::reducer::nest_body(|w| {
                let mut input = Vec::with_capacity(dims.len());
                let mut in_bounds: Option<IntValue> = None;
                let mut and = |c: IntValue<'ctx>| -> Result<()> {
                    in_bounds = Some(match in_bounds {
                        Some(p) => cg.b.build_and(p, c, "")?,
                        None => c,
                    });
                    Ok(())
                };
                for d in 0..dims.len() {
                    let wd = window[d];
                    let k = if wd.window_reversal && wd.size != 1 {
                        cg.b.build_int_nsw_sub(cg.const_i64(wd.size - 1), w.dims[d], "")?
                    } else {
                        w.dims[d]
                    };
                    // Position in the padded, base-dilated operand, relative to element 0.
                    let o = index.dims[d];
                    let mut p = cg.b.build_int_nsw_mul(o, cg.const_i64(wd.stride), "")?;
                    let k_dilated = cg.b.build_int_nsw_mul(k, cg.const_i64(wd.window_dilation), "")?;
                    p = cg.b.build_int_nsw_add(p, k_dilated, "")?;
                    p = cg.b.build_int_nsw_sub(p, cg.const_i64(wd.padding_low), "")?;
                    // Static range of p over the whole output decides which checks are needed.
                    let out_size = out_dims.get(d).copied().unwrap_or(1).max(1);
                    let p_min = -wd.padding_low;
                    let p_max = (out_size - 1) * wd.stride + (wd.size - 1) * wd.window_dilation - wd.padding_low;
                    let bd = wd.base_dilation.max(1);
                    if p_min < 0 {
                        and(cg.b.build_int_compare(IntPredicate::SGE, p, cg.const_i64(0), "")?)?;
                    }
                    if bd > 1 {
                        let r = cg.b.build_int_signed_rem(p, cg.const_i64(bd), "")?;
                        and(cg.b.build_int_compare(IntPredicate::EQ, r, cg.const_i64(0), "")?)?;
                        p = cg.b.build_int_signed_div(p, cg.const_i64(bd), "")?;
                    }
                    if p_max > (dims[d] - 1) * bd {
                        and(cg.b.build_int_compare(IntPredicate::SLT, p, cg.const_i64(dims[d]), "")?)?;
                    }
                    input.push(p);
                }
                let input = Index::new(input);
                let step = |e: &mut Elemental<'a, 'ctx>| -> Result<()> {
                    let xs = v.inputs.iter().map(|&x| e.gen_scalar(x, &input)).collect::<Result<Vec<_>>>()?;
                    let r = reducer.apply(e, accs.load(cg)?, xs)?;
                    accs.store(cg, &r)
                };
                match in_bounds {
                    Some(c) => e.scoped(|e| cg.if_then("window.in", c, || step(e))),
                    None => step(e),
                }
            });
            crate::codegen::window_peel::visit_pieces(cg, "window", &pieces, &mut visit)
        })?;
        let out = accs.load(cg)?;
        Ok(self.pack(id, out))
    }
}
