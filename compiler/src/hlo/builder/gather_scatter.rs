//! Gather and scatter.

use super::{build_error, Builder, Op};
use crate::error::Result;
use crate::hlo::attributes::{Attributes, GatherDimensionNumbers, ScatterDimensionNumbers};
use crate::hlo::opcode::Opcode;
use std::panic::Location;

impl Builder {
    /// Gathers `slice_sizes` windows of `operand` starting at the indices in `start_indices`
    /// (XLA's `Gather`; see the operation semantics for the dimension numbers).
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::{F32, S32}, Shape};
    /// use hlojit_compiler::hlo::GatherDimensionNumbers;
    /// // Rows 2 and 0 of a 3x4 table (an embedding lookup).
    /// let b = Builder::new("take");
    /// let table = b.parameter(0, Shape::array(F32, [3, 4]), "table")?;
    /// let rows = b.constant_vector(&[2i32, 0])?;
    /// let dnums = GatherDimensionNumbers {
    ///     offset_dims: vec![1], collapsed_slice_dims: vec![0], start_index_map: vec![0],
    ///     index_vector_dim: 1, ..Default::default()
    /// };
    /// assert_eq!(b.gather(&table, &rows, &dnums, &[1, 4], false)?.dims(), &[2, 4]);
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn gather(
        &self,
        operand: &Op,
        start_indices: &Op,
        dimension_numbers: &GatherDimensionNumbers,
        slice_sizes: &[i64],
        indices_are_sorted: bool,
    ) -> Result<Op> {
        let attrs = Attributes {
            gather_dims: Some(dimension_numbers.clone()),
            slice_sizes: Some(slice_sizes.to_vec()),
            indices_are_sorted,
            ..Attributes::default()
        };
        self.emit(Location::caller(), Opcode::Gather, &[operand, start_indices], attrs, &[], None)
    }

    /// Scatters `updates` into `operand` at `scatter_indices`, combining each update with the
    /// value there through `update` (`p[0]` the current value, `p[1]` the update; return
    /// `p[1]` to overwrite). See XLA's `Scatter` for the dimension numbers.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// use hlojit_compiler::hlo::ScatterDimensionNumbers;
    /// // Adds two rows into a 3x4 table at rows 2 and 0.
    /// let b = Builder::new("scatter_add");
    /// let table = b.parameter(0, Shape::array(F32, [3, 4]), "table")?;
    /// let rows = b.constant_vector(&[2i32, 0])?;
    /// let updates = b.parameter(1, Shape::array(F32, [2, 4]), "updates")?;
    /// let dnums = ScatterDimensionNumbers {
    ///     update_window_dims: vec![1], inserted_window_dims: vec![0], scatter_dims_to_operand_dims: vec![0],
    ///     index_vector_dim: 1, ..Default::default()
    /// };
    /// let out = b.scatter(&table, &rows, &updates, &dnums, false, false, |r, p| r.add(&p[0], &p[1]))?;
    /// assert_eq!(out.dims(), &[3, 4]);
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    pub fn scatter(
        &self,
        operand: &Op,
        scatter_indices: &Op,
        updates: &Op,
        dimension_numbers: &ScatterDimensionNumbers,
        indices_are_sorted: bool,
        unique_indices: bool,
        update: impl FnOnce(&Builder, &[Op]) -> Result<Op>,
    ) -> Result<Op> {
        self.scatter_at(
            Location::caller(),
            &[operand],
            scatter_indices,
            &[updates],
            dimension_numbers,
            indices_are_sorted,
            unique_indices,
            update,
        )
    }

    /// [`Builder::scatter`] of several operands with one set of indices: `update` gets the
    /// `N` current values then the `N` updates and returns a tuple; the result is a tuple.
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    pub fn scatter_variadic(
        &self,
        operands: &[&Op],
        scatter_indices: &Op,
        updates: &[&Op],
        dimension_numbers: &ScatterDimensionNumbers,
        indices_are_sorted: bool,
        unique_indices: bool,
        update: impl FnOnce(&Builder, &[Op]) -> Result<Op>,
    ) -> Result<Op> {
        self.scatter_at(
            Location::caller(),
            operands,
            scatter_indices,
            updates,
            dimension_numbers,
            indices_are_sorted,
            unique_indices,
            update,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn scatter_at(
        &self,
        at: super::At,
        operands: &[&Op],
        scatter_indices: &Op,
        updates: &[&Op],
        dimension_numbers: &ScatterDimensionNumbers,
        indices_are_sorted: bool,
        unique_indices: bool,
        update: impl FnOnce(&Builder, &[Op]) -> Result<Op>,
    ) -> Result<Op> {
        let op = Opcode::Scatter;
        if operands.is_empty() || operands.len() != updates.len() {
            return Err(build_error(
                at,
                format!(
                    "scatter: needs one updates array per operand and at least one operand, got {} operands and {} \
                     updates",
                    operands.len(),
                    updates.len()
                ),
            ));
        }
        let mut all: Vec<&Op> = operands.to_vec();
        all.push(scatter_indices);
        all.extend_from_slice(updates);
        self.check_operands(at, op, &all)?;
        let mut params = self.element_scalars(at, op, "operand", operands)?;
        params.extend(self.element_scalars(at, op, "updates", updates)?);
        let region = self.region(at, "update", &params, update)?;
        let attrs = Attributes {
            scatter_dims: Some(dimension_numbers.clone()),
            indices_are_sorted,
            unique_indices,
            ..Attributes::default()
        };
        self.emit(at, op, &all, attrs, &[region], None)
    }
}
