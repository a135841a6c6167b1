//! numpy's `default_rng(seed)` stream, bit for bit: `SeedSequence` seeding, the PCG64 bit
//! generator (XSL-RR 128/64, with numpy's buffering of 32-bit draws) and the two `Generator`
//! methods the perf workloads' input recipe uses, `uniform` and `integers`. With it
//! `hlojit bench` feeds a workload exactly the inputs `xla_reference.py` gives XLA:CPU, so its
//! outputs can be checked against XLA's.
//!
//! The algorithms are numpy's (`numpy/random/bit_generator.pyx` for `SeedSequence`,
//! `src/pcg64/pcg64.h` and `src/distributions/distributions.c` for the rest); no crate
//! reproduces numpy's seeding and draw order, which is the whole point here.

/// `SeedSequence`'s hash constants (Melissa O'Neill's seed_seq design, as numpy uses it).
const INIT_A: u32 = 0x43b0_d7e5;
const MULT_A: u32 = 0x931e_8875;
const INIT_B: u32 = 0x8b51_f9dd;
const MULT_B: u32 = 0x58f3_8ded;
const MIX_MULT_L: u32 = 0xca01_f9dd;
const MIX_MULT_R: u32 = 0x4973_f715;
const XSHIFT: u32 = 16;
const POOL_SIZE: usize = 4;

/// numpy's `SeedSequence(entropy)` for a non-negative integer entropy and no spawn key.
struct SeedSequence {
    pool: [u32; POOL_SIZE],
}

impl SeedSequence {
    fn new(entropy: u64) -> SeedSequence {
        // The integer as little-endian 32-bit words (at least one word, so 0 is [0]).
        let mut words = vec![entropy as u32];
        if entropy >> 32 != 0 {
            words.push((entropy >> 32) as u32);
        }
        let mut hash_const = INIT_A;
        let mut hashmix = |value: u32| {
            let mut v = value ^ hash_const;
            hash_const = hash_const.wrapping_mul(MULT_A);
            v = v.wrapping_mul(hash_const);
            v ^ (v >> XSHIFT)
        };
        let mix = |x: u32, y: u32| {
            let r = MIX_MULT_L.wrapping_mul(x).wrapping_sub(MIX_MULT_R.wrapping_mul(y));
            r ^ (r >> XSHIFT)
        };
        let mut pool = [0u32; POOL_SIZE];
        for (i, slot) in pool.iter_mut().enumerate() {
            *slot = hashmix(words.get(i).copied().unwrap_or(0));
        }
        for src in 0..POOL_SIZE {
            for dst in 0..POOL_SIZE {
                if src != dst {
                    pool[dst] = mix(pool[dst], hashmix(pool[src]));
                }
            }
        }
        for &word in words.iter().skip(POOL_SIZE) {
            for slot in pool.iter_mut() {
                *slot = mix(*slot, hashmix(word));
            }
        }
        SeedSequence { pool }
    }

    /// `generate_state(n, np.uint64)`.
    fn generate_u64(&self, n: usize) -> Vec<u64> {
        let mut hash_const = INIT_B;
        let words: Vec<u32> = (0..2 * n)
            .map(|i| {
                let mut v = self.pool[i % POOL_SIZE] ^ hash_const;
                hash_const = hash_const.wrapping_mul(MULT_B);
                v = v.wrapping_mul(hash_const);
                v ^ (v >> XSHIFT)
            })
            .collect();
        words.chunks(2).map(|w| u64::from(w[0]) | (u64::from(w[1]) << 32)).collect()
    }
}

/// PCG64 (numpy's, not PCG64DXSM): a 128-bit LCG with the XSL-RR output function.
struct Pcg64 {
    state: u128,
    increment: u128,
    /// The upper half of the last 64-bit draw, which numpy's `next_uint32` returns next.
    buffered_u32: Option<u32>,
}

const PCG_MULTIPLIER: u128 = (2_549_297_995_355_413_924 << 64) + 4_865_540_595_714_422_341;

impl Pcg64 {
    fn from_seed_sequence(seq: &SeedSequence) -> Pcg64 {
        let v = seq.generate_u64(4);
        let seed = (u128::from(v[0]) << 64) | u128::from(v[1]);
        let stream = (u128::from(v[2]) << 64) | u128::from(v[3]);
        let mut rng = Pcg64 { state: 0, increment: (stream << 1) | 1, buffered_u32: None };
        rng.step();
        rng.state = rng.state.wrapping_add(seed);
        rng.step();
        rng
    }

    fn step(&mut self) {
        self.state = self.state.wrapping_mul(PCG_MULTIPLIER).wrapping_add(self.increment);
    }

    fn next_u64(&mut self) -> u64 {
        self.step();
        let folded = ((self.state >> 64) as u64) ^ (self.state as u64);
        folded.rotate_right((self.state >> 122) as u32)
    }

    fn next_u32(&mut self) -> u32 {
        if let Some(high) = self.buffered_u32.take() {
            return high;
        }
        let next = self.next_u64();
        self.buffered_u32 = Some((next >> 32) as u32);
        next as u32
    }

    /// A double in [0, 1) from the top 53 bits of a draw.
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }
}

/// `numpy.random.default_rng(seed)`.
pub struct Generator {
    bits: Pcg64,
}

impl Generator {
    /// `default_rng(seed)` for a non-negative integer seed.
    pub fn new(seed: u64) -> Generator {
        Generator { bits: Pcg64::from_seed_sequence(&SeedSequence::new(seed)) }
    }

    /// `uniform(low, high, size=n)`: float64 values in [low, high).
    pub fn uniform(&mut self, low: f64, high: f64, n: usize) -> Vec<f64> {
        (0..n).map(|_| low + (high - low) * self.bits.next_f64()).collect()
    }

    /// `integers(low, high, size=n, dtype=np.int64)`: values in [low, high) by Lemire's
    /// multiply-and-reject method, on 32-bit draws when the range fits in 32 bits (as numpy).
    /// `None` when the range is empty.
    pub fn integers(&mut self, low: i64, high: i64, n: usize) -> Option<Vec<i64>> {
        if high <= low {
            return None;
        }
        // The inclusive range's width minus one, as numpy computes it.
        let range = (high as u64).wrapping_sub(low as u64).wrapping_sub(1);
        let draw = |bits: &mut Pcg64| -> u64 {
            if range == 0 {
                0
            } else if range == u64::from(u32::MAX) {
                u64::from(bits.next_u32())
            } else if range < u64::from(u32::MAX) {
                u64::from(bounded_u32(bits, range as u32))
            } else if range == u64::MAX {
                bits.next_u64()
            } else {
                bounded_u64(bits, range)
            }
        };
        Some((0..n).map(|_| (low as u64).wrapping_add(draw(&mut self.bits)) as i64).collect())
    }
}

/// A value in [0, range] from 32-bit draws (numpy's `buffered_bounded_lemire_uint32`).
fn bounded_u32(bits: &mut Pcg64, range: u32) -> u32 {
    let excl = range + 1;
    let mut m = u64::from(bits.next_u32()) * u64::from(excl);
    if (m as u32) < excl {
        let threshold = (u32::MAX - range) % excl;
        while (m as u32) < threshold {
            m = u64::from(bits.next_u32()) * u64::from(excl);
        }
    }
    (m >> 32) as u32
}

/// A value in [0, range] from 64-bit draws (numpy's `bounded_lemire_uint64`).
fn bounded_u64(bits: &mut Pcg64, range: u64) -> u64 {
    let excl = range + 1;
    let mut m = u128::from(bits.next_u64()) * u128::from(excl);
    if (m as u64) < excl {
        let threshold = (u64::MAX - range) % excl;
        while (m as u64) < threshold {
            m = u128::from(bits.next_u64()) * u128::from(excl);
        }
    }
    (m >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::Generator;
    use std::process::Command;

    /// numpy's own numbers for a recipe, printed by the project's Python (`cargo xtask test`
    /// puts target/venv first on PATH).
    fn numpy(script: &str) -> Vec<String> {
        let out = Command::new("python3")
            .args(["-c", &format!("import numpy as np\n{script}")])
            .output()
            .expect("python3 with numpy is needed (cargo xtask setup installs it in target/venv)");
        assert!(out.status.success(), "numpy failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn interleaved_draws_match_numpy_bit_for_bit() {
        // Floats are compared as bit patterns. Mixed calls exercise the 32-bit buffer carried between methods, ranges on both the
        // 32-bit and the 64-bit path, and seeds with one and two entropy words.
        for seed in [0u64, 1, 12345, 1 << 40] {
            let want = numpy(&format!(
                "r = np.random.default_rng({seed})\n\
                 a = r.uniform(-1.0, 1.0, size=7)\n\
                 b = r.integers(0, 50000, size=9, dtype=np.int64)\n\
                 c = r.uniform(-1.0, 1.0, size=3)\n\
                 d = r.integers(-5, 1 << 40, size=5, dtype=np.int64)\n\
                 e = r.integers(3, 4, size=2, dtype=np.int64)\n\
                 f = r.integers(0, 1 << 32, size=3, dtype=np.int64)\n\
                 print(*a.view(np.uint64), *b, *c.view(np.uint64), *d, *e, *f)"
            ));
            let mut g = Generator::new(seed);
            let mut got: Vec<String> = Vec::new();
            let bits = |x: f64| x.to_bits().to_string();
            got.extend(g.uniform(-1.0, 1.0, 7).into_iter().map(bits));
            got.extend(g.integers(0, 50000, 9).unwrap().into_iter().map(|v| v.to_string()));
            got.extend(g.uniform(-1.0, 1.0, 3).into_iter().map(bits));
            got.extend(g.integers(-5, 1 << 40, 5).unwrap().into_iter().map(|v| v.to_string()));
            got.extend(g.integers(3, 4, 2).unwrap().into_iter().map(|v| v.to_string()));
            got.extend(g.integers(0, 1 << 32, 3).unwrap().into_iter().map(|v| v.to_string()));
            assert_eq!(got, want, "seed {seed}");
        }
    }

    #[test]
    fn empty_integer_range_is_refused() {
        assert!(Generator::new(0).integers(5, 5, 1).is_none());
    }
}
