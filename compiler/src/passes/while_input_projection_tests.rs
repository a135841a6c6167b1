use super::*;
use crate::hlo::text::print_module;
use crate::passes::pass::Pass;

fn run(m: &mut Module) -> Result<bool> {
    WhileInputProjection.run(m)
}

// An RNN scan as JAX lowers it once licm ran: x_t @ wx + h @ wh, the step's output stacked.
const RNN: &str = r#"HloModule m
body {
  p = (s32[], f32[2,4], f32[6,2,4], f32[6,2,3], f32[3,4], f32[4,4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  h = f32[2,4] get-tuple-element(p), index=1
  ys = f32[6,2,4] get-tuple-element(p), index=2
  xs = f32[6,2,3] get-tuple-element(p), index=3
  wx = f32[3,4] get-tuple-element(p), index=4
  wh = f32[4,4] get-tuple-element(p), index=5
  z = s32[] constant(0)
  xd = f32[1,2,3] dynamic-slice(xs, i, z, z), dynamic_slice_sizes={1,2,3}
  x = f32[2,3] reshape(xd)
  a = f32[2,4] dot(x, wx), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b = f32[2,4] dot(h, wh), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[2,4] add(a, b)
  t = f32[2,4] tanh(s)
  tr = f32[1,2,4] reshape(t)
  u = f32[6,2,4] dynamic-update-slice(ys, tr, i, z, z)
  ROOT r = (s32[], f32[2,4], f32[6,2,4], f32[6,2,3], f32[3,4], f32[4,4]) tuple(next, t, u, xs, wx, wh)
}
cond {
  p = (s32[], f32[2,4], f32[6,2,4], f32[6,2,3], f32[3,4], f32[4,4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(6)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  xs = f32[6,2,3] parameter(0)
  wx = f32[3,4] parameter(1)
  wh = f32[4,4] parameter(2)
  h0 = f32[2,4] parameter(3)
  z = s32[] constant(0)
  c = f32[] constant(0)
  ys = f32[6,2,4] broadcast(c), dimensions={}
  init = (s32[], f32[2,4], f32[6,2,4], f32[6,2,3], f32[3,4], f32[4,4]) tuple(z, h0, ys, xs, wx, wh)
  w = (s32[], f32[2,4], f32[6,2,4], f32[6,2,3], f32[3,4], f32[4,4]) while(init), condition=cond, body=body
  ROOT y = f32[6,2,4] get-tuple-element(w), index=2
}
"#;

fn dots(m: &Module, comp: &str) -> Vec<String> {
    let c = m.computation(m.find_computation(comp).unwrap());
    c.ids().filter(|&i| c.get(i).opcode == Opcode::Dot).map(|i| format!("{} {}", c.get(i).name, c.get(i).shape)).collect()
}

#[test]
fn the_input_projection_of_a_scan_is_one_dot_before_the_loop() {
    let (changed, m) = crate::passes::test_util::run_verified(RNN, run);
    assert!(changed);
    // The body keeps only the recurrent dot; the entry computes all six steps' x_t @ wx.
    assert_eq!(dots(&m, "body"), vec!["b f32[2,4]".to_string()], "{}", print_module(&m));
    let entry = dots(&m, "e");
    assert_eq!(entry.len(), 1, "{entry:?}");
    assert!(entry[0].starts_with("a.projected") && entry[0].ends_with("f32[6,2,4]{2,1,0}"), "{entry:?}");
    // The body reads its step's rows at the counter.
    let body = m.computation(m.find_computation("body").unwrap());
    let step = body.get(body.find("a.step").unwrap());
    assert_eq!(step.opcode, Opcode::DynamicSlice);
    assert_eq!(step.attrs.slice_sizes, Some(vec![1, 2, 4]));
    assert_eq!(body.get(step.operands[1]).name, "i");
    // Nothing more to project.
    let mut again = m.clone();
    assert!(!run(&mut again).unwrap());
}

#[test]
fn dots_that_do_not_pay_or_do_not_qualify_stay() {
    let cases = [
        // Fewer steps than rows: the hoisted dot would compute rows nobody reads.
        RNN.replace("n = s32[] constant(6)", "n = s32[] constant(5)"),
        // The other operand is computed in the body, not a state element passed through.
        RNN.replace("a = f32[2,4] dot(x, wx)", "hx = f32[3,4] broadcast(h), dimensions={}\n  a = f32[2,4] dot(x, hx)")
            .replace("broadcast(h), dimensions={}", "slice(wh), slice={[0:3], [0:4]}")
            .replace("hx = f32[3,4] slice(wh)", "hx0 = f32[4,4] add(wh, wh)\n  hx = f32[3,4] slice(hx0)"),
        // The slice is of the stack the loop writes, not of an invariant input.
        RNN.replace("xd = f32[1,2,3] dynamic-slice(xs, i, z, z), dynamic_slice_sizes={1,2,3}", "yd = f32[1,2,4] dynamic-slice(ys, i, z, z), dynamic_slice_sizes={1,2,4}\n  xd = f32[1,2,3] slice(yd), slice={[0:1], [0:2], [0:3]}"),
        // The loop's trip count is unknown (the bound is a state element).
        RNN.replace("n = s32[] constant(6)", "n = s32[] get-tuple-element(p), index=0"),
    ];
    for text in cases {
        let (changed, m) = crate::passes::test_util::run_verified(&text, run);
        assert!(!changed, "{}", print_module(&m));
    }
}

#[test]
fn a_hoisted_result_beyond_the_bound_stays_in_the_loop() {
    // 6 steps of a 2x3 by 3x2M product: 96 MiB hoisted, over MAX_HOISTED_BYTES.
    let text = RNN.replace("f32[3,4]", "f32[3,2097152]").replace("a = f32[2,4] dot(x, wx)", "a0 = f32[2,2097152] dot(x, wx)")
        .replace("rhs_contracting_dims={0}\n  b =", "rhs_contracting_dims={0}\n  a = f32[2,4] slice(a0), slice={[0:2], [0:4]}\n  b =");
    let (changed, m) = crate::passes::test_util::run_verified(&text, run);
    assert!(!changed, "{}", print_module(&m));
    // At 2x3 by 3x512K (24 MiB) it is projected.
    let text = text.replace("2097152", "524288");
    let (changed, _) = crate::passes::test_util::run_verified(&text, run);
    assert!(changed);
}

#[test]
fn a_slice_of_an_inner_dimension_on_the_right_lands_after_the_left_free_dimensions() {
    // acc += w @ xs[:, t', :] with t' = 4 - i (a reverse scan), xs f32[3,5,2]: the hoisted dot
    // is f32[4,5,2] and the step slices its dimension 1.
    let text = r#"HloModule m
body {
  p = (s32[], f32[4,2], f32[3,5,2], f32[4,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  next = s32[] add(i, one)
  acc = f32[4,2] get-tuple-element(p), index=1
  xs = f32[3,5,2] get-tuple-element(p), index=2
  w = f32[4,3] get-tuple-element(p), index=3
  four = s32[] constant(4)
  t = s32[] subtract(four, i)
  z = s32[] constant(0)
  xd = f32[3,1,2] dynamic-slice(xs, z, t, z), dynamic_slice_sizes={3,1,2}
  x = f32[3,2] reshape(xd)
  d = f32[4,2] dot(w, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  a = f32[4,2] add(acc, d)
  ROOT r = (s32[], f32[4,2], f32[3,5,2], f32[4,3]) tuple(next, a, xs, w)
}
cond {
  p = (s32[], f32[4,2], f32[3,5,2], f32[4,3]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
ENTRY e {
  xs = f32[3,5,2] parameter(0)
  w = f32[4,3] parameter(1)
  z = s32[] constant(0)
  c = f32[] constant(0)
  a0 = f32[4,2] broadcast(c), dimensions={}
  init = (s32[], f32[4,2], f32[3,5,2], f32[4,3]) tuple(z, a0, xs, w)
  l = (s32[], f32[4,2], f32[3,5,2], f32[4,3]) while(init), condition=cond, body=body
  ROOT y = f32[4,2] get-tuple-element(l), index=1
}
"#;
    let (changed, m) = crate::passes::test_util::run_verified(text, run);
    assert!(changed);
    let entry = dots(&m, "e");
    assert!(entry.len() == 1 && entry[0].ends_with("f32[4,5,2]{2,1,0}"), "{entry:?}");
    let body = m.computation(m.find_computation("body").unwrap());
    let step = body.get(body.find("d.step").unwrap());
    assert_eq!(step.attrs.slice_sizes, Some(vec![4, 1, 2]));
    assert_eq!(body.get(step.operands[2]).name, "t");
}

#[test]
fn a_loop_licm_hoisted_from_before_keeps_unique_names() {
    // licm hoists `wx * 0.25` first (making the loop's init `w.licm.init`); projecting the dot
    // of it hoists from the same loop again, and every name stays unique (the verifier checks).
    let text = RNN
        .replace("a = f32[2,4] dot(x, wx)", "q = f32[] constant(0.25)\n  qb = f32[3,4] broadcast(q), dimensions={}\n  wq = f32[3,4] multiply(wx, qb)\n  a = f32[2,4] dot(x, wq)");
    fn both(m: &mut Module) -> Result<bool> {
        let licm = crate::passes::while_licm::while_licm(m)?;
        Ok(run(m)? && licm)
    }
    let (changed, m) = crate::passes::test_util::run_verified(&text, both);
    assert!(changed);
    assert_eq!(dots(&m, "e").len(), 1, "{}", print_module(&m));
}

#[test]
fn a_step_of_one_row_is_projected_too() {
    // Batch 1: each step's x_t @ wx is one row, a vector-matrix product; all six rows are one
    // dot before the loop all the same.
    let mut text = RNN.to_string();
    for (two, one) in [("f32[6,2,", "f32[6,1,"), ("f32[1,2,", "f32[1,1,"), ("{1,2,3}", "{1,1,3}"), ("f32[2,", "f32[1,")] {
        text = text.replace(two, one);
    }
    let (changed, m) = crate::passes::test_util::run_verified(&text, run);
    assert!(changed, "{}", print_module(&m));
    assert_eq!(dots(&m, "body"), vec!["b f32[1,4]".to_string()], "{}", print_module(&m));
    let entry = dots(&m, "e");
    assert!(entry.len() == 1 && entry[0].ends_with("f32[6,1,4]{2,1,0}"), "{entry:?}");
}
