//! The parallel loop behind [`crate::symbols::hlojit_rt_parallel_for`]: a kernel's iterations
//! split into chunks that the calling thread and pool threads take in turn.
//!
//! The calling thread never waits for a pool thread to *start*. Waking a parked thread costs
//! microseconds on an idle machine and, on a loaded one (other processes on every core), a
//! scheduler time slice: milliseconds. Waiting for every helper to join (as a scope does) put
//! that delay on every parallel kernel; a 1600-step scan's 400 KB output initialization took
//! 6.6 ms instead of tens of microseconds. So the caller works through the chunks and then waits
//! only for chunks a helper has claimed and is running. A helper that starts after the loop has
//! finished finds no chunk and touches nothing of it: the shared state lives in an `Arc` it
//! holds, and the caller's buffer table is only read through a claimed chunk.
//!
//! A helper that has run out of chunks lingers (`linger.rs`): it spins for a short while on
//! the slot where the next loop is published and joins that loop directly, instead of going
//! back to rayon's pool, which parks it after a few microseconds. Waking a parked thread took
//! longer than many kernels run: in mlp_train's step on two threads the calling thread ran
//! nearly all of the GEMMs' packing phases alone (5.1% of the samples in B packing on the
//! calling thread, 0.5% on the helpers; A packing 4.6% against 0.1%) because the helper
//! arrived after the phase was over.

use crate::custom_call::last_error;
use crate::float_env::FlushDenormals;
use crate::symbols::KernelTask;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

mod linger;

/// Spins of the waiting caller before it starts yielding its core (a claimed chunk usually
/// ends within microseconds; a preempted helper needs the core more than the caller does).
const SPINS_BEFORE_YIELD: u32 = 1 << 10;

pub(crate) struct Loop {
    task: KernelTask,
    /// The caller's buffer table, valid until every chunk is done.
    table: usize,
    extent: i64,
    chunks: i64,
    /// The next chunk to claim.
    next: AtomicI64,
    /// Chunks finished by helpers.
    done_by_helpers: AtomicI64,
    /// Helpers that found chunks left when they started.
    joined: AtomicI64,
    /// A helper's failure (a kernel's allocation), handed to the calling thread.
    failure: Mutex<Option<String>>,
}

impl Loop {
    /// Runs chunks as a helper: with the flush-to-zero environment generated code expects, a
    /// chunk's failure handed to the calling thread, and the chunks counted as done.
    fn help(&self) {
        if self.next.load(Ordering::Relaxed) >= self.chunks {
            return; // started too late: nothing left
        }
        self.joined.fetch_add(1, Ordering::Relaxed);
        let _env = FlushDenormals::new();
        let ran = self.work();
        if ran > 0 && last_error::take_failure() {
            let message = last_error::take_last_error().unwrap_or_default();
            *self.failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(message);
        }
        // Release: the chunks' stores and the failure are seen by the caller's acquire.
        self.done_by_helpers.fetch_add(ran, Ordering::Release);
    }

    /// Runs chunks until none is left; returns how many this thread ran.
    fn work(&self) -> i64 {
        let mut ran = 0;
        while self.run_one() {
            ran += 1;
        }
        ran
    }

    /// Claims and runs one chunk; false if none was left.
    fn run_one(&self) -> bool {
        let c = self.next.fetch_add(1, Ordering::Relaxed);
        if c >= self.chunks {
            return false;
        }
        // SAFETY: `hlojit_rt_parallel_for`'s caller guarantees that disjoint ranges may run
        // concurrently with this table, and the table outlives every claimed chunk.
        unsafe { (self.task)(self.table as *const *mut u8, self.extent * c / self.chunks, self.extent * (c + 1) / self.chunks) };
        true
    }
}

/// Asks rayon for `n` helpers for `shared` (of a loop that wants `helpers`).
fn spawn_helpers(shared: &Arc<Loop>, n: i64, helpers: i64) {
    for _ in 0..n {
        let job = Arc::clone(shared);
        rayon::spawn(move || {
            job.help();
            linger::linger(helpers);
        });
    }
}

/// Runs `task` over `[0, extent)` in `chunks` (> 1) chunks on the calling thread and up to
/// `helpers` pool threads; returns when every chunk is done.
///
/// # Safety
/// `task` must be safe to run concurrently on disjoint ranges with `table`.
pub unsafe fn run(task: KernelTask, table: *const *mut u8, extent: i64, chunks: i64, helpers: i64) {
    let shared = Arc::new(Loop {
        task,
        table: table as usize,
        extent,
        chunks,
        next: AtomicI64::new(0),
        done_by_helpers: AtomicI64::new(0),
        joined: AtomicI64::new(0),
        failure: Mutex::new(None),
    });
    // Helpers still lingering after an earlier loop join this one; rayon wakes the rest.
    let lingering = linger::publish(&shared, helpers);
    spawn_helpers(&shared, helpers - lingering, helpers);
    let mut mine = i64::from(shared.run_one());
    // The lingering helpers counted on have had the caller's first chunk to join. One that
    // yielded its core to another process may not run again for a time slice (measured with
    // other sessions building: gelu 2-4% slower than with rayon's helpers alone): ask rayon
    // for those that have not joined.
    let missing = lingering - shared.joined.load(Ordering::Relaxed);
    if missing > 0 && shared.next.load(Ordering::Relaxed) < chunks {
        spawn_helpers(&shared, missing, helpers);
    }
    mine += shared.work();
    let mut spins = 0u32;
    while mine + shared.done_by_helpers.load(Ordering::Acquire) < chunks {
        if spins < SPINS_BEFORE_YIELD {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    linger::withdraw(&shared);
    let failure = shared.failure.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(message) = failure {
        last_error::set_failure(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    static SUM: AtomicU64 = AtomicU64::new(0);

    unsafe extern "C" fn add_range(table: *const *mut u8, begin: i64, end: i64) {
        // The table's first entry is the base the test adds to every index.
        let base = unsafe { *table } as u64;
        for i in begin..end {
            SUM.fetch_add(base + i as u64, Ordering::Relaxed);
        }
    }

    #[test]
    fn every_iteration_runs_once_and_late_helpers_find_nothing() {
        for round in 0..200u64 {
            SUM.store(0, Ordering::Relaxed);
            let table = [round as usize as *mut u8];
            let extent = 1000 + round as i64;
            // More helpers than the pool has threads: some start after the loop returned.
            unsafe { run(add_range, table.as_ptr(), extent, 16, 8) };
            let n = extent as u64;
            assert_eq!(SUM.load(Ordering::Relaxed), round * n + n * (n - 1) / 2, "round {round}");
        }
    }

    unsafe extern "C" fn add_into(table: *const *mut u8, begin: i64, end: i64) {
        // Entry 0: the caller's own sum; entry 1: the base added to every index.
        let sum = unsafe { &*(*table as *const AtomicU64) };
        let base = unsafe { *table.add(1) } as u64;
        for i in begin..end {
            sum.fetch_add(base + i as u64, Ordering::Relaxed);
        }
    }

    #[test]
    fn loops_of_several_callers_each_run_once_with_lingering_helpers() {
        // Four callers publish loops at once: a lingering helper joins whichever loop is in
        // the slot, and a caller whose loop was replaced there runs it with its own helpers
        // or alone. Every caller's chunks must still run once each.
        let callers: Vec<_> = (0..4u64)
            .map(|caller| {
                std::thread::spawn(move || {
                    for round in 0..100u64 {
                        let sum = AtomicU64::new(0);
                        let base = caller * 1_000_000 + round;
                        let table = [&sum as *const AtomicU64 as *mut u8, base as usize as *mut u8];
                        let extent = 500 + (round * 7 % 300) as i64;
                        unsafe { run(add_into, table.as_ptr(), extent, 8, 2) };
                        let n = extent as u64;
                        assert_eq!(sum.load(Ordering::Relaxed), base * n + n * (n - 1) / 2, "caller {caller} round {round}");
                    }
                })
            })
            .collect();
        for c in callers {
            c.join().unwrap();
        }
    }

    unsafe extern "C" fn inner_loops(table: *const *mut u8, begin: i64, end: i64) {
        // Entry 0: the sum every inner loop adds to; each outer index runs one inner loop.
        for i in begin..end {
            let inner = [unsafe { *table }, (i * 1000) as usize as *mut u8];
            unsafe { run(add_into, inner.as_ptr(), 100, 4, 1) };
        }
    }

    #[test]
    fn loops_run_from_inside_a_chunk_run_every_chunk_once() {
        // A chunk that runs a loop of its own, while a lingering helper may be busy with the
        // outer loop's chunks.
        for _ in 0..50 {
            let sum = AtomicU64::new(0);
            let table = [&sum as *const AtomicU64 as *mut u8];
            unsafe { run(inner_loops, table.as_ptr(), 8, 8, 1) };
            let want: u64 = (0..8u64).map(|i| i * 1000 * 100 + 100 * 99 / 2).sum();
            assert_eq!(sum.load(Ordering::Relaxed), want);
        }
    }
}
