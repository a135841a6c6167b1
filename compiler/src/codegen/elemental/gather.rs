//! Gather as an elemental op: each output element is one operand element, found by reading
//! the start index vector of its batch position from `start_indices`, clamping it so that the
//! whole slice stays inside the operand (XLA clamps out-of-bounds gather starts), and adding
//! the element's offset within the slice.

use super::{Elemental, Val};
use crate::codegen::context::Codegen;
use crate::codegen::index::Index;
use crate::error::{Error, Result};
use crate::hlo::{GatherDimensionNumbers, InstrId};
use hlojit_runtime::ElementType;
use inkwell::values::IntValue;
use inkwell::IntPredicate;

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    pub(super) fn gen_gather(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let cg = self.cg;
        let inst = self.comp.get(id);
        let (operand, indices) = (inst.operands[0], inst.operands[1]);
        let dn = inst
            .attrs
            .gather_dims
            .clone()
            .ok_or_else(|| Error::Internal(format!("{}: gather without dimension numbers", inst.name)))?;
        let slice_sizes = inst.attrs.slice_sizes.clone().unwrap_or_default();
        let operand_dims = self.dims(operand).to_vec();
        let indices_rank = self.dims(indices).len();
        let out_rank = inst.shape.rank();
        let plan = GatherPlan::new(&dn, operand_dims.len(), indices_rank, out_rank);
        let index_type = self.element_type(indices)?;

        // The output's batch dimensions, in order, are start_indices' dimensions without the
        // index vector dimension.
        let batch_index: Vec<IntValue<'ctx>> = plan.batch_dims.iter().map(|&d| index.dims[d]).collect();
        let mut operand_index = vec![cg.const_i64(0); operand_dims.len()];
        for (k, &d) in dn.start_index_map.iter().enumerate() {
            let d = d as usize;
            let position = plan.indices_index(cg, &batch_index, k as i64);
            let raw = self.gen_scalar(indices, &position)?.into_int_value();
            let start = index_to_i64(cg, index_type, raw)?;
            let max_start = operand_dims[d] - slice_sizes.get(d).copied().unwrap_or(1);
            operand_index[d] = cg.clamp_i64(start, cg.const_i64(0), cg.const_i64(max_start.max(0)))?;
        }
        for (&od, &id_dim) in dn.operand_batching_dims.iter().zip(&dn.start_indices_batching_dims) {
            let b = plan.batch_position(id_dim as usize);
            operand_index[od as usize] = batch_index[b];
        }
        for (&od, &out_d) in plan.offset_operand_dims.iter().zip(&dn.offset_dims) {
            let offset = index.dims[out_d as usize];
            operand_index[od] = cg.b.build_int_nsw_add(operand_index[od], offset, "")?;
        }
        self.gen(operand, &Index::new(operand_index))
    }
}

/// How gather's dimension numbers relate the output, operand and start-index dimensions.
struct GatherPlan {
    /// Output dimensions not in `offset_dims`, in order.
    batch_dims: Vec<usize>,
    /// Operand dimensions neither collapsed nor batching, in order: the k-th maps to
    /// `offset_dims[k]`.
    offset_operand_dims: Vec<usize>,
    index_vector_dim: usize,
    indices_rank: usize,
}

impl GatherPlan {
    fn new(dn: &GatherDimensionNumbers, operand_rank: usize, indices_rank: usize, out_rank: usize) -> GatherPlan {
        let batch_dims = (0..out_rank).filter(|&d| !dn.offset_dims.contains(&(d as i64))).collect();
        let offset_operand_dims = (0..operand_rank)
            .filter(|&d| !dn.collapsed_slice_dims.contains(&(d as i64)) && !dn.operand_batching_dims.contains(&(d as i64)))
            .collect();
        GatherPlan { batch_dims, offset_operand_dims, index_vector_dim: dn.index_vector_dim as usize, indices_rank }
    }

    /// Position among the batch dimensions of start_indices' dimension `d` (not the index
    /// vector dimension).
    fn batch_position(&self, d: usize) -> usize {
        if d > self.index_vector_dim {
            d - 1
        } else {
            d
        }
    }

    /// The index into start_indices of component `k` of the start vector at `batch_index`.
    fn indices_index<'ctx>(&self, cg: &Codegen<'ctx>, batch_index: &[IntValue<'ctx>], k: i64) -> Index<'ctx> {
        start_vector_index(cg, batch_index, self.index_vector_dim, self.indices_rank, k)
    }
}

/// The index into an indices array (gather's start_indices, scatter's scatter_indices) of
/// component `k` of the index vector at batch position `batch_index`; `index_vector_dim ==
/// rank` means an implicit trailing dimension of size 1.
pub(crate) fn start_vector_index<'ctx>(
    cg: &Codegen<'ctx>,
    batch_index: &[IntValue<'ctx>],
    index_vector_dim: usize,
    indices_rank: usize,
    k: i64,
) -> Index<'ctx> {
    let mut dims = Vec::with_capacity(indices_rank);
    let mut batch = batch_index.iter();
    for d in 0..indices_rank {
        if d == index_vector_dim {
            dims.push(cg.const_i64(k));
        } else {
            dims.push(*batch.next().unwrap_or(&cg.const_i64(0)));
        }
    }
    Index::new(dims)
}

/// An index element as i64. Unsigned 64-bit values beyond i64's range saturate to i64::MAX so
/// that they stay out of bounds (past the end) instead of wrapping to negative numbers.
pub(crate) fn index_to_i64<'ctx>(cg: &Codegen<'ctx>, t: ElementType, v: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
    if !t.is_int() {
        return Err(Error::Unsupported(format!("index of type {t}")));
    }
    let wide = cg.int_to_i64(t, v)?;
    if t.is_unsigned_int() && t.bit_width() == 64 {
        let neg = cg.b.build_int_compare(IntPredicate::SLT, wide, cg.const_i64(0), "")?;
        return Ok(cg.b.build_select(neg, cg.const_i64(i64::MAX), wide, "")?.into_int_value());
    }
    Ok(wide)
}
