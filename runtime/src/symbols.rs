//! The functions generated code calls (`hlojit_rt_*`). They are `extern "C"` and exported so
//! that AOT objects link against the runtime library; the JIT registers their addresses.

use crate::block_cache::{self, BUFFER_ALIGNMENT};
use std::ptr::NonNull;
use crate::custom_call::last_error;

/// A kernel task: runs iterations `[begin, end)` of a kernel over the buffer table.
pub type KernelTask = unsafe extern "C" fn(table: *const *mut u8, begin: i64, end: i64);

/// How the message of a failed [`hlojit_rt_alloc`] starts, so that the host can tell running
/// out of memory from other failures.
pub const ALLOCATION_FAILURE: &str = "cannot allocate";

/// Allocates `size` bytes aligned for any generated load or store; null on failure, with the
/// size recorded as this thread's last error.
#[no_mangle]
pub extern "C" fn hlojit_rt_alloc(size: i64) -> *mut u8 {
    if size <= 0 {
        return BUFFER_ALIGNMENT as *mut u8;
    }
    block_cache::allocate(size as usize).map_or_else(
        || {
            let bytes = crate::limits::describe_bytes(size as u128);
            crate::custom_call::last_error::set_failure(format!("{ALLOCATION_FAILURE} {bytes} of temporary memory"));
            std::ptr::null_mut()
        },
        NonNull::as_ptr,
    )
}

/// Frees memory from [`hlojit_rt_alloc`] of the same size.
///
/// # Safety
/// `ptr` must come from `hlojit_rt_alloc(size)` and not be freed twice.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_free(ptr: *mut u8, size: i64) {
    if let (true, Some(ptr)) = (size > 0, NonNull::new(ptr)) {
        // SAFETY: the caller passes a block from `hlojit_rt_alloc(size)`.
        unsafe { block_cache::free(ptr, size as usize) };
    }
}

/// Runs `task` over `[0, extent)` split into chunks (of at least `min_chunk` iterations), and
/// returns when all are done. The calling thread works through the chunks itself, joined by
/// as many pool threads as there are other cores, each taking the next chunk until none is
/// left: one wake-up per helper and none for the caller, which a kernel of a few microseconds
/// (a step of a recurrent loop) cannot afford more of; a helper that wakes late finds no
/// chunk and costs nothing, not even the caller's wait (see [`crate::parallel_loop`]).
///
/// # Safety
/// `task` must be safe to run concurrently on disjoint ranges with this `table`.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_parallel_for(task: KernelTask, table: *const *mut u8, extent: i64, min_chunk: i64) {
    let threads = rayon::current_num_threads().max(1) as i64;
    let min_chunk = min_chunk.max(1);
    let chunks = (extent / min_chunk).clamp(1, threads * 4);
    if chunks <= 1 || threads == 1 {
        task(table, 0, extent);
        return;
    }
    // SAFETY: as this function's own contract.
    unsafe { crate::parallel_loop::run(task, table, extent, chunks, threads.min(chunks) - 1) };
}

/// 1 if something on this thread failed without a status to return it in (an allocation in a
/// kernel) since the last call, 0 otherwise; the message is the thread's last error.
#[no_mangle]
pub extern "C" fn hlojit_rt_take_failure() -> i32 {
    i32::from(last_error::take_failure())
}

/// Threads [`hlojit_rt_parallel_for`] spreads work over; kernels that split work themselves
/// (GEMM) size their tasks by it.
#[no_mangle]
pub extern "C" fn hlojit_rt_num_threads() -> i64 {
    rayon::current_num_threads().max(1) as i64
}

/// Every runtime symbol by name, for the JIT to define.
pub fn runtime_symbols() -> Vec<(&'static str, usize)> {
    vec![
        ("hlojit_rt_alloc", hlojit_rt_alloc as *const () as usize),
        ("hlojit_rt_free", hlojit_rt_free as *const () as usize),
        ("hlojit_rt_parallel_for", hlojit_rt_parallel_for as *const () as usize),
        ("hlojit_rt_num_threads", hlojit_rt_num_threads as *const () as usize),
        ("hlojit_rt_take_failure", hlojit_rt_take_failure as *const () as usize),
        ("hlojit_rt_sort_packed_keys", crate::kernels::sort::hlojit_rt_sort_packed_keys as *const () as usize),
        ("hlojit_rt_sort_wide_keys", crate::kernels::sort::hlojit_rt_sort_wide_keys as *const () as usize),
        ("hlojit_rt_sort_by_comparator", crate::kernels::sort::hlojit_rt_sort_by_comparator as *const () as usize),
        ("hlojit_rt_sort_unstable_by_comparator", crate::kernels::sort::hlojit_rt_sort_unstable_by_comparator as *const () as usize),
        ("hlojit_rt_fft", crate::kernels::fft::hlojit_rt_fft as *const () as usize),
        ("hlojit_rt_gemm_f32_avx512", crate::kernels::gemm::hlojit_rt_gemm_f32_avx512 as *const () as usize),
        ("hlojit_rt_gemm_f32_avx2", crate::kernels::gemm::hlojit_rt_gemm_f32_avx2 as *const () as usize),
        ("hlojit_rt_gemm_bf16_avx512", crate::kernels::gemm::hlojit_rt_gemm_bf16_avx512 as *const () as usize),
        ("hlojit_rt_gemm_bf16_avx2", crate::kernels::gemm::hlojit_rt_gemm_bf16_avx2 as *const () as usize),
        ("hlojit_rt_gemm_bf16_pairs_avx512", crate::kernels::gemm::hlojit_rt_gemm_bf16_pairs_avx512 as *const () as usize),
        ("hlojit_rt_gemm_s8_avx2", crate::kernels::gemm::hlojit_rt_gemm_s8_avx2 as *const () as usize),
        ("hlojit_rt_gemm_s8_vnni_avx512", crate::kernels::gemm::hlojit_rt_gemm_s8_vnni_avx512 as *const () as usize),
        ("hlojit_rt_gemm_bf16_amx", crate::kernels::gemm::hlojit_rt_gemm_bf16_amx as *const () as usize),
        ("hlojit_rt_gemm_s8_amx", crate::kernels::gemm::hlojit_rt_gemm_s8_amx as *const () as usize),
        ("hlojit_rt_conv_f32_avx512", crate::kernels::conv::hlojit_rt_conv_f32_avx512 as *const () as usize),
        ("hlojit_rt_conv_f32_avx2", crate::kernels::conv::hlojit_rt_conv_f32_avx2 as *const () as usize),
        ("hlojit_rt_softmax_rows_f32_avx2", crate::kernels::rows::hlojit_rt_softmax_rows_f32_avx2 as *const () as usize),
        ("hlojit_rt_softmax_rows_f32_avx512", crate::kernels::rows::hlojit_rt_softmax_rows_f32_avx512 as *const () as usize),
        ("hlojit_rt_row_reduce_f32_avx2", crate::kernels::rows::hlojit_rt_row_reduce_f32_avx2 as *const () as usize),
        ("hlojit_rt_row_reduce_f32_avx512", crate::kernels::rows::hlojit_rt_row_reduce_f32_avx512 as *const () as usize),
        ("hlojit_rt_layernorm_rows_f32_avx2", crate::kernels::rows::hlojit_rt_layernorm_rows_f32_avx2 as *const () as usize),
        ("hlojit_rt_layernorm_rows_f32_avx512", crate::kernels::rows::hlojit_rt_layernorm_rows_f32_avx512 as *const () as usize),
        ("hlojit_rt_sort_rows", crate::kernels::sort_rows::hlojit_rt_sort_rows as *const () as usize),
        ("hlojit_rt_dot_strips_f32_avx2", crate::kernels::dot_strips::hlojit_rt_dot_strips_f32_avx2 as *const () as usize),
        ("hlojit_rt_dot_strips_f32_avx512", crate::kernels::dot_strips::hlojit_rt_dot_strips_f32_avx512 as *const () as usize),
        ("hlojit_rt_rng_get_and_update_state", crate::kernels::rng::hlojit_rt_rng_get_and_update_state as *const () as usize),
        ("hlojit_rt_ffi_call", crate::custom_call::call::hlojit_rt_ffi_call as *const () as usize),
        ("hlojit_rt_builtin_target_call", crate::custom_call::builtin_targets::hlojit_rt_builtin_target_call as *const () as usize),
        ("hlojit_rt_custom_call_status", crate::custom_call::status::hlojit_rt_custom_call_status as *const () as usize),
        ("XlaCustomCallStatusSetSuccess", crate::custom_call::status::XlaCustomCallStatusSetSuccess as *const () as usize),
        ("XlaCustomCallStatusSetFailure", crate::custom_call::status::XlaCustomCallStatusSetFailure as *const () as usize),
        ("hlojit_last_error", crate::custom_call::last_error::hlojit_last_error as *const () as usize),
        ("hlojit_rt_replica_id", crate::collectives::entry_points::hlojit_rt_replica_id as *const () as usize),
        ("hlojit_rt_partition_id", crate::collectives::entry_points::hlojit_rt_partition_id as *const () as usize),
        ("hlojit_rt_collective_enter", crate::collectives::entry_points::hlojit_rt_collective_enter as *const () as usize),
        ("hlojit_rt_collective_leave", crate::collectives::entry_points::hlojit_rt_collective_leave as *const () as usize),
        ("hlojit_rt_collective_reduce_builtin", crate::collectives::entry_points::hlojit_rt_collective_reduce_builtin as *const () as usize),
        ("hlojit_rt_transfer", crate::transfers::entry_points::hlojit_rt_transfer as *const () as usize),
        ("XLA_FFI_GetApi", crate::custom_call::api::XLA_FFI_GetApi as *const () as usize),
        ("hlojit_rt_poll_interrupt", crate::executor::hlojit_rt_poll_interrupt as *const () as usize),
        ("hlojit_rt_profile_now", crate::profile::hlojit_rt_profile_now as *const () as usize),
        ("hlojit_rt_profile_record", crate::profile::hlojit_rt_profile_record as *const () as usize),
        ("hlojit_rt_interrupt_requested", &crate::executor::hlojit_rt_interrupt_requested as *const _ as usize),
        ("__truncsfbf2", crate::libcalls::__truncsfbf2 as *const () as usize),
        ("__truncdfbf2", crate::libcalls::__truncdfbf2 as *const () as usize),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel task whose last chunk cannot get its scratch: it returns early, as generated
    /// kernels do, and the runtime recorded why.
    unsafe extern "C" fn last_chunk_allocates_too_much(_table: *const *mut u8, _begin: i64, end: i64) {
        if end == 64 {
            assert!(hlojit_rt_alloc(i64::MAX / 2).is_null());
        }
    }

    #[test]
    fn a_failure_on_any_thread_of_a_parallel_kernel_reaches_the_caller() {
        last_error::clear_last_error();
        // SAFETY: the task touches no memory of the table.
        unsafe { hlojit_rt_parallel_for(last_chunk_allocates_too_much, std::ptr::null(), 64, 1) };
        assert_eq!(hlojit_rt_take_failure(), 1);
        let message = last_error::take_last_error().unwrap_or_default();
        assert!(message.starts_with(ALLOCATION_FAILURE), "{message}");
        assert_eq!(hlojit_rt_take_failure(), 0, "taken once");
    }
}
