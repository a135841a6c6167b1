//! Sizes of buffers and which bitcasts are views of the same memory.

use crate::error::{Error, Result};
use hlojit_runtime::physical::PhysicalLayout;
use hlojit_runtime::ArrayShape;

/// Bytes a buffer of this shape occupies in its layout.
pub fn buffer_bytes(shape: &ArrayShape) -> Result<i64> {
    let physical = PhysicalLayout::new(shape).map_err(|e| Error::Unsupported(e.to_string()))?;
    Ok(physical.storage_elements * shape.element_type.byte_size() as i64)
}

/// Whether a bitcast from `from` to `to` is the same bytes seen through another shape, so it
/// can share the operand's buffer: true for untiled layouts of the same size. A bitcast
/// involving tiles is computed instead (see `Elemental::gen_bitcast`).
pub fn is_memory_bitcast(from: &ArrayShape, to: &ArrayShape) -> bool {
    let untiled = |s: &ArrayShape| s.layout_or_default().is_untiled();
    untiled(from) && untiled(to) && buffer_bytes(from).ok() == buffer_bytes(to).ok()
}
