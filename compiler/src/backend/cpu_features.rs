//! The x86 features a named CPU implies, for the ones hlojit's code generation asks about.
//!
//! LLVM derives a CPU's features from its name when it generates code (`--cpu haswell` alone
//! means Haswell's instructions), but the C API reports only the feature string it was given.
//! hlojit's own choices — vector width of its micro-kernels, which precompiled runtime kernel a
//! dot calls — read the features too, so for a CPU named without a feature list they come from
//! this table (facts from LLVM's X86 processor definitions). A CPU not listed implies none of
//! them: its code is still right for it, only without the runtime's specialized kernels.

/// The features this table knows, each a flag bit.
const FEATURES: [&str; 10] =
    ["avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vnni", "avx512bf16", "amx-tile", "amx-bf16", "amx-int8"];

const AVX: &[&str] = &["avx"];
const AVX2: &[&str] = &["avx", "avx2", "fma"];
const AVX512: &[&str] = &["avx", "avx2", "fma", "avx512f", "avx512bw"];
const AVX512_VNNI: &[&str] = &["avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vnni"];
const AVX512_BF16: &[&str] = &["avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vnni", "avx512bf16"];
const AMX: &[&str] =
    &["avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vnni", "avx512bf16", "amx-tile", "amx-bf16", "amx-int8"];

/// CPU names (LLVM's) and the features of [`FEATURES`] they have.
const CPUS: &[(&[&str], &[&str])] = &[
    (&["sandybridge", "ivybridge", "corei7-avx", "core-avx-i", "btver2", "bdver1"], AVX),
    (&["bdver2", "bdver3"], &["avx", "fma"]),
    (
        &[
            "x86-64-v3", "haswell", "core-avx2", "broadwell", "skylake", "alderlake", "raptorlake", "meteorlake",
            "gracemont", "arrowlake", "arrowlake-s", "lunarlake", "bdver4", "znver1", "znver2", "znver3",
        ],
        AVX2,
    ),
    (&["x86-64-v4", "skylake-avx512", "skx", "cannonlake"], AVX512),
    (&["cascadelake", "icelake-client", "icelake-server", "rocketlake", "tigerlake"], AVX512_VNNI),
    (&["cooperlake", "znver4", "znver5"], AVX512_BF16),
    (&["sapphirerapids", "emeraldrapids", "graniterapids", "graniterapids-d"], AMX),
];

/// Whether CPU `cpu` has `feature`; `None` when the table does not know the feature.
pub fn implies(cpu: &str, feature: &str) -> Option<bool> {
    FEATURES.contains(&feature).then(|| CPUS.iter().any(|(names, features)| names.contains(&cpu) && features.contains(&feature)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpus_imply_their_generation_s_features() {
        assert_eq!(implies("haswell", "avx2"), Some(true));
        assert_eq!(implies("haswell", "avx512f"), Some(false));
        assert_eq!(implies("x86-64", "avx"), Some(false));
        assert_eq!(implies("skylake-avx512", "avx512vnni"), Some(false));
        assert_eq!(implies("znver4", "avx512bf16"), Some(true));
        assert_eq!(implies("znver4", "amx-tile"), Some(false));
        assert_eq!(implies("sapphirerapids", "amx-bf16"), Some(true));
        assert_eq!(implies("haswell", "sse4.2"), None);
    }

}
