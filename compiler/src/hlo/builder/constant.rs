//! Constants (from literals, Rust slices and scalars) and iota.

use super::{build_error, At, Builder, Op};
use crate::error::Result;
use crate::hlo::attributes::Attributes;
use crate::hlo::opcode::Opcode;
use hlojit_runtime::{ArrayLiteral, ElementType, Literal, NativeType, Shape};
use std::panic::Location;

impl Builder {
    /// A constant holding `literal` (an [`ArrayLiteral`] or a tuple [`Literal`]).
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// use hlojit_runtime::ArrayLiteral;
    /// let b = Builder::new("m");
    /// let c = b.constant(ArrayLiteral::from_slice(&[2], &[1.5f32, -2.0])?)?;
    /// assert_eq!(c.dims(), &[2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn constant(&self, literal: impl Into<Literal>) -> Result<Op> {
        self.constant_at(Location::caller(), literal.into())
    }

    fn constant_at(&self, at: At, literal: Literal) -> Result<Op> {
        let attrs = Attributes { literal: Some(literal), ..Attributes::default() };
        self.emit(at, Opcode::Constant, &[], attrs, &[], None)
    }

    /// An array constant of dimensions `dims` from row-major `values`.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// let b = Builder::new("m");
    /// let m = b.constant_slice(&[2, 3], &[1i32, 2, 3, 4, 5, 6])?;
    /// assert_eq!(m.dims(), &[2, 3]);
    /// assert!(b.constant_slice(&[2, 2], &[1i32, 2, 3]).is_err()); // 3 values for 4 elements
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn constant_slice<T: NativeType>(&self, dims: &[i64], values: &[T]) -> Result<Op> {
        let at = Location::caller();
        let literal = ArrayLiteral::from_slice(dims, values).map_err(|e| build_error(at, format!("constant: {e}")))?;
        self.constant_at(at, literal.into())
    }

    /// A rank-1 constant from `values`.
    #[track_caller]
    pub fn constant_vector<T: NativeType>(&self, values: &[T]) -> Result<Op> {
        let at = Location::caller();
        let literal = ArrayLiteral::from_slice(&[values.len() as i64], values)
            .map_err(|e| build_error(at, format!("constant: {e}")))?;
        self.constant_at(at, literal.into())
    }

    /// A scalar constant of a Rust value's type (`b.constant_r0(2.5f32)`).
    #[track_caller]
    pub fn constant_r0<T: NativeType>(&self, value: T) -> Result<Op> {
        self.constant_at(Location::caller(), ArrayLiteral::scalar(value).into())
    }

    /// A `pred` array constant from booleans.
    #[track_caller]
    pub fn constant_bools(&self, dims: &[i64], values: &[bool]) -> Result<Op> {
        let at = Location::caller();
        let literal = ArrayLiteral::from_bools(dims, values).map_err(|e| build_error(at, format!("constant: {e}")))?;
        self.constant_at(at, literal.into())
    }

    /// A scalar constant of any element type, converted from `value` as XLA converts
    /// (round to nearest even for floats, truncate and saturate for integers). Handy for
    /// `f16`/`bf16` and for reducer init values; for integers beyond 2^53 use
    /// [`Builder::constant_r0`].
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// use hlojit_runtime::ElementType::BF16;
    /// let b = Builder::new("m");
    /// let one = b.scalar(BF16, 1.0)?;
    /// assert_eq!(one.element_type(), Some(BF16));
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn scalar(&self, element_type: ElementType, value: f64) -> Result<Op> {
        self.scalar_at(Location::caller(), element_type, value)
    }

    /// `0` of an element type (`false` for pred).
    #[track_caller]
    pub fn zero(&self, element_type: ElementType) -> Result<Op> {
        self.scalar_at(Location::caller(), element_type, 0.0)
    }

    /// `1` of an element type (`true` for pred).
    #[track_caller]
    pub fn one(&self, element_type: ElementType) -> Result<Op> {
        self.scalar_at(Location::caller(), element_type, 1.0)
    }

    pub(super) fn scalar_at(&self, at: At, element_type: ElementType, value: f64) -> Result<Op> {
        let mut literal = ArrayLiteral::zeros(element_type, &[]);
        literal.set_f64(0, value);
        self.constant_at(at, literal.into())
    }

    /// An array of `shape` whose elements count along `dimension`: element `i` of that
    /// dimension is `i` (XLA's `Iota`).
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::S32, Shape};
    /// let b = Builder::new("m");
    /// let i = b.iota(Shape::array(S32, [2, 3]), 1)?;
    /// assert!(b.iota(Shape::array(S32, [2, 3]), 2).is_err()); // no dimension 2
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn iota(&self, shape: Shape, dimension: i64) -> Result<Op> {
        let attrs = Attributes { iota_dimension: Some(dimension), ..Attributes::default() };
        self.emit(Location::caller(), Opcode::Iota, &[], attrs, &[], Some(&shape))
    }
}
