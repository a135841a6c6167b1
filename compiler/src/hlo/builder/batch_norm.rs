//! Batch normalization: training, inference and gradient.

use super::{Builder, Op};
use crate::error::Result;
use crate::hlo::attributes::Attributes;
use crate::hlo::opcode::Opcode;
use std::panic::Location;

fn attrs(epsilon: f32, feature_index: i64) -> Attributes {
    Attributes { epsilon: Some(epsilon), feature_index: Some(feature_index), ..Attributes::default() }
}

impl Builder {
    /// Normalizes `operand` with its own per-feature mean and variance (over every dimension
    /// but `feature_index`), then scales and offsets: the tuple `(output, mean, variance)`.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("bn");
    /// let x = b.parameter(0, Shape::array(F32, [8, 4]), "x")?;
    /// let scale = b.parameter(1, Shape::array(F32, [4]), "scale")?;
    /// let offset = b.parameter(2, Shape::array(F32, [4]), "offset")?;
    /// let t = b.batch_norm_training(&x, &scale, &offset, 1e-5, 1)?;
    /// assert_eq!(t.shape().to_string(), "(f32[8,4], f32[4], f32[4])");
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn batch_norm_training(
        &self,
        operand: &Op,
        scale: &Op,
        offset: &Op,
        epsilon: f32,
        feature_index: i64,
    ) -> Result<Op> {
        self.emit(
            Location::caller(),
            Opcode::BatchNormTraining,
            &[operand, scale, offset],
            attrs(epsilon, feature_index),
            &[],
            None,
        )
    }

    /// Normalizes `operand` with the given per-feature `mean` and `variance`, then scales and
    /// offsets.
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    pub fn batch_norm_inference(
        &self,
        operand: &Op,
        scale: &Op,
        offset: &Op,
        mean: &Op,
        variance: &Op,
        epsilon: f32,
        feature_index: i64,
    ) -> Result<Op> {
        self.emit(
            Location::caller(),
            Opcode::BatchNormInference,
            &[operand, scale, offset, mean, variance],
            attrs(epsilon, feature_index),
            &[],
            None,
        )
    }

    /// The gradients of batch normalization: the tuple `(grad_operand, grad_scale,
    /// grad_offset)`.
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    pub fn batch_norm_grad(
        &self,
        operand: &Op,
        scale: &Op,
        mean: &Op,
        variance: &Op,
        grad_output: &Op,
        epsilon: f32,
        feature_index: i64,
    ) -> Result<Op> {
        self.emit(
            Location::caller(),
            Opcode::BatchNormGrad,
            &[operand, scale, mean, variance, grad_output],
            attrs(epsilon, feature_index),
            &[],
            None,
        )
    }
}
