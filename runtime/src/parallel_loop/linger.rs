//! Helpers that stay awake for a short while after a parallel loop and join the next one.
//!
//! A loop is published in [`OPEN`] while it runs. A helper that has run out of chunks waits
//! up to [`LINGER`] (spinning with `pause` for [`SPIN`] of it, then yielding its core between
//! looks), and when a new loop is published, runs its chunks too; every loop it joins starts
//! the wait again. Only when no loop comes for that long does it go back to rayon's pool
//! (which parks it). The calling thread asks rayon for helpers only beyond the idle lingering
//! ones, and for those too if they have not joined by the end of its first chunk: with two
//! threads, one helper stays with a module's run from its first parallel kernel to its last.
//!
//! Whether a lingering helper joins does not change what is computed: the loop's chunks are
//! claimed one by one whoever runs them, and a helper that finds none left touches nothing.

use super::Loop;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a helper waits for the next loop. Between two parallel kernels of mlp_train's
/// step run serial kernels of tens of microseconds; waking a parked helper (a futex and, in a
/// virtual machine, an interrupt to an idle virtual CPU) took longer than a GEMM's packing
/// phase. Long enough to bridge those gaps, short enough that a helper does not hold a core
/// long after a module has finished.
const LINGER: Duration = Duration::from_micros(200);

/// How long of [`LINGER`] a helper only spins; after that it yields its core between looks
/// at the slot. On a machine where other processes keep a core busy, the calling thread and
/// a spinning helper can share one core: pure spinning made mlp_train's step 5% slower there
/// (medians of 8 alternating runs, 33.7 against 32.0 ms), the serial kernels between the
/// GEMMs running at half speed.
const SPIN: Duration = Duration::from_micros(20);

/// Marks the yielding part of the wait in the spin count.
const SPINS_BEFORE_YIELD: u32 = u32::MAX / 2;

/// The loop being run, for lingering helpers to join.
static OPEN: Mutex<Option<Arc<Loop>>> = Mutex::new(None);
/// Bumped each time a loop is published.
static EPOCH: AtomicU64 = AtomicU64::new(0);
/// Helpers lingering now, idle or running a loop's chunks (at most a loop's helper count).
static LINGERERS: AtomicI64 = AtomicI64::new(0);
/// Lingering helpers not running chunks: those a newly published loop can count on. A busy
/// one is not counted: a chunk that runs a loop of its own (a kernel calling a parallel
/// kernel) must ask rayon for its helpers.
static IDLE: AtomicI64 = AtomicI64::new(0);

fn open_loop() -> Option<Arc<Loop>> {
    OPEN.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Publishes `shared` for lingering helpers; returns how many of the `helpers` it wants are
/// lingering (and will join it).
pub(super) fn publish(shared: &Arc<Loop>, helpers: i64) -> i64 {
    *OPEN.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(shared));
    // SeqCst with `linger`'s leaving: either this count still includes a helper that is
    // leaving, and that helper then sees the new epoch and joins, or it does not, and the
    // caller asks rayon for one more helper.
    EPOCH.fetch_add(1, Ordering::SeqCst);
    IDLE.load(Ordering::SeqCst).clamp(0, helpers)
}

/// Takes `shared` out of the slot once its chunks are done (unless another loop replaced it).
pub(super) fn withdraw(shared: &Arc<Loop>) {
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    if open.as_ref().is_some_and(|l| Arc::ptr_eq(l, shared)) {
        *open = None;
    }
}

/// Lingers after a loop (see the module comment), unless `limit` helpers already do.
pub(super) fn linger(limit: i64) {
    if LINGERERS.fetch_add(1, Ordering::SeqCst) >= limit {
        LINGERERS.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    IDLE.fetch_add(1, Ordering::SeqCst);
    // None: look at the slot once first, for a loop published while this helper was
    // finishing its last one (its caller did not count this helper).
    let mut seen = None;
    let mut since = Instant::now();
    let mut spins = 0u32;
    loop {
        let epoch = EPOCH.load(Ordering::SeqCst);
        if seen != Some(epoch) {
            seen = Some(epoch);
            if let Some(next) = open_loop() {
                IDLE.fetch_sub(1, Ordering::SeqCst);
                next.help();
                // Counted idle again before the next look at the epoch (see `publish`).
                IDLE.fetch_add(1, Ordering::SeqCst);
                since = Instant::now();
                spins = 0;
            }
            continue;
        }
        spins = spins.wrapping_add(1);
        // Reading the clock costs more than a spin: every 64 spins (about a microsecond)
        // while spinning, at every look once yielding (a system call costs more still).
        let yielding = spins > SPINS_BEFORE_YIELD;
        #[allow(clippy::manual_is_multiple_of)] // is_multiple_of needs Rust 1.87; the MSRV is 1.80
        if yielding || spins % 64 == 0 {
            let waited = since.elapsed();
            if waited >= LINGER {
                IDLE.fetch_sub(1, Ordering::SeqCst);
                LINGERERS.fetch_sub(1, Ordering::SeqCst);
                if EPOCH.load(Ordering::SeqCst) != epoch {
                    if let Some(next) = open_loop() {
                        next.help();
                    }
                }
                return;
            }
            if waited >= SPIN && !yielding {
                spins = SPINS_BEFORE_YIELD + 1;
                continue;
            }
        }
        if yielding {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}
