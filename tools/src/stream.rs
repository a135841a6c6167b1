//! The STREAM benchmark's four kernels (copy, scale, add, triad) on f32 arrays far beyond the
//! last-level cache, on one thread and on all of them: the memory bandwidth a bandwidth-bound
//! kernel (a reduction, softmax, layernorm, an optimizer update) can reach on this machine.
//!
//! Bytes are counted as STREAM counts them: each array element read or written once (copy and
//! scale 8 bytes per element, add and triad 12). A plain store also reads its cache line first
//! (write-allocate), so the memory moves more than that; a non-temporal store does not, which
//! is why `memcpy` (glibc streams large copies past the cache) is listed apart from `copy`.
//! (`copy` stores `a + 0.0`, the same value for every input but -0.0, so LLVM cannot turn it
//! into a call to `memcpy`: it measures plain vector stores.) `read` sums one array: what a
//! reduction needs. The best of several repetitions counts: on a machine other programs share, some
//! repetition gets the memory to itself.

use rayon::prelude::*;
use std::time::Instant;

/// Elements of each array: 3 × 64 MiB, twice any last-level cache this runs on.
pub const ELEMENTS: usize = 1 << 24;
/// Repetitions of each kernel; the fastest counts.
const REPEATS: usize = 8;
/// Elements each task handles: large enough that the pool's dispatch is noise.
const CHUNK: usize = 1 << 18;

/// One kernel's best bandwidth on a given number of threads.
#[derive(Clone, Debug)]
pub struct StreamResult {
    pub kernel: &'static str,
    pub threads: usize,
    pub bytes_per_second: f64,
}

/// Runs every kernel on 1 thread and on `max_threads`.
pub fn measure(max_threads: usize) -> Result<Vec<StreamResult>, String> {
    let mut a = vec![1.0f32; ELEMENTS];
    let mut b = vec![2.0f32; ELEMENTS];
    let mut c = vec![0.5f32; ELEMENTS];
    let mut results = Vec::new();
    let mut counts = vec![1];
    if max_threads > 1 {
        counts.push(max_threads);
    }
    for threads in counts {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| e.to_string())?;
        pool.install(|| {
            let s = 3.0f32;
            results.push(best("memcpy", threads, 8, || c.par_chunks_mut(CHUNK).zip(a.par_chunks(CHUNK)).for_each(|(c, a)| c.copy_from_slice(a))));
            results.push(best("copy", threads, 8, || {
                c.par_chunks_mut(CHUNK).zip(a.par_chunks(CHUNK)).for_each(|(c, a)| c.iter_mut().zip(a).for_each(|(c, a)| *c = a + 0.0))
            }));
            results.push(best("scale", threads, 8, || {
                b.par_chunks_mut(CHUNK).zip(c.par_chunks(CHUNK)).for_each(|(b, c)| b.iter_mut().zip(c).for_each(|(b, c)| *b = s * c))
            }));
            results.push(best("add", threads, 12, || {
                c.par_chunks_mut(CHUNK).zip(a.par_chunks(CHUNK)).zip(b.par_chunks(CHUNK)).for_each(|((c, a), b)| {
                    c.iter_mut().zip(a).zip(b).for_each(|((c, a), b)| *c = a + b)
                })
            }));
            results.push(best("triad", threads, 12, || {
                a.par_chunks_mut(CHUNK).zip(b.par_chunks(CHUNK)).zip(c.par_chunks(CHUNK)).for_each(|((a, b), c)| {
                    a.iter_mut().zip(b).zip(c).for_each(|((a, b), c)| *a = b + s * c)
                })
            }));
            results.push(best("read (sum)", threads, 4, || {
                let sum: f32 = a.par_chunks(CHUNK).map(|a| sum_lanes(a)).sum();
                std::hint::black_box(sum);
            }));
        });
    }
    std::hint::black_box((&a, &b, &c));
    Ok(results)
}

/// The fastest of [`REPEATS`] runs of `kernel`, which moves `bytes_per_element` per element.
fn best(kernel: &'static str, threads: usize, bytes_per_element: usize, mut run: impl FnMut()) -> StreamResult {
    let mut fastest = f64::INFINITY;
    for _ in 0..REPEATS {
        let t = Instant::now();
        run();
        fastest = fastest.min(t.elapsed().as_secs_f64());
    }
    StreamResult { kernel, threads, bytes_per_second: (ELEMENTS * bytes_per_element) as f64 / fastest }
}

/// A sum in 16 independent lanes, so the loop is bound by loads, not by the add latency.
fn sum_lanes(a: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 16];
    let mut chunks = a.chunks_exact(16);
    for chunk in &mut chunks {
        for (l, x) in lanes.iter_mut().zip(chunk) {
            *l += x;
        }
    }
    lanes.iter().sum::<f32>() + chunks.remainder().iter().sum::<f32>()
}
