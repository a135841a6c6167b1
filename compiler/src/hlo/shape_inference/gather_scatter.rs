//! gather and scatter, batching dimensions included.

use super::common::{array, array_text, check_reducer, fail, is_sorted_strictly, list, make_static};
use crate::hlo::attributes::{GatherDimensionNumbers, ScatterDimensionNumbers};
use crate::hlo::module::ProgramShape;
use crate::hlo::opcode::Opcode;
use hlojit_runtime::{ArrayShape, ElementType, Shape};
use std::fmt::Display;

/// A sorted, repeat-free list of dimensions in `[0, rank)`.
fn sorted_in_range(op: impl Display, what: &str, dims: &[i64], rank: usize) -> Result<(), String> {
    if !is_sorted_strictly(dims) {
        fail!(op, "{what} {} must be sorted and free of repeats", list(dims));
    }
    if let Some(&d) = dims.iter().find(|&&d| d < 0 || d >= rank as i64) {
        fail!(op, "{what} {} holds {d}, outside [0, {rank})", list(dims));
    }
    Ok(())
}

fn unique_in_range(op: impl Display, what: &str, dims: &[i64], rank: usize) -> Result<(), String> {
    let mut sorted = dims.to_vec();
    sorted.sort_unstable();
    if sorted.windows(2).any(|w| w[0] == w[1]) {
        fail!(op, "{what} {} must not repeat a dimension", list(dims));
    }
    if let Some(&d) = dims.iter().find(|&&d| d < 0 || d >= rank as i64) {
        fail!(op, "{what} {} holds {d}, outside [0, {rank})", list(dims));
    }
    Ok(())
}

fn disjoint(op: impl Display, a_name: &str, a: &[i64], b_name: &str, b: &[i64]) -> Result<(), String> {
    if let Some(d) = a.iter().find(|d| b.contains(d)) {
        fail!(op, "dimension {d} is in both {a_name} {} and {b_name} {}", list(a), list(b));
    }
    Ok(())
}

/// The indices operand: an integer array whose `index_vector_dim` is in `[0, rank]`. Returns
/// its dimensions with a trailing 1 when `index_vector_dim == rank`.
fn expanded_indices(op: Opcode, indices: &Shape, index_vector_dim: i64) -> Result<(ArrayShape, Vec<i64>), String> {
    let idx = array(op, indices, "the indices")?;
    if !idx.element_type.is_int() {
        fail!(op, "the indices must be integers, got {}", array_text(idx));
    }
    if index_vector_dim < 0 || index_vector_dim > idx.rank() as i64 {
        fail!(op, "index_vector_dim {index_vector_dim} is outside [0, {}] for indices {}", idx.rank(), array_text(idx));
    }
    let mut expanded = idx.dims.clone();
    if index_vector_dim == idx.rank() as i64 {
        expanded.push(1);
    }
    Ok((idx.clone(), expanded))
}

/// Batching dimensions of the indices pair up with batching dimensions of the operand, of
/// equal sizes; the index vector dimension is not one of them.
fn check_batching(
    op: Opcode,
    operand: &ArrayShape,
    operand_batching: &[i64],
    indices: &ArrayShape,
    indices_batching: &[i64],
    index_vector_dim: i64,
    names: (&str, &str),
) -> Result<(), String> {
    unique_in_range(op, names.1, indices_batching, indices.rank())?;
    if indices_batching.contains(&index_vector_dim) {
        fail!(op, "{} {} must not contain index_vector_dim {index_vector_dim}", names.1, list(indices_batching));
    }
    if indices_batching.len() != operand_batching.len() {
        fail!(
            op,
            "{} {} and {} {} must have the same length",
            names.0,
            list(operand_batching),
            names.1,
            list(indices_batching)
        );
    }
    for (&o, &i) in operand_batching.iter().zip(indices_batching) {
        let (os, is) = (operand.dims[o as usize], indices.dims[i as usize]);
        if os != is {
            fail!(op, "operand batching dimension {o} has size {os} but indices batching dimension {i} has size {is}");
        }
    }
    Ok(())
}

/// `gather(operand, start_indices)`.
pub fn infer_gather(
    operand: &Shape,
    indices: &Shape,
    dnums: &GatherDimensionNumbers,
    slice_sizes: &[i64],
) -> Result<Shape, String> {
    let op = Opcode::Gather;
    let a = array(op, operand, "the operand")?;
    let (idx, expanded) = expanded_indices(op, indices, dnums.index_vector_dim)?;
    let ivd = dnums.index_vector_dim as usize;
    let out_rank = dnums.offset_dims.len() + expanded.len() - 1;
    sorted_in_range(op, "offset_dims", &dnums.offset_dims, out_rank)?;
    if dnums.start_index_map.len() as i64 != expanded[ivd] {
        fail!(
            op,
            "start_index_map {} has {} entries but index_vector_dim {} of the indices has size {}",
            list(&dnums.start_index_map),
            dnums.start_index_map.len(),
            ivd,
            expanded[ivd]
        );
    }
    unique_in_range(op, "start_index_map", &dnums.start_index_map, a.rank())?;
    sorted_in_range(op, "collapsed_slice_dims", &dnums.collapsed_slice_dims, a.rank())?;
    sorted_in_range(op, "operand_batching_dims", &dnums.operand_batching_dims, a.rank())?;
    disjoint(
        op,
        "collapsed_slice_dims",
        &dnums.collapsed_slice_dims,
        "operand_batching_dims",
        &dnums.operand_batching_dims,
    )?;
    disjoint(op, "start_index_map", &dnums.start_index_map, "operand_batching_dims", &dnums.operand_batching_dims)?;
    check_batching(
        op,
        a,
        &dnums.operand_batching_dims,
        &idx,
        &dnums.start_indices_batching_dims,
        dnums.index_vector_dim,
        ("operand_batching_dims", "start_indices_batching_dims"),
    )?;
    if slice_sizes.len() != a.rank() {
        fail!(op, "{} slice sizes given for the operand {} of rank {}", slice_sizes.len(), array_text(a), a.rank());
    }
    let window_dims = dnums.offset_dims.len() + dnums.collapsed_slice_dims.len() + dnums.operand_batching_dims.len();
    if window_dims != a.rank() {
        fail!(
            op,
            "offset_dims {}, collapsed_slice_dims {} and operand_batching_dims {} must together cover the {} operand dimensions",
            list(&dnums.offset_dims),
            list(&dnums.collapsed_slice_dims),
            list(&dnums.operand_batching_dims),
            a.rank()
        );
    }
    for (i, &s) in slice_sizes.iter().enumerate() {
        if s < 0 || s > a.dims[i] {
            fail!(op, "slice size {s} of operand dimension {i} is outside [0, {}]", a.dims[i]);
        }
    }
    for &d in dnums.collapsed_slice_dims.iter().chain(&dnums.operand_batching_dims) {
        if slice_sizes[d as usize] > 1 {
            fail!(
                op,
                "collapsed or batching operand dimension {d} has slice size {} (must be 0 or 1)",
                slice_sizes[d as usize]
            );
        }
    }
    let mut window_sizes = (0..a.rank() as i64)
        .filter(|d| !dnums.collapsed_slice_dims.contains(d) && !dnums.operand_batching_dims.contains(d))
        .map(|d| slice_sizes[d as usize]);
    let mut batch_sizes = expanded.iter().enumerate().filter(|&(i, _)| i != ivd).map(|(_, &s)| s);
    let mut dims = Vec::with_capacity(out_rank);
    for i in 0..out_rank as i64 {
        let next = if dnums.offset_dims.contains(&i) { window_sizes.next() } else { batch_sizes.next() };
        match next {
            Some(size) => dims.push(size),
            None => fail!(op, "internal: ran out of dimensions for output dimension {i}"),
        }
    }
    Ok(make_static(a.element_type, dims))
}

/// `scatter(operands..., indices, updates...)` combining with `reducer`.
pub fn infer_scatter(
    operands: &[&Shape],
    dnums: &ScatterDimensionNumbers,
    reducer: &ProgramShape,
) -> Result<Shape, String> {
    let op = Opcode::Scatter;
    let n = operands.len() / 2;
    if n == 0 || 2 * n + 1 != operands.len() {
        fail!(op, "expected operands..., indices, updates... (an odd number >= 3), got {} operands", operands.len());
    }
    let (idx, expanded) = expanded_indices(op, operands[n], dnums.index_vector_dim)?;
    let ivd = dnums.index_vector_dim as usize;
    let mut operand_types: Vec<ElementType> = Vec::with_capacity(n);
    let mut update_types: Vec<ElementType> = Vec::with_capacity(n);
    let first = array(op, operands[0], "operand 0")?;
    for k in 0..n {
        let a = array(op, operands[k], &format!("operand {k}"))?;
        let u = array(op, operands[n + 1 + k], &format!("updates {k}"))?;
        if a.dims != first.dims {
            fail!(op, "operand {k} {} must have the dimensions of operand 0 {}", array_text(a), array_text(first));
        }
        let expected_rank = expanded.len() - 1 + dnums.update_window_dims.len();
        if u.rank() != expected_rank {
            fail!(op, "updates {k} {} must have rank {expected_rank}", array_text(u));
        }
        sorted_in_range(op, "update_window_dims", &dnums.update_window_dims, u.rank())?;
        sorted_in_range(op, "inserted_window_dims", &dnums.inserted_window_dims, a.rank())?;
        sorted_in_range(op, "input_batching_dims", &dnums.input_batching_dims, a.rank())?;
        disjoint(
            op,
            "inserted_window_dims",
            &dnums.inserted_window_dims,
            "input_batching_dims",
            &dnums.input_batching_dims,
        )?;
        let window =
            dnums.update_window_dims.len() + dnums.inserted_window_dims.len() + dnums.input_batching_dims.len();
        if window != a.rank() {
            fail!(
                op,
                "update_window_dims {}, inserted_window_dims {} and input_batching_dims {} must together cover the {} operand dimensions",
                list(&dnums.update_window_dims),
                list(&dnums.inserted_window_dims),
                list(&dnums.input_batching_dims),
                a.rank()
            );
        }
        if dnums.scatter_dims_to_operand_dims.len() as i64 != expanded[ivd] {
            fail!(
                op,
                "scatter_dims_to_operand_dims {} has {} entries but index_vector_dim {} of the indices has size {}",
                list(&dnums.scatter_dims_to_operand_dims),
                dnums.scatter_dims_to_operand_dims.len(),
                ivd,
                expanded[ivd]
            );
        }
        unique_in_range(op, "scatter_dims_to_operand_dims", &dnums.scatter_dims_to_operand_dims, a.rank())?;
        disjoint(
            op,
            "scatter_dims_to_operand_dims",
            &dnums.scatter_dims_to_operand_dims,
            "input_batching_dims",
            &dnums.input_batching_dims,
        )?;
        check_batching(
            op,
            a,
            &dnums.input_batching_dims,
            &idx,
            &dnums.scatter_indices_batching_dims,
            dnums.index_vector_dim,
            ("input_batching_dims", "scatter_indices_batching_dims"),
        )?;
        let window_bounds: Vec<(i64, i64)> = (0..a.rank() as i64)
            .filter(|d| !dnums.inserted_window_dims.contains(d) && !dnums.input_batching_dims.contains(d))
            .map(|d| (d, a.dims[d as usize]))
            .collect();
        for (&w, &(operand_dim, bound)) in dnums.update_window_dims.iter().zip(&window_bounds) {
            let size = u.dims[w as usize];
            if size > bound {
                fail!(op, "updates window dimension {w} has size {size}, larger than operand dimension {operand_dim} ({bound})");
            }
        }
        let mut scatter_sizes = expanded.iter().enumerate().filter(|&(i, _)| i != ivd).map(|(_, &s)| s);
        for i in 0..u.rank() as i64 {
            if dnums.update_window_dims.contains(&i) {
                continue;
            }
            let expected = scatter_sizes.next().unwrap_or(-1);
            if u.dims[i as usize] != expected {
                fail!(
                    op,
                    "updates scatter dimension {i} has size {} but the matching indices dimension has size {expected}",
                    u.dims[i as usize]
                );
            }
        }
        operand_types.push(a.element_type);
        update_types.push(u.element_type);
    }
    check_reducer(op, reducer, &operand_types, &update_types)?;
    let results: Vec<Shape> = operands[..n].iter().map(|s| s.without_layouts()).collect();
    Ok(if n == 1 { results.into_iter().next().expect("one operand") } else { Shape::Tuple(results) })
}
