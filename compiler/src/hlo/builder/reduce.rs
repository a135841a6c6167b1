//! Reductions: reduce, reduce-window and select-and-scatter, with their computations built
//! by closures.

use super::{build_error, At, Builder, Op};
use crate::error::Result;
use crate::hlo::attributes::{Attributes, WindowDim};
use crate::hlo::opcode::Opcode;
use hlojit_runtime::Shape;
use std::panic::Location;

impl Builder {
    /// The scalar shape of each operand's element type (the parameters of a reducer,
    /// comparator or mapped function).
    pub(super) fn element_scalars(&self, at: At, op: Opcode, what: &str, ops: &[&Op]) -> Result<Vec<Shape>> {
        ops.iter()
            .enumerate()
            .map(|(i, o)| {
                let a = self.array_operand(at, op, &format!("{what} {i}"), o)?;
                Ok(Shape::scalar(a.element_type))
            })
            .collect()
    }

    /// Reduces `operand` over `dimensions` with `reducer`, starting from the scalar `init`.
    /// The reducer gets `(accumulator, element)` as `p[0]`, `p[1]` and returns the new
    /// accumulator; it should be associative and commutative, `init` its identity.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("m");
    /// let x = b.parameter(0, Shape::array(F32, [4, 8]), "x")?;
    /// let row_sums = b.reduce(&x, &b.zero(F32)?, &[1], |r, p| r.add(&p[0], &p[1]))?;
    /// assert_eq!(row_sums.dims(), &[4]);
    /// assert!(b.reduce(&x, &b.zero(F32)?, &[2], |r, p| r.add(&p[0], &p[1])).is_err()); // no dimension 2
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn reduce(
        &self,
        operand: &Op,
        init: &Op,
        dimensions: &[i64],
        reducer: impl FnOnce(&Builder, &[Op]) -> Result<Op>,
    ) -> Result<Op> {
        self.reduce_at(Location::caller(), &[operand], &[init], dimensions, reducer)
    }

    /// Reduces several same-shaped operands together (arg-max style): the reducer gets the
    /// `N` accumulators then the `N` elements and returns a tuple of `N` scalars; the result
    /// is a tuple of `N` arrays.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::{F32, S32}, Shape};
    /// let b = Builder::new("argmax");
    /// let x = b.parameter(0, Shape::array(F32, [5]), "x")?;
    /// let i = b.iota(Shape::array(S32, [5]), 0)?;
    /// let r = b.reduce_variadic(&[&x, &i], &[&b.scalar(F32, f64::NEG_INFINITY)?, &b.zero(S32)?], &[0], |r, p| {
    ///     let take = r.ge(&p[0], &p[2])?;
    ///     r.tuple(&[&r.select(&take, &p[0], &p[2])?, &r.select(&take, &p[1], &p[3])?])
    /// })?;
    /// assert_eq!(r.shape().to_string(), "(f32[], s32[])");
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn reduce_variadic(
        &self,
        operands: &[&Op],
        inits: &[&Op],
        dimensions: &[i64],
        reducer: impl FnOnce(&Builder, &[Op]) -> Result<Op>,
    ) -> Result<Op> {
        self.reduce_at(Location::caller(), operands, inits, dimensions, reducer)
    }

    fn reduce_at(
        &self,
        at: At,
        operands: &[&Op],
        inits: &[&Op],
        dimensions: &[i64],
        reducer: impl FnOnce(&Builder, &[Op]) -> Result<Op>,
    ) -> Result<Op> {
        let op = Opcode::Reduce;
        let all = self.inputs_then_inits(at, op, operands, inits)?;
        let mut params = self.element_scalars(at, op, "init value", inits)?;
        params.extend(self.element_scalars(at, op, "input", operands)?);
        let region = self.region(at, "reducer", &params, reducer)?;
        let attrs = Attributes { dimensions: Some(dimensions.to_vec()), ..Attributes::default() };
        self.emit(at, op, &all, attrs, &[region], None)
    }

    fn inputs_then_inits<'a>(&self, at: At, op: Opcode, operands: &[&'a Op], inits: &[&'a Op]) -> Result<Vec<&'a Op>> {
        if operands.is_empty() || operands.len() != inits.len() {
            return Err(build_error(
                at,
                format!(
                    "{op}: needs one init value per input and at least one input, got {} inputs and {} init values",
                    operands.len(),
                    inits.len()
                ),
            ));
        }
        self.check_operands(at, op, operands)?;
        self.check_operands(at, op, inits)?;
        Ok(operands.iter().chain(inits).copied().collect())
    }

    /// Reduces each window of `operand` (XLA's `ReduceWindowWithGeneralPadding`):
    /// `window_dimensions` and `window_strides` per dimension, `padding` as `(low, high)` per
    /// dimension (`&[]` for none), `reducer` as for [`Builder::reduce`].
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("pool");
    /// let x = b.parameter(0, Shape::array(F32, [1, 8, 8, 3]), "x")?;
    /// let lowest = b.scalar(F32, f64::NEG_INFINITY)?;
    /// let pooled = b.reduce_window(&x, &lowest, &[1, 2, 2, 1], &[1, 2, 2, 1], &[], |r, p| r.max(&p[0], &p[1]))?;
    /// assert_eq!(pooled.dims(), &[1, 4, 4, 3]);
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn reduce_window(
        &self,
        operand: &Op,
        init: &Op,
        window_dimensions: &[i64],
        window_strides: &[i64],
        padding: &[(i64, i64)],
        reducer: impl FnOnce(&Builder, &[Op]) -> Result<Op>,
    ) -> Result<Op> {
        let at = Location::caller();
        let window = make_window(at, "reduce-window", operand.rank(), window_dimensions, window_strides, padding)?;
        self.reduce_window_at(at, &[operand], &[init], &window, reducer)
    }

    /// [`Builder::reduce_window`] for several operands and a full window description (base
    /// and window dilations included); the result is a tuple when there are several operands.
    #[track_caller]
    pub fn reduce_window_general(
        &self,
        operands: &[&Op],
        inits: &[&Op],
        window: &[WindowDim],
        reducer: impl FnOnce(&Builder, &[Op]) -> Result<Op>,
    ) -> Result<Op> {
        self.reduce_window_at(Location::caller(), operands, inits, window, reducer)
    }

    fn reduce_window_at(
        &self,
        at: At,
        operands: &[&Op],
        inits: &[&Op],
        window: &[WindowDim],
        reducer: impl FnOnce(&Builder, &[Op]) -> Result<Op>,
    ) -> Result<Op> {
        let op = Opcode::ReduceWindow;
        let all = self.inputs_then_inits(at, op, operands, inits)?;
        let mut params = self.element_scalars(at, op, "init value", inits)?;
        params.extend(self.element_scalars(at, op, "input", operands)?);
        let region = self.region(at, "reducer", &params, reducer)?;
        let attrs = Attributes { window: Some(window.to_vec()), ..Attributes::default() };
        self.emit(at, op, &all, attrs, &[region], None)
    }

    /// For each window of `operand`, `select` (`(a, b) -> pred`, true keeps `a`) picks one
    /// element; the matching `source` element is combined into the result at that position
    /// with `scatter` (a reducer), every other position keeping `init`. The gradient of max
    /// pooling.
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    pub fn select_and_scatter(
        &self,
        operand: &Op,
        select: impl FnOnce(&Builder, &[Op]) -> Result<Op>,
        window_dimensions: &[i64],
        window_strides: &[i64],
        padding: &[(i64, i64)],
        source: &Op,
        init: &Op,
        scatter: impl FnOnce(&Builder, &[Op]) -> Result<Op>,
    ) -> Result<Op> {
        let at = Location::caller();
        let op = Opcode::SelectAndScatter;
        self.check_operands(at, op, &[operand, source, init])?;
        let window = make_window(at, "select-and-scatter", operand.rank(), window_dimensions, window_strides, padding)?;
        let element = self.element_scalars(at, op, "operand", &[operand])?.remove(0);
        let select = self.region(at, "select", &[element.clone(), element], select)?;
        let mut params = self.element_scalars(at, op, "init value", &[init])?;
        params.extend(self.element_scalars(at, op, "source", &[source])?);
        let scatter = self.region(at, "scatter", &params, scatter)?;
        let attrs = Attributes { window: Some(window), ..Attributes::default() };
        self.emit(at, op, &[operand, source, init], attrs, &[select, scatter], None)
    }
}

/// A window of `sizes` and `strides` (one per dimension) with `(low, high)` padding (empty
/// for none).
pub(super) fn make_window(
    at: At,
    op: &str,
    rank: usize,
    sizes: &[i64],
    strides: &[i64],
    padding: &[(i64, i64)],
) -> Result<Vec<WindowDim>> {
    if sizes.len() != rank || strides.len() != rank || !(padding.is_empty() || padding.len() == rank) {
        return Err(build_error(
            at,
            format!(
                "{op}: window dimensions {sizes:?}, strides {strides:?} and padding {padding:?} need one entry per operand \
                 dimension ({rank}); padding may be empty"
            ),
        ));
    }
    Ok((0..rank)
        .map(|i| {
            let (low, high) = padding.get(i).copied().unwrap_or((0, 0));
            WindowDim { stride: strides[i], padding_low: low, padding_high: high, ..WindowDim::new(sizes[i]) }
        })
        .collect())
}
