use super::*;
use crate::hlo::opcode::Opcode;
use crate::hlo::shape_inference::*;

#[test]
fn gather_and_scatter_across_devices() {
    assert_shape(infer_all_gather(&[&arr(F32, &[1, 3])], 0, 4), "f32[4,3]");
    assert_shape(infer_all_gather(&[&arr(S32, &[2, 3])], 1, 4), "s32[2,12]");
    assert_err(infer_all_gather(&[&arr(S32, &[2, 3])], 2, 4), &["all-gather:", "dimension 2"]);
    assert_shape(infer_reduce_scatter(&[&arr(F32, &[8])], 0, 4, &binary_reducer(F32)), "f32[2]");
    assert_shape(infer_reduce_scatter(&[&arr(F32, &[2, 4])], 1, 4, &binary_reducer(F32)), "f32[2,1]");
    assert_err(
        infer_reduce_scatter(&[&arr(F32, &[6])], 0, 4, &binary_reducer(F32)),
        &["reduce-scatter:", "not divisible by the shard count 4"],
    );
    assert_shape(infer_all_gather_start(&[&arr(F32, &[1, 3])], 0, 2), "(f32[1,3], f32[2,3])");
}

#[test]
fn all_reduce_and_all_to_all() {
    assert_shape(infer_all_reduce(&[&arr(F32, &[3]), &arr(S32, &[2])], &binary_reducer(F32)), "(f32[3], s32[2])");
    assert_err(
        infer_all_reduce(&[&arr(F32, &[3])], &sig(&[scalar(F32)], scalar(F32))),
        &["all-reduce:", "2 parameters"],
    );
    assert_shape(infer_all_to_all(&[&arr(S32, &[8])], Some(0), Some(4)), "s32[8]");
    assert_err(infer_all_to_all(&[&arr(S32, &[6])], Some(0), Some(4)), &["all-to-all:", "not divisible"]);
    assert_shape(infer_all_to_all(&[&arr(F32, &[2]), &arr(F32, &[2])], None, Some(2)), "(f32[2], f32[2])");
    assert_err(
        infer_all_to_all(&[&arr(F32, &[2]), &arr(F32, &[3])], None, Some(2)),
        &["all-to-all:", "operand 1 f32[3]"],
    );
}

#[test]
fn replica_groups_and_pairs() {
    assert_eq!(check_replica_groups(Opcode::AllGather, &[vec![0, 1, 2, 3]], true), Ok(Some(4)));
    assert_eq!(check_replica_groups(Opcode::AllReduce, &[], false), Ok(None));
    assert!(check_replica_groups(Opcode::AllGather, &[vec![0, 2]], true)
        .unwrap_err()
        .contains("replica 1 is not named"));
    assert!(check_replica_groups(Opcode::AllGather, &[vec![0, 1], vec![1, 2]], true)
        .unwrap_err()
        .contains("more than once"));
    assert!(check_replica_groups(Opcode::AllGather, &[vec![0, 1, 2], vec![3]], true).unwrap_err().contains("one size"));
    assert!(check_replica_groups(Opcode::AllReduce, &[vec![0, 1, 2], vec![3]], false).is_ok());
    assert!(check_source_target_pairs(Opcode::CollectivePermute, &[(0, 1), (1, 2), (2, 0)]).is_ok());
    assert!(check_source_target_pairs(Opcode::CollectivePermute, &[(0, 1), (0, 2)]).unwrap_err().contains("source 0"));
    assert!(check_source_target_pairs(Opcode::CollectivePermute, &[(0, 1), (2, 1)]).unwrap_err().contains("target 1"));
}

#[test]
fn permutes_and_ids() {
    assert_shape(infer_collective_permute(&[&arr(F32, &[3])], false), "f32[3]");
    assert_shape(infer_collective_permute(&[&arr(F32, &[3]), &arr(S32, &[2])], false), "(f32[3], s32[2])");
    assert_shape(infer_collective_permute_start(&[&arr(F32, &[3])], None, false), "(f32[3], f32[3], u32[], u32[])");
    assert_shape(
        infer_collective_permute_start(&[&arr(F32, &[3]), &arr(S32, &[2])], None, false),
        "((f32[3], s32[2]), (f32[3], s32[2]), u32[], u32[])",
    );
    let start = infer_collective_permute_start(&[&arr(F32, &[3])], None, false).unwrap();
    assert_shape(infer_collective_done(Opcode::CollectivePermuteDone, &start), "f32[3]");
    assert_eq!(infer_device_id().to_string(), "u32[]");
    assert_eq!(shard_count_from_shapes(&arr(F32, &[1, 3]), &arr(F32, &[4, 3]), 0), Some(4));
}
