//! CPU time of this process, all threads: what a GEMM's GFLOP per CPU-second is measured in,
//! since wall time on a loaded machine measures the load.

pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |x: libc::timeval| x.tv_sec as f64 + x.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}
