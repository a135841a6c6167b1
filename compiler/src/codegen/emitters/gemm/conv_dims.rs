//! A convolution's geometry: which dimension of each operand is batch, feature and spatial,
//! the window, and the group structure.
//!
//! Semantics (XLA): output feature `o` belongs to feature group `g = o / (O / feature_groups)`
//! and reads input features `g * Cg .. (g + 1) * Cg` (`Cg` = the kernel's input-feature size).
//! With `batch_group_count = G > 1`, the input batch splits into `G` consecutive groups of
//! `B / G`, and output feature `o` reads batch group `o / (O / G)`: output `(b, o)` reads input
//! batch `(o / (O / G)) * (B / G) + b`. In spatial dimension `d`, output position `p` and
//! window tap `t` read the dilated, padded input at `p * stride - pad_low + t * rhs_dilate`,
//! which is a real input element `u` when it is divisible by `lhs_dilate` (then `u` is the
//! quotient) and `0 <= u < size`; everything else is zero. With reversal the tap reads kernel
//! position `size - 1 - t`.

use crate::error::{Error, Result};
use crate::hlo::attributes::{ConvDimensionNumbers, WindowDim};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvDims {
    pub dn: ConvDimensionNumbers,
    pub window: Vec<WindowDim>,
    /// Input batch, input features, kernel output features, kernel input features (per group).
    pub batch_in: i64,
    pub features_in: i64,
    pub features_out: i64,
    pub group_features_in: i64,
    pub feature_groups: i64,
    pub batch_groups: i64,
    /// Input and output spatial sizes, in spatial-dimension order.
    pub in_spatial: Vec<i64>,
    pub out_spatial: Vec<i64>,
}

fn dim(v: i64, rank: usize, what: &str) -> Result<usize> {
    if v >= 0 && (v as usize) < rank {
        Ok(v as usize)
    } else {
        Err(Error::Unsupported(format!("convolution: {what} dimension {v} out of range")))
    }
}

impl ConvDims {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        dn: &ConvDimensionNumbers,
        window: &[WindowDim],
        feature_groups: i64,
        batch_groups: i64,
        lhs: &[i64],
        rhs: &[i64],
        out: &[i64],
    ) -> Result<ConvDims> {
        let n = dn.input_spatial.len();
        if dn.kernel_spatial.len() != n || dn.output_spatial.len() != n || window.len() != n {
            return Err(Error::Unsupported("convolution: spatial dimension counts differ".into()));
        }
        if lhs.len() != n + 2 || rhs.len() != n + 2 || out.len() != n + 2 {
            return Err(Error::Unsupported("convolution: operand ranks do not match the dimension numbers".into()));
        }
        let batch_in = lhs[dim(dn.input_batch, n + 2, "input batch")?];
        let features_in = lhs[dim(dn.input_feature, n + 2, "input feature")?];
        let features_out = rhs[dim(dn.kernel_output_feature, n + 2, "kernel output feature")?];
        let group_features_in = rhs[dim(dn.kernel_input_feature, n + 2, "kernel input feature")?];
        dim(dn.output_batch, n + 2, "output batch")?;
        dim(dn.output_feature, n + 2, "output feature")?;
        if feature_groups < 1
            || batch_groups < 1
            || features_out % feature_groups != 0
            || features_out % batch_groups != 0
            || batch_in % batch_groups != 0
            || group_features_in * feature_groups != features_in
        {
            return Err(Error::Unsupported("convolution: inconsistent group counts".into()));
        }
        let mut in_spatial = Vec::with_capacity(n);
        let mut out_spatial = Vec::with_capacity(n);
        for d in 0..n {
            in_spatial.push(lhs[dim(dn.input_spatial[d], n + 2, "input spatial")?]);
            out_spatial.push(out[dim(dn.output_spatial[d], n + 2, "output spatial")?]);
            if rhs[dim(dn.kernel_spatial[d], n + 2, "kernel spatial")?] != window[d].size {
                return Err(Error::Unsupported("convolution: window size differs from the kernel's".into()));
            }
            let w = &window[d];
            if w.stride < 1 || w.base_dilation < 1 || w.window_dilation < 1 {
                return Err(Error::Unsupported("convolution: non-positive stride or dilation".into()));
            }
        }
        Ok(ConvDims {
            dn: dn.clone(),
            window: window.to_vec(),
            batch_in,
            features_in,
            features_out,
            group_features_in,
            feature_groups,
            batch_groups,
            in_spatial,
            out_spatial,
        })
    }

    /// Output features per feature group.
    pub fn group_features_out(&self) -> i64 {
        self.features_out / self.feature_groups
    }

    /// Window taps (product of window sizes).
    pub fn taps(&self) -> i64 {
        self.window.iter().map(|w| w.size).product()
    }

    pub fn spatial_rank(&self) -> usize {
        self.window.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nhwc() -> ConvDimensionNumbers {
        ConvDimensionNumbers {
            input_batch: 0,
            input_feature: 3,
            input_spatial: vec![1, 2],
            kernel_input_feature: 2,
            kernel_output_feature: 3,
            kernel_spatial: vec![0, 1],
            output_batch: 0,
            output_feature: 3,
            output_spatial: vec![1, 2],
        }
    }

    #[test]
    fn depthwise_groups() {
        let w = vec![WindowDim::new(3); 2];
        let c = ConvDims::new(&nhwc(), &w, 64, 1, &[4, 56, 56, 64], &[3, 3, 1, 64], &[4, 56, 56, 64]).unwrap();
        assert_eq!((c.group_features_in, c.group_features_out(), c.taps()), (1, 1, 9));
    }

    #[test]
    fn inconsistent_groups_are_errors() {
        let w = vec![WindowDim::new(3); 2];
        assert!(ConvDims::new(&nhwc(), &w, 3, 1, &[4, 8, 8, 64], &[3, 3, 1, 64], &[4, 6, 6, 64]).is_err());
    }
}
