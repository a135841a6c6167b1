//! A custom-call plugin in Rust: a typed-FFI handler exported with `export_handler!` (no unsafe
//! code) and a legacy status-returning target.
//!
//! ```sh
//! cargo build --release --manifest-path examples/rust-plugin/Cargo.toml
//! hlojit run examples/rust-plugin/example.hlo --random-inputs 1 \
//!     --plugin examples/rust-plugin/target/release/libhlojit_example_plugin.so
//! ```

use hlojit_ffi::handler::{Call, Error, HandlerResult};
use std::ffi::{c_char, c_void};

/// `running_mean` (typed FFI): y[i] = mean(x[0..=i]) over an f32 vector; NaN is an error.
fn running_mean_impl(mut call: Call) -> HandlerResult {
    call.expect_arity(1, 1)?;
    let x = call.arg(0)?.as_slice::<f32>()?;
    let y = call.rets[0].as_mut_slice::<f32>()?;
    let mut sum = 0.0f64;
    for (i, (y, &x)) in y.iter_mut().zip(x).enumerate() {
        if x.is_nan() {
            return Err(Error::invalid_argument(format!("NaN at index {i}")));
        }
        sum += x as f64;
        *y = (sum / (i + 1) as f64) as f32;
    }
    Ok(())
}

hlojit_ffi::export_handler!(running_mean, running_mean_impl);

/// `scale_status` (API_VERSION_STATUS_RETURNING_UNIFIED): out = in * k over f32[5], with k
/// the backend_config string.
///
/// # Safety
/// Called by the host with XLA's legacy custom-call arguments.
#[no_mangle]
pub unsafe extern "C" fn scale_status(
    out: *mut c_void,
    ins: *const *const c_void,
    opaque: *const c_char,
    opaque_len: usize,
    status: *mut hlojit_ffi::status::XlaCustomCallStatus,
) {
    let config = std::slice::from_raw_parts(opaque as *const u8, opaque_len);
    let Some(k) = std::str::from_utf8(config).ok().and_then(|s| s.trim().parse::<f32>().ok()) else {
        hlojit_ffi::status::set_failure(status, "scale_status: backend_config is not a number");
        return;
    };
    let x = std::slice::from_raw_parts(*ins as *const f32, 5);
    let y = std::slice::from_raw_parts_mut(out as *mut f32, 5);
    for (y, x) in y.iter_mut().zip(x) {
        *y = x * k;
    }
}
