//! Attribute values: `dimensions={1,0}`, `window={size=3x3 pad=1_1x1_1}`,
//! `dim_labels=b01f_01io->b01f`, `replica_groups=[2,2]<=[4]`, ... parsed into the typed
//! [`Attributes`] fields; attributes hlojit does not interpret are kept verbatim.

use super::cursor::{Cursor, PResult};
use super::literal_text::parse_f32;
use super::shape::parse_shape;
use crate::hlo::attributes::*;
use crate::hlo::opcode::Opcode;
use hlojit_runtime::Shape;

/// A name as written (without `%`) and where, for resolving after the whole text is read.
#[derive(Clone, Debug)]
pub(crate) struct NameRef {
    pub name: String,
    pub pos: usize,
}

/// Computations an instruction names, by the attribute that named them.
#[derive(Default, Debug)]
pub(crate) struct CalledRefs {
    pub to_apply: Vec<NameRef>,
    pub calls: Vec<NameRef>,
    pub condition: Option<NameRef>,
    pub body: Option<NameRef>,
    pub select: Option<NameRef>,
    pub scatter: Option<NameRef>,
    pub true_computation: Option<NameRef>,
    pub false_computation: Option<NameRef>,
    pub branches: Vec<NameRef>,
    pub called_computations: Vec<NameRef>,
}

/// Everything the attributes of one instruction say.
#[derive(Default)]
pub(crate) struct InstrAttrs {
    pub attrs: Attributes,
    pub called: CalledRefs,
    pub control_predecessors: Vec<NameRef>,
}

/// Parses the value of `key=` (the `=` already consumed) for an instruction of `opcode`.
pub(crate) fn parse_attribute(
    c: &mut Cursor,
    key: &str,
    opcode: Opcode,
    out: &mut InstrAttrs,
) -> PResult<()> {
    let a = &mut out.attrs;
    match key {
        "dimensions" => a.dimensions = Some(int_list(c, key)?),
        "slice" => a.slice = Some(slice(c)?),
        "padding" if opcode == Opcode::Pad => a.padding = Some(padding(c)?),
        "window" => a.window = Some(window(c)?),
        "dim_labels" => a.conv_dims = Some(dim_labels(c)?),
        "feature_group_count" => a.feature_group_count = Some(c.int(key)?),
        "batch_group_count" => a.batch_group_count = Some(c.int(key)?),
        "lhs_batch_dims" => {
            a.dot_dims.get_or_insert_with(Default::default).lhs_batch = int_list(c, key)?
        }
        "rhs_batch_dims" => {
            a.dot_dims.get_or_insert_with(Default::default).rhs_batch = int_list(c, key)?
        }
        "lhs_contracting_dims" => {
            a.dot_dims
                .get_or_insert_with(Default::default)
                .lhs_contracting = int_list(c, key)?
        }
        "rhs_contracting_dims" => {
            a.dot_dims
                .get_or_insert_with(Default::default)
                .rhs_contracting = int_list(c, key)?
        }
        "operand_precision" => a.operand_precision = Some(ident_list(c, key)?),
        "offset_dims" => gather(a).offset_dims = int_list(c, key)?,
        "collapsed_slice_dims" => gather(a).collapsed_slice_dims = int_list(c, key)?,
        "start_index_map" => gather(a).start_index_map = int_list(c, key)?,
        "operand_batching_dims" => gather(a).operand_batching_dims = int_list(c, key)?,
        "start_indices_batching_dims" => gather(a).start_indices_batching_dims = int_list(c, key)?,
        "index_vector_dim" if opcode == Opcode::Scatter => {
            scatter(a).index_vector_dim = c.int(key)?
        }
        "index_vector_dim" => gather(a).index_vector_dim = c.int(key)?,
        "update_window_dims" => scatter(a).update_window_dims = int_list(c, key)?,
        "inserted_window_dims" => scatter(a).inserted_window_dims = int_list(c, key)?,
        "scatter_dims_to_operand_dims" => {
            scatter(a).scatter_dims_to_operand_dims = int_list(c, key)?
        }
        "input_batching_dims" => scatter(a).input_batching_dims = int_list(c, key)?,
        "scatter_indices_batching_dims" => {
            scatter(a).scatter_indices_batching_dims = int_list(c, key)?
        }
        "slice_sizes" | "dynamic_slice_sizes" => a.slice_sizes = Some(int_list(c, key)?),
        "indices_are_sorted" => a.indices_are_sorted = c.bool_value(key)?,
        "unique_indices" => a.unique_indices = c.bool_value(key)?,
        "is_stable" => a.is_stable = c.bool_value(key)?,
        "use_global_device_ids" => a.use_global_device_ids = c.bool_value(key)?,
        "custom_call_has_side_effect" => a.custom_call_has_side_effect = c.bool_value(key)?,
        "is_composite" => a.is_composite = c.bool_value(key)?,
        "direction" => {
            a.direction = Some(enum_value(
                c,
                key,
                ComparisonDirection::from_name,
                "EQ, NE, GE, GT, LE or LT",
            )?)
        }
        "type" if opcode == Opcode::Compare => {
            a.comparison_type = Some(enum_value(
                c,
                key,
                ComparisonType::from_name,
                "FLOAT, TOTALORDER, SIGNED or UNSIGNED",
            )?)
        }
        "iota_dimension" => a.iota_dimension = Some(c.int(key)?),
        "exponent_bits" => a.exponent_bits = Some(c.int(key)?),
        "mantissa_bits" => a.mantissa_bits = Some(c.int(key)?),
        "kind" if opcode == Opcode::Fusion => {
            a.fusion_kind = Some(enum_value(
                c,
                key,
                FusionKind::from_name,
                "kLoop, kInput, kOutput or kCustom",
            )?)
        }
        "distribution" => {
            a.distribution = Some(enum_value(
                c,
                key,
                RngDistribution::from_name,
                "rng_uniform or rng_normal",
            )?)
        }
        // A dot's `algorithm=` is a different enum (kept verbatim below).
        "algorithm" if opcode == Opcode::RngBitGenerator => {
            a.rng_algorithm = Some(enum_value(
                c,
                key,
                RngAlgorithm::from_name,
                "rng_default, rng_three_fry or rng_philox",
            )?)
        }
        "fft_type" => {
            a.fft_type = Some(enum_value(
                c,
                key,
                FftType::from_name,
                "FFT, IFFT, RFFT or IRFFT",
            )?)
        }
        "fft_length" => a.fft_length = Some(int_list(c, key)?),
        "k" => a.k = Some(c.int(key)?),
        "delta" => a.rng_delta = Some(c.int(key)?),
        "largest" => a.largest = Some(c.bool_value(key)?),
        "custom_call_target" => {
            a.custom_call_target = Some(c.string("a quoted custom_call_target")?)
        }
        "api_version" => {
            a.api_version = Some(enum_value(
                c,
                key,
                CustomCallApiVersion::from_name,
                "an API_VERSION_* name",
            )?)
        }
        "backend_config" if opcode == Opcode::CustomCall => {
            a.backend_config = Some(backend_config(c)?)
        }
        "operand_layout_constraints" => a.operand_layout_constraints = Some(shape_list(c, key)?),
        "output_to_operand_aliasing" => a.output_to_operand_aliasing = Some(output_aliasing(c)?),
        "lower" => a.lower = Some(c.bool_value(key)?),
        "left_side" => a.left_side = Some(c.bool_value(key)?),
        "unit_diagonal" => a.unit_diagonal = Some(c.bool_value(key)?),
        "transpose_a" => {
            a.transpose_a = Some(enum_value(
                c,
                key,
                Transpose::from_name,
                "NO_TRANSPOSE, TRANSPOSE or ADJOINT",
            )?)
        }
        "epsilon" => a.epsilon = Some(parse_f32(c)?),
        "feature_index" => a.feature_index = Some(c.int(key)?),
        "replica_groups" => a.replica_groups = Some(replica_groups(c)?),
        "channel_id" => a.channel_id = Some(c.int(key)?),
        "source_target_pairs" => a.source_target_pairs = Some(source_target_pairs(c)?),
        "index" if opcode == Opcode::GetTupleElement => {
            a.tuple_index = Some(c.non_negative("a tuple index")?)
        }
        "control-predecessors" => out.control_predecessors = name_list(c, "instruction name")?,
        "to_apply" | "comparator" => out.called.to_apply.push(single_name(c)?),
        "calls" => out.called.calls = one_or_more_names(c)?,
        "condition" => out.called.condition = Some(single_name(c)?),
        "body" => out.called.body = Some(single_name(c)?),
        "select" => out.called.select = Some(single_name(c)?),
        "scatter" => out.called.scatter = Some(single_name(c)?),
        "true_computation" => out.called.true_computation = Some(single_name(c)?),
        "false_computation" => out.called.false_computation = Some(single_name(c)?),
        "branch_computations" => out.called.branches = name_list(c, "computation name")?,
        "called_computations" => out.called.called_computations = name_list(c, "computation name")?,
        _ => {
            let value = c.raw_value(&format!("a value for {key}"))?;
            a.other.push(RawAttribute {
                key: key.to_string(),
                value: value.to_string(),
            });
        }
    }
    Ok(())
}

/// `{{0}: (0, {}), {1,0}: (2, {1})}`: output shape index, operand number, operand shape index.
fn output_aliasing(c: &mut Cursor) -> PResult<Vec<OutputAlias>> {
    const WHAT: &str = "output_to_operand_aliasing";
    c.expect(b'{', "to start output_to_operand_aliasing")?;
    let mut pairs = Vec::new();
    if c.eat(b'}') {
        return Ok(pairs);
    }
    loop {
        let output = shape_index(c, WHAT)?;
        c.expect(b':', "after an output index in output_to_operand_aliasing")?;
        c.expect(b'(', "to start an (operand, index) pair in output_to_operand_aliasing")?;
        let operand = c.non_negative("an operand number in output_to_operand_aliasing")? as usize;
        c.expect(b',', "after the operand number in output_to_operand_aliasing")?;
        let operand_index = shape_index(c, WHAT)?;
        c.expect(b')', "to end an (operand, index) pair in output_to_operand_aliasing")?;
        pairs.push(OutputAlias { output, operand, operand_index });
        if c.eat(b'}') {
            return Ok(pairs);
        }
        c.expect(b',', "or '}' in output_to_operand_aliasing")?;
    }
}

/// A shape index, `{}` or `{1,0}`: non-negative tuple element numbers.
fn shape_index(c: &mut Cursor, what: &str) -> PResult<Vec<i64>> {
    c.expect(b'{', &format!("to start a shape index in {what}"))?;
    let mut values = Vec::new();
    if c.eat(b'}') {
        return Ok(values);
    }
    loop {
        values.push(c.non_negative(&format!("a tuple element number in {what}"))?);
        if c.eat(b'}') {
            return Ok(values);
        }
        c.expect(b',', &format!("or '}}' in {what}"))?;
    }
}

fn gather(a: &mut Attributes) -> &mut GatherDimensionNumbers {
    a.gather_dims.get_or_insert_with(Default::default)
}

fn scatter(a: &mut Attributes) -> &mut ScatterDimensionNumbers {
    a.scatter_dims.get_or_insert_with(Default::default)
}

fn enum_value<T>(
    c: &mut Cursor,
    key: &str,
    from_name: fn(&str) -> Option<T>,
    choices: &str,
) -> PResult<T> {
    c.skip_trivia();
    let start = c.pos();
    match c.ident() {
        Some((_, word)) => from_name(word)
            .ok_or_else(|| c.error_at(start, format!("bad {key} '{word}': expected {choices}"))),
        None => Err(c.expected(&format!("{choices} for {key}"))),
    }
}

/// `{1,2,3}` or `{}`.
pub(crate) fn int_list(c: &mut Cursor, what: &str) -> PResult<Vec<i64>> {
    c.expect(b'{', &format!("to start {what}"))?;
    let mut values = Vec::new();
    if c.eat(b'}') {
        return Ok(values);
    }
    loop {
        values.push(c.int(&format!("an integer in {what}"))?);
        if c.eat(b'}') {
            return Ok(values);
        }
        c.expect(b',', &format!("or '}}' in {what}"))?;
    }
}

/// `{{0,1},{2,3}}`.
fn int_list_list(c: &mut Cursor, what: &str) -> PResult<Vec<Vec<i64>>> {
    c.expect(b'{', &format!("to start {what}"))?;
    let mut lists = Vec::new();
    if c.eat(b'}') {
        return Ok(lists);
    }
    loop {
        lists.push(int_list(c, what)?);
        if c.eat(b'}') {
            return Ok(lists);
        }
        c.expect(b',', &format!("or '}}' in {what}"))?;
    }
}

/// `{highest,default}`.
fn ident_list(c: &mut Cursor, what: &str) -> PResult<Vec<String>> {
    c.expect(b'{', &format!("to start {what}"))?;
    let mut values = Vec::new();
    if c.eat(b'}') {
        return Ok(values);
    }
    loop {
        match c.ident() {
            Some((_, word)) => values.push(word.to_string()),
            None => return Err(c.expected(&format!("a name in {what}"))),
        }
        if c.eat(b'}') {
            return Ok(values);
        }
        c.expect(b',', &format!("or '}}' in {what}"))?;
    }
}

fn single_name(c: &mut Cursor) -> PResult<NameRef> {
    let (pos, name) = c.expect_name("a computation name")?;
    Ok(NameRef {
        name: name.to_string(),
        pos,
    })
}

/// `%a` or `{%a, %b}`.
fn one_or_more_names(c: &mut Cursor) -> PResult<Vec<NameRef>> {
    if c.peek() == Some(b'{') {
        name_list(c, "computation name")
    } else {
        Ok(vec![single_name(c)?])
    }
}

/// `{%a, %b}` or `{}`.
fn name_list(c: &mut Cursor, what: &str) -> PResult<Vec<NameRef>> {
    c.expect(b'{', &format!("to start a list of {what}s"))?;
    let mut names = Vec::new();
    if c.eat(b'}') {
        return Ok(names);
    }
    loop {
        let (pos, name) = c.expect_name(&format!("a {what}"))?;
        names.push(NameRef {
            name: name.to_string(),
            pos,
        });
        if c.eat(b'}') {
            return Ok(names);
        }
        c.expect(b',', &format!("or '}}' between {what}s"))?;
    }
}

/// `{f32[2,2]{1,0}, f32[2]{0}}`.
fn shape_list(c: &mut Cursor, what: &str) -> PResult<Vec<Shape>> {
    c.expect(b'{', &format!("to start {what}"))?;
    let mut shapes = Vec::new();
    if c.eat(b'}') {
        return Ok(shapes);
    }
    loop {
        shapes.push(parse_shape(c, 0)?);
        if c.eat(b'}') {
            return Ok(shapes);
        }
        c.expect(b',', &format!("or '}}' in {what}"))?;
    }
}

/// `"..."` (unescaped) or `{...}` (verbatim).
fn backend_config(c: &mut Cursor) -> PResult<BackendConfig> {
    match c.peek() {
        Some(b'"') => Ok(BackendConfig::Quoted(c.string("backend_config")?)),
        Some(b'{') => Ok(BackendConfig::Braced(
            c.braced_raw("backend_config")?.to_string(),
        )),
        _ => Err(c.expected("a quoted string or '{' for backend_config")),
    }
}

/// `{[0:4:2], [1:3]}`: start, limit and an optional stride per dimension.
fn slice(c: &mut Cursor) -> PResult<Vec<SliceDim>> {
    c.expect(b'{', "to start slice")?;
    let mut dims = Vec::new();
    if c.eat(b'}') {
        return Ok(dims);
    }
    loop {
        c.expect(b'[', "to start a slice dimension [start:limit:stride]")?;
        let start = c.int("a slice start")?;
        c.expect(b':', "after the slice start")?;
        let limit = c.int("a slice limit")?;
        let stride = if c.eat(b':') {
            c.int("a slice stride")?
        } else {
            1
        };
        c.expect(b']', "after the slice dimension")?;
        dims.push(SliceDim {
            start,
            limit,
            stride,
        });
        if c.eat(b'}') {
            return Ok(dims);
        }
        c.expect(b',', "or '}' in slice")?;
    }
}

/// Integer groups joined by `_` within a dimension and `x` between dimensions, with no spaces:
/// `0_0_0x1_-1_2`, `3x3`. An empty value gives no dimensions.
fn x_separated(c: &mut Cursor, what: &str) -> PResult<Vec<Vec<i64>>> {
    c.skip_inline_trivia();
    let mut dims = Vec::new();
    if matches!(
        c.peek_raw(),
        None | Some(b',' | b'\n' | b'\r' | b'}' | b' ')
    ) {
        return Ok(dims);
    }
    loop {
        let mut group = vec![c.int_here(what)?];
        while c.peek_raw() == Some(b'_') {
            c.bump();
            group.push(c.int_here(what)?);
        }
        dims.push(group);
        if c.peek_raw() != Some(b'x') {
            return Ok(dims);
        }
        c.bump();
    }
}

/// A pad's `padding=low_high[_interior]x...`.
fn padding(c: &mut Cursor) -> PResult<Vec<PadDim>> {
    c.skip_inline_trivia();
    let start = c.pos();
    let groups = x_separated(c, "a padding amount")?;
    groups
        .into_iter()
        .map(|g| match g[..] {
            [low, high] => Ok(PadDim {
                low,
                high,
                interior: 0,
            }),
            [low, high, interior] => Ok(PadDim {
                low,
                high,
                interior,
            }),
            _ => Err(c.error_at(
                start,
                "each padding dimension must be low_high or low_high_interior",
            )),
        })
        .collect()
}

/// `{size=3x3 stride=2x1 pad=0_1x1_1 lhs_dilate=1x1 rhs_dilate=2x2 rhs_reversal=0x1}`.
fn window(c: &mut Cursor) -> PResult<Vec<WindowDim>> {
    c.expect(b'{', "to start window")?;
    let open = c.pos();
    let mut fields: Vec<(usize, &str, Vec<Vec<i64>>)> = Vec::new();
    while !c.eat(b'}') {
        let Some((key_pos, key)) = c.ident() else {
            return Err(c.expected(
                "a window field (size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal) or '}'",
            ));
        };
        if !matches!(
            key,
            "size" | "stride" | "pad" | "lhs_dilate" | "rhs_dilate" | "rhs_reversal"
        ) {
            return Err(c.error_at(key_pos, format!("unknown window field '{key}'")));
        }
        if fields.iter().any(|(_, k, _)| *k == key) {
            return Err(c.error_at(key_pos, format!("window field '{key}' given twice")));
        }
        if c.peek_raw() != Some(b'=') {
            return Err(c.expected(&format!("'=' after window field {key}")));
        }
        c.bump();
        let values = x_separated(c, &format!("a number in window {key}"))?;
        let arity = if key == "pad" { 2 } else { 1 };
        if values.is_empty() || values.iter().any(|g| g.len() != arity) {
            let form = if arity == 2 {
                "low_high per dimension, joined by 'x'"
            } else {
                "one number per dimension, joined by 'x'"
            };
            return Err(c.error_at(key_pos, format!("bad window {key}: expected {form}")));
        }
        fields.push((key_pos, key, values));
    }
    if fields.is_empty() {
        return Ok(Vec::new());
    }
    let Some((_, _, sizes)) = fields.iter().find(|(_, k, _)| *k == "size") else {
        return Err(c.error_at(open, "window has no size="));
    };
    let mut dims: Vec<WindowDim> = sizes.iter().map(|g| WindowDim::new(g[0])).collect();
    for (key_pos, key, values) in &fields {
        if values.len() != dims.len() {
            return Err(c.error_at(
                *key_pos,
                format!(
                    "window {key} has {} dimensions but size has {}",
                    values.len(),
                    dims.len()
                ),
            ));
        }
        for (dim, g) in dims.iter_mut().zip(values) {
            match *key {
                "stride" => dim.stride = g[0],
                "pad" => (dim.padding_low, dim.padding_high) = (g[0], g[1]),
                "lhs_dilate" => dim.base_dilation = g[0],
                "rhs_dilate" => dim.window_dilation = g[0],
                "rhs_reversal" => match g[0] {
                    0 | 1 => dim.window_reversal = g[0] == 1,
                    _ => {
                        return Err(
                            c.error_at(*key_pos, "window rhs_reversal values must be 0 or 1")
                        )
                    }
                },
                _ => {}
            }
        }
    }
    Ok(dims)
}

/// `b01f_01io->b01f`: where batch, feature and each spatial dimension sit in the input, kernel
/// and output.
fn dim_labels(c: &mut Cursor) -> PResult<ConvDimensionNumbers> {
    c.skip_trivia();
    let start = c.pos();
    while c
        .peek_raw()
        .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'>' | b'?'))
    {
        c.bump();
    }
    let text = c.slice(start, c.pos());
    let bad = |message: String| c.error_at(start, format!("bad dim_labels '{text}': {message}"));
    let Some((lhs, output)) = text.split_once("->") else {
        return Err(bad(
            "expected input_kernel->output, e.g. b01f_01io->b01f".into()
        ));
    };
    let Some((input, kernel)) = lhs.split_once('_') else {
        return Err(bad(
            "expected input_kernel->output, e.g. b01f_01io->b01f".into()
        ));
    };
    let (input_batch, input_feature, input_spatial) =
        labels(input, b'b', b'f').map_err(|m| bad(format!("input: {m}")))?;
    let (kernel_input_feature, kernel_output_feature, kernel_spatial) =
        labels(kernel, b'i', b'o').map_err(|m| bad(format!("kernel: {m}")))?;
    let (output_batch, output_feature, output_spatial) =
        labels(output, b'b', b'f').map_err(|m| bad(format!("output: {m}")))?;
    if input_spatial.len() != kernel_spatial.len() || input_spatial.len() != output_spatial.len() {
        return Err(bad(
            "input, kernel and output must have the same number of spatial dimensions".into(),
        ));
    }
    Ok(ConvDimensionNumbers {
        input_batch,
        input_feature,
        input_spatial,
        kernel_input_feature,
        kernel_output_feature,
        kernel_spatial,
        output_batch,
        output_feature,
        output_spatial,
    })
}

/// Positions of the two letters and of spatial digits 0, 1, ... in one part of dim_labels.
fn labels(part: &str, first: u8, second: u8) -> Result<(i64, i64, Vec<i64>), String> {
    let bytes = part.as_bytes();
    let find = |letter: u8| -> Result<i64, String> {
        let mut positions = bytes.iter().enumerate().filter(|(_, &b)| b == letter);
        match (positions.next(), positions.next()) {
            (Some((i, _)), None) => Ok(i as i64),
            (None, _) => Err(format!("no '{}' in '{part}'", letter as char)),
            _ => Err(format!("'{}' appears twice in '{part}'", letter as char)),
        }
    };
    let a = find(first)?;
    let b = find(second)?;
    let digits = bytes.iter().filter(|b| b.is_ascii_digit()).count();
    if digits + 2 != bytes.len() {
        return Err(format!(
            "'{part}' may only contain '{}', '{}' and spatial digits",
            first as char, second as char
        ));
    }
    let mut spatial = vec![-1i64; digits];
    for (i, &ch) in bytes.iter().enumerate() {
        if ch.is_ascii_digit() {
            let d = usize::from(ch - b'0');
            if d >= digits || spatial[d] != -1 {
                return Err(format!(
                    "spatial digits in '{part}' must be 0..{} each once",
                    digits.saturating_sub(1)
                ));
            }
            spatial[d] = i as i64;
        }
    }
    Ok((a, b, spatial))
}

/// `{{0,1},{2,3}}`, `{}`, or the iota form `[2,2]<=[4]` / `[4]<=[2,2]T(1,0)`, expanded.
fn replica_groups(c: &mut Cursor) -> PResult<Vec<Vec<i64>>> {
    if c.peek() != Some(b'[') {
        return int_list_list(c, "replica_groups");
    }
    let start = c.pos();
    let group_dims = bracket_list(c, "the replica group array shape")?;
    if !c.eat_str("<=") {
        return Err(c.expected("'<=' in iota replica groups"));
    }
    let reshape = bracket_list(c, "the iota reshape dimensions")?;
    let perm = if c.eat(b'T') {
        c.expect(b'(', "after T in iota replica groups")?;
        let mut perm = Vec::new();
        loop {
            perm.push(c.int("a transpose dimension")?);
            if c.eat(b')') {
                break;
            }
            c.expect(b',', "or ')' in the transpose")?;
        }
        perm
    } else {
        (0..reshape.len() as i64).collect()
    };
    let bad = |m: &str| c.error_at(start, format!("bad iota replica groups: {m}"));
    let total = reshape
        .iter()
        .try_fold(
            1i64,
            |acc, &d| if d < 0 { None } else { acc.checked_mul(d) },
        )
        .filter(|&n| n <= 1 << 24);
    let Some(total) = total else {
        return Err(bad("device count is negative or too large"));
    };
    let (groups, group_size) = match group_dims[..] {
        [g, s] if g >= 0 && s >= 0 => (g, s),
        [n] if n >= 0 => (1, n),
        _ => return Err(bad("the group array shape must be [groups,size]")),
    };
    if groups.checked_mul(group_size) != Some(total) {
        return Err(bad(
            "the group array shape and the iota dimensions have different sizes",
        ));
    }
    if groups > 1 << 24 {
        return Err(bad("too many groups"));
    }
    if total == 0 {
        return Ok(vec![Vec::new(); groups as usize]);
    }
    let rank = reshape.len();
    let mut seen = vec![false; rank];
    if perm.len() != rank
        || !perm.iter().all(|&p| {
            p >= 0 && (p as usize) < rank && !std::mem::replace(&mut seen[p as usize], true)
        })
    {
        return Err(bad("T(...) must be a permutation of the iota dimensions"));
    }
    let perm: Vec<usize> = perm.iter().map(|&p| p as usize).collect();
    // Position j of the transposed array holds the iota value at the source index whose
    // perm[k]-th coordinate is the transposed array's k-th coordinate.
    let transposed_dims: Vec<i64> = perm.iter().map(|&p| reshape[p]).collect();
    let mut strides = vec![1i64; rank];
    for k in (0..rank.saturating_sub(1)).rev() {
        strides[k] = strides[k + 1] * reshape[k + 1];
    }
    let mut values = Vec::with_capacity(total as usize);
    for j in 0..total {
        let mut rest = j;
        let mut source = 0;
        for k in (0..rank).rev() {
            let coordinate = rest % transposed_dims[k].max(1);
            rest /= transposed_dims[k].max(1);
            source += coordinate * strides[perm[k]];
        }
        values.push(source);
    }
    Ok(values
        .chunks(group_size.max(1) as usize)
        .map(<[i64]>::to_vec)
        .take(groups as usize)
        .collect())
}

/// `[2,2]`.
fn bracket_list(c: &mut Cursor, what: &str) -> PResult<Vec<i64>> {
    c.expect(b'[', &format!("to start {what}"))?;
    let mut values = Vec::new();
    loop {
        values.push(c.int(&format!("an integer in {what}"))?);
        if c.eat(b']') {
            return Ok(values);
        }
        c.expect(b',', &format!("or ']' in {what}"))?;
    }
}

/// `{{0,1},{1,2}}`: pairs of source and target.
fn source_target_pairs(c: &mut Cursor) -> PResult<Vec<(i64, i64)>> {
    c.skip_trivia();
    let start = c.pos();
    int_list_list(c, "source_target_pairs")?
        .into_iter()
        .map(|pair| match pair[..] {
            [s, t] => Ok((s, t)),
            _ => Err(c.error_at(
                start,
                "each source_target_pairs entry must be {source,target}",
            )),
        })
        .collect()
}
