//! Ops that rearrange elements: reshape, collapse, transpose, reverse, slices, concatenate,
//! pad, dynamic slices and dynamic dimension sizes.

use super::{build_error, At, Builder, Op};
use crate::error::Result;
use crate::hlo::attributes::{Attributes, PadDim, SliceDim};
use crate::hlo::opcode::Opcode;
use hlojit_runtime::Shape;
use std::panic::Location;

impl Builder {
    /// The same elements, in row-major order, with dimensions `new_dims`.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// let b = Builder::new("m");
    /// let x = b.constant_slice(&[2, 3], &[1u8, 2, 3, 4, 5, 6])?;
    /// assert_eq!(b.reshape(&x, &[3, 2])?.dims(), &[3, 2]);
    /// assert!(b.reshape(&x, &[4, 2]).is_err()); // 8 elements, not 6
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn reshape(&self, operand: &Op, new_dims: &[i64]) -> Result<Op> {
        self.reshape_at(Location::caller(), operand, new_dims)
    }

    pub(super) fn reshape_at(&self, at: At, operand: &Op, new_dims: &[i64]) -> Result<Op> {
        let a = self.array_operand(at, Opcode::Reshape, "the operand", operand)?;
        let declared = Shape::array(a.element_type, new_dims.to_vec());
        self.emit(at, Opcode::Reshape, &[operand], Attributes::default(), &[], Some(&declared))
    }

    /// Merges the consecutive dimensions `dimensions` (in order) into one (XLA's `Collapse`).
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("m");
    /// let x = b.parameter(0, Shape::array(F32, [2, 3, 4]), "x")?;
    /// assert_eq!(b.collapse(&x, &[1, 2])?.dims(), &[2, 12]);
    /// assert!(b.collapse(&x, &[0, 2]).is_err()); // not consecutive
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn collapse(&self, operand: &Op, dimensions: &[i64]) -> Result<Op> {
        let at = Location::caller();
        let dims = operand.dims().to_vec();
        let consecutive = dimensions.windows(2).all(|w| w[1] == w[0] + 1);
        let in_range = dimensions.iter().all(|&d| d >= 0 && (d as usize) < dims.len());
        if dimensions.is_empty() || !consecutive || !in_range {
            return Err(build_error(
                at,
                format!(
                    "collapse: dimensions {dimensions:?} must be a non-empty run of consecutive dimensions of {}",
                    operand.shape().to_text(false)
                ),
            ));
        }
        let (first, last) = (dimensions[0] as usize, dimensions[dimensions.len() - 1] as usize);
        let mut new_dims = dims[..first].to_vec();
        new_dims.push(dims[first..=last].iter().product());
        new_dims.extend_from_slice(&dims[last + 1..]);
        self.reshape_at(at, operand, &new_dims)
    }

    /// Permutes dimensions: result dimension `i` is operand dimension `permutation[i]`.
    #[track_caller]
    pub fn transpose(&self, operand: &Op, permutation: &[i64]) -> Result<Op> {
        let attrs = Attributes { dimensions: Some(permutation.to_vec()), ..Attributes::default() };
        self.emit(Location::caller(), Opcode::Transpose, &[operand], attrs, &[], None)
    }

    /// Reverses the order of elements along `dimensions`.
    #[track_caller]
    pub fn rev(&self, operand: &Op, dimensions: &[i64]) -> Result<Op> {
        let attrs = Attributes { dimensions: Some(dimensions.to_vec()), ..Attributes::default() };
        self.emit(Location::caller(), Opcode::Reverse, &[operand], attrs, &[], None)
    }

    /// The elements from `start` (inclusive) to `limit` (exclusive) with `strides`, one entry
    /// per dimension each.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// let b = Builder::new("m");
    /// let x = b.constant_vector(&[0i32, 1, 2, 3, 4, 5])?;
    /// assert_eq!(b.slice(&x, &[1], &[6], &[2])?.dims(), &[3]); // 1, 3, 5
    /// assert!(b.slice(&x, &[0], &[7], &[1]).is_err()); // past the end
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn slice(&self, operand: &Op, start: &[i64], limit: &[i64], strides: &[i64]) -> Result<Op> {
        let at = Location::caller();
        if start.len() != limit.len() || start.len() != strides.len() {
            return Err(build_error(
                at,
                format!(
                    "slice: start {start:?}, limit {limit:?} and strides {strides:?} must have one entry per dimension"
                ),
            ));
        }
        let slice =
            (0..start.len()).map(|i| SliceDim { start: start[i], limit: limit[i], stride: strides[i] }).collect();
        let attrs = Attributes { slice: Some(slice), ..Attributes::default() };
        self.emit(at, Opcode::Slice, &[operand], attrs, &[], None)
    }

    /// A slice along one dimension, whole along the others.
    #[track_caller]
    pub fn slice_in_dim(&self, operand: &Op, start: i64, limit: i64, stride: i64, dimension: i64) -> Result<Op> {
        let at = Location::caller();
        let dims = operand.dims();
        if dimension < 0 || dimension as usize >= dims.len() {
            return Err(build_error(
                at,
                format!("slice: dimension {dimension} is out of range for {}", operand.shape().to_text(false)),
            ));
        }
        let slice = dims
            .iter()
            .enumerate()
            .map(|(i, &size)| {
                if i == dimension as usize {
                    SliceDim { start, limit, stride }
                } else {
                    SliceDim { start: 0, limit: size, stride: 1 }
                }
            })
            .collect();
        let attrs = Attributes { slice: Some(slice), ..Attributes::default() };
        self.emit(at, Opcode::Slice, &[operand], attrs, &[], None)
    }

    /// Concatenates `operands` along `dimension`; they agree on every other dimension.
    #[track_caller]
    pub fn concat_in_dim(&self, operands: &[&Op], dimension: i64) -> Result<Op> {
        let attrs = Attributes { dimensions: Some(vec![dimension]), ..Attributes::default() };
        self.emit(Location::caller(), Opcode::Concatenate, operands, attrs, &[], None)
    }

    /// Pads with the scalar `value`: per dimension `low` and `high` elements at the ends
    /// (negative values cut) and `interior` between neighbours.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// use hlojit_compiler::hlo::PadDim;
    /// let b = Builder::new("m");
    /// let x = b.constant_vector(&[1.0f32, 2.0, 3.0])?;
    /// let zero = b.constant_r0(0.0f32)?;
    /// let p = b.pad(&x, &zero, &[PadDim { low: 1, high: 2, interior: 1 }])?;
    /// assert_eq!(p.dims(), &[8]); // 1 + 3 + 2 interior + 2
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn pad(&self, operand: &Op, value: &Op, padding: &[PadDim]) -> Result<Op> {
        let attrs = Attributes { padding: Some(padding.to_vec()), ..Attributes::default() };
        self.emit(Location::caller(), Opcode::Pad, &[operand, value], attrs, &[], None)
    }

    /// Pads one dimension at its ends.
    #[track_caller]
    pub fn pad_in_dim(&self, operand: &Op, value: &Op, dimension: i64, low: i64, high: i64) -> Result<Op> {
        let at = Location::caller();
        let rank = operand.rank();
        if dimension < 0 || dimension as usize >= rank {
            return Err(build_error(
                at,
                format!("pad: dimension {dimension} is out of range for {}", operand.shape().to_text(false)),
            ));
        }
        let padding = (0..rank)
            .map(|i| if i == dimension as usize { PadDim { low, high, interior: 0 } } else { PadDim::default() })
            .collect();
        let attrs = Attributes { padding: Some(padding), ..Attributes::default() };
        self.emit(at, Opcode::Pad, &[operand, value], attrs, &[], None)
    }

    /// A `slice_sizes` window of `operand` starting at run-time `start_indices` (integer
    /// scalars, one per dimension, clamped so the window stays inside).
    #[track_caller]
    pub fn dynamic_slice(&self, operand: &Op, start_indices: &[&Op], slice_sizes: &[i64]) -> Result<Op> {
        let mut operands = vec![operand];
        operands.extend_from_slice(start_indices);
        let attrs = Attributes { slice_sizes: Some(slice_sizes.to_vec()), ..Attributes::default() };
        self.emit(Location::caller(), Opcode::DynamicSlice, &operands, attrs, &[], None)
    }

    /// `operand` with `update` written at run-time `start_indices` (clamped so it fits).
    #[track_caller]
    pub fn dynamic_update_slice(&self, operand: &Op, update: &Op, start_indices: &[&Op]) -> Result<Op> {
        let mut operands = vec![operand, update];
        operands.extend_from_slice(start_indices);
        self.emit(Location::caller(), Opcode::DynamicUpdateSlice, &operands, Attributes::default(), &[], None)
    }

    /// The run-time size of `dimension` as an `s32` scalar.
    #[track_caller]
    pub fn get_dimension_size(&self, operand: &Op, dimension: i64) -> Result<Op> {
        let attrs = Attributes { dimensions: Some(vec![dimension]), ..Attributes::default() };
        self.emit(Location::caller(), Opcode::GetDimensionSize, &[operand], attrs, &[], None)
    }

    /// `operand` with `dimension` made dynamic, of run-time size `size` (an `s32` scalar, at
    /// most the static size).
    #[track_caller]
    pub fn set_dimension_size(&self, operand: &Op, size: &Op, dimension: i64) -> Result<Op> {
        let attrs = Attributes { dimensions: Some(vec![dimension]), ..Attributes::default() };
        self.emit(Location::caller(), Opcode::SetDimensionSize, &[operand, size], attrs, &[], None)
    }
}
