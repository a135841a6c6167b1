//! Top-k along the last dimension: the HLO `topk` op (`largest=true` gives descending,
//! `false` ascending order, floats in their total order -NaN < -inf < ... < -0 < +0 < ... <
//! +inf < +NaN, equal values lower index first), and the `TopK` custom call XLA:CPU introduces
//! in optimized modules, whose comparator (over values and indices) decides the order. Both
//! are a stable sort of (values, positions) cut to the first k, done by the sort engine.

use super::sort::{emit_sort, Order, SortJob, Source};
use super::sort_key::{recognize, KeyKind, KeyOrder};
use crate::codegen::kernel::KernelContext;
use crate::error::{Error, Result};
use crate::hlo::{ComparisonType, Opcode};

pub use crate::analysis::custom_calls::is_topk_custom_call;

pub fn emit(kc: &KernelContext) -> Result<i64> {
    let root = kc.comp.get(kc.root);
    let operand =
        *root.operands.first().ok_or_else(|| Error::Internal(format!("{}: top-k without an operand", root.name)))?;
    let dims = kc.comp.get(operand).shape.dims().to_vec();
    let t =
        kc.comp.get(operand).shape.element_type().ok_or_else(|| Error::Internal(format!("{}: operand", root.name)))?;
    let (Some(values), Some(indices)) = (kc.outputs.first(), kc.outputs.get(1)) else {
        return Err(Error::Internal(format!("{}: top-k needs a values and an indices output", root.name)));
    };
    if dims.is_empty() {
        return Err(Error::Unsupported(format!("{}: top-k of a scalar", root.name)));
    }
    let dim = dims.len() - 1;
    let k = values.shape.dims.get(dim).copied().unwrap_or(0);
    let index_type = indices.shape.element_type;
    if !index_type.is_int() {
        return Err(Error::Unsupported(format!("{}: top-k indices of type {index_type}", root.name)));
    }
    let order = if root.opcode == Opcode::CustomCall {
        let comparator =
            root.to_apply().ok_or_else(|| Error::Internal(format!("{}: TopK without a comparator", root.name)))?;
        match recognize(kc.module, comparator, 2) {
            Some(key) => Order::Key { key, comparator: Some(comparator) },
            None => Order::Comparator(comparator),
        }
    } else {
        let kind =
            if t.is_floating() { KeyKind::of(t, Some(ComparisonType::TotalOrder)) } else { KeyKind::of(t, None) }
                .ok_or_else(|| Error::Unsupported(format!("{}: top-k of {t}", root.name)))?;
        let descending = root.attrs.largest.unwrap_or(true);
        Order::Key { key: KeyOrder { operand: 0, key: None, kind, descending }, comparator: None }
    };
    let job = SortJob { sources: vec![Source::Operand(operand), Source::Position(index_type)], dims, dim, k, order, unstable: false };
    emit_sort(kc, &job)
}
