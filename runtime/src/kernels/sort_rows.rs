//! Whole sorts by a 32-bit key, run by the runtime alone: for each row (a contiguous run of
//! `n` elements), the key of every element packed with its position, the packed keys sorted
//! ([`super::sort::hlojit_rt_sort_packed_keys`]: radix), and every operand gathered through
//! the order. That is what the generated sort kernel does with a recognised key order
//! (`codegen/emitters/sort.rs`); with the key's few forms written here instead of generated, a
//! module that only sorts (`jnp.sort`, `jnp.argsort`) needs no machine code.
//!
//! Stable, as the packed positions make every key distinct.

use crate::custom_call::last_error::set_failure;
use crate::symbols::{hlojit_rt_alloc, hlojit_rt_free, hlojit_rt_parallel_for, ALLOCATION_FAILURE};
use std::sync::atomic::{AtomicBool, Ordering};

/// Key types ([`SortRows::key_type`]): f32 in the total order of XLA's `TOTALORDER`
/// comparisons (-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN), s32, u32.
pub const SORT_KEY_F32: i64 = 0;
pub const SORT_KEY_S32: i64 = 1;
pub const SORT_KEY_U32: i64 = 2;

/// Operands one call sorts together (a key and what goes along with it, as `argsort`'s
/// positions).
pub const MAX_SORT_OPERANDS: usize = 4;

/// One operand: `rows * n` elements of `bytes` (1, 2, 4 or 8) each, in and out.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct SortOperand {
    pub input: i64,
    pub out: i64,
    pub bytes: i64,
}

/// The descriptor of [`hlojit_rt_sort_rows`] (all fields 64-bit).
#[repr(C)]
pub struct SortRows {
    pub rows: i64,
    pub n: i64,
    pub key_type: i64,
    /// Non-zero: larger keys first.
    pub descending: i64,
    /// f32 keys: non-zero replaces NaNs by the f32 bits `nan_bits`, and zeros of either
    /// sign by `zero_bits`, before ordering (the canonicalizing key of JAX's comparators).
    pub replace_nan: i64,
    pub nan_bits: i64,
    pub replace_zero: i64,
    pub zero_bits: i64,
    /// The operand whose elements are the keys (4 bytes each).
    pub key_operand: i64,
    /// Rows per thread-pool task; 0 sorts every row on the calling thread.
    pub min_chunk: i64,
    /// Operands used, at most [`MAX_SORT_OPERANDS`].
    pub count: i64,
    pub operands: [SortOperand; MAX_SORT_OPERANDS],
}

/// Sorts every row; non-zero (and recorded as a failure) when the scratch for the keys cannot
/// be allocated.
///
/// # Safety
/// `desc` points to a valid descriptor whose first `count` operands hold `rows * n` elements
/// of their size in and out (outputs apart from every input), the key operand 4-byte ones.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_sort_rows(desc: *const SortRows) -> i32 {
    // SAFETY: as this function's contract.
    let d = unsafe { &*desc };
    if d.rows <= 0 || d.n <= 0 {
        return 0;
    }
    let task = Task { desc: d, failed: AtomicBool::new(false) };
    let ctx = &task as *const Task as *const *mut u8;
    // SAFETY: the tasks read `task` through the context, alive for the call.
    unsafe {
        if d.min_chunk > 0 {
            hlojit_rt_parallel_for(sort_task, ctx, d.rows, d.min_chunk);
        } else {
            sort_task(ctx, 0, d.rows);
        }
    }
    if task.failed.load(Ordering::Relaxed) {
        set_failure(format!("{ALLOCATION_FAILURE} the keys of a sort of {} elements", d.n));
        1
    } else {
        0
    }
}

struct Task<'a> {
    desc: &'a SortRows,
    failed: AtomicBool,
}

/// Rows `begin..end` (a thread-pool task; `ctx` is the [`Task`]).
unsafe extern "C" fn sort_task(ctx: *const *mut u8, begin: i64, end: i64) {
    // SAFETY: the caller passes its Task.
    let task = unsafe { &*(ctx as *const Task) };
    let d = task.desc;
    let n = d.n as usize;
    // Keys and the radix sort's scratch.
    let Some(bytes) = n.checked_mul(16).and_then(|b| i64::try_from(b).ok()) else {
        task.failed.store(true, Ordering::Relaxed);
        return;
    };
    let keys = hlojit_rt_alloc(bytes) as *mut u64;
    if keys.is_null() {
        task.failed.store(true, Ordering::Relaxed);
        return;
    }
    // SAFETY: `2n` values allocated above.
    let (keys, tmp) = unsafe { std::slice::from_raw_parts_mut(keys, 2 * n) }.split_at_mut(n);
    let operands = &d.operands[..d.count.clamp(0, MAX_SORT_OPERANDS as i64) as usize];
    let key_of = key_function(d);
    for r in begin as usize..end as usize {
        let key_input = operands[d.key_operand as usize].input as *const u32;
        for (i, k) in keys.iter_mut().enumerate() {
            // SAFETY: row `r` of the key operand (contract).
            let bits = unsafe { *key_input.add(r * n + i) };
            *k = u64::from(key_of(bits)) << 32 | i as u64;
        }
        // SAFETY: `n` keys and `n` values of scratch, apart.
        unsafe { super::sort::hlojit_rt_sort_packed_keys(keys.as_mut_ptr(), tmp.as_mut_ptr(), n as i64, n as i64) };
        for op in operands {
            // SAFETY: row `r` of each operand, in and out (contract).
            unsafe {
                match op.bytes {
                    1 => gather::<u8>(op, r, keys),
                    2 => gather::<u16>(op, r, keys),
                    4 => gather::<u32>(op, r, keys),
                    _ => gather::<u64>(op, r, keys),
                }
            }
        }
    }
    // SAFETY: allocated above with this size.
    unsafe { hlojit_rt_free(keys.as_mut_ptr() as *mut u8, bytes) };
}

/// The unsigned 32-bit key whose ascending order is the descriptor's order of the elements'
/// bits.
fn key_function(d: &SortRows) -> impl Fn(u32) -> u32 {
    let (key_type, flip) = (d.key_type, if d.descending != 0 { u32::MAX } else { 0 });
    let nan = (d.replace_nan != 0).then_some(d.nan_bits as u32);
    let zero = (d.replace_zero != 0).then_some(d.zero_bits as u32);
    move |bits: u32| {
        let ordered = match key_type {
            SORT_KEY_F32 => {
                let x = f32::from_bits(bits);
                let bits = match (nan, zero) {
                    (Some(n), _) if x.is_nan() => n,
                    (_, Some(z)) if x == 0.0 => z,
                    _ => bits,
                };
                if bits >> 31 != 0 {
                    !bits
                } else {
                    bits | 1 << 31
                }
            }
            SORT_KEY_S32 => bits ^ 1 << 31,
            _ => bits,
        };
        ordered ^ flip
    }
}

/// Row `r` of `op`'s output: its input's elements in the order of the sorted packed keys.
///
/// # Safety
/// Row `r` exists in both buffers, of `T`-sized elements.
unsafe fn gather<T: Copy>(op: &SortOperand, r: usize, sorted: &[u64]) {
    let n = sorted.len();
    // SAFETY: as this function's contract.
    let (input, out) = unsafe { ((op.input as *const T).add(r * n), (op.out as *mut T).add(r * n)) };
    for (j, &packed) in sorted.iter().enumerate() {
        // SAFETY: positions below `n`.
        unsafe { *out.add(j) = *input.add((packed & 0xffff_ffff) as usize) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(rows: i64, n: i64, key_type: i64, descending: bool, operands: &[SortOperand]) -> SortRows {
        let mut d = SortRows {
            rows,
            n,
            key_type,
            descending: i64::from(descending),
            replace_nan: 0,
            nan_bits: 0,
            replace_zero: 0,
            zero_bits: 0,
            key_operand: 0,
            min_chunk: 0,
            count: operands.len() as i64,
            operands: [SortOperand { input: 0, out: 0, bytes: 0 }; MAX_SORT_OPERANDS],
        };
        d.operands[..operands.len()].copy_from_slice(operands);
        d
    }

    /// Rows of f32 keys with ties, zeros of both signs and NaNs of both signs, each with its
    /// positions (an argsort): against a stable sort of the rows by the same order.
    #[test]
    fn rows_sort_stably_in_the_total_order_and_carry_their_operands() {
        let (rows, n) = (3usize, 2000usize);
        let specials = [0.0f32, -0.0, f32::NAN, -f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.5, -1.5];
        let keys: Vec<f32> = (0..rows * n).map(|i| if i % 7 == 0 { specials[i / 7 % specials.len()] } else { ((i * 7919) % 101) as f32 - 50.0 }).collect();
        let positions: Vec<i32> = (0..rows * n).map(|i| (i % n) as i32).collect();
        for (descending, canonical) in [(false, false), (true, false), (false, true)] {
            let mut out_keys = vec![0f32; rows * n];
            let mut out_positions = vec![0i32; rows * n];
            let ops = [
                SortOperand { input: keys.as_ptr() as i64, out: out_keys.as_mut_ptr() as i64, bytes: 4 },
                SortOperand { input: positions.as_ptr() as i64, out: out_positions.as_mut_ptr() as i64, bytes: 4 },
            ];
            let mut d = descriptor(rows as i64, n as i64, SORT_KEY_F32, descending, &ops);
            if canonical {
                (d.replace_nan, d.nan_bits, d.replace_zero, d.zero_bits) = (1, i64::from(f32::NAN.to_bits()), 1, 0);
            }
            // SAFETY: the buffers hold what the descriptor says.
            assert_eq!(unsafe { hlojit_rt_sort_rows(&d) }, 0);
            let total = |x: f32| {
                let x = if canonical && x.is_nan() { f32::NAN } else if canonical && x == 0.0 { 0.0 } else { x };
                let b = x.to_bits() as i32;
                b ^ (((b >> 31) as u32) >> 1) as i32
            };
            for r in 0..rows {
                let mut want: Vec<usize> = (0..n).collect();
                want.sort_by_key(|&i| if descending { -(total(keys[r * n + i]) as i64) } else { total(keys[r * n + i]) as i64 });
                for (j, &i) in want.iter().enumerate() {
                    assert_eq!(out_positions[r * n + j], i as i32, "row {r} place {j} (descending {descending}, canonical {canonical})");
                    assert_eq!(out_keys[r * n + j].to_bits(), keys[r * n + i].to_bits());
                }
            }
        }
    }

    #[test]
    fn integer_keys_order_as_signed_or_unsigned() {
        let values: Vec<i32> = vec![5, -1, i32::MIN, 0, i32::MAX, -1, 7];
        for (key_type, want) in [(SORT_KEY_S32, vec![i32::MIN, -1, -1, 0, 5, 7, i32::MAX]), (SORT_KEY_U32, vec![0, 5, 7, i32::MAX, i32::MIN, -1, -1])] {
            let mut out = vec![0i32; values.len()];
            let ops = [SortOperand { input: values.as_ptr() as i64, out: out.as_mut_ptr() as i64, bytes: 4 }];
            let d = descriptor(1, values.len() as i64, key_type, false, &ops);
            // SAFETY: the buffers hold what the descriptor says.
            assert_eq!(unsafe { hlojit_rt_sort_rows(&d) }, 0);
            assert_eq!(out, want);
        }
    }
}
