//! The packed f32 GEMM, built once with the runtime instead of generated and optimized by LLVM
//! in every module that has a dot: `C[b] (=) A[b] x B[b]` for strided f32 operands, or bf16
//! operands (XLA's `preferred_element_type=f32` dot), stored straight into an f32 result. One variant per instruction set (AVX-512, AVX2 + FMA), each
//! compiled with its `#[target_feature]`; the compiler calls the one its target's features
//! allow (the host's for the JIT, `--cpu`/`--features` for AOT objects, which link this
//! library), with the block sizes it would have generated code for. Batches may lie two
//! strides apart (`GemmF32::batch_inner`: attention's batch x heads).
//!
//! It computes what the compiler's generated GEMM computes (`compiler/src/codegen/emitters/
//! gemm/driver.rs`), the same bits: B packed in `nr`-column panels per k block, A packed per
//! `mr`-row strip, and per tile a k loop of fused multiply-adds from zero, stored (first k
//! block) or added to C (later ones). Only the order of the tiles differs: work is split
//! into units of an L2-sized block of A rows (packed once per k block) times a range of B
//! panels, and each B panel meets all strips of the block while it stays in L1, so the
//! micro-kernel streams only a small A strip; units are shared out to the threads one by one.
//! Where all of A's rows fit one block, every B panel belongs to one unit, which packs it just
//! before its tiles (`run_unit`) instead of in a phase of its own.
//! A few-panel f32 A whose rows lie contiguous along k is not packed: the micro-kernel reads the same values in the same order where
//! they lie. Strips whose rows are contiguous along k are packed by 8 x 8 register
//! transposes (`transpose_pack.rs`). Packing only copies, widening bf16 to
//! f32 on the way (exactly, as the generated packing does: the bf16 bits are the f32's high
//! half), so bf16 operands run at the f32 kernels' speed on a target without AVX512-BF16.
//!
//! s8 x s8 -> s32 (AVX2): packing puts pairs of k-adjacent elements, widened to i16, in one
//! 32-bit word, and the micro-kernel multiplies word by word with `vpmaddwd` (two products
//! summed exactly into each i32 lane: |products| <= 2^14). The driver then counts k in pairs.
//! Integer sums wrap modulo 2^32 whatever their order, so the result is XLA's bit for bit.
//!
//! bf16 x bf16 -> f32 on AVX512-BF16 (`bf16.rs`): packed the same way, pairs of k-adjacent bf16
//! elements in one word (`bf16_pack.rs`), multiplied with `vdpbf16ps`; k again counts pairs.
//!
//! s8 x s8 -> s32 on AVX512-VNNI (`int8_vnni.rs`): four k-adjacent bytes per word
//! (`int8_quads.rs`), A offset to unsigned and multiplied with `vpdpbusd`, each B panel
//! carrying the column sums that take the offset out again; k counts quads.

mod amx;
mod bf16;
mod bf16_pack;
mod int8;
mod int8_quads;
mod int8_vnni;
mod microkernel;
mod row_pack;
mod shared_a;
mod transpose_pack;

use crate::custom_call::last_error::set_failure as set_last_error;
use crate::symbols::{hlojit_rt_num_threads, hlojit_rt_parallel_for, ALLOCATION_FAILURE};
pub use amx::{amx_status, hlojit_rt_gemm_bf16_amx, hlojit_rt_gemm_s8_amx};
use microkernel::Microkernel;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

/// Below this many flops a GEMM runs on the calling thread (as the generated one).
const PARALLEL_MIN_FLOPS: f64 = 4.0e6;

/// The least k block depth at which a row-major f32 A with several B panels is read in place
/// rather than packed.
const DIRECT_A_MIN_DEPTH: i64 = 256;

/// The most B panels a GEMM may have for its f32 A to be read in place. A packed A block
/// stays in L2 while every panel meets it; rows read in place lie a row stride apart, and
/// with a power-of-two stride they fall into few L2 sets and are read again from L3 for each
/// panel (measured on 2048 x 2048: 71 GFLOP/s per core in place, 76 packed). With few panels
/// the copy is the larger cost.
const DIRECT_A_MAX_PANELS: i64 = 8;

/// Bytes of a packed A block. Measured on 2048 x 2048 x 2048 (Zen 3, 512 KiB L2, depth 512,
/// one thread, per CPU-second): 78 rows (160 KiB) 70 GFLOP/s, 120 rows 80, 180-288 rows
/// 80-85. The strip the micro-kernel streams is prefetched, so a block a little larger than
/// what L2 keeps beside the B panel costs less than the B panel's reloads of small blocks.
const A_BLOCK_BYTES: i64 = 384 * 1024;

/// Bytes of a packed A block that holds all of A's rows (per batch) at the first k block's
/// depth: such a GEMM is shared out in panel ranges only, so that every B panel belongs to one
/// unit, which packs it itself (`run_unit`). A little more than [`A_BLOCK_BYTES`]: a 256-row
/// A at depth 512 (mlp_train's forward dots) is one block of 528 KiB.
pub const ONE_BLOCK_A_BYTES: i64 = 576 * 1024;

/// Bytes of the B panels a unit packs for itself (per k block): what L2 keeps beside the A
/// block.
const UNIT_B_BYTES: i64 = 256 * 1024;

/// Whether a row-major f32 A is read where it lies rather than packed, for k blocks of
/// `depth` and `panels` B panels: in deep blocks with few panels (above), and with one panel
/// at any depth, where each packed element would be read once, as in place. One panel is a
/// scan's input projection (rnn_scan's 1000 x 32 x 64, one thread: 45 -> 39 us, the copy was
/// 11% of its samples).
fn reads_a_in_place(depth: i64, panels: i64) -> bool {
    panels == 1 || (panels <= DIRECT_A_MAX_PANELS && depth >= DIRECT_A_MIN_DEPTH)
}

/// Depth of the first (deepest) k block.
fn plan_depth(g: &GemmF32) -> i64 {
    g.kc.min(g.k)
}

/// One GEMM, as generated code passes it (all fields 64-bit; strides in elements). `a` and `b`
/// point to f32 elements, to bf16 ones (raw `u16` bits) for the `bf16` entry points, or to
/// s8 ones for the `s8` entry point, whose result `c` is s32 (f32 otherwise).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GemmF32 {
    pub batch: i64,
    /// Batches per outer batch (at least 1): batch `b` is inner batch `b % batch_inner` of
    /// outer batch `b / batch_inner`, so that a batch group no single stride walks (heads and
    /// batch apart, as in attention's `[batch, seq, heads, dim]` operands) is read and written
    /// where it lies; [`GemmF32::batch_offset`].
    pub batch_inner: i64,
    pub m: i64,
    pub n: i64,
    pub k: i64,
    /// `A[b][i][p]` at `a + batch_offset(b, a_batch) + i * a_row + p * a_col`.
    pub a: *const std::ffi::c_void,
    pub a_batch: BatchStrides,
    pub a_row: i64,
    pub a_col: i64,
    /// `B[b][p][j]` at `b + batch_offset(b, b_batch) + p * b_row + j * b_col`.
    pub b: *const std::ffi::c_void,
    pub b_batch: BatchStrides,
    pub b_row: i64,
    pub b_col: i64,
    /// `C[b][i][j]` at `c + batch_offset(b, c_batch) + i * c_row + j`.
    pub c: *mut std::ffi::c_void,
    pub c_batch: BatchStrides,
    pub c_row: i64,
    /// Register tile rows and vectors per row, k block depth, B block width.
    pub mr: i64,
    pub nv: i64,
    pub kc: i64,
    pub nc: i64,
    /// Null, or the generated epilogue of a fused dot: called once for every finished region
    /// of C (after its last k block), while the region is still in cache, with `epilogue_ctx`
    /// and the region's batch, rows `[r0, r1)` and columns `[c0, c1)`; it rewrites those
    /// elements in place (bias, scaling, activation, residual add). Regions never overlap and
    /// together cover C once, so each element passes through the epilogue exactly once.
    pub epilogue: Option<Epilogue>,
    pub epilogue_ctx: *const std::ffi::c_void,
    /// Non-zero when the epilogue finishes whole rows (a softmax over each row of the
    /// product): every region it gets then spans all `n` columns, which it may read before it
    /// writes any of them. The work is then never split across columns.
    pub epilogue_rows: i64,
}

/// Element strides of an operand's outer and inner batch index (see [`GemmF32::batch_inner`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchStrides {
    pub outer: i64,
    pub inner: i64,
}

impl BatchStrides {
    /// Batches one stride apart (with `batch_inner` 1).
    pub fn single(stride: i64) -> BatchStrides {
        BatchStrides { outer: stride, inner: 0 }
    }

    /// The element offset of batch `b`, with `batch_inner` (at least 1) batches per outer one.
    #[inline(always)]
    pub fn offset(self, b: i64, batch_inner: i64) -> i64 {
        b / batch_inner * self.outer + b % batch_inner * self.inner
    }
}

impl GemmF32 {
    /// Whether [`GemmF32::batch_offset`] can number the batches; if not, this thread's last
    /// error says so (generated code always passes at least 1).
    fn batches_numbered(&self) -> bool {
        if self.batch_inner < 1 {
            set_last_error(format!("GEMM descriptor with {} inner batches", self.batch_inner));
        }
        self.batch_inner >= 1
    }

    /// The element offset of batch `b` in an operand whose batches lie `strides` apart.
    #[inline(always)]
    pub fn batch_offset(&self, b: i64, strides: BatchStrides) -> i64 {
        strides.offset(b, self.batch_inner)
    }

    /// Whether the epilogue must see whole rows (see [`GemmF32::epilogue_rows`]).
    fn finishes_rows(&self) -> bool {
        self.epilogue.is_some() && self.epilogue_rows != 0
    }

    /// Column parts a row block may be split into: one where the epilogue finishes whole rows.
    fn splittable_panels(&self, panels: i64) -> i64 {
        if self.finishes_rows() {
            1
        } else {
            panels
        }
    }

    /// Finishes columns `[c0, c1)` of rows `[r0, r1)` of batch `b` after their last k block:
    /// now where the epilogue works on any region, and where it needs whole rows only once
    /// the region reaches the last column (a unit then holds all of its rows' columns).
    ///
    /// # Safety
    /// The region's elements of C are final.
    unsafe fn finish(&self, b: i64, r0: i64, r1: i64, c0: i64, c1: i64) {
        let Some(epilogue) = self.epilogue else { return };
        if !self.finishes_rows() {
            unsafe { epilogue(self.epilogue_ctx, b, r0, r1, c0, c1) };
        } else if c1 == self.n {
            unsafe { epilogue(self.epilogue_ctx, b, r0, r1, 0, self.n) };
        }
    }
}

/// `epilogue(ctx, batch, r0, r1, c0, c1)`, see [`GemmF32::epilogue`].
pub type Epilogue = unsafe extern "C" fn(*const std::ffi::c_void, i64, i64, i64, i64, i64);

/// The instruction sets with a precompiled variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// 16 f32 lanes, 32 registers.
    Avx512,
    /// 8 f32 lanes, 16 registers, FMA.
    Avx2Fma,
}

impl Isa {
    pub fn lanes(self) -> i64 {
        match self {
            Isa::Avx512 => 16,
            Isa::Avx2Fma => 8,
        }
    }

    /// The runtime entry point of this variant for operands of type `operands`, if built.
    pub fn symbol(self, operands: Operands) -> Option<&'static str> {
        match (self, operands) {
            (Isa::Avx512, Operands::F32) => Some("hlojit_rt_gemm_f32_avx512"),
            (Isa::Avx2Fma, Operands::F32) => Some("hlojit_rt_gemm_f32_avx2"),
            (Isa::Avx512, Operands::Bf16) => Some("hlojit_rt_gemm_bf16_avx512"),
            (Isa::Avx2Fma, Operands::Bf16) => Some("hlojit_rt_gemm_bf16_avx2"),
            (Isa::Avx2Fma, Operands::S8) => Some("hlojit_rt_gemm_s8_avx2"),
            (Isa::Avx512, Operands::Bf16Pairs) => Some("hlojit_rt_gemm_bf16_pairs_avx512"),
            (Isa::Avx512, Operands::S8Quads) => Some("hlojit_rt_gemm_s8_vnni_avx512"),
            (Isa::Avx2Fma, Operands::Bf16Pairs | Operands::S8Quads) => None,
            // AVX-512 targets run s8 as quads where they have VNNI, generated code otherwise.
            (Isa::Avx512, Operands::S8) => None,
        }
    }
}

/// The element type of both operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operands {
    /// f32 result.
    F32,
    /// bf16, widened to f32 while packing; f32 result.
    Bf16,
    /// s8, packed as i16 pairs; s32 result.
    S8,
    /// bf16, packed as pairs and multiplied with AVX512-BF16's `vdpbf16ps` (AVX-512 only); f32
    /// result.
    Bf16Pairs,
    /// s8, packed as quads of bytes and multiplied with AVX512-VNNI's `vpdpbusd` (AVX-512
    /// only); s32 result.
    S8Quads,
}

impl Operands {
    /// Operand elements per packed word, k-adjacent (the driver counts k in words).
    fn per_word(self) -> i64 {
        match self {
            Operands::F32 | Operands::Bf16 => 1,
            Operands::S8 | Operands::Bf16Pairs => 2,
            Operands::S8Quads => 4,
        }
    }
}

/// An operand element, widened to the f32 the micro-kernels multiply.
trait Element: Copy {
    fn widen(self) -> f32;
}

impl Element for f32 {
    fn widen(self) -> f32 {
        self
    }
}

/// bf16 bits: the high half of the f32 with the same value (exact, subnormals included).
impl Element for u16 {
    fn widen(self) -> f32 {
        f32::from_bits(u32::from(self) << 16)
    }
}

/// Whether a variant exists for this register tile (the tiles the compiler's blocking picks).
pub fn has_tile(isa: Isa, operands: Operands, mr: i64, nv: i64) -> bool {
    Microkernel::select(isa, operands, mr, nv).is_some()
}

/// Whether this machine can run the AVX-512 variant for [`Operands::Bf16Pairs`].
pub fn host_multiplies_bf16_pairs() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        host_supports(Isa::Avx512) && std::arch::is_x86_feature_detected!("avx512bw") && std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this machine can run the AVX-512 variant for [`Operands::S8Quads`].
pub fn host_multiplies_s8_quads() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        host_supports(Isa::Avx512) && std::arch::is_x86_feature_detected!("avx512bw") && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this machine can run `isa`'s variant.
pub fn host_supports(isa: Isa) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match isa {
            Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            Isa::Avx2Fma => std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma"),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = isa;
        false
    }
}

/// The AVX-512 GEMM; 0 on success, 1 with this thread's last error set when scratch memory
/// cannot be had.
///
/// # Safety
/// `desc` describes valid operands and result (not overlapping the result) for its sizes,
/// the tile is one [`has_tile`] accepts, and the CPU has AVX-512F.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_gemm_f32_avx512(desc: *const GemmF32) -> i32 {
    unsafe { gemm(&*desc, Isa::Avx512, Operands::F32) }
}

/// The AVX2 + FMA GEMM (as [`hlojit_rt_gemm_f32_avx512`]).
///
/// # Safety
/// As [`hlojit_rt_gemm_f32_avx512`], with a CPU that has AVX2 and FMA.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_gemm_f32_avx2(desc: *const GemmF32) -> i32 {
    unsafe { gemm(&*desc, Isa::Avx2Fma, Operands::F32) }
}

/// The AVX-512 GEMM of bf16 operands (as [`hlojit_rt_gemm_f32_avx512`]; `a` and `b` point to
/// bf16 elements).
///
/// # Safety
/// As [`hlojit_rt_gemm_f32_avx512`].
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_gemm_bf16_avx512(desc: *const GemmF32) -> i32 {
    unsafe { gemm(&*desc, Isa::Avx512, Operands::Bf16) }
}

/// The AVX2 + FMA GEMM of bf16 operands (as [`hlojit_rt_gemm_bf16_avx512`]).
///
/// # Safety
/// As [`hlojit_rt_gemm_f32_avx2`].
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_gemm_bf16_avx2(desc: *const GemmF32) -> i32 {
    unsafe { gemm(&*desc, Isa::Avx2Fma, Operands::Bf16) }
}

/// The AVX-512 GEMM of bf16 operands multiplied as pairs (as [`hlojit_rt_gemm_bf16_avx512`]).
///
/// # Safety
/// As [`hlojit_rt_gemm_f32_avx512`], with a CPU that also has AVX-512BW and AVX512-BF16.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_gemm_bf16_pairs_avx512(desc: *const GemmF32) -> i32 {
    unsafe { gemm(&*desc, Isa::Avx512, Operands::Bf16Pairs) }
}

/// The AVX2 GEMM of s8 operands into an s32 result (as [`hlojit_rt_gemm_f32_avx2`]; `a` and
/// `b` point to s8 elements, `c` to s32 ones).
///
/// # Safety
/// As [`hlojit_rt_gemm_f32_avx2`].
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_gemm_s8_avx2(desc: *const GemmF32) -> i32 {
    unsafe { gemm(&*desc, Isa::Avx2Fma, Operands::S8) }
}

/// The AVX512-VNNI GEMM of s8 operands into an s32 result (as [`hlojit_rt_gemm_s8_avx2`]).
///
/// # Safety
/// As [`hlojit_rt_gemm_f32_avx512`], with a CPU that also has AVX-512BW and AVX512-VNNI.
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_gemm_s8_vnni_avx512(desc: *const GemmF32) -> i32 {
    unsafe { gemm(&*desc, Isa::Avx512, Operands::S8Quads) }
}

/// Sizes shared by the phases.
struct Plan {
    g: GemmF32,
    uk: Microkernel,
    isa: Isa,
    operands: Operands,
    nr: i64,
    k_blocks: i64,
    panels: i64,
    /// Depth of a packed row (the first k block's).
    depth: i64,
    /// Rows of a block of A (a multiple of `mr`), and blocks per batch.
    mc: i64,
    m_blocks: i64,
    /// Parts each row block's B panels are split into.
    n_parts: i64,
    /// The operands' k extent (`g.k` counts packed words: pairs or quads).
    real_k: i64,
    /// Packed B: `[batch][k block][panel][depth][nr]` words (f32, or an i16 pair for s8),
    /// quads followed by one row of column corrections (`int8_quads.rs`).
    bp: *mut u32,
    /// Set by a task that could not allocate its scratch memory.
    failed: AtomicBool,
    /// A is read where it lies, unpacked (f32 rows contiguous along k).
    direct_a: bool,
    /// Null, or A packed once for all units (`shared_a.rs`): `[batch][row block][k block]`
    /// blocks of `mc x depth` words, each laid out as a unit packs its own.
    ap_shared: *mut u32,
    /// Each unit packs the B panels it multiplies, per k block, into scratch of its own
    /// (`bp` is then unused): set where every panel belongs to one unit (one row block).
    unit_packs_b: bool,
}

impl Plan {
    fn panel(&self) -> i64 {
        let corrections = i64::from(self.operands == Operands::S8Quads);
        (self.depth + corrections) * self.nr
    }

    /// B panels the packing phase packs (in `bp`): none where the units pack their own.
    fn shared_b_panels(&self) -> i64 {
        if self.unit_packs_b {
            0
        } else {
            self.g.batch * self.k_blocks * self.panels
        }
    }

    /// Operand elements of k block `k0` (in words) `depth` words deep.
    fn elements(&self, k0: i64, depth: i64) -> i64 {
        let per = self.operands.per_word();
        (self.real_k - per * k0).min(per * depth)
    }
}

unsafe fn gemm(g: &GemmF32, isa: Isa, operands: Operands) -> i32 {
    if !g.batches_numbered() {
        return 1;
    }
    let Some(uk) = Microkernel::select(isa, operands, g.mr, g.nv) else {
        set_last_error(format!("no precompiled GEMM tile {}x{} for {isa:?} {operands:?}", g.mr, g.nv));
        return 1;
    };
    // The driver counts k in packed words: pairs or quads of elements.
    let real_k = g.k;
    let mut g = *g;
    let per = operands.per_word();
    g.k = ceil_div(g.k, per);
    g.kc = (g.kc / per).max(1);
    let g = &g;
    if g.batch <= 0 || g.m <= 0 || g.n <= 0 {
        return 0;
    }
    let nr = g.nv * isa.lanes();
    let mut plan = Plan {
        g: *g,
        uk,
        isa,
        operands,
        nr,
        k_blocks: ceil_div(g.k, g.kc),
        panels: ceil_div(g.n, nr),
        depth: g.kc.min(g.k),
        mc: 0,
        m_blocks: 0,
        n_parts: 1,
        real_k,
        bp: std::ptr::null_mut(),
        failed: AtomicBool::new(false),
        // Packing A copied each element once per k block for the few panels a row strip meets;
        // reading rows that lie contiguous along k in place costs nothing more (see
        // microkernel.rs). Measured on a transformer block: packing was 10% of its GEMMs' time.
        // With several panels only for deep blocks: with k = 64 (batched_matmul_16x512x64x512)
        // the in-place reads were 4-10% slower than packing (three paired runs), with k >= 512
        // faster.
        direct_a: operands == Operands::F32 && g.a_col == 1 && uk.has_direct() && reads_a_in_place(plan_depth(g), ceil_div(g.n, nr)),
        ap_shared: std::ptr::null_mut(),
        unit_packs_b: false,
    };
    if g.k <= 0 {
        // No k blocks: the generated GEMM stores nothing either.
        return 0;
    }
    let strips = ceil_div(g.m, g.mr);
    let one_block = strips * g.mr * plan.depth * 4 <= ONE_BLOCK_A_BYTES;
    plan.mc = if one_block { strips * g.mr } else { block_rows(g.mr, plan.depth, g.m) };
    plan.m_blocks = ceil_div(g.m, plan.mc);
    let flops = 2.0 * g.batch as f64 * g.m as f64 * g.n as f64 * g.k as f64;
    let threads = hlojit_rt_num_threads();
    let serial = flops < PARALLEL_MIN_FLOPS || threads == 1;
    // Panel ranges a unit packs for itself must stay in L2 beside A's block.
    let least_parts = ceil_div(plan.panels * plan.panel() * 4, UNIT_B_BYTES).min(plan.panels);
    if serial {
        plan.n_parts = if plan.m_blocks == 1 { least_parts.min(g.splittable_panels(plan.panels)) } else { 1 };
    } else {
        // Units of equal size, a multiple of the threads where possible: whole batches split
        // into panel ranges where A fits one block, `share_units` otherwise.
        let share = match one_block.then(|| panel_parts(g.batch, g.splittable_panels(plan.panels), threads, least_parts)).flatten() {
            Some(n_parts) => Share { strips, n_parts },
            None => share_units(strips, plan.mc / g.mr, g.batch, g.splittable_panels(plan.panels), threads),
        };
        plan.mc = share.strips * g.mr;
        plan.m_blocks = ceil_div(g.m, plan.mc);
        plan.n_parts = share.n_parts;
    }
    plan.unit_packs_b = plan.m_blocks == 1;
    let Some(bp) = Scratch::new((plan.shared_b_panels() * plan.panel() * 4) as usize) else { return 1 };
    plan.bp = bp.ptr as *mut u32;
    let pack_units = plan.shared_b_panels();
    let units = g.batch * plan.m_blocks * plan.n_parts;
    // Row blocks split into panel ranges would each pack their A block once per range: pack A
    // once instead, with B's panels (`shared_a.rs`).
    let shared = plan.n_parts > 1 && !plan.direct_a;
    let Some(a_scratch) = Scratch::new(if shared { shared_a::bytes(&plan) } else { 0 }) else { return 1 };
    let a_units = if shared { shared_a::units(&plan) } else { 0 };
    if a_units > 0 {
        plan.ap_shared = a_scratch.ptr as *mut u32;
    }
    let ctx = &plan as *const Plan as *const *mut u8;
    let pack = if a_units > 0 { shared_a::pack_task as crate::symbols::KernelTask } else { pack_b_task };
    let status = if serial {
        unsafe { pack(ctx, 0, pack_units + a_units) };
        unsafe { run_units(&plan, 0, units) }
    } else {
        if pack_units + a_units > 0 {
            unsafe { hlojit_rt_parallel_for(pack, ctx, pack_units + a_units, 1) };
        }
        unsafe { crate::parallel_loop::run(unit_task, ctx, units, units, threads.min(units) - 1) };
        // A task that could not allocate left its error on its own thread: say so here.
        if plan.failed.load(Ordering::Relaxed) {
            set_last_error(format!("{ALLOCATION_FAILURE} temporary memory for a matrix product"));
            1
        } else {
            0
        }
    };
    drop(bp);
    status
}

/// Packs B panels `[u0, u1)` (in batch, k block, panel order: their order in `bp`).
unsafe extern "C" fn pack_b_task(ctx: *const *mut u8, u0: i64, u1: i64) {
    let p = unsafe { &*(ctx as *const Plan) };
    unsafe { pack_b_panels(p, u0, u1, p.bp.add((u0 * p.panel()) as usize)) };
}

/// Packs B panels `[u0, u1)` (numbered as in `bp`) one after another from `dst0`.
unsafe fn pack_b_panels(p: &Plan, u0: i64, u1: i64, dst0: *mut u32) {
    let g = &p.g;
    let per_batch = p.k_blocks * p.panels;
    let dst_of = |u: i64| unsafe { dst0.add(((u - u0) * p.panel()) as usize) };
    if p.operands == Operands::S8Quads {
        unsafe { pack_quad_panels(p, u0, u1, dst0) };
        return;
    }
    if g.b_col == 1 && p.operands != Operands::S8 {
        #[cfg(target_arch = "x86_64")]
        if p.operands == Operands::Bf16Pairs {
            unsafe { pack_pair_panels_by_rows(p, u0, u1, dst0) };
            return;
        }
        // Row-major B: the task's panels of each k block together, row by row (`row_pack.rs`).
        let mut u = u0;
        while u < u1 {
            let (b, rest) = (u / per_batch, u % per_batch);
            let (pcb, js) = (rest / p.panels, rest % p.panels);
            let run = (p.panels - js).min(u1 - u);
            let (k0, first) = (pcb * g.kc, js * p.nr);
            let depth = g.kc.min(g.k - k0);
            let cols = (g.n - first).min(run * p.nr);
            let dst = dst_of(u);
            let offset = (g.batch_offset(b, g.b_batch) + k0 * g.b_row + first) as isize;
            match p.operands {
                Operands::Bf16 => unsafe { row_pack::pack_panels_by_rows((g.b as *const u16).offset(offset), g.b_row, dst, p.panel(), cols, run, depth, p.nr) },
                _ => unsafe { row_pack::pack_panels_by_rows((g.b as *const f32).offset(offset), g.b_row, dst, p.panel(), cols, run, depth, p.nr) },
            }
            u += run;
        }
        return;
    }
    for u in u0..u1 {
        let b = u / per_batch;
        let rest = u % per_batch;
        let (pcb, js) = (rest / p.panels, rest % p.panels);
        let k0 = pcb * g.kc;
        let first = js * p.nr;
        let valid = (g.n - first).min(p.nr);
        let depth = g.kc.min(g.k - k0);
        let dst = dst_of(u);
        // Strip rows are B's columns: dst[kk * nr + i] = B[b][k0 + kk][first + i].
        let offset = g.batch_offset(b, g.b_batch) + first * g.b_col;
        unsafe { pack_operand(p, g.b, offset, k0, g.b_col, g.b_row, dst, valid, depth, p.nr) };
    }
}

/// Packs the bf16 pairs of a row-major B's panels `[u0, u1)` from `dst0`, a run of a k block's
/// panels at a time (as [`pack_b_panels`] does for widened elements).
#[cfg(target_arch = "x86_64")]
unsafe fn pack_pair_panels_by_rows(p: &Plan, u0: i64, u1: i64, dst0: *mut u32) {
    let g = &p.g;
    let per_batch = p.k_blocks * p.panels;
    let mut u = u0;
    while u < u1 {
        let (b, rest) = (u / per_batch, u % per_batch);
        let (pcb, js) = (rest / p.panels, rest % p.panels);
        let run = (p.panels - js).min(u1 - u);
        let (k0, first) = (pcb * g.kc, js * p.nr);
        let elements = p.elements(k0, g.kc);
        let cols = (g.n - first).min(run * p.nr);
        let dst = unsafe { dst0.add(((u - u0) * p.panel()) as usize) };
        let src = unsafe { (g.b as *const u16).offset((g.batch_offset(b, g.b_batch) + 2 * k0 * g.b_row + first) as isize) };
        unsafe { bf16_pack::pair_panels_by_rows(src, g.b_row, dst, p.panel(), cols, run, elements, p.nr) };
        u += run;
    }
}

/// Packs the s8 quads of B's panels `[u0, u1)` from `dst0`, each followed by its column
/// corrections.
unsafe fn pack_quad_panels(p: &Plan, u0: i64, u1: i64, dst0: *mut u32) {
    let g = &p.g;
    let per_batch = p.k_blocks * p.panels;
    for u in u0..u1 {
        let (b, rest) = (u / per_batch, u % per_batch);
        let (pcb, js) = (rest / p.panels, rest % p.panels);
        let (k0, first) = (pcb * g.kc, js * p.nr);
        let words = g.kc.min(g.k - k0);
        let dst = unsafe { dst0.add(((u - u0) * p.panel()) as usize) };
        // Strip rows are B's columns.
        let src = unsafe { (g.b as *const i8).offset((g.batch_offset(b, g.b_batch) + first * g.b_col + 4 * k0 * g.b_row) as isize) };
        let valid = (g.n - first).min(p.nr);
        unsafe { int8_quads::pack(src, g.b_col, g.b_row, dst, valid, p.elements(k0, words), p.nr, 0) };
        unsafe { int8_quads::column_correction(dst, words, p.nr, dst.add((words * p.nr) as usize)) };
    }
}

/// [`pack`] (or [`pack_pairs`]) of the strip at `base + offset` elements of the operand type
/// from word `k0` on.
#[allow(clippy::too_many_arguments)]
unsafe fn pack_operand(p: &Plan, base: *const std::ffi::c_void, offset: i64, k0: i64, row: i64, col: i64, dst: *mut u32, valid: i64, depth: i64, w: i64) {
    let at = |k: i64| (offset + k * col) as isize;
    match p.operands {
        #[cfg(target_arch = "x86_64")]
        Operands::F32 if col == 1 && row != 1 => unsafe { transpose_pack::pack_rows_f32((base as *const f32).offset(at(k0)), row, dst, valid, depth, w) },
        Operands::F32 => unsafe { pack((base as *const f32).offset(at(k0)), row, col, dst, valid, depth, w) },
        Operands::Bf16 => unsafe { pack((base as *const u16).offset(at(k0)), row, col, dst, valid, depth, w) },
        Operands::S8 => unsafe { pack_pairs((base as *const i8).offset(at(2 * k0)), row, col, dst, valid, p.elements(k0, depth), w) },
        #[cfg(target_arch = "x86_64")]
        Operands::Bf16Pairs if col == 1 => unsafe { bf16_pack::pair_rows((base as *const u16).offset(at(2 * k0)), row, dst, valid, p.elements(k0, depth), w) },
        Operands::Bf16Pairs => unsafe { pack_pairs((base as *const u16).offset(at(2 * k0)), row, col, dst, valid, p.elements(k0, depth), w) },
        // Only A's strips come here (B's panels get their corrections in `pack_quad_panels`).
        Operands::S8Quads => unsafe { int8_quads::pack((base as *const i8).offset(at(4 * k0)), row, col, dst, valid, p.elements(k0, depth), w, int8_quads::OFFSET_A) },
    }
}

/// An element packed as half of a pair word: s8 widened to i16, or bf16 bits as they are.
trait Half: Copy + Default {
    fn half(self) -> u32;
}

impl Half for i8 {
    fn half(self) -> u32 {
        u32::from(i16::from(self) as u16)
    }
}

impl Half for u16 {
    fn half(self) -> u32 {
        u32::from(self)
    }
}

/// `dst[kk * w + i]` = the pair (`src[i * row + 2kk * col]`, `src[i * row + (2kk + 1) *
/// col]`), low half first, for rows `i < valid` and the `elements` values of k (an odd last
/// one paired with a zero); zero words for the rest of the `w`.
unsafe fn pack_pairs<T: Half>(src: *const T, row: i64, col: i64, dst: *mut u32, valid: i64, elements: i64, w: i64) {
    let half = T::half;
    for kk in 0..(elements + 1) / 2 {
        let d = unsafe { dst.add((kk * w) as usize) };
        let lo = unsafe { src.offset((2 * kk * col) as isize) };
        let second = 2 * kk + 1 < elements;
        for i in 0..valid {
            let x = unsafe { *lo.offset((i * row) as isize) };
            let y = if second { unsafe { *lo.offset((i * row + col) as isize) } } else { T::default() };
            unsafe { *d.add(i as usize) = half(x) | (half(y) << 16) };
        }
        for i in valid..w {
            unsafe { *d.add(i as usize) = 0 };
        }
    }
}

/// `dst[kk * w + i] = src[i * row + kk * col]` (widened, as f32 bits) for rows `i < valid`
/// (zero for the rest of the `w`) and `kk < depth`.
unsafe fn pack<T: Element>(src: *const T, row: i64, col: i64, dst: *mut u32, valid: i64, depth: i64, w: i64) {
    for kk in 0..depth {
        let d = unsafe { dst.add((kk * w) as usize) };
        let s = unsafe { src.offset((kk * col) as isize) };
        if row == 1 {
            // Contiguous: a plain (vectorizable) copy or widening.
            let s = unsafe { std::slice::from_raw_parts(s, valid as usize) };
            let d = unsafe { std::slice::from_raw_parts_mut(d, valid as usize) };
            for (d, s) in d.iter_mut().zip(s) {
                *d = s.widen().to_bits();
            }
        } else {
            for i in 0..valid {
                unsafe { *d.add(i as usize) = (*s.offset((i * row) as isize)).widen().to_bits() };
            }
        }
        for i in valid..w {
            unsafe { *d.add(i as usize) = 0 };
        }
    }
}

unsafe extern "C" fn unit_task(ctx: *const *mut u8, u0: i64, u1: i64) {
    let p = unsafe { &*(ctx as *const Plan) };
    if unsafe { run_units(p, u0, u1) } != 0 {
        p.failed.store(true, Ordering::Relaxed);
    }
}

/// Work units `[u0, u1)`: unit `u` of batch `u / units_per_batch` is row block `r / n_parts`
/// and column part `r % n_parts` of `r = u % units_per_batch`.
unsafe fn run_units(p: &Plan, u0: i64, u1: i64) -> i32 {
    let g = &p.g;
    let ap_bytes = if p.direct_a || !p.ap_shared.is_null() { 0 } else { (p.mc * p.depth * 4) as usize };
    let Some(ap) = Scratch::new(ap_bytes) else { return 1 };
    let ap = ap.ptr as *mut u32;
    let bp_bytes = if p.unit_packs_b { (ceil_div(p.panels, p.n_parts) * p.panel() * 4) as usize } else { 0 };
    let Some(bp) = Scratch::new(bp_bytes) else { return 1 };
    let bp = bp.ptr as *mut u32;
    let per_batch = p.m_blocks * p.n_parts;
    for u in u0..u1 {
        let (b, rest) = (u / per_batch, u % per_batch);
        let (ib, part) = (rest / p.n_parts, rest % p.n_parts);
        let r0 = ib * p.mc;
        let r1 = (r0 + p.mc).min(g.m);
        let j0 = part * p.panels / p.n_parts;
        let j1 = (part + 1) * p.panels / p.n_parts;
        unsafe { run_unit(p, ap, bp, b, r0, r1, j0, j1) };
    }
    0
}

/// Bytes of B panels a row strip may walk in one pass (see [`run_unit`]): what L2 keeps
/// beside the packed A block.
const STRIP_PASS_B_BYTES: i64 = 256 * 1024;

/// Whether each row strip walks all `panels` B panels (of `panel_words` words) in one pass.
/// AVX-512 only: a strip then reads every panel from L2, and the AVX2 tile (6 x 16) needs
/// twice the bytes per cycle of the AVX-512 one (12 x 32) for that; measured on
/// 16 x 512 x 512 x 64 with the AVX2 variant, one Zen 4 core: 67-75% of the FMA peak per
/// CPU-second in panel order, 60-74% walking strips.
fn strip_pass(isa: Isa, panels: i64, panel_words: i64) -> bool {
    isa == Isa::Avx512 && panels * panel_words * 4 <= STRIP_PASS_B_BYTES
}

/// Rows `[r0, r1)` (at most `mc`) of batch `b`, B panels `[j0, j1)`. Per k block the rows'
/// A strips are packed once (an L2-sized block), then each B panel (`depth x nr`) meets
/// every strip of the block: the micro-kernel streams only the small A strip
/// (`mr x depth`) from L2. When the unit's panels together fit L2 beside the block (shallow k
/// blocks: batched_matmul's k = 64), each strip walks all of them instead: its C rows are
/// then written left to right, whole lines in order that the hardware prefetcher follows,
/// where a panel's column of tiles touches two lines in each of `mc` rows a row stride apart
/// (measured on 16 x 512 x 512 x 64, one Zen 4 core: the tile stores waited on those lines).
/// The order of the tiles does not change a bit of the result.
/// With `p.unit_packs_b`, the unit packs its panels of each k block into `bp` first: they
/// are then still in L2 when its strips meet them, where panels packed in a phase of their
/// own went out to memory and came back (mlp_train's 256-row dots pack 4 MiB of B).
#[allow(clippy::too_many_arguments)]
unsafe fn run_unit(p: &Plan, ap: *mut u32, bp: *mut u32, b: i64, r0: i64, r1: i64, j0: i64, j1: i64) {
    let g = &p.g;
    let rows = r1 - r0;
    let nstrips = ceil_div(rows, g.mr);
    let strip_pass = strip_pass(p.isa, j1 - j0, p.panel());
    for pcb in 0..p.k_blocks {
        let kcv = g.kc.min(g.k - pcb * g.kc);
        let ap = if p.ap_shared.is_null() { ap } else { unsafe { shared_a::block(p, b, r0 / p.mc, pcb) } };
        // Panel `j0` of this k block; the unit's other panels follow it.
        let first_panel = (b * p.k_blocks + pcb) * p.panels + j0;
        let b_panels = if p.unit_packs_b {
            unsafe { pack_b_panels(p, first_panel, first_panel + (j1 - j0), bp) };
            bp
        } else {
            unsafe { p.bp.add((first_panel * p.panel()) as usize) }
        };
        for is in (0..nstrips).filter(|_| !p.direct_a && p.ap_shared.is_null()) {
            let first = is * g.mr;
            let dst = unsafe { ap.add((first * kcv) as usize) };
            let valid = (rows - first).min(g.mr);
            let offset = g.batch_offset(b, g.a_batch) + (r0 + first) * g.a_row;
            unsafe { pack_operand(p, g.a, offset, pcb * g.kc, g.a_row, g.a_col, dst, valid, kcv, g.mr) };
        }
        let last = pcb + 1 == p.k_blocks;
        let tile = |is: i64, js: i64| unsafe { run_tile(p, ap, b_panels.add(((js - j0) * p.panel()) as usize), b, r0, rows, pcb, is, js) };
        if strip_pass {
            for is in 0..nstrips {
                (j0..j1).for_each(|js| tile(is, js));
                if last {
                    let first_row = r0 + is * g.mr;
                    unsafe { g.finish(b, first_row, (first_row + g.mr).min(r1), j0 * p.nr, (j1 * p.nr).min(g.n)) };
                }
            }
        } else {
            for js in j0..j1 {
                (0..nstrips).for_each(|is| tile(is, js));
                // The panel's column strip of the block is final after the last k block:
                // finish it now, while the micro-kernels' stores are still in L1 (rows x nr
                // words, 12-24 KiB), instead of in a later pass over the whole result from
                // memory.
                // A whole-row epilogue runs after the last panel, on the block's rows (then
                // in L2).
                if last {
                    let first_col = js * p.nr;
                    unsafe { g.finish(b, r0, r1, first_col, (first_col + p.nr).min(g.n)) };
                }
            }
        }
    }
}

/// The tile of strip `is` (of the unit's `rows` rows from `r0`) and B panel `js` (packed at
/// `b_ptr`), k block `pcb`: stored on the first k block, added to C on later ones.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn run_tile(p: &Plan, ap: *mut u32, b_ptr: *const u32, b: i64, r0: i64, rows: i64, pcb: i64, is: i64, js: i64) {
    let g = &p.g;
    let (pc, first_row, first_col) = (pcb * g.kc, is * g.mr, js * p.nr);
    let kcv = g.kc.min(g.k - pc);
    let rows_here = (rows - first_row).min(g.mr);
    let cols_here = (g.n - first_col).min(p.nr);
    // C's elements (f32 or s32) as 4-byte words.
    let c_ptr = unsafe { (g.c as *mut u32).offset((g.batch_offset(b, g.c_batch) + (r0 + first_row) * g.c_row + first_col) as isize) };
    if p.direct_a {
        let offset = g.batch_offset(b, g.a_batch) + (r0 + first_row) * g.a_row + pc;
        let a = unsafe { (g.a as *const f32).offset(offset as isize) };
        unsafe { p.uk.call_direct(a, g.a_row as usize, b_ptr, c_ptr, kcv as usize, g.c_row as usize, rows_here as usize, cols_here as usize, pcb > 0) };
    } else {
        let a_ptr = unsafe { ap.add((first_row * kcv) as usize) };
        unsafe { p.uk.call(a_ptr, b_ptr, c_ptr, kcv as usize, g.c_row as usize, rows_here as usize, cols_here as usize, pcb > 0) };
    }
}

/// How a GEMM's work is cut into units for the threads: A blocks of `strips` register strips
/// each, every block's B panels split into `n_parts` ranges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Share {
    strips: i64,
    n_parts: i64,
}

/// Units for `threads` threads: at least four per thread (so that they still share out evenly
/// when one thread starts late or is preempted on a loaded machine) and a multiple of
/// `threads` where possible: the threads run at the same speed on an idle machine, and with 9
/// units (a 512-row A in three blocks, three panel ranges each: transformer_block's and
/// mlp_train's dots) one thread ran a fifth unit while the other idled, 11% of the wall time.
/// Among such splits the one with the fewest panel ranges is taken: every range reads its
/// block's packed A once more (packed once, `shared_a.rs`, but into the other core's caches),
/// while one more (smaller) A block only reads the B panels once more, from L2 or L3. `fit` is the strips an A block may have ([`block_rows`]); blocks stay of one size.
fn share_units(strips: i64, fit: i64, batch: i64, panels: i64, threads: i64) -> Share {
    let blocks_of = |size: i64| ceil_div(strips, size);
    let base = ceil_div(strips, fit.max(1));
    let want = 4 * threads;
    for n_parts in 1..=panels {
        for wanted_blocks in base..=(base + threads - 1).min(strips) {
            let size = ceil_div(strips, wanted_blocks);
            let units = batch * blocks_of(size) * n_parts;
            if units >= want && units % threads == 0 {
                return Share { strips: size, n_parts };
            }
        }
    }
    // No even split (too few panels): the most units the panels allow, and if that is still
    // fewer than four per thread, smaller blocks. A 1024 x 10 weight gradient (one panel, K =
    // 256: three blocks of 57 strips) ran as three units on two threads, one thread doing two.
    // With few panels a block's B panels are few too, so reading them once per block more
    // costs little.
    let size = ceil_div(strips, base);
    let n_parts = ceil_div(want, batch * blocks_of(size)).clamp(1, panels);
    if batch * blocks_of(size) * n_parts >= want {
        return Share { strips: size, n_parts };
    }
    let blocks = ceil_div(want, batch * n_parts).min(strips);
    Share { strips: ceil_div(strips, blocks), n_parts }
}

/// Panel ranges per batch when A is one block: the fewest (from `least`, which keeps a unit's
/// panels within [`UNIT_B_BYTES`]) that make at least four units per thread, a multiple of the
/// threads (as [`share_units`] wants); `None` when the panels are too few for that.
fn panel_parts(batch: i64, panels: i64, threads: i64, least: i64) -> Option<i64> {
    (least..=panels).find(|&parts| batch * parts >= 4 * threads && (batch * parts) % threads == 0)
}

/// Rows of an A block: `mc x depth` packed words ([`A_BLOCK_BYTES`]), a multiple of `mr`.
fn block_rows(mr: i64, depth: i64, m: i64) -> i64 {
    let fit = (A_BLOCK_BYTES / (4 * depth.max(1)) / mr).max(1);
    // Blocks of equal size (256 rows are two of 128, not 186 and 70): units of one size
    // share out evenly.
    let strips = ceil_div(m, mr);
    ceil_div(strips, ceil_div(strips, fit)) * mr
}

fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// Scratch memory from the runtime's block cache, given back on drop.
pub(crate) struct Scratch {
    pub(crate) ptr: *mut u8,
    len: usize,
}

impl Scratch {
    /// `len` bytes, or `None` with this thread's last error set.
    pub(crate) fn new(len: usize) -> Option<Scratch> {
        if len == 0 {
            return Some(Scratch { ptr: NonNull::<f32>::dangling().as_ptr() as *mut u8, len });
        }
        match crate::block_cache::allocate(len) {
            Some(p) => Some(Scratch { ptr: p.as_ptr(), len }),
            None => {
                let bytes = crate::limits::describe_bytes(len as u128);
                set_last_error(format!("{ALLOCATION_FAILURE} {bytes} of temporary memory"));
                None
            }
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.len > 0 {
            if let Some(p) = NonNull::new(self.ptr) {
                // SAFETY: allocated by block_cache::allocate with this length.
                unsafe { crate::block_cache::free(p, self.len) };
            }
        }
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod batch_tests;
