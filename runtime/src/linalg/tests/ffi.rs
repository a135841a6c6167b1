//! The handlers through the C ABI, as generated code calls them: batches, result shapes,
//! attribute decoding and errors.

use crate::custom_call::call::hlojit_rt_ffi_call;
use crate::custom_call::descriptor::{AttrValue, BufferSpec, CallDescriptor};
use crate::custom_call::last_error::take_last_error;
use crate::linalg::builtin_handler;
use hlojit_ffi::xla::{XLA_FFI_DataType, XLA_FFI_DataType_F32, XLA_FFI_DataType_F64, XLA_FFI_DataType_S32};
use std::ffi::c_void;

fn spec(dtype: XLA_FFI_DataType, dims: &[i64]) -> BufferSpec {
    BufferSpec { dtype, dims: dims.to_vec() }
}

/// Calls built-in `target`; returns the last error on failure.
fn call(
    target: &str,
    args: Vec<BufferSpec>,
    rets: Vec<BufferSpec>,
    attrs: Vec<(&str, AttrValue)>,
    arg_ptrs: &[*mut c_void],
    ret_ptrs: &[*mut c_void],
) -> Result<(), String> {
    let bytes = CallDescriptor {
        target: target.into(),
        args,
        rets,
        attrs: attrs.into_iter().map(|(n, v)| (n.to_string(), v)).collect(),
    }
    .encode();
    let handler = builtin_handler(target).expect("a built-in target");
    // SAFETY: the pointer arrays match the descriptor's buffers, which outlive the call.
    let rc = unsafe {
        hlojit_rt_ffi_call(
            handler as *const c_void,
            bytes.as_ptr(),
            bytes.len() as i64,
            arg_ptrs.as_ptr(),
            ret_ptrs.as_ptr(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(take_last_error().unwrap_or_default())
    }
}

fn ptr<T>(v: &mut [T]) -> *mut c_void {
    v.as_mut_ptr() as *mut c_void
}

#[test]
fn batched_potrf_reports_info_per_matrix() {
    // Two 2x2 matrices: [[4,2],[2,5]] = L·Lᵀ with L = [[2,0],[1,2]]; [[1,2],[2,1]] is indefinite.
    let mut a = [4.0f32, 2.0, 2.0, 5.0, 1.0, 2.0, 2.0, 1.0];
    let mut out = [0.0f32; 8];
    let mut info = [-1i32; 2];
    call(
        "lapack_spotrf_ffi",
        vec![spec(XLA_FFI_DataType_F32, &[2, 2, 2])],
        vec![spec(XLA_FFI_DataType_F32, &[2, 2, 2]), spec(XLA_FFI_DataType_S32, &[2])],
        vec![("uplo", AttrValue::U8(b'L'))],
        &[ptr(&mut a)],
        &[ptr(&mut out), ptr(&mut info)],
    )
    .unwrap();
    assert_eq!(info, [0, 2]);
    assert_eq!(out[..4], [2.0, 1.0, 2.0, 2.0]);
}

#[test]
fn batched_getrf_pivots_are_one_based_per_matrix() {
    // [[0,1],[1,0]] needs a swap (pivot 2); [[3,0],[1,2]] does not (pivot 1).
    let mut a = [0.0f64, 1.0, 1.0, 0.0, 3.0, 1.0, 0.0, 2.0];
    let (mut lu, mut ipiv, mut info) = ([0.0f64; 8], [0i32; 4], [-1i32; 2]);
    call(
        "lapack_dgetrf_ffi",
        vec![spec(XLA_FFI_DataType_F64, &[2, 2, 2])],
        vec![
            spec(XLA_FFI_DataType_F64, &[2, 2, 2]),
            spec(XLA_FFI_DataType_S32, &[2, 2]),
            spec(XLA_FFI_DataType_S32, &[2]),
        ],
        vec![],
        &[ptr(&mut a)],
        &[ptr(&mut lu), ptr(&mut ipiv), ptr(&mut info)],
    )
    .unwrap();
    assert_eq!(ipiv, [2, 2, 1, 2]);
    assert_eq!(info, [0, 0]);
    assert_eq!(lu, [1.0, 0.0, 0.0, 1.0, 3.0, 1.0 / 3.0, 0.0, 2.0]);
}

#[test]
fn bad_attribute_wrong_dtype_and_wrong_shape_are_errors() {
    let mut a = [1.0f32; 4];
    let (mut out, mut info) = ([0.0f32; 4], [0i32; 1]);
    let args = || vec![spec(XLA_FFI_DataType_F32, &[2, 2])];
    let rets = || vec![spec(XLA_FFI_DataType_F32, &[2, 2]), spec(XLA_FFI_DataType_S32, &[])];
    let e = call(
        "lapack_spotrf_ffi",
        args(),
        rets(),
        vec![("uplo", AttrValue::U8(b'X'))],
        &[ptr(&mut a)],
        &[ptr(&mut out), ptr(&mut info)],
    )
    .unwrap_err();
    assert!(e.contains("attribute 'uplo' is 88, expected one of 'L' (76), 'U' (85)"), "{e}");
    let e = call("lapack_spotrf_ffi", args(), rets(), vec![], &[ptr(&mut a)], &[ptr(&mut out), ptr(&mut info)])
        .unwrap_err();
    assert!(e.contains("missing attribute 'uplo'"), "{e}");
    // The f64 target given f32 buffers.
    let e = call(
        "lapack_dpotrf_ffi",
        args(),
        rets(),
        vec![("uplo", AttrValue::U8(b'L'))],
        &[ptr(&mut a)],
        &[ptr(&mut out), ptr(&mut info)],
    )
    .unwrap_err();
    assert!(e.contains("element type f32") && e.contains("f64"), "{e}");
    // A vector is not a matrix.
    let e = call(
        "lapack_spotrf_ffi",
        vec![spec(XLA_FFI_DataType_F32, &[4])],
        vec![spec(XLA_FFI_DataType_F32, &[4]), spec(XLA_FFI_DataType_S32, &[])],
        vec![("uplo", AttrValue::U8(b'L'))],
        &[ptr(&mut a)],
        &[ptr(&mut out), ptr(&mut info)],
    )
    .unwrap_err();
    assert!(e.contains("at least 2 dimensions"), "{e}");
}

#[test]
fn trsm_with_alpha_argument() {
    // Older jaxlib passes alpha as a scalar third argument: solve [[2,0],[1,1]]·x = 3·(2, 3).
    let mut a = [2.0f32, 1.0, 0.0, 1.0];
    let mut b = [2.0f32, 3.0];
    let mut alpha = [3.0f32];
    let mut x = [0.0f32; 2];
    call(
        "lapack_strsm_ffi",
        vec![spec(XLA_FFI_DataType_F32, &[2, 2]), spec(XLA_FFI_DataType_F32, &[2, 1]), spec(XLA_FFI_DataType_F32, &[])],
        vec![spec(XLA_FFI_DataType_F32, &[2, 1])],
        vec![
            ("side", AttrValue::U8(b'L')),
            ("uplo", AttrValue::U8(b'L')),
            ("trans_x", AttrValue::U8(b'N')),
            ("diag", AttrValue::U8(b'N')),
        ],
        &[ptr(&mut a), ptr(&mut b), ptr(&mut alpha)],
        &[ptr(&mut x)],
    )
    .unwrap();
    // 2·x0 = 6 -> x0 = 3; x0 + x1 = 9 -> x1 = 6.
    assert_eq!(x, [3.0, 6.0]);
}

#[test]
fn every_builtin_name_resolves_with_no_registry() {
    let names = crate::linalg::builtin_targets();
    for name in &names {
        let r = crate::custom_call::resolve_target(&[], name, &crate::custom_call::ProcessSymbols::None).unwrap_or_else(|| panic!("{name} resolves"));
        assert_eq!(r.address, builtin_handler(name).unwrap() as usize, "{name}");
    }
    // The 61 targets jaxlib 0.10.2 registers for CPU: 15 routines x 4 element types and
    // tridiagonal_solve_perturbed_ffi.
    assert_eq!(names.len(), 61, "{names:?}");
}
