//! Unit tests of `while_residual_remat`.

use super::*;
use crate::passes::pass::Pass;

fn run(m: &mut Module) -> Result<bool> {
    WhileResidualRemat.run(m)
}

/// A forward scan stacking `t = tanh(..)` and `1 - t`, and its reverse reading both stacks.
const SCAN: &str = r#"HloModule remat_scan_grad
fbody {
  p = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3], f32[4,2,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  h = f32[2,3] get-tuple-element(p), index=1
  xs = f32[4,2,3] get-tuple-element(p), index=4
  z = s32[] constant(0)
  xd = f32[1,2,3] dynamic-slice(xs, i, z, z), dynamic_slice_sizes={1,2,3}
  x = f32[2,3] reshape(xd)
  half = f32[] constant(0.5)
  halves = f32[2,3] broadcast(half), dimensions={}
  hh = f32[2,3] multiply(h, halves)
  s = f32[2,3] add(x, hh)
  t = f32[2,3] tanh(s)
  c1 = f32[] constant(1)
  ones = f32[2,3] broadcast(c1), dimensions={}
  d = f32[2,3] subtract(ones, t)
  pair = (f32[2,3], f32[2,3]) tuple(t, d)
  t1 = f32[2,3] get-tuple-element(pair), index=0
  d1 = f32[2,3] get-tuple-element(pair), index=1
  ys = f32[4,2,3] get-tuple-element(p), index=2
  tr = f32[1,2,3] reshape(t1)
  ys2 = f32[4,2,3] dynamic-update-slice(ys, tr, i, z, z)
  ds = f32[4,2,3] get-tuple-element(p), index=3
  dr = f32[1,2,3] reshape(d1)
  ds2 = f32[4,2,3] dynamic-update-slice(ds, dr, i, z, z)
  ROOT r = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3], f32[4,2,3]) tuple(next, t, ys2, ds2, xs)
}
fcond {
  p = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3], f32[4,2,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
bbody {
  p = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  g = f32[2,3] get-tuple-element(p), index=1
  n = s32[] constant(3)
  j = s32[] subtract(n, i)
  z = s32[] constant(0)
  ys = f32[4,2,3] get-tuple-element(p), index=2
  yd = f32[1,2,3] dynamic-slice(ys, j, z, z), dynamic_slice_sizes={1,2,3}
  y = f32[2,3] reshape(yd)
  ds = f32[4,2,3] get-tuple-element(p), index=3
  dd = f32[1,2,3] dynamic-slice(ds, j, z, z), dynamic_slice_sizes={1,2,3}
  d = f32[2,3] reshape(dd)
  gy = f32[2,3] multiply(g, y)
  gd = f32[2,3] multiply(gy, d)
  half = f32[] constant(0.5)
  halves = f32[2,3] broadcast(half), dimensions={}
  g2 = f32[2,3] multiply(gd, halves)
  ROOT r = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) tuple(next, g2, ys, ds)
}
bcond {
  p = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY main {
  xs = f32[4,2,3] parameter(0)
  h0 = f32[2,3] parameter(1)
  z = s32[] constant(0)
  c = f32[] constant(0)
  zeros = f32[4,2,3] broadcast(c), dimensions={}
  init = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3], f32[4,2,3]) tuple(z, h0, zeros, zeros, xs)
  fw = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3], f32[4,2,3]) while(init), condition=fcond, body=fbody
  h = f32[2,3] get-tuple-element(fw), index=1
  ys = f32[4,2,3] get-tuple-element(fw), index=2
  ds = f32[4,2,3] get-tuple-element(fw), index=3
  binit = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) tuple(z, h, ys, ds)
  bw = (s32[], f32[2,3], f32[4,2,3], f32[4,2,3]) while(binit), condition=bcond, body=bbody
  ROOT gout = f32[2,3] get-tuple-element(bw), index=1
}
"#;

fn backward_reads(m: &Module, element: i64) -> usize {
    let body = m.computation(m.find_computation("bbody").unwrap());
    body.ids().filter(|&i| body.get(i).opcode == Opcode::GetTupleElement && body.get(i).attrs.tuple_index == Some(element))
        .filter(|&i| body.users()[i.index()].iter().any(|&u| body.get(u).opcode == Opcode::DynamicSlice))
        .count()
}

#[test]
fn one_minus_the_stacked_tanh_is_recomputed_from_it() {
    let (changed, m) = crate::passes::test_util::run_verified(SCAN, run);
    assert!(changed);
    // The reverse loop slices the tanh stack (element 2) twice and the `1 - t` stack no more.
    assert_eq!(backward_reads(&m, 3), 0);
    assert_eq!(backward_reads(&m, 2), 2);
    let body = m.computation(m.find_computation("bbody").unwrap());
    assert!(body.ids().any(|i| body.get(i).opcode == Opcode::Subtract && body.get(i).name.starts_with("d.remat")));
    // Dead-state removal then drops the stack from both loops.
    let mut m = m;
    crate::passes::while_dead_state::WhileDeadState.run(&mut m).unwrap();
    let e = m.entry_computation();
    let fw = e.ids().find(|&i| e.get(i).name == "fw").unwrap();
    assert_eq!(e.get(fw).shape.tuple_elements().unwrap().len(), 4);
}

#[test]
fn stacks_that_are_not_cheap_functions_of_a_full_stack_stay() {
    let cases = [
        // An expensive function (exp) is not worth recomputing.
        SCAN.replace("d = f32[2,3] subtract(ones, t)", "d0 = f32[2,3] subtract(ones, t)\n  d = f32[2,3] exponential(d0)"),
        // A function of something else than the other stack's value.
        SCAN.replace("d = f32[2,3] subtract(ones, t)", "d = f32[2,3] subtract(x, t)"),
        // The forward loop writes three of the four rows: row 3 of the stacks keeps its zeros.
        SCAN.replace("n = s32[] constant(4)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\nbbody", "n = s32[] constant(3)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}\nbbody"),
        // The stacks are written at different rows.
        SCAN.replace("ds2 = f32[4,2,3] dynamic-update-slice(ds, dr, i, z, z)", "ds2 = f32[4,2,3] dynamic-update-slice(ds, dr, next, z, z)"),
        // The `1 - t` stack is also a result of the module.
        SCAN.replace("ROOT gout = f32[2,3] get-tuple-element(bw), index=1", "gout = f32[2,3] get-tuple-element(bw), index=1\n  ROOT both = (f32[2,3], f32[4,2,3]) tuple(gout, ds)"),
        // The reverse loop reads the stack whole, not by slices.
        SCAN.replace("gd = f32[2,3] multiply(gy, d)", "dsum = f32[4,2,3] add(ds, ds)\n  dsl = f32[1,2,3] slice(dsum), slice={[0:1], [0:2], [0:3]}\n  dsr = f32[2,3] reshape(dsl)\n  gd = f32[2,3] multiply(gy, dsr)"),
    ];
    for text in cases {
        assert!(text != SCAN);
        let (changed, m) = crate::passes::test_util::run_verified(&text, run);
        assert!(!changed, "{text}");
        assert!(backward_reads(&m, 3) > 0 || !text.contains("dynamic-slice(ds, j"));
    }
}
