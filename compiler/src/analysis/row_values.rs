//! Values inside a loop fusion that can be computed once per row of its output.
//!
//! A loop kernel computes each output element from its operands' generators. When a reduce
//! inside the fusion is read only through broadcasts and elementwise ops, at an index that
//! depends on a few major output dimensions (a layernorm's mean and variance, a softmax's max
//! and sum, broadcast back along the row), every element of one row reads the same reduced
//! value: the kernel may compute it once at the start of the row and keep it in a register
//! instead of re-running the reduction per element. The same holds for what is computed from
//! those values before the broadcast (`rsqrt(var + eps)`). This analysis finds those values
//! and the index each one is read at; the row-fusion pass uses it to decide, codegen to emit
//! the row loop, so both apply the same rule.

use crate::hlo::{Computation, InstrId, Opcode};
use hlojit_runtime::Layout;
use std::collections::HashMap;

/// Where one dimension of a value's index comes from, given the index of the output element
/// the kernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DimSource {
    /// That dimension of the output index.
    Output(usize),
    /// Always 0 (a dimension of size 1).
    Zero,
    /// Anything else: a reduction's loop variable, a slice's offset, a gather's lookup.
    Other,
}

/// The values a loop kernel computes once per row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowValues {
    /// The output dimensions that index a row, the most major first (a prefix of the output
    /// layout's major-to-minor order); the kernel loops over the others inside each row.
    pub row_dims: Vec<usize>,
    /// The values, producers before their users, each with the source of every dimension of
    /// the index it is read at (only row dimensions and zeros): the reduces, and the values
    /// broadcast into the row.
    pub values: Vec<(InstrId, Vec<DimSource>)>,
    /// Values the kernel computes once per element of a row into a row-sized scratch and then
    /// reads back (see [`scratch_values`]): a softmax's `exp(x - max)`, which both the row's
    /// sum and the output need. Each with the position in `values` of the first row value
    /// that reads it (`values.len()`: only the loop over the row's elements does): the
    /// scratch is filled just before it.
    pub scratch: Vec<(InstrId, usize)>,
}

/// The values of `comp` (whose root, an array of dimensions `out_dims` in `layout`, is what
/// the kernel stores) that can be computed once per row, or `None` unless a reduction is
/// among them. The instructions for which `is_input` holds are read from memory, not
/// computed by the kernel.
pub fn row_values(comp: &Computation, out_dims: &[i64], layout: &Layout, is_input: &dyn Fn(InstrId) -> bool) -> Option<RowValues> {
    let root = comp.root_instruction();
    if !root.shape.is_array() || root.shape.dims() != out_dims || is_input(comp.root) {
        return None;
    }
    let sources = index_sources(comp, is_input);
    let users = comp.users();
    // (value, its index, whether it is a reduce)
    let mut candidates = Vec::new();
    for id in comp.post_order() {
        let inst = comp.get(id);
        let computed = !matches!(inst.opcode, Opcode::Parameter | Opcode::Constant | Opcode::Iota);
        if id == comp.root || is_input(id) || !computed || !inst.shape.is_array() {
            continue;
        }
        let is_reduce = inst.opcode == Opcode::Reduce;
        let broadcast = users[id.index()].iter().any(|&u| comp.get(u).opcode == Opcode::Broadcast);
        // Read at one index only, made of output dimensions: one value per row.
        let Some(Some(indices)) = sources.get(&id) else { continue };
        if let [src] = indices.as_slice() {
            if (is_reduce || broadcast) && src.iter().all(|s| matches!(s, DimSource::Output(_) | DimSource::Zero)) {
                candidates.push((id, src.clone(), is_reduce));
            }
        }
    }
    // The rows: the shortest prefix of the output's major-to-minor order that holds every
    // dimension a reduce is read at.
    let output_dims = |s: &[DimSource]| -> Vec<usize> { s.iter().filter_map(|d| if let DimSource::Output(o) = d { Some(*o) } else { None }).collect() };
    let used: Vec<usize> = candidates.iter().filter(|c| c.2).flat_map(|c| output_dims(&c.1)).collect();
    if !candidates.iter().any(|c| c.2) {
        return None;
    }
    let order: Vec<usize> = layout.major_to_minor().iter().map(|&d| d as usize).collect();
    let prefix = order.iter().rposition(|d| used.contains(d)).map_or(0, |i| i + 1);
    let row_dims = order[..prefix].to_vec();
    // A row must leave something to loop over: otherwise the reduces are plain per-element
    // values and the generic loop is the same thing.
    if row_dims.len() == order.len() {
        return None;
    }
    let values: Vec<(InstrId, Vec<DimSource>)> = candidates
        .into_iter()
        .filter(|(_, src, _)| output_dims(src).iter().all(|d| row_dims.contains(d)))
        .map(|(id, src, _)| (id, src))
        .collect();
    let scratch = scratch_values(comp, &sources, &values, &row_dims, out_dims, is_input);
    Some(RowValues { row_dims, values, scratch })
}

/// Bytes of one row of a scratch value at most: the row must stay in the core's L2 between
/// the loop that computes it and the loops that read it.
const MAX_SCRATCH_ROW_BYTES: i64 = 256 * 1024;

/// The values worth computing once per element into a row-sized scratch: arrays of the
/// output's dimensions, read only inside the current row (every row dimension of every index
/// they are read at is that output dimension), by a row value (a reduction over the row) and
/// by the loop over the row's elements, whose computation holds an expensive op (an `exp`).
/// Without the scratch each of those readers would compute it again: a softmax would compute
/// two exponentials per element. Storing a value and reading it back gives the same bits, so
/// results do not change. A value whose every user is itself such a value is left out: only
/// the outermost one needs to be stored.
fn scratch_values(
    comp: &Computation,
    sources: &HashMap<InstrId, Option<Vec<Vec<DimSource>>>>,
    values: &[(InstrId, Vec<DimSource>)],
    row_dims: &[usize],
    out_dims: &[i64],
    is_input: &dyn Fn(InstrId) -> bool,
) -> Vec<(InstrId, usize)> {
    let row_value = |id: InstrId| values.iter().any(|(v, _)| *v == id);
    let users = comp.users();
    // What each instruction is computed from, up to inputs and row values (which the kernel
    // binds as registers): whether an expensive op is among them, and which ones.
    let stops = |id: InstrId| is_input(id) || row_value(id);
    let reads_from = |from: InstrId, target: InstrId| -> bool {
        let mut stack = vec![from];
        let mut seen = std::collections::HashSet::new();
        while let Some(x) = stack.pop() {
            if x == target {
                return true;
            }
            if seen.insert(x) && (x == from || !stops(x)) {
                stack.extend(comp.get(x).operands.iter().copied());
            }
        }
        false
    };
    let expensive = |id: InstrId| -> bool {
        let mut stack = vec![id];
        let mut seen = std::collections::HashSet::new();
        while let Some(x) = stack.pop() {
            if !seen.insert(x) || stops(x) {
                continue;
            }
            let inst = comp.get(x);
            let floating = inst.shape.element_type().is_some_and(|t| t.is_floating());
            if inst.opcode.is_expensive(floating) {
                return true;
            }
            stack.extend(inst.operands.iter().copied());
        }
        false
    };
    let in_row = |src: &Vec<DimSource>| in_row(src, row_dims, out_dims);
    let mut chosen: Vec<InstrId> = Vec::new();
    for id in comp.post_order() {
        let inst = comp.get(id);
        let Some(array) = inst.shape.as_array() else { continue };
        if id == comp.root || stops(id) || matches!(inst.opcode, Opcode::Parameter | Opcode::Constant | Opcode::Iota) || array.dims != out_dims {
            continue;
        }
        let Some(Some(indices)) = sources.get(&id) else { continue };
        let row_bytes = out_dims.iter().enumerate().filter(|(d, _)| !row_dims.contains(d)).map(|(_, &n)| n).product::<i64>()
            * array.element_type.byte_size() as i64;
        let by_row_value = values.iter().any(|(v, _)| comp.get(*v).opcode == Opcode::Reduce && reads_from(*v, id));
        let by_elements = reads_from(comp.root, id);
        if indices.iter().all(in_row) && row_bytes <= MAX_SCRATCH_ROW_BYTES && by_row_value && by_elements && expensive(id) {
            chosen.push(id);
        }
    }
    let all_chosen = chosen.clone();
    chosen.retain(|&id| !users[id.index()].iter().all(|u| all_chosen.contains(u)));
    chosen.into_iter().map(|id| (id, values.iter().position(|(v, _)| reads_from(*v, id)).unwrap_or(values.len()))).collect()
}

/// Whether an index lies in the row of the output element being computed: each row
/// dimension is that output dimension (or 0, where it has one element).
fn in_row(src: &[DimSource], row_dims: &[usize], out_dims: &[i64]) -> bool {
    row_dims.iter().all(|&d| src.get(d) == Some(&DimSource::Output(d)) || (out_dims[d] == 1 && src.get(d) == Some(&DimSource::Zero)))
}

/// The row values of a loop (`comp`, rooted at an array of `input`'s dimensions and layout)
/// that reads the array `input` only inside the row of the element it computes, when its rows
/// are the dimensions other than `columns` (the loop then finishes each row of `input` from
/// that row alone: a softmax over a product's columns, see `passes/dot_epilogue_fusion.rs`).
pub fn rows_reading_within(comp: &Computation, input: InstrId, columns: &[usize]) -> Option<RowValues> {
    let shape = comp.get(input).shape.as_array()?;
    let is_input = |id: InstrId| id == input;
    let rows = row_values(comp, &shape.dims, &shape.layout_or_default(), &is_input)?;
    let mut other: Vec<usize> = (0..shape.dims.len()).filter(|d| !rows.row_dims.contains(d)).collect();
    let mut columns = columns.to_vec();
    other.sort_unstable();
    columns.sort_unstable();
    let sources = index_sources(comp, &is_input);
    let within = match sources.get(&input) {
        Some(Some(indices)) => indices.iter().all(|src| in_row(src, &rows.row_dims, &shape.dims)),
        _ => false,
    };
    (other == columns && within).then_some(rows)
}

/// The one index instruction `id` of `comp` is read at, when it is made of output dimensions
/// only (see [`row_values`]).
pub fn row_index(comp: &Computation, id: InstrId) -> Option<Vec<DimSource>> {
    let sources = index_sources(comp, &|_| false);
    match sources.get(&id) {
        Some(Some(indices)) => match indices.as_slice() {
            [src] if src.iter().all(|s| matches!(s, DimSource::Output(_) | DimSource::Zero)) => Some(src.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// Distinct indices one instruction may be read at before the analysis gives up on it.
const MAX_INDICES: usize = 8;

/// For every instruction of `comp`, the distinct indices it is read at, each given by the
/// source of every dimension relative to the root's index (`x - mean` feeds both the variance's
/// reduction and the output, at two indices); `None` past [`MAX_INDICES`]. The walk stops at
/// inputs: what produced them is not part of the kernel.
fn index_sources(comp: &Computation, is_input: &dyn Fn(InstrId) -> bool) -> HashMap<InstrId, Option<Vec<Vec<DimSource>>>> {
    let mut sources: HashMap<InstrId, Option<Vec<Vec<DimSource>>>> = HashMap::new();
    let rank = comp.root_instruction().shape.dims().len();
    sources.insert(comp.root, Some(vec![(0..rank).map(DimSource::Output).collect()]));
    // Users before operands: each instruction's indices are complete before they propagate.
    for id in comp.post_order().into_iter().rev() {
        let Some(Some(indices)) = sources.get(&id).cloned() else { continue };
        if is_input(id) {
            continue;
        }
        let inst = comp.get(id);
        for (k, &operand) in inst.operands.iter().enumerate() {
            let Some(operand_rank) = comp.get(operand).shape.as_array().map(|a| a.dims.len()) else { continue };
            let entry = sources.entry(operand).or_insert_with(|| Some(Vec::new()));
            for src in &indices {
                let derived = operand_sources(comp, id, k, src, operand_rank);
                if let Some(list) = entry {
                    if !list.contains(&derived) {
                        list.push(derived);
                    }
                    if list.len() > MAX_INDICES {
                        *entry = None;
                    }
                }
            }
        }
    }
    sources
}

/// The index operand `k` (an array of rank `rank`) of `user` is read at, when `user` is read
/// at `src`.
fn operand_sources(comp: &Computation, user: InstrId, k: usize, src: &[DimSource], rank: usize) -> Vec<DimSource> {
    let inst = comp.get(user);
    let other = || vec![DimSource::Other; rank];
    let operand_dims = comp.get(inst.operands[k]).shape.dims().to_vec();
    let zero_or = |d: usize, s: DimSource| if operand_dims[d] == 1 { DimSource::Zero } else { s };
    match inst.opcode {
        _ if rank == 0 => Vec::new(),
        op if op.is_elementwise() && rank == src.len() => src.to_vec(),
        Opcode::Broadcast => inst.attrs.dims().iter().enumerate().map(|(j, &d)| zero_or(j, src[d as usize])).collect(),
        Opcode::Transpose => {
            let mut out = vec![DimSource::Other; rank];
            for (i, &p) in inst.attrs.dims().iter().enumerate() {
                out[p as usize] = src[i];
            }
            out
        }
        Opcode::Reshape => {
            // Only reshapes that add or drop dimensions of size 1 keep the index.
            let out_dims = inst.shape.dims();
            let kept_in: Vec<usize> = (0..rank).filter(|&d| operand_dims[d] != 1).collect();
            let kept_out: Vec<usize> = (0..out_dims.len()).filter(|&d| out_dims[d] != 1).collect();
            let same = kept_in.len() == kept_out.len() && kept_in.iter().zip(&kept_out).all(|(&i, &o)| operand_dims[i] == out_dims[o]);
            if !same {
                return other();
            }
            let mut out = vec![DimSource::Zero; rank];
            for (&i, &o) in kept_in.iter().zip(&kept_out) {
                out[i] = src[o];
            }
            out
        }
        Opcode::Reduce if k < inst.operands.len() / 2 => {
            let reduced = inst.attrs.dims();
            let mut kept = src.iter();
            (0..rank)
                .map(|d| if reduced.contains(&(d as i64)) { DimSource::Other } else { kept.next().copied().unwrap_or(DimSource::Other) })
                .collect()
        }
        _ => other(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::text::parse_module;

    /// The row values and scratch values of the entry computation of `text`, by name.
    fn analyse(text: &str) -> (Vec<String>, Vec<String>) {
        let module = parse_module(text).unwrap();
        let comp = module.computation(module.entry);
        let root = comp.root_instruction();
        let dims = root.shape.dims().to_vec();
        let layout = root.shape.as_array().unwrap().layout_or_default();
        let rows = row_values(comp, &dims, &layout, &|_| false).unwrap();
        let name = |id: InstrId| comp.get(id).name.clone();
        (rows.values.iter().map(|(id, _)| name(*id)).collect(), rows.scratch.iter().map(|(id, _)| name(*id)).collect())
    }

    const REDUCERS: &str = "add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }\n\
        max { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] maximum(a, b) }\n";

    #[test]
    fn softmax_stores_its_exponentials_before_the_sum() {
        let text = format!(
            "HloModule m\n{REDUCERS}ENTRY main {{\n  x = f32[16,12] parameter(0)\n  ninf = f32[] constant(-inf)\n  \
             mx = f32[16] reduce(x, ninf), dimensions={{1}}, to_apply=max\n  mxb = f32[16,12] broadcast(mx), dimensions={{0}}\n  \
             s = f32[16,12] subtract(x, mxb)\n  e = f32[16,12] exponential(s)\n  z = f32[] constant(0)\n  \
             sum = f32[16] reduce(e, z), dimensions={{1}}, to_apply=add\n  sb = f32[16,12] broadcast(sum), dimensions={{0}}\n  \
             ROOT p = f32[16,12] divide(e, sb)\n}}\n"
        );
        let module = parse_module(&text).unwrap();
        let comp = module.computation(module.entry);
        let root = comp.root_instruction();
        let rows = row_values(comp, root.shape.dims(), &root.shape.as_array().unwrap().layout_or_default(), &|_| false).unwrap();
        let names: Vec<&str> = rows.values.iter().map(|(id, _)| comp.get(*id).name.as_str()).collect();
        assert_eq!(names, ["mx", "sum"]);
        // `e` only, not `s` (a subtraction is cheaper than a store and a load), filled before
        // the sum (row value 1) that reads it.
        assert_eq!(rows.scratch.iter().map(|&(id, before)| (comp.get(id).name.as_str(), before)).collect::<Vec<_>>(), [("e", 1)]);
    }

    #[test]
    fn cheap_values_and_values_read_outside_the_row_are_recomputed() {
        // Layernorm-like: x - mean feeds the variance and the output but is one subtraction.
        let layernorm = format!(
            "HloModule m\n{REDUCERS}ENTRY main {{\n  x = f32[8,16] parameter(0)\n  z = f32[] constant(0)\n  \
             sum = f32[8] reduce(x, z), dimensions={{1}}, to_apply=add\n  mb = f32[8,16] broadcast(sum), dimensions={{0}}\n  \
             d = f32[8,16] subtract(x, mb)\n  sq = f32[8,16] multiply(d, d)\n  \
             ss = f32[8] reduce(sq, z), dimensions={{1}}, to_apply=add\n  sb = f32[8,16] broadcast(ss), dimensions={{0}}\n  \
             ROOT o = f32[8,16] multiply(d, sb)\n}}\n"
        );
        let (values, scratch) = analyse(&layernorm);
        assert_eq!(values, ["sum", "ss"]);
        assert!(scratch.is_empty(), "{scratch:?}");
        // An exponential the output reads only through a reversed row is read at another
        // row's index as well: the output's `reverse` makes row dimension 0 a computed index.
        let reversed = format!(
            "HloModule m\n{REDUCERS}ENTRY main {{\n  x = f32[8,16] parameter(0)\n  e = f32[8,16] exponential(x)\n  z = f32[] constant(0)\n  \
             sum = f32[8] reduce(e, z), dimensions={{1}}, to_apply=add\n  sb = f32[8,16] broadcast(sum), dimensions={{0}}\n  \
             r = f32[8,16] reverse(e), dimensions={{0}}\n  ROOT o = f32[8,16] divide(r, sb)\n}}\n"
        );
        let (values, scratch) = analyse(&reversed);
        assert_eq!(values, ["sum"]);
        assert!(scratch.is_empty(), "{scratch:?}");
    }
}
