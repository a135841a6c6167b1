//! `expand` and `repeat` (seed 003, OneFlow's/PyTorch's ops) as builder ops.
//!
//! `expand(input, sizes)` views the input with size-1 dimensions stretched and new
//! dimensions in front, copying nothing: output element `[x, y, ...]` reads the input at the
//! index where stretched and new dimensions are 0 (a zero stride). The rules for `sizes`:
//!
//! * it has at least as many entries as the input has dimensions; extra entries are new
//!   dimensions, added only in front, each at least 1 (`-1` is not allowed for them);
//! * `-1`, or the input's size, keeps a dimension;
//! * a size-1 input dimension stretches to any size of at least 1;
//! * any other size for a dimension whose size is not 1 is an error.
//!
//! It lowers to an HLO `broadcast` (after a `reshape` dropping the stretched size-1
//! dimensions, when there are some): zero-copy once fused, as the consumer reads through the
//! broadcast's index mapping.
//!
//! `repeat(input, repeats)` tiles the input: each dimension is repeated `repeats[i]` times
//! (at least 1), extra leading entries add dimensions. As seed 003 shows, it is
//! `reshape + expand + reshape`: every repeated dimension of size `s` becomes `[1, s]`, expands
//! to `[r, s]` and merges back to `r * s`.

use super::{build_error, At, Builder, Op};
use crate::error::Result;
use std::panic::Location;

fn dims_text(dims: &[i64]) -> String {
    format!("[{}]", dims.iter().map(i64::to_string).collect::<Vec<_>>().join(","))
}

/// The output dimensions of `expand(input, sizes)`, with the rules checked.
///
/// ```
/// use hlojit_compiler::hlo::builder::expand::expand_dims;
/// assert_eq!(expand_dims(&[4, 3, 1, 2], &[-1, 3, 5, -1]).unwrap(), vec![4, 3, 5, 2]);
/// assert_eq!(expand_dims(&[1, 4, 3, 5], &[2, 1, 2, 4, 3, 5]).unwrap(), vec![2, 1, 2, 4, 3, 5]);
/// assert!(expand_dims(&[4, 3], &[4, 6]).is_err()); // 3 is not 1: it cannot stretch
/// assert!(expand_dims(&[4, 3], &[-1, 4, 3]).is_err()); // a new dimension cannot be -1
/// ```
pub fn expand_dims(input: &[i64], sizes: &[i64]) -> std::result::Result<Vec<i64>, String> {
    if sizes.len() < input.len() {
        return Err(format!(
            "expand: sizes {} have fewer entries than the input {} has dimensions",
            dims_text(sizes),
            dims_text(input)
        ));
    }
    let new = sizes.len() - input.len();
    let mut out = Vec::with_capacity(sizes.len());
    for (i, &size) in sizes.iter().enumerate() {
        if i < new {
            if size < 1 {
                return Err(format!(
                    "expand: size {size} for new leading dimension {i} of {}; new dimensions must be at least 1 (-1 \
                     keeps an existing dimension and there is none to keep)",
                    dims_text(sizes)
                ));
            }
            out.push(size);
            continue;
        }
        let d = input[i - new];
        if size == -1 || size == d {
            out.push(d);
        } else if d == 1 && size >= 1 {
            out.push(size);
        } else if d == 1 {
            return Err(format!(
                "expand: size {size} for dimension {i} of {}; a size-1 dimension stretches to a size of at least 1",
                dims_text(sizes)
            ));
        } else {
            return Err(format!(
                "expand: size {size} for dimension {i} of {}, which is input dimension {} of size {d}; only size-1 \
                 dimensions stretch, others take -1 or their own size",
                dims_text(sizes),
                i - new
            ));
        }
    }
    Ok(out)
}

/// The three steps `repeat` lowers to: reshape the input to `input_reshape`, expand that to
/// `expand_sizes`, reshape the result to `output_dims`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepeatPlan {
    /// The input reshaped: a size-1 dimension in front of every repeated dimension whose size
    /// is not 1.
    pub input_reshape: Vec<i64>,
    /// The expand sizes: the repeat counts in the size-1 places, new leading dimensions in front.
    pub expand_sizes: Vec<i64>,
    /// The result: each repeated dimension merged with its copies.
    pub output_dims: Vec<i64>,
}

/// Seed 003's construction of `repeat` from reshape + expand + reshape.
///
/// ```
/// use hlojit_compiler::hlo::builder::expand::repeat_plan;
/// let plan = repeat_plan(&[3, 1, 5], &[5, 3, 1]).unwrap();
/// assert_eq!(plan.input_reshape, vec![1, 3, 1, 5]);
/// assert_eq!(plan.expand_sizes, vec![5, 3, 3, 5]);
/// assert_eq!(plan.output_dims, vec![15, 3, 5]);
/// ```
pub fn repeat_plan(input: &[i64], repeats: &[i64]) -> std::result::Result<RepeatPlan, String> {
    if repeats.len() < input.len() {
        return Err(format!(
            "repeat: repeats {} have fewer entries than the input {} has dimensions",
            dims_text(repeats),
            dims_text(input)
        ));
    }
    if let Some(i) = repeats.iter().position(|&r| r < 1) {
        return Err(format!(
            "repeat: repeat count {} for dimension {i} of {}; counts must be at least 1",
            repeats[i],
            dims_text(repeats)
        ));
    }
    let new = repeats.len() - input.len();
    let mut plan = RepeatPlan { input_reshape: Vec::new(), expand_sizes: Vec::new(), output_dims: Vec::new() };
    for (i, &r) in repeats.iter().enumerate() {
        if i < new {
            plan.expand_sizes.push(r);
            plan.output_dims.push(r);
            continue;
        }
        let d = input[i - new];
        if r > 1 && d != 1 {
            // A new size-1 dimension in front of this one carries the copies. (Seed 003 tests
            // `d > 1`; `d != 1` also keeps empty dimensions empty.)
            plan.input_reshape.extend([1, d]);
            plan.expand_sizes.extend([r, d]);
            plan.output_dims.push(r * d);
        } else if r > 1 {
            plan.input_reshape.push(1);
            plan.expand_sizes.push(r);
            plan.output_dims.push(r);
        } else {
            plan.input_reshape.push(d);
            plan.expand_sizes.push(d);
            plan.output_dims.push(d);
        }
    }
    Ok(plan)
}

impl Builder {
    /// Seed 003's `expand`: stretches size-1 dimensions and adds dimensions in front without
    /// copying (`-1` keeps a dimension). See the [module documentation](self) for the rules.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("m");
    /// let x = b.parameter(0, Shape::array(F32, [4, 3, 1, 2]), "x")?;
    /// assert_eq!(b.expand(&x, &[4, -1, 5, -1])?.dims(), &[4, 3, 5, 2]);
    /// assert_eq!(b.expand(&x, &[2, 4, 3, 4, 2])?.dims(), &[2, 4, 3, 4, 2]);
    /// assert!(b.expand(&x, &[4, 3, 5, 3]).is_err()); // the last dimension is 2, not 1
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn expand(&self, operand: &Op, sizes: &[i64]) -> Result<Op> {
        self.expand_at(Location::caller(), operand, sizes)
    }

    fn expand_at(&self, at: At, operand: &Op, sizes: &[i64]) -> Result<Op> {
        self.check_operands(at, "expand", &[operand])?;
        let input = self.array_operand(at, "expand", "the operand", operand)?;
        let out = expand_dims(&input.dims, sizes).map_err(|m| build_error(at, m))?;
        let map: Vec<i64> = ((out.len() - input.rank()) as i64..out.len() as i64).collect();
        self.stretch_to(at, operand, &map, &out)
    }

    /// Seed 003's `repeat`: tiles the operand `repeats[i]` times along each dimension (extra
    /// leading entries add dimensions), lowered to reshape + expand + reshape.
    ///
    /// ```
    /// # use hlojit_compiler::hlo::builder::Builder;
    /// # use hlojit_runtime::{ElementType::F32, Shape};
    /// let b = Builder::new("m");
    /// let x = b.parameter(0, Shape::array(F32, [4, 1, 3, 5]), "x")?;
    /// assert_eq!(b.repeat(&x, &[2, 1, 2, 4, 1, 1])?.dims(), &[2, 1, 8, 4, 3, 5]);
    /// # Ok::<(), hlojit_compiler::Error>(())
    /// ```
    #[track_caller]
    pub fn repeat(&self, operand: &Op, repeats: &[i64]) -> Result<Op> {
        let at = Location::caller();
        self.check_operands(at, "repeat", &[operand])?;
        let input = self.array_operand(at, "repeat", "the operand", operand)?;
        let plan = repeat_plan(&input.dims, repeats).map_err(|m| build_error(at, m))?;
        let reshaped = if plan.input_reshape == input.dims {
            operand.clone()
        } else {
            self.reshape_at(at, operand, &plan.input_reshape)?
        };
        let expanded = self.expand_at(at, &reshaped, &plan.expand_sizes)?;
        if expanded.dims() == plan.output_dims.as_slice() {
            return Ok(expanded);
        }
        self.reshape_at(at, &expanded, &plan.output_dims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Example 1 of seed 003: every listed spelling of expand_size is legal and gives [4, 3, 5, 2].
    #[test]
    fn seed_003_expand_example_1() {
        for sizes in
            [[4, 3, 5, 2], [-1, 3, 5, 2], [-1, -1, 5, 2], [-1, -1, 5, -1], [4, -1, 5, 2], [4, -1, 5, -1], [4, 3, 5, -1]]
        {
            assert_eq!(expand_dims(&[4, 3, 1, 2], &sizes), Ok(vec![4, 3, 5, 2]), "{sizes:?}");
        }
    }

    // Example 2 of seed 003.
    #[test]
    fn seed_003_expand_example_2() {
        for sizes in [
            [2, 1, 2, 4, 3, 5],
            [2, 1, 2, -1, 3, 5],
            [2, 1, 2, -1, -1, 5],
            [2, 1, 2, -1, -1, -1],
            [2, 1, 2, 4, -1, 5],
            [2, 1, 2, 4, -1, -1],
            [2, 1, 2, 4, 3, -1],
        ] {
            assert_eq!(expand_dims(&[1, 4, 3, 5], &sizes), Ok(vec![2, 1, 2, 4, 3, 5]), "{sizes:?}");
        }
    }

    #[test]
    fn expand_rule_violations() {
        // Fewer sizes than dimensions.
        assert!(expand_dims(&[4, 3], &[3]).unwrap_err().contains("fewer entries"));
        // A non-1 dimension may only keep its size.
        assert!(expand_dims(&[4, 3], &[4, 6]).unwrap_err().contains("only size-1 dimensions stretch"));
        // New dimensions only in front, and not -1 or 0.
        assert!(expand_dims(&[4], &[-1, 4]).unwrap_err().contains("new leading dimension 0"));
        assert!(expand_dims(&[4], &[0, 4]).is_err());
        // A size-1 dimension stretches to at least 1.
        assert!(expand_dims(&[1], &[0]).unwrap_err().contains("at least 1"));
        assert!(expand_dims(&[1], &[-2]).is_err());
    }

    // Seed 003's repeat examples, with the intermediate shapes it states.
    #[test]
    fn seed_003_repeat_plans() {
        let plan = repeat_plan(&[5], &[3]).unwrap();
        assert_eq!(plan, RepeatPlan { input_reshape: vec![1, 5], expand_sizes: vec![3, 5], output_dims: vec![15] });
        let plan = repeat_plan(&[3, 1, 5], &[5, 3, 1]).unwrap();
        assert_eq!(
            plan,
            RepeatPlan { input_reshape: vec![1, 3, 1, 5], expand_sizes: vec![5, 3, 3, 5], output_dims: vec![15, 3, 5] }
        );
        let plan = repeat_plan(&[3, 1, 5], &[2, 5, 3, 1]).unwrap();
        assert_eq!(
            plan,
            RepeatPlan {
                input_reshape: vec![1, 3, 1, 5],
                expand_sizes: vec![2, 5, 3, 3, 5],
                output_dims: vec![2, 15, 3, 5]
            }
        );
        assert_eq!(repeat_plan(&[4, 1, 3, 5], &[2, 1, 2, 4, 1, 1]).unwrap().output_dims, vec![2, 1, 8, 4, 3, 5]);
    }

    #[test]
    fn repeat_rule_violations() {
        assert!(repeat_plan(&[3, 4], &[2]).unwrap_err().contains("fewer entries"));
        assert!(repeat_plan(&[3], &[0]).unwrap_err().contains("at least 1"));
        // An empty dimension repeated stays empty.
        assert_eq!(repeat_plan(&[0, 2], &[3, 1]).unwrap().output_dims, vec![0, 2]);
    }
}
