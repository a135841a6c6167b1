use super::*;
use crate::hlo::shape_inference::*;

#[test]
fn tuples() {
    let t = infer_tuple(&[&arr(F32, &[2]), &scalar(S32)]);
    assert_eq!(t.to_string(), "(f32[2], s32[])");
    assert_shape(infer_get_tuple_element(&t, 1), "s32[]");
    assert_err(infer_get_tuple_element(&t, 2), &["get-tuple-element:", "index 2"]);
    assert_err(infer_get_tuple_element(&arr(F32, &[2]), 0), &["get-tuple-element:", "must be a tuple"]);
}

#[test]
fn call_and_fusion_take_the_callee_result() {
    let callee = sig(&[arr(F32, &[3]), scalar(S32)], arr(F32, &[6]));
    assert_shape(infer_call(&[&arr(F32, &[3]), &scalar(S32)], &callee), "f32[6]");
    assert_err(infer_call(&[&arr(F32, &[3])], &callee), &["call:", "2 parameters but 1 arguments"]);
    assert_err(infer_call(&[&arr(F32, &[4]), &scalar(S32)], &callee), &["call:", "argument 0 is f32[4]", "f32[3]"]);
    assert_shape(infer_fusion(&[&arr(F32, &[3]), &scalar(S32)], &callee), "f32[6]");
    assert_err(infer_fusion(&[&arr(F32, &[3]), &scalar(U32)], &callee), &["fusion:", "operand 1 is u32[]"]);
}

#[test]
fn while_loops() {
    let state = Shape::Tuple(vec![scalar(S32), arr(F32, &[4])]);
    let cond = sig(std::slice::from_ref(&state), scalar(Pred));
    let body = sig(std::slice::from_ref(&state), state.clone());
    assert_shape(infer_while(&state, &cond, &body), "(s32[], f32[4])");
    let bad_body = sig(std::slice::from_ref(&state), Shape::Tuple(vec![scalar(S32), arr(F32, &[5])]));
    assert_err(infer_while(&state, &cond, &bad_body), &["while:", "body result", "(s32[], f32[5])"]);
    let bad_cond = sig(std::slice::from_ref(&state), scalar(S32));
    assert_err(infer_while(&state, &bad_cond, &body), &["while:", "condition must return pred[]"]);
}

#[test]
fn conditionals() {
    let b0 = sig(&[arr(F32, &[4])], arr(F32, &[4]));
    let b1 = sig(&[Shape::Tuple(vec![arr(F32, &[4]), scalar(S32)])], arr(F32, &[4]));
    let xk = Shape::Tuple(vec![arr(F32, &[4]), scalar(S32)]);
    let x = arr(F32, &[4]);
    assert_shape(infer_conditional(&scalar(S32), &[&x, &xk, &x], &[&b0, &b1, &b0]), "f32[4]");
    assert_shape(infer_conditional(&scalar(Pred), &[&x, &xk], &[&b0, &b1]), "f32[4]");
    assert_err(
        infer_conditional(&scalar(Pred), &[&x, &xk, &x], &[&b0, &b1, &b0]),
        &["conditional:", "exactly 2 branches"],
    );
    assert_err(
        infer_conditional(&scalar(S32), &[&xk, &x], &[&b0, &b1]),
        &["conditional:", "operand 1 is (f32[4], s32[])"],
    );
    let other = sig(&[arr(F32, &[4])], arr(F32, &[3]));
    assert_err(
        infer_conditional(&scalar(S32), &[&x, &x], &[&b0, &other]),
        &["conditional:", "branch 1 returns f32[3]"],
    );
    assert_err(infer_conditional(&scalar(S8), &[&x], &[&b0]), &["conditional:", "selector"]);
}

#[test]
fn map_applies_a_scalar_computation() {
    let f = sig(&[scalar(F32), scalar(F32)], scalar(S32));
    assert_shape(infer_map(&[&arr(F32, &[4, 5]), &arr(F32, &[4, 5])], Some(&[0, 1]), &f), "s32[4,5]");
    assert_err(infer_map(&[&arr(F32, &[4, 5]), &arr(F32, &[5, 4])], None, &f), &["map:", "operand 1"]);
    assert_err(infer_map(&[&arr(F32, &[4, 5]), &arr(F32, &[4, 5])], Some(&[1, 0]), &f), &["map:", "dimensions {1,0}"]);
    assert_err(infer_map(&[&arr(F32, &[4]), &arr(S32, &[4])], None, &f), &["map:", "parameter 1"]);
}

#[test]
fn sort_with_a_comparator() {
    let cmp = sig(&[scalar(F32), scalar(F32), scalar(S32), scalar(S32)], scalar(Pred));
    assert_shape(infer_sort(&[&arr(F32, &[5]), &arr(S32, &[5])], 0, &cmp), "(f32[5], s32[5])");
    let single = sig(&[scalar(F32), scalar(F32)], scalar(Pred));
    assert_shape(infer_sort(&[&arr(F32, &[2, 5])], 1, &single), "f32[2,5]");
    assert_err(infer_sort(&[&arr(F32, &[5]), &arr(S32, &[5])], 0, &single), &["sort:", "4 parameters, but takes 2"]);
    assert_err(infer_sort(&[&arr(F32, &[5])], 1, &single), &["sort:", "sort dimension 1"]);
    assert_err(infer_sort(&[&arr(F32, &[5]), &arr(S32, &[4])], 0, &cmp), &["sort:", "operand 1 s32[4]"]);
    let not_pred = sig(&[scalar(F32), scalar(F32)], scalar(S32));
    assert_err(infer_sort(&[&arr(F32, &[5])], 0, &not_pred), &["sort:", "must return pred[]"]);
}

#[test]
fn custom_calls_and_bitcasts_keep_the_declared_shape() {
    let out = arr(F32, &[5, 3]);
    assert_shape(infer_custom_call(&[&arr(F32, &[5, 5])], None, &out), "f32[5,3]");
    assert_shape(infer_custom_call(&[&arr(F32, &[5, 5])], Some(&[arr(F32, &[5, 5])]), &out), "f32[5,3]");
    assert_err(
        infer_custom_call(&[&arr(F32, &[5, 5])], Some(&[]), &out),
        &["custom-call:", "0 operand_layout_constraints"],
    );
    assert_shape(infer_bitcast(&arr(F32, &[4, 3]), &arr(F32, &[1, 4, 3])), "f32[1,4,3]");
    assert_shape(infer_bitcast(&arr(F32, &[2]), &arr(S32, &[2])), "s32[2]");
    assert_err(infer_bitcast(&arr(F32, &[4, 3]), &arr(F32, &[13])), &["bitcast:", "different numbers of bits"]);
}

#[test]
fn tokens_and_transfers() {
    assert_shape(infer_after_all(&[&Shape::Token, &Shape::Token]), "token[]");
    assert_err(infer_after_all(&[&scalar(F32)]), &["after-all:", "token"]);
    assert_shape(infer_add_dependency(&arr(F32, &[2]), &Shape::Token), "f32[2]");
    assert_shape(infer_send(&arr(F32, &[2]), &Shape::Token), "(f32[2], u32[], token[])");
    assert_eq!(infer_copy_start(&arr(F32, &[2])).to_string(), "(f32[2], f32[2], u32[])");
    assert_shape(infer_copy_done(&infer_copy_start(&arr(F32, &[2]))), "f32[2]");
    let declared = Shape::Tuple(vec![arr(F32, &[3]), Shape::Token]);
    assert_shape(infer_infeed(&Shape::Token, &declared), "(f32[3], token[])");
    assert_err(infer_infeed(&scalar(F32), &declared), &["infeed:", "token"]);
}
