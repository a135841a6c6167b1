//! Arguments borrowed from the caller's memory have only their element type's alignment (a
//! `Vec<f32>`, a slice at an odd offset), as do an AOT function's buffers: code that copies
//! whole buffers must not assume more (it did: a 64-byte aligned `memcpy` became `vmovaps`,
//! which faults on such an address).

use hlojit::{ArrayView, Client};

/// `backing[1..]`: 4 bytes past the allocation's (at least 16-byte) alignment.
fn unaligned(values: &[f32]) -> Vec<f32> {
    let mut backing = vec![0.0f32; values.len() + 1];
    backing[1..].copy_from_slice(values);
    backing
}

#[test]
fn a_parameter_returned_whole_from_an_unaligned_slice() {
    let exe = Client::new()
        .compile_text(
            "HloModule m\nENTRY e { x = f32[10,12] parameter(0) s = f32[5,9] slice(x), slice={[2:7],[3:12]}\n\
             ROOT t = (f32[5,9], f32[10,12]) tuple(s, x) }",
        )
        .expect("compiles");
    let values: Vec<f32> = (0..120).map(|i| i as f32).collect();
    let backing = unaligned(&values);
    assert_ne!(backing[1..].as_ptr() as usize % 64, 0);
    let out = exe.run([ArrayView::from_slice(&backing[1..], &[10, 12]).unwrap()]).expect("runs");
    assert_eq!(out[1].as_slice::<f32>().unwrap(), values.as_slice());
    let slice: Vec<f32> = (2..7).flat_map(|i| (3..12).map(move |j| (i * 12 + j) as f32)).collect();
    assert_eq!(out[0].as_slice::<f32>().unwrap(), slice.as_slice());
}

#[test]
fn a_scatter_into_an_unaligned_operand() {
    // The scatter updates a copy of its operand, staged whole before the updates.
    let exe = Client::new()
        .compile_text(
            "HloModule m\nadd { a = f32[] parameter(0) b = f32[] parameter(1) ROOT s = f32[] add(a, b) }\n\
             ENTRY e { x = f32[64,33] parameter(0) i = s32[3,1] parameter(1) u = f32[3,33] parameter(2)\n\
             ROOT r = f32[64,33] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0},\n\
             scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add }",
        )
        .expect("compiles");
    let values: Vec<f32> = (0..64 * 33).map(|i| i as f32).collect();
    let updates: Vec<f32> = (0..3 * 33).map(|i| 1000.0 + i as f32).collect();
    let (x, u) = (unaligned(&values), unaligned(&updates));
    let indices = [5i32, 60, 5];
    let out = exe
        .run([
            ArrayView::from_slice(&x[1..], &[64, 33]).unwrap(),
            ArrayView::from_slice(&indices, &[3, 1]).unwrap(),
            ArrayView::from_slice(&u[1..], &[3, 33]).unwrap(),
        ])
        .expect("runs");
    let mut want = values.clone();
    for (k, &row) in indices.iter().enumerate() {
        for j in 0..33 {
            want[row as usize * 33 + j] += updates[k * 33 + j];
        }
    }
    assert_eq!(out[0].as_slice::<f32>().unwrap(), want.as_slice());
}
