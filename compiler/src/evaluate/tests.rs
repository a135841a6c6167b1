//! The evaluator's rules, each from XLA's `HloEvaluator` source (bit-level results of the
//! transcendental functions are checked against jaxlib in the file tests under
//! `tests/filetests/decisions/constant_folding`).

use super::evaluate;
use crate::hlo::text::parse_module;
use hlojit_runtime::ArrayLiteral;

/// The root of a one-computation module, evaluated on the module's constants in order.
fn eval_root(text: &str) -> Option<ArrayLiteral> {
    let m = parse_module(text).unwrap();
    let comp = &m.computations[m.entry.index()];
    let root = comp.get(comp.root);
    let operands: Vec<&ArrayLiteral> = root.operands.iter().map(|&o| comp.get(o).array_literal().unwrap()).collect();
    evaluate(root, &operands)
}

fn ints(lit: &ArrayLiteral) -> Vec<i64> {
    (0..lit.element_count()).map(|i| lit.get_i64(i)).collect()
}

fn binary(ty: &str, op: &str, a: &str, b: &str) -> Vec<i64> {
    let n = a.split(',').count();
    let text = format!(
        "HloModule t\nENTRY e {{\n  a = {ty}[{n}] constant({{{a}}})\n  b = {ty}[{n}] constant({{{b}}})\n  ROOT r = {ty}[{n}] {op}(a, b)\n}}\n"
    );
    ints(&eval_root(&text).unwrap())
}

#[test]
fn signed_division_by_zero_is_minus_one_and_min_over_minus_one_is_min() {
    assert_eq!(binary("s32", "divide", "7, -2147483648, -7", "0, -1, 2"), vec![-1, -2147483648, -3]);
    assert_eq!(binary("s32", "remainder", "7, -2147483648, -7", "0, -1, 2"), vec![7, 0, -1]);
}

#[test]
fn unsigned_division_by_zero_is_all_ones() {
    assert_eq!(binary("u8", "divide", "7, 200", "0, 7"), vec![255, 28]);
}

#[test]
fn negative_integer_powers_are_zero_unless_the_base_is_one() {
    assert_eq!(binary("s32", "power", "-1, 1, 2, -3, 0", "-1, -5, -1, 3, 0"), vec![0, 1, 0, -27, 1]);
}

#[test]
fn shifts_by_the_width_or_more_saturate() {
    assert_eq!(binary("s8", "shift-left", "1, 1, 1", "7, 8, -1"), vec![-128, 0, 0]);
    assert_eq!(binary("s8", "shift-right-arithmetic", "-128, -128, 64", "7, 8, 9"), vec![-1, -1, 0]);
    assert_eq!(binary("s8", "shift-right-logical", "-128, -128", "7, 8"), vec![1, 0]);
}

#[test]
fn max_and_min_return_the_first_nan_operand() {
    let text = "HloModule t\nENTRY e {\n  a = f32[3] constant({nan, 1, -0})\n  b = f32[3] constant({-nan, -nan, 0})\n  ROOT r = f32[3] maximum(a, b)\n}\n";
    let r = eval_root(text).unwrap();
    let bits: Vec<u64> = (0..3).map(|i| r.bits(i)).collect();
    // NaN from `a`, then `b`'s -NaN, then std::max(-0, 0): `a` unless a < b, so -0.
    assert_eq!(bits, vec![f32::NAN.to_bits() as u64, (-f32::NAN).to_bits() as u64, (-0f32).to_bits() as u64]);
}

#[test]
fn float_to_integer_conversion_saturates_and_maps_nan_to_zero() {
    let text = "HloModule t\nENTRY e {\n  a = f32[4] constant({nan, 1e10, -1e10, -2.7})\n  ROOT r = s32[4] convert(a)\n}\n";
    assert_eq!(ints(&eval_root(text).unwrap()), vec![0, 2147483647, -2147483648, -2]);
}

#[test]
fn half_results_round_once_and_nans_keep_only_the_sign() {
    let text = "HloModule t\nENTRY e {\n  a = f16[2] constant({-nan, 2})\n  ROOT r = f16[2] sqrt(a)\n}\n";
    let r = eval_root(text).unwrap();
    assert_eq!((r.bits(0), r.bits(1)), (0xfe00, half::f16::from_f32(2f32.sqrt()).to_bits() as u64));
}

#[test]
fn data_movement_moves_elements() {
    let t = |body: &str| ints(&eval_root(&format!("HloModule t\nENTRY e {{\n  a = s32[2,3] constant({{{{1,2,3}},{{4,5,6}}}})\n{body}\n}}\n")).unwrap());
    assert_eq!(t("  ROOT r = s32[3,2] transpose(a), dimensions={1,0}"), vec![1, 4, 2, 5, 3, 6]);
    assert_eq!(t("  ROOT r = s32[2,2] slice(a), slice={[0:2], [0:3:2]}"), vec![1, 3, 4, 6]);
    assert_eq!(t("  ROOT r = s32[2,3] reverse(a), dimensions={1}"), vec![3, 2, 1, 6, 5, 4]);
    assert_eq!(t("  ROOT r = s32[3,2] reshape(a)"), vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(t("  ROOT r = s32[2,2,3] broadcast(a), dimensions={1,2}"), vec![1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6]);
    assert_eq!(t("  ROOT r = s32[2,6] concatenate(a, a), dimensions={1}"), vec![1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6]);
    let pad = "  z = s32[] constant(0)\n  ROOT r = s32[3,4] pad(a, z), padding=0_1x-1_0_1";
    assert_eq!(t(pad), vec![0, 2, 0, 3, 0, 5, 0, 6, 0, 0, 0, 0]);
}

#[test]
fn iota_counts_along_its_dimension() {
    let text = "HloModule t\nENTRY e {\n  ROOT r = s32[2,3] iota(), iota_dimension=1\n}\n";
    assert_eq!(ints(&eval_root(text).unwrap()), vec![0, 1, 2, 0, 1, 2]);
}

#[test]
fn complex_division_is_not_evaluated() {
    let text = "HloModule t\nENTRY e {\n  a = c64[1] constant({(1, 2)})\n  ROOT r = c64[1] divide(a, a)\n}\n";
    assert!(eval_root(text).is_none());
}

#[test]
fn complex_multiplication_recovers_infinities_as_cxx_does() {
    // Naively (-inf - NaN, -inf + NaN) = (NaN, NaN); C++ complex multiplication (Annex G), as
    // XLA's folder computes it (measured through jaxlib), gives (-inf, -inf).
    let text = "HloModule t\nENTRY e {\n  a = c64[2] constant({(-inf, -inf), (1, 2)})\n  b = c64[2] constant({(5, 0), (1, 2)})\n  ROOT r = c64[2] multiply(a, b)\n}\n";
    let r = eval_root(text).unwrap();
    assert_eq!((r.get_c128(0).re, r.get_c128(0).im), (f64::NEG_INFINITY, f64::NEG_INFINITY));
    assert_eq!((r.get_c128(1).re, r.get_c128(1).im), (-3.0, 4.0));
}
