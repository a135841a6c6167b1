//! Gather as an elemental op: each output element is one operand element, found by reading
//! the start index vector of its batch position from `start_indices`, clamping it so that the
//! whole slice stays inside the operand (XLA clamps out-of-bounds gather starts), and adding
//! the element's offset within the slice.

use super::{Elemental, Val};
use crate::codegen::context::Codegen;
use crate::codegen::index::Index;
use crate::error::{Error, Result};
use crate::hlo::{Computation, GatherDimensionNumbers, InstrId};
use hlojit_runtime::ElementType;
use inkwell::values::IntValue;
use inkwell::IntPredicate;

impl<'a, 'ctx> Elemental<'a, 'ctx> {
    pub(super) fn gen_gather(&mut self, id: InstrId, index: &Index<'ctx>) -> Result<Val<'ctx>> {
        let cg = self.cg;
        let plan = GatherPlan::of(self.comp, id)?;
        let batch_index: Vec<IntValue<'ctx>> = plan.batch_dims.iter().map(|&d| index.dims[d]).collect();
        let mut operand_index = self.gather_slice_start(id, &plan, &batch_index)?;
        for (&od, &out_d) in plan.offset_operand_dims.iter().zip(&plan.offset_dims) {
            operand_index[od] = cg.b.build_int_nsw_add(operand_index[od], index.dims[out_d], "")?;
        }
        let operand = self.comp.get(id).operands[0];
        self.gen(operand, &Index::new(operand_index))
    }

    /// The operand index where the slice gathered at output batch position `batch_index`
    /// (values of `plan.batch_dims`) starts: start indices read and clamped so that the
    /// whole slice is inside the operand, batching dimensions taken from the batch position.
    pub fn gather_slice_start(
        &mut self,
        id: InstrId,
        plan: &GatherPlan,
        batch_index: &[IntValue<'ctx>],
    ) -> Result<Vec<IntValue<'ctx>>> {
        let cg = self.cg;
        let inst = self.comp.get(id);
        let (operand, indices) = (inst.operands[0], inst.operands[1]);
        let operand_dims = self.dims(operand).to_vec();
        let index_type = self.element_type(indices)?;
        let mut start = vec![cg.const_i64(0); operand_dims.len()];
        for (k, &d) in plan.start_index_map.iter().enumerate() {
            let position = start_vector_index(cg, batch_index, plan.index_vector_dim, plan.indices_rank, k as i64);
            let raw = self.gen_scalar(indices, &position)?.into_int_value();
            let value = index_to_i64(cg, index_type, raw)?;
            let max_start = operand_dims[d] - plan.slice_sizes.get(d).copied().unwrap_or(1);
            start[d] = cg.clamp_i64(value, cg.const_i64(0), cg.const_i64(max_start.max(0)))?;
        }
        for &(od, indices_dim) in &plan.batching {
            start[od] = batch_index[plan.batch_position(indices_dim)];
        }
        Ok(start)
    }
}

/// How a gather's dimension numbers relate the output, operand and start-index dimensions.
pub struct GatherPlan {
    /// Output dimensions not in `offset_dims`, in order: they correspond to start_indices'
    /// dimensions without the index vector dimension, in order.
    pub batch_dims: Vec<usize>,
    pub offset_dims: Vec<usize>,
    /// Operand dimensions neither collapsed nor batching, in order: the k-th is the slice
    /// dimension of output dimension `offset_dims[k]`.
    pub offset_operand_dims: Vec<usize>,
    start_index_map: Vec<usize>,
    /// (operand batching dimension, start_indices batching dimension) pairs.
    batching: Vec<(usize, usize)>,
    pub slice_sizes: Vec<i64>,
    index_vector_dim: usize,
    indices_rank: usize,
}

impl GatherPlan {
    /// The plan of gather `id` of `comp`.
    pub fn of(comp: &Computation, id: InstrId) -> Result<GatherPlan> {
        let inst = comp.get(id);
        let dn: &GatherDimensionNumbers = inst
            .attrs
            .gather_dims
            .as_ref()
            .ok_or_else(|| Error::Internal(format!("{}: gather without dimension numbers", inst.name)))?;
        let operand_rank = comp.get(inst.operands[0]).shape.rank();
        let indices_rank = comp.get(inst.operands[1]).shape.rank();
        let has = |v: &[i64], d: usize| v.contains(&(d as i64));
        Ok(GatherPlan {
            batch_dims: (0..inst.shape.rank()).filter(|&d| !has(&dn.offset_dims, d)).collect(),
            offset_dims: dn.offset_dims.iter().map(|&d| d as usize).collect(),
            offset_operand_dims: (0..operand_rank)
                .filter(|&d| !has(&dn.collapsed_slice_dims, d) && !has(&dn.operand_batching_dims, d))
                .collect(),
            start_index_map: dn.start_index_map.iter().map(|&d| d as usize).collect(),
            batching: dn
                .operand_batching_dims
                .iter()
                .zip(&dn.start_indices_batching_dims)
                .map(|(&o, &i)| (o as usize, i as usize))
                .collect(),
            slice_sizes: inst.attrs.sizes_of_slices().to_vec(),
            index_vector_dim: dn.index_vector_dim as usize,
            indices_rank,
        })
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
