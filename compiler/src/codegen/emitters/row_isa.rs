//! Which of the runtime's precompiled row kernels (`hlojit_runtime::kernels::rows`) computes
//! the bits of the row loops hlojit would generate for the target, if any.
//!
//! The kernels repeat LLVM's vectorized loops, so they must have the vector width LLVM's loop
//! vectorizer picks: the widest registers, except that LLVM's tuning for Intel's AVX-512
//! CPUs prefers 256-bit vectors (8 lanes: the AVX2 kernels' order). AVX-512 CPUs listed in
//! neither list keep generated code (their vectorizer's choice is not known here);
//! `every_listed_cpu_vectorizes_rows_as_listed` (softmax_rows_tests.rs) checks both lists
//! against LLVM.

use crate::codegen::context::Codegen;
use hlojit_runtime::kernels::rows::RowIsa;

/// Set (to anything but `0`) to generate every row kernel (softmax, layernorm, row
/// reductions), for comparisons.
pub const GENERATED_ROWS_VARIABLE: &str = "HLOJIT_GENERATED_ROWS";

/// AVX-512 CPUs whose f32 loops LLVM vectorizes with 16 lanes.
pub const WIDE_AVX512_CPUS: [&str; 2] = ["znver4", "znver5"];

/// AVX-512 CPUs whose f32 loops LLVM vectorizes with 8 lanes (tuning "prefer-256-bit").
pub const NARROW_AVX512_CPUS: [&str; 12] = [
    "skylake-avx512",
    "cascadelake",
    "cooperlake",
    "cannonlake",
    "icelake-client",
    "icelake-server",
    "rocketlake",
    "tigerlake",
    "sapphirerapids",
    "emeraldrapids",
    "graniterapids",
    "x86-64-v4",
];

/// Whether `HLOJIT_GENERATED_ROWS` asks for generated row kernels.
fn generated_forced() -> bool {
    std::env::var_os(GENERATED_ROWS_VARIABLE).is_some_and(|v| v != "0")
}

/// The row kernels to call on `cg`'s target: x86-64 with AVX2 and FMA (the exp polynomial and
/// the variance round as FMAs), the vector width known.
pub fn row_isa(cg: &Codegen) -> Option<RowIsa> {
    if !cg.x86 || !cg.avx2 || !cg.fma || generated_forced() {
        return None;
    }
    match cg.simd_bytes {
        32 => Some(RowIsa::Avx2),
        64 if WIDE_AVX512_CPUS.contains(&cg.cpu.as_str()) => Some(RowIsa::Avx512),
        64 if NARROW_AVX512_CPUS.contains(&cg.cpu.as_str()) => Some(RowIsa::Avx2),
        _ => None,
    }
}

/// Whether some row kernel repeats the generated loops for rows of `cols` (on some target).
pub fn any_accepts_row(cols: i64) -> bool {
    RowIsa::ALL.iter().any(|isa| isa.accepts_row(cols))
}
