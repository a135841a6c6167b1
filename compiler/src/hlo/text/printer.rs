//! Prints modules as canonical HLO text that XLA's parser and ours accept: the header, the
//! debug sections, every non-entry computation (callees before callers) and then the ENTRY;
//! `%`-prefixed names, shapes with layouts, attributes in a fixed order close to XLA's.

use super::literal_text::{float_to_text, literal_to_text};
use crate::hlo::attributes::*;
use crate::hlo::computation::Computation;
use crate::hlo::instruction::{CompId, InstrId, Instruction};
use crate::hlo::module::{AliasKind, Module};
use crate::hlo::opcode::Opcode;
use hlojit_runtime::{ElementType, Shape};
use std::fmt::Write;

/// The whole module as HLO text.
pub fn print_module(module: &Module) -> String {
    let mut out = String::new();
    write_header(&mut out, module);
    out.push('\n');
    for (title, lines) in &module.debug_sections {
        out.push('\n');
        out.push_str(title);
        out.push('\n');
        for line in lines {
            out.push_str(line);
            out.push('\n');
        }
    }
    for id in computation_print_order(module) {
        out.push('\n');
        out.push_str(&print_computation(module, id));
    }
    out
}

/// Non-entry computations with each callee before its callers (module order otherwise), then
/// the entry.
fn computation_print_order(module: &Module) -> Vec<CompId> {
    let n = module.computations.len();
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let roots = module
        .comp_ids()
        .filter(|&c| c != module.entry)
        .chain(std::iter::once(module.entry));
    for root in roots {
        if root.index() >= n || done[root.index()] {
            continue;
        }
        // Iterative DFS; `done` is set on entry so cycles (invalid, but printable) terminate.
        done[root.index()] = true;
        let mut stack: Vec<(CompId, Vec<CompId>)> = vec![(root, callees(module, root))];
        while let Some((current, pending)) = stack.last_mut() {
            match pending.pop() {
                Some(callee)
                    if callee.index() < n && callee != module.entry && !done[callee.index()] =>
                {
                    done[callee.index()] = true;
                    let next = callees(module, callee);
                    stack.push((callee, next));
                }
                Some(_) => {}
                None => {
                    order.push(*current);
                    stack.pop();
                }
            }
        }
    }
    // The entry was pushed when its turn came; move it to the end.
    order.retain(|&c| c != module.entry);
    if module.entry.index() < n {
        order.push(module.entry);
    }
    order
}

/// Callees of a computation in reverse order of first use (so popping visits them in order).
fn callees(module: &Module, id: CompId) -> Vec<CompId> {
    let mut list: Vec<CompId> = Vec::new();
    for inst in &module.computation(id).instructions {
        for &c in &inst.called {
            if !list.contains(&c) {
                list.push(c);
            }
        }
    }
    list.reverse();
    list
}

fn write_header(out: &mut String, module: &Module) {
    let _ = write!(out, "HloModule {}", module.name);
    let scheduled = module
        .header_attributes
        .iter()
        .filter(|(k, _)| k == "is_scheduled");
    for (key, value) in scheduled {
        let _ = write!(out, ", {key}={value}");
    }
    if let Some(layout) = &module.entry_layout {
        let params: Vec<String> = layout.parameters.iter().map(|s| s.to_text(true)).collect();
        let _ = write!(
            out,
            ", entry_computation_layout={{({})->{}}}",
            params.join(", "),
            layout.result.to_text(true)
        );
    }
    if !module.input_output_alias.is_empty() {
        let entries: Vec<String> = module
            .input_output_alias
            .iter()
            .map(|e| {
                let kind = match e.kind {
                    AliasKind::MayAlias => "may-alias",
                    AliasKind::MustAlias => "must-alias",
                };
                format!(
                    "{}: ({}, {}, {kind})",
                    index_text(&e.output_index),
                    e.parameter,
                    index_text(&e.parameter_index)
                )
            })
            .collect();
        let _ = write!(out, ", input_output_alias={{ {} }}", entries.join(", "));
    }
    for (key, value) in module
        .header_attributes
        .iter()
        .filter(|(k, _)| k != "is_scheduled")
    {
        let _ = write!(out, ", {key}={value}");
    }
}

/// `{}` or `{1,0}`.
fn index_text(index: &[i64]) -> String {
    format!("{{{}}}", join(index, ","))
}

fn join(values: &[i64], separator: &str) -> String {
    values
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(separator)
}

/// One computation: signature line, instructions in dependency order, closing brace.
pub fn print_computation(module: &Module, id: CompId) -> String {
    let comp = module.computation(id);
    let mut out = String::new();
    if id == module.entry {
        out.push_str("ENTRY ");
    }
    let params: Vec<String> = comp
        .parameters()
        .into_iter()
        .map(|p| {
            let inst = comp.get(p);
            format!("{}: {}", inst.name, inst.shape.to_text(false))
        })
        .collect();
    let result = comp
        .instructions
        .get(comp.root.index())
        .map_or_else(|| "()".to_string(), |r| r.shape.to_text(false));
    let _ = writeln!(
        out,
        "%{} ({}) -> {} {{",
        comp.name,
        params.join(", "),
        result
    );
    if comp.root.index() < comp.instructions.len() {
        for inst in comp.post_order() {
            let _ = writeln!(out, "  {}", print_instruction(module, comp, inst));
        }
    }
    out.push_str("}\n");
    out
}

/// One instruction as it appears in its computation (without indentation):
/// `[ROOT ]%name = shape opcode(operands), attributes`.
pub fn print_instruction(module: &Module, comp: &Computation, id: InstrId) -> String {
    let Some(inst) = comp.instructions.get(id.index()) else {
        return format!("<no instruction #{} in %{}>", id.0, comp.name);
    };
    let mut out = String::new();
    if id == comp.root {
        out.push_str("ROOT ");
    }
    let _ = write!(out, "%{} = {} {}(", inst.name, inst.shape, inst.opcode);
    match inst.opcode {
        Opcode::Constant => match &inst.attrs.literal {
            Some(literal) => out.push_str(&literal_to_text(literal)),
            None => out.push_str("{...}"),
        },
        Opcode::Parameter => {
            let _ = write!(out, "{}", inst.attrs.parameter_number.unwrap_or(0));
        }
        _ => {
            let names: Vec<String> = inst
                .operands
                .iter()
                .map(|&op| instruction_ref(comp, op))
                .collect();
            out.push_str(&names.join(", "));
        }
    }
    out.push(')');
    for attribute in attribute_texts(module, comp, inst) {
        out.push_str(", ");
        out.push_str(&attribute);
    }
    out
}

fn instruction_ref(comp: &Computation, id: InstrId) -> String {
    match comp.instructions.get(id.index()) {
        Some(inst) => format!("%{}", inst.name),
        None => format!("%<invalid #{}>", id.0),
    }
}

fn computation_ref(module: &Module, id: CompId) -> String {
    match module.computations.get(id.index()) {
        Some(c) => format!("%{}", c.name),
        None => format!("%<invalid computation #{}>", id.0),
    }
}

fn braced(values: &[i64]) -> String {
    format!("{{{}}}", join(values, ","))
}

fn braced_lists(lists: impl Iterator<Item = String>) -> String {
    format!("{{{}}}", lists.collect::<Vec<_>>().join(","))
}

fn bool_text(b: bool) -> String {
    (if b { "true" } else { "false" }).to_string()
}

/// `key=value` texts of an instruction in print order.
fn attribute_texts(module: &Module, comp: &Computation, inst: &Instruction) -> Vec<String> {
    let a = &inst.attrs;
    let mut out: Vec<String> = Vec::new();
    let mut push = |key: &str, value: String| out.push(format!("{key}={value}"));
    if let Some(i) = a.tuple_index {
        push("index", i.to_string());
    }
    if let Some(id) = a.channel_id {
        push("channel_id", id.to_string());
    }
    if let Some(groups) = &a.replica_groups {
        push(
            "replica_groups",
            braced_lists(groups.iter().map(|g| braced(g))),
        );
    }
    // XLA puts reduce-scatter's dimensions after use_global_device_ids, everyone else's before.
    let dimensions_last = inst.opcode == Opcode::ReduceScatter;
    if let Some(dims) = a.dimensions.as_ref().filter(|_| !dimensions_last) {
        push("dimensions", braced(dims));
    }
    if a.use_global_device_ids {
        push("use_global_device_ids", bool_text(true));
    }
    if let Some(dims) = a.dimensions.as_ref().filter(|_| dimensions_last) {
        push("dimensions", braced(dims));
    }
    if let Some(pairs) = &a.source_target_pairs {
        push(
            "source_target_pairs",
            braced_lists(pairs.iter().map(|(s, t)| format!("{{{s},{t}}}"))),
        );
    }
    if let Some(slice) = &a.slice {
        // Like XLA: strides on every dimension as soon as one is not 1.
        let strided = slice.iter().any(|d| d.stride != 1);
        let dims: Vec<String> = slice
            .iter()
            .map(|d| {
                if !strided {
                    format!("[{}:{}]", d.start, d.limit)
                } else {
                    format!("[{}:{}:{}]", d.start, d.limit, d.stride)
                }
            })
            .collect();
        push("slice", format!("{{{}}}", dims.join(", ")));
    }
    if let Some(padding) = &a.padding {
        push("padding", padding_text(padding));
    }
    if let Some(window) = &a.window {
        push("window", window_text(window));
    }
    if let Some(dims) = &a.conv_dims {
        push("dim_labels", dim_labels_text(dims));
    }
    if let Some(n) = a.feature_group_count {
        push("feature_group_count", n.to_string());
    }
    if let Some(n) = a.batch_group_count {
        push("batch_group_count", n.to_string());
    }
    if let Some(d) = &a.dot_dims {
        if !d.lhs_batch.is_empty() {
            push("lhs_batch_dims", braced(&d.lhs_batch));
        }
        push("lhs_contracting_dims", braced(&d.lhs_contracting));
        if !d.rhs_batch.is_empty() {
            push("rhs_batch_dims", braced(&d.rhs_batch));
        }
        push("rhs_contracting_dims", braced(&d.rhs_contracting));
    }
    if let Some(precision) = &a.operand_precision {
        push("operand_precision", format!("{{{}}}", precision.join(",")));
    }
    if let Some(g) = &a.gather_dims {
        push("offset_dims", braced(&g.offset_dims));
        push("collapsed_slice_dims", braced(&g.collapsed_slice_dims));
        push("start_index_map", braced(&g.start_index_map));
        if !g.operand_batching_dims.is_empty() {
            push("operand_batching_dims", braced(&g.operand_batching_dims));
        }
        if !g.start_indices_batching_dims.is_empty() {
            push(
                "start_indices_batching_dims",
                braced(&g.start_indices_batching_dims),
            );
        }
        push("index_vector_dim", g.index_vector_dim.to_string());
    }
    if let Some(s) = &a.scatter_dims {
        push("update_window_dims", braced(&s.update_window_dims));
        push("inserted_window_dims", braced(&s.inserted_window_dims));
        push(
            "scatter_dims_to_operand_dims",
            braced(&s.scatter_dims_to_operand_dims),
        );
        if !s.input_batching_dims.is_empty() {
            push("input_batching_dims", braced(&s.input_batching_dims));
        }
        if !s.scatter_indices_batching_dims.is_empty() {
            push(
                "scatter_indices_batching_dims",
                braced(&s.scatter_indices_batching_dims),
            );
        }
        push("index_vector_dim", s.index_vector_dim.to_string());
    }
    if let Some(sizes) = &a.slice_sizes {
        let key = if inst.opcode == Opcode::DynamicSlice {
            "dynamic_slice_sizes"
        } else {
            "slice_sizes"
        };
        push(key, braced(sizes));
    }
    if a.indices_are_sorted {
        push("indices_are_sorted", bool_text(true));
    }
    if a.unique_indices {
        push("unique_indices", bool_text(true));
    }
    if let Some(d) = a.direction {
        push("direction", d.to_string());
    }
    if let Some(t) = a.comparison_type {
        push("type", t.to_string());
    }
    if let Some(d) = a.iota_dimension {
        push("iota_dimension", d.to_string());
    }
    if let Some(n) = a.exponent_bits {
        push("exponent_bits", n.to_string());
    }
    if let Some(n) = a.mantissa_bits {
        push("mantissa_bits", n.to_string());
    }
    if let Some(kind) = a.fusion_kind {
        push("kind", kind.to_string());
    }
    if let Some(d) = a.distribution {
        push("distribution", d.to_string());
    }
    if let Some(alg) = a.rng_algorithm {
        push("algorithm", alg.to_string());
    }
    if let Some(t) = a.fft_type {
        push("fft_type", t.to_string());
    }
    if let Some(len) = &a.fft_length {
        push("fft_length", braced(len));
    }
    if a.is_stable {
        push("is_stable", bool_text(true));
    }
    if let Some(k) = a.k {
        push("k", k.to_string());
    }
    if let Some(b) = a.largest {
        push("largest", bool_text(b));
    }
    if let Some(target) = &a.custom_call_target {
        push("custom_call_target", quoted(target));
    }
    if a.custom_call_has_side_effect {
        push("custom_call_has_side_effect", bool_text(true));
    }
    if let Some(shapes) = &a.operand_layout_constraints {
        let shapes: Vec<String> = shapes.iter().map(Shape::to_string).collect();
        push(
            "operand_layout_constraints",
            format!("{{{}}}", shapes.join(", ")),
        );
    }
    // XLA prints output_to_operand_aliasing just before api_version, shape indices as {1,0}.
    if let Some(pairs) = &a.output_to_operand_aliasing {
        let index = |i: &[i64]| format!("{{{}}}", i.iter().map(i64::to_string).collect::<Vec<_>>().join(","));
        let pairs: Vec<String> =
            pairs.iter().map(|p| format!("{}: ({}, {})", index(&p.output), p.operand, index(&p.operand_index))).collect();
        push("output_to_operand_aliasing", format!("{{{}}}", pairs.join(", ")));
    }
    if let Some(v) = a.api_version {
        push("api_version", v.to_string());
    }
    if let Some(b) = a.left_side {
        push("left_side", bool_text(b));
    }
    if let Some(b) = a.lower {
        push("lower", bool_text(b));
    }
    if let Some(b) = a.unit_diagonal {
        push("unit_diagonal", bool_text(b));
    }
    if let Some(t) = a.transpose_a {
        push("transpose_a", t.to_string());
    }
    if let Some(e) = a.epsilon {
        push(
            "epsilon",
            float_to_text(u64::from(e.to_bits()), ElementType::F32),
        );
    }
    if let Some(i) = a.feature_index {
        push("feature_index", i.to_string());
    }
    called_texts(module, comp, inst, &mut push);
    if a.is_composite {
        push("is_composite", bool_text(true));
    }
    if !inst.control_predecessors.is_empty() {
        let names: Vec<String> = inst
            .control_predecessors
            .iter()
            .map(|&p| instruction_ref(comp, p))
            .collect();
        push("control-predecessors", format!("{{{}}}", names.join(", ")));
    }
    if let Some(delta) = a.rng_delta {
        push("delta", delta.to_string());
    }
    for raw in &a.other {
        push(&raw.key, raw.value.clone());
    }
    // XLA prints backend_config last.
    if let Some(config) = &a.backend_config {
        let value = match config {
            BackendConfig::Quoted(s) => quoted(s),
            BackendConfig::Braced(s) => s.clone(),
        };
        push("backend_config", value);
    }
    out
}

/// Called computations under the attribute names XLA uses for the opcode.
fn called_texts(
    module: &Module,
    comp: &Computation,
    inst: &Instruction,
    push: &mut impl FnMut(&str, String),
) {
    let called = &inst.called;
    if called.is_empty() {
        return;
    }
    let name = |i: usize| computation_ref(module, called[i]);
    let list = || {
        format!(
            "{{{}}}",
            (0..called.len()).map(name).collect::<Vec<_>>().join(", ")
        )
    };
    use Opcode::*;
    match inst.opcode {
        While if called.len() == 2 => {
            push("condition", name(0));
            push("body", name(1));
        }
        SelectAndScatter if called.len() == 2 => {
            push("select", name(0));
            push("scatter", name(1));
        }
        Conditional => {
            let pred_selector = inst
                .operands
                .first()
                .and_then(|&op| comp.instructions.get(op.index()))
                .is_some_and(|op| op.shape.element_type() == Some(ElementType::Pred));
            if pred_selector && called.len() == 2 {
                push("true_computation", name(0));
                push("false_computation", name(1));
            } else {
                push("branch_computations", list());
            }
        }
        CustomCall => push("called_computations", list()),
        Call | Map | Reduce | ReduceWindow | Scatter | Sort | AllReduce | AllReduceStart
        | ReduceScatter | TopK
            if called.len() == 1 =>
        {
            push("to_apply", name(0))
        }
        _ if called.len() == 1 => push("calls", name(0)),
        _ => push("calls", list()),
    }
}

/// A C-escaped, double-quoted string.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\{:03o}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `low_high` per dimension joined by `x`, with `_interior` on every dimension when any
/// dimension has interior padding.
fn padding_text(padding: &[PadDim]) -> String {
    let interior = padding.iter().any(|d| d.interior != 0);
    let dims: Vec<String> = padding
        .iter()
        .map(|d| {
            if interior {
                format!("{}_{}_{}", d.low, d.high, d.interior)
            } else {
                format!("{}_{}", d.low, d.high)
            }
        })
        .collect();
    dims.join("x")
}

/// `{size=3x3 stride=2x1 pad=0_1x1_1 lhs_dilate=... rhs_dilate=... rhs_reversal=...}`; fields
/// at their defaults are left out.
fn window_text(window: &[WindowDim]) -> String {
    if window.is_empty() {
        return "{}".to_string();
    }
    let field =
        |f: &dyn Fn(&WindowDim) -> String| window.iter().map(f).collect::<Vec<_>>().join("x");
    let mut parts = vec![format!("size={}", field(&|d| d.size.to_string()))];
    if window.iter().any(|d| d.stride != 1) {
        parts.push(format!("stride={}", field(&|d| d.stride.to_string())));
    }
    if window
        .iter()
        .any(|d| d.padding_low != 0 || d.padding_high != 0)
    {
        parts.push(format!(
            "pad={}",
            field(&|d| format!("{}_{}", d.padding_low, d.padding_high))
        ));
    }
    if window.iter().any(|d| d.base_dilation != 1) {
        parts.push(format!(
            "lhs_dilate={}",
            field(&|d| d.base_dilation.to_string())
        ));
    }
    if window.iter().any(|d| d.window_dilation != 1) {
        parts.push(format!(
            "rhs_dilate={}",
            field(&|d| d.window_dilation.to_string())
        ));
    }
    if window.iter().any(|d| d.window_reversal) {
        parts.push(format!(
            "rhs_reversal={}",
            field(&|d| u8::from(d.window_reversal).to_string())
        ));
    }
    format!("{{{}}}", parts.join(" "))
}

/// `b01f_01io->b01f` from positions; positions that are out of range print as `?`.
fn dim_labels_text(d: &ConvDimensionNumbers) -> String {
    fn part(first: (u8, i64), second: (u8, i64), spatial: &[i64]) -> String {
        let rank = spatial.len() + 2;
        let mut labels = vec![b'?'; rank];
        let mut place = |pos: i64, label: u8| {
            if let Some(slot) = usize::try_from(pos).ok().and_then(|p| labels.get_mut(p)) {
                *slot = label;
            }
        };
        place(first.1, first.0);
        place(second.1, second.0);
        for (i, &pos) in spatial.iter().enumerate() {
            place(pos, if i < 10 { b'0' + i as u8 } else { b'?' });
        }
        String::from_utf8(labels).unwrap_or_default()
    }
    format!(
        "{}_{}->{}",
        part(
            (b'b', d.input_batch),
            (b'f', d.input_feature),
            &d.input_spatial
        ),
        part(
            (b'i', d.kernel_input_feature),
            (b'o', d.kernel_output_feature),
            &d.kernel_spatial
        ),
        part(
            (b'b', d.output_batch),
            (b'f', d.output_feature),
            &d.output_spatial
        )
    )
}
