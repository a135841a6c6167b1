//! Parsed values checked against what the text means (expected values worked out by hand from
//! XLA's definitions, not taken from our own output).

use super::super::{parse_module, parse_shape, print_module};
use crate::hlo::attributes::*;
use crate::hlo::instruction::{CompId, Instruction};
use crate::hlo::module::{AliasEntry, AliasKind, Module};
use crate::hlo::opcode::Opcode;
use hlojit_runtime::shape::TILE_COMBINE_DIMENSION;
use hlojit_runtime::{ArrayLiteral, ElementType, Literal, Shape};

fn parse(text: &str) -> Module {
    parse_module(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The instruction `name` in the entry computation.
fn entry_instr<'m>(m: &'m Module, name: &str) -> &'m Instruction {
    let comp = m.entry_computation();
    comp.get(comp.find(name).unwrap_or_else(|| panic!("no {name}")))
}

/// Parses, prints and reparses, checking the printed form is stable.
fn round_trip(m: &Module) -> Module {
    let text = print_module(m);
    let again = parse(&text);
    assert_eq!(print_module(&again), text);
    again
}

fn array(literal: &Option<Literal>) -> &ArrayLiteral {
    match literal {
        Some(Literal::Array(a)) => a,
        other => panic!("not an array literal: {other:?}"),
    }
}

#[test]
fn window_and_dim_labels() {
    let m = parse(
        "HloModule m
ENTRY e {
  x = f32[1,9,9,4] parameter(0)
  w = f32[3,3,4,8] parameter(1)
  ROOT c = f32[1,4,9,8] convolution(x, w), window={size=3x3 stride=2x1 pad=0_1x1_-1 lhs_dilate=1x2 rhs_dilate=2x1 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f, feature_group_count=1
}",
    );
    let c = entry_instr(&m, "c");
    let w = c.attrs.window.as_ref().expect("window");
    let expected = [
        WindowDim {
            size: 3,
            stride: 2,
            padding_low: 0,
            padding_high: 1,
            base_dilation: 1,
            window_dilation: 2,
            window_reversal: false,
        },
        WindowDim {
            size: 3,
            stride: 1,
            padding_low: 1,
            padding_high: -1,
            base_dilation: 2,
            window_dilation: 1,
            window_reversal: true,
        },
    ];
    assert_eq!(w, &expected);
    // b01f: batch at 0, spatial 0 at 1, spatial 1 at 2, feature at 3; 01io: spatial at 0 and
    // 1, input feature at 2, output feature at 3.
    let d = c.attrs.conv_dims.as_ref().expect("dim_labels");
    assert_eq!(
        (d.input_batch, d.input_feature, d.input_spatial.clone()),
        (0, 3, vec![1, 2])
    );
    assert_eq!(
        (
            d.kernel_input_feature,
            d.kernel_output_feature,
            d.kernel_spatial.clone()
        ),
        (2, 3, vec![0, 1])
    );
    assert_eq!(
        (d.output_batch, d.output_feature, d.output_spatial.clone()),
        (0, 3, vec![1, 2])
    );
    assert_eq!(c.attrs.feature_group_count, Some(1));
    let again = round_trip(&m);
    assert_eq!(
        entry_instr(&again, "c").attrs.window.as_ref(),
        Some(&expected.to_vec())
    );
}

#[test]
fn dim_labels_in_any_order_and_rank() {
    let labels = |text: &str| {
        let m = parse(&format!(
            "HloModule m\nENTRY e {{\n  x = f32[1,1,1] parameter(0)\n  ROOT c = f32[1,1,1] convolution(x, x), window={{size=1}}, dim_labels={text}\n}}"
        ));
        let d = entry_instr(&m, "c").attrs.conv_dims.clone().expect("dims");
        assert!(
            print_module(&m).contains(&format!("dim_labels={text}")),
            "{text} prints back"
        );
        d
    };
    let d = labels("f0b_i0o->0bf");
    assert_eq!(
        (d.input_batch, d.input_feature, d.input_spatial),
        (2, 0, vec![1])
    );
    assert_eq!(
        (
            d.kernel_input_feature,
            d.kernel_output_feature,
            d.kernel_spatial
        ),
        (0, 2, vec![1])
    );
    assert_eq!(
        (d.output_batch, d.output_feature, d.output_spatial),
        (1, 2, vec![0])
    );
    let d = labels("b102f_210oi->bf120");
    assert_eq!(d.input_spatial, vec![2, 1, 3]);
    assert_eq!(d.kernel_spatial, vec![2, 1, 0]);
    assert_eq!(d.output_spatial, vec![4, 2, 3]);
}

#[test]
fn gather_and_scatter_dimension_numbers() {
    let m = parse(
        "HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[3,7] parameter(0)
  i = s32[5,2,1] parameter(1)
  g = f32[5,2,4] gather(x, i), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={1}, operand_batching_dims={}, index_vector_dim=2, slice_sizes={1,4}, indices_are_sorted=true
  ROOT s = f32[3,7] scatter(x, i, g), update_window_dims={2}, inserted_window_dims={0}, scatter_dims_to_operand_dims={1}, input_batching_dims={1}, scatter_indices_batching_dims={0}, index_vector_dim=2, unique_indices=true, to_apply=add
}",
    );
    let g = entry_instr(&m, "g");
    assert_eq!(
        g.attrs.gather_dims,
        Some(GatherDimensionNumbers {
            offset_dims: vec![2],
            collapsed_slice_dims: vec![0],
            start_index_map: vec![1],
            operand_batching_dims: vec![],
            start_indices_batching_dims: vec![],
            index_vector_dim: 2,
        })
    );
    assert_eq!(g.attrs.slice_sizes, Some(vec![1, 4]));
    assert!(g.attrs.indices_are_sorted && !g.attrs.unique_indices);
    let s = entry_instr(&m, "s");
    assert_eq!(
        s.attrs.scatter_dims,
        Some(ScatterDimensionNumbers {
            update_window_dims: vec![2],
            inserted_window_dims: vec![0],
            scatter_dims_to_operand_dims: vec![1],
            input_batching_dims: vec![1],
            scatter_indices_batching_dims: vec![0],
            index_vector_dim: 2,
        })
    );
    assert!(s.attrs.unique_indices);
    assert_eq!(s.to_apply(), m.find_computation("add"));
    assert!(
        s.attrs.gather_dims.is_none(),
        "index_vector_dim of a scatter is the scatter's"
    );
    round_trip(&m);
}

#[test]
fn constants_of_every_kind() {
    let m = parse(
        "HloModule m
ENTRY e {
  b = bf16[4] constant({1.5, 0.1, -inf, -0})
  h = f16[2] constant({65504, 1e-07})
  f = f32[6] constant({nan, -nan, nan(0x1), -nan(0x7fffff), inf, 1e-07})
  d = f64[2] constant({0.1, -2.5e-300})
  u = u64[2] constant({18446744073709551615, 0})
  s = s64[2] constant({-9223372036854775808, 9223372036854775807})
  n = s4[3] constant({-8, 7, -1})
  p = pred[2,2]{0,1} constant({ {1, 0}, {false, true} })
  c = c64[2] constant({(1, 2), (-0.5, inf)})
  l = s32[2,3]{0,1} constant({ { 1, 2, 3 }, { 4, 5, 6 } })
  t = (s32[], f32[2]) constant((7, {2.5, 3}))
  e8 = f8e4m3fn[3] constant({448, 460, nan})
  z = f32[0,3] constant({  })
  ROOT r = s32[] constant(-3)
}",
    );
    let lit = |name: &str| entry_instr(&m, name).attrs.literal.clone();
    let bits = |name: &str| {
        let l = lit(name);
        let a = array(&l).clone();
        (0..a.element_count())
            .map(|i| a.bits(i))
            .collect::<Vec<u64>>()
    };
    // bf16: 1.5 = 0x3fc0; 0.1 rounds to 0x3dcd (f32 0x3dcccccd, round to nearest even);
    // -inf = 0xff80; -0 = 0x8000.
    assert_eq!(bits("b"), vec![0x3fc0, 0x3dcd, 0xff80, 0x8000]);
    // f16: 65504 is the largest finite value 0x7bff; 1e-07 rounds to the subnormal 2 * 2^-24.
    assert_eq!(bits("h"), vec![0x7bff, 0x0002]);
    assert_eq!(
        bits("f"),
        vec![
            0x7fc0_0000,
            0xffc0_0000,
            0x7f80_0001,
            0xffff_ffff,
            0x7f80_0000,
            u64::from(1e-7f32.to_bits())
        ]
    );
    assert_eq!(bits("d"), vec![0.1f64.to_bits(), (-2.5e-300f64).to_bits()]);
    assert_eq!(bits("u"), vec![u64::MAX, 0]);
    assert_eq!(bits("s"), vec![i64::MIN as u64, i64::MAX as u64]);
    assert_eq!(bits("n"), vec![0x8, 0x7, 0xf]);
    // Literal text is logical row-major whatever the layout.
    assert_eq!(bits("p"), vec![1, 0, 0, 1]);
    assert_eq!(bits("l"), vec![1, 2, 3, 4, 5, 6]);
    let c = lit("c");
    let c = array(&c);
    assert_eq!((c.get_c128(0).re, c.get_c128(0).im), (1.0, 2.0));
    assert_eq!(c.get_c128(1).re, -0.5);
    assert!(c.get_c128(1).im.is_infinite());
    match lit("t") {
        Some(Literal::Tuple(parts)) => {
            assert_eq!(parts[0], Literal::Array(ArrayLiteral::scalar(7i32)));
            assert_eq!(
                parts[1],
                Literal::Array(ArrayLiteral::from_slice(&[2], &[2.5f32, 3.0]).unwrap())
            );
        }
        other => panic!("tuple constant: {other:?}"),
    }
    // f8e4m3fn: 448 = 0x7e (largest), 460 rounds to 448 (the halfway point is 464), NaN = 0x7f.
    assert_eq!(bits("e8"), vec![0x7e, 0x7e, 0x7f]);
    assert_eq!(bits("z"), Vec::<u64>::new());
    assert_eq!(bits("r"), vec![(-3i32) as u32 as u64]);

    let again = round_trip(&m);
    for name in [
        "b", "h", "f", "d", "u", "s", "n", "p", "c", "l", "t", "e8", "z", "r",
    ] {
        assert_eq!(
            entry_instr(&again, name).attrs.literal,
            lit(name),
            "{name} survives printing"
        );
    }
    let text = print_module(&m);
    assert!(
        text.contains("constant({nan, -nan, nan(0x1), -nan(0x7fffff), inf, 1e-07})"),
        "{text}"
    );
    assert!(
        text.contains("constant({ { 1, 2, 3 }, { 4, 5, 6 } })"),
        "{text}"
    );
}

#[test]
fn module_header_aliasing_and_debug_sections() {
    let m = parse(
        "HloModule m, is_scheduled=true, entry_computation_layout={(f32[2]{0}, (s32[], f32[3]{0}))->(f32[2]{0}, f32[3]{0})}, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {1}, must-alias) }, replica_count=2, frontend_attributes={a=\"x,y\"}

FileNames
1 \"a.py\"

StackFrames
1 {file_location_id=1 parent_frame_id=1}

ENTRY e {
  x = f32[2] parameter(0)
  t = (s32[], f32[3]) parameter(1)
  y = f32[3] get-tuple-element(t), index=1
  ROOT r = (f32[2], f32[3]) tuple(x, y)
}",
    );
    assert_eq!(
        m.input_output_alias,
        vec![
            AliasEntry {
                output_index: vec![0],
                parameter: 0,
                parameter_index: vec![],
                kind: AliasKind::MayAlias
            },
            AliasEntry {
                output_index: vec![1],
                parameter: 1,
                parameter_index: vec![1],
                kind: AliasKind::MustAlias
            },
        ]
    );
    let layout = m.entry_layout.as_ref().expect("layout");
    assert_eq!(layout.parameters.len(), 2);
    assert!(layout.parameters[1].is_tuple());
    assert_eq!(m.header_attribute("is_scheduled"), Some("true"));
    assert_eq!(m.header_attribute("replica_count"), Some("2"));
    assert_eq!(
        m.header_attribute("frontend_attributes"),
        Some("{a=\"x,y\"}")
    );
    assert_eq!(
        m.debug_sections,
        vec![
            ("FileNames".to_string(), vec!["1 \"a.py\"".to_string()]),
            (
                "StackFrames".to_string(),
                vec!["1 {file_location_id=1 parent_frame_id=1}".to_string()]
            ),
        ]
    );
    assert_eq!(entry_instr(&m, "y").attrs.tuple_index, Some(1));
    let again = round_trip(&m);
    assert_eq!(again.input_output_alias, m.input_output_alias);
    assert_eq!(again.debug_sections, m.debug_sections);
    assert_eq!(again.header_attributes, m.header_attributes);

    // The short form names only the parameter: may-alias of the whole parameter.
    let short = parse(
        "HloModule m, input_output_alias={ {}: 0 }\nENTRY e {\n  ROOT x = f32[2] parameter(0)\n}",
    );
    assert_eq!(
        short.input_output_alias,
        vec![AliasEntry {
            output_index: vec![],
            parameter: 0,
            parameter_index: vec![],
            kind: AliasKind::MayAlias
        }]
    );
}

#[test]
fn layouts_tiles_and_dynamic_dimensions() {
    let s = parse_shape("bf16[16,128]{0,1:T(8,128)(2,1)}").unwrap();
    let a = s.as_array().unwrap();
    assert_eq!(a.element_type, ElementType::BF16);
    let layout = a.layout.as_ref().unwrap();
    assert_eq!(layout.minor_to_major, vec![0, 1]);
    assert_eq!(
        layout
            .tiles
            .iter()
            .map(|t| t.dims.clone())
            .collect::<Vec<_>>(),
        vec![vec![8, 128], vec![2, 1]]
    );
    assert_eq!(s.to_string(), "bf16[16,128]{0,1:T(8,128)(2,1)}");

    let s = parse_shape("s4[2,4]{1,0:D(C,C)T(*,2)L(8)E(4)#(s32)*(s64)S(1)}").unwrap();
    let layout = s.as_array().unwrap().layout.clone().unwrap();
    assert_eq!(layout.tiles[0].dims, vec![TILE_COMBINE_DIMENSION, 2]);
    assert_eq!(
        (
            layout.tail_padding_alignment_in_elements,
            layout.element_size_in_bits,
            layout.memory_space
        ),
        (8, 4, 1)
    );
    assert_eq!(layout.other, vec!["D(C,C)", "#(s32)", "*(s64)"]);
    assert_eq!(parse_shape(&s.to_string()).unwrap(), s);

    let s = parse_shape("f32[3,<=7]{1,0}").unwrap();
    assert_eq!(s.as_array().unwrap().dynamic, vec![false, true]);
    assert_eq!(s.to_string(), "f32[3,<=7]{1,0}");

    let s = parse_shape("(f32[], (token[], u8[2]{0}), /*index=2*/pred[])").unwrap();
    assert_eq!(
        s,
        Shape::Tuple(vec![
            Shape::scalar(ElementType::F32),
            Shape::Tuple(vec![
                Shape::Token,
                Shape::array_row_major(ElementType::U8, [2])
            ]),
            Shape::scalar(ElementType::Pred)
        ])
    );
    // Scalars print without a layout even when the text gave one.
    assert_eq!(parse_shape("f32[]{}").unwrap().to_string(), "f32[]");
}

#[test]
fn forward_references_defaults_and_called_roles() {
    let m = parse(
        "HloModule m
ENTRY main {
  p = (s32[], f32[2]) parameter(0)
  w = (s32[], f32[2]) while(p), body=%body, condition=%cond
  b = pred[] constant(true)
  k = f32[2] conditional(b, x, x), false_computation=neg, true_computation=id
  x = f32[2]{0} get-tuple-element(w), index=1
  s = f32[2] add(f32[2]{0} %x, f32[2]{0} %k), control-predecessors={%b}
}
cond {
  c = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT, type=SIGNED
}
body {
  ROOT c = (s32[], f32[2]) parameter(0)
}
id {
  ROOT a = f32[2] parameter(0)
}
neg {
  a = f32[2] parameter(0)
  ROOT n = f32[2] negate(a)
}
unused {
  ROOT z = f32[] constant(0)
}",
    );
    assert_eq!(m.entry_computation().name, "main");
    assert_eq!(
        m.computations.len(),
        6,
        "unreferenced computations are kept"
    );
    let comp = m.entry_computation();
    assert_eq!(
        comp.root_instruction().name,
        "s",
        "without ROOT the last instruction is the root"
    );
    let w = entry_instr(&m, "w");
    assert_eq!(w.while_condition(), m.find_computation("cond"));
    assert_eq!(w.while_body(), m.find_computation("body"));
    let k = entry_instr(&m, "k");
    assert_eq!(
        k.branch_computations(),
        &[
            m.find_computation("id").unwrap(),
            m.find_computation("neg").unwrap()
        ]
    );
    let k_operands: Vec<&str> = k
        .operands
        .iter()
        .map(|&o| comp.get(o).name.as_str())
        .collect();
    assert_eq!(
        k_operands,
        vec!["b", "x", "x"],
        "operands may be defined later"
    );
    let s = entry_instr(&m, "s");
    assert_eq!(s.control_predecessors, vec![comp.find("b").unwrap()]);
    let cond = m.computation(m.find_computation("cond").unwrap());
    let lt = cond.root_instruction();
    assert_eq!(
        (lt.attrs.direction, lt.attrs.comparison_type),
        (Some(ComparisonDirection::Lt), Some(ComparisonType::Signed))
    );

    let text = print_module(&m);
    assert!(text.contains("condition=%cond, body=%body"), "{text}");
    assert!(
        text.contains("true_computation=%id, false_computation=%neg"),
        "{text}"
    );
    assert!(
        text.trim_end().ends_with('}') && text.contains("\nENTRY %main"),
        "{text}"
    );
    let cond_at = text.find("%cond (").unwrap();
    assert!(
        cond_at < text.find("ENTRY").unwrap(),
        "callees print before the entry"
    );
    let again = round_trip(&m);
    assert_eq!(again.computations.len(), 6);
    // Without ENTRY the last computation is the entry.
    let no_entry = parse(
        "HloModule m\na {\n  ROOT x = f32[] constant(1)\n}\nb {\n  ROOT y = f32[] constant(2)\n}",
    );
    assert_eq!(no_entry.entry, CompId(1));
}

#[test]
fn collectives_custom_calls_and_misc_attributes() {
    let m = parse(
        "HloModule m, num_partitions=4
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[8] parameter(0)
  r = f32[8] all-reduce(x), channel_id=3, replica_groups=[2,2]<=[4], use_global_device_ids=true, to_apply=sum
  t = f32[8] all-reduce(x), replica_groups=[2,2]<=[2,2]T(1,0), to_apply=sum
  e = f32[8] all-reduce(x), replica_groups={}, to_apply=sum
  p = f32[8] collective-permute(x), source_target_pairs={{0,1},{1,0}}
  c = f32[8] custom-call(x, p), custom_call_target=\"my_fn\", api_version=API_VERSION_STATUS_RETURNING, backend_config=\"{\\\"k\\\": \\\"a\\\\tb\\\"}\", custom_call_has_side_effect=true, metadata={op_name=\"c\" source_file=\"a,b.py\"}
  f = f32[8] custom-call(c), custom_call_target=\"ffi\", api_version=API_VERSION_TYPED_FFI, backend_config={uplo = 76 : ui8}, operand_layout_constraints={f32[8]{0}}
  d = f32[8] dot(f, f), lhs_contracting_dims={0}, rhs_contracting_dims={0}, operand_precision={highest,default}, algorithm=dot_bf16_bf16_f32
  g = (u32[2], u32[8]) rng-bit-generator(u32[2] k), algorithm=rng_philox
  k = u32[2] constant({1, 2})
  ROOT o = f32[8] pad(d, x), padding=1_-1_2
}",
    );
    assert_eq!(
        entry_instr(&m, "r").attrs.replica_groups,
        Some(vec![vec![0, 1], vec![2, 3]])
    );
    assert_eq!(entry_instr(&m, "r").attrs.channel_id, Some(3));
    assert!(entry_instr(&m, "r").attrs.use_global_device_ids);
    // [2,2]<=[2,2]T(1,0): iota 0..4 as a 2x2 array, transposed, read in rows of 2.
    assert_eq!(
        entry_instr(&m, "t").attrs.replica_groups,
        Some(vec![vec![0, 2], vec![1, 3]])
    );
    assert_eq!(entry_instr(&m, "e").attrs.replica_groups, Some(vec![]));
    assert_eq!(
        entry_instr(&m, "p").attrs.source_target_pairs,
        Some(vec![(0, 1), (1, 0)])
    );
    let c = &entry_instr(&m, "c").attrs;
    assert_eq!(c.custom_call_target.as_deref(), Some("my_fn"));
    assert_eq!(c.api_version, Some(CustomCallApiVersion::StatusReturning));
    assert_eq!(
        c.backend_config,
        Some(BackendConfig::Quoted("{\"k\": \"a\\tb\"}".to_string()))
    );
    assert!(c.custom_call_has_side_effect);
    assert_eq!(
        c.raw("metadata"),
        Some("{op_name=\"c\" source_file=\"a,b.py\"}")
    );
    let f = &entry_instr(&m, "f").attrs;
    assert_eq!(
        f.backend_config,
        Some(BackendConfig::Braced("{uplo = 76 : ui8}".to_string()))
    );
    assert_eq!(
        f.operand_layout_constraints,
        Some(vec![parse_shape("f32[8]{0}").unwrap()])
    );
    let d = &entry_instr(&m, "d").attrs;
    assert_eq!(
        d.dot_dims,
        Some(DotDimensionNumbers {
            lhs_contracting: vec![0],
            rhs_contracting: vec![0],
            ..Default::default()
        })
    );
    assert_eq!(
        d.operand_precision,
        Some(vec!["highest".to_string(), "default".to_string()])
    );
    assert_eq!(
        d.rng_algorithm, None,
        "a dot's algorithm is not an RNG algorithm"
    );
    assert_eq!(d.raw("algorithm"), Some("dot_bf16_bf16_f32"));
    assert_eq!(
        entry_instr(&m, "g").attrs.rng_algorithm,
        Some(RngAlgorithm::Philox)
    );
    assert_eq!(
        entry_instr(&m, "o").attrs.padding,
        Some(vec![PadDim {
            low: 1,
            high: -1,
            interior: 2
        }])
    );
    assert_eq!(entry_instr(&m, "o").opcode, Opcode::Pad);
    let again = round_trip(&m);
    assert_eq!(
        entry_instr(&again, "c").attrs.backend_config,
        c.backend_config
    );
    assert_eq!(
        entry_instr(&again, "t").attrs.replica_groups,
        Some(vec![vec![0, 2], vec![1, 3]])
    );
}

#[test]
fn elided_constants_stay_elided() {
    let m = parse("HloModule m\nENTRY e {\n  ROOT c = s32[2,2]{0,1} constant({...})\n}");
    let c = entry_instr(&m, "c");
    assert_eq!(c.attrs.literal, None);
    assert!(print_module(&m).contains("constant({...})"));
}

#[test]
fn corpus_spot_checks() {
    let Some(dir) = super::corpus::conformance_dir() else {
        return;
    };
    let read = |case: &str, file: &str| {
        std::fs::read_to_string(dir.join("cases").join(case).join(file)).expect("corpus file")
    };
    // A tiled bf16 layout in the header and on instructions.
    let m = parse(&read("layout_tiled_bf16_subtile", "module.hlo"));
    let layout = m.entry_layout.as_ref().unwrap();
    let y = layout.parameters[1]
        .as_array()
        .unwrap()
        .layout
        .clone()
        .unwrap();
    assert_eq!(y.minor_to_major, vec![0, 1]);
    assert_eq!(y.tiles.len(), 2);
    assert_eq!(entry_instr(&m, "r").attrs.dimensions, Some(vec![1, 0]));
    // A conditional with a branch index selecting among three branches.
    let m = parse(&read("hlo_conditional", "module.hlo"));
    let conditionals: Vec<&Instruction> = m
        .entry_computation()
        .instructions
        .iter()
        .filter(|i| i.opcode == Opcode::Conditional)
        .collect();
    assert!(conditionals
        .iter()
        .any(|i| i.branch_computations().len() == 3));
    assert!(conditionals
        .iter()
        .any(|i| i.branch_computations().len() == 2));
}

#[test]
fn literal_text_round_trips_on_its_own() {
    use super::super::{literal_to_text, parse_literal};
    let shape = parse_shape("(f16[2,1], pred[], c128[1])").unwrap();
    let literal = parse_literal("({ {0.5}, {-65504} }, true, {(1e-300, -0)})", &shape).unwrap();
    let text = literal_to_text(&literal);
    assert_eq!(text, "({ {0.5}, {-65504} }, true, {(1e-300, -0)})");
    assert_eq!(parse_literal(&text, &shape).unwrap(), literal);
    assert!(parse_literal("({ {0.5}, {1} }, true, {(1, 2)}) extra", &shape).is_err());
}
