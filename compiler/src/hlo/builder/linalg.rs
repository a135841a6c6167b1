//! Linear algebra: dot products, convolutions, FFT, Cholesky and triangular solves.

use super::reduce::make_window;
use super::{build_error, Builder, Op};
use crate::error::Result;
use crate::hlo::attributes::{Attributes, ConvDimensionNumbers, DotDimensionNumbers, FftType, Transpose, WindowDim};
use crate::hlo::opcode::Opcode;
use hlojit_runtime::{ElementType, Shape};
use std::panic::Location;

impl Builder {
    /// Vector and matrix products (XLA's `Dot`): contracts the last dimension of `lhs` with
    /// the first of `rhs`; each operand has rank 1 or 2. For batches and other dimensions use
    /// [`Builder::dot_general`].
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("m");
    /// let a = b.parameter(0, Shape::array(F32, [2, 3]), "a")?;
    /// let v = b.parameter(1, Shape::array(F32, [3]), "v")?;
    /// assert_eq!(b.dot(&a, &v)?.dims(), &[2]);
    /// let err = b.dot(&v, &a).unwrap_err().to_string(); // 3 against 2
    /// assert!(err.contains("dot:"), "{err}");
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn dot(&self, lhs: &Op, rhs: &Op) -> Result<Op> {
        let at = Location::caller();
        for (what, x) in [("lhs", lhs), ("rhs", rhs)] {
            let a = self.array_operand(at, Opcode::Dot, what, x)?;
            if a.rank() == 0 || a.rank() > 2 {
                return Err(build_error(
                    at,
                    format!(
                        "dot: {what} {} must be a vector or a matrix; use dot_general for other ranks",
                        x.shape().to_text(false)
                    ),
                ));
            }
        }
        let dnums = DotDimensionNumbers {
            lhs_contracting: vec![lhs.rank() as i64 - 1],
            rhs_contracting: vec![0],
            ..DotDimensionNumbers::default()
        };
        let attrs = Attributes { dot_dims: Some(dnums), ..Attributes::default() };
        self.emit(at, Opcode::Dot, &[lhs, rhs], attrs, &[], None)
    }

    /// A general dot product: batch dimensions pair up, contracting dimensions are summed
    /// over; the result has the batch dimensions, then the other lhs ones, then the other rhs
    /// ones. `preferred_element_type` asks for a wider accumulation and result type.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// use hlojit_compiler::hlo::DotDimensionNumbers;
    /// let b = Builder::new("bmm");
    /// let x = b.parameter(0, Shape::array(F32, [8, 2, 3]), "x")?;
    /// let y = b.parameter(1, Shape::array(F32, [8, 3, 5]), "y")?;
    /// let dnums = DotDimensionNumbers {
    ///     lhs_batch: vec![0], rhs_batch: vec![0], lhs_contracting: vec![2], rhs_contracting: vec![1],
    /// };
    /// assert_eq!(b.dot_general(&x, &y, &dnums, None)?.dims(), &[8, 2, 5]);
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn dot_general(
        &self,
        lhs: &Op,
        rhs: &Op,
        dimension_numbers: &DotDimensionNumbers,
        preferred_element_type: Option<ElementType>,
    ) -> Result<Op> {
        let attrs = Attributes { dot_dims: Some(dimension_numbers.clone()), ..Attributes::default() };
        let preferred = preferred_element_type.map(Shape::scalar);
        self.emit(Location::caller(), Opcode::Dot, &[lhs, rhs], attrs, &[], preferred.as_ref())
    }

    /// A convolution with XLA's default layout (XLA's `ConvWithGeneralPadding`): `lhs` is
    /// `[batch, feature, spatial...]`, `rhs` is `[output feature, input feature, spatial...]`,
    /// the result `[batch, feature, spatial...]`; `strides` and `(low, high)` `padding` (empty
    /// for none) per spatial dimension.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("conv");
    /// let x = b.parameter(0, Shape::array(F32, [1, 3, 8, 8]), "x")?;
    /// let k = b.parameter(1, Shape::array(F32, [16, 3, 3, 3]), "k")?;
    /// assert_eq!(b.conv(&x, &k, &[1, 1], &[(1, 1), (1, 1)])?.dims(), &[1, 16, 8, 8]);
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn conv(&self, lhs: &Op, rhs: &Op, strides: &[i64], padding: &[(i64, i64)]) -> Result<Op> {
        let at = Location::caller();
        let rank = lhs.rank();
        if rank < 2 {
            return Err(build_error(
                at,
                format!("convolution: lhs {} needs batch and feature dimensions", lhs.shape().to_text(false)),
            ));
        }
        let spatial: Vec<i64> = (2..rank as i64).collect();
        let dnums = ConvDimensionNumbers {
            input_batch: 0,
            input_feature: 1,
            input_spatial: spatial.clone(),
            kernel_output_feature: 0,
            kernel_input_feature: 1,
            kernel_spatial: spatial.clone(),
            output_batch: 0,
            output_feature: 1,
            output_spatial: spatial,
        };
        let sizes: Vec<i64> = rhs.dims().iter().skip(2).copied().collect();
        let window = make_window(at, "convolution", rank - 2, &sizes, strides, padding)?;
        self.conv_at(at, lhs, rhs, window, dnums, 1, 1, None)
    }

    /// The general convolution (XLA's `ConvGeneralDilated`): `strides`, `(low, high)`
    /// `padding`, `lhs_dilation` (base) and `rhs_dilation` (window) per spatial dimension
    /// (empty dilations mean 1), dimension numbers saying where batch, feature and spatial
    /// dimensions are, feature and batch grouping, and an optional preferred result type.
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    pub fn conv_general_dilated(
        &self,
        lhs: &Op,
        rhs: &Op,
        strides: &[i64],
        padding: &[(i64, i64)],
        lhs_dilation: &[i64],
        rhs_dilation: &[i64],
        dimension_numbers: &ConvDimensionNumbers,
        feature_group_count: i64,
        batch_group_count: i64,
        preferred_element_type: Option<ElementType>,
    ) -> Result<Op> {
        let at = Location::caller();
        let n = dimension_numbers.kernel_spatial.len();
        let sizes: Vec<i64> = dimension_numbers
            .kernel_spatial
            .iter()
            .map(|&d| usize::try_from(d).ok().and_then(|d| rhs.dims().get(d)).copied().unwrap_or(-1))
            .collect();
        let mut window = make_window(at, "convolution", n, &sizes, strides, padding)?;
        for (what, dilation) in [("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)] {
            if !dilation.is_empty() && dilation.len() != n {
                return Err(build_error(
                    at,
                    format!("convolution: {what} {dilation:?} needs one entry per spatial dimension ({n}) or none"),
                ));
            }
        }
        for (i, w) in window.iter_mut().enumerate() {
            w.base_dilation = lhs_dilation.get(i).copied().unwrap_or(1);
            w.window_dilation = rhs_dilation.get(i).copied().unwrap_or(1);
        }
        self.conv_at(
            at,
            lhs,
            rhs,
            window,
            dimension_numbers.clone(),
            feature_group_count,
            batch_group_count,
            preferred_element_type,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn conv_at(
        &self,
        at: super::At,
        lhs: &Op,
        rhs: &Op,
        window: Vec<WindowDim>,
        dnums: ConvDimensionNumbers,
        feature_group_count: i64,
        batch_group_count: i64,
        preferred: Option<ElementType>,
    ) -> Result<Op> {
        let attrs = Attributes {
            window: Some(window),
            conv_dims: Some(dnums),
            feature_group_count: (feature_group_count != 1).then_some(feature_group_count),
            batch_group_count: (batch_group_count != 1).then_some(batch_group_count),
            ..Attributes::default()
        };
        let preferred = preferred.map(Shape::scalar);
        self.emit(at, Opcode::Convolution, &[lhs, rhs], attrs, &[], preferred.as_ref())
    }

    /// A fast Fourier transform over the `fft_length.len()` (1 to 3) minor dimensions.
    #[track_caller]
    pub fn fft(&self, operand: &Op, fft_type: FftType, fft_length: &[i64]) -> Result<Op> {
        let attrs =
            Attributes { fft_type: Some(fft_type), fft_length: Some(fft_length.to_vec()), ..Attributes::default() };
        self.emit(Location::caller(), Opcode::Fft, &[operand], attrs, &[], None)
    }

    /// The Cholesky factor of (a batch of) symmetric positive definite matrices, lower or
    /// upper triangular.
    #[track_caller]
    pub fn cholesky(&self, a: &Op, lower: bool) -> Result<Op> {
        let attrs = Attributes { lower: Some(lower), ..Attributes::default() };
        self.emit(Location::caller(), Opcode::Cholesky, &[a], attrs, &[], None)
    }

    /// Solves `op(a) * x = b` (`left_side`) or `x * op(a) = b` for `x`, with `a` triangular
    /// (`lower` or upper, `unit_diagonal` assumed ones) and `op` given by `transpose_a`.
    #[track_caller]
    pub fn triangular_solve(
        &self,
        a: &Op,
        b: &Op,
        left_side: bool,
        lower: bool,
        unit_diagonal: bool,
        transpose_a: Transpose,
    ) -> Result<Op> {
        let attrs = Attributes {
            left_side: Some(left_side),
            lower: Some(lower),
            unit_diagonal: Some(unit_diagonal),
            transpose_a: Some(transpose_a),
            ..Attributes::default()
        };
        self.emit(Location::caller(), Opcode::TriangularSolve, &[a, b], attrs, &[], None)
    }
}
