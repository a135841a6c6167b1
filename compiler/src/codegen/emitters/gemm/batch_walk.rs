//! Batch groups that no single stride walks. JAX keeps attention's heads between sequence and
//! features (`[batch, seq, heads, dim]`), so the batch group of its products, batch x heads, is
//! dims (0, 2): not one stride, but two, the group split into a leading and a trailing part
//! that each walk with one. Batch `b` (the group's row-major number) then lies at
//! `b / inner_count * outer + b % inner_count * inner`, as the runtime's
//! `GemmF32::batch_offset` computes it; a group one stride walks is the case `inner_count` 1.
//! The split must be the same in both operands and the result, which number their batches
//! alike.

use super::dims::group_stride;
use crate::codegen::context::Codegen;
use crate::error::Result;
use inkwell::values::IntValue;

/// Where an operand's batches lie (see the module's doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchWalk {
    /// Batches per outer batch (the trailing part's size, at least 1).
    pub inner_count: i64,
    pub outer: i64,
    pub inner: i64,
}

/// One array's view of the batch group: its element strides, dimension sizes and the group.
pub type GroupLayout<'a> = (&'a [i64], &'a [i64], &'a [usize]);

impl BatchWalk {
    /// The walk of `group` split after its first `split` dimensions, if both parts walk with
    /// one stride.
    pub fn of((strides, dims, group): GroupLayout, split: usize) -> Option<BatchWalk> {
        let (lead, trail) = group.split_at(split);
        let inner_count = trail.iter().map(|&d| dims[d]).product::<i64>().max(1);
        Some(BatchWalk { inner_count, outer: group_stride(strides, dims, lead)?, inner: group_stride(strides, dims, trail)? })
    }

    /// Emits the element offset of batch `b`.
    pub fn offset<'ctx>(&self, cg: &Codegen<'ctx>, b: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        let scaled = |v: IntValue<'ctx>, s: i64| cg.b.build_int_nsw_mul(v, cg.const_i64(s), "");
        if self.inner_count == 1 {
            return Ok(scaled(b, self.outer)?);
        }
        let count = cg.const_i64(self.inner_count);
        let outer = scaled(cg.b.build_int_unsigned_div(b, count, "batch.outer")?, self.outer)?;
        let inner = scaled(cg.b.build_int_unsigned_rem(b, count, "batch.inner")?, self.inner)?;
        Ok(cg.b.build_int_nsw_add(outer, inner, "")?)
    }
}

/// Where to split the batch group of arrays laid out as `layouts` (`None`: not a buffer, read
/// some other way): the split that lets the most of them walk their batches with
/// [`BatchWalk`], ties to the later split (a whole group walked by one stride: no division).
pub fn batch_split(layouts: &[Option<GroupLayout>]) -> usize {
    let len = layouts.iter().flatten().map(|(_, _, g)| g.len()).max().unwrap_or(0);
    let walking = |split: usize| layouts.iter().flatten().filter(|&&l| BatchWalk::of(l, split).is_some()).count();
    // `max_by_key` takes the last of equal maxima.
    (0..=len).max_by_key(|&split| walking(split)).unwrap_or(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_heads_split_after_the_batch() {
        // f32[8,128,4,64] row-major, batch dims (0, 2): batch b = 4 * i0 + i2.
        let q: GroupLayout = (&[32768, 256, 64, 1], &[8, 128, 4, 64], &[0, 2]);
        assert_eq!(BatchWalk::of(q, 2), None);
        assert_eq!(BatchWalk::of(q, 1), Some(BatchWalk { inner_count: 4, outer: 32768, inner: 64 }));
        // The result f32[8,4,128,128] numbers its batches with one stride, which splits anywhere.
        let out: GroupLayout = (&[65536, 16384, 128, 1], &[8, 4, 128, 128], &[0, 1]);
        assert_eq!(BatchWalk::of(out, 2), Some(BatchWalk { inner_count: 1, outer: 16384, inner: 0 }));
        assert_eq!(BatchWalk::of(out, 1), Some(BatchWalk { inner_count: 4, outer: 65536, inner: 16384 }));
        assert_eq!(batch_split(&[Some(q), Some(q), Some(out)]), 1);
        // Groups one stride walks stay whole; an operand that is not a buffer does not count.
        assert_eq!(batch_split(&[Some(out), None, Some(out)]), 2);
        assert_eq!(batch_split(&[Some(q), None, None]), 1);
    }

    #[test]
    fn groups_split_where_both_parts_walk_or_not_at_all() {
        // Row-major [2,3,4,5], group (0, 1, 3): dims 0 and 1 walk together, 3 apart.
        let layout: GroupLayout = (&[60, 20, 5, 1], &[2, 3, 4, 5], &[0, 1, 3]);
        let walks: Vec<usize> = (0..=3).filter(|&s| BatchWalk::of(layout, s).is_some()).collect();
        assert_eq!(walks, [2]);
        assert_eq!(BatchWalk::of(layout, 2), Some(BatchWalk { inner_count: 5, outer: 20, inner: 1 }));
        // Three runs (row-major [2,3,4,5,6], group (0, 2, 4)): no split; the whole group, which
        // then does not walk either (the operand is generated, as before).
        let three: GroupLayout = (&[360, 120, 30, 6, 1], &[2, 3, 4, 5, 6], &[0, 2, 4]);
        assert!((0..=3).all(|s| BatchWalk::of(three, s).is_none()));
        assert_eq!(batch_split(&[Some(three), Some(three), None]), 3);
        // Dimensions of size 1 do not break a run.
        let ones: GroupLayout = (&[12, 12, 4, 4, 1], &[2, 1, 3, 1, 4], &[0, 1, 3]);
        assert_eq!(BatchWalk::of(ones, 3), Some(BatchWalk { inner_count: 1, outer: 12, inner: 0 }));
    }

    #[test]
    fn attention_dots_are_expected_to_call_the_runtime() {
        // Scores, context and a gradient of JAX's attention: batch x heads as dims (0, 2) of
        // the [batch, seq, heads, dim] operands; and a batch group in three runs (a layout that
        // puts the free and contracting dims between the batch dims), which no split walks.
        let text = "HloModule m
ENTRY main {
  q = f32[2,24,3,16] parameter(0)
  k = f32[2,24,3,16] parameter(1)
  p = f32[2,3,24,24] parameter(2)
  x = f32[2,3,4,20,16]{2,4,1,3,0} parameter(3)
  s = f32[2,3,24,24] dot(q, k), lhs_batch_dims={0,2}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={3}
  c = f32[2,3,24,16] dot(p, k), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,2}, rhs_contracting_dims={1}
  g = f32[2,3,16,24] dot(q, p), lhs_batch_dims={0,2}, lhs_contracting_dims={1}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
  r = f32[2,3,4,20,20] dot(x, x), lhs_batch_dims={0,1,2}, lhs_contracting_dims={4}, rhs_batch_dims={0,1,2}, rhs_contracting_dims={4}
  ROOT t = (f32[2,3,24,24], f32[2,3,24,16], f32[2,3,16,24], f32[2,3,4,20,20]) tuple(s, c, g, r)
}
";
        let module = crate::hlo::text::parse_module(text).expect("parses");
        let comp = module.entry_computation();
        let expected: Vec<(String, bool)> = comp.ids_of(crate::hlo::Opcode::Dot).into_iter().map(|id| (comp.get(id).name.clone(), super::super::dot::likely_precompiled(comp, comp.get(id), false))).collect();
        let named = |n: &str, e: bool| (n.to_string(), e);
        assert_eq!(expected, [named("s", true), named("c", true), named("g", true), named("r", false)]);
    }
}
