//! AOT: `hlojit compile` writes an object and a header; a C program and a Rust program link the
//! object with the runtime library alone (no LLVM) and their results match the JIT's bit for
//! bit. This test binary itself does not link LLVM: it drives the `hlojit` binary.

use hlojit_runtime::{npy, ArrayLiteral, ElementType};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("tools/ is in the repository").to_path_buf()
}

fn hlojit() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_hlojit"))
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The runtime's static library from this build (`hlojit_tools::runtime_library`), copied to
/// `dest` for `-L dest -lhlojit_runtime`.
fn runtime_library(dest: &Path) -> PathBuf {
    let profile_dir = hlojit().parent().expect("the binary lives in target/<profile>").to_path_buf();
    let source = hlojit_tools::runtime_library::runtime_static_library(&profile_dir)
        .unwrap_or_else(|| panic!("no libhlojit_runtime.a in {}: run cargo build", profile_dir.display()));
    let lib = dest.join("libhlojit_runtime.a");
    std::fs::copy(&source, &lib).expect("copying the runtime library");
    lib
}

/// Compiles `examples/aot-c/model.hlo` into `dir/model.o` and `dir/model.h`.
fn compile_example(dir: &Path) {
    run(Command::new(hlojit())
        .arg("compile")
        .arg(repo().join("examples/aot-c/model.hlo"))
        .args(["--emit", "obj", "--name", "model", "-o"])
        .arg(dir.join("model.o"))
        .arg("--header")
        .arg(dir.join("model.h")));
}

/// The link line the header gives for `examples/aot-c` with `dir/model.o` and the runtime
/// library in `lib_dir`: the object, the runtime library, pthread, dl, libm (no LAPACK: the
/// runtime opens it when a LAPACK target first runs).
fn link_example(dir: &Path, lib_dir: &Path, program: &Path) -> Command {
    let mut cc = Command::new("cc");
    cc.args(["-O2", "-Wall", "-Werror", "-I"])
        .arg(dir)
        .arg("-I")
        .arg(repo().join("ffi/include"))
        .arg(repo().join("examples/aot-c/main.c"))
        .arg(repo().join("examples/aot-c/target.c"))
        .arg(dir.join("model.o"))
        .arg("-L")
        .arg(lib_dir)
        .args(["-lhlojit_runtime", "-lpthread", "-ldl", "-lm", "-o"])
        .arg(program);
    cc
}

/// Deterministic inputs: x f32[4,8], b f32[8], spanning both signs and GELU's curved part.
fn inputs(scale: f32) -> (Vec<f32>, Vec<f32>) {
    let x = (0..32).map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.37 * scale).collect();
    let b = (0..8).map(|i| (i as f32 - 3.5) * 0.2).collect();
    (x, b)
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The JIT's results (raw bytes of each output) for the same inputs, via `hlojit run`.
fn jit_results(dir: &Path, x: &[f32], b: &[f32], plugin: &Path) -> Vec<Vec<u8>> {
    let xi = dir.join("x.npy");
    let bi = dir.join("b.npy");
    npy::write(&xi, &ArrayLiteral::from_slice(&[4, 8], x).unwrap()).unwrap();
    npy::write(&bi, &ArrayLiteral::from_slice(&[8], b).unwrap()).unwrap();
    let out = dir.join("jit");
    run(Command::new(hlojit())
        .arg("run")
        .arg(repo().join("examples/aot-c/model.hlo"))
        .arg("--input")
        .arg(&xi)
        .arg("--input")
        .arg(&bi)
        .arg("--output-dir")
        .arg(&out)
        .arg("--plugin")
        .arg(plugin));
    (0..2)
        .map(|i| npy::read(&out.join(format!("out{i}.npy")), Some(ElementType::F32)).unwrap().bytes().to_vec())
        .collect()
}

/// Runs an AOT program with raw input files; its raw outputs, or its stderr if it failed.
fn run_aot(program: &Path, dir: &Path, x: &[f32], b: &[f32]) -> Result<Vec<Vec<u8>>, String> {
    let files: Vec<PathBuf> = ["x.bin", "b.bin", "s.bin", "e.bin"].iter().map(|f| dir.join(f)).collect();
    std::fs::write(&files[0], f32_bytes(x)).unwrap();
    std::fs::write(&files[1], f32_bytes(b)).unwrap();
    let out = Command::new(program).args(&files).output().expect("running the AOT program");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(files[2..].iter().map(|f| std::fs::read(f).unwrap()).collect())
}

/// The custom-call target as a plugin, for the JIT side of the comparison.
fn target_plugin(dir: &Path) -> PathBuf {
    let lib = dir.join("libtarget.so");
    run(Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-I"])
        .arg(repo().join("ffi/include"))
        .arg(repo().join("examples/aot-c/target.c"))
        .arg("-o")
        .arg(&lib)
        .arg("-lm"));
    lib
}

#[test]
fn c_program_links_the_object_and_matches_the_jit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    compile_example(d);
    let header = std::fs::read_to_string(d.join("model.h")).unwrap();
    for want in [
        "int model(const void* const* args, void* const* results);",
        "#define MODEL_NUM_ARGS 2",
        "#define MODEL_NUM_RESULTS 2",
        "#define MODEL_ARG0_BYTES 128",
        "#define MODEL_ARG1_BYTES 32",
        "/* Result 1: f32[4,8]{1,0} */",
        "-lhlojit_runtime -lpthread -ldl -lm",
    ] {
        assert!(header.contains(want), "header lacks {want:?}:\n{header}");
    }
    runtime_library(d);
    let program = d.join("aot_example");
    run(&mut link_example(d, d, &program));
    let plugin = target_plugin(d);
    let (x, b) = inputs(1.0);
    let aot = run_aot(&program, d, &x, &b).unwrap();
    assert_eq!(aot, jit_results(d, &x, &b, &plugin), "AOT and JIT results differ");
    // s = 2 * gelu(x + b): spot-check one element against the formula.
    let z = x[1] + b[1];
    let gelu = 0.5 * z * (1.0 + (0.797_884_6 * (z + 0.044715 * z * z * z)).tanh());
    let s1 = f32::from_le_bytes(aot[0][4..8].try_into().unwrap());
    assert!((s1 - 2.0 * gelu).abs() <= 1e-5 * (1.0 + gelu.abs()), "s[1] = {s1}, expected about {}", 2.0 * gelu);
    // A failing custom call makes the function return non-zero with the target's message.
    let (x, b) = inputs(100.0);
    let err = run_aot(&program, d, &x, &b).unwrap_err();
    assert!(err.contains("model failed: custom call 'checked_scale' failed: checked_scale: value"), "{err}");
    // The built-in demo inputs run too.
    let demo = run(&mut Command::new(&program));
    assert!(String::from_utf8_lossy(&demo.stdout).starts_with("result 0 (f32[4,8]{1,0}):"));
}

/// The object references the ABI identity of the runtime its compiler was built with, and no
/// other; this build's runtime library defines it. The same library with only that symbol
/// renamed (as a library built from other runtime sources names it) does not link, even with
/// `--gc-sections`, and the linker names the symbol.
#[test]
fn object_refuses_a_runtime_library_of_another_build() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    compile_example(d);
    let symbols = |args: &[&str], file: &Path| -> Vec<String> {
        let out = run(Command::new("nm").args(args).arg(file));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines().filter_map(|l| l.split_whitespace().last()).filter(|s| s.starts_with("hlojit_rt_abi_")).map(str::to_string).collect()
    };
    let identity = hlojit_runtime::abi_identity::ABI_SYMBOL;
    assert_eq!(symbols(&["-u"], &d.join("model.o")), [identity], "the object's undefined identity symbols");
    let library = runtime_library(d);
    assert_eq!(symbols(&["--defined-only"], &library), [identity], "the runtime library's identity symbols");
    let header = std::fs::read_to_string(d.join("model.h")).unwrap();
    assert!(header.contains(&format!("undefined reference to `{identity}'")), "{header}");

    let other = d.join("other");
    std::fs::create_dir(&other).unwrap();
    let other_library = other.join("libhlojit_runtime.a");
    std::fs::copy(&library, &other_library).unwrap();
    let renamed = format!("{identity}=hlojit_rt_abi_{}", "0".repeat(16));
    run(Command::new("objcopy").arg("--redefine-sym").arg(renamed).arg(&other_library));
    let out = link_example(d, &other, &d.join("mismatched")).arg("-Wl,--gc-sections").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "linked with a runtime of another identity");
    assert!(stderr.contains("undefined reference to") && stderr.contains(identity), "the linker's message: {stderr}");
    // Nothing else was missing: the identity is the only symbol the linker names.
    let named: Vec<&str> = stderr.lines().filter(|l| l.contains("undefined reference")).collect();
    assert!(named.iter().all(|l| l.contains(identity)), "{stderr}");
    run(link_example(d, d, &d.join("matched")).arg("-Wl,--gc-sections"));
}

#[test]
fn assembly_and_llvm_ir_output() {
    let dir = tempfile::tempdir().unwrap();
    let model = repo().join("examples/aot-c/model.hlo");
    let asm = dir.path().join("model.s");
    run(Command::new(hlojit())
        .arg("compile")
        .arg(&model)
        .args(["--emit", "asm", "--name", "my_model", "-o"])
        .arg(&asm));
    let asm = std::fs::read_to_string(asm).unwrap();
    assert!(asm.lines().any(|l| l.trim_end() == "my_model:"), "no my_model label in the assembly");
    let ir = dir.path().join("model.ll");
    run(Command::new(hlojit())
        .arg("compile")
        .arg(&model)
        .args(["--emit", "llvm-ir", "--name", "my_model", "-o"])
        .arg(&ir));
    let ir = std::fs::read_to_string(ir).unwrap();
    assert!(ir.contains("define i32 @my_model(ptr"), "no my_model definition in the IR");
    assert!(ir.contains("@checked_scale"), "the custom-call target is an external symbol");
    // A name that is no C identifier is refused.
    let out = Command::new(hlojit())
        .arg("compile")
        .arg(&model)
        .args(["--name", "my-model", "-o"])
        .arg(dir.path().join("x.o"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a C identifier"));
}

#[test]
fn rust_program_links_the_object_through_its_build_script() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = repo().join("target/examples");
    run(Command::new(env!("CARGO"))
        .args(["build", "--release", "--quiet", "--manifest-path"])
        .arg(repo().join("examples/aot-rust/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .env("HLOJIT", hlojit()));
    let program = target.join("release/hlojit-aot-example");
    let plugin = target_plugin(d);
    let (x, b) = inputs(0.7);
    let aot = run_aot(&program, d, &x, &b).unwrap();
    assert_eq!(aot, jit_results(d, &x, &b, &plugin), "AOT (Rust) and JIT results differ");
    let (x, b) = inputs(100.0);
    let err = run_aot(&program, d, &x, &b).unwrap_err();
    assert!(err.contains("custom call 'checked_scale' failed: checked_scale: value"), "{err}");
}

/// A bf16 dot compiled for Zen 4 (AVX512-BF16) calls the runtime's pair GEMM, and compiled for
/// the same CPU with AMX features added the runtime's AMX GEMM (as for Sapphire Rapids, without
/// the instructions this CPU lacks); both objects link with the runtime library alone and,
/// where this CPU runs AVX512-BF16, give the JIT's bits (the AMX entry point through its
/// fallback where the CPU has no AMX).
#[test]
fn bf16_dot_for_avx512_bf16_links_the_runtime_pair_gemm() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let hlo = d.join("bf16_dot.hlo");
    std::fs::write(
        &hlo,
        "HloModule bf16_dot\nENTRY e { a = bf16[70,301] parameter(0) b = bf16[301,90] parameter(1)\n\
         ROOT d = f32[70,90] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0} }\n",
    )
    .unwrap();
    let main = d.join("main.c");
    // Reads the two operands' raw bits, writes the result's.
    std::fs::write(
        &main,
        "#include <stdio.h>\n#include <stdint.h>\n#include \"bf16_dot.h\"\n\
         static uint16_t a[70 * 301], b[301 * 90]; static float c[70 * 90];\n\
         int main(int argc, char** argv) {\n\
           if (argc != 4) return 2;\n\
           FILE* f = fopen(argv[1], \"rb\"); if (!f || fread(a, 2, 70 * 301, f) != 70 * 301) return 3; fclose(f);\n\
           f = fopen(argv[2], \"rb\"); if (!f || fread(b, 2, 301 * 90, f) != 301 * 90) return 3; fclose(f);\n\
           const void* args[2] = {a, b}; void* results[1] = {c};\n\
           if (bf16_dot(args, results) != 0) return 4;\n\
           f = fopen(argv[3], \"wb\"); if (!f || fwrite(c, 4, 70 * 90, f) != 70 * 90) return 5; fclose(f);\n\
           return 0;\n}\n",
    )
    .unwrap();
    runtime_library(d);
    // The program for `--cpu znver4` with these features (the host's when none), which must
    // call `symbol`.
    let build = |name: &str, features: Option<&str>, symbol: &str| -> PathBuf {
        let target = |cmd: &mut Command| {
            cmd.arg("compile").arg(&hlo).args(["--cpu", "znver4"]);
            if let Some(f) = features {
                cmd.args(["--features", f]);
            }
        };
        let mut ir = Command::new(hlojit());
        target(&mut ir);
        run(ir.args(["--emit", "llvm-ir", "-o"]).arg(d.join(format!("{name}.ll"))));
        let ir = std::fs::read_to_string(d.join(format!("{name}.ll"))).unwrap();
        assert!(ir.contains(symbol) && !ir.contains("dpbf16ps"), "{name}: the runtime's {symbol}");
        let mut object = Command::new(hlojit());
        target(&mut object);
        run(object.args(["--name", "bf16_dot", "-o"]).arg(d.join(format!("{name}.o"))).arg("--header").arg(d.join("bf16_dot.h")));
        let program = d.join(name);
        run(Command::new("cc")
            .args(["-O2", "-Wall", "-Werror", "-I"])
            .arg(d)
            .arg(&main)
            .arg(d.join(format!("{name}.o")))
            .arg("-L")
            .arg(d)
            .args(["-lhlojit_runtime", "-lpthread", "-ldl", "-lm", "-o"])
            .arg(&program));
        program
    };
    let pairs = build("bf16_dot", None, "hlojit_rt_gemm_bf16_pairs_avx512");
    let amx_features = "+avx,+avx2,+fma,+avx512f,+avx512bw,+avx512vl,+avx512dq,+avx512bf16,+avx512vnni,+amx-tile,+amx-bf16,+amx-int8";
    let amx = build("bf16_dot_amx", Some(amx_features), "hlojit_rt_gemm_bf16_amx");
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512bf16") && std::arch::is_x86_feature_detected!("avx512bw") {
        // Fractions with rounding in every pair sum.
        let bits = |n: usize, seed: usize| -> Vec<u16> { (0..n).map(|i| (((i * 7919 + seed) % 2001) as f32 / 1000.0 - 1.0).to_bits() >> 16).map(|x| x as u16).collect() };
        let (a, b) = (bits(70 * 301, 1), bits(301 * 90, 2));
        let files: Vec<PathBuf> = ["a.bin", "b.bin", "c.bin"].iter().map(|f| d.join(f)).collect();
        std::fs::write(&files[0], a.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        std::fs::write(&files[1], b.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        run(Command::new(&pairs).args(&files));
        let aot = std::fs::read(&files[2]).unwrap();
        run(Command::new(&amx).args(&files));
        let aot_amx = std::fs::read(&files[2]).unwrap();
        let (ai, bi) = (d.join("a.npy"), d.join("b.npy"));
        npy::write(&ai, &ArrayLiteral::from_bytes(ElementType::BF16, &[70, 301], &std::fs::read(&files[0]).unwrap()).unwrap()).unwrap();
        npy::write(&bi, &ArrayLiteral::from_bytes(ElementType::BF16, &[301, 90], &std::fs::read(&files[1]).unwrap()).unwrap()).unwrap();
        let out = d.join("jit");
        run(Command::new(hlojit()).arg("run").arg(&hlo).arg("--input").arg(&ai).arg("--input").arg(&bi).arg("--output-dir").arg(&out));
        let jit = npy::read(&out.join("out0.npy"), Some(ElementType::F32)).unwrap().bytes().to_vec();
        assert_eq!(aot, jit, "AOT and JIT results differ");
        assert_eq!(aot_amx, jit, "AOT for AMX and JIT results differ");
    }
}

/// A LAPACK target (jnp.linalg.cholesky's `lapack_spotrf_ffi`) links from the runtime library
/// alone: the object defines the target weakly, handing the call to the runtime's built-in
/// handler, and matches XLA's numbers; a program's own definition of the name replaces it.
#[test]
fn lapack_target_links_from_the_runtime_library_unless_the_program_defines_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let case = repo().join("tests/linalg/cases/cholesky_f32");
    run(Command::new(hlojit()).arg("compile").arg(case.join("module.hlo")).args(["--name", "chol", "-o"]).arg(d.join("chol.o")).arg("--header").arg(d.join("chol.h")));
    let main = d.join("main.c");
    // Reads the operand's raw bytes, writes the result's.
    std::fs::write(
        &main,
        "#include <stdio.h>\n#include \"chol.h\"\n\
         static float a[CHOL_ARG0_ELEMENTS], l[CHOL_ARG0_ELEMENTS];\n\
         int main(int argc, char** argv) {\n\
           if (argc != 3) return 2;\n\
           FILE* f = fopen(argv[1], \"rb\"); if (!f || fread(a, 4, CHOL_ARG0_ELEMENTS, f) != CHOL_ARG0_ELEMENTS) return 3; fclose(f);\n\
           const void* args[1] = {a}; void* results[1] = {l};\n\
           if (chol(args, results) != 0) return 4;\n\
           f = fopen(argv[2], \"wb\"); if (!f || fwrite(l, 4, CHOL_ARG0_ELEMENTS, f) != CHOL_ARG0_ELEMENTS) return 5; fclose(f);\n\
           return 0;\n}\n",
    )
    .unwrap();
    // A target that leaves its in-place operand as it is and succeeds.
    let own = d.join("own_target.c");
    std::fs::write(&own, "void* lapack_spotrf_ffi(void* frame) { (void)frame; return 0; }\n").unwrap();
    runtime_library(d);
    let floats = |bytes: &[u8]| -> Vec<f32> { bytes.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect() };
    let input = npy::read(&case.join("in0.npy"), Some(ElementType::F32)).unwrap();
    let a = floats(input.bytes());
    std::fs::write(d.join("a.bin"), input.bytes()).unwrap();
    let link_and_run = |extra: &[&Path], program: &str| -> Vec<f32> {
        let program = d.join(program);
        run(Command::new("cc")
            .args(["-O2", "-Wall", "-Werror", "-I"])
            .arg(d)
            .arg(&main)
            .args(extra)
            .arg(d.join("chol.o"))
            .arg("-L")
            .arg(d)
            .args(["-lhlojit_runtime", "-lpthread", "-ldl", "-lm", "-o"])
            .arg(&program));
        run(Command::new(&program).arg(d.join("a.bin")).arg(d.join("l.bin")));
        floats(&std::fs::read(d.join("l.bin")).unwrap())
    };
    let xla = floats(npy::read(&case.join("out0.npy"), Some(ElementType::F32)).unwrap().bytes());
    let builtin = link_and_run(&[], "chol_builtin");
    for (i, (&got, &want)) in builtin.iter().zip(&xla).enumerate() {
        assert!((got - want).abs() <= 2e-5 + 2e-4 * want.abs(), "element {i}: {got} vs XLA's {want}");
    }
    // With the program's target the result is the lower triangle of (a + a^T) / 2, untouched.
    let own_result = link_and_run(&[own.as_path()], "chol_own");
    for (i, &got) in own_result.iter().enumerate() {
        let (b, r, c) = (i / 16, i / 4 % 4, i % 4);
        let want = if r >= c { (a[b * 16 + r * 4 + c] + a[b * 16 + c * 4 + r]) / 2.0 } else { 0.0 };
        assert_eq!(got, want, "element {i} with the program's own target");
    }
}
