//! Control flow: call, conditional (pred and indexed branches), while loops with a
//! counter and scans (JAX's `lax.scan`), each body a small random computation of its own.

use super::types::{pick_layout, shape_text};
use super::{Comp, Gen, Value};
use hlojit_runtime::ElementType as T;
use rand::Rng;

pub fn any(g: &mut Gen, c: &mut Comp, depth: u32) -> Option<Value> {
    match g.rng.gen_range(0..4) {
        0 => call(g, c, depth),
        1 => conditional(g, c, depth),
        2 => while_loop(g, c, depth),
        _ => scan(g, c, depth),
    }
}

/// A computation taking `params` and returning a value of `out` type/dims.
fn body(g: &mut Gen, name: &str, params: &[(T, Vec<i64>)], out: (T, &[i64]), depth: u32) -> (String, bool) {
    let mut b = Comp::new(false);
    for (t, d) in params {
        b.parameter(&mut g.rng, *t, d);
    }
    for _ in 0..g.rng.gen_range(1..=4) {
        g.step(&mut b, depth);
    }
    let r = g.coerce(&mut b, out.0, out.1, false);
    let approx = b.values.iter().any(|v| v.approx);
    (b.finish(name, &[r], false), approx)
}

fn call(g: &mut Gen, c: &mut Comp, depth: u32) -> Option<Value> {
    let a = g.any_value(c)?;
    let out_t = if g.rng.gen_bool(0.5) { a.ty } else { super::types::pick_type(&mut g.rng) };
    let name = g.comp_name("callee");
    let (text, approx) = body(g, &name, &[(a.ty, a.dims.clone())], (out_t, &a.dims), depth);
    g.add_computation(text);
    Some(c.emit(&mut g.rng, out_t, &a.dims.clone(), &format!("call({}), to_apply={name}", a.name), approx || a.approx))
}

fn conditional(g: &mut Gen, c: &mut Comp, depth: u32) -> Option<Value> {
    let a = g.any_value(c)?;
    let indexed = g.rng.gen_bool(0.5);
    let sel = if indexed { g.scalar_of(c, T::S32, true) } else { g.scalar_of(c, T::Pred, true) };
    let n = if indexed { g.rng.gen_range(1..=3) } else { 2 };
    let mut names = Vec::new();
    let mut approx = a.approx;
    for _ in 0..n {
        let name = g.comp_name("branch");
        let (text, ap) = body(g, &name, &[(a.ty, a.dims.clone())], (a.ty, &a.dims), depth);
        approx |= ap;
        g.add_computation(text);
        names.push(name);
    }
    let ops = vec![a.name.clone(); n];
    let op = if indexed {
        format!("conditional({}, {}), branch_computations={{{}}}", sel.name, ops.join(", "), names.join(", "))
    } else {
        format!("conditional({}, {}, {}), true_computation={}, false_computation={}", sel.name, a.name, a.name, names[0], names[1])
    };
    Some(c.emit(&mut g.rng, a.ty, &a.dims.clone(), &op, approx))
}

/// while (i < trips) { i += 1; x = body(x) } over a tuple (s32[], x).
fn while_loop(g: &mut Gen, c: &mut Comp, depth: u32) -> Option<Value> {
    let a = g.any_value(c)?;
    let trips = g.rng.gen_range(0..=5);
    let xs = shape_text(a.ty, &a.dims, None);
    let st = format!("(s32[], {xs})");
    let step_name = g.comp_name("step");
    let (step_text, approx) = body(g, &step_name, &[(a.ty, a.dims.clone())], (a.ty, &a.dims), depth);
    g.add_computation(step_text);
    // XLA's f16 tan inside a while body differs by an ulp from its own kernels' (tan(-1.529) is
    // -24.1 there, -24.08 in a kernel), and a loop of approximate f16 steps magnifies such
    // differences past any tolerance (programs 9800622 and 10301082: -7.746 against -5.176 after
    // five tans): half-precision loops of approximate steps run at most once.
    let trips = if approx && matches!(a.ty, T::F16 | T::BF16) { trips.min(1) } else { trips };
    let body_name = g.comp_name("body");
    g.add_computation(format!(
        "{body_name} {{\n  p = {st} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  x = {xs} get-tuple-element(p), index=1\n  one = s32[] constant(1)\n  j = s32[] add(i, one)\n  y = {xs} call(x), to_apply={step_name}\n  ROOT t = {st} tuple(j, y)\n}}\n"
    ));
    let cond_name = g.comp_name("cond");
    g.add_computation(format!(
        "{cond_name} {{\n  p = {st} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  n = s32[] constant({trips})\n  ROOT lt = pred[] compare(i, n), direction=LT\n}}\n"
    ));
    let zero = c.constant(&mut g.rng, T::S32, 0);
    let init = c.emit_tuple_op(&[(T::S32, vec![]), (a.ty, a.dims.clone())], &format!("tuple({}, {})", zero.name, a.name));
    let w = c.emit_tuple_op(
        &[(T::S32, vec![]), (a.ty, a.dims.clone())],
        &format!("while({init}), condition={cond_name}, body={body_name}"),
    );
    let approx = a.approx || (approx && trips > 0);
    Some(c.emit(&mut g.rng, a.ty, &a.dims.clone(), &format!("get-tuple-element({w}), index=1"), approx))
}

/// A scan as JAX lowers `lax.scan`: a while over (i, xs, carry, ys) whose body slices row i
/// of xs with dynamic-slice, updates the carry through a random step computation and writes
/// it into row i of ys with dynamic-update-slice. Slices inside the body get random layouts
/// (hints before layout assignment, which must reconcile them with the loop state's).
pub fn scan(g: &mut Gen, c: &mut Comp, depth: u32) -> Option<Value> {
    let xs = g.value_where(c, |v| !v.dims.is_empty())?;
    let t = xs.ty;
    let trips = xs.dims[0];
    let row: Vec<i64> = xs.dims[1..].to_vec();
    let mut one_row = vec![1];
    one_row.extend_from_slice(&row);
    let carry0 = g.coerce(c, t, &row, false);
    let ys0 = g.coerce(c, t, &xs.dims, false);
    let step_name = g.comp_name("scan_step");
    let (step_text, step_approx) = body(g, &step_name, &[(t, row.clone()), (t, row.clone())], (t, &row), depth);
    g.add_computation(step_text);

    let xs_s = shape_text(t, &xs.dims, None);
    let row_s = shape_text(t, &row, None);
    let st = format!("(s32[], {xs_s}, {row_s}, {xs_s})");
    let hinted = |g: &mut Gen, dims: &[i64]| shape_text(t, dims, pick_layout(&mut g.rng, dims.len()).as_deref());
    let zeros = vec!["z"; row.len()].join(", ");
    let starts = if row.is_empty() { String::new() } else { format!(", {zeros}") };
    let sizes: Vec<String> = one_row.iter().map(|d| d.to_string()).collect();
    let body_name = g.comp_name("scan_body");
    let (slice_s, x_s, new_s, new_row_s) = (hinted(g, &one_row), hinted(g, &row), hinted(g, &row), hinted(g, &one_row));
    let ys_s = hinted(g, &xs.dims);
    g.add_computation(format!(
        "{body_name} {{
  p = {st} parameter(0)
  i = s32[] get-tuple-element(p), index=0
  xs = {xs_s} get-tuple-element(p), index=1
  carry = {row_s} get-tuple-element(p), index=2
  ys = {xs_s} get-tuple-element(p), index=3
  z = s32[] constant(0)
  slice = {slice_s} dynamic-slice(xs, i{starts}), dynamic_slice_sizes={{{}}}
  x = {x_s} reshape(slice)
  new = {new_s} call(x, carry), to_apply={step_name}
  new_row = {new_row_s} reshape(new)
  ys2 = {ys_s} dynamic-update-slice(ys, new_row, i{starts})
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT t = {st} tuple(j, xs, new, ys2)
}}
",
        sizes.join(",")
    ));
    // As in `while_loop`: half-precision scans of approximate steps run at most once (program
    // 11101354: four f16 tans of the carry, 70.7 in XLA against 75.9 after an ulp near a pole).
    let trips = if step_approx && matches!(t, T::F16 | T::BF16) { trips.min(1) } else { trips };
    let cond_name = g.comp_name("scan_cond");
    g.add_computation(format!(
        "{cond_name} {{\n  p = {st} parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  n = s32[] constant({trips})\n  ROOT lt = pred[] compare(i, n), direction=LT\n}}\n"
    ));
    let zero = c.constant(&mut g.rng, T::S32, 0);
    let shapes = [(T::S32, vec![]), (t, xs.dims.clone()), (t, row.clone()), (t, xs.dims.clone())];
    let init = c.emit_tuple_op(&shapes, &format!("tuple({}, {}, {}, {})", zero.name, xs.name, carry0.name, ys0.name));
    let w = c.emit_tuple_op(&shapes, &format!("while({init}), condition={cond_name}, body={body_name}"));
    let approx = xs.approx || carry0.approx || ys0.approx || step_approx;
    // The final carry or the stacked carries.
    if g.rng.gen_bool(0.3) {
        Some(c.emit(&mut g.rng, t, &row, &format!("get-tuple-element({w}), index=2"), approx))
    } else {
        Some(c.emit(&mut g.rng, t, &xs.dims.clone(), &format!("get-tuple-element({w}), index=3"), approx))
    }
}
