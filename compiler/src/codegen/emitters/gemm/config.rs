//! Block sizes of the GEMM engine for an element type and a target.
//!
//! The micro-kernel keeps an `mr x nr` tile of C in vector registers (`nr = nv` vectors of
//! `lanes` elements per row) and per step of k loads `nv` vectors of packed B and broadcasts
//! `mr` elements of packed A. Register budget: `mr * nv` accumulators, `nv` B vectors and one
//! broadcast must fit the register file (32 vector registers with AVX-512, 16 otherwise).
//! Cache blocking: an A strip (`mr x kc`) stays in L1 while the micro-kernel walks the B
//! strips (`kc x nr`) of a packed B block (`kc x nc`, sized for L2).

use hlojit_runtime::ElementType;

/// Largest number of broadcast rows: more rows amortize the B loads better, but the A strip
/// must stay small in L1 and edge tiles waste more.
const MAX_MR: i64 = 12;
/// Most vectors per tile row (with 32 registers).
const MAX_NV: i64 = 4;
/// Bytes of the k-extent of a packed strip row (kc elements): 2 KiB keeps an A strip of 12
/// rows at 24 KiB, in a 32 KiB L1 (measured: a little faster than 1 or 4 KiB here).
const KC_BYTES: i64 = 2048;
/// Bytes of a packed B block (kc x nc), about half of a 1 MiB L2.
const B_BLOCK_BYTES: i64 = 512 * 1024;

/// Block sizes for one GEMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blocking {
    /// Elements per vector register.
    pub lanes: i64,
    /// Vectors per tile row.
    pub nv: i64,
    /// Rows of the register tile.
    pub mr: i64,
    /// Depth of a packed block.
    pub kc: i64,
    /// Columns of a packed B block (a multiple of `nr`).
    pub nc: i64,
}

impl Blocking {
    /// Block sizes for elements of `elem_bytes` bytes on a target with `simd_bytes`-byte
    /// vectors, for a problem `n` columns wide.
    pub fn new(elem_bytes: i64, simd_bytes: i64, n: i64) -> Blocking {
        Blocking::sized(elem_bytes, elem_bytes, simd_bytes, n)
    }

    /// Block sizes for bf16 operands multiplied as pairs into f32 (`vdpbf16ps`): the f32 tile,
    /// blocks counted in packed bf16 elements (2 bytes), so that a packed strip row has
    /// [`KC_BYTES`] as for other types: kc = 1024 elements, 512 pairs. One B panel (64 KiB)
    /// then streams from L2 rather than staying in L1, which the dot product's 24 cycles per
    /// pair step hide; measured on 1024^3 (Zen 4, one thread, per CPU-second): 187-194
    /// GFLOP/s with kc = 512, 197-208 with 1024, 173-177 with 256 (more k blocks, C stored
    /// and reloaded more often).
    pub fn bf16_pairs(simd_bytes: i64, n: i64) -> Blocking {
        Blocking::sized(4, 2, simd_bytes, n)
    }

    /// Block sizes for s8 operands multiplied as quads into s32 (`vpdpbusd`, the runtime's
    /// VNNI kernel): the s32 tile, blocks counted in packed bytes, so that a packed strip row
    /// has [`KC_BYTES`] as for other types: kc = 2048 elements, 512 quads.
    pub fn s8_quads(simd_bytes: i64, n: i64) -> Blocking {
        Blocking::sized(4, 1, simd_bytes, n)
    }

    /// Tile for `elem_bytes`-byte results, blocks for `packed_bytes`-byte packed elements.
    fn sized(elem_bytes: i64, packed_bytes: i64, simd_bytes: i64, n: i64) -> Blocking {
        let lanes = (simd_bytes / elem_bytes).max(1);
        let registers = if simd_bytes >= 64 { 32 } else { 16 };
        // Up to four vectors when they cover the whole width (a 64-wide f32 problem in one
        // strip), otherwise two: the tile is then tall, which amortizes the B loads best.
        let vectors = ((n + lanes - 1) / lanes).max(1);
        let max_nv = if registers >= 32 { MAX_NV } else { 2 };
        let nv = if vectors <= max_nv { vectors } else { 2 };
        let mr = ((registers - nv - 1) / nv).clamp(1, MAX_MR);
        let kc = (KC_BYTES / packed_bytes).max(16);
        let nr = nv * lanes;
        let nc_max = (B_BLOCK_BYTES / (kc * packed_bytes) / nr).max(1) * nr;
        let nc = nc_max.min(((n + nr - 1) / nr).max(1) * nr);
        Blocking { lanes, nv, mr, kc, nc }
    }

    pub fn nr(&self) -> i64 {
        self.nv * self.lanes
    }

    /// These block sizes for an f32 GEMM of `m` rows and depth `k` on AVX-512: k blocks twice
    /// as deep (1024) where A is too tall to be one block anyway and k needs more than one
    /// block. Every k block reloads and stores C's tiles once more; with A in several blocks
    /// those trips go through L3, which two threads share: 2048^3 on two Zen 4 threads ran
    /// 85.7 -> 82.3 ms (five alternating rounds, medians), 1024^3 and conv2d_resnet equal. A
    /// short A stays at 512, where it is one block whose units pack their own B panels:
    /// mlp_train's 256-row dots were 5% slower deepened.
    pub fn deepened(self, elem_bytes: i64, m: i64, k: i64) -> Blocking {
        let f32_avx512 = elem_bytes == 4 && self.lanes == 16;
        let one_block_at_depth = m.saturating_mul(self.kc).saturating_mul(4) <= hlojit_runtime::kernels::gemm::ONE_BLOCK_A_BYTES;
        if f32_avx512 && k > self.kc && !one_block_at_depth {
            Blocking { kc: 2 * self.kc, ..self }
        } else {
            self
        }
    }
}

/// The element type a GEMM computes in for a result type, if the engine handles it: f32 for
/// f32 and the 16-bit floats, f64, and 32- or 64-bit integers (narrower integer results are
/// computed in 32 bits and truncated, which wraps the same way).
pub fn compute_type(out: ElementType) -> Option<ElementType> {
    use ElementType::*;
    match out {
        F32 | BF16 | F16 => Some(F32),
        F64 => Some(F64),
        S8 | S16 | S32 => Some(S32),
        U8 | U16 | U32 => Some(U32),
        S64 => Some(S64),
        U64 => Some(U64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tall_deep_f32_products_get_deeper_blocks_on_avx512() {
        let b = Blocking::new(4, 64, 2048);
        assert_eq!(b.deepened(4, 2048, 2048).kc, 1024);
        // One block at depth 512 (256 rows): units pack their own panels, kept.
        assert_eq!(b.deepened(4, 256, 1024).kc, 512);
        // One k block already.
        assert_eq!(b.deepened(4, 2048, 512).kc, 512);
        // AVX2 and f64 keep theirs.
        assert_eq!(Blocking::new(4, 32, 2048).deepened(4, 2048, 2048), Blocking::new(4, 32, 2048));
        assert_eq!(Blocking::new(8, 64, 2048).deepened(8, 2048, 2048), Blocking::new(8, 64, 2048));
    }

    #[test]
    fn avx512_f32_tile() {
        let b = Blocking::new(4, 64, 1024);
        assert_eq!((b.lanes, b.nv, b.mr, b.nr()), (16, 2, 12, 32));
        assert_eq!(b.kc, 512);
        assert_eq!(b.nc, 256);
        // The tile and one B row and a broadcast fit 32 registers.
        assert!(b.mr * b.nv + b.nv < 32);
    }

    #[test]
    fn avx2_f32_tile_fits_16_registers() {
        let b = Blocking::new(4, 32, 1024);
        assert_eq!((b.lanes, b.nv, b.mr), (8, 2, 6));
        assert!(b.mr * b.nv + b.nv < 16);
    }

    #[test]
    fn a_64_wide_problem_is_one_strip() {
        let b = Blocking::new(4, 64, 64);
        assert_eq!((b.nv, b.mr, b.nr()), (4, 6, 64));
        assert!(b.mr * b.nv + b.nv < 32);
    }

    #[test]
    fn narrow_problems_use_one_vector_and_small_blocks() {
        let b = Blocking::new(4, 64, 10);
        assert_eq!((b.nv, b.nc), (1, 16));
        let b = Blocking::new(8, 64, 100);
        assert_eq!((b.lanes, b.nv, b.kc), (8, 2, 256));
        let b = Blocking::new(4, 32, 1024);
        assert!(b.mr * b.nv + b.nv < 16);
        assert_eq!(b.nc % b.nr(), 0);
    }

    #[test]
    fn bf16_pairs_keep_the_f32_tile_and_2_kib_strip_rows() {
        let f = Blocking::new(4, 64, 1024);
        let b = Blocking::bf16_pairs(64, 1024);
        assert_eq!((b.lanes, b.nv, b.mr, b.nc), (f.lanes, f.nv, f.mr, f.nc));
        assert_eq!(b.kc, 1024);
    }

    #[test]
    fn s8_quads_keep_the_s32_tile_and_2_kib_strip_rows() {
        let s = Blocking::new(4, 64, 1024);
        let q = Blocking::s8_quads(64, 1024);
        assert_eq!((q.lanes, q.nv, q.mr, q.nc), (s.lanes, s.nv, s.mr, s.nc));
        assert_eq!(q.kc, 2048);
    }

    #[test]
    fn compute_types() {
        assert_eq!(compute_type(ElementType::BF16), Some(ElementType::F32));
        assert_eq!(compute_type(ElementType::S8), Some(ElementType::S32));
        assert_eq!(compute_type(ElementType::C64), None);
        assert_eq!(compute_type(ElementType::Pred), None);
    }
}
