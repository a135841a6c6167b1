//! Per-kernel timers for profiling builds (`CompileOptions::profile`, `hlojit profile`): the
//! sequencing code of such a build reads the clock before each kernel and records the
//! elapsed time after it, by the kernel's number in the compiled module. Ordinary builds call
//! none of this.
//!
//! The totals are process-wide (one table, indexed by kernel number), which is what a
//! profiler running one executable wants; [`take`] reads and clears them.

use std::sync::Mutex;
use std::time::Instant;

/// Time and calls of one kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelTime {
    /// Total nanoseconds over all calls.
    pub nanos: u64,
    /// How many times it ran (loop bodies run once per iteration).
    pub calls: u64,
}

static TOTALS: Mutex<Vec<KernelTime>> = Mutex::new(Vec::new());

/// Kernels beyond this number are not recorded (a kernel number comes from generated code;
/// this keeps a bad one from growing the table without bound).
const MAX_KERNELS: usize = 1 << 20;

fn epoch() -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds on a monotonic clock, for [`hlojit_rt_profile_record`].
#[no_mangle]
pub extern "C" fn hlojit_rt_profile_now() -> i64 {
    i64::try_from(epoch().elapsed().as_nanos()).unwrap_or(i64::MAX)
}

/// Adds the time since `start` (from [`hlojit_rt_profile_now`]) to kernel `kernel`.
#[no_mangle]
pub extern "C" fn hlojit_rt_profile_record(kernel: i64, start: i64) {
    let elapsed = hlojit_rt_profile_now().saturating_sub(start).max(0) as u64;
    let Ok(k) = usize::try_from(kernel) else { return };
    if k >= MAX_KERNELS {
        return;
    }
    let mut totals = TOTALS.lock().unwrap_or_else(|p| p.into_inner());
    if totals.len() <= k {
        totals.resize(k + 1, KernelTime::default());
    }
    totals[k].nanos = totals[k].nanos.saturating_add(elapsed);
    totals[k].calls += 1;
}

/// The totals recorded since the last call, by kernel number; clears them.
pub fn take() -> Vec<KernelTime> {
    std::mem::take(&mut *TOTALS.lock().unwrap_or_else(|p| p.into_inner()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_add_up_by_kernel_and_take_clears() {
        let _ = take();
        let start = hlojit_rt_profile_now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        hlojit_rt_profile_record(2, start);
        hlojit_rt_profile_record(2, hlojit_rt_profile_now());
        hlojit_rt_profile_record(-1, start);
        let t = take();
        assert_eq!(t.len(), 3);
        assert_eq!(t[2].calls, 2);
        assert!(t[2].nanos >= 2_000_000, "{:?}", t[2]);
        assert_eq!(t[0], KernelTime::default());
        assert!(take().is_empty());
    }
}
