//! Elementwise ops: unary functions, binary arithmetic and comparisons (broadcasting as in
//! seed 002, see [`super::broadcast`]), select, clamp and conversions.

use super::broadcast::plan_binary;
use super::{build_error, At, Builder, Op};
use crate::error::Result;
use crate::hlo::attributes::{Attributes, ComparisonDirection, ComparisonType};
use crate::hlo::opcode::Opcode;
use crate::hlo::shape_inference::{check_comparison_type, infer_binary};
use hlojit_runtime::{ElementType, Shape};
use std::panic::Location;

macro_rules! unary_ops {
    ($($(#[$doc:meta])* $name:ident => $opcode:ident,)*) => {
        impl Builder {
            $(
                $(#[$doc])*
                #[track_caller]
                pub fn $name(&self, operand: &Op) -> Result<Op> {
                    self.emit(Location::caller(), Opcode::$opcode, &[operand], Attributes::default(), &[], None)
                }
            )*
        }
    };
}

unary_ops! {
    /// `|x|` (complex operands give their real magnitude).
    abs => Abs,
    /// Cube root.
    cbrt => Cbrt,
    /// Rounds up.
    ceil => Ceil,
    /// Counts leading zero bits of integers.
    clz => Clz,
    /// Cosine.
    cos => Cosine,
    /// The error function.
    erf => Erf,
    /// `e^x`.
    exp => Exp,
    /// `e^x - 1`, accurate near 0.
    expm1 => Expm1,
    /// Rounds down.
    floor => Floor,
    /// The imaginary part (0 for real operands).
    imag => Imag,
    /// `true` where the element is neither infinite nor NaN.
    is_finite => IsFinite,
    /// Natural logarithm.
    log => Log,
    /// `ln(1 + x)`, accurate near 0.
    log1p => Log1p,
    /// `1 / (1 + e^-x)`.
    logistic => Logistic,
    /// `-x`.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// let b = Builder::new("m");
    /// let x = b.constant_vector(&[1i32, -2])?;
    /// assert_eq!(b.neg(&x)?.dims(), &[2]);
    /// assert!(b.neg(&b.constant_bools(&[1], &[true])?).is_err()); // not for pred
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    neg => Negate,
    /// Logical not of pred, bitwise not of integers.
    not => Not,
    /// Counts set bits of integers.
    population_count => Popcnt,
    /// The real part (the value itself for real operands).
    real => Real,
    /// Rounds to the nearest integer, halves away from zero.
    round => RoundNearestAfz,
    /// Rounds to the nearest integer, halves to even.
    round_nearest_even => RoundNearestEven,
    /// `1 / sqrt(x)`.
    rsqrt => Rsqrt,
    /// -1, 0 or 1 by the sign (NaN stays NaN, -0 stays -0).
    sign => Sign,
    /// Sine.
    sin => Sine,
    /// Square root.
    sqrt => Sqrt,
    /// Tangent.
    tan => Tan,
    /// Hyperbolic tangent.
    tanh => Tanh,
    /// A copy of the value (arrays, tuples or tokens).
    copy => Copy,
}

macro_rules! binary_ops {
    ($($(#[$doc:meta])* $name:ident, $in_dim:ident => $opcode:ident,)*) => {
        impl Builder {
            $(
                $(#[$doc])*
                ///
                /// Operands of equal shapes combine elementwise; a scalar combines with any
                /// array; size-1 dimensions stretch against the other operand (seed 002). A
                /// lower-rank array operand needs the `_in_dim` form.
                #[track_caller]
                pub fn $name(&self, lhs: &Op, rhs: &Op) -> Result<Op> {
                    self.binary_at(Location::caller(), Opcode::$opcode, lhs, rhs, &[], Attributes::default())
                }

                #[doc = concat!("[`Builder::", stringify!($name), "`] with `broadcast_dimensions`: dimension `i` of the lower-rank operand matches dimension `broadcast_dimensions[i]` of the other (seed 002's \"InDim\" broadcasting, combined with degenerate-dimension broadcasting).")]
                #[track_caller]
                pub fn $in_dim(&self, lhs: &Op, rhs: &Op, broadcast_dimensions: &[i64]) -> Result<Op> {
                    self.binary_at(Location::caller(), Opcode::$opcode, lhs, rhs, broadcast_dimensions, Attributes::default())
                }
            )*
        }
    };
}

binary_ops! {
    /// `lhs + rhs`.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// let b = Builder::new("m");
    /// let m = b.constant_slice(&[2, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
    /// let v = b.constant_vector(&[7.0f32, 8.0, 9.0])?;
    /// assert_eq!(b.add_in_dim(&m, &v, &[1])?.dims(), &[2, 3]); // v repeats down the rows
    /// assert!(b.add(&m, &v).is_err()); // ranks differ and no broadcast_dimensions
    /// assert_eq!(b.add(&m, &b.constant_r0(7.0f32)?)?.dims(), &[2, 3]); // scalars need none
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    add, add_in_dim => Add,
    /// `lhs - rhs`.
    sub, sub_in_dim => Subtract,
    /// `lhs * rhs`.
    mul, mul_in_dim => Multiply,
    /// The high half of the double-width product of two integers (signed or unsigned as
    /// their type): the upper N bits of the 2N-bit `lhs * rhs`.
    mulhi, mulhi_in_dim => MulHi,
    /// `lhs / rhs`.
    div, div_in_dim => Divide,
    /// The remainder of `lhs / rhs`, with the sign of `lhs`.
    rem, rem_in_dim => Remainder,
    /// The larger of `lhs` and `rhs`.
    max, max_in_dim => Maximum,
    /// The smaller of `lhs` and `rhs`.
    min, min_in_dim => Minimum,
    /// `lhs ^ rhs` (power).
    pow, pow_in_dim => Power,
    /// Logical or bitwise and.
    and, and_in_dim => And,
    /// Logical or bitwise or.
    or, or_in_dim => Or,
    /// Logical or bitwise exclusive or.
    xor, xor_in_dim => Xor,
    /// `lhs << rhs`.
    shift_left, shift_left_in_dim => ShiftLeft,
    /// `lhs >> rhs`, shifting in the sign bit.
    shift_right_arithmetic, shift_right_arithmetic_in_dim => ShiftRightArithmetic,
    /// `lhs >> rhs`, shifting in zeros.
    shift_right_logical, shift_right_logical_in_dim => ShiftRightLogical,
    /// The angle of the point `(rhs, lhs)`: `atan(lhs / rhs)` in the right quadrant.
    atan2, atan2_in_dim => Atan2,
    /// The complex number `lhs + i * rhs` from f32 or f64 parts.
    complex, complex_in_dim => Complex,
}

macro_rules! comparisons {
    ($($(#[$doc:meta])* $name:ident, $in_dim:ident => $direction:ident,)*) => {
        impl Builder {
            $(
                $(#[$doc])*
                ///
                /// Gives `pred`; operands broadcast as for [`Builder::add`].
                #[track_caller]
                pub fn $name(&self, lhs: &Op, rhs: &Op) -> Result<Op> {
                    self.compare_at(Location::caller(), lhs, rhs, &[], ComparisonDirection::$direction, None)
                }

                #[doc = concat!("[`Builder::", stringify!($name), "`] with `broadcast_dimensions` for a lower-rank operand (seed 002).")]
                #[track_caller]
                pub fn $in_dim(&self, lhs: &Op, rhs: &Op, broadcast_dimensions: &[i64]) -> Result<Op> {
                    self.compare_at(Location::caller(), lhs, rhs, broadcast_dimensions, ComparisonDirection::$direction, None)
                }
            )*
        }
    };
}

comparisons! {
    /// `lhs == rhs`.
    eq, eq_in_dim => Eq,
    /// `lhs != rhs`.
    ne, ne_in_dim => Ne,
    /// `lhs < rhs`.
    lt, lt_in_dim => Lt,
    /// `lhs <= rhs`.
    le, le_in_dim => Le,
    /// `lhs > rhs`.
    gt, gt_in_dim => Gt,
    /// `lhs >= rhs`.
    ge, ge_in_dim => Ge,
}

impl Builder {
    /// Any binary elementwise opcode (`Opcode::Add`, `Opcode::Power`, ...) with seed 002
    /// broadcasting; `broadcast_dimensions` may be empty. Comparisons go through
    /// [`Builder::compare`].
    #[track_caller]
    pub fn binary(&self, opcode: Opcode, lhs: &Op, rhs: &Op, broadcast_dimensions: &[i64]) -> Result<Op> {
        let at = Location::caller();
        if !opcode.is_elementwise_binary() || matches!(opcode, Opcode::Compare | Opcode::StochasticConvert) {
            return Err(build_error(at, format!("binary: {opcode} is not a binary elementwise arithmetic op")));
        }
        self.binary_at(at, opcode, lhs, rhs, broadcast_dimensions, Attributes::default())
    }

    /// A comparison in `direction`, with an explicit comparison `type` (`TOTALORDER` orders
    /// floats totally: -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN) or the default for the
    /// element type (`None`); operands broadcast as in seed 002.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// use hlojit_compiler::hlo::{ComparisonDirection, ComparisonType};
    /// let b = Builder::new("m");
    /// let x = b.constant_vector(&[1.0f32, f32::NAN])?;
    /// let lt = b.compare(&x, &b.constant_r0(2.0f32)?, &[], ComparisonDirection::Lt, Some(ComparisonType::TotalOrder))?;
    /// assert_eq!(lt.dims(), &[2]);
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn compare(
        &self,
        lhs: &Op,
        rhs: &Op,
        broadcast_dimensions: &[i64],
        direction: ComparisonDirection,
        comparison_type: Option<ComparisonType>,
    ) -> Result<Op> {
        self.compare_at(Location::caller(), lhs, rhs, broadcast_dimensions, direction, comparison_type)
    }

    fn compare_at(
        &self,
        at: At,
        lhs: &Op,
        rhs: &Op,
        broadcast_dimensions: &[i64],
        direction: ComparisonDirection,
        comparison_type: Option<ComparisonType>,
    ) -> Result<Op> {
        if let (Some(t), Some(element)) = (comparison_type, lhs.element_type()) {
            check_comparison_type(element, t).map_err(|m| build_error(at, m))?;
        }
        let attrs = Attributes { direction: Some(direction), comparison_type, ..Attributes::default() };
        self.binary_at(at, Opcode::Compare, lhs, rhs, broadcast_dimensions, attrs)
    }

    /// Broadcasts both operands to the seed 002 result shape, then applies the op.
    pub(super) fn binary_at(
        &self,
        at: At,
        opcode: Opcode,
        lhs: &Op,
        rhs: &Op,
        broadcast_dimensions: &[i64],
        attrs: Attributes,
    ) -> Result<Op> {
        self.check_operands(at, opcode, &[lhs, rhs])?;
        let l = self.array_operand(at, opcode, "lhs", lhs)?;
        let r = self.array_operand(at, opcode, "rhs", rhs)?;
        if l.element_type != r.element_type {
            return Err(build_error(
                at,
                format!(
                    "{opcode}: operands must have the same element type, got {} and {} (convert one first)",
                    lhs.shape().to_text(false),
                    rhs.shape().to_text(false)
                ),
            ));
        }
        let plan = plan_binary(opcode, &l.dims, &r.dims, broadcast_dimensions).map_err(|m| build_error(at, m))?;
        // Check the element types before emitting any broadcast, so a failing op leaves nothing.
        let at_out = |t: ElementType| Shape::array(t, plan.out_dims.clone());
        infer_binary(opcode, &at_out(l.element_type), &at_out(r.element_type)).map_err(|m| build_error(at, m))?;
        let lhs = self.stretch_to(at, lhs, &plan.lhs_map, &plan.out_dims)?;
        let rhs = self.stretch_to(at, rhs, &plan.rhs_map, &plan.out_dims)?;
        self.emit(at, opcode, &[&lhs, &rhs], attrs, &[], None)
    }

    /// `pred ? on_true : on_false` elementwise. Like XLA's builder, scalar operands (the
    /// predicate included) are broadcast to the shape of the array ones.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// let b = Builder::new("m");
    /// let x = b.constant_vector(&[-1.0f32, 2.0])?;
    /// let zero = b.constant_r0(0.0f32)?;
    /// let relu = b.select(&b.gt(&x, &zero)?, &x, &zero)?;
    /// assert_eq!(relu.dims(), &[2]);
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn select(&self, pred: &Op, on_true: &Op, on_false: &Op) -> Result<Op> {
        let at = Location::caller();
        let ops = self.broadcast_scalars(at, Opcode::Select, &[pred, on_true, on_false])?;
        self.emit(at, Opcode::Select, &[&ops[0], &ops[1], &ops[2]], Attributes::default(), &[], None)
    }

    /// Clamps `operand` into `[min, max]` elementwise; `min` and `max` are scalars or have the
    /// operand's shape.
    #[track_caller]
    pub fn clamp(&self, min: &Op, operand: &Op, max: &Op) -> Result<Op> {
        self.emit(Location::caller(), Opcode::Clamp, &[min, operand, max], Attributes::default(), &[], None)
    }

    /// Scalars among `ops` broadcast to the dimensions of the first array operand of higher
    /// rank (XLA's builder does this for its ternary ops).
    fn broadcast_scalars(&self, at: At, opcode: Opcode, ops: &[&Op]) -> Result<Vec<Op>> {
        self.check_operands(at, opcode, ops)?;
        let target = ops.iter().find(|o| o.rank() > 0 && o.shape().is_array()).map(|o| o.dims().to_vec());
        ops.iter()
            .map(|&o| match &target {
                Some(dims) if o.shape().is_scalar() => self.stretch_to(at, o, &[], dims),
                _ => Ok(o.clone()),
            })
            .collect()
    }

    /// Converts elements to `element_type` (rounding to nearest even, saturating float to
    /// integer conversions as XLA:CPU does).
    #[track_caller]
    pub fn convert(&self, operand: &Op, element_type: ElementType) -> Result<Op> {
        let at = Location::caller();
        let declared = self.with_element_type(at, Opcode::Convert, operand, element_type)?;
        self.emit(at, Opcode::Convert, &[operand], Attributes::default(), &[], Some(&declared))
    }

    /// Reinterprets the bits of each element as `element_type`; a narrower type adds a minor
    /// dimension, a wider one consumes it.
    #[track_caller]
    pub fn bitcast_convert(&self, operand: &Op, element_type: ElementType) -> Result<Op> {
        let at = Location::caller();
        let declared = self.with_element_type(at, Opcode::BitcastConvert, operand, element_type)?;
        self.emit(at, Opcode::BitcastConvert, &[operand], Attributes::default(), &[], Some(&declared))
    }

    /// Rounds floats to a format with `exponent_bits` and `mantissa_bits`, keeping the type.
    #[track_caller]
    pub fn reduce_precision(&self, operand: &Op, exponent_bits: i64, mantissa_bits: i64) -> Result<Op> {
        let attrs = Attributes {
            exponent_bits: Some(exponent_bits),
            mantissa_bits: Some(mantissa_bits),
            ..Attributes::default()
        };
        self.emit(Location::caller(), Opcode::ReducePrecision, &[operand], attrs, &[], None)
    }

    /// Converts floats to `element_type` rounding stochastically with the unsigned `random`
    /// bits (one per element, as wide as the operand's type).
    #[track_caller]
    pub fn stochastic_convert(&self, operand: &Op, random: &Op, element_type: ElementType) -> Result<Op> {
        let at = Location::caller();
        let declared = self.with_element_type(at, Opcode::StochasticConvert, operand, element_type)?;
        self.emit(at, Opcode::StochasticConvert, &[operand, random], Attributes::default(), &[], Some(&declared))
    }

    fn with_element_type(&self, at: At, opcode: Opcode, operand: &Op, element_type: ElementType) -> Result<Shape> {
        let a = self.array_operand(at, opcode, "the operand", operand)?;
        Ok(Shape::array(element_type, a.dims.clone()))
    }
}
