//! Where each logical element of an array lives in its buffer, for any layout: a permutation
//! of dimensions (`minor_to_major`), tiles applied one after another to the minor-most physical
//! dimensions, and tail padding. The compiler emits the same arithmetic as IR; the runtime uses
//! it to move host arrays (always logical row-major) in and out of buffers.

use crate::element_type::ElementType;
use crate::limits::{MAX_ARRAY_ELEMENTS, MAX_TILE_ELEMENTS};
use crate::shape::{ArrayShape, Layout, TILE_COMBINE_DIMENSION};
use thiserror::Error;

/// A layout that cannot place a shape's elements.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum LayoutError {
    /// `minor_to_major` does not have one entry per dimension.
    #[error("layout {layout} does not fit a rank-{rank} shape")]
    RankMismatch {
        /// The layout in HLO text.
        layout: String,
        /// The shape's rank.
        rank: usize,
    },
    /// `minor_to_major` repeats a dimension or names one out of range.
    #[error("layout {layout} is not a permutation of the dimensions")]
    NotPermutation {
        /// The layout in HLO text.
        layout: String,
    },
    /// Valid in XLA but not handled here: packed element sizes `E(n)`, `*` or non-positive
    /// tile dimensions.
    #[error("unsupported layout {layout}: {why}")]
    Unsupported {
        /// The layout in HLO text.
        layout: String,
        /// Which feature is unsupported.
        why: &'static str,
    },
    /// Dimensions, tiles or padding beyond the limits of [`crate::limits`]: no buffer of this
    /// shape could be allocated, and its index arithmetic could overflow.
    #[error("{what} is {value}, more than hlojit's limit of {limit}")]
    TooLarge {
        /// What is too large, naming the shape or the tile.
        what: String,
        /// Its size.
        value: u128,
        /// The limit it exceeds.
        limit: u128,
    },
}

/// One step applied to a logical index to get a coordinate of the tiled shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoordOp {
    /// Integer division by a tile size: which tile the index falls in.
    Div(i64),
    /// Remainder by a tile size: the position within the tile.
    Rem(i64),
}

/// One dimension of the physical (tiled, padded) array: which logical dimension feeds it, how
/// the logical index turns into the coordinate, and the coordinate's stride in elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhysicalDim {
    /// The logical dimension, or `None` for a dimension a tile added beyond the rank.
    pub logical_dim: Option<usize>,
    /// Applied in order to the logical index to get this dimension's coordinate (empty for
    /// an untiled dimension).
    pub ops: Vec<CoordOp>,
    /// Number of coordinates, tile padding included (`ceil(n / tile)` for an outer tile
    /// dimension, the tile size for an inner one).
    pub size: i64,
    /// Distance in elements between consecutive coordinates (the product of the sizes of the
    /// more minor physical dimensions).
    pub stride: i64,
}

/// The map from logical indices to element offsets in a buffer.
///
/// ```rust
/// use hlojit_runtime::physical::PhysicalLayout;
/// use hlojit_runtime::{Layout, Tile};
///
/// // f32[3,5]{1,0:T(2,4)}: 2x4 tiles, so the storage is padded to 2x2 tiles of 8 elements.
/// let layout = Layout { tiles: vec![Tile { dims: vec![2, 4] }], ..Layout::row_major(2) };
/// let p = PhysicalLayout::for_layout(&[3, 5], &layout).unwrap();
/// assert_eq!(p.storage_elements, 32);
/// assert_eq!(p.offset(&[0, 4]), 8); // first element of the second tile
/// assert!(!p.is_row_major_dense());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhysicalLayout {
    /// Physical dimensions, major to minor.
    pub dims: Vec<PhysicalDim>,
    /// Elements the buffer holds, padding included.
    pub storage_elements: i64,
}

impl PhysicalLayout {
    /// The physical layout of `shape` under its layout (row-major when it has none).
    ///
    /// # Errors
    /// As [`PhysicalLayout::for_layout`].
    pub fn new(shape: &ArrayShape) -> Result<PhysicalLayout, LayoutError> {
        let layout = shape.layout_or_default();
        Self::for_layout(&shape.dims, &layout)
    }

    /// The physical layout of an array of logical dimensions `dims` stored as `layout` says:
    /// the dimensions permuted by `minor_to_major`, then each tile splitting the minor-most
    /// dimensions into tile-index and within-tile dimensions (padding partial tiles), then the
    /// total rounded up to the tail-padding alignment.
    ///
    /// # Errors
    /// [`LayoutError`] when `minor_to_major` is not a permutation of `0..dims.len()`, and for
    /// packed element sizes `E(n)` and `*` or non-positive tile dimensions.
    pub fn for_layout(dims: &[i64], layout: &Layout) -> Result<PhysicalLayout, LayoutError> {
        let rank = dims.len();
        let text = || layout.to_string();
        if layout.minor_to_major.len() != rank {
            return Err(LayoutError::RankMismatch { layout: text(), rank });
        }
        let mut seen = vec![false; rank];
        for &d in &layout.minor_to_major {
            if d < 0 || d as usize >= rank || seen[d as usize] {
                return Err(LayoutError::NotPermutation { layout: text() });
            }
            seen[d as usize] = true;
        }
        check_dims(dims, layout)?;
        if layout.element_size_in_bits != 0 {
            return Err(LayoutError::Unsupported { layout: text(), why: "packed element sizes E(n)" });
        }
        let mut phys: Vec<PhysicalDim> = layout
            .major_to_minor()
            .into_iter()
            .map(|d| PhysicalDim { logical_dim: Some(d as usize), ops: Vec::new(), size: dims[d as usize], stride: 0 })
            .collect();
        for tile in &layout.tiles {
            if tile.dims.iter().any(|&t| t == TILE_COMBINE_DIMENSION || t <= 0) {
                return Err(LayoutError::Unsupported { layout: text(), why: "combined or empty tile dimensions" });
            }
            let tile_elements = tile.dims.iter().try_fold(1i64, |n, &t| n.checked_mul(t).filter(|&n| n <= MAX_TILE_ELEMENTS));
            if tile_elements.is_none() {
                let value = tile.dims.iter().map(|&t| t as u128).fold(1u128, u128::saturating_mul);
                let sizes: Vec<String> = tile.dims.iter().map(i64::to_string).collect();
                let what = format!("the element count of tile T({}) of layout {}", sizes.join(","), text());
                return Err(LayoutError::TooLarge { what, value, limit: MAX_TILE_ELEMENTS as u128 });
            }
            let k = tile.dims.len();
            while phys.len() < k {
                phys.insert(0, PhysicalDim { logical_dim: None, ops: Vec::new(), size: 1, stride: 0 });
            }
            let split_at = phys.len() - k;
            let tiled: Vec<PhysicalDim> = phys.split_off(split_at);
            let mut inner = Vec::with_capacity(k);
            for (d, &t) in tiled.into_iter().zip(&tile.dims) {
                let mut outer_ops = d.ops.clone();
                outer_ops.push(CoordOp::Div(t));
                let mut inner_ops = d.ops;
                inner_ops.push(CoordOp::Rem(t));
                phys.push(PhysicalDim { logical_dim: d.logical_dim, ops: outer_ops, size: ceil_div(d.size, t), stride: 0 });
                inner.push(PhysicalDim { logical_dim: d.logical_dim, ops: inner_ops, size: t, stride: 0 });
            }
            phys.extend(inner);
        }
        // Every offset generated code computes is below the product of the physical sizes (zero
        // sizes counted as one: the strides of the other dimensions are still computed), so no
        // index arithmetic overflows once that product is within the limit.
        let extent = phys.iter().fold(1u128, |n, d| n.saturating_mul(d.size.max(1) as u128));
        if extent > MAX_ARRAY_ELEMENTS as u128 {
            let what = format!("the element count stored for {}", shape_text(dims, layout));
            return Err(LayoutError::TooLarge { what, value: extent, limit: MAX_ARRAY_ELEMENTS as u128 });
        }
        let mut stride = 1i64;
        for d in phys.iter_mut().rev() {
            d.stride = stride;
            stride *= d.size.max(1);
        }
        let empty = phys.iter().any(|d| d.size == 0);
        let mut storage_elements = if empty { 0 } else { stride };
        let align = layout.tail_padding_alignment_in_elements;
        if align > 1 {
            let padded = (storage_elements as u128).div_ceil(align as u128) * align as u128;
            if padded > MAX_ARRAY_ELEMENTS as u128 {
                let what = format!("the tail-padded element count of {}", shape_text(dims, layout));
                return Err(LayoutError::TooLarge { what, value: padded, limit: MAX_ARRAY_ELEMENTS as u128 });
            }
            storage_elements = padded as i64;
        }
        Ok(PhysicalLayout { dims: phys, storage_elements })
    }

    /// Bytes a buffer of `element_type` elements in this layout takes, padding included.
    /// Cannot overflow: the storage is at most [`MAX_ARRAY_ELEMENTS`] elements of at most 16
    /// bytes.
    pub fn storage_bytes(&self, element_type: ElementType) -> i64 {
        self.storage_elements * element_type.byte_size() as i64
    }

    /// True when elements sit in logical row-major order with no padding.
    pub fn is_row_major_dense(&self) -> bool {
        self.dims.iter().enumerate().all(|(i, d)| d.logical_dim == Some(i) && d.ops.is_empty())
    }

    /// Element offset of a logical index.
    pub fn offset(&self, index: &[i64]) -> i64 {
        self.dims
            .iter()
            .map(|d| {
                let mut v = d.logical_dim.map(|l| index[l]).unwrap_or(0);
                for op in &d.ops {
                    v = match *op {
                        CoordOp::Div(t) => v / t,
                        CoordOp::Rem(t) => v % t,
                    };
                }
                v * d.stride
            })
            .sum()
    }
}

/// Calls `f(logical_linear_index, index)` for every index of `dims` in row-major order.
pub fn for_each_index(dims: &[i64], mut f: impl FnMut(usize, &[i64])) {
    if dims.contains(&0) {
        return;
    }
    let mut index = vec![0i64; dims.len()];
    let total: i64 = dims.iter().product();
    for linear in 0..total as usize {
        f(linear, &index);
        for d in (0..dims.len()).rev() {
            index[d] += 1;
            if index[d] < dims[d] {
                break;
            }
            index[d] = 0;
        }
    }
}

/// Copies a logical row-major array into a buffer of the given physical layout.
pub fn logical_to_physical(src: &[u8], dst: &mut [u8], dims: &[i64], layout: &PhysicalLayout, elem_bytes: usize) {
    if layout.is_row_major_dense() {
        dst[..src.len()].copy_from_slice(src);
        return;
    }
    for_each_index(dims, |linear, index| {
        let off = layout.offset(index) as usize * elem_bytes;
        dst[off..off + elem_bytes].copy_from_slice(&src[linear * elem_bytes..(linear + 1) * elem_bytes]);
    });
}

/// Copies a buffer of the given physical layout out into a logical row-major array.
pub fn physical_to_logical(src: &[u8], dst: &mut [u8], dims: &[i64], layout: &PhysicalLayout, elem_bytes: usize) {
    if layout.is_row_major_dense() {
        dst.copy_from_slice(&src[..dst.len()]);
        return;
    }
    for_each_index(dims, |linear, index| {
        let off = layout.offset(index) as usize * elem_bytes;
        dst[linear * elem_bytes..(linear + 1) * elem_bytes].copy_from_slice(&src[off..off + elem_bytes]);
    });
}

/// `ceil(a / b)` for `a >= 0`, `b > 0`, without overflow.
fn ceil_div(a: i64, b: i64) -> i64 {
    a / b + i64::from(a % b != 0)
}

/// Each dimension is non-negative and within the limit (so that sums and products of a few
/// of them, as shape arithmetic forms, stay far from overflow).
fn check_dims(dims: &[i64], layout: &Layout) -> Result<(), LayoutError> {
    if let Some(&d) = dims.iter().find(|&&d| !(0..=MAX_ARRAY_ELEMENTS).contains(&d)) {
        if d < 0 {
            return Err(LayoutError::Unsupported { layout: shape_text(dims, layout), why: "negative dimension size" });
        }
        let what = format!("a dimension size of {}", shape_text(dims, layout));
        return Err(LayoutError::TooLarge { what, value: d as u128, limit: MAX_ARRAY_ELEMENTS as u128 });
    }
    Ok(())
}

/// `[2,3]{1,0:T(2)}` for messages (the element type is not known here).
fn shape_text(dims: &[i64], layout: &Layout) -> String {
    let dims: Vec<String> = dims.iter().map(i64::to_string).collect();
    format!("[{}]{layout}", dims.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Tile;

    #[test]
    fn column_major_offsets() {
        let l = PhysicalLayout::for_layout(&[2, 3], &Layout::new(vec![0, 1])).unwrap();
        // a b c / d e f stored as a d b e c f
        assert_eq!(l.offset(&[0, 1]), 2);
        assert_eq!(l.offset(&[1, 0]), 1);
        assert_eq!(l.storage_elements, 6);
    }

    #[test]
    fn tiled_layout_pads_to_whole_tiles() {
        // bf16[16,128]{0,1:T(8,128)(2,1)}: physical [128,16] -> tiles of 8x128 -> [16,1,8,128]
        // -> second tile (2,1) on [8,128] -> [16,1,4,128,2,1]: 16*4*128*2 = 16384 elements.
        let layout = Layout { tiles: vec![Tile { dims: vec![8, 128] }, Tile { dims: vec![2, 1] }], ..Layout::new(vec![0, 1]) };
        let l = PhysicalLayout::for_layout(&[16, 128], &layout).unwrap();
        assert_eq!(l.storage_elements * 2, 32768);
        let mut offsets: Vec<i64> = Vec::new();
        for_each_index(&[16, 128], |_, i| offsets.push(l.offset(i)));
        offsets.sort();
        offsets.dedup();
        assert_eq!(offsets.len(), 16 * 128, "distinct elements get distinct offsets");
    }
}
