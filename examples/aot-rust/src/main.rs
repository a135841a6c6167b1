//! Runs the AOT-compiled model from Rust: the same model and custom-call target as the C
//! example (`examples/aot-c`), the target written in Rust and resolved by the linker.
//!
//! ```sh
//! cargo build --release                     # the hlojit binary, for the build script
//! cargo run --release --manifest-path examples/aot-rust/Cargo.toml
//! ```
//! With arguments `x.bin b.bin s.bin e.bin` it reads raw little-endian inputs and writes the
//! raw results instead of printing them.

use std::ffi::{c_char, c_void};

// Linked for the symbols the compiled code calls (`hlojit_rt_*`, `XlaCustomCallStatus*`).
extern crate hlojit_runtime;

extern "C" {
    /// Declared by the generated `model.h`.
    fn model(args: *const *const c_void, results: *const *mut c_void) -> i32;
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
    let mut s = vec![0f32; X];
    let mut e = vec![0f32; X];
    let args = [x.as_ptr() as *const c_void, b.as_ptr() as *const c_void];
    let results = [s.as_mut_ptr() as *mut c_void, e.as_mut_ptr() as *mut c_void];
    // SAFETY: buffers of the sizes and layouts model.h gives, alive for the call.
    let rc = unsafe { model(args.as_ptr(), results.as_ptr()) };
    if rc != 0 {
        let why = hlojit_runtime::custom_call::take_last_error().unwrap_or_default();
        eprintln!("model failed: {why}");
        return std::process::ExitCode::from(1);
    }
    if argv.is_empty() {
        println!("result 0: {:?} ...", &s[..8]);
        println!("result 1: {:?} ...", &e[..8]);
    } else {
        write_f32s(&argv[2], &s);
        write_f32s(&argv[3], &e);
    }
    std::process::ExitCode::SUCCESS
}
