//! Sorting for HLO `sort` and `topk`. Generated code prepares one row (a 1-D slice along the
//! sort dimension) at a time and calls one of these:
//!
//! - [`hlojit_rt_sort_packed_keys`]: every element already reduced to an unsigned key of at
//!   most 32 bits whose ascending order is the requested order; the key is packed with the
//!   element's position as `key << 32 | position`. Packed values are distinct, so sorting them
//!   is automatically stable. Used when the comparator is recognised as "less than on a key".
//! - [`hlojit_rt_sort_unstable_by_comparator`]: `is_stable=false`, ordered exactly as XLA:CPU
//!   orders it (ties included).
//! - [`hlojit_rt_sort_wide_keys`]: the same with 64-bit keys, positions kept separately.
//! - [`hlojit_rt_sort_by_comparator`]: any comparator, as a generated function; a stable merge
//!   sort of positions. It only ever asks "is a less than b", never assumes the answers are
//!   consistent, and always terminates with a permutation, whatever the comparator returns.

/// A generated comparator: whether element `a` of the row goes before element `b`
/// (non-zero for true); `ctx` is whatever the generated code passed along.
pub type Comparator = unsafe extern "C" fn(ctx: *const u8, a: i64, b: i64) -> i32;

/// Rows shorter than this are sorted by comparison (pdqsort); longer ones by radix.
const RADIX_MIN: usize = 1024;
/// Runs sorted by insertion before merging.
const INSERTION_RUN: usize = 16;

/// Sorts `keys[..n]` ascending (values `key << 32 | position`, key below 2^32) so that
/// `keys[..k]` hold the `k` smallest in order; the rest are left in some order. `tmp`, if not
/// null, is scratch room for `n` values (allocated here otherwise).
///
/// # Safety
/// `keys` must point to `n` writable values, `tmp` be null or point to `n` writable values
/// not overlapping them.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_sort_packed_keys(keys: *mut u64, tmp: *mut u64, n: i64, k: i64) {
    if keys.is_null() || n <= 1 || k <= 0 {
        return;
    }
    // SAFETY: the caller passes `n` values.
    let keys = unsafe { std::slice::from_raw_parts_mut(keys, n as usize) };
    let k = k as usize;
    if keys.len() < RADIX_MIN || k * 8 < keys.len() {
        select_and_sort(keys, k);
        return;
    }
    if tmp.is_null() {
        let mut own = vec![0u64; keys.len()];
        radix_sort_high32(keys, &mut own);
    } else {
        // SAFETY: the caller passes room for `n` values apart from `keys`.
        radix_sort_high32(keys, unsafe { std::slice::from_raw_parts_mut(tmp, n as usize) });
    }
}

/// Writes to `perm[..k]` the positions of the `k` smallest of `keys[..n]` in ascending order
/// of (key, position).
///
/// # Safety
/// `keys` must point to `n` values and `perm` to `k` writable ones (`k <= n`).
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_sort_wide_keys(keys: *const u64, perm: *mut i64, n: i64, k: i64) {
    if keys.is_null() || perm.is_null() || n <= 0 || k <= 0 {
        return;
    }
    let k = k.min(n) as usize;
    // SAFETY: the caller passes `n` keys and room for `k` positions.
    let (keys, perm) =
        unsafe { (std::slice::from_raw_parts(keys, n as usize), std::slice::from_raw_parts_mut(perm, k)) };
    let mut pairs: Vec<(u64, u64)> = keys.iter().enumerate().map(|(i, &key)| (key, i as u64)).collect();
    select_and_sort(&mut pairs, k);
    for (p, &(_, i)) in perm.iter_mut().zip(&pairs[..k]) {
        *p = i as i64;
    }
}

/// Fills `perm[..n]` with the positions `0..n` stably sorted by `cmp(ctx, a, b)` ("a goes
/// before b").
///
/// # Safety
/// `perm` must point to `n` writable values; `cmp` must be safe to call with `ctx` and any
/// two positions below `n`.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_sort_by_comparator(perm: *mut i64, n: i64, cmp: Comparator, ctx: *const u8) {
    if perm.is_null() || n <= 0 {
        return;
    }
    // SAFETY: the caller passes room for `n` positions.
    let perm = unsafe { std::slice::from_raw_parts_mut(perm, n as usize) };
    for (i, p) in perm.iter_mut().enumerate() {
        *p = i as i64;
    }
    // SAFETY: positions stay below `n`, as the caller requires.
    merge_sort(perm, &mut |a, b| unsafe { cmp(ctx, a, b) } != 0);
}

/// Fills `perm[..n]` with the positions `0..n` sorted by `cmp(ctx, a, b)` as XLA:CPU's unstable
/// sort (`std::sort`) orders them: see [`super::introsort`].
///
/// # Safety
/// As [`hlojit_rt_sort_by_comparator`].
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_sort_unstable_by_comparator(perm: *mut i64, n: i64, cmp: Comparator, ctx: *const u8) {
    if perm.is_null() || n <= 0 {
        return;
    }
    // SAFETY: the caller passes room for `n` positions.
    let perm = unsafe { std::slice::from_raw_parts_mut(perm, n as usize) };
    for (i, p) in perm.iter_mut().enumerate() {
        *p = i as i64;
    }
    // SAFETY: positions stay below `n`, as the caller requires.
    super::introsort::std_sort(perm, &mut |a, b| unsafe { cmp(ctx, a, b) } != 0);
}

/// Sorts so that `v[..k]` are the `k` smallest in order.
fn select_and_sort<T: Ord + Copy>(v: &mut [T], k: usize) {
    let k = k.min(v.len());
    if k == 0 {
        return;
    }
    if k < v.len() && k * 8 < v.len() {
        v.select_nth_unstable(k - 1);
        v[..k].sort_unstable();
    } else {
        v.sort_unstable();
    }
}

/// Digit width of the radix sort (8 bits measured faster than 11 on 1M keys here: fewer
/// scatter streams), and the passes covering the 32 key bits.
const RADIX_BITS: usize = 8;
const RADIX_PASSES: usize = 4;

/// LSD radix sort on the high 32 bits, RADIX_BITS per pass. Stable, so values that agree on
/// the high bits keep their order; the low bits are the positions the caller wrote in
/// ascending order, so the result is fully sorted. Passes whose digit is the same everywhere
/// are skipped.
fn radix_sort_high32(keys: &mut [u64], tmp: &mut [u64]) {
    let n = keys.len();
    let buckets = 1usize << RADIX_BITS;
    let mask = (buckets - 1) as u64;
    let mut counts = vec![vec![0usize; buckets]; RADIX_PASSES];
    for &v in keys.iter() {
        let hi = v >> 32;
        for (pass, c) in counts.iter_mut().enumerate() {
            c[((hi >> (RADIX_BITS * pass)) & mask) as usize] += 1;
        }
    }
    let mut in_keys = true;
    let mut offsets = vec![0usize; buckets];
    for (pass, c) in counts.iter().enumerate() {
        if c.contains(&n) {
            continue;
        }
        let mut sum = 0;
        for (o, &x) in offsets.iter_mut().zip(c.iter()) {
            *o = sum;
            sum += x;
        }
        let shift = 32 + RADIX_BITS * pass;
        let (src, dst): (&[u64], &mut [u64]) = if in_keys { (&*keys, &mut *tmp) } else { (&*tmp, &mut *keys) };
        for &v in src {
            let b = ((v >> shift) & mask) as usize;
            dst[offsets[b]] = v;
            offsets[b] += 1;
        }
        in_keys = !in_keys;
    }
    if !in_keys {
        keys.copy_from_slice(tmp);
    }
}

/// Stable merge sort driven only by `is_less`: insertion-sorted runs, then bottom-up merges
/// that take from the right run only when its head is strictly less.
fn merge_sort(v: &mut [i64], is_less: &mut impl FnMut(i64, i64) -> bool) {
    let n = v.len();
    for run in v.chunks_mut(INSERTION_RUN) {
        insertion_sort(run, is_less);
    }
    if n <= INSERTION_RUN {
        return;
    }
    let mut a = v.to_vec();
    let mut b = vec![0i64; n];
    let mut width = INSERTION_RUN;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            merge(&a[start..mid], &a[mid..end], &mut b[start..end], is_less);
            start = end;
        }
        std::mem::swap(&mut a, &mut b);
        width *= 2;
    }
    v.copy_from_slice(&a);
}

fn insertion_sort(v: &mut [i64], is_less: &mut impl FnMut(i64, i64) -> bool) {
    for i in 1..v.len() {
        let x = v[i];
        let mut j = i;
        while j > 0 && is_less(x, v[j - 1]) {
            v[j] = v[j - 1];
            j -= 1;
        }
        v[j] = x;
    }
}

fn merge(left: &[i64], right: &[i64], out: &mut [i64], is_less: &mut impl FnMut(i64, i64) -> bool) {
    let (mut i, mut j) = (0, 0);
    for slot in out.iter_mut() {
        let take_right = j < right.len() && (i >= left.len() || is_less(right[j], left[i]));
        if take_right {
            *slot = right[j];
            j += 1;
        } else {
            *slot = left[i];
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *seed >> 33
    }

    #[test]
    fn packed_keys_sort_stably_by_key() {
        for &n in &[0usize, 1, 5, 100, 5000] {
            let mut seed = n as u64 + 7;
            let raw: Vec<u64> = (0..n).map(|_| lcg(&mut seed) % 50).collect();
            let mut keys: Vec<u64> = raw.iter().enumerate().map(|(i, &k)| k << 32 | i as u64).collect();
            unsafe { hlojit_rt_sort_packed_keys(keys.as_mut_ptr(), std::ptr::null_mut(), n as i64, n as i64) };
            let mut want: Vec<(u64, usize)> = raw.iter().copied().zip(0..).collect();
            want.sort_by_key(|&(k, _)| k); // std's stable sort as the independent reference
            let got: Vec<(u64, usize)> = keys.iter().map(|&v| (v >> 32, (v & 0xffff_ffff) as usize)).collect();
            assert_eq!(got, want, "n = {n}");
        }
    }

    #[test]
    fn radix_sort_with_caller_scratch_orders_full_width_keys() {
        let mut seed = 5;
        let raw: Vec<u64> = (0..3000).map(|_| lcg(&mut seed) & 0xffff_ffff).collect();
        let mut keys: Vec<u64> = raw.iter().enumerate().map(|(i, &k)| k << 32 | i as u64).collect();
        let mut tmp = vec![0u64; keys.len()];
        unsafe { hlojit_rt_sort_packed_keys(keys.as_mut_ptr(), tmp.as_mut_ptr(), 3000, 3000) };
        let mut want: Vec<u64> = raw.iter().enumerate().map(|(i, &k)| k << 32 | i as u64).collect();
        want.sort();
        assert_eq!(keys, want);
    }

    #[test]
    fn packed_keys_partial_sort_gives_smallest_k_in_order() {
        let mut seed = 3;
        let raw: Vec<u64> = (0..4000).map(|_| lcg(&mut seed) % 1000).collect();
        let mut keys: Vec<u64> = raw.iter().enumerate().map(|(i, &k)| k << 32 | i as u64).collect();
        unsafe { hlojit_rt_sort_packed_keys(keys.as_mut_ptr(), std::ptr::null_mut(), 4000, 10) };
        let mut want: Vec<u64> = raw.iter().enumerate().map(|(i, &k)| k << 32 | i as u64).collect();
        want.sort();
        assert_eq!(&keys[..10], &want[..10]);
    }

    #[test]
    fn wide_keys_order_by_key_then_position() {
        let keys = [u64::MAX, 3, u64::MAX, 0, 3];
        let mut perm = [0i64; 4];
        unsafe { hlojit_rt_sort_wide_keys(keys.as_ptr(), perm.as_mut_ptr(), 5, 4) };
        assert_eq!(perm, [3, 1, 4, 0]);
    }

    unsafe extern "C" fn by_value_mod_10(ctx: *const u8, a: i64, b: i64) -> i32 {
        let v = unsafe { &*(ctx as *const Vec<i32>) };
        ((v[a as usize] % 10) < (v[b as usize] % 10)) as i32
    }

    unsafe extern "C" fn always_true(_: *const u8, _: i64, _: i64) -> i32 {
        1
    }

    #[test]
    fn comparator_sort_is_stable() {
        let mut seed = 11;
        let v: Vec<i32> = (0..300).map(|_| (lcg(&mut seed) % 1000) as i32).collect();
        let mut perm = vec![0i64; v.len()];
        unsafe {
            hlojit_rt_sort_by_comparator(
                perm.as_mut_ptr(),
                v.len() as i64,
                by_value_mod_10,
                &v as *const Vec<i32> as *const u8,
            )
        };
        let mut want: Vec<i64> = (0..v.len() as i64).collect();
        want.sort_by_key(|&i| v[i as usize] % 10);
        assert_eq!(perm, want);
    }

    #[test]
    fn inconsistent_comparator_still_gives_a_permutation() {
        let mut perm = vec![0i64; 100];
        unsafe { hlojit_rt_sort_by_comparator(perm.as_mut_ptr(), 100, always_true, std::ptr::null()) };
        let mut sorted = perm.clone();
        sorted.sort();
        assert_eq!(sorted, (0..100).collect::<Vec<i64>>());
    }
}
