//! The STREAM benchmark's four kernels (copy, scale, add, triad) on f32 arrays far beyond the
//! last-level cache, on one thread and on all of them: the memory bandwidth a bandwidth-bound
//! kernel (a reduction, softmax, layernorm, an optimizer update) can reach on this machine.
//!
//! Bytes are counted as STREAM counts them: each array element read or written once (copy and
//! scale 8 bytes per element, add and triad 12). A plain store also reads its cache line first
//! (write-allocate), so the memory moves more than that ([`Kernel::bus_bytes`]); `memcpy` is
//! glibc's copy, listed apart from `copy`, which is plain vector stores.
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

/// The kernels, in the order they are reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    Memcpy,
    Copy,
    CopyNonTemporal,
    Scale,
    Add,
    Triad,
    Read,
}

impl Kernel {
    pub const ALL: [Kernel; 7] = [Kernel::Memcpy, Kernel::Copy, Kernel::CopyNonTemporal, Kernel::Scale, Kernel::Add, Kernel::Triad, Kernel::Read];

    pub fn name(self) -> &'static str {
        match self {
            Kernel::Memcpy => "memcpy",
            Kernel::Copy => "copy",
            Kernel::CopyNonTemporal => "copy (nt)",
            Kernel::Scale => "scale",
            Kernel::Add => "add",
            Kernel::Triad => "triad",
            Kernel::Read => "read (sum)",
        }
    }

    /// Bytes per element as STREAM counts them: each array read or written once.
    pub fn counted_bytes(self) -> usize {
        match self {
            Kernel::Memcpy | Kernel::Copy | Kernel::CopyNonTemporal | Kernel::Scale => 8,
            Kernel::Add | Kernel::Triad => 12,
            Kernel::Read => 4,
        }
    }

    /// Bytes per element the memory really moves: a store reads its line first
    /// (write-allocate), 4 bytes more per element written, unless it is non-temporal.
    /// (`memcpy` copies 1 MiB chunks, below glibc's threshold for non-temporal stores, so it
    /// write-allocates too.)
    pub fn bus_bytes(self) -> usize {
        match self {
            Kernel::Read | Kernel::CopyNonTemporal => self.counted_bytes(),
            _ => self.counted_bytes() + 4,
        }
    }
}

/// The three arrays the kernels work on, allocated (and touched) once.
pub struct Arrays {
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f32>,
}

impl Default for Arrays {
    fn default() -> Self {
        Arrays { a: vec![1.0; ELEMENTS], b: vec![2.0; ELEMENTS], c: vec![0.5; ELEMENTS] }
    }
}

impl Arrays {
    /// The fastest of `repeats` runs of `kernel` on the current rayon pool's threads, in counted
    /// bytes ([`Kernel::counted_bytes`]) per second.
    pub fn best(&mut self, kernel: Kernel, repeats: usize) -> f64 {
        let mut fastest = f64::INFINITY;
        for _ in 0..repeats.max(1) {
            let t = Instant::now();
            self.run(kernel);
            fastest = fastest.min(t.elapsed().as_secs_f64());
        }
        (ELEMENTS * kernel.counted_bytes()) as f64 / fastest
    }

    fn run(&mut self, kernel: Kernel) {
        let (a, b, c) = (&mut self.a, &mut self.b, &mut self.c);
        let s = 3.0f32;
        match kernel {
            Kernel::Memcpy => c.par_chunks_mut(CHUNK).zip(a.par_chunks(CHUNK)).for_each(|(c, a)| c.copy_from_slice(a)),
            Kernel::Copy => {
                c.par_chunks_mut(CHUNK).zip(a.par_chunks(CHUNK)).for_each(|(c, a)| c.iter_mut().zip(a).for_each(|(c, a)| *c = a + 0.0))
            }
            Kernel::CopyNonTemporal => c.par_chunks_mut(CHUNK).zip(a.par_chunks(CHUNK)).for_each(|(c, a)| copy_non_temporal(c, a)),
            Kernel::Scale => {
                b.par_chunks_mut(CHUNK).zip(c.par_chunks(CHUNK)).for_each(|(b, c)| b.iter_mut().zip(c).for_each(|(b, c)| *b = s * c))
            }
            Kernel::Add => c.par_chunks_mut(CHUNK).zip(a.par_chunks(CHUNK)).zip(b.par_chunks(CHUNK)).for_each(|((c, a), b)| {
                c.iter_mut().zip(a).zip(b).for_each(|((c, a), b)| *c = a + b)
            }),
            Kernel::Triad => a.par_chunks_mut(CHUNK).zip(b.par_chunks(CHUNK)).zip(c.par_chunks(CHUNK)).for_each(|((a, b), c)| {
                a.iter_mut().zip(b).zip(c).for_each(|((a, b), c)| *a = b + s * c)
            }),
            Kernel::Read => {
                let sum: f32 = a.par_chunks(CHUNK).map(sum_lanes).sum();
                std::hint::black_box(sum);
            }
        }
        std::hint::black_box((&self.a, &self.b, &self.c));
    }
}

/// Runs every kernel on 1 thread and on `max_threads`.
pub fn measure(max_threads: usize) -> Result<Vec<StreamResult>, String> {
    let mut arrays = Arrays::default();
    let mut results = Vec::new();
    let mut counts = vec![1];
    if max_threads > 1 {
        counts.push(max_threads);
    }
    for threads in counts {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| e.to_string())?;
        pool.install(|| {
            for kernel in Kernel::ALL {
                results.push(StreamResult { kernel: kernel.name(), threads, bytes_per_second: arrays.best(kernel, REPEATS) });
            }
        });
    }
    Ok(results)
}

/// `c = a` with non-temporal stores where the CPU has them (AVX on x86-64: the stores hlojit's
/// streamed loop kernels use), plain stores elsewhere.
fn copy_non_temporal(c: &mut [f32], a: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx") {
        // SAFETY: the CPU has AVX (checked just above).
        unsafe { copy_non_temporal_avx(c, a) };
        return;
    }
    c.copy_from_slice(a);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn copy_non_temporal_avx(c: &mut [f32], a: &[f32]) {
    use std::arch::x86_64::*;
    let n = c.len().min(a.len());
    // Plain stores up to the first 32-byte boundary of c, whole vectors, then the rest.
    let head = (c.as_ptr().align_offset(32)).min(n);
    c[..head].copy_from_slice(&a[..head]);
    let mut i = head;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n elements of both slices; c + i is 32-byte aligned.
        unsafe { _mm256_stream_ps(c.as_mut_ptr().add(i), _mm256_loadu_ps(a.as_ptr().add(i))) };
        i += 8;
    }
    c[i..n].copy_from_slice(&a[i..n]);
    // Non-temporal stores are weakly ordered: fence them before the task reports done.
    _mm_sfence();
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
