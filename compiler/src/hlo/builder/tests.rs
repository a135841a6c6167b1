//! Builder tests that build, verify and print modules (running them is tests/harness/builder.rs).

use super::*;
use crate::hlo::attributes::*;
use crate::hlo::text::{parse_module, print_module};
use hlojit_runtime::ElementType::{Pred, F32, S32, U32};
use hlojit_runtime::{ArrayLiteral, Layout, Literal};

fn f32s(dims: &[i64]) -> Shape {
    Shape::array(F32, dims.to_vec())
}

/// Printing, parsing and printing again gives the same text, and the parsed module verifies.
fn round_trips(module: &Module) -> String {
    let text = print_module(module);
    let parsed = parse_module(&text).unwrap_or_else(|e| panic!("printed module does not parse: {e}\n{text}"));
    crate::hlo::verify_module(&parsed).unwrap_or_else(|e| panic!("parsed module does not verify: {e}\n{text}"));
    assert_eq!(print_module(&parsed), text);
    text
}

fn build_error_text(result: Result<Op>) -> String {
    match result {
        Err(e @ Error::Build { .. }) => e.to_string(),
        Err(e) => panic!("expected a build error, got {e}"),
        Ok(op) => panic!("expected an error, built {} {}", op.name(), op.shape()),
    }
}

#[test]
fn errors_name_the_call_site_and_the_op() {
    let b = Builder::new("m");
    let x = b.parameter(0, f32s(&[2, 3]), "x").unwrap();
    let w = b.parameter(1, f32s(&[4, 5]), "w").unwrap();
    let line = line!() + 1;
    let e = build_error_text(b.dot(&x, &w));
    assert!(e.starts_with(&format!("{}:{line}:", file!())), "{e}");
    assert!(e.contains("dot: "), "{e}");
    // Bad dimension numbers.
    let dnums = DotDimensionNumbers { lhs_contracting: vec![2], rhs_contracting: vec![0], ..Default::default() };
    let e = build_error_text(b.dot_general(&x, &w, &dnums, None));
    assert!(e.contains("dot: ") && e.contains('2'), "{e}");
    // Wrong rank.
    let e = build_error_text(b.transpose(&x, &[0]));
    assert!(e.contains("transpose: dimensions {0} are not a permutation"), "{e}");
    // Mismatched dimensions in a binary op.
    let e = build_error_text(b.add(&x, &w));
    assert!(e.contains("add: incompatible shapes [2,3] and [4,5]"), "{e}");
    // Mixed element types.
    let i = b.constant_r0(1i32).unwrap();
    let e = build_error_text(b.mul(&x, &i));
    assert!(e.contains("multiply: operands must have the same element type"), "{e}");
}

#[test]
fn ops_of_another_computation_are_rejected() {
    let b = Builder::new("m");
    let x = b.parameter(0, f32s(&[4]), "x").unwrap();
    let e = b.reduce(&x, &b.zero(F32).unwrap(), &[0], |r, _| r.add(&x, &x)).unwrap_err().to_string();
    assert!(e.contains("add: operand 0 (%x) belongs to another computation"), "{e}");
    let other = Builder::new("other");
    let y = other.parameter(0, f32s(&[4]), "y").unwrap();
    let e = build_error_text(b.add(&x, &y));
    assert!(e.contains("belongs to another computation"), "{e}");
    let e = b.build(&y).unwrap_err().to_string();
    assert!(e.contains("must return an op made by its own builder"), "{e}");
}

#[test]
fn a_module_with_every_kind_of_computation_prints_and_parses() {
    let b = Builder::new("every kind");
    let x = b.parameter(0, f32s(&[4, 8]), "x").unwrap();
    let i = b.parameter(1, Shape::scalar(S32), "i").unwrap();
    let zero = b.zero(F32).unwrap();
    let sum = b.reduce(&x, &zero, &[1], |r, p| r.add(&p[0], &p[1])).unwrap();
    let sorted = b.sort(&[&sum], 0, true, |c, p| c.lt(&p[0], &p[1])).unwrap();
    let mapped = b.map(&[&sorted], |c, p| c.tanh(&p[0])).unwrap();
    let looped = b
        .while_loop(
            &b.tuple(&[&i, &mapped]).unwrap(),
            |c, s| c.lt(&c.get_tuple_element(s, 0)?, &c.constant_r0(3i32)?),
            |c, s| {
                let n = c.add(&c.get_tuple_element(s, 0)?, &c.constant_r0(1i32)?)?;
                let v = c.get_tuple_element(s, 1)?;
                c.tuple(&[&n, &c.add(&v, &v)?])
            },
        )
        .unwrap();
    let v = b.get_tuple_element(&looped, 1).unwrap();
    let p = b.lt(&i, &b.constant_r0(0i32).unwrap()).unwrap();
    let picked = b.conditional(&p, &v, |c, v| c.neg(v), &v, |c, v| c.exp(v)).unwrap();
    let switched =
        b.conditional_indexed(&i, &[&picked, &picked], |k, c, v| if k == 0 { c.abs(v) } else { c.sqrt(v) }).unwrap();
    let windows = b.reduce_window(&x, &zero, &[2, 2], &[2, 2], &[(0, 0), (0, 0)], |r, p| r.max(&p[0], &p[1])).unwrap();
    let rows = b.constant_vector(&[1i32, 3]).unwrap();
    let scatter_dims = ScatterDimensionNumbers {
        update_window_dims: vec![1],
        inserted_window_dims: vec![0],
        scatter_dims_to_operand_dims: vec![0],
        index_vector_dim: 1,
        ..Default::default()
    };
    let updates = b.broadcast(&zero, &[2, 8]).unwrap();
    let scattered = b.scatter(&x, &rows, &updates, &scatter_dims, true, true, |c, p| c.add(&p[0], &p[1])).unwrap();
    let square = b.computation("square", &[f32s(&[4])], |c, p| c.mul(&p[0], &p[0])).unwrap();
    let called = b.call(&square, &[&switched]).unwrap();
    let root = b.tuple(&[&called, &windows, &scattered]).unwrap();
    let module = b.build(&root).unwrap();
    let text = round_trips(&module);
    assert!(text.starts_with("HloModule every_kind\n"), "{text}");
    for needle in [
        "to_apply=%reducer.",
        "condition=%while_condition.",
        "body=%while_body.",
        "true_computation=%true_branch.",
        "branch_computations={%branch_0.",
        "window={size=2x2 stride=2x2}",
        "to_apply=%square.",
        "ENTRY %every_kind (x: f32[4,8], i: s32[]) -> (f32[4], f32[2,4], f32[4,8]) {",
        "is_stable=true",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

#[test]
fn binary_broadcasts_lower_to_reshape_and_broadcast() {
    // Seed 002: (1,2) onto 4x3x1 with broadcast dimensions (1,2) gives 4x3x2; both operands
    // stretch, so each loses its size-1 dimension to a reshape before its broadcast.
    let b = Builder::new("m");
    let big = b.parameter(0, f32s(&[4, 3, 1]), "big").unwrap();
    let small = b.parameter(1, f32s(&[1, 2]), "small").unwrap();
    let sum = b.add_in_dim(&small, &big, &[1, 2]).unwrap();
    assert_eq!(sum.dims(), &[4, 3, 2]);
    let text = round_trips(&b.build(&sum).unwrap());
    for needle in [
        "f32[2] reshape(%small)",
        "f32[4,3,2] broadcast(%reshape.1), dimensions={2}",
        "f32[4,3] reshape(%big)",
        "f32[4,3,2] broadcast(%reshape.3), dimensions={0,1}",
        "ROOT %add.5 = f32[4,3,2] add(%broadcast.2, %broadcast.4)",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

#[test]
fn equal_shapes_and_scalars_need_no_reshape() {
    let b = Builder::new("m");
    let x = b.parameter(0, f32s(&[2, 3]), "x").unwrap();
    let same = b.mul(&x, &x).unwrap();
    let scaled = b.mul(&same, &b.constant_r0(2.0f32).unwrap()).unwrap();
    let text = round_trips(&b.build(&scaled).unwrap());
    assert!(!text.contains("reshape"), "{text}");
    assert!(text.contains("f32[2,3] broadcast(%constant.2), dimensions={}"), "{text}");
}

#[test]
fn comparisons_broadcast_and_give_pred() {
    let b = Builder::new("m");
    let m = b.parameter(0, f32s(&[3, 3]), "mat").unwrap();
    let v = b.parameter(1, f32s(&[3]), "v").unwrap();
    let rows = b.ge_in_dim(&m, &v, &[0]).unwrap();
    assert_eq!(rows.shape(), &Shape::array(Pred, vec![3, 3]));
    let e = build_error_text(b.eq(&m, &v));
    assert!(e.contains("compare: lhs [3,3] (rank 2) and rhs [3] (rank 1) need broadcast_dimensions"), "{e}");
    let text = round_trips(&b.build(&rows).unwrap());
    assert!(text.contains("compare(%mat, %broadcast.1), direction=GE"), "{text}");
}

#[test]
fn expand_is_a_broadcast_and_repeat_reshape_expand_reshape() {
    let b = Builder::new("m");
    let x = b.parameter(0, f32s(&[4, 3, 1, 2]), "x").unwrap();
    let e = b.expand(&x, &[2, 4, 3, 4, 2]).unwrap();
    assert_eq!(e.dims(), &[2, 4, 3, 4, 2]);
    let y = b.parameter(1, f32s(&[3, 1, 5]), "y").unwrap();
    let r = b.repeat(&y, &[5, 3, 1]).unwrap();
    assert_eq!(r.dims(), &[15, 3, 5]);
    let text = round_trips(&b.build(&b.tuple(&[&e, &r]).unwrap()).unwrap());
    for needle in [
        // expand: the stretched size-1 dimension goes, the rest is one broadcast.
        "f32[4,3,2] reshape(%x)",
        "f32[2,4,3,4,2] broadcast(%reshape.1), dimensions={1,2,4}",
        // repeat [5,3,1] of [3,1,5]: reshape to [1,3,1,5], expand to [5,3,3,5], reshape to [15,3,5].
        "f32[1,3,1,5] reshape(%y)",
        "f32[3,5] reshape(%reshape.3)",
        "f32[5,3,3,5] broadcast(%reshape.4), dimensions={1,3}",
        "f32[15,3,5] reshape(%broadcast.5)",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

#[test]
fn expand_and_repeat_errors() {
    let b = Builder::new("m");
    let x = b.parameter(0, f32s(&[4, 3]), "x").unwrap();
    let e = build_error_text(b.expand(&x, &[4, 5]));
    assert!(e.contains("expand: size 5 for dimension 1"), "{e}");
    let e = build_error_text(b.repeat(&x, &[2]));
    assert!(e.contains("repeat: repeats [2] have fewer entries"), "{e}");
}

#[test]
fn input_output_alias_is_checked_at_build() {
    let build = |output: &[i64], param: i64, index: &[i64]| {
        let b = Builder::new("m");
        let x = b.parameter(0, f32s(&[4]), "x").unwrap();
        let y = b.parameter(1, Shape::Tuple(vec![f32s(&[4]), Shape::scalar(S32)]), "y").unwrap();
        let root = b.tuple(&[&b.neg(&x).unwrap(), &b.get_tuple_element(&y, 1).unwrap()]).unwrap();
        b.set_input_output_alias(output, param, index, AliasKind::MustAlias);
        b.build(&root)
    };
    let module = build(&[0], 1, &[0]).unwrap();
    let text = round_trips(&module);
    assert!(text.contains("input_output_alias={ {0}: (1, {0}, must-alias) }"), "{text}");
    let e = build(&[1], 0, &[]).unwrap_err().to_string();
    assert!(e.contains("set_input_output_alias: output {1} is s32[] but parameter 0 at {} is f32[4]"), "{e}");
    let e = build(&[2], 0, &[]).unwrap_err().to_string();
    assert!(e.contains("output {2} does not exist"), "{e}");
    let e = build(&[0], 2, &[]).unwrap_err().to_string();
    assert!(e.contains("parameter 2 does not exist"), "{e}");
    let e = build(&[0], 1, &[]).unwrap_err().to_string();
    assert!(e.contains("aliased buffers must have equal shapes"), "{e}");
}

#[test]
fn parameters_must_be_numbered_without_gaps() {
    let b = Builder::new("m");
    let x = b.parameter(1, f32s(&[4]), "x").unwrap();
    let e = b.build(&x).unwrap_err().to_string();
    assert!(e.contains("parameters are numbered [1]; they must be numbered 0..N without gaps"), "{e}");
}

#[test]
fn parameter_names_are_sanitized_and_unique() {
    let b = Builder::new("m");
    let x = b.parameter(0, f32s(&[4]), "input tensor").unwrap();
    let y = b.parameter(1, f32s(&[4]), "input tensor").unwrap();
    let z = b.parameter(2, f32s(&[4]), "2nd").unwrap();
    assert_eq!(x.name(), "input_tensor");
    assert_ne!(y.name(), x.name());
    assert_eq!(z.name(), "_2nd");
    let sum = b.add(&b.add(&x, &y).unwrap(), &z).unwrap();
    round_trips(&b.build(&sum).unwrap());
}

#[test]
fn parameter_layouts_are_kept() {
    let b = Builder::new("m");
    let x = b
        .parameter(
            0,
            Shape::Array(hlojit_runtime::ArrayShape::new(F32, vec![2, 3]).with_layout(Layout::new(vec![0, 1]))),
            "x",
        )
        .unwrap();
    let module = b.build(&b.neg(&x).unwrap()).unwrap();
    assert_eq!(module.entry_parameter_shapes()[0].to_text(true), "f32[2,3]{0,1}");
}

#[test]
fn failed_ops_leave_no_computations_behind() {
    let b = Builder::new("m");
    let x = b.parameter(0, f32s(&[4]), "x").unwrap();
    // The reducer is built, then the op fails (an s32 init for f32 input).
    let init = b.zero(S32).unwrap();
    assert!(b.reduce(&x, &init, &[0], |r, p| r.add(&p[0], &p[1])).is_err());
    let ok = b.reduce(&x, &b.zero(F32).unwrap(), &[0], |r, p| r.add(&p[0], &p[1])).unwrap();
    let module = b.build(&ok).unwrap();
    assert_eq!(module.computations.len(), 2);
    round_trips(&module);
}

#[test]
fn errors_inside_closures_point_into_them() {
    let b = Builder::new("m");
    let x = b.parameter(0, f32s(&[4]), "x").unwrap();
    let line = line!() + 1;
    let e = b.reduce(&x, &b.zero(F32).unwrap(), &[0], |r, p| r.dot(&p[0], &p[1])).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{}:{line}:", file!())) && e.contains("dot: lhs f32[] must be a vector"), "{e}");
    // A reducer of the wrong signature is reported at the reduce.
    let e = b.reduce(&x, &b.zero(F32).unwrap(), &[0], |r, p| r.convert(&p[0], S32)).unwrap_err().to_string();
    assert!(e.contains("reduce: parameter 0 of the reduction computation is f32[] but its result 0 is s32[]"), "{e}");
}

#[test]
fn constants_from_slices_and_literals() {
    let b = Builder::new("m");
    let m = b.constant_slice(&[2, 2], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let t = b
        .constant(Literal::Tuple(vec![
            ArrayLiteral::scalar(7u32).into(),
            ArrayLiteral::from_bools(&[2], &[true, false]).unwrap().into(),
        ]))
        .unwrap();
    assert_eq!(t.shape().to_string(), "(u32[], pred[2])");
    let h = b.scalar(ElementType::F16, 0.5).unwrap();
    let e = build_error_text(b.constant_slice(&[3], &[1u32, 2]));
    assert!(e.contains("constant: expected 3 elements"), "{e}");
    let text = round_trips(&b.build(&b.tuple(&[&m, &t, &h]).unwrap()).unwrap());
    assert!(text.contains("f32[2,2] constant({ { 1, 2 }, { 3, 4 } })"), "{text}");
    assert!(text.contains("(u32[], pred[2]) constant((7, {1, 0}))"), "{text}");
}

#[test]
fn shape_ops_and_dimension_numbers() {
    let b = Builder::new("m");
    let x = b.parameter(0, f32s(&[2, 3, 4]), "x").unwrap();
    assert_eq!(b.collapse(&x, &[0, 1]).unwrap().dims(), &[6, 4]);
    assert_eq!(b.transpose(&x, &[2, 0, 1]).unwrap().dims(), &[4, 2, 3]);
    assert_eq!(b.slice_in_dim(&x, 1, 3, 1, 1).unwrap().dims(), &[2, 2, 4]);
    assert_eq!(b.concat_in_dim(&[&x, &x], 2).unwrap().dims(), &[2, 3, 8]);
    assert_eq!(b.pad_in_dim(&x, &b.zero(F32).unwrap(), 0, 1, -1).unwrap().dims(), &[2, 3, 4]);
    let start = b.constant_r0(1i32).unwrap();
    let ds = b.dynamic_slice(&x, &[&start, &start, &start], &[1, 2, 2]).unwrap();
    assert_eq!(ds.dims(), &[1, 2, 2]);
    assert_eq!(b.dynamic_update_slice(&x, &ds, &[&start, &start, &start]).unwrap().dims(), &[2, 3, 4]);
    assert_eq!(b.rev(&x, &[0, 2]).unwrap().dims(), &[2, 3, 4]);
    assert_eq!(b.broadcast_in_dim(&b.reshape(&x, &[24]).unwrap(), &[5, 24], &[1]).unwrap().dims(), &[5, 24]);
    let e = build_error_text(b.broadcast_in_dim(&x, &[2, 4, 3, 5], &[0, 2, 1]));
    assert!(e.contains("broadcast_in_dim: broadcast_dimensions [0,2,1] must be strictly increasing"), "{e}");
    let e = build_error_text(b.concat_in_dim(&[&x, &b.transpose(&x, &[1, 0, 2]).unwrap()], 2));
    assert!(e.contains("concatenate:"), "{e}");
    let g = GatherDimensionNumbers {
        offset_dims: vec![1, 2],
        collapsed_slice_dims: vec![0],
        start_index_map: vec![0],
        index_vector_dim: 1,
        ..Default::default()
    };
    let idx = b.constant_vector(&[1i32, 0, 1]).unwrap();
    assert_eq!(b.gather(&x, &idx, &g, &[1, 3, 4], false).unwrap().dims(), &[3, 3, 4]);
    let e = build_error_text(b.gather(&x, &idx, &g, &[1, 3, 5], false));
    assert!(e.starts_with(file!()) && e.contains("gather:"), "{e}");
    let conv = b.conv(&x, &b.parameter(1, f32s(&[5, 3, 2]), "k").unwrap(), &[1], &[]).unwrap();
    assert_eq!(conv.dims(), &[2, 5, 3]);
    round_trips(&b.build(&conv).unwrap());
}

#[test]
fn the_remaining_ops_build_and_verify() {
    let b = Builder::new("rest");
    let x = b.parameter(0, f32s(&[4, 4]), "x").unwrap();
    let token = b.create_token().unwrap();
    let fed = b.infeed(&token, f32s(&[2])).unwrap();
    let token2 = b.outfeed(&b.get_tuple_element(&fed, 0).unwrap(), &b.get_tuple_element(&fed, 1).unwrap()).unwrap();
    let sent = b.send(&x, &token2, 1).unwrap();
    let received = b.recv(&sent, f32s(&[4, 4]), 2).unwrap();
    let joined = b.after_all(&[&token, &b.get_tuple_element(&received, 1).unwrap()]).unwrap();
    let u = b.rng_uniform(&b.zero(F32).unwrap(), &b.one(F32).unwrap(), f32s(&[3])).unwrap();
    let n = b.rng_normal(&b.zero(F32).unwrap(), &b.one(F32).unwrap(), f32s(&[3])).unwrap();
    let state = b.constant_vector(&[1u64, 2]).unwrap();
    let bits = b.rng_bit_generator(RngAlgorithm::Philox, &state, Shape::array(U32, vec![8])).unwrap();
    let chol = b.cholesky(&x, true).unwrap();
    let solved = b.triangular_solve(&chol, &x, true, true, false, Transpose::NoTranspose).unwrap();
    let c = b.complex(&x, &x).unwrap();
    let f = b.fft(&c, FftType::Fft, &[4]).unwrap();
    let top = b.top_k(&x, 2, true).unwrap();
    assert_eq!(top.shape().to_string(), "(f32[4,2], s32[4,2])");
    let s = b.parameter(1, f32s(&[4]), "s").unwrap();
    let bn = b.batch_norm_inference(&x, &s, &s, &s, &s, 0.001, 1).unwrap();
    let bt = b.batch_norm_training(&x, &s, &s, 0.001, 1).unwrap();
    let bg = b.batch_norm_grad(&x, &s, &s, &s, &x, 0.001, 1).unwrap();
    let ar = b.all_reduce(&x, &[], |r, p| r.add(&p[0], &p[1])).unwrap();
    let crs = b.cross_replica_sum(&x, &[vec![0]]).unwrap();
    let ag = b.all_gather(&x, 0, 2, &[vec![0, 1]]).unwrap();
    assert_eq!(ag.dims(), &[8, 4]);
    let rs = b.reduce_scatter(&x, 1, 2, &[vec![0, 1]], |r, p| r.add(&p[0], &p[1])).unwrap();
    assert_eq!(rs.dims(), &[4, 2]);
    let a2a = b.all_to_all(&x, 0, 1, 2, &[vec![0, 1]]).unwrap();
    assert_eq!(a2a.dims(), &[2, 8]);
    let perm = b.collective_permute(&x, &[(0, 1), (1, 0)]).unwrap();
    let ids = b.tuple(&[&b.replica_id().unwrap(), &b.partition_id().unwrap()]).unwrap();
    let dims = b.get_dimension_size(&x, 0).unwrap();
    let dynamic = b.set_dimension_size(&x, &dims, 1).unwrap();
    let barrier = b.optimization_barrier(&b.tuple(&[&x, &u]).unwrap()).unwrap();
    let sel = b
        .select_and_scatter(
            &x,
            |c, p| c.ge(&p[0], &p[1]),
            &[2, 2],
            &[2, 2],
            &[],
            &b.parameter(2, f32s(&[2, 2]), "source").unwrap(),
            &b.zero(F32).unwrap(),
            |c, p| c.add(&p[0], &p[1]),
        )
        .unwrap();
    let cc = b
        .custom_call("target", &[&x], f32s(&[4]), &CustomCallOptions { has_side_effect: true, ..Default::default() })
        .unwrap();
    let composite = b.computation("inner", &[f32s(&[4, 4])], |c, p| c.mul(&p[0], &p[0])).unwrap();
    let comp = b.composite_call(&composite, &[&x], "my.square", "{}", 1).unwrap();
    let converted = b.convert(&x, S32).unwrap();
    let bitcast = b.bitcast_convert(&x, U32).unwrap();
    let precision = b.reduce_precision(&x, 5, 10).unwrap();
    let clamped = b.clamp(&b.zero(F32).unwrap(), &x, &b.one(F32).unwrap()).unwrap();
    let selected = b.select(&b.constant_bools(&[], &[true]).unwrap(), &x, &clamped).unwrap();
    let iota = b.iota(Shape::array(S32, vec![4]), 0).unwrap();
    let pieces: Vec<&Op> = vec![
        &joined, &n, &bits, &solved, &f, &top, &bn, &bt, &bg, &ar, &crs, &ag, &rs, &a2a, &perm, &ids, &dynamic,
        &barrier, &sel, &cc, &comp, &converted, &bitcast, &precision, &selected, &iota,
    ];
    let root = b.tuple(&pieces).unwrap();
    let text = round_trips(&b.build(&root).unwrap());
    for needle in [
        "is_composite=true",
        "composite.name=\"my.square\"",
        "custom_call_has_side_effect=true",
        "algorithm=rng_philox",
        "distribution=rng_normal",
        "select=%select.",
        "scatter=%scatter.",
        "channel_id=1",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}
