//! Which kernels are emitted into the module of the code that calls them (the sequencing
//! module) instead of a parallel-compiled partition: the kernels of small loop bodies and
//! conditions. There they are internal functions called once each, which LLVM inlines into
//! the loop.
//!
//! Why: a loop whose body is a handful of tiny kernels (rnn_scan's step: a 1x32 and a 1x64
//! dot, a tanh of 64 elements, a dynamic-update-slice, the counter) spends a good part of each
//! step on the calls themselves: every kernel reloads its buffer pointers from the table,
//! stores its result to memory for the next one, and the calls bound what the out-of-order
//! core can overlap across kernels. Inlined, LLVM keeps the state in registers across the
//! step (the while state slots of `while_registers.rs` promote only where nothing escapes to
//! a call), forwards one kernel's result to the next and schedules the step as one block.
//! Measured on rnn_scan (Zen 3, loaded, alternating runs, outputs checked): 0.279-0.293 ->
//! 0.253-0.257 ms per run.
//!
//! Only small bodies: a large body's kernels are compiled on the partition threads, in
//! parallel, and their calls cost nothing next to their work.

use crate::codegen::plan::LoweringPlan;

/// Most LLVM work ([`crate::hlo::Opcode::weight`] summed over a kernel's instructions) that
/// one loop body's (or condition's) kernels may have together to be inlined: a body of two
/// small dots and a few elementwise kernels (rnn_scan's is ~100).
pub const MAX_INLINED_BODY_WORK: usize = 128;

/// The kernels (indices into `plan.kernels`) to emit into the sequencing module, given each
/// kernel's work: every kernel of a function that is not exported (a loop body or condition,
/// a called computation) whose kernels' work adds up to at most [`MAX_INLINED_BODY_WORK`].
pub fn inlined_kernels(plan: &LoweringPlan, work: &[usize]) -> Vec<usize> {
    let mut body_work = vec![0usize; plan.functions.len()];
    for (j, k) in plan.kernels.iter().enumerate() {
        body_work[k.function] = body_work[k.function].saturating_add(work[j]);
    }
    plan.kernels
        .iter()
        .enumerate()
        .filter(|(_, k)| !plan.functions[k.function].exported && body_work[k.function] <= MAX_INLINED_BODY_WORK)
        .map(|(j, _)| j)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::inlined_kernels;
    use crate::codegen::plan::LoweringPlan;
    use crate::pipeline::{kernel_work, prepare, CompileOptions};

    /// A scan step (a 1x64 by 64x64 dot and a tanh) in a loop, after an entry with its own dot;
    /// `extra` more dots in the body make it large.
    fn module(extra: usize) -> String {
        let previous = |i: usize| if i == 0 { "t".to_string() } else { format!("s{}", i - 1) };
        let dots: String = (0..extra)
            .map(|i| format!("  e{i} = f32[1,64] dot({p}, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n  s{i} = f32[1,64] tanh(e{i})\n", p = previous(i)))
            .collect();
        let last = previous(extra);
        format!(
            "HloModule m
cond {{ p = (s32[], f32[1,64], f32[64,64]) parameter(0)  i = s32[] get-tuple-element(p), index=0  n = s32[] constant(100)  ROOT c = pred[] compare(i, n), direction=LT }}
body {{
  p = (s32[], f32[1,64], f32[64,64]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  h = f32[1,64] get-tuple-element(p), index=1
  w = f32[64,64] get-tuple-element(p), index=2
  one = s32[] constant(1)
  j = s32[] add(i, one)
  d = f32[1,64] dot(h, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  t = f32[1,64] tanh(d)
{dots}  ROOT r = (s32[], f32[1,64], f32[64,64]) tuple(j, {last}, w)
}}
ENTRY main {{
  a = f32[256,256] parameter(0)
  h = f32[1,64] parameter(1)
  w = f32[64,64] parameter(2)
  aa = f32[256,256] dot(a, a), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  z = s32[] constant(0)
  s = (s32[], f32[1,64], f32[64,64]) tuple(z, h, w)
  l = (s32[], f32[1,64], f32[64,64]) while(s), condition=cond, body=body
  hl = f32[1,64] get-tuple-element(l), index=1
  ROOT o = (f32[256,256], f32[1,64]) tuple(aa, hl)
}}
"
        )
    }

    /// Whether each kernel is inlined, whether it belongs to the entry, and its work.
    fn decisions(extra: usize) -> Vec<(bool, bool, usize)> {
        let parsed = crate::hlo::text::parse_module(&module(extra)).expect("parses");
        let prepared = prepare(&parsed, &CompileOptions::default()).expect("prepares");
        let plan = LoweringPlan::new(&prepared, "entry").expect("plans");
        let work: Vec<usize> = plan.kernels.iter().map(|k| kernel_work(&prepared, &plan, k)).collect();
        let inlined = inlined_kernels(&plan, &work);
        plan.kernels.iter().enumerate().map(|(j, k)| (inlined.contains(&j), plan.functions[k.function].exported, work[j])).collect()
    }

    #[test]
    fn a_small_loop_body_is_inlined_and_the_entry_is_not() {
        let d = decisions(0);
        assert!(d.iter().any(|&(_, entry, _)| !entry), "the loop has kernels: {d:?}");
        for (inlined, entry, _) in d {
            assert_eq!(inlined, !entry);
        }
    }

    #[test]
    fn a_large_loop_body_is_compiled_apart() {
        // The body's dots stay apart (the condition's compare, a small function of its own,
        // is still inlined).
        let d = decisions(4);
        let dots: Vec<_> = d.iter().filter(|&&(_, entry, work)| !entry && work >= crate::hlo::Opcode::Dot.weight()).collect();
        assert!(dots.len() >= 5, "{d:?}");
        assert!(dots.iter().all(|&&(inlined, _, _)| !inlined), "{d:?}");
    }
}
