//! Runs the AOT-compiled model from Rust: the same model and custom-call target as the C
//! example (`examples/aot-c`), the target written in Rust and resolved by the linker.
//!
//! ```sh
//! cargo build --release                     # the hlojit binary, for the build script
//! cargo run --release --manifest-path examples/aot-rust/Cargo.toml
//! ```
//! With arguments `x.bin b.bin s.bin e.bin` it reads raw little-endian inputs and writes the
//! raw results instead of printing them.
//!
//! The compiled function runs through the runtime's `Executor`, as JIT-compiled code does:
//! arguments are checked against the signature, outputs allocated, failures returned as errors.

use hlojit_runtime::executor::{Executor, RunOptions, Signature};
use hlojit_runtime::{ElementType, HostBuffer, Shape};
use std::ffi::{c_char, c_void};

extern "C" {
    /// Declared by the generated `model.h` (`const void* const* args, void* const* results`).
    fn model(args: *const *const u8, results: *const *mut u8) -> i32;
    fn XlaCustomCallStatusSetFailure(status: *mut c_void, message: *const c_char, len: usize);
}

const X: usize = 32; // f32[4,8]
const B: usize = 8; // f32[8]

/// The custom call `checked_scale` (API_VERSION_STATUS_RETURNING): out = 2 * in over
/// f32[4,8]; fails if |in| > 100.
///
/// # Safety
/// Called by the compiled model with XLA's legacy custom-call arguments.
#[no_mangle]
pub unsafe extern "C" fn checked_scale(out: *mut c_void, ins: *const *const c_void, status: *mut c_void) {
    let x = std::slice::from_raw_parts(*ins as *const f32, X);
    let y = std::slice::from_raw_parts_mut(out as *mut f32, X);
    for (i, (&v, y)) in x.iter().zip(y).enumerate() {
        if v.is_nan() || v.abs() > 100.0 {
            let msg = format!("checked_scale: value {v} at index {i} is out of range");
            XlaCustomCallStatusSetFailure(status, msg.as_ptr() as *const c_char, msg.len());
            return;
        }
        *y = 2.0 * v;
    }
}

fn read_f32s(path: &str, n: usize) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(bytes.len(), 4 * n, "{path}: expected {} bytes", 4 * n);
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn write_f32s(path: &str, v: &[f32]) {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("{path}: {e}"));
}

fn main() -> std::process::ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let (x, b) = match argv.len() {
        0 => (
            (0..X).map(|i| (i % 8) as f32 * 0.25 - 1.0).collect::<Vec<_>>(),
            (0..B).map(|i| 0.125 * i as f32).collect(),
        ),
        4 => (read_f32s(&argv[0], X), read_f32s(&argv[1], B)),
        _ => {
            eprintln!("usage: hlojit-aot-example [x.bin b.bin s.bin e.bin]");
            return std::process::ExitCode::from(2);
        }
    };
    // model.h: two f32 arguments, a tuple of two f32[4,8] results, all row-major.
    let f32s = |dims: &[i64]| Shape::array_row_major(ElementType::F32, dims.to_vec());
    let signature = Signature::new(vec![f32s(&[4, 8]), f32s(&[8])], Shape::Tuple(vec![f32s(&[4, 8]), f32s(&[4, 8])]));
    // SAFETY: `model` was compiled from model.hlo, whose signature this is, and is linked in.
    let executor = unsafe { Executor::new(model, signature) };
    let x = HostBuffer::from_slice(&[4, 8], &x).expect("32 values");
    let b = HostBuffer::from_slice(&[8], &b).expect("8 values");
    let results = match executor.run(vec![(&x).into(), (&b).into()], &RunOptions::default()) {
        Ok(results) => results,
        Err(e) => {
            eprintln!("model failed: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    let s = results[0].as_slice::<f32>().expect("f32 results");
    let e = results[1].as_slice::<f32>().expect("f32 results");
    if argv.is_empty() {
        println!("result 0: {:?} ...", &s[..8]);
        println!("result 1: {:?} ...", &e[..8]);
    } else {
        write_f32s(&argv[2], s);
        write_f32s(&argv[3], e);
    }
    std::process::ExitCode::SUCCESS
}
