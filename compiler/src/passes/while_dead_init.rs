//! Drops the initial value of a stacked loop state that the loop overwrites before anything
//! reads it, as XLA's `DusAccumulatorZeroInitElimination` does (there for GPUs): the state
//! starts as XLA's `AllocateBuffer` custom call, a buffer left uninitialized.
//!
//! JAX's `scan` starts every stacked output (forward outputs, reverse-mode residuals) as a
//! `broadcast(0)` of the whole stack, and each step writes its row with a dynamic-update-slice
//! at the step's index. With the loop counting 0, 1, ..., N-1 over a stack of N rows, every row
//! is written once and nothing reads the stack in between, so the zeros are never seen; writing
//! them cost scan_grad_200x32x256 two 6.5 MB fills per run (a fifth of its time).
//!
//! The rule, for state element `k` of a `while`:
//! - the loop runs exactly N times: its counter starts at the constant 0, the body adds the
//!   constant 1 to it and nothing else, and the condition is `counter < N` for a constant N;
//! - element `k` starts as a broadcast of a constant used only by the loop's initial tuple, and
//!   its leading dimension is N;
//! - in the body, its only reader is one dynamic-update-slice whose result is the body's
//!   element `k` and nothing else's: starting at the counter in the leading dimension and at
//!   the constant 0 elsewhere, the update spanning every other dimension whole; the condition
//!   does not read it.
//!
//! Iteration t then writes rows t.. of the stack; after N iterations each row was written and
//! nothing had read an unwritten one. Runs before fusion (it reads the body's plain ops) and
//! after `while_init_broadcasts` (which gives each stack its own broadcast to replace).

use super::while_init_broadcasts::is_constant_broadcast;
use crate::error::Result;
use crate::hlo::{CompId, ComparisonDirection, Computation, InstrId, Instruction, Module, Opcode};
use crate::analysis::custom_calls::ALLOCATE_BUFFER;
use hlojit_runtime::Shape;

pub struct WhileDeadInit;

impl super::pass::Pass for WhileDeadInit {
    fn name(&self) -> &'static str {
        "while-dead-init"
    }

    fn run(&self, module: &mut Module) -> Result<bool> {
        let mut changed = false;
        for c in 0..module.computations.len() {
            let c = CompId(c as u32);
            let whiles = module.computation(c).ids_of(Opcode::While);
            for w in whiles {
                for (k, init) in dead_inits(module, c, w) {
                    let comp = module.computation_mut(c);
                    let shape = comp.get(init).shape.clone();
                    let name = format!("{}.uninitialized", comp.get(init).name);
                    let mut alloc = Instruction::new(name, Opcode::CustomCall, shape, vec![]);
                    alloc.attrs.custom_call_target = Some(ALLOCATE_BUFFER.to_string());
                    let id = comp.add(alloc);
                    let tuple = comp.get(w).operands[0];
                    comp.get_mut(tuple).operands[k] = id;
                    changed = true;
                }
            }
        }
        Ok(changed)
    }
}

/// The state elements of while `w` (with their initial instruction) whose initial value the
/// loop never reads.
fn dead_inits(module: &Module, c: CompId, w: InstrId) -> Vec<(usize, InstrId)> {
    let comp = module.computation(c);
    let inst = comp.get(w);
    let (Some(cond), Some(body)) = (inst.while_condition(), inst.while_body()) else { return Vec::new() };
    let (cond, body) = (module.computation(cond), module.computation(body));
    let init = comp.get(inst.operands[0]);
    let users = comp.users();
    if init.opcode != Opcode::Tuple || users[inst.operands[0].index()].len() != 1 {
        return Vec::new();
    }
    let Some((counter, trips)) = counted_loop(comp, init, cond, body) else { return Vec::new() };
    let body_users = body.users();
    let cond_users = cond.users();
    (0..init.operands.len())
        .filter(|&k| k != counter)
        .filter(|&k| {
            let start = init.operands[k];
            let first_dim = comp.get(start).shape.dims().first().copied();
            is_constant_broadcast(comp, start)
                && users[start.index()].iter().all(|&u| u == inst.operands[0])
                && init.operands.iter().filter(|&&o| o == start).count() == 1
                && first_dim == Some(trips)
                && element_reads(cond, &cond_users, k).is_some_and(|r| r.iter().all(|&g| cond_users[g.index()].is_empty()))
                && overwritten_each_row(body, &body_users, k, counter)
        })
        .map(|k| (k, init.operands[k]))
        .collect()
}

/// `(counter element, trip count)` when the loop counts from the constant 0 by 1 while
/// `counter < N`.
pub(crate) fn counted_loop(comp: &Computation, init: &Instruction, cond: &Computation, body: &Computation) -> Option<(usize, i64)> {
    let root = cond.root_instruction();
    if root.opcode != Opcode::Compare || root.attrs.direction != Some(ComparisonDirection::Lt) {
        return None;
    }
    let (lhs, rhs) = (cond.get(root.operands[0]), cond.get(root.operands[1]));
    let counter = tuple_index_of_parameter(cond, lhs)?;
    let trips = integer_constant(rhs)?;
    if trips <= 0 || integer_constant(comp.get(*init.operands.get(counter)?)) != Some(0) {
        return None;
    }
    // The body's next counter is its counter plus the constant 1.
    let body_root = body.root_instruction();
    if body_root.opcode != Opcode::Tuple {
        return None;
    }
    let next = body.get(*body_root.operands.get(counter)?);
    if next.opcode != Opcode::Add {
        return None;
    }
    let (a, b) = (body.get(next.operands[0]), body.get(next.operands[1]));
    let steps_by_one = (tuple_index_of_parameter(body, a) == Some(counter) && integer_constant(b) == Some(1))
        || (tuple_index_of_parameter(body, b) == Some(counter) && integer_constant(a) == Some(1));
    steps_by_one.then_some((counter, trips))
}

/// Whether body element `k`'s only reader is a dynamic-update-slice, at the counter in the
/// leading dimension and at 0 in the others with a whole-width update, whose result is the
/// body's element `k` and read by nothing else.
pub(crate) fn overwritten_each_row(body: &Computation, users: &[Vec<InstrId>], k: usize, counter: usize) -> bool {
    let Some(reads) = element_reads(body, users, k) else { return false };
    let readers: Vec<InstrId> = reads.iter().flat_map(|g| users[g.index()].iter().copied()).collect();
    let [dus] = readers.as_slice() else { return false };
    let d = body.get(*dus);
    let root = body.root_instruction();
    if d.opcode != Opcode::DynamicUpdateSlice || !reads.contains(&d.operands[0]) || reads.contains(&d.operands[1]) {
        return false;
    }
    let sole_result = users[dus.index()].iter().all(|&u| u == body.root)
        && root.operands.iter().enumerate().all(|(i, &o)| (o == *dus) == (i == k));
    let (full, update) = (d.shape.dims(), body.get(d.operands[1]).shape.dims());
    let starts = &d.operands[2..];
    let leading = starts.first().is_some_and(|&s| tuple_index_of_parameter(body, body.get(s)) == Some(counter));
    let rest = starts.iter().skip(1).all(|&s| integer_constant(body.get(s)) == Some(0));
    let whole_rows = full.len() == update.len() && update.first().is_some_and(|&n| n >= 1) && full[1..] == update[1..];
    sole_result && leading && rest && whole_rows
}

/// The get-tuple-elements of the parameter that read element `k`, if the parameter is read
/// only through get-tuple-element.
pub(crate) fn element_reads(comp: &Computation, users: &[Vec<InstrId>], k: usize) -> Option<Vec<InstrId>> {
    let param = *comp.parameters().first()?;
    let mut reads = Vec::new();
    for &u in &users[param.index()] {
        let g = comp.get(u);
        if g.opcode != Opcode::GetTupleElement {
            return None;
        }
        if g.attrs.tuple_index == Some(k as i64) {
            reads.push(u);
        }
    }
    Some(reads)
}

/// `k` when `inst` is `get-tuple-element(parameter(0)), index=k`.
pub(crate) fn tuple_index_of_parameter(comp: &Computation, inst: &Instruction) -> Option<usize> {
    let operand = comp.get(*inst.operands.first()?);
    (inst.opcode == Opcode::GetTupleElement && operand.opcode == Opcode::Parameter && operand.attrs.parameter_number == Some(0))
        .then(|| inst.attrs.tuple_index.map(|i| i as usize))
        .flatten()
}

/// The value of an integer scalar constant.
fn integer_constant(inst: &Instruction) -> Option<i64> {
    let is_int_scalar = matches!(&inst.shape, Shape::Array(a) if a.dims.is_empty() && a.element_type.is_int());
    if inst.opcode != Opcode::Constant || !is_int_scalar {
        return None;
    }
    inst.array_literal().ok().map(|l| l.get_i64(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::pass::Pass;

    fn run(m: &mut Module) -> Result<bool> {
        WhileDeadInit.run(m)
    }

    const SCAN: &str = r#"HloModule m
body {
  p = (s32[], f32[4,2], f32[2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  s = f32[4,2] get-tuple-element(p), index=1
  h = f32[2] get-tuple-element(p), index=2
  t = f32[2] tanh(h)
  r = f32[1,2] reshape(t)
  z = s32[] constant(0)
  u = f32[4,2] dynamic-update-slice(s, r, i, z)
  ROOT out = (s32[], f32[4,2], f32[2]) tuple(j, u, t)
}
cond {
  p = (s32[], f32[4,2], f32[2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  z = s32[] constant(0)
  c = f32[] constant(0)
  zeros = f32[4,2] broadcast(c), dimensions={}
  h = f32[2] parameter(0)
  init = (s32[], f32[4,2], f32[2]) tuple(z, zeros, h)
  w = (s32[], f32[4,2], f32[2]) while(init), condition=cond, body=body
  ROOT r = f32[4,2] get-tuple-element(w), index=1
}
"#;

    fn stack_init(m: &Module) -> Opcode {
        let e = m.entry_computation();
        let init = e.ids().find(|&i| e.get(i).name == "init").unwrap();
        e.get(e.get(init).operands[1]).opcode
    }

    #[test]
    fn a_stack_written_row_by_row_starts_uninitialized() {
        let (changed, m) = crate::passes::test_util::run_verified(SCAN, run);
        assert!(changed);
        assert_eq!(stack_init(&m), Opcode::CustomCall);
    }

    #[test]
    fn stacks_whose_zeros_can_be_seen_keep_them() {
        let cases = [
            // One row fewer than the stack: the last row keeps its zero.
            SCAN.replace("n = s32[] constant(4)", "n = s32[] constant(3)"),
            // The counter starts at 1: row 0 is never written.
            SCAN.replace("  z = s32[] constant(0)\n  c = f32[]", "  z = s32[] constant(1)\n  c = f32[]"),
            // The body reads the stack (a row not yet written) besides updating it.
            SCAN.replace("t = f32[2] tanh(h)", "x = f32[4,2] tanh(s)\n  xs = f32[1,2] slice(x), slice={[3:4], [0:2]}\n  xr = f32[2] reshape(xs)\n  t = f32[2] add(h, xr)"),
            // The update covers half a row.
            SCAN.replace("f32[2] tanh(h)", "f32[2] tanh(h)\n  t1 = f32[1] slice(t), slice={[0:1]}")
                .replace("r = f32[1,2] reshape(t)", "r = f32[1,1] reshape(t1)"),
            // The row index is not the counter.
            SCAN.replace("u = f32[4,2] dynamic-update-slice(s, r, i, z)", "u = f32[4,2] dynamic-update-slice(s, r, z, z)"),
        ];
        for text in cases {
            let (changed, m) = crate::passes::test_util::run_verified(&text, run);
            assert!(!changed, "{text}");
            assert_eq!(stack_init(&m), Opcode::Broadcast);
        }
    }
}
