//! Finding loop kernels that transpose: a kernel walks its output in physical order, so an
//! operand buffer whose physical minor dimension is another output dimension is read with a
//! large stride, one cache line per element. Such kernels walk the two dimensions in square
//! tiles instead (see [`super::loops::emit_tiled_loop_nest`]), so the lines they touch are
//! reused while they are still in cache.

use super::elemental::Input;
use super::kernel::KernelContext;
use crate::hlo::{InstrId, Opcode};
use hlojit_runtime::Layout;
use std::collections::HashSet;

/// Side of the square tiles a transposing kernel walks: 32 f32 rows of 32 elements touch 64
/// cache lines, well within L1.
pub const TILE: i64 = 32;

/// The output's minor dimension and the output dimension to tile together with it, if the
/// kernel reads an operand buffer whose physical minor dimension is that other dimension and
/// both are large enough for tiling to pay.
pub fn transposed_dimensions(kc: &KernelContext, dims: &[i64], layout: &Layout) -> Option<(usize, usize)> {
    let out_minor = physical_minor(dims, layout)?;
    let mut search = Search { kc, out_minor, visited: HashSet::new(), found: None };
    let identity: Vec<Option<usize>> = (0..dims.len()).map(Some).collect();
    search.visit(kc.root, &identity);
    search.found.filter(|&t| dims[t] >= 2 * TILE && dims[out_minor] >= 2 * TILE).map(|t| (out_minor, t))
}

/// The fastest-varying dimension of size > 1.
fn physical_minor(dims: &[i64], layout: &Layout) -> Option<usize> {
    layout.minor_to_major.iter().map(|&d| d as usize).find(|&d| dims.get(d).is_some_and(|&n| n > 1))
}

struct Search<'k, 'a, 'ctx> {
    kc: &'k KernelContext<'a, 'ctx>,
    out_minor: usize,
    visited: HashSet<InstrId>,
    found: Option<usize>,
}

impl Search<'_, '_, '_> {
    /// Follows the element index from `id` towards the operand buffers; `map[d]` is the output
    /// dimension that indexes dimension `d` of `id` (None where none does alone). Only ops that
    /// move whole dimensions are followed; anything else ends the search on that path.
    fn visit(&mut self, id: InstrId, map: &[Option<usize>]) {
        if self.found.is_some() || !self.visited.insert(id) {
            return;
        }
        if let Some(Input::Array(array)) = self.kc.bindings.get(&id) {
            let layout = array.shape.layout_or_default();
            // An operand that does not vary along the output's minor dimension (a row vector
            // broadcast across the columns, say) is read at one element for the whole inner
            // loop: no stride to hide, and tiling would only add loops and remainders.
            let varies_along_minor = map.iter().any(|m| m.is_none_or(|d| d == self.out_minor));
            if layout.tiles.is_empty() && varies_along_minor {
                if let Some(Some(t)) = physical_minor(&array.shape.dims, &layout).map(|p| map.get(p).copied().flatten()) {
                    if t != self.out_minor {
                        self.found = Some(t);
                    }
                }
            }
            return;
        }
        let inst = self.kc.comp.get(id);
        let rank = map.len();
        match inst.opcode {
            Opcode::Tuple => {
                for &o in &inst.operands {
                    self.visit(o, map);
                }
            }
            Opcode::Transpose => {
                let Some(perm) = &inst.attrs.dimensions else { return };
                let mut operand_map = vec![None; rank];
                for (i, &p) in perm.iter().enumerate() {
                    if let (Some(slot), Some(&m)) = (operand_map.get_mut(p as usize), map.get(i)) {
                        *slot = m;
                    }
                }
                self.visit(inst.operands[0], &operand_map);
            }
            Opcode::Broadcast => {
                let Some(dims) = &inst.attrs.dimensions else { return };
                let operand_map: Vec<Option<usize>> = dims.iter().map(|&d| map.get(d as usize).copied().flatten()).collect();
                self.visit(inst.operands[0], &operand_map);
            }
            op if op.is_elementwise() || op == Opcode::Copy => {
                for &o in &inst.operands {
                    if self.kc.comp.get(o).shape.dims() == inst.shape.dims() {
                        self.visit(o, map);
                    }
                }
            }
            _ => {}
        }
    }
}
