//! Reductions and the heavy ops: reduce (one or two operands), reduce-window, dot, sort.

use super::types::{list, reducer_for, shape_text};
use super::{Comp, Gen, Value};
use hlojit_runtime::ElementType as T;
use rand::seq::SliceRandom;
use rand::Rng;

pub fn reduce(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let v = g.value_where(c, |v| !v.dims.is_empty())?;
    let dims: Vec<i64> = (0..v.dims.len() as i64).filter(|_| g.rng.gen_bool(0.5)).collect();
    let out: Vec<i64> = v.dims.iter().enumerate().filter(|(i, _)| !dims.contains(&(*i as i64))).map(|(_, &d)| d).collect();
    let (kind, init) = reducer_for(&mut g.rng, v.ty);
    let red = g.reducer(v.ty, &[kind]);
    let init = c.emit(&mut g.rng, v.ty, &[], &format!("constant({init})"), false);
    // Summation order is XLA's choice: float sums and products are approx.
    let approx = v.approx || (matches!(kind, "add" | "multiply") && !dims.is_empty());
    let op = format!("reduce({}, {}), dimensions={{{}}}, to_apply={red}", v.name, init.name, list(&dims));
    Some(c.emit(&mut g.rng, v.ty, &out, &op, approx))
}

pub fn reduce_window(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let v = g.value_where(c, |v| !v.dims.is_empty() && !v.ty.is_complex())?;
    let (kind, init) = reducer_for(&mut g.rng, v.ty);
    let red = g.reducer(v.ty, &[kind]);
    let init = c.emit(&mut g.rng, v.ty, &[], &format!("constant({init})"), false);
    let (mut size, mut stride, mut pad, mut out) = (vec![], vec![], vec![], vec![]);
    for &d in &v.dims {
        let lo = g.rng.gen_range(0..=1);
        let hi = g.rng.gen_range(0..=1);
        let padded = d + lo + hi;
        let s = g.rng.gen_range(1..=padded.min(3));
        let st = g.rng.gen_range(1..=2);
        size.push(s.to_string());
        stride.push(st.to_string());
        pad.push(format!("{lo}_{hi}"));
        out.push((padded - s) / st + 1);
    }
    let approx = v.approx || matches!(kind, "add" | "multiply");
    let op = format!(
        "reduce-window({}, {}), window={{size={} stride={} pad={}}}, to_apply={red}",
        v.name,
        init.name,
        size.join("x"),
        stride.join("x"),
        pad.join("x")
    );
    Some(c.emit(&mut g.rng, v.ty, &out, &op, approx))
}

/// dot with batch and contracting dimensions: [B..., M, K] x [B..., K, N] in shuffled order.
pub fn dot(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let t = *[T::F32, T::F32, T::F64, T::S32, T::BF16, T::F16, T::C64].choose(&mut g.rng).unwrap();
    let nb = g.rng.gen_range(0..=1);
    let b: Vec<i64> = (0..nb).map(|_| g.rng.gen_range(1..=3)).collect();
    let m = g.rng.gen_range(1..=6);
    let k = g.rng.gen_range(1..=9);
    let n = g.rng.gen_range(1..=6);
    let has_m = g.rng.gen_bool(0.8);
    let has_n = g.rng.gen_bool(0.8);
    // lhs dims as roles, then shuffled.
    let mut lhs_roles: Vec<(char, i64)> = b.iter().map(|&d| ('b', d)).collect();
    if has_m {
        lhs_roles.push(('m', m));
    }
    lhs_roles.push(('k', k));
    let mut rhs_roles: Vec<(char, i64)> = b.iter().map(|&d| ('b', d)).collect();
    rhs_roles.push(('k', k));
    if has_n {
        rhs_roles.push(('n', n));
    }
    // Keep batch dims in the same relative order on both sides (they pair by position).
    let shuffle = |roles: &mut Vec<(char, i64)>, rng: &mut super::Rng8| {
        let batch: Vec<(char, i64)> = roles.iter().copied().filter(|r| r.0 == 'b').collect();
        roles.shuffle(rng);
        let mut bi = batch.into_iter();
        for r in roles.iter_mut() {
            if r.0 == 'b' {
                *r = bi.next().unwrap();
            }
        }
    };
    shuffle(&mut lhs_roles, &mut g.rng);
    shuffle(&mut rhs_roles, &mut g.rng);
    let ld: Vec<i64> = lhs_roles.iter().map(|r| r.1).collect();
    let rd: Vec<i64> = rhs_roles.iter().map(|r| r.1).collect();
    // Complex operands are fresh parameters, whose inputs are finite and small: a complex
    // dot of converted values can overflow or meet infinities, and where the sum of such
    // products turns into NaN depends on how the products are split (XLA:CPU gives a NaN
    // imaginary part where the definition keeps 0, program 5001848) — XLA's own choice.
    let (lhs, rhs) = if t == T::C64 {
        if !c.may_add_params || c.params.len() + 2 > 6 {
            return None;
        }
        (c.parameter(&mut g.rng, t, &ld), c.parameter(&mut g.rng, t, &rd))
    } else {
        (g.coerce(c, t, &ld, false), g.coerce(c, t, &rd, false))
    };
    let pos = |roles: &[(char, i64)], ch: char| -> Vec<i64> {
        roles.iter().enumerate().filter(|(_, r)| r.0 == ch).map(|(i, _)| i as i64).collect()
    };
    let mut out = b.clone();
    if has_m {
        out.push(m);
    }
    if has_n {
        out.push(n);
    }
    let mut op = format!("dot({}, {})", lhs.name, rhs.name);
    if nb > 0 {
        op += &format!(", lhs_batch_dims={{{}}}, rhs_batch_dims={{{}}}", list(&pos(&lhs_roles, 'b')), list(&pos(&rhs_roles, 'b')));
    }
    op += &format!(
        ", lhs_contracting_dims={{{}}}, rhs_contracting_dims={{{}}}",
        list(&pos(&lhs_roles, 'k')),
        list(&pos(&rhs_roles, 'k'))
    );
    Some(c.emit(&mut g.rng, t, &out, &op, true))
}

/// A stable sort along one dimension: one key operand, or keys and a payload.
pub fn sort(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let key = g.value_where(c, |v| !v.dims.is_empty() && !v.ty.is_complex() && (!v.approx || !v.ty.is_float()))?;
    let dim = g.rng.gen_range(0..key.dims.len());
    let payload = if g.rng.gen_bool(0.5) {
        let t = super::types::pick_type(&mut g.rng);
        Some(g.coerce(c, t, &key.dims, false))
    } else {
        None
    };
    let name = g.comp_name("cmp");
    let ks = shape_text(key.ty, &[], None);
    let dir = if g.rng.gen_bool(0.5) { "LT" } else { "GT" };
    let ty = if key.ty.is_float() { ", type=TOTALORDER" } else { "" };
    let mut params = format!("  a = {ks} parameter(0)\n  b = {ks} parameter(1)\n");
    if let Some(p) = &payload {
        let ps = shape_text(p.ty, &[], None);
        params += &format!("  c = {ps} parameter(2)\n  d = {ps} parameter(3)\n");
    }
    g.add_computation(format!("{name} {{\n{params}  ROOT r = pred[] compare(a, b), direction={dir}{ty}\n}}\n"));
    match payload {
        None => {
            let op = format!("sort({}), dimensions={{{dim}}}, is_stable=true, to_apply={name}", key.name);
            Some(c.emit(&mut g.rng, key.ty, &key.dims.clone(), &op, key.approx))
        }
        Some(p) => {
            let shapes = [(key.ty, key.dims.clone()), (p.ty, p.dims.clone())];
            let op = format!("sort({}, {}), dimensions={{{dim}}}, is_stable=true, to_apply={name}", key.name, p.name);
            let t = c.emit_tuple_op(&shapes, &op);
            let i = g.rng.gen_range(0..2);
            let (ty, approx) = if i == 0 { (key.ty, key.approx) } else { (p.ty, p.approx) };
            Some(c.emit(&mut g.rng, ty, &key.dims.clone(), &format!("get-tuple-element({t}), index={i}"), approx))
        }
    }
}

/// A variadic reduce as JAX lowers argmax/argmin: (value, index) pairs reduced with the
/// lexicographic order (value first, then the smaller index), which is a total order on
/// integers, so the result does not depend on the order of reduction. (Float keys are left
/// out: with NaN the comparator is not associative and the result is XLA's order's.)
pub fn arg_reduce(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let v = g.value_where(c, |v| !v.dims.is_empty() && v.ty.is_int())?;
    let dim = g.rng.gen_range(0..v.dims.len());
    let it = *[T::S32, T::S64, T::U32].choose(&mut g.rng).unwrap();
    let out: Vec<i64> = v.dims.iter().enumerate().filter(|(i, _)| *i != dim).map(|(_, &d)| d).collect();
    let (dir, init) = if g.rng.gen_bool(0.5) {
        ("GT", super::types::extreme(v.ty, false))
    } else {
        ("LT", super::types::extreme(v.ty, true))
    };
    let vs = shape_text(v.ty, &[], None);
    let is = shape_text(it, &[], None);
    let name = g.comp_name("argred");
    g.add_computation(format!(
        "{name} {{
  a = {vs} parameter(0)
  ai = {is} parameter(1)
  b = {vs} parameter(2)
  bi = {is} parameter(3)
  better = pred[] compare(a, b), direction={dir}
  same = pred[] compare(a, b), direction=EQ
  first = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(same, first)
  keep = pred[] or(better, tie)
  v = {vs} select(keep, a, b)
  i = {is} select(keep, ai, bi)
  ROOT r = ({vs}, {is}) tuple(v, i)
}}
"
    ));
    let iota = c.emit(&mut g.rng, it, &v.dims.clone(), &format!("iota(), iota_dimension={dim}"), false);
    let init_v = c.emit(&mut g.rng, v.ty, &[], &format!("constant({init})"), false);
    let init_i = c.constant(&mut g.rng, it, 0);
    let shapes = [(v.ty, out.clone()), (it, out.clone())];
    let r = c.emit_tuple_op(
        &shapes,
        &format!("reduce({}, {}, {}, {}), dimensions={{{dim}}}, to_apply={name}", v.name, iota.name, init_v.name, init_i.name),
    );
    let (ty, i) = if g.rng.gen_bool(0.7) { (it, 1) } else { (v.ty, 0) };
    Some(c.emit(&mut g.rng, ty, &out, &format!("get-tuple-element({r}), index={i}"), false))
}
