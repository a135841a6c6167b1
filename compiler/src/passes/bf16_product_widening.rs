//! XLA:CPU's excess precision for bf16 dots and convolutions read as f32.
//!
//! XLA:CPU computes a bf16 dot or convolution in f32 (its float normalization converts the
//! operands up and the result back down to bf16), and with `xla_allow_excess_precision` (on by
//! default) it then drops the f32 -> bf16 -> f32 pairs of converts that normalization made. So
//! `convert(f32, dot(bf16 a, bf16 b))` is XLA's f32 dot of a and b, never rounded to bf16
//! (api_test's test_excess_precision_hell: 2.5531006 where the bf16 result is 2.546875). Only
//! those compiler-made pairs go: a round trip the program writes itself stays, as does one to
//! f64 or through f16 (XLA's optimized HLO for each, through jaxlib 0.10).
//!
//! Here the convert becomes the same dot (or convolution) with an f32 result. Other users of the
//! bf16 product read it rounded from that one (`convert(bf16, wide)`): the bf16 product is the
//! same f32 sum rounded once, so the product is computed once, not twice.

use super::fused_body::unique_name;
use crate::hlo::{Computation, InstrId, Instruction, Opcode};
use hlojit_runtime::ElementType;
use std::collections::HashSet;

/// The f32 product that replaces `convert`, if it converts a bf16 dot or convolution to f32.
pub(super) fn rewrite(comp: &mut Computation, convert: InstrId) -> Option<InstrId> {
    let inst = comp.get(convert);
    let product = comp.get(inst.operands[0]);
    let widens = inst.shape.element_type() == Some(ElementType::F32) && product.shape.element_type() == Some(ElementType::BF16);
    if !widens || !matches!(product.opcode, Opcode::Dot | Opcode::Convolution) || !product.control_predecessors.is_empty() {
        return None;
    }
    let product_id = inst.operands[0];
    let mut wide = product.clone();
    wide.shape = inst.shape.clone();
    let mut names: HashSet<String> = comp.instructions.iter().map(|i| i.name.clone()).collect();
    wide.name = unique_name(&mut names, &format!("{}.f32", product.name));
    let narrow_shape = product.shape.clone();
    let narrow_name = unique_name(&mut names, &format!("{}.rounded", product.name));
    let others = comp.users()[product_id.index()].iter().any(|&u| u != convert) || comp.root == product_id;
    let wide = comp.add(wide);
    if others {
        let narrow = comp.add(Instruction::new(narrow_name, Opcode::Convert, narrow_shape, vec![wide]));
        // The convert too: it is replaced by `wide` itself.
        comp.replace_all_uses(product_id, narrow);
    }
    Some(wide)
}
