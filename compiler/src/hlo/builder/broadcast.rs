//! Broadcasting (seed 002): how binary and comparison ops combine operands of different
//! shapes, and the explicit `broadcast` / `broadcast_in_dim` ops.
//!
//! The rules, as XLA's builder applies them:
//!
//! * equal shapes combine elementwise;
//! * a scalar combines with any array;
//! * a lower-rank operand needs `broadcast_dimensions`: entry `i` names the dimension of the
//!   higher-rank operand that its dimension `i` matches; the entries strictly increase and
//!   matched sizes are equal or one of them is 1 (`[3]` + `[2,3]` with `{1}`);
//! * operands of equal rank may differ where one of them has size 1 (a "degenerate"
//!   dimension), which stretches to the other size: `(2,1)` and `(1,3)` make `(2,3)`;
//! * the two combine: `broadcast_dimensions` first raise the lower rank, then degenerate
//!   dimensions stretch (`[4]` + `[1,2]` with `{0}` is `4x2`).
//!
//! Anything else is an error: no numpy-style rank promotion happens without
//! `broadcast_dimensions`, and equal-rank operands take none (or the identity).
//!
//! HLO's own binary ops need equal shapes, so the builder lowers each operand that differs
//! from the result to a `reshape` that drops its stretched size-1 dimensions (only when there
//! are some) and a `broadcast` into the result shape. Both are free once fused: the consumer
//! reads the operand through the broadcast's index mapping.

use super::{build_error, At, Builder, Op};
use crate::error::Result;
use crate::hlo::attributes::Attributes;
use crate::hlo::opcode::Opcode;
use hlojit_runtime::Shape;
use std::fmt::Display;
use std::panic::Location;

/// How the operands of a broadcasting binary op reach its result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BinaryBroadcast {
    /// The result's dimensions.
    pub out_dims: Vec<i64>,
    /// For each lhs dimension, the result dimension it maps to.
    pub lhs_map: Vec<i64>,
    /// For each rhs dimension, the result dimension it maps to.
    pub rhs_map: Vec<i64>,
}

fn dims_text(dims: &[i64]) -> String {
    format!("[{}]", dims.iter().map(i64::to_string).collect::<Vec<_>>().join(","))
}

/// Works out the result dimensions of a binary op on operands of dimensions `lhs` and `rhs`
/// with `broadcast_dimensions` (empty when not given), following seed 002. Errors start with
/// `op`.
///
/// ```
/// use hlojit_compiler::hlo::builder::broadcast::plan_binary;
/// // A 1x2 matrix onto a 4x3x1 array, matching its dimensions 1 and 2: 4x3x2.
/// let plan = plan_binary("add", &[4, 3, 1], &[1, 2], &[1, 2]).unwrap();
/// assert_eq!(plan.out_dims, vec![4, 3, 2]);
/// assert_eq!(plan.rhs_map, vec![1, 2]);
/// // No implicit rank promotion: a vector and a matrix need broadcast_dimensions.
/// assert!(plan_binary("add", &[2, 3], &[3], &[]).is_err());
/// ```
pub fn plan_binary(
    op: impl Display,
    lhs: &[i64],
    rhs: &[i64],
    broadcast_dimensions: &[i64],
) -> std::result::Result<BinaryBroadcast, String> {
    let identity = |rank: usize| (0..rank as i64).collect::<Vec<i64>>();
    if lhs.len() == rhs.len() {
        if !broadcast_dimensions.is_empty() && broadcast_dimensions != identity(lhs.len()) {
            return Err(format!(
                "{op}: broadcast_dimensions {} given for operands of equal rank {} and {}; they must be empty or the identity",
                dims_text(broadcast_dimensions),
                dims_text(lhs),
                dims_text(rhs)
            ));
        }
        let out_dims = degenerate(&op, lhs, rhs)?;
        return Ok(BinaryBroadcast { out_dims, lhs_map: identity(lhs.len()), rhs_map: identity(rhs.len()) });
    }
    let lhs_smaller = lhs.len() < rhs.len();
    let (small, large) = if lhs_smaller { (lhs, rhs) } else { (rhs, lhs) };
    if broadcast_dimensions.is_empty() && !small.is_empty() {
        return Err(format!(
            "{op}: lhs {} (rank {}) and rhs {} (rank {}) need broadcast_dimensions saying which dimensions of the \
             higher-rank operand the lower-rank one matches (there is no implicit rank promotion)",
            dims_text(lhs),
            lhs.len(),
            dims_text(rhs),
            rhs.len()
        ));
    }
    let small_map = in_dim_map(&op, small, large, broadcast_dimensions)?;
    // "InDim" broadcasting: the larger shape with the matched dimensions taken from the smaller
    // operand; then degenerate dimensions stretch against the larger operand.
    let mut in_dim = large.to_vec();
    for (i, &d) in small_map.iter().enumerate() {
        in_dim[d as usize] = small[i];
    }
    let out_dims = degenerate(&op, &in_dim, large)?;
    let large_map = identity(large.len());
    Ok(if lhs_smaller {
        BinaryBroadcast { out_dims, lhs_map: small_map, rhs_map: large_map }
    } else {
        BinaryBroadcast { out_dims, lhs_map: large_map, rhs_map: small_map }
    })
}

/// The result dimensions each lower-rank dimension maps to, checked.
fn in_dim_map(
    op: &impl Display,
    small: &[i64],
    large: &[i64],
    broadcast_dimensions: &[i64],
) -> std::result::Result<Vec<i64>, String> {
    if broadcast_dimensions.is_empty() && small.is_empty() {
        return Ok(Vec::new());
    }
    if broadcast_dimensions.len() != small.len() {
        return Err(format!(
            "{op}: broadcast_dimensions {} must have one entry per dimension of the lower-rank operand {} (rank {})",
            dims_text(broadcast_dimensions),
            dims_text(small),
            small.len()
        ));
    }
    for (i, &d) in broadcast_dimensions.iter().enumerate() {
        if d < 0 || d >= large.len() as i64 {
            return Err(format!(
                "{op}: broadcast dimension {d} is out of range for the higher-rank operand {} (rank {})",
                dims_text(large),
                large.len()
            ));
        }
        if i > 0 && broadcast_dimensions[i - 1] >= d {
            return Err(format!(
                "{op}: broadcast_dimensions {} must be strictly increasing ({d} comes after {})",
                dims_text(broadcast_dimensions),
                broadcast_dimensions[i - 1]
            ));
        }
        let (s, l) = (small[i], large[d as usize]);
        if s != l && s != 1 && l != 1 {
            return Err(format!(
                "{op}: dimension {i} of {} has size {s} but the dimension {d} it is matched with in {} has size {l} \
                 (sizes must be equal or one of them 1)",
                dims_text(small),
                dims_text(large)
            ));
        }
    }
    Ok(broadcast_dimensions.to_vec())
}

/// Degenerate-dimension broadcasting of equal-rank dimension lists.
fn degenerate(op: &impl Display, a: &[i64], b: &[i64]) -> std::result::Result<Vec<i64>, String> {
    a.iter()
        .zip(b)
        .enumerate()
        .map(|(i, (&x, &y))| match (x, y) {
            _ if x == y => Ok(x),
            (1, _) => Ok(y),
            (_, 1) => Ok(x),
            _ => Err(format!(
                "{op}: incompatible shapes {} and {}: dimension {i} has sizes {x} and {y} (sizes must be equal or one \
                 of them 1)",
                dims_text(a),
                dims_text(b)
            )),
        })
        .collect()
}

/// Checks an explicit `broadcast_in_dim` from `operand` dimensions to `out_dims`: one entry per
/// operand dimension, strictly increasing, in range, each operand size equal to the output size
/// or 1.
fn check_in_dim(
    op: &impl Display,
    operand: &[i64],
    out_dims: &[i64],
    broadcast_dimensions: &[i64],
) -> std::result::Result<(), String> {
    if broadcast_dimensions.len() != operand.len() {
        return Err(format!(
            "{op}: broadcast_dimensions {} must have one entry per operand dimension of {}",
            dims_text(broadcast_dimensions),
            dims_text(operand)
        ));
    }
    if let Some(&d) = out_dims.iter().find(|&&d| d < 0) {
        return Err(format!("{op}: negative output dimension size {d} in {}", dims_text(out_dims)));
    }
    for (i, &d) in broadcast_dimensions.iter().enumerate() {
        if d < 0 || d >= out_dims.len() as i64 {
            return Err(format!(
                "{op}: broadcast dimension {d} is out of range for the output {} (rank {})",
                dims_text(out_dims),
                out_dims.len()
            ));
        }
        if i > 0 && broadcast_dimensions[i - 1] >= d {
            return Err(format!(
                "{op}: broadcast_dimensions {} must be strictly increasing ({d} comes after {})",
                dims_text(broadcast_dimensions),
                broadcast_dimensions[i - 1]
            ));
        }
        let (s, o) = (operand[i], out_dims[d as usize]);
        if s != o && s != 1 {
            return Err(format!(
                "{op}: operand dimension {i} has size {s} but output dimension {d} has size {o} (it must be equal or 1)"
            ));
        }
    }
    Ok(())
}

impl Builder {
    /// Broadcasts `operand` to `out_dims`, its dimension `i` going to `map[i]`; size-1
    /// dimensions facing a larger output size stretch. Emits nothing when `operand` already
    /// is the result, else an optional reshape (dropping the stretched dimensions) and a
    /// broadcast. The caller has checked `map`.
    pub(super) fn stretch_to(&self, at: At, operand: &Op, map: &[i64], out_dims: &[i64]) -> Result<Op> {
        let dims = operand.dims().to_vec();
        let identity = map.iter().enumerate().all(|(i, &d)| d == i as i64);
        if identity && dims == out_dims {
            return Ok(operand.clone());
        }
        if operand.shape().as_array().is_some_and(|a| a.is_dynamic()) {
            return Err(build_error(
                at,
                format!("broadcast: {} has dynamic dimensions, which the builder does not broadcast", operand.shape()),
            ));
        }
        let kept: Vec<usize> = (0..dims.len()).filter(|&i| dims[i] == out_dims[map[i] as usize]).collect();
        let source = if kept.len() < dims.len() {
            let kept_dims: Vec<i64> = kept.iter().map(|&i| dims[i]).collect();
            self.reshape_at(at, operand, &kept_dims)?
        } else {
            operand.clone()
        };
        let kept_map: Vec<i64> = kept.iter().map(|&i| map[i]).collect();
        self.hlo_broadcast(at, &source, out_dims, &kept_map)
    }

    /// The HLO `broadcast` instruction itself (no stretching).
    pub(super) fn hlo_broadcast(&self, at: At, operand: &Op, out_dims: &[i64], dims: &[i64]) -> Result<Op> {
        let element_type = self.array_operand(at, Opcode::Broadcast, "the operand", operand)?.element_type;
        let attrs = Attributes { dimensions: Some(dims.to_vec()), ..Attributes::default() };
        let declared = Shape::array(element_type, out_dims.to_vec());
        self.emit(at, Opcode::Broadcast, &[operand], attrs, &[], Some(&declared))
    }

    /// Adds dimensions in front (XLA's `Broadcast`): the result has dimensions
    /// `prefix ++ operand.dims()` and repeats the operand for every index of the new ones.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// let b = Builder::new("m");
    /// let v = b.constant_vector(&[1.0f32, 2.0, 3.0])?;
    /// assert_eq!(b.broadcast(&v, &[2, 4])?.dims(), &[2, 4, 3]);
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn broadcast(&self, operand: &Op, prefix: &[i64]) -> Result<Op> {
        let at = Location::caller();
        self.array_operand(at, "broadcast", "the operand", operand)?;
        let mut out_dims = prefix.to_vec();
        out_dims.extend_from_slice(operand.dims());
        let map: Vec<i64> = (prefix.len() as i64..out_dims.len() as i64).collect();
        check_in_dim(&"broadcast", operand.dims(), &out_dims, &map).map_err(|m| build_error(at, m))?;
        self.hlo_broadcast(at, operand, &out_dims, &map)
    }

    /// Broadcasts `operand` to `out_dims` (XLA's `BroadcastInDim`): operand dimension `i` becomes
    /// output dimension `broadcast_dimensions[i]` (strictly increasing) and must have its size
    /// or size 1, which stretches.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// let b = Builder::new("m");
    /// let col = b.constant_slice(&[3, 1], &[1i32, 2, 3])?;
    /// // The 3x1 column becomes dimensions 0 and 2 of a 3x4x5 array; its size-1 dimension stretches.
    /// assert_eq!(b.broadcast_in_dim(&col, &[3, 4, 5], &[0, 2])?.dims(), &[3, 4, 5]);
    /// assert!(b.broadcast_in_dim(&col, &[4, 5], &[0, 1]).is_err()); // 3 does not fit 4
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn broadcast_in_dim(&self, operand: &Op, out_dims: &[i64], broadcast_dimensions: &[i64]) -> Result<Op> {
        let at = Location::caller();
        self.array_operand(at, "broadcast_in_dim", "the operand", operand)?;
        check_in_dim(&"broadcast_in_dim", operand.dims(), out_dims, broadcast_dimensions)
            .map_err(|m| build_error(at, m))?;
        self.stretch_to(at, operand, broadcast_dimensions, out_dims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(lhs: &[i64], rhs: &[i64], bd: &[i64]) -> std::result::Result<Vec<i64>, String> {
        plan_binary("add", lhs, rhs, bd).map(|p| p.out_dims)
    }

    // Every example of seed 002 with the result shape it states.
    #[test]
    fn seed_002_shapes() {
        // Matrix (2,3) + vector (3) with broadcast dimension (1).
        assert_eq!(out(&[2, 3], &[3], &[1]), Ok(vec![2, 3]));
        // Scalar + matrix needs no broadcast dimensions.
        assert_eq!(out(&[2, 3], &[], &[]), Ok(vec![2, 3]));
        // A 3-vector onto 3x3 either way.
        assert_eq!(out(&[3, 3], &[3], &[1]), Ok(vec![3, 3]));
        assert_eq!(out(&[3, 3], &[3], &[0]), Ok(vec![3, 3]));
        // 2x3x4 cuboid and 3x4 matrix with (1,2).
        assert_eq!(out(&[2, 3, 4], &[3, 4], &[1, 2]), Ok(vec![2, 3, 4]));
        // Degenerate dimensions.
        assert_eq!(out(&[2, 1], &[2, 3], &[]), Ok(vec![2, 3]));
        assert_eq!(out(&[1, 2, 5], &[7, 2, 5], &[]), Ok(vec![7, 2, 5]));
        assert_eq!(out(&[7, 2, 5], &[7, 1, 5], &[]), Ok(vec![7, 2, 5]));
        assert!(out(&[7, 2, 5], &[7, 2, 6], &[]).is_err());
        // The "outer operation".
        assert_eq!(out(&[2, 1], &[1, 3], &[]), Ok(vec![2, 3]));
        // Composition: 4-vector + 1x2 matrix with (0) is 4x2; 1x2 onto 4x3x1 with (1,2) is 4x3x2.
        assert_eq!(out(&[4], &[1, 2], &[0]), Ok(vec![4, 2]));
        assert_eq!(out(&[1, 2], &[4, 3, 1], &[1, 2]), Ok(vec![4, 3, 2]));
    }

    // The formal definition: a T vector or TxV matrix against MxNxPxQ.
    #[test]
    fn seed_002_formal_definition() {
        let big = [2, 3, 5, 7];
        for d in 0..4 {
            assert_eq!(out(&big, &[big[d]], &[d as i64]), Ok(big.to_vec()), "vector at dim {d}");
        }
        assert_eq!(out(&big, &[5, 7], &[2, 3]), Ok(big.to_vec()));
        assert_eq!(out(&big, &[3, 5], &[1, 2]), Ok(big.to_vec()));
        assert_eq!(out(&big, &[2, 7], &[0, 3]), Ok(big.to_vec()));
        // Matching V with N and T with P is illegal (the order must strictly increase) ...
        let e = out(&big, &[5, 3], &[2, 1]).unwrap_err();
        assert!(e.contains("strictly increasing"), "{e}");
        // ... and so is matching V with both P and N.
        assert!(out(&big, &[5, 5], &[2, 2]).is_err());
        // A vector whose size is not the matched dimension's.
        let e = out(&[4, 3], &[3], &[0]).unwrap_err();
        assert!(e.contains("dimension 0 of [3] has size 3") && e.contains("size 4"), "{e}");
    }

    #[test]
    fn maps_of_both_operands() {
        let p = plan_binary("add", &[4], &[1, 2], &[0]).unwrap();
        assert_eq!((p.lhs_map, p.rhs_map), (vec![0], vec![0, 1]));
        let p = plan_binary("add", &[4, 3, 1], &[1, 2], &[1, 2]).unwrap();
        assert_eq!((p.lhs_map, p.rhs_map), (vec![0, 1, 2], vec![1, 2]));
    }

    #[test]
    fn errors_name_the_problem() {
        let e = out(&[2, 3], &[2, 3], &[1, 0]).unwrap_err();
        assert!(e.starts_with("add: broadcast_dimensions [1,0] given for operands of equal rank"), "{e}");
        let e = out(&[2, 3], &[3], &[]).unwrap_err();
        assert!(e.contains("need broadcast_dimensions"), "{e}");
        let e = out(&[2, 3], &[3], &[0, 1]).unwrap_err();
        assert!(e.contains("one entry per dimension"), "{e}");
        let e = out(&[2, 3], &[3], &[2]).unwrap_err();
        assert!(e.contains("out of range"), "{e}");
        let e = out(&[], &[3], &[0]).unwrap_err();
        assert!(e.contains("one entry per dimension"), "{e}");
        let e = out(&[7, 2, 5], &[7, 2, 6], &[]).unwrap_err();
        assert!(e.contains("dimension 2 has sizes 5 and 6"), "{e}");
    }
}
