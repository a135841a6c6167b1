//! Data movement: broadcast, reshape, transpose, slice, concatenate, pad, reverse, iota,
//! copy, dynamic-slice, dynamic-update-slice, gather and scatter.

use super::types::list;
use super::{Comp, Gen, Value};
use hlojit_runtime::ElementType as T;
use rand::seq::SliceRandom;
use rand::Rng;

pub fn any(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    match g.rng.gen_range(0..13) {
        0 => broadcast(g, c),
        1 => reshape(g, c),
        2 => transpose(g, c),
        3 => slice(g, c),
        4 => concatenate(g, c),
        5 => pad(g, c),
        6 => reverse(g, c),
        7 => iota(g, c),
        8 => copy(g, c),
        9 => dynamic_slice(g, c),
        10 => dynamic_update_slice(g, c),
        11 => gather(g, c),
        _ => scatter(g, c),
    }
}

fn small_dim(g: &mut Gen) -> i64 {
    *[1, 2, 3, 4, 5].choose(&mut g.rng).unwrap()
}

fn broadcast(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let v = g.value_where(c, |v| v.dims.len() <= 3)?;
    let extra = g.rng.gen_range(0..=(4 - v.dims.len()).min(2));
    let rank = v.dims.len() + extra;
    // Operand dims go to increasing output positions.
    let mut pos: Vec<usize> = (0..rank).collect();
    pos.shuffle(&mut g.rng);
    let mut keep: Vec<usize> = pos[..v.dims.len()].to_vec();
    keep.sort();
    let mut out = vec![0i64; rank];
    for (i, &p) in keep.iter().enumerate() {
        out[p] = v.dims[i];
    }
    for d in out.iter_mut() {
        if *d == 0 {
            *d = small_dim(g);
        }
    }
    let k: Vec<i64> = keep.iter().map(|&x| x as i64).collect();
    Some(c.emit(&mut g.rng, v.ty, &out, &format!("broadcast({}), dimensions={{{}}}", v.name, list(&k)), v.approx))
}

/// Splits `n` into up to four random factors.
fn factor(g: &mut Gen, mut n: i64) -> Vec<i64> {
    let mut dims = Vec::new();
    while n > 1 && dims.len() < 3 {
        let divs: Vec<i64> = (2..=n).filter(|d| n % d == 0).collect();
        let d = *divs.choose(&mut g.rng).unwrap();
        dims.push(d);
        n /= d;
        if g.rng.gen_bool(0.3) {
            break;
        }
    }
    if n > 1 {
        dims.push(n);
    }
    if g.rng.gen_bool(0.2) {
        let at = g.rng.gen_range(0..=dims.len());
        dims.insert(at, 1);
    }
    dims
}

fn reshape(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let v = g.any_value(c)?;
    let dims = factor(g, v.count());
    Some(c.emit(&mut g.rng, v.ty, &dims, &format!("reshape({})", v.name), v.approx))
}

fn transpose(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let v = g.value_where(c, |v| v.dims.len() >= 2)?;
    let mut p: Vec<usize> = (0..v.dims.len()).collect();
    p.shuffle(&mut g.rng);
    let dims: Vec<i64> = p.iter().map(|&i| v.dims[i]).collect();
    let pl: Vec<i64> = p.iter().map(|&x| x as i64).collect();
    Some(c.emit(&mut g.rng, v.ty, &dims, &format!("transpose({}), dimensions={{{}}}", v.name, list(&pl)), v.approx))
}

fn slice(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let v = g.value_where(c, |v| !v.dims.is_empty())?;
    let mut parts = Vec::new();
    let mut dims = Vec::new();
    for &d in &v.dims {
        let start = g.rng.gen_range(0..d);
        let limit = g.rng.gen_range(start + 1..=d);
        let stride = g.rng.gen_range(1..=3);
        dims.push((limit - start + stride - 1) / stride);
        parts.push(if stride == 1 { format!("[{start}:{limit}]") } else { format!("[{start}:{limit}:{stride}]") });
    }
    Some(c.emit(&mut g.rng, v.ty, &dims, &format!("slice({}), slice={{{}}}", v.name, parts.join(", ")), v.approx))
}

fn concatenate(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let a = g.value_where(c, |v| !v.dims.is_empty())?;
    let dim = g.rng.gen_range(0..a.dims.len());
    let n = g.rng.gen_range(1..=2);
    let mut names = vec![a.name.clone()];
    let mut out = a.dims.clone();
    let mut approx = a.approx;
    for _ in 0..n {
        let mut d = a.dims.clone();
        d[dim] = small_dim(g);
        let b = g.coerce(c, a.ty, &d, false);
        out[dim] += d[dim];
        approx |= b.approx;
        names.push(b.name);
    }
    names.shuffle(&mut g.rng);
    Some(c.emit(&mut g.rng, a.ty, &out, &format!("concatenate({}), dimensions={{{dim}}}", names.join(", ")), approx))
}

fn pad(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let v = g.value_where(c, |v| !v.dims.is_empty())?;
    let pv = g.scalar_of(c, v.ty, false);
    let mut cfg = Vec::new();
    let mut dims = Vec::new();
    for &d in &v.dims {
        let interior = if g.rng.gen_bool(0.3) { g.rng.gen_range(1..=2) } else { 0 };
        let full = d + (d - 1) * interior;
        let lo = g.rng.gen_range(-(full - 1).min(2)..=2);
        let hi = g.rng.gen_range(-(full - 1 + lo.min(0)).min(2)..=2);
        dims.push(full + lo + hi);
        cfg.push(if interior > 0 { format!("{lo}_{hi}_{interior}") } else { format!("{lo}_{hi}") });
    }
    if dims.iter().any(|&d| d <= 0) {
        return None;
    }
    let approx = v.approx || pv.approx;
    Some(c.emit(&mut g.rng, v.ty, &dims, &format!("pad({}, {}), padding={}", v.name, pv.name, cfg.join("x")), approx))
}

fn reverse(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let v = g.value_where(c, |v| !v.dims.is_empty())?;
    let ds: Vec<i64> = (0..v.dims.len() as i64).filter(|_| g.rng.gen_bool(0.5)).collect();
    Some(c.emit(&mut g.rng, v.ty, &v.dims.clone(), &format!("reverse({}), dimensions={{{}}}", v.name, list(&ds)), v.approx))
}

fn iota(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let mut dims = super::types::pick_dims(&mut g.rng);
    if dims.is_empty() {
        dims.push(small_dim(g));
    }
    let t = *[T::S32, T::F32, T::U8, T::S64, T::BF16, T::F64].choose(&mut g.rng).unwrap();
    let d = g.rng.gen_range(0..dims.len());
    Some(c.emit(&mut g.rng, t, &dims, &format!("iota(), iota_dimension={d}"), false))
}

fn copy(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let v = g.any_value(c)?;
    Some(c.emit(&mut g.rng, v.ty, &v.dims.clone(), &format!("copy({})", v.name), v.approx))
}

/// A scalar s32/s64/u32 start index: exact, possibly out of bounds (XLA clamps).
fn index(g: &mut Gen, c: &mut Comp, bound: i64) -> Value {
    let t = *[T::S32, T::S32, T::S64, T::U32].choose(&mut g.rng).unwrap();
    if g.rng.gen_bool(0.5) {
        let k = g.rng.gen_range(-1..=bound + 1);
        return c.constant(&mut g.rng, t, k);
    }
    g.scalar_of(c, t, true)
}

/// XLA composes a dynamic slice or gather of a dynamic slice into one dynamic slice of the whole
/// operand and clamps the sum of the starts once, with the inner slice's bound wrong (program
/// 10700019: `gather(dynamic-slice(ys, 25) of size 5 from 7, -1)` reads ys[5] in XLA; clamped as
/// specified, which XLA's gather and dynamic slice each do alone, it is ys[2]). Neither reads
/// a dynamic slice here.
fn not_sliced(c: &Comp) -> impl Fn(&Value) -> bool {
    let sliced = c.dynamic_slices.clone();
    move |v| !sliced.contains(&v.name)
}

fn dynamic_slice(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let not_sliced = not_sliced(c);
    let v = g.value_where(c, |v| !v.dims.is_empty() && not_sliced(v))?;
    let sizes: Vec<i64> = v.dims.iter().map(|&d| g.rng.gen_range(1..=d)).collect();
    let t = if g.rng.gen_bool(0.5) { T::S32 } else { T::S64 };
    let mut names = vec![v.name.clone()];
    for &d in &v.dims {
        let i = index(g, c, d);
        let i = if i.ty == t { i } else { c.emit(&mut g.rng, t, &[], &format!("convert({})", i.name), false) };
        names.push(i.name);
    }
    let op = format!("dynamic-slice({}), dynamic_slice_sizes={{{}}}", names.join(", "), list(&sizes));
    Some(c.emit(&mut g.rng, v.ty, &sizes, &op, v.approx))
}

fn dynamic_update_slice(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let v = g.value_where(c, |v| !v.dims.is_empty())?;
    let sizes: Vec<i64> = v.dims.iter().map(|&d| g.rng.gen_range(1..=d)).collect();
    let u = g.coerce(c, v.ty, &sizes, false);
    let mut names = vec![v.name.clone(), u.name.clone()];
    for &d in &v.dims {
        let i = index(g, c, d);
        let i = if i.ty == T::S32 { i } else { c.emit(&mut g.rng, T::S32, &[], &format!("convert({})", i.name), false) };
        names.push(i.name);
    }
    let approx = v.approx || u.approx;
    Some(c.emit(&mut g.rng, v.ty, &v.dims.clone(), &format!("dynamic-update-slice({})", names.join(", ")), approx))
}

/// Row gather: operand [N, rest...], indices s32[K, 1] (clamped when out of range).
fn gather(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let not_sliced = not_sliced(c);
    let v = g.value_where(c, |v| !v.dims.is_empty() && v.dims.len() <= 3 && not_sliced(v))?;
    let k = small_dim(g);
    let idx = indices(g, c, k, v.dims[0]);
    let rank = v.dims.len() as i64;
    let offset: Vec<i64> = (1..rank).collect();
    let mut slice_sizes = v.dims.clone();
    slice_sizes[0] = 1;
    let mut out = vec![k];
    out.extend_from_slice(&v.dims[1..]);
    let op = format!(
        "gather({}, {}), offset_dims={{{}}}, collapsed_slice_dims={{0}}, start_index_map={{0}}, index_vector_dim=1, slice_sizes={{{}}}",
        v.name,
        idx.name,
        list(&offset),
        list(&slice_sizes)
    );
    Some(c.emit(&mut g.rng, v.ty, &out, &op, v.approx))
}

/// indices s32[k, 1] in [-1, bound] (out-of-range ones exercise clamping / skipping).
fn indices(g: &mut Gen, c: &mut Comp, k: i64, bound: i64) -> Value {
    let vals: Vec<String> = (0..k).map(|_| format!("{{{}}}", g.rng.gen_range(-1..=bound))).collect();
    c.emit(&mut g.rng, T::S32, &[k, 1], &format!("constant({{{}}})", vals.join(", ")), false)
}

/// Row scatter with a combiner (add, max, or replace when indices are unique).
fn scatter(g: &mut Gen, c: &mut Comp) -> Option<Value> {
    let v = g.value_where(c, |v| !v.dims.is_empty() && v.dims.len() <= 3 && !v.ty.is_complex())?;
    let k = small_dim(g);
    let idx = indices(g, c, k, v.dims[0]);
    let mut ud = vec![k];
    ud.extend_from_slice(&v.dims[1..]);
    let u = g.coerce(c, v.ty, &ud, false);
    // Duplicate indices make the order of combination visible: only order-independent
    // combiners (max/min, add on integers) may see them.
    let kinds: &[&str] = if v.ty == T::Pred { &["or"] } else if v.ty.is_float() { &["maximum", "minimum"] } else { &["add", "maximum"] };
    let kind = *kinds.choose(&mut g.rng).unwrap();
    let red = g.reducer(v.ty, &[kind]);
    let rank = v.dims.len() as i64;
    let upd: Vec<i64> = (1..rank).collect();
    let op = format!(
        "scatter({}, {}, {}), update_window_dims={{{}}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply={red}",
        v.name,
        idx.name,
        u.name,
        list(&upd)
    );
    let approx = v.approx || u.approx;
    Some(c.emit(&mut g.rng, v.ty, &v.dims.clone(), &op, approx))
}
