//! Collectives: all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute,
//! collective-broadcast, their async start/done pairs, partition-id and replica-id.
//!
//! The number of participants (the shard count of all-gather and reduce-scatter, the split
//! count of all-to-all) is the size of a replica group.

use super::common::{array, array_text, fail, text};
use crate::hlo::module::ProgramShape;
use crate::hlo::opcode::Opcode;
use hlojit_runtime::{ElementType, Shape};
use std::collections::HashSet;

fn one_or_tuple(mut shapes: Vec<Shape>) -> Shape {
    if shapes.len() == 1 {
        shapes.pop().expect("one shape")
    } else {
        Shape::Tuple(shapes)
    }
}

/// Replica groups: no empty group, no id twice, ids `0..n` all named; all groups of one size
/// unless `uniform` is false. Returns the size of the first group (None without groups).
pub fn check_replica_groups(op: Opcode, groups: &[Vec<i64>], uniform: bool) -> Result<Option<i64>, String> {
    let mut seen = HashSet::new();
    for g in groups {
        if g.is_empty() {
            fail!(op, "replica groups must not be empty");
        }
        for &id in g {
            if !seen.insert(id) {
                fail!(op, "replica {id} appears more than once in replica_groups");
            }
        }
    }
    if let Some(missing) = (0..seen.len() as i64).find(|id| !seen.contains(id)) {
        fail!(op, "replica {missing} is not named in replica_groups (ids must be 0..{})", seen.len());
    }
    if uniform {
        if let Some(g) = groups.iter().find(|g| g.len() != groups[0].len()) {
            fail!(op, "replica groups must all have one size, got {} and {}", groups[0].len(), g.len());
        }
    }
    Ok(groups.first().map(|g| g.len() as i64))
}

/// `all-reduce(xs...)` with a reduction computation: each result has its operand's shape.
pub fn infer_all_reduce(operands: &[&Shape], reducer: &ProgramShape) -> Result<Shape, String> {
    let op = Opcode::AllReduce;
    if operands.is_empty() {
        fail!(op, "expected at least one operand");
    }
    for (i, s) in operands.iter().enumerate() {
        array(op, s, &format!("operand {i}"))?;
    }
    if reducer.parameters.len() != 2 {
        fail!(op, "the reduction computation must take 2 parameters, but takes {}", reducer.parameters.len());
    }
    if !reducer.result.is_scalar() {
        fail!(op, "the reduction computation must return a scalar, but returns {}", text(&reducer.result));
    }
    Ok(one_or_tuple(operands.iter().map(|s| s.without_layouts()).collect()))
}

/// `all-gather(xs...), dimensions={d}`: dimension `d` grows `shard_count` times.
pub fn infer_all_gather(operands: &[&Shape], dimension: i64, shard_count: i64) -> Result<Shape, String> {
    let op = Opcode::AllGather;
    if operands.is_empty() {
        fail!(op, "expected at least one operand");
    }
    if shard_count <= 0 {
        fail!(op, "the shard count must be positive, got {shard_count}");
    }
    let mut out = Vec::with_capacity(operands.len());
    for (i, s) in operands.iter().enumerate() {
        let a = array(op, s, &format!("operand {i}"))?;
        if dimension < 0 || dimension >= a.rank() as i64 {
            fail!(op, "dimension {dimension} is out of range for operand {i} {}", array_text(a));
        }
        let mut r = a.clone();
        r.layout = None;
        r.dims[dimension as usize] *= shard_count;
        out.push(Shape::Array(r));
    }
    Ok(one_or_tuple(out))
}

/// `reduce-scatter(xs...), dimensions={d}`: dimension `d` shrinks `shard_count` times.
pub fn infer_reduce_scatter(
    operands: &[&Shape],
    dimension: i64,
    shard_count: i64,
    reducer: &ProgramShape,
) -> Result<Shape, String> {
    let op = Opcode::ReduceScatter;
    infer_all_reduce(operands, reducer).map_err(|e| e.replacen(Opcode::AllReduce.name(), op.name(), 1))?;
    if shard_count <= 0 {
        fail!(op, "the shard count must be positive, got {shard_count}");
    }
    let mut out = Vec::with_capacity(operands.len());
    for (i, s) in operands.iter().enumerate() {
        let a = array(op, s, &format!("operand {i}"))?;
        if dimension < 0 || dimension >= a.rank() as i64 {
            fail!(op, "dimension {dimension} is out of range for operand {i} {}", array_text(a));
        }
        let size = a.dims[dimension as usize];
        if size % shard_count != 0 {
            fail!(
                op,
                "dimension {dimension} of operand {i} {} is not divisible by the shard count {shard_count}",
                array_text(a)
            );
        }
        let mut r = a.clone();
        r.layout = None;
        r.dims[dimension as usize] = size / shard_count;
        out.push(Shape::Array(r));
    }
    Ok(one_or_tuple(out))
}

/// `all-to-all`: with `dimensions={d}` one array is split along `d` into `split_count` parts
/// that are exchanged and concatenated along `d` again (same shape); without, the operands
/// are the parts and the result is their tuple.
pub fn infer_all_to_all(
    operands: &[&Shape],
    split_dimension: Option<i64>,
    split_count: Option<i64>,
) -> Result<Shape, String> {
    let op = Opcode::AllToAll;
    match split_dimension {
        Some(d) => {
            if operands.len() != 1 {
                fail!(op, "with dimensions={{{d}}} expects 1 operand, got {}", operands.len());
            }
            let a = array(op, operands[0], "the operand")?;
            if d < 0 || d >= a.rank() as i64 {
                fail!(op, "split dimension {d} is out of range for {}", array_text(a));
            }
            if let Some(n) = split_count {
                if n <= 0 || a.dims[d as usize] % n != 0 {
                    fail!(op, "dimension {d} of {} is not divisible by the split count {n}", array_text(a));
                }
            }
            Ok(operands[0].without_layouts())
        }
        None => {
            if operands.is_empty() {
                fail!(op, "expected at least one operand");
            }
            if let Some(n) = split_count {
                if operands.len() as i64 != n {
                    fail!(op, "a tuple all-to-all over groups of {n} needs {n} operands, got {}", operands.len());
                }
            }
            for (i, s) in operands.iter().enumerate() {
                if !s.compatible(operands[0]) {
                    fail!(op, "operand {i} {} must have the shape of operand 0 {}", text(s), text(operands[0]));
                }
            }
            Ok(Shape::Tuple(operands.iter().map(|s| s.without_layouts()).collect()))
        }
    }
}

/// Source-target pairs: non-negative ids, no source and no target twice.
pub fn check_source_target_pairs(op: Opcode, pairs: &[(i64, i64)]) -> Result<(), String> {
    let mut sources = HashSet::new();
    let mut targets = HashSet::new();
    for &(s, t) in pairs {
        if s < 0 || t < 0 {
            fail!(op, "source-target pair {{{s},{t}}} has a negative id");
        }
        if !sources.insert(s) {
            fail!(op, "source {s} appears more than once in source_target_pairs");
        }
        if !targets.insert(t) {
            fail!(op, "target {t} appears more than once in source_target_pairs");
        }
    }
    Ok(())
}

/// Whether collective-permute operands are the in-place form (input, output buffer, input and
/// output start indices) rather than several arrays permuted together: the indices are tuples
/// or `slice_sizes` is given.
pub fn is_in_place_permute(operands: &[&Shape], has_slice_sizes: bool) -> bool {
    operands.len() == 4 && (has_slice_sizes || operands[2].is_tuple())
}

/// `collective-permute(x)`: the shape of `x`; `collective-permute(x, y, ...)`: the tuple of
/// their shapes (XLA's combined permute). The in-place form returns the output buffer,
/// operand 1.
pub fn infer_collective_permute(operands: &[&Shape], in_place: bool) -> Result<Shape, String> {
    let op = Opcode::CollectivePermute;
    match operands {
        [_, output, _, _] if in_place => Ok(output.without_layouts()),
        [x] => {
            array(op, x, "the operand")?;
            Ok(x.without_layouts())
        }
        [] => fail!(op, "expected at least one operand"),
        xs => {
            for (i, x) in xs.iter().enumerate() {
                array(op, x, &format!("operand {i}"))?;
            }
            Ok(Shape::Tuple(xs.iter().map(|x| x.without_layouts()).collect()))
        }
    }
}

/// `collective-permute-start(x)`: `(x, result, u32[], u32[])`, further context as declared;
/// with several operands `x` and `result` are tuples of them.
pub fn infer_collective_permute_start(operands: &[&Shape], declared: Option<&Shape>, in_place: bool) -> Result<Shape, String> {
    let op = Opcode::CollectivePermuteStart;
    let (input, output) = match operands {
        [i, o, _, _] if in_place => (i.without_layouts(), o.without_layouts()),
        [x] => {
            array(op, x, "the operand")?;
            (x.without_layouts(), x.without_layouts())
        }
        [] => fail!(op, "expected at least one operand"),
        xs => {
            for (i, x) in xs.iter().enumerate() {
                array(op, x, &format!("operand {i}"))?;
            }
            let t = Shape::Tuple(xs.iter().map(|x| x.without_layouts()).collect());
            (t.clone(), t)
        }
    };
    let u32_scalar = Shape::scalar(ElementType::U32);
    let mut elements = vec![input, output];
    match declared.and_then(Shape::tuple_elements) {
        Some(d) if d.len() > 2 => elements.extend(d[2..].iter().map(Shape::without_layouts)),
        _ => elements.extend([u32_scalar.clone(), u32_scalar]),
    }
    Ok(Shape::Tuple(elements))
}

/// `*-done(start)`: element 1 of the start's tuple (all-gather-done, collective-permute-done).
pub fn infer_collective_done(op: Opcode, start: &Shape) -> Result<Shape, String> {
    match start.tuple_elements() {
        Some(elements) if elements.len() >= 2 => Ok(elements[1].without_layouts()),
        _ => fail!(op, "the operand must be the tuple of a start op, got {}", text(start)),
    }
}

/// `all-gather-start(xs...)`: `(input, gathered)`.
pub fn infer_all_gather_start(operands: &[&Shape], dimension: i64, shard_count: i64) -> Result<Shape, String> {
    let gathered = infer_all_gather(operands, dimension, shard_count)
        .map_err(|e| e.replacen(Opcode::AllGather.name(), Opcode::AllGatherStart.name(), 1))?;
    let input = one_or_tuple(operands.iter().map(|s| s.without_layouts()).collect());
    Ok(Shape::Tuple(vec![input, gathered]))
}

/// `collective-broadcast(xs...)`: unchanged shapes.
pub fn infer_collective_broadcast(operands: &[&Shape]) -> Result<Shape, String> {
    let op = Opcode::CollectiveBroadcast;
    if operands.is_empty() {
        fail!(op, "expected at least one operand");
    }
    for (i, s) in operands.iter().enumerate() {
        array(op, s, &format!("operand {i}"))?;
    }
    Ok(one_or_tuple(operands.iter().map(|s| s.without_layouts()).collect()))
}

/// `ragged-all-to-all(input, output, input_offsets, send_sizes, output_offsets, recv_sizes)`:
/// the output buffer's shape.
pub fn infer_ragged_all_to_all(operands: &[&Shape]) -> Result<Shape, String> {
    let op = Opcode::RaggedAllToAll;
    if operands.len() != 6 {
        fail!(op, "expected 6 operands, got {}", operands.len());
    }
    let input = array(op, operands[0], "the input")?;
    let output = array(op, operands[1], "the output")?;
    if input.element_type != output.element_type || input.rank() != output.rank() || input.dims[1..] != output.dims[1..]
    {
        fail!(
            op,
            "the input {} and output {} must agree in element type and all but the major dimension",
            array_text(input),
            array_text(output)
        );
    }
    for (i, s) in operands[2..].iter().enumerate() {
        let a = array(op, s, &format!("operand {}", i + 2))?;
        if !a.element_type.is_int() {
            fail!(op, "offsets and sizes must be integers, got {}", array_text(a));
        }
    }
    Ok(operands[1].without_layouts())
}

/// `partition-id()` and `replica-id()`: `u32[]`.
pub fn infer_device_id() -> Shape {
    Shape::scalar(ElementType::U32)
}

/// The shard count of an all-gather or reduce-scatter whose replica groups are implicit:
/// the ratio of the larger to the smaller size of `dimension` (first tuple element if tuples).
pub fn shard_count_from_shapes(small: &Shape, large: &Shape, dimension: i64) -> Option<i64> {
    let size = |shape: &Shape| -> Option<i64> {
        let a = match shape {
            Shape::Tuple(e) => e.first()?.as_array()?,
            Shape::Array(a) => a,
            _ => return None,
        };
        a.dims.get(usize::try_from(dimension).ok()?).copied()
    };
    let (s, l) = (size(small)?, size(large)?);
    if s <= 0 {
        return None;
    }
    Some((l + s - 1) / s)
}
