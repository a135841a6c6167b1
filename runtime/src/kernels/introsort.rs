//! The unstable sort XLA:CPU runs for `sort` with `is_stable=false`: `std::sort` of the C++
//! standard library jaxlib is built with (libstdc++'s introsort: median-of-three quicksort down
//! to runs of 16, heapsort past a depth of 2·log2(n), then one insertion sort). Equal elements
//! end up in the order this algorithm happens to leave them, so matching XLA's results where
//! keys tie (`approx_max_k`, `lax.sort(..., is_stable=False)` on integers) means running the same
//! algorithm with the same comparisons. It sorts positions, not elements: the comparator only
//! sees values through positions, so the moves are the ones `std::sort` makes on the elements.
//!
//! libstdc++ relies on the comparator being a strict weak order for its unguarded loops;
//! hlojit runs any comparator a module gives, so every scan here is also bounded by the range.
//! With a consistent comparator the bounds never bind and the result is `std::sort`'s.

/// Runs at most this long are left to the final insertion sort (libstdc++'s `_S_threshold`).
const THRESHOLD: usize = 16;

/// Sorts `v` as libstdc++'s `std::sort(v.begin(), v.end(), less)` does.
pub fn std_sort(v: &mut [i64], less: &mut impl FnMut(i64, i64) -> bool) {
    let n = v.len();
    if n < 2 {
        return;
    }
    let depth = 2 * (usize::BITS - 1 - n.leading_zeros()) as usize;
    introsort_loop(v, 0, n, depth, less);
    if n > THRESHOLD {
        insertion_sort(v, 0, THRESHOLD, less);
        for i in THRESHOLD..n {
            linear_insert(v, 0, i, less);
        }
    } else {
        insertion_sort(v, 0, n, less);
    }
}

fn introsort_loop(v: &mut [i64], first: usize, mut last: usize, mut depth: usize, less: &mut impl FnMut(i64, i64) -> bool) {
    while last - first > THRESHOLD {
        if depth == 0 {
            heap_sort(&mut v[first..last], less);
            return;
        }
        depth -= 1;
        let mid = first + (last - first) / 2;
        move_median_to_first(v, first, first + 1, mid, last - 1, less);
        let cut = partition(v, first + 1, last, first, less);
        introsort_loop(v, cut, last, depth, less);
        last = cut;
    }
}

fn move_median_to_first(v: &mut [i64], result: usize, a: usize, b: usize, c: usize, less: &mut impl FnMut(i64, i64) -> bool) {
    let pick = if less(v[a], v[b]) {
        if less(v[b], v[c]) {
            b
        } else if less(v[a], v[c]) {
            c
        } else {
            a
        }
    } else if less(v[a], v[c]) {
        a
    } else if less(v[b], v[c]) {
        c
    } else {
        b
    };
    v.swap(result, pick);
}

/// libstdc++'s `__unguarded_partition` of `[first, last)` around `v[pivot]`.
fn partition(v: &mut [i64], mut first: usize, mut last: usize, pivot: usize, less: &mut impl FnMut(i64, i64) -> bool) -> usize {
    let end = last;
    loop {
        while first < end && less(v[first], v[pivot]) {
            first += 1;
        }
        last -= 1;
        while last > pivot && less(v[pivot], v[last]) {
            last -= 1;
        }
        if first >= last {
            return first.min(end);
        }
        v.swap(first, last);
        first += 1;
    }
}

/// libstdc++'s `__insertion_sort` of `[first, last)`.
fn insertion_sort(v: &mut [i64], first: usize, last: usize, less: &mut impl FnMut(i64, i64) -> bool) {
    for i in first + 1..last {
        if less(v[i], v[first]) {
            v[first..=i].rotate_right(1);
        } else {
            linear_insert(v, first, i, less);
        }
    }
}

/// libstdc++'s `__unguarded_linear_insert` of `v[i]`, stopping at `lo` whatever `less` says.
fn linear_insert(v: &mut [i64], lo: usize, mut i: usize, less: &mut impl FnMut(i64, i64) -> bool) {
    let x = v[i];
    while i > lo && less(x, v[i - 1]) {
        v[i] = v[i - 1];
        i -= 1;
    }
    v[i] = x;
}

/// libstdc++'s `__partial_sort(first, last, last)`: `__make_heap` then `__sort_heap`.
fn heap_sort(v: &mut [i64], less: &mut impl FnMut(i64, i64) -> bool) {
    let len = v.len();
    if len < 2 {
        return;
    }
    let mut parent = (len - 2) / 2;
    loop {
        let x = v[parent];
        adjust_heap(v, parent, len, x, less);
        if parent == 0 {
            break;
        }
        parent -= 1;
    }
    let mut last = len;
    while last > 1 {
        last -= 1;
        let x = v[last];
        v[last] = v[0];
        adjust_heap(v, 0, last, x, less);
    }
}

/// libstdc++'s `__adjust_heap`: sift the hole at `hole` down to a leaf, then push `x` up.
fn adjust_heap(v: &mut [i64], mut hole: usize, len: usize, x: i64, less: &mut impl FnMut(i64, i64) -> bool) {
    let top = hole;
    let mut child = hole;
    while child < (len - 1) / 2 {
        child = 2 * (child + 1);
        if less(v[child], v[child - 1]) {
            child -= 1;
        }
        v[hole] = v[child];
        hole = child;
    }
    if len % 2 == 0 && child == (len - 2) / 2 {
        child = 2 * (child + 1);
        v[hole] = v[child - 1];
        hole = child - 1;
    }
    let mut parent = hole.wrapping_sub(1) / 2;
    while hole > top && less(v[parent], x) {
        v[hole] = v[parent];
        hole = parent;
        parent = hole.wrapping_sub(1) / 2;
    }
    v[hole] = x;
}

#[cfg(test)]
mod tests {
    use super::*;

    // Which order ties get is pinned against XLA:CPU by tests/filetests/jax_suite/unstable_sort_ties.hlo.
    #[test]
    fn sorts_and_is_a_permutation_for_any_comparator() {
        let keys: Vec<i64> = (0..200).map(|i| (i * 7919 % 13) as i64).collect();
        let mut v: Vec<i64> = (0..200).collect();
        std_sort(&mut v, &mut |a, b| keys[a as usize] < keys[b as usize]);
        assert!(v.windows(2).all(|w| keys[w[0] as usize] <= keys[w[1] as usize]));
        for cmp in [|_: i64, _: i64| true, |a: i64, b: i64| (a ^ b) & 1 == 1] {
            let mut v: Vec<i64> = (0..300).collect();
            std_sort(&mut v, &mut { cmp });
            let mut s = v.clone();
            s.sort();
            assert_eq!(s, (0..300).collect::<Vec<_>>());
        }
    }

    #[test]
    fn heap_sort_sorts() {
        let keys: Vec<i64> = (0..101).map(|i| (i * 37 % 101) as i64).collect();
        let mut v: Vec<i64> = (0..101).collect();
        heap_sort(&mut v, &mut |a, b| keys[a as usize] < keys[b as usize]);
        assert!(v.windows(2).all(|w| keys[w[0] as usize] <= keys[w[1] as usize]));
    }
}
