//! What identifies a compiled executable: the module's canonical text (the printer's output,
//! so spacing, comments and instruction ids of the input do not matter), the machine code is
//! for (triple, CPU and feature string, the host's resolved), the options that change the code
//! (profiling timers) and the compiler that generated it (crate version and a hash of its
//! sources, see `build.rs`). The module is taken as given, before any pass: a hit skips them.

use crate::backend::target::TargetOptions;
use crate::error::Result;
use crate::pipeline::CompileOptions;
use crate::hlo::Module;
use inkwell::targets::TargetMachine;
use std::sync::OnceLock;

/// The compiler's identity: version and source hash.
pub fn compiler_build() -> String {
    format!("hlojit {} build {}", env!("CARGO_PKG_VERSION"), env!("HLOJIT_BUILD_ID"))
}

/// A compilation's cache key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    /// Compiler build and target, one `name: value` per line.
    pub header: String,
    /// The module as the printer writes it.
    pub module: String,
    /// 128-bit hash of header and module: the on-disk entry's file name.
    pub hash: u128,
}

impl Fingerprint {
    /// The key of `module` compiled with `options`.
    pub fn of(module: &Module, options: &CompileOptions) -> Result<Fingerprint> {
        let header = header(options);
        let module = module.to_string();
        let hash = hash128(&[header.as_bytes(), module.as_bytes()]);
        Ok(Fingerprint { header, module, hash })
    }

    /// The hash as 32 hexadecimal digits.
    pub fn hex(&self) -> String {
        format!("{:032x}", self.hash)
    }
}

/// What identifies the code compiled with `options` besides the module: the compiler build
/// and the target, one `name: value` line each (`compiler`, `triple`, `cpu`, `features`),
/// then the options that change the code.
pub(crate) fn header(options: &CompileOptions) -> String {
    let (triple, cpu, features) = resolved_target(&options.target);
    let mut header = format!("compiler: {}\ntriple: {triple}\ncpu: {cpu}\nfeatures: {features}\n", compiler_build());
    if crate::codegen::emitters::generated_gemm_forced() {
        header.push_str("gemm: generated\n");
    }
    // Custom-call targets are not part of the key: they are resolved by name on load.
    // Parallel compilation and pass verification give the same code.
    if options.profile {
        header.push_str("profile: timers\n");
    }
    header
}

/// The host's triple, CPU name and feature string.
pub(crate) fn host_target() -> &'static (String, String, String) {
    static HOST: OnceLock<(String, String, String)> = OnceLock::new();
    HOST.get_or_init(|| {
        (
            TargetMachine::get_default_triple().as_str().to_string_lossy().into_owned(),
            crate::backend::target::host_cpu().0.clone(),
            crate::backend::target::host_cpu().1.clone(),
        )
    })
}

/// The target as LLVM will see it: the host's CPU name and features filled in where the
/// options leave them to the host (as `TargetOptions::machine` does).
fn resolved_target(t: &TargetOptions) -> (String, String, String) {
    let host = host_target();
    match &t.triple {
        // A named CPU brings its own features, not the host's.
        None => (
            host.0.clone(),
            t.cpu.clone().unwrap_or_else(|| host.1.clone()),
            t.features.clone().unwrap_or_else(|| if t.cpu.is_none() { host.2.clone() } else { String::new() }),
        ),
        Some(triple) => (triple.clone(), t.cpu.clone().unwrap_or_else(|| "generic".into()), t.features.clone().unwrap_or_default()),
    }
}

/// FNV-1a with a 128-bit state: a fixed algorithm, so the same key names the same file in
/// every process and every build of hlojit. It only names entries; an entry's full key is
/// stored in it and compared on load, so a collision is a miss, never wrong code.
pub fn hash128(parts: &[&[u8]]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let mut h = OFFSET;
    for part in parts {
        for &b in part.iter() {
            h ^= b as u128;
            h = h.wrapping_mul(PRIME);
        }
        // Parts are delimited, so ("ab", "c") and ("a", "bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(PRIME);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::text::parse_module;

    const M: &str = "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] negate(x)\n}\n";

    #[test]
    fn spacing_of_the_input_does_not_change_the_key() {
        let a = parse_module(M).unwrap();
        let b = parse_module("HloModule m\n\nENTRY   e {  x = f32[4] parameter(0)\n ROOT y = f32[4] negate(x) }").unwrap();
        let o = CompileOptions::default();
        assert_eq!(Fingerprint::of(&a, &o).unwrap(), Fingerprint::of(&b, &o).unwrap());
    }

    #[test]
    fn module_and_target_change_the_key() {
        let a = parse_module(M).unwrap();
        let b = parse_module(&M.replace("negate", "abs")).unwrap();
        let host = CompileOptions::default();
        let haswell = CompileOptions {
            target: TargetOptions { cpu: Some("haswell".into()), features: Some("+avx2".into()), ..TargetOptions::default() },
            ..CompileOptions::default()
        };
        let ka = Fingerprint::of(&a, &host).unwrap();
        assert_ne!(ka.hash, Fingerprint::of(&b, &host).unwrap().hash);
        assert_ne!(ka.hash, Fingerprint::of(&a, &haswell).unwrap().hash);
        // Profiling timers are other code; compiling on one thread is the same code.
        assert_ne!(ka.hash, Fingerprint::of(&a, &CompileOptions { profile: true, ..host.clone() }).unwrap().hash);
        assert_eq!(ka.hash, Fingerprint::of(&a, &CompileOptions { parallel_compile: false, ..host.clone() }).unwrap().hash);
        assert!(ka.header.contains(env!("CARGO_PKG_VERSION")));
    }

    #[test]
    fn the_hash_is_fixed_fnv1a() {
        // Pinned: a change of algorithm would orphan every entry on disk.
        assert_eq!(hash128(&[]), 0x6c62272e07bb014262b821756295c58d);
        assert_ne!(hash128(&[b"ab", b"c"]), hash128(&[b"a", b"bc"]));
    }
}
