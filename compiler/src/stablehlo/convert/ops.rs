//! One StableHLO / CHLO / func op to HLO instructions.

use super::super::ir::{Attr, Op, TensorType, Type};
use super::text::{dense_literal_text, dims, ints, list, mlir_attr_text, pairs, quote};
use super::{str_attr, CResult, Comp, Converter, Val};

/// StableHLO elementwise ops that are one HLO opcode of the same arity.
fn elementwise_opcode(short: &str) -> Option<&'static str> {
    Some(match short {
        "abs" => "abs",
        "negate" => "negate",
        "exponential" => "exponential",
        "exponential_minus_one" => "exponential-minus-one",
        "log" => "log",
        "log_plus_one" => "log-plus-one",
        "sqrt" => "sqrt",
        "rsqrt" => "rsqrt",
        "cbrt" => "cbrt",
        "sine" => "sine",
        "cosine" => "cosine",
        "tan" => "tan",
        "tanh" => "tanh",
        "logistic" => "logistic",
        "floor" => "floor",
        "ceil" => "ceil",
        "sign" => "sign",
        "not" => "not",
        "popcnt" => "popcnt",
        "count_leading_zeros" => "count-leading-zeros",
        "is_finite" => "is-finite",
        "real" => "real",
        "imag" => "imag",
        "round_nearest_even" => "round-nearest-even",
        "round_nearest_afz" => "round-nearest-afz",
        "convert" => "convert",
        "bitcast_convert" => "bitcast-convert",
        "reshape" => "reshape",
        "add" => "add",
        "subtract" => "subtract",
        "multiply" => "multiply",
        "divide" => "divide",
        "remainder" => "remainder",
        "maximum" => "maximum",
        "minimum" => "minimum",
        "power" => "power",
        "and" => "and",
        "or" => "or",
        "xor" => "xor",
        "shift_left" => "shift-left",
        "shift_right_logical" => "shift-right-logical",
        "shift_right_arithmetic" => "shift-right-arithmetic",
        "atan2" => "atan2",
        "complex" => "complex",
        "select" => "select",
        "clamp" => "clamp",
        "dynamic_update_slice" => "dynamic-update-slice",
        "tuple" => "tuple",
        "after_all" => "after-all",
        // XLA writes a fresh token as an after-all of nothing.
        "create_token" => "after-all",
        "erf" => "erf",
        "replica_id" => "replica-id",
        "partition_id" => "partition-id",
        _ => return None,
    })
}

fn enum_value(a: Option<&Attr>) -> Option<String> {
    match a? {
        Attr::Dialect { fields, .. } => match fields.get("value") {
            Some(Attr::Enum(e)) => Some(e.clone()),
            _ => None,
        },
        Attr::Enum(e) => Some(e.clone()),
        Attr::String(s) => Some(s.clone()),
        _ => None,
    }
}

fn dialect_fields<'a>(a: Option<&'a Attr>) -> Option<&'a std::collections::BTreeMap<String, Attr>> {
    match a? {
        Attr::Dialect { fields, .. } => Some(fields),
        _ => None,
    }
}

impl<'m> Converter<'m> {
    fn names(vals: &[Val]) -> String {
        vals.iter().map(|v| v.name.clone()).collect::<Vec<_>>().join(", ")
    }

    fn ints_attr(&self, op: &Op, name: &str) -> CResult<Vec<i64>> {
        let a = op.attr(name).ok_or_else(|| self.err(format!("missing attribute '{name}'")))?;
        ints(a).map_err(|e| self.err(format!("{name}: {e}")))
    }

    fn ints_or(&self, op: &Op, name: &str, default: Vec<i64>) -> CResult<Vec<i64>> {
        match op.attr(name) {
            Some(a) => ints(a).map_err(|e| self.err(format!("{name}: {e}"))),
            None => Ok(default),
        }
    }

    fn field_ints(&self, fields: &std::collections::BTreeMap<String, Attr>, name: &str) -> CResult<Vec<i64>> {
        match fields.get(name) {
            Some(a) => ints(a).map_err(|e| self.err(format!("{name}: {e}"))),
            None => Ok(Vec::new()),
        }
    }

    fn tensor<'a>(&self, ty: &'a Type) -> CResult<&'a TensorType> {
        match ty {
            Type::Tensor(t) => Ok(t),
            other => Err(self.err(format!("expected a tensor, found {other:?}"))),
        }
    }

    fn result_type(&self, op: &Op) -> CResult<Type> {
        op.result_types.first().cloned().ok_or_else(|| self.err("the op has no result type"))
    }

    fn bool_attr(op: &Op, name: &str) -> bool {
        matches!(op.attr(name), Some(Attr::Bool(true)) | Some(Attr::Unit))
    }

    /// Ops that leave their operands unchanged on one device:
    /// - `builtin.unrealized_conversion_cast`: when StableHLO serializes a module with ops of
    ///   other dialects (Shardy's) into VHLO, it casts their operands from VHLO types and their
    ///   results back; read back, both sides are the same tensor type.
    /// - `sdy.sharding_constraint` and `sdy.reshard` on a mesh of one device (JAX writes them
    ///   for `with_sharding_constraint` and `device_put` under jit); a mesh with more devices
    ///   makes it a sharded program, which hlojit does not partition.
    /// - `sdy.sharding_group` (`shard_alike`): asks that its operands get one sharding; it has
    ///   no results, so on one device it is nothing.
    fn pass_through(&self, op: &Op, operands: &[Val]) -> CResult<Option<Vec<Val>>> {
        match op.name.as_str() {
            "sdy.sharding_group" => {
                if operands.len() != 1 || !op.result_types.is_empty() {
                    return Err(self.err("sdy.sharding_group takes one operand and has no results"));
                }
                return Ok(Some(Vec::new()));
            }
            "builtin.unrealized_conversion_cast" => {
                if operands.len() != op.result_types.len() || operands.iter().zip(&op.result_types).any(|(v, t)| &v.ty != t) {
                    return Err(self.err("unrealized_conversion_cast between different types"));
                }
            }
            "sdy.sharding_constraint" | "sdy.reshard" => {
                for attr in op.attrs.values() {
                    if let Attr::Opaque(text) = attr {
                        crate::stablehlo::parser::check_single_device_mesh(text).map_err(|e| self.err(e))?;
                    }
                }
                if operands.len() != 1 || op.result_types.len() != 1 || operands[0].ty != op.result_types[0] {
                    return Err(self.err(format!("{} takes one operand of its result's type", op.name)));
                }
            }
            _ => return Ok(None),
        }
        Ok(Some(operands.to_vec()))
    }

    pub(super) fn convert_op(&mut self, comp: &mut Comp, op: &'m Op) -> CResult<()> {
        let operands = op.operands.iter().map(|v| self.get(comp, v)).collect::<CResult<Vec<_>>>()?;
        let (dialect, short) = op.name.split_once('.').unwrap_or(("", op.name.as_str()));
        if dialect == "chlo" {
            let vals = self.convert_chlo(comp, op, short, &operands)?;
            return self.bind(comp, op, vals);
        }
        if let Some(vals) = self.pass_through(op, &operands)? {
            return self.bind(comp, op, vals);
        }
        if dialect != "stablehlo" && dialect != "mhlo" && op.name != "func.call" {
            return Err(self.err(format!("unsupported op '{}'", op.name)));
        }
        let args = Self::names(&operands);
        let vals: Vec<Val> = match short {
            "constant" => {
                let Some(Attr::Dense(d)) = op.attr("value") else {
                    return Err(self.err("constant without dense value"));
                };
                let lit = dense_literal_text(d).map_err(|e| self.err(e))?;
                let ty = Type::Tensor(d.ty.clone());
                vec![self.emit(comp, "constant", &ty, format!("constant({lit})"))?]
            }
            "compare" => {
                let dir = enum_value(op.attr("comparison_direction")).ok_or_else(|| self.err("compare without direction"))?;
                let mut body = format!("compare({args}), direction={dir}");
                if enum_value(op.attr("compare_type")).as_deref() == Some("TOTALORDER") {
                    body.push_str(", type=TOTALORDER");
                }
                vec![self.emit(comp, "compare", &self.result_type(op)?, body)?]
            }
            "broadcast_in_dim" => {
                let d = self.ints_attr(op, "broadcast_dimensions")?;
                let ty = self.result_type(op)?;
                vec![self.broadcast_in_dim(comp, &operands[0], &d, &ty)?]
            }
            "transpose" => {
                let d = self.ints_attr(op, "permutation")?;
                vec![self.emit(comp, "transpose", &self.result_type(op)?, format!("transpose({args}), dimensions={}", list(&d)))?]
            }
            "reverse" => {
                let d = self.ints_attr(op, "dimensions")?;
                vec![self.emit(comp, "reverse", &self.result_type(op)?, format!("reverse({args}), dimensions={}", list(&d)))?]
            }
            "concatenate" => {
                let d = self.ints_attr(op, "dimension")?;
                vec![self.emit(comp, "concatenate", &self.result_type(op)?, format!("concatenate({args}), dimensions={}", list(&d)))?]
            }
            "iota" => {
                let d = self.ints_attr(op, "iota_dimension")?;
                vec![self.emit(comp, "iota", &self.result_type(op)?, format!("iota(), iota_dimension={}", d.first().copied().unwrap_or(0)))?]
            }
            "slice" => {
                let (s, l) = (self.ints_attr(op, "start_indices")?, self.ints_attr(op, "limit_indices")?);
                let st = self.ints_or(op, "strides", vec![1; s.len()])?;
                let spec: Vec<String> = (0..s.len()).map(|i| format!("[{}:{}:{}]", s[i], l.get(i).copied().unwrap_or(0), st.get(i).copied().unwrap_or(1))).collect();
                vec![self.emit(comp, "slice", &self.result_type(op)?, format!("slice({args}), slice={{{}}}", spec.join(", ")))?]
            }
            "dynamic_slice" => {
                let sizes = self.ints_attr(op, "slice_sizes")?;
                vec![self.emit(comp, "dynamic-slice", &self.result_type(op)?, format!("dynamic-slice({args}), dynamic_slice_sizes={}", list(&sizes)))?]
            }
            "pad" => {
                let (lo, hi) = (self.ints_attr(op, "edge_padding_low")?, self.ints_attr(op, "edge_padding_high")?);
                let interior = self.ints_or(op, "interior_padding", vec![0; lo.len()])?;
                let spec: Vec<String> = (0..lo.len()).map(|i| format!("{}_{}_{}", lo[i], hi.get(i).copied().unwrap_or(0), interior.get(i).copied().unwrap_or(0))).collect();
                let spec = if spec.is_empty() { String::new() } else { format!(", padding={}", spec.join("x")) };
                vec![self.emit(comp, "pad", &self.result_type(op)?, format!("pad({args}){spec}"))?]
            }
            "dot_general" | "dot" => {
                let mut body = format!("dot({args})");
                if let Some(f) = dialect_fields(op.attr("dot_dimension_numbers")) {
                    for (field, key) in [
                        ("lhs_batching_dimensions", "lhs_batch_dims"),
                        ("rhs_batching_dimensions", "rhs_batch_dims"),
                        ("lhs_contracting_dimensions", "lhs_contracting_dims"),
                        ("rhs_contracting_dimensions", "rhs_contracting_dims"),
                    ] {
                        let v = self.field_ints(f, field)?;
                        if !v.is_empty() {
                            body.push_str(&format!(", {key}={}", list(&v)));
                        }
                    }
                } else if short == "dot" {
                    let lhs_rank = self.tensor(&operands[0].ty)?.dims.len() as i64;
                    body.push_str(&format!(", lhs_contracting_dims={{{}}}, rhs_contracting_dims={{0}}", lhs_rank - 1));
                }
                vec![self.emit(comp, "dot", &self.result_type(op)?, body)?]
            }
            "convolution" => vec![self.convert_convolution(comp, op, &operands)?],
            "reduce" => self.convert_reduce(comp, op, &operands)?,
            "all_reduce" => {
                // XLA's converter: one all-reduce over all operands (a tuple when several),
                // the region as to_apply, replica groups and channel as HLO spells them.
                let body = self.region_or_err(op, 0, "all_reduce_body")?;
                let mut text = format!("all-reduce({args}), replica_groups={}", self.replica_groups(op)?);
                if let Some(channel) = self.channel_id(op)? {
                    text.push_str(&format!(", channel_id={channel}"));
                }
                if Self::bool_attr(op, "use_global_device_ids") {
                    text.push_str(", use_global_device_ids=true");
                }
                text.push_str(&format!(", to_apply={body}"));
                if op.result_types.len() == 1 {
                    vec![self.emit(comp, "all-reduce", &self.result_type(op)?, text)?]
                } else {
                    self.emit_multi(comp, "all-reduce", &op.result_types, text)?
                }
            }
            "all_gather" | "reduce_scatter" | "collective_permute" | "all_to_all" | "collective_broadcast" => {
                self.convert_collective(comp, op, short, &args, &operands)?
            }
            "reduce_window" => {
                let body = self.region_or_err(op, 0, "reduce_window_body")?;
                let n = operands.len() / 2;
                let t = self.tensor(&operands[0].ty)?.clone();
                let rank = t.dims.len();
                let size = self.ints_attr(op, "window_dimensions")?;
                let window = self.window_text(op, &size, "window_strides", "padding", "base_dilations", "window_dilations", None, rank)?;
                let body = format!("reduce-window({args}), window={{{window}}}, to_apply={body}");
                if n == 1 {
                    vec![self.emit(comp, "reduce-window", &self.result_type(op)?, body)?]
                } else {
                    self.emit_multi(comp, "reduce-window", &op.result_types, body)?
                }
            }
            "select_and_scatter" => {
                let select = self.region_or_err(op, 0, "select")?;
                let scatter = self.region_or_err(op, 1, "scatter")?;
                let rank = self.tensor(&operands[0].ty)?.dims.len();
                let size = self.ints_attr(op, "window_dimensions")?;
                let window = self.window_text(op, &size, "window_strides", "padding", "", "", None, rank)?;
                vec![self.emit(comp, "select-and-scatter", &self.result_type(op)?, format!("select-and-scatter({args}), window={{{window}}}, select={select}, scatter={scatter}"))?]
            }
            "gather" => {
                let f = dialect_fields(op.attr("dimension_numbers")).ok_or_else(|| self.err("gather without dimension_numbers"))?.clone();
                let mut body = format!(
                    "gather({args}), offset_dims={}, collapsed_slice_dims={}, start_index_map={}, index_vector_dim={}, slice_sizes={}",
                    list(&self.field_ints(&f, "offset_dims")?),
                    list(&self.field_ints(&f, "collapsed_slice_dims")?),
                    list(&self.field_ints(&f, "start_index_map")?),
                    self.field_ints(&f, "index_vector_dim")?.first().copied().unwrap_or(0),
                    list(&self.ints_attr(op, "slice_sizes")?)
                );
                let (ob, sb) = (self.field_ints(&f, "operand_batching_dims")?, self.field_ints(&f, "start_indices_batching_dims")?);
                if !ob.is_empty() {
                    body.push_str(&format!(", operand_batching_dims={}, start_indices_batching_dims={}", list(&ob), list(&sb)));
                }
                if Self::bool_attr(op, "indices_are_sorted") {
                    body.push_str(", indices_are_sorted=true");
                }
                vec![self.emit(comp, "gather", &self.result_type(op)?, body)?]
            }
            "scatter" => {
                let f = dialect_fields(op.attr("scatter_dimension_numbers")).ok_or_else(|| self.err("scatter without scatter_dimension_numbers"))?.clone();
                let update = self.region_or_err(op, 0, "scatter_update")?;
                let mut body = format!(
                    "scatter({args}), update_window_dims={}, inserted_window_dims={}, scatter_dims_to_operand_dims={}, index_vector_dim={}",
                    list(&self.field_ints(&f, "update_window_dims")?),
                    list(&self.field_ints(&f, "inserted_window_dims")?),
                    list(&self.field_ints(&f, "scatter_dims_to_operand_dims")?),
                    self.field_ints(&f, "index_vector_dim")?.first().copied().unwrap_or(0),
                );
                let (ib, sb) = (self.field_ints(&f, "input_batching_dims")?, self.field_ints(&f, "scatter_indices_batching_dims")?);
                if !ib.is_empty() {
                    body.push_str(&format!(", input_batching_dims={}, scatter_indices_batching_dims={}", list(&ib), list(&sb)));
                }
                if Self::bool_attr(op, "indices_are_sorted") {
                    body.push_str(", indices_are_sorted=true");
                }
                if Self::bool_attr(op, "unique_indices") {
                    body.push_str(", unique_indices=true");
                }
                body.push_str(&format!(", to_apply={update}"));
                if op.result_types.len() == 1 {
                    vec![self.emit(comp, "scatter", &self.result_type(op)?, body)?]
                } else {
                    self.emit_multi(comp, "scatter", &op.result_types, body)?
                }
            }
            "sort" => {
                let cmp = self.region_or_err(op, 0, "compare")?;
                let dim = self.ints_or(op, "dimension", vec![-1])?.first().copied().unwrap_or(-1);
                let rank = self.tensor(&operands[0].ty)?.dims.len() as i64;
                let dim = if dim < 0 { dim + rank } else { dim };
                let stable = if Self::bool_attr(op, "is_stable") { ", is_stable=true" } else { "" };
                let body = format!("sort({args}), dimensions={{{dim}}}{stable}, to_apply={cmp}");
                if op.result_types.len() == 1 {
                    vec![self.emit(comp, "sort", &self.result_type(op)?, body)?]
                } else {
                    self.emit_multi(comp, "sort", &op.result_types, body)?
                }
            }
            "while" => self.convert_while(comp, op, &operands)?,
            "case" | "if" => self.convert_case(comp, op, short, &operands)?,
            "fft" => {
                let t = enum_value(op.attr("fft_type")).ok_or_else(|| self.err("fft without fft_type"))?;
                let len = self.ints_attr(op, "fft_length")?;
                vec![self.emit(comp, "fft", &self.result_type(op)?, format!("fft({args}), fft_type={t}, fft_length={}", list(&len)))?]
            }
            "rng_bit_generator" => {
                let alg = match enum_value(op.attr("rng_algorithm")).as_deref() {
                    None | Some("DEFAULT") => "rng_default",
                    Some("THREE_FRY") => "rng_three_fry",
                    Some("PHILOX") => "rng_philox",
                    Some(other) => return Err(self.err(format!("unknown rng algorithm {other}"))),
                };
                self.emit_multi(comp, "rng-bit-generator", &op.result_types, format!("rng-bit-generator({args}), algorithm={alg}"))?
            }
            "reduce_precision" => {
                let e = self.ints_attr(op, "exponent_bits")?;
                let m = self.ints_attr(op, "mantissa_bits")?;
                vec![self.emit(comp, "reduce-precision", &self.result_type(op)?, format!("reduce-precision({args}), exponent_bits={}, mantissa_bits={}", e[0], m[0]))?]
            }
            "optimization_barrier" => {
                let types: Vec<Type> = operands.iter().map(|v| v.ty.clone()).collect();
                let t = self.emit(comp, "tuple", &Type::Tuple(types.clone()), format!("tuple({args})"))?;
                let b = self.emit(comp, "opt-barrier", &Type::Tuple(types.clone()), format!("opt-barrier({})", t.name))?;
                types.iter().enumerate().map(|(i, ty)| self.emit(comp, "gte", ty, format!("get-tuple-element({}), index={i}", b.name))).collect::<CResult<_>>()?
            }
            "get_tuple_element" => {
                let i = self.ints_attr(op, "index")?;
                vec![self.emit(comp, "gte", &self.result_type(op)?, format!("get-tuple-element({args}), index={}", i[0]))?]
            }
            "call" => {
                let callee = str_attr(op, "callee").ok_or_else(|| self.err("func.call without callee"))?;
                let (name, results) = self.callee(&callee)?;
                let body = format!("call({args}), to_apply={name}");
                if results.len() == 1 {
                    vec![self.emit(comp, "call", &results[0], body)?]
                } else {
                    self.emit_multi(comp, "call", &results, body)?
                }
            }
            "composite" => {
                let decomposition = str_attr(op, "decomposition").ok_or_else(|| self.err("composite without decomposition"))?;
                let (name, results) = self.callee(&decomposition)?;
                let cname = str_attr(op, "name").unwrap_or_default();
                let cattrs = op.attr("composite_attributes").map(mlir_attr_text).unwrap_or_else(|| "{}".into());
                let version = self.ints_or(op, "version", vec![0])?.first().copied().unwrap_or(0);
                let body = format!(
                    "call({args}), to_apply={name}, is_composite=true, frontend_attributes={{composite.attributes={},composite.name={},composite.version={}}}",
                    quote(&cattrs),
                    quote(&cname),
                    quote(&version.to_string())
                );
                if results.len() == 1 {
                    vec![self.emit(comp, "call", &results[0], body)?]
                } else {
                    self.emit_multi(comp, "call", &results, body)?
                }
            }
            "custom_call" => self.convert_custom_call(comp, op, &operands)?,
            "select" if operands.len() == 3 && self.tensor(&operands[0].ty)?.dims.is_empty() && !self.tensor(&operands[1].ty)?.dims.is_empty() => {
                // A scalar predicate selects whole arrays; HLO's select is elementwise.
                let ty = self.result_type(op)?;
                let t = self.tensor(&ty)?.clone();
                let pred_ty = Type::Tensor(TensorType { element: self.tensor(&operands[0].ty)?.element, ..t });
                let p = self.emit(comp, "broadcast", &pred_ty, format!("broadcast({}), dimensions={{}}", operands[0].name))?;
                vec![self.emit(comp, "select", &ty, format!("select({}, {}, {})", p.name, operands[1].name, operands[2].name))?]
            }
            _ => {
                let Some(opcode) = elementwise_opcode(short) else {
                    return Err(self.err(format!("unsupported op '{}'", op.name)));
                };
                let ty = self.result_type(op)?;
                vec![self.emit(comp, opcode, &ty, format!("{opcode}({args})"))?]
            }
        };
        self.bind(comp, op, vals)
    }

    /// StableHLO's broadcast_in_dim may expand size-1 dimensions, HLO's broadcast may not:
    /// XLA reshapes them away first.
    fn broadcast_in_dim(&mut self, comp: &mut Comp, x: &Val, dims_: &[i64], ty: &Type) -> CResult<Val> {
        let from = self.tensor(&x.ty)?.clone();
        let to = self.tensor(ty)?.clone();
        let (fd, td) = (dims(&from), dims(&to));
        let expanding: Vec<usize> = (0..fd.len()).filter(|&i| fd[i] == 1 && td.get(dims_[i] as usize).is_some_and(|&s| s != 1)).collect();
        if expanding.is_empty() {
            return self.emit(comp, "broadcast", ty, format!("broadcast({}), dimensions={}", x.name, list(dims_)));
        }
        let keep: Vec<usize> = (0..fd.len()).filter(|i| !expanding.contains(i)).collect();
        let reshaped_ty = Type::Tensor(TensorType { dims: keep.iter().map(|&i| from.dims[i]).collect(), bounds: None, element: from.element });
        let r = self.emit(comp, "reshape", &reshaped_ty, format!("reshape({})", x.name))?;
        let kept_dims: Vec<i64> = keep.iter().map(|&i| dims_[i]).collect();
        self.emit(comp, "broadcast", ty, format!("broadcast({}), dimensions={}", r.name, list(&kept_dims)))
    }

    /// `replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>` as HLO's `{{0,1},{2,3}}`;
    /// -1 entries pad groups of unequal size and are left out, as XLA's converter does.
    fn replica_groups(&self, op: &Op) -> CResult<String> {
        let Some(Attr::Dense(d)) = op.attr("replica_groups") else {
            return Err(self.err("replica_groups must be a dense i64 tensor"));
        };
        let shape: Vec<i64> = d.ty.dims.iter().map(|x| x.unwrap_or(-1)).collect();
        let values = self.ints_attr(op, "replica_groups")?;
        let (groups, size) = match shape.as_slice() {
            [g, n] if *g >= 0 && *n >= 0 && (g * n) as usize == values.len() => (*g as usize, *n as usize),
            _ => return Err(self.err(format!("replica_groups of shape {shape:?}: a 2-D tensor expected"))),
        };
        let text: Vec<String> = (0..groups)
            .map(|g| {
                let ids: Vec<String> = values[g * size..(g + 1) * size].iter().filter(|&&v| v >= 0).map(|v| v.to_string()).collect();
                format!("{{{}}}", ids.join(","))
            })
            .collect();
        Ok(format!("{{{}}}", text.join(",")))
    }

    /// The channel of a collective: `channel_handle = #stablehlo.channel_handle<handle = 1,
    /// type = 1>` in text, `channel_id` in VHLO; none (or handle 0) for a cross-replica one.
    fn channel_id(&self, op: &Op) -> CResult<Option<i64>> {
        let handle = match (op.attr("channel_handle"), op.attr("channel_id")) {
            (Some(Attr::Dialect { fields, .. }), _) => match fields.get("handle") {
                Some(a) => ints(&Attr::Array(vec![a.clone()])).map_err(|e| self.err(format!("channel_handle: {e}")))?[0],
                None => return Err(self.err("channel_handle without handle")),
            },
            (_, Some(a)) => ints(&Attr::Array(vec![a.clone()])).map_err(|e| self.err(format!("channel_id: {e}")))?[0],
            _ => 0,
        };
        Ok((handle > 0).then_some(handle))
    }

    /// The other collectives as XLA's converter writes them: replica groups (or source-target
    /// pairs), the channel, `use_global_device_ids`, the dimension; several operands give one
    /// tuple-shaped instruction.
    fn convert_collective(&mut self, comp: &mut Comp, op: &'m Op, short: &str, args: &str, operands: &[Val]) -> CResult<Vec<Val>> {
        let hlo = match short {
            "all_gather" => "all-gather",
            "reduce_scatter" => "reduce-scatter",
            "collective_permute" => "collective-permute",
            "all_to_all" => "all-to-all",
            _ => "collective-broadcast",
        };
        let mut text = format!("{hlo}({args})");
        if let Some(channel) = self.channel_id(op)? {
            text.push_str(&format!(", channel_id={channel}"));
        }
        if short == "collective_permute" {
            let pairs = self.ints_attr(op, "source_target_pairs")?;
            if pairs.len() % 2 != 0 {
                return Err(self.err("source_target_pairs must be pairs"));
            }
            let pairs: Vec<String> = pairs.chunks(2).map(|p| format!("{{{},{}}}", p[0], p[1])).collect();
            text.push_str(&format!(", source_target_pairs={{{}}}", pairs.join(",")));
        } else {
            text.push_str(&format!(", replica_groups={}", self.replica_groups(op)?));
        }
        if Self::bool_attr(op, "use_global_device_ids") {
            text.push_str(", use_global_device_ids=true");
        }
        match short {
            "all_gather" => text.push_str(&format!(", dimensions={{{}}}", self.ints_attr(op, "all_gather_dim")?.first().copied().unwrap_or(0))),
            "reduce_scatter" => {
                let body = self.region_or_err(op, 0, "reduce_scatter_body")?;
                text.push_str(&format!(", dimensions={{{}}}, to_apply={body}", self.ints_attr(op, "scatter_dimension")?.first().copied().unwrap_or(0)));
            }
            "all_to_all" => {
                let split = self.ints_attr(op, "split_dimension")?;
                let concat = self.ints_attr(op, "concat_dimension")?;
                // HLO's array all-to-all splits and concatenates along one dimension; for two
                // different ones XLA's builder reshapes and transposes around it.
                if split != concat {
                    let (&[s], &[c], [x]) = (split.as_slice(), concat.as_slice(), operands) else {
                        return Err(self.err(format!("all_to_all with split_dimension {split:?} and concat_dimension {concat:?} over {} operands: one operand expected", operands.len())));
                    };
                    let n = self.ints_attr(op, "split_count")?.first().copied().unwrap_or(0);
                    let options = text[format!("{hlo}({args})").len()..].to_string();
                    return Ok(vec![self.all_to_all_across(comp, op, x, s, c, n, &options)?]);
                }
                text.push_str(&format!(", dimensions={{{}}}", split.first().copied().unwrap_or(0)));
            }
            _ => {}
        }
        if op.result_types.len() == 1 {
            Ok(vec![self.emit(comp, hlo, &self.result_type(op)?, text)?])
        } else {
            self.emit_multi(comp, hlo, &op.result_types, text)
        }
    }

    /// An all-to-all that splits `x` along dimension `s` into `n` chunks and concatenates the
    /// received ones along another dimension `c`: `x` reshaped so that the chunks are a
    /// dimension of size `n` at `s`, one all-to-all along it (afterwards its index is the
    /// sending participant), that dimension moved just before `c` and merged into it (chunk
    /// `j` of the result along `c` is participant `j`'s).
    #[allow(clippy::too_many_arguments)]
    fn all_to_all_across(&mut self, comp: &mut Comp, op: &Op, x: &Val, s: i64, c: i64, n: i64, options: &str) -> CResult<Val> {
        let t = self.tensor(&x.ty)?.clone();
        let d = dims(&t);
        let rank = d.len() as i64;
        if !(0..rank).contains(&s) || !(0..rank).contains(&c) || n <= 0 || d[s as usize] % n != 0 {
            return Err(self.err(format!("all_to_all: split_dimension {s}, concat_dimension {c} and split_count {n} do not fit the operand's shape {d:?}")));
        }
        let (s, c, n) = (s as usize, c as usize, n);
        let mut split = d.clone();
        split[s] /= n;
        split.insert(s, n);
        let typed = |dims: &[i64]| Type::Tensor(TensorType { dims: dims.iter().map(|&v| Some(v)).collect(), bounds: None, element: t.element });
        let reshaped = self.emit(comp, "reshape", &typed(&split), format!("reshape({})", x.name))?;
        let exchanged = self.emit(comp, "all-to-all", &typed(&split), format!("all-to-all({}){options}, dimensions={{{s}}}", reshaped.name))?;
        // Where the concat dimension is in `split`, and where it is once the chunk dimension
        // (at `s`) is taken out and put back just before it.
        let c_split = if c < s { c } else { c + 1 };
        let before = if c_split > s { c_split - 1 } else { c_split };
        let mut perm: Vec<usize> = (0..split.len()).filter(|&i| i != s).collect();
        perm.insert(before, s);
        let moved: Vec<i64> = perm.iter().map(|&i| split[i]).collect();
        let perm_text: Vec<String> = perm.iter().map(|i| i.to_string()).collect();
        let transposed = self.emit(comp, "transpose", &typed(&moved), format!("transpose({}), dimensions={{{}}}", exchanged.name, perm_text.join(",")))?;
        let result = self.result_type(op)?;
        self.emit(comp, "reshape", &result, format!("reshape({})", transposed.name))
    }

    fn region_or_err(&mut self, op: &'m Op, i: usize, kind: &str) -> CResult<String> {
        let r = op.regions.get(i).ok_or_else(|| self.err(format!("missing region {i}")))?;
        self.region_computation(r, kind)
    }

    /// XLA's window text: `size=2x2 stride=1x1 pad=0_1x0_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..`.
    #[allow(clippy::too_many_arguments)]
    fn window_text(&self, op: &Op, size: &[i64], strides: &str, padding: &str, lhs: &str, rhs: &str, reversal: Option<&str>, rank: usize) -> CResult<String> {
        let n = size.len();
        let _ = rank;
        let x = |v: &[i64]| v.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x");
        if n == 0 {
            // The window of a scalar has no dimensions: XLA prints `window={}`.
            return Ok(String::new());
        }
        let mut parts = vec![format!("size={}", x(size))];
        let s = self.ints_or(op, strides, vec![1; n])?;
        if s.iter().any(|&v| v != 1) {
            parts.push(format!("stride={}", x(&s)));
        }
        let p = match op.attr(padding) {
            Some(a) => pairs(a).map_err(|e| self.err(e))?,
            None => vec![(0, 0); n],
        };
        if p.iter().any(|&(a, b)| a != 0 || b != 0) {
            parts.push(format!("pad={}", p.iter().map(|(a, b)| format!("{a}_{b}")).collect::<Vec<_>>().join("x")));
        }
        for (attr, key) in [(lhs, "lhs_dilate"), (rhs, "rhs_dilate")] {
            if attr.is_empty() {
                continue;
            }
            let d = self.ints_or(op, attr, vec![1; n])?;
            if d.iter().any(|&v| v != 1) {
                parts.push(format!("{key}={}", x(&d)));
            }
        }
        if let Some(r) = reversal {
            let d = self.ints_or(op, r, vec![0; n])?;
            if d.iter().any(|&v| v != 0) {
                parts.push(format!("rhs_reversal={}", x(&d)));
            }
        }
        Ok(parts.join(" "))
    }

    fn convert_convolution(&mut self, comp: &mut Comp, op: &Op, operands: &[Val]) -> CResult<Val> {
        let f = dialect_fields(op.attr("dimension_numbers")).ok_or_else(|| self.err("convolution without dimension_numbers"))?.clone();
        let int = |k: &str| -> CResult<i64> { self.field_ints(&f, k)?.first().copied().ok_or_else(|| self.err(format!("missing {k}"))) };
        let labels = |rank: usize, first: (i64, char), second: (i64, char), spatial: &[i64]| -> String {
            let mut s = vec!['?'; rank];
            if let Some(c) = s.get_mut(first.0 as usize) {
                *c = first.1;
            }
            if let Some(c) = s.get_mut(second.0 as usize) {
                *c = second.1;
            }
            for (i, &d) in spatial.iter().enumerate() {
                if let Some(c) = s.get_mut(d as usize) {
                    *c = char::from_digit(i as u32, 36).unwrap_or('?');
                }
            }
            s.into_iter().collect()
        };
        let lhs = self.tensor(&operands[0].ty)?.clone();
        let rhs = self.tensor(&operands[1].ty)?.clone();
        let is = self.field_ints(&f, "input_spatial_dimensions")?;
        let ks = self.field_ints(&f, "kernel_spatial_dimensions")?;
        let os = self.field_ints(&f, "output_spatial_dimensions")?;
        let dl = format!(
            "{}_{}->{}",
            labels(lhs.dims.len(), (int("input_batch_dimension")?, 'b'), (int("input_feature_dimension")?, 'f'), &is),
            labels(rhs.dims.len(), (int("kernel_output_feature_dimension")?, 'o'), (int("kernel_input_feature_dimension")?, 'i'), &ks),
            labels(lhs.dims.len(), (int("output_batch_dimension")?, 'b'), (int("output_feature_dimension")?, 'f'), &os),
        );
        let kd = dims(&rhs);
        let size: Vec<i64> = ks.iter().map(|&d| kd.get(d as usize).copied().unwrap_or(1)).collect();
        let mut window = String::new();
        if !size.is_empty() {
            window = format!(", window={{{}}}", self.window_text(op, &size, "window_strides", "padding", "lhs_dilation", "rhs_dilation", Some("window_reversal"), lhs.dims.len())?);
        }
        let fg = self.ints_or(op, "feature_group_count", vec![1])?[0];
        let bg = self.ints_or(op, "batch_group_count", vec![1])?[0];
        let mut body = format!("convolution({}){window}, dim_labels={dl}", Self::names(operands));
        if fg != 1 {
            body.push_str(&format!(", feature_group_count={fg}"));
        }
        if bg != 1 {
            body.push_str(&format!(", batch_group_count={bg}"));
        }
        let ty = self.result_type(op)?;
        self.emit(comp, "convolution", &ty, body)
    }

    fn convert_reduce(&mut self, comp: &mut Comp, op: &'m Op, operands: &[Val]) -> CResult<Vec<Val>> {
        let dims_ = self.ints_attr(op, "dimensions")?;
        let n = operands.len() / 2;
        let to_apply = if let Some(Attr::String(body_op)) = op.attr("__applies") {
            // `applies stablehlo.add`: a reducer of that one op on scalars of the init type.
            let (_, short) = body_op.split_once('.').unwrap_or(("", body_op));
            let opcode = elementwise_opcode(short).ok_or_else(|| self.err(format!("reduce applies unsupported op {body_op}")))?;
            let t = self.tensor(&operands[n].ty)?;
            let shape = super::text::tensor_shape_text(t).map_err(|e| self.err(e))?;
            let name = self.fresh("region");
            let (a, b) = (self.fresh("Arg"), self.fresh("Arg"));
            let r = self.fresh(opcode);
            self.comps.push(format!("{name} {{\n  {a} = {shape} parameter(0)\n  {b} = {shape} parameter(1)\n  ROOT {r} = {shape} {opcode}({a}, {b})\n}}\n"));
            name
        } else {
            self.region_or_err(op, 0, "region")?
        };
        let body = format!("reduce({}), dimensions={}, to_apply={to_apply}", Self::names(operands), list(&dims_));
        if n == 1 {
            Ok(vec![self.emit(comp, "reduce", &self.result_type(op)?, body)?])
        } else {
            self.emit_multi(comp, "reduce", &op.result_types, body)
        }
    }

    fn convert_while(&mut self, comp: &mut Comp, op: &'m Op, operands: &[Val]) -> CResult<Vec<Val>> {
        let (cond, body) = match op.regions.as_slice() {
            [c, b] => (c, b),
            _ => return Err(self.err("while needs cond and body regions")),
        };
        let state: Vec<Type> = operands.iter().map(|v| v.ty.clone()).collect();
        let (names, captures) = self.capturing_regions(comp, &[(cond, "region_cond", None), (body, "region_body", Some(true))], &state)?;
        let mut init: Vec<String> = operands.iter().map(|v| v.name.clone()).collect();
        let mut types = state.clone();
        for (v, ty) in &captures {
            init.push(self.get(comp, v)?.name);
            types.push(ty.clone());
        }
        let t = self.emit(comp, "tuple", &Type::Tuple(types.clone()), format!("tuple({})", init.join(", ")))?;
        let w = self.emit(comp, "while", &Type::Tuple(types), format!("while({}), condition={}, body={}", t.name, names[0], names[1]))?;
        state.iter().enumerate().map(|(i, ty)| self.emit(comp, "gte", ty, format!("get-tuple-element({}), index={i}", w.name))).collect()
    }

    fn convert_case(&mut self, comp: &mut Comp, op: &'m Op, short: &str, operands: &[Val]) -> CResult<Vec<Val>> {
        let regions: Vec<(&'m super::super::ir::Region, &str, Option<bool>)> = op.regions.iter().map(|r| (r, "region_branch", Some(false))).collect();
        let (names, captures) = self.capturing_regions(comp, &regions, &[])?;
        let mut cap_names = Vec::new();
        let mut cap_types = Vec::new();
        for (v, ty) in &captures {
            cap_names.push(self.get(comp, v)?.name);
            cap_types.push(ty.clone());
        }
        let arg = self.emit(comp, "tuple", &Type::Tuple(cap_types), format!("tuple({})", cap_names.join(", ")))?;
        let args = vec![arg.name.clone(); names.len()].join(", ");
        let result = Type::Tuple(op.result_types.clone());
        let body = if short == "if" {
            format!("conditional({}, {args}), true_computation={}, false_computation={}", operands[0].name, names[0], names.get(1).cloned().unwrap_or_default())
        } else {
            format!("conditional({}, {args}), branch_computations={{{}}}", operands[0].name, names.join(", "))
        };
        let c = self.emit(comp, "conditional", &result, body)?;
        op.result_types.iter().enumerate().map(|(i, ty)| self.emit(comp, "gte", ty, format!("get-tuple-element({}), index={i}", c.name))).collect()
    }

    fn convert_custom_call(&mut self, comp: &mut Comp, op: &Op, operands: &[Val]) -> CResult<Vec<Val>> {
        let target = str_attr(op, "call_target_name").ok_or_else(|| self.err("custom_call without a target"))?;
        let mut body = format!("custom-call({}), custom_call_target={}", Self::names(operands), quote(&target));
        if let Some(Attr::Array(layouts)) = op.attr("operand_layouts") {
            let shapes = operands
                .iter()
                .zip(layouts)
                .map(|(v, l)| {
                    let s = super::text::shape_text(&v.ty).map_err(|e| self.err(e))?;
                    // A token has no layout (its entry is `dense<>`): HLO writes it bare.
                    if matches!(v.ty, Type::Token) {
                        return Ok(s);
                    }
                    let m2m = ints(l).map_err(|e| self.err(e))?;
                    Ok(format!("{s}{}", list(&m2m)))
                })
                .collect::<CResult<Vec<_>>>()?;
            body.push_str(&format!(", operand_layout_constraints={{{}}}", shapes.join(", ")));
        }
        if let Some(Attr::Array(aliases)) = op.attr("output_operand_aliases") {
            let mut parts = Vec::new();
            for a in aliases {
                let Attr::Dialect { fields, .. } = a else { continue };
                let out = self.field_ints(fields, "output_tuple_indices")?;
                let idx = self.field_ints(fields, "operand_index")?.first().copied().unwrap_or(0);
                let inner = self.field_ints(fields, "operand_tuple_indices")?;
                parts.push(format!("{}: ({idx}, {})", list(&out), list(&inner)));
            }
            if !parts.is_empty() {
                body.push_str(&format!(", output_to_operand_aliasing={{{}}}", parts.join(", ")));
            }
        }
        let api = self.ints_or(op, "api_version", vec![1])?.first().copied().unwrap_or(1);
        let typed_ffi = op.attr("mhlo.backend_config").is_some() || api == 4;
        let api_name = match (typed_ffi, api) {
            (true, _) | (_, 4) => "API_VERSION_TYPED_FFI",
            (_, 2) => "API_VERSION_STATUS_RETURNING",
            (_, 3) => "API_VERSION_STATUS_RETURNING_UNIFIED",
            _ => "API_VERSION_ORIGINAL",
        };
        body.push_str(&format!(", api_version={api_name}"));
        if Self::bool_attr(op, "has_side_effect") {
            body.push_str(", custom_call_has_side_effect=true");
        }
        let config = match (op.attr("mhlo.backend_config"), op.attr("backend_config")) {
            (Some(dict @ Attr::Dict(_)), _) | (_, Some(dict @ Attr::Dict(_))) => Some(mlir_attr_text(dict)),
            (_, Some(Attr::String(s))) if !s.is_empty() => Some(s.clone()),
            _ => None,
        };
        if let Some(cfg) = config {
            // Typed-FFI attributes stay an MLIR dictionary, as XLA prints them.
            if cfg.starts_with('{') {
                body.push_str(&format!(", backend_config={cfg}"));
            } else {
                body.push_str(&format!(", backend_config={}", quote(&cfg)));
            }
        }
        // Result layouts are part of the call's contract (LAPACK results are column-major).
        let layouts: Vec<Option<Vec<i64>>> = match op.attr("result_layouts") {
            Some(Attr::Array(ls)) => ls.iter().map(|l| ints(l).ok()).collect(),
            _ => vec![None; op.result_types.len()],
        };
        let (loc, what) = (self.current_loc, self.current_op.clone());
        let err = move |e: String| super::ConvertError { loc, message: format!("{what}: {e}") };
        let with_layout = |ty: &Type, l: Option<&Option<Vec<i64>>>| -> CResult<String> {
            let s = super::text::shape_text(ty).map_err(&err)?;
            Ok(match l {
                Some(Some(m2m)) if !m2m.is_empty() => format!("{s}{}", list(m2m)),
                _ => s,
            })
        };
        let single = op.result_types.len() == 1 && !matches!(op.result_types[0], Type::Tuple(_));
        if single {
            let shape = with_layout(&op.result_types[0], layouts.first())?;
            Ok(vec![self.emit_text(comp, "custom-call", &shape, op.result_types[0].clone(), body)?])
        } else {
            let parts = op.result_types.iter().enumerate().map(|(i, t)| with_layout(t, layouts.get(i))).collect::<CResult<Vec<_>>>()?;
            let shape = format!("({})", parts.join(", "));
            let t = self.emit_text(comp, "custom-call", &shape, Type::Tuple(op.result_types.clone()), body)?;
            op.result_types
                .iter()
                .enumerate()
                .map(|(i, ty)| {
                    let s = with_layout(ty, layouts.get(i))?;
                    self.emit_text(comp, "gte", &s, ty.clone(), format!("get-tuple-element({}), index={i}", t.name))
                })
                .collect()
        }
    }
}
