//! The process-wide state behind HLO `rng-get-and-update-state` (what XLA's RngExpander
//! reads to seed `rng` ops): a 128-bit counter that each execution advances, so successive
//! runs of a program draw different numbers.

use std::sync::Mutex;

static STATE: Mutex<u128> = Mutex::new(0);

/// Writes the current 128-bit state to `out[0]` (low 64 bits) and `out[1]` (high), then
/// advances it by `delta`.
///
/// # Safety
/// `out` must be valid for writing two u64 values.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_rng_get_and_update_state(delta: i64, out: *mut u64) {
    let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let old = *state;
    *state = old.wrapping_add(delta as u64 as u128);
    // SAFETY: the caller passes room for two values.
    unsafe {
        out.write(old as u64);
        out.add(1).write((old >> 64) as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_call_sees_the_state_advanced_by_the_previous_delta() {
        let mut a = [0u64; 2];
        let mut b = [0u64; 2];
        unsafe {
            hlojit_rt_rng_get_and_update_state(5, a.as_mut_ptr());
            hlojit_rt_rng_get_and_update_state(1, b.as_mut_ptr());
        }
        // Other tests may run in between; the state only ever grows.
        let (a, b) = (a[0] as u128 | (a[1] as u128) << 64, b[0] as u128 | (b[1] as u128) << 64);
        assert!(b >= a + 5, "{a} then {b}");
    }
}
