//! A dot's dimension numbers in canonical form: `[batch, M, K] x [batch, K, N] -> [batch, M, N]`,
//! where each of batch, M (the lhs free dimensions), K (the contracting dimensions) and N (the
//! rhs free dimensions) is a group of logical dimensions linearized row-major. The result's
//! dimensions are the batch dimensions, then the lhs free ones, then the rhs free ones (XLA's
//! order), so the result groups are consecutive.

use crate::error::{Error, Result};
use crate::hlo::attributes::DotDimensionNumbers;
use hlojit_runtime::physical::PhysicalLayout;
use hlojit_runtime::ArrayShape;

/// The groups of one dot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DotDims {
    pub lhs_batch: Vec<usize>,
    pub rhs_batch: Vec<usize>,
    /// lhs dimensions that are neither batch nor contracting, in increasing order.
    pub lhs_free: Vec<usize>,
    pub rhs_free: Vec<usize>,
    pub lhs_contracting: Vec<usize>,
    pub rhs_contracting: Vec<usize>,
    /// Sizes of the batch, free and contracting groups.
    pub batch_sizes: Vec<i64>,
    pub m_sizes: Vec<i64>,
    pub n_sizes: Vec<i64>,
    pub k_sizes: Vec<i64>,
    pub b: i64,
    pub m: i64,
    pub n: i64,
    pub k: i64,
}

fn to_usize(v: &[i64], rank: usize, what: &str) -> Result<Vec<usize>> {
    v.iter()
        .map(|&d| {
            if d >= 0 && (d as usize) < rank {
                Ok(d as usize)
            } else {
                Err(Error::Unsupported(format!("dot: {what} dimension {d} out of range")))
            }
        })
        .collect()
}

impl DotDims {
    pub fn new(dn: &DotDimensionNumbers, lhs_dims: &[i64], rhs_dims: &[i64]) -> Result<DotDims> {
        let lhs_batch = to_usize(&dn.lhs_batch, lhs_dims.len(), "lhs batch")?;
        let rhs_batch = to_usize(&dn.rhs_batch, rhs_dims.len(), "rhs batch")?;
        let lhs_contracting = to_usize(&dn.lhs_contracting, lhs_dims.len(), "lhs contracting")?;
        let rhs_contracting = to_usize(&dn.rhs_contracting, rhs_dims.len(), "rhs contracting")?;
        if lhs_batch.len() != rhs_batch.len() || lhs_contracting.len() != rhs_contracting.len() {
            return Err(Error::Unsupported("dot: unequal numbers of batch or contracting dimensions".into()));
        }
        let free = |rank: usize, batch: &[usize], contracting: &[usize]| -> Vec<usize> {
            (0..rank).filter(|d| !batch.contains(d) && !contracting.contains(d)).collect()
        };
        let lhs_free = free(lhs_dims.len(), &lhs_batch, &lhs_contracting);
        let rhs_free = free(rhs_dims.len(), &rhs_batch, &rhs_contracting);
        let sizes = |dims: &[i64], group: &[usize]| -> Vec<i64> { group.iter().map(|&d| dims[d]).collect() };
        let batch_sizes = sizes(lhs_dims, &lhs_batch);
        let m_sizes = sizes(lhs_dims, &lhs_free);
        let n_sizes = sizes(rhs_dims, &rhs_free);
        let k_sizes = sizes(lhs_dims, &lhs_contracting);
        if sizes(rhs_dims, &rhs_batch) != batch_sizes || sizes(rhs_dims, &rhs_contracting) != k_sizes {
            return Err(Error::Unsupported("dot: batch or contracting dimension sizes differ".into()));
        }
        let product = |v: &[i64]| v.iter().product::<i64>();
        Ok(DotDims {
            b: product(&batch_sizes),
            m: product(&m_sizes),
            n: product(&n_sizes),
            k: product(&k_sizes),
            lhs_batch,
            rhs_batch,
            lhs_free,
            rhs_free,
            lhs_contracting,
            rhs_contracting,
            batch_sizes,
            m_sizes,
            n_sizes,
            k_sizes,
        })
    }

    /// The result dimensions `[batch..., lhs free..., rhs free...]`.
    pub fn out_dims(&self) -> Vec<i64> {
        [self.batch_sizes.clone(), self.m_sizes.clone(), self.n_sizes.clone()].concat()
    }

    /// Result dimensions of the batch, M and N groups.
    pub fn out_groups(&self) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
        let nb = self.batch_sizes.len();
        let nm = self.m_sizes.len();
        let nn = self.n_sizes.len();
        ((0..nb).collect(), (nb..nb + nm).collect(), (nb + nm..nb + nm + nn).collect())
    }
}

/// Element strides of the logical dimensions of an untiled layout; `None` for tiled ones.
pub fn logical_strides(shape: &ArrayShape) -> Option<Vec<i64>> {
    let physical = PhysicalLayout::new(shape).ok()?;
    let mut strides = vec![0i64; shape.dims.len()];
    for d in &physical.dims {
        let l = d.logical_dim?;
        if !d.ops.is_empty() {
            return None;
        }
        strides[l] = d.stride;
    }
    Some(strides)
}

/// The single stride that walks the row-major linearization of the dimensions `group` (sizes
/// taken from `dims`), if their strides allow one: each dimension's stride must be the next
/// one's times its size (dimensions of size 1 do not matter). A group of total size <= 1 has
/// stride 0.
pub fn group_stride(strides: &[i64], dims: &[i64], group: &[usize]) -> Option<i64> {
    let live: Vec<usize> = group.iter().copied().filter(|&d| dims[d] != 1).collect();
    let Some(&last) = live.last() else { return Some(0) };
    for w in live.windows(2) {
        if strides[w[0]] != strides[w[1]] * dims[w[1]] {
            return None;
        }
    }
    Some(strides[last])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dn(lb: &[i64], rb: &[i64], lc: &[i64], rc: &[i64]) -> DotDimensionNumbers {
        DotDimensionNumbers {
            lhs_batch: lb.to_vec(),
            rhs_batch: rb.to_vec(),
            lhs_contracting: lc.to_vec(),
            rhs_contracting: rc.to_vec(),
        }
    }

    #[test]
    fn batch_and_contracting_anywhere() {
        // f32[4,3,5] x f32[5,6,3], lhs batch 1 contracting 2, rhs batch 2 contracting 0.
        let d = DotDims::new(&dn(&[1], &[2], &[2], &[0]), &[4, 3, 5], &[5, 6, 3]).unwrap();
        assert_eq!((d.b, d.m, d.k, d.n), (3, 4, 5, 6));
        assert_eq!(d.lhs_free, vec![0]);
        assert_eq!(d.rhs_free, vec![1]);
        assert_eq!(d.out_dims(), vec![3, 4, 6]);
    }

    #[test]
    fn mismatched_sizes_are_errors() {
        assert!(DotDims::new(&dn(&[], &[], &[1], &[0]), &[2, 3], &[4, 5]).is_err());
        assert!(DotDims::new(&dn(&[], &[], &[2], &[0]), &[2, 3], &[3, 5]).is_err());
    }

    #[test]
    fn strides_collapse_only_when_contiguous() {
        // Row-major [2,3,4]: strides 12, 4, 1.
        let s = [12, 4, 1];
        let dims = [2, 3, 4];
        assert_eq!(group_stride(&s, &dims, &[1, 2]), Some(1));
        assert_eq!(group_stride(&s, &dims, &[0, 1]), Some(4));
        assert_eq!(group_stride(&s, &dims, &[0, 2]), None);
        assert_eq!(group_stride(&s, &dims, &[]), Some(0));
        // A size-1 dimension in the middle does not break contiguity.
        assert_eq!(group_stride(&[4, 4, 1], &[2, 1, 4], &[0, 1, 2]), Some(1));
    }

    #[test]
    fn column_major_strides() {
        use hlojit_runtime::{ElementType, Layout};
        let shape = ArrayShape::new(ElementType::F32, vec![3, 5]).with_layout(Layout::new(vec![0, 1]));
        assert_eq!(logical_strides(&shape), Some(vec![1, 3]));
    }
}
