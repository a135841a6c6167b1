//! Unit tests of shape inference, one file per op family. Expected shapes come from the op
//! semantics (worked out by hand in comments), not from running the code.

mod collectives;
mod control;
mod dispatch;
mod dot_conv;
mod elementwise;
mod gather_scatter;
mod misc;
mod reduce;
mod shape_ops;

use crate::hlo::module::ProgramShape;
use hlojit_runtime::{ElementType, Shape};

pub(super) use ElementType::{Pred, BF16, C64, F16, F32, F64, S32, S8, U32, U64, U8};

pub(super) fn arr(t: ElementType, dims: &[i64]) -> Shape {
    Shape::array(t, dims.to_vec())
}

pub(super) fn scalar(t: ElementType) -> Shape {
    Shape::scalar(t)
}

/// A computation signature.
pub(super) fn sig(parameters: &[Shape], result: Shape) -> ProgramShape {
    ProgramShape { parameters: parameters.to_vec(), result }
}

/// `(T, T) -> T` for a scalar type.
pub(super) fn binary_reducer(t: ElementType) -> ProgramShape {
    sig(&[scalar(t), scalar(t)], scalar(t))
}

/// Asserts an inference result equals `expected` (compared as text, which includes dynamic
/// bounds but no layouts since inferred shapes carry none).
#[track_caller]
pub(super) fn assert_shape(result: Result<Shape, String>, expected: &str) {
    match result {
        Ok(shape) => assert_eq!(shape.to_string(), expected),
        Err(e) => panic!("expected {expected}, got error: {e}"),
    }
}

/// Asserts an inference error that contains every fragment.
#[track_caller]
pub(super) fn assert_err(result: Result<Shape, String>, fragments: &[&str]) {
    match result {
        Ok(shape) => panic!("expected an error containing {fragments:?}, got {shape}"),
        Err(e) => {
            for f in fragments {
                assert!(e.contains(f), "error {e:?} does not contain {f:?}");
            }
        }
    }
}
