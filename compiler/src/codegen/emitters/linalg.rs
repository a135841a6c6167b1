//! `cholesky` and `triangular-solve` as emitted loop nests over each matrix of the batch (the
//! batch is the kernel's parallel dimension). Both read only the selected triangle of their
//! matrix operand (and with `unit_diagonal` not its diagonal), as XLA:CPU does; the operand's
//! elements come from the elemental generators, so a fused producer is computed on the fly.
//!
//! - `cholesky(a), lower=true` computes L with A = L L^H from A's lower triangle, and writes
//!   zeros above the diagonal; `lower=false` computes U with A = U^H U from the upper
//!   triangle, zeros below. A matrix that is not positive definite gives NaNs from the square
//!   root of a negative pivot, like XLA.
//! - `triangular-solve(a, b)` solves op(A) X = B (`left_side=true`) or X op(A) = B, with op
//!   the identity, transpose or adjoint (`transpose_a`). X is built in the output buffer by
//!   substitution with row operations, so the innermost loops run along contiguous rows.

use super::super::elemental::Elemental;
use crate::codegen::array::IrArray;
use crate::codegen::context::Codegen;
use crate::codegen::index::{delinearize, Index};
use crate::codegen::kernel::KernelContext;
use crate::codegen::loops::for_loop;
use crate::error::{Error, Result};
use crate::hlo::attributes::Transpose;
use crate::hlo::InstrId;
use hlojit_runtime::ElementType;
use inkwell::values::{BasicValueEnum, FloatValue, IntValue};

/// Emits the cholesky at the kernel's root.
pub fn emit_cholesky<'ctx>(kc: &KernelContext<'_, 'ctx>) -> Result<i64> {
    let cg = kc.cg;
    let inst = kc.comp.get(kc.root);
    let a =
        *inst.operands.first().ok_or_else(|| Error::Internal(format!("{}: cholesky without operand", inst.name)))?;
    let lower = inst.attrs.lower.unwrap_or(false);
    let out = kc.outputs.first().ok_or_else(|| Error::Internal(format!("{}: no output buffer", inst.name)))?;
    let f = Field::new(cg, out.element_type())?;
    let dims = out.shape.dims.clone();
    let rank = dims.len();
    if rank < 2 || dims[rank - 1] != dims[rank - 2] {
        return Err(Error::Unsupported(format!("{}: cholesky of a non-square shape {:?}", inst.name, dims)));
    }
    let n = dims[rank - 1];
    let batch_dims = dims[..rank - 2].to_vec();
    let batches: i64 = batch_dims.iter().product();
    if n == 0 || batches == 0 {
        return Ok(1);
    }
    let mut e = kc.elemental();
    for_loop(cg, "chol.batch", kc.begin, kc.end, |b| {
        let m = Matrix { cg, batch: delinearize(cg, b, &batch_dims)?.dims };
        // A(i, j) of the lower triangle (i >= j): from A itself, or the conjugate mirror of the
        // upper triangle.
        let a_at =
            |e: &mut Elemental<'_, 'ctx>, i: IntValue<'ctx>, j: IntValue<'ctx>| -> Result<BasicValueEnum<'ctx>> {
                let v = if lower { m.gen(e, a, i, j)? } else { f.conj(m.gen(e, a, j, i)?)? };
                Ok(v)
            };
        // L(i, j) lives at (i, j) of the output, or conjugated at (j, i) for U = L^H.
        let l_load = |i: IntValue<'ctx>, j: IntValue<'ctx>| -> Result<BasicValueEnum<'ctx>> {
            if lower {
                m.load(out, i, j)
            } else {
                f.conj(m.load(out, j, i)?)
            }
        };
        let l_store = |i: IntValue<'ctx>, j: IntValue<'ctx>, v: BasicValueEnum<'ctx>| -> Result<()> {
            if lower {
                m.store(out, i, j, v)
            } else {
                m.store(out, j, i, f.conj(v)?)
            }
        };
        for_loop(cg, "chol.j", cg.const_i64(0), cg.const_i64(n), |j| {
            let ajj = f.real(a_at(&mut e, j, j)?)?;
            let d = fold(cg, "chol.d", ajj.into(), cg.const_i64(0), j, |k, acc| {
                let l = l_load(j, k)?;
                Ok(cg.b.build_float_sub(acc.into_float_value(), f.abs2(l)?, "")?.into())
            })?
            .into_float_value();
            let ljj = cg.call_intrinsic("llvm.sqrt", &[d.get_type().into()], &[d.into()])?.into_float_value();
            l_store(j, j, f.real_to_element(ljj)?)?;
            let j1 = cg.b.build_int_nsw_add(j, cg.const_i64(1), "")?;
            for_loop(cg, "chol.i", j1, cg.const_i64(n), |i| {
                let aij = a_at(&mut e, i, j)?;
                let s = fold(cg, "chol.s", aij, cg.const_i64(0), j, |k, acc| {
                    let p = f.mul(l_load(i, k)?, f.conj(l_load(j, k)?)?)?;
                    f.sub(acc, p)
                })?;
                l_store(i, j, f.div_real(s, ljj)?)
            })?;
            // The other triangle of this column (row) is zero.
            for_loop(cg, "chol.zero", cg.const_i64(0), j, |i| l_store(i, j, f.zero()))
        })
    })?;
    Ok(batches)
}

/// Emits the triangular-solve at the kernel's root.
pub fn emit_triangular_solve<'ctx>(kc: &KernelContext<'_, 'ctx>) -> Result<i64> {
    let cg = kc.cg;
    let inst = kc.comp.get(kc.root);
    let (a, b) = match inst.operands.as_slice() {
        [a, b] => (*a, *b),
        _ => return Err(Error::Internal(format!("{}: triangular-solve takes two operands", inst.name))),
    };
    let left = inst.attrs.left_side.unwrap_or(false);
    let lower = inst.attrs.lower.unwrap_or(false);
    let unit = inst.attrs.unit_diagonal.unwrap_or(false);
    let op = inst.attrs.transpose_a.unwrap_or(Transpose::NoTranspose);
    let out = kc.outputs.first().ok_or_else(|| Error::Internal(format!("{}: no output buffer", inst.name)))?;
    let f = Field::new(cg, out.element_type())?;
    let dims = out.shape.dims.clone();
    let rank = dims.len();
    if rank < 2 {
        return Err(Error::Unsupported(format!("{}: triangular-solve of rank {rank}", inst.name)));
    }
    let (rows, cols) = (dims[rank - 2], dims[rank - 1]);
    let m = if left { rows } else { cols };
    let batch_dims = dims[..rank - 2].to_vec();
    let batches: i64 = batch_dims.iter().product();
    if rows == 0 || cols == 0 || batches == 0 {
        return Ok(1);
    }
    // T = op(A): its triangle flips under (conjugate) transposition.
    let t_lower = if op == Transpose::NoTranspose { lower } else { !lower };
    let mut e = kc.elemental();
    for_loop(cg, "trsm.batch", kc.begin, kc.end, |bi| {
        let mx = Matrix { cg, batch: delinearize(cg, bi, &batch_dims)?.dims };
        let t_at =
            |e: &mut Elemental<'_, 'ctx>, i: IntValue<'ctx>, k: IntValue<'ctx>| -> Result<BasicValueEnum<'ctx>> {
                match op {
                    Transpose::NoTranspose => mx.gen(e, a, i, k),
                    Transpose::Transpose => mx.gen(e, a, k, i),
                    Transpose::Adjoint => f.conj(mx.gen(e, a, k, i)?),
                }
            };
        // X starts as B.
        for_loop(cg, "trsm.copy.r", cg.const_i64(0), cg.const_i64(rows), |r| {
            for_loop(cg, "trsm.copy.c", cg.const_i64(0), cg.const_i64(cols), |c| {
                let v = mx.gen(&mut e, b, r, c)?;
                mx.store(out, r, c, v)
            })
        })?;
        // Pivot p runs forward when T's nonzeros precede it in the substitution order.
        let forward = if left { t_lower } else { !t_lower };
        for_loop(cg, "trsm.p", cg.const_i64(0), cg.const_i64(m), |step| {
            let p = if forward { step } else { cg.b.build_int_nsw_sub(cg.const_i64(m - 1), step, "p")? };
            let (k_start, k_end) = if forward {
                (cg.const_i64(0), p)
            } else {
                (cg.b.build_int_nsw_add(p, cg.const_i64(1), "")?, cg.const_i64(m))
            };
            for_loop(cg, "trsm.k", k_start, k_end, |k| {
                if left {
                    // X[p, :] -= T[p, k] X[k, :]
                    let t = t_at(&mut e, p, k)?;
                    for_loop(cg, "trsm.c", cg.const_i64(0), cg.const_i64(cols), |c| {
                        let x = mx.load(out, p, c)?;
                        let y = f.sub(x, f.mul(t, mx.load(out, k, c)?)?)?;
                        mx.store(out, p, c, y)
                    })
                } else {
                    // X[:, p] -= X[:, k] T[k, p]
                    let t = t_at(&mut e, k, p)?;
                    for_loop(cg, "trsm.r", cg.const_i64(0), cg.const_i64(rows), |r| {
                        let x = mx.load(out, r, p)?;
                        let y = f.sub(x, f.mul(mx.load(out, r, k)?, t)?)?;
                        mx.store(out, r, p, y)
                    })
                }
            })?;
            if unit {
                return Ok(());
            }
            let d = t_at(&mut e, p, p)?;
            if left {
                for_loop(cg, "trsm.div", cg.const_i64(0), cg.const_i64(cols), |c| {
                    let y = f.div(mx.load(out, p, c)?, d)?;
                    mx.store(out, p, c, y)
                })
            } else {
                for_loop(cg, "trsm.div", cg.const_i64(0), cg.const_i64(rows), |r| {
                    let y = f.div(mx.load(out, r, p)?, d)?;
                    mx.store(out, r, p, y)
                })
            }
        })
    })?;
    Ok(batches)
}

/// One matrix of a batch: the batch index prefix of every element index.
struct Matrix<'a, 'ctx> {
    cg: &'a Codegen<'ctx>,
    batch: Vec<IntValue<'ctx>>,
}

impl<'a, 'ctx> Matrix<'a, 'ctx> {
    fn index(&self, i: IntValue<'ctx>, j: IntValue<'ctx>) -> Index<'ctx> {
        let mut dims = self.batch.clone();
        dims.push(i);
        dims.push(j);
        Index::new(dims)
    }

    /// Element (i, j) of operand `id`, generated in a cache scope of its own: the loops
    /// around each use differ, so nothing generated here may be reused elsewhere.
    fn gen(
        &self,
        e: &mut Elemental<'_, 'ctx>,
        id: InstrId,
        i: IntValue<'ctx>,
        j: IntValue<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        let index = self.index(i, j);
        e.scoped(|e| e.gen_scalar(id, &index))
    }

    fn load(&self, a: &IrArray<'ctx>, i: IntValue<'ctx>, j: IntValue<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        a.load(self.cg, &self.index(i, j))
    }

    fn store(&self, a: &IrArray<'ctx>, i: IntValue<'ctx>, j: IntValue<'ctx>, v: BasicValueEnum<'ctx>) -> Result<()> {
        a.store(self.cg, &self.index(i, j), v)
    }
}

/// Folds `f(k, acc)` over `k` in `[start, end)` starting from `init`.
fn fold<'ctx>(
    cg: &Codegen<'ctx>,
    name: &str,
    init: BasicValueEnum<'ctx>,
    start: IntValue<'ctx>,
    end: IntValue<'ctx>,
    f: impl FnOnce(IntValue<'ctx>, BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>>,
) -> Result<BasicValueEnum<'ctx>> {
    let slot = cg.entry_alloca(init.get_type(), name)?;
    cg.b.build_store(slot, init)?;
    for_loop(cg, name, start, end, |k| {
        let acc = cg.b.build_load(init.get_type(), slot, "")?;
        let next = f(k, acc)?;
        cg.b.build_store(slot, next)?;
        Ok(())
    })?;
    Ok(cg.b.build_load(init.get_type(), slot, name)?)
}

/// Scalar arithmetic over the element types linear algebra runs on: f32, f64, c64, c128.
#[derive(Clone, Copy)]
struct Field<'a, 'ctx> {
    cg: &'a Codegen<'ctx>,
    t: ElementType,
}

impl<'a, 'ctx> Field<'a, 'ctx> {
    fn new(cg: &'a Codegen<'ctx>, t: ElementType) -> Result<Self> {
        match t {
            ElementType::F32 | ElementType::F64 | ElementType::C64 | ElementType::C128 => Ok(Field { cg, t }),
            other => Err(cg.unsupported_type("linear algebra", other)),
        }
    }

    fn complex(&self) -> bool {
        self.t.is_complex()
    }

    fn zero(&self) -> BasicValueEnum<'ctx> {
        self.cg.value_type(self.t).const_zero()
    }

    fn parts(&self, v: BasicValueEnum<'ctx>) -> Result<(FloatValue<'ctx>, FloatValue<'ctx>)> {
        self.cg.complex_parts(v)
    }

    fn real(&self, v: BasicValueEnum<'ctx>) -> Result<FloatValue<'ctx>> {
        Ok(if self.complex() { self.parts(v)?.0 } else { v.into_float_value() })
    }

    fn real_to_element(&self, re: FloatValue<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        if self.complex() {
            self.cg.make_complex(self.t, re, re.get_type().const_zero())
        } else {
            Ok(re.into())
        }
    }

    fn conj(&self, v: BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        if !self.complex() {
            return Ok(v);
        }
        let (re, im) = self.parts(v)?;
        self.cg.make_complex(self.t, re, self.cg.b.build_float_neg(im, "")?)
    }

    /// |v|^2 as a real.
    fn abs2(&self, v: BasicValueEnum<'ctx>) -> Result<FloatValue<'ctx>> {
        let b = &self.cg.b;
        if !self.complex() {
            let x = v.into_float_value();
            return Ok(b.build_float_mul(x, x, "")?);
        }
        let (re, im) = self.parts(v)?;
        Ok(b.build_float_add(b.build_float_mul(re, re, "")?, b.build_float_mul(im, im, "")?, "")?)
    }

    fn sub(&self, x: BasicValueEnum<'ctx>, y: BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        let b = &self.cg.b;
        if !self.complex() {
            return Ok(b.build_float_sub(x.into_float_value(), y.into_float_value(), "")?.into());
        }
        let ((xr, xi), (yr, yi)) = (self.parts(x)?, self.parts(y)?);
        self.cg.make_complex(self.t, b.build_float_sub(xr, yr, "")?, b.build_float_sub(xi, yi, "")?)
    }

    fn mul(&self, x: BasicValueEnum<'ctx>, y: BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        let b = &self.cg.b;
        if !self.complex() {
            return Ok(b.build_float_mul(x.into_float_value(), y.into_float_value(), "")?.into());
        }
        let ((xr, xi), (yr, yi)) = (self.parts(x)?, self.parts(y)?);
        let re = b.build_float_sub(b.build_float_mul(xr, yr, "")?, b.build_float_mul(xi, yi, "")?, "")?;
        let im = b.build_float_add(b.build_float_mul(xr, yi, "")?, b.build_float_mul(xi, yr, "")?, "")?;
        self.cg.make_complex(self.t, re, im)
    }

    /// x / y, for complex y as x conj(y) / |y|^2 (what HLO divide computes).
    fn div(&self, x: BasicValueEnum<'ctx>, y: BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        let b = &self.cg.b;
        if !self.complex() {
            return Ok(b.build_float_div(x.into_float_value(), y.into_float_value(), "")?.into());
        }
        let ((xr, xi), (yr, yi)) = (self.parts(x)?, self.parts(y)?);
        let d = self.abs2(y)?;
        let re = b.build_float_add(b.build_float_mul(xr, yr, "")?, b.build_float_mul(xi, yi, "")?, "")?;
        let im = b.build_float_sub(b.build_float_mul(xi, yr, "")?, b.build_float_mul(xr, yi, "")?, "")?;
        self.cg.make_complex(self.t, b.build_float_div(re, d, "")?, b.build_float_div(im, d, "")?)
    }

    /// x / r for a real r.
    fn div_real(&self, x: BasicValueEnum<'ctx>, r: FloatValue<'ctx>) -> Result<BasicValueEnum<'ctx>> {
        let b = &self.cg.b;
        if !self.complex() {
            return Ok(b.build_float_div(x.into_float_value(), r, "")?.into());
        }
        let (xr, xi) = self.parts(x)?;
        self.cg.make_complex(self.t, b.build_float_div(xr, r, "")?, b.build_float_div(xi, r, "")?)
    }
}
