//! logistic(x) = 1 / (1 + e^-x) for floats narrower than f32, rounded as XLA:CPU rounds it.
//!
//! XLA expands `logistic` before code generation (its LogisticExpander: negate, exponential,
//! add, divide in the element type; XLA's optimized HLO of an `f16[64]` logistic is exactly
//! that fusion), so for f16 and bf16 each of e^-x, 1 + e^-x and the quotient is rounded to the
//! element type; e^-x itself is XLA's f32 exp of the widened argument (its IR upcasts, calls the
//! f32 routine and truncates). Computing all of it in f32 and rounding once differs in the last
//! bit for about one f16 value in six. f32 and f64 need no rounding between the steps.

use super::fops::FV;
use super::Elemental;
use crate::error::Result;
use crate::hlo::Opcode;
use hlojit_runtime::ElementType;

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    /// logistic of a value of narrow float type `t` widened to f32; the result is rounded to
    /// `t` by the caller.
    pub(super) fn xla_logistic_narrow(&self, x: FV<'ctx>, t: ElementType) -> Result<FV<'ctx>> {
        let f = self.f(x.get_type());
        let e = self.round_through(self.float_math_unary(Opcode::Exp, f.neg(x)?)?, t)?;
        let d = self.round_through(f.add(e, f.k(1.0))?, t)?;
        f.div(f.k(1.0), d)
    }
}
