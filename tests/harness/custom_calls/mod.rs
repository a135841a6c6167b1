//! Custom calls through every calling convention, with plugins built during the test run:
//! C targets (`cc`), typed-FFI handlers compiled against XLA's own headers from the jaxlib wheel
//! (`c++`), Rust targets registered with a registry or exported by a Rust plugin, and the
//! executable's own functions where the options allow them (never the C library's). Expected values are worked out by hand in each test from the
//! targets' definitions (`plugins/*.c`, `plugins/*.cc`).

mod jaxlib_lapack;

use hlojit::{parse_module, ArrayLiteral, CompileOptions, CustomCallRegistry, Error, Executable, Literal, ProcessSymbols};
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A directory for this run's build products (removed with the process's temp dir).
pub fn build_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temporary directory")).path()
}

/// Runs a build command; panics with its output if it fails.
pub fn run_build(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The C test plugin, built once per run.
fn abi_plugin() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let out = build_dir().join("libabi_plugin.so");
        run_build(
            Command::new("cc")
                .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-I"])
                .arg(repo().join("ffi/include"))
                .arg(repo().join("tests/harness/custom_calls/plugins/abi_plugin.c"))
                .arg("-o")
                .arg(&out)
                .arg("-lm"),
        );
        out
    })
}

/// jaxlib's FFI headers. The typed-FFI compatibility test needs them: a missing jaxlib is a
/// failure (`cargo xtask setup` installs it), not a reason to skip.
pub fn jax_include_dir() -> PathBuf {
    let out = Command::new("python3")
        .args(["-c", "import jax; print(jax.ffi.include_dir())"])
        .output()
        .expect("python3 is needed to find jaxlib's FFI headers (cargo xtask setup installs jax)");
    assert!(
        out.status.success(),
        "jax is not installed: run `cargo xtask setup` (or `pip install jax`): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    assert!(dir.join("xla/ffi/api/ffi.h").is_file(), "{} has no xla/ffi/api/ffi.h", dir.display());
    dir
}

/// The C++ handlers written with XLA's `ffi.h`, built once per run.
fn xla_plugin() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let out = build_dir().join("libxla_handlers.so");
        run_build(
            Command::new("c++")
                .args(["-std=c++17", "-shared", "-fPIC", "-O1", "-w", "-I"])
                .arg(jax_include_dir())
                .arg(repo().join("tests/harness/custom_calls/plugins/xla_handler.cc"))
                .arg("-o")
                .arg(&out),
        );
        out
    })
}

fn registry_with(plugins: &[&Path]) -> CustomCallRegistry {
    let r = CustomCallRegistry::new();
    for p in plugins {
        r.load_plugin(p).unwrap_or_else(|e| panic!("{e}"));
    }
    r
}

pub fn compile(text: &str, registry: &CustomCallRegistry) -> Result<Executable, Error> {
    let module = parse_module(text).expect("test module parses");
    Executable::compile(&module, &CompileOptions { custom_calls: registry.clone(), ..CompileOptions::default() })
}

pub fn f32s(dims: &[i64], v: &[f32]) -> Literal {
    ArrayLiteral::from_slice(dims, v).unwrap().into()
}

pub fn leaves_f64(l: &Literal) -> Vec<Vec<f64>> {
    l.leaves().iter().map(|a| (0..a.element_count()).map(|i| a.get_f64(i)).collect()).collect()
}

#[test]
fn original_abi_with_tuple_result_and_tuple_operand() {
    let r = registry_with(&[abi_plugin()]);
    let exe = compile(
        r#"HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  sp = (f32[4], f32[4]) custom-call(x, y), custom_call_target="sum_and_product"
  s = f32[4] get-tuple-element(sp), index=0
  p = f32[4] get-tuple-element(sp), index=1
  a = f32[2] slice(s), slice={[0:2]}
  b = s32[] constant(3)
  t = (f32[2], s32[]) tuple(a, b)
  q = f32[2] custom-call(t), custom_call_target="tuple_operand", api_version=API_VERSION_ORIGINAL
  ROOT out = (f32[4], f32[2]) tuple(p, q)
}"#,
        &r,
    )
    .unwrap();
    let out = exe.run_literals(&[f32s(&[4], &[1.0, 2.0, 3.0, 4.0]), f32s(&[4], &[0.5, -1.0, 2.0, 10.0])]).unwrap();
    // p = x * y; q = (x + y)[0..2] * 3 = [1.5, 1.0] * 3.
    assert_eq!(leaves_f64(&out), vec![vec![0.5, -2.0, 6.0, 40.0], vec![4.5, 3.0]]);
}

#[test]
fn status_returning_success_and_failure() {
    let r = registry_with(&[abi_plugin()]);
    let exe = compile(
        r#"HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  ROOT r = f32[4] custom-call(x), custom_call_target="checked_sqrt", api_version=API_VERSION_STATUS_RETURNING
}"#,
        &r,
    )
    .unwrap();
    let out = exe.run_literals(&[f32s(&[4], &[4.0, 9.0, 0.25, 0.0])]).unwrap();
    assert_eq!(leaves_f64(&out), vec![vec![2.0, 3.0, 0.5, 0.0]]);
    let err = exe.run_literals(&[f32s(&[4], &[4.0, -9.0, 1.0, 1.0])]).unwrap_err();
    assert_eq!(err.to_string(), "execution failed: custom call 'checked_sqrt' failed: negative input -9 at index 1");
    // The executable stays usable after a failure.
    assert_eq!(leaves_f64(&exe.run_literals(&[f32s(&[4], &[1.0; 4])]).unwrap()), vec![vec![1.0; 4]]);
}

#[test]
fn unified_abi_gets_the_backend_config_as_opaque() {
    let r = registry_with(&[abi_plugin()]);
    let text = |config: &str| {
        format!(
            "HloModule m\nENTRY e {{\n  x = f32[4] parameter(0)\n  ROOT r = f32[4] custom-call(x), custom_call_target=\"scale_by_opaque\", api_version=API_VERSION_STATUS_RETURNING_UNIFIED, backend_config=\"{config}\"\n}}"
        )
    };
    let exe = compile(&text("k=3"), &r).unwrap();
    let out = exe.run_literals(&[f32s(&[4], &[1.0, -2.0, 0.5, 10.0])]).unwrap();
    assert_eq!(leaves_f64(&out), vec![vec![3.0, -6.0, 1.5, 30.0]]);
    let exe = compile(&text("nonsense"), &r).unwrap();
    let err = exe.run_literals(&[f32s(&[4], &[0.0; 4])]).unwrap_err();
    assert!(err.to_string().ends_with("custom call 'scale_by_opaque' failed: bad opaque"), "{err}");
}

#[test]
fn typed_ffi_in_plain_c_sees_dims_and_attributes() {
    let r = registry_with(&[abi_plugin()]);
    let exe = compile(
        r#"HloModule m
ENTRY e {
  x = f32[2,3] parameter(0)
  ROOT r = (f32[2,3], s64[2]) custom-call(x), custom_call_target="c_affine", api_version=API_VERSION_TYPED_FFI, backend_config={alpha = 2.500000e+00 : f32, n = 3 : i32, name = "hi"}
}"#,
        &r,
    )
    .unwrap();
    let out = exe.run_literals(&[f32s(&[2, 3], &[0.0, 1.0, 2.0, -1.0, 4.0, 0.5])]).unwrap();
    // y = 2.5 x + 3; the second result echoes x's dimensions.
    assert_eq!(leaves_f64(&out), vec![vec![3.0, 5.5, 8.0, 0.5, 13.0, 4.25], vec![2.0, 3.0]]);
}

#[test]
fn typed_ffi_errors_come_back_with_the_handler_message() {
    let r = registry_with(&[abi_plugin()]);
    let exe = compile(
        r#"HloModule m
ENTRY e {
  x = f32[3] parameter(0)
  ROOT r = (f32[3], s64[1]) custom-call(x), custom_call_target="c_affine", api_version=API_VERSION_TYPED_FFI, backend_config={alpha = 1.0 : f32, n = 0 : i32, name = "no"}
}"#,
        &r,
    )
    .unwrap();
    let err = exe.run_literals(&[f32s(&[3], &[1.0, 2.0, 3.0])]).unwrap_err();
    assert_eq!(err.to_string(), "execution failed: custom call 'c_affine' failed: c_affine: name is not hi");
}

#[test]
fn handlers_built_with_xla_headers_load_unchanged() {
    let r = registry_with(&[xla_plugin()]);
    let exe = compile(
        r#"HloModule m
ENTRY e {
  x = f32[2,2] parameter(0)
  v = f64[5] parameter(1)
  a = f32[2,2] custom-call(x), custom_call_target="xla_affine", api_version=API_VERSION_TYPED_FFI, backend_config={alpha = 2.500000e+00 : f32, n = 3 : i32, name = "hi", xs = array<i64: 10, 20>, d = {k = 5 : i32}, flag = true}
  s = (f64[], s64[]) custom-call(v), custom_call_target="xla_stats", api_version=API_VERSION_TYPED_FFI, backend_config={}
  s0 = f64[] get-tuple-element(s), index=0
  s1 = s64[] get-tuple-element(s), index=1
  ROOT t = (f32[2,2], f64[], s64[]) tuple(a, s0, s1)
}"#,
        &r,
    )
    .unwrap();
    let v: Literal = ArrayLiteral::from_slice(&[5], &[1.0f64, 2.0, 3.0, 4.0, 5.5]).unwrap().into();
    let out = exe.run_literals(&[f32s(&[2, 2], &[0.0, 1.0, -2.0, 4.0]), v]).unwrap();
    // a = 2.5 x + (3 + 20 + 5 + 100); sum of v = 15.5 over 5 elements.
    assert_eq!(leaves_f64(&out), vec![vec![128.0, 130.5, 123.0, 138.0], vec![15.5], vec![5.0]]);
}

#[test]
fn xla_header_handler_errors_and_signature_checks() {
    let r = registry_with(&[xla_plugin()]);
    let fail = compile(
        "HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n  ROOT a = f32[2] custom-call(x), custom_call_target=\"xla_fail\", api_version=API_VERSION_TYPED_FFI\n}",
        &r,
    )
    .unwrap();
    let err = fail.run_literals(&[f32s(&[2], &[1.0, 2.0])]).unwrap_err();
    assert_eq!(err.to_string(), "execution failed: custom call 'xla_fail' failed: xla handler refuses: precondition");
    // A missing attribute is reported by XLA's own binding code through our error API.
    let missing = compile(
        "HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n  ROOT a = f32[2] custom-call(x), custom_call_target=\"xla_affine\", api_version=API_VERSION_TYPED_FFI, backend_config={alpha = 1.0 : f32}\n}",
        &r,
    )
    .unwrap();
    let err = missing.run_literals(&[f32s(&[2], &[1.0, 2.0])]).unwrap_err().to_string();
    assert!(err.contains("custom call 'xla_affine' failed") && err.contains("Wrong number of attributes"), "{err}");
}

#[test]
fn missing_target_is_a_compile_error_naming_it() {
    let err = compile(
        "HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n  ROOT a = f32[2] custom-call(x), custom_call_target=\"no_such_target_xyz\"\n}",
        &CustomCallRegistry::new(),
    )
    .unwrap_err();
    assert_eq!(err, Error::MissingCustomCallTarget("no_such_target_xyz".into()));
    assert!(err.to_string().contains("'no_such_target_xyz'"));
}

/// `which_one` as registered from Rust: writes 2 (the C plugin's writes 1).
unsafe extern "C" fn which_one_registered(out: *mut c_void, _ins: *const *const c_void) {
    *(out as *mut f32) = 2.0;
}

/// A target the test binary exports (its name matches the exported `hlojit_*` pattern).
#[no_mangle]
pub unsafe extern "C" fn hlojit_test_negate2(out: *mut c_void, ins: *const *const c_void) {
    let x = *ins as *const f32;
    let o = out as *mut f32;
    for i in 0..2 {
        *o.add(i) = -*x.add(i);
    }
}

#[test]
fn targets_resolve_registry_then_plugins() {
    let text = "HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n  ROOT a = f32[] custom-call(x), custom_call_target=\"which_one\"\n}";
    // A client with the plugin loaded (as `Client::load_plugin` and the CLI's --plugin do).
    let client = hlojit::Client::new();
    client.load_plugin(abi_plugin()).unwrap();
    let out = client.compile_text(text).unwrap().run_literals(&[f32s(&[2], &[0.0, 0.0])]).unwrap();
    assert_eq!(leaves_f64(&out), vec![vec![1.0]]);
    let err = client.load_plugin("/nonexistent/libnothing.so").unwrap_err().to_string();
    assert!(err.contains("cannot load custom-call plugin /nonexistent/libnothing.so"), "{err}");
    let both = registry_with(&[abi_plugin()]);
    both.register_original("which_one", which_one_registered);
    let out = compile(text, &both).unwrap().run_literals(&[f32s(&[2], &[0.0, 0.0])]).unwrap();
    assert_eq!(leaves_f64(&out), vec![vec![2.0]]);
}

/// Compiles with the given policy for the test executable's own exported functions.
fn compile_with_process_symbols(text: &str, process_symbols: ProcessSymbols) -> Result<Executable, Error> {
    let module = parse_module(text).expect("test module parses");
    Executable::compile(&module, &CompileOptions { process_symbols, ..CompileOptions::default() })
}

fn calling(target: &str) -> String {
    format!("HloModule m\nENTRY e {{\n  x = f32[2] parameter(0)\n  ROOT a = f32[2] custom-call(x), custom_call_target=\"{target}\"\n}}")
}

#[test]
fn the_executables_own_functions_are_targets_only_when_allowed() {
    let neg = calling("hlojit_test_negate2");
    let err = compile_with_process_symbols(&neg, ProcessSymbols::None).unwrap_err();
    assert_eq!(err, Error::MissingCustomCallTarget("hlojit_test_negate2".into()));
    assert!(err.to_string().contains("only when allowed"), "{err}");
    for allowed in [ProcessSymbols::MainExecutable, ProcessSymbols::only(["hlojit_test_negate2"])] {
        let exe = compile_with_process_symbols(&neg, allowed).unwrap();
        let out = exe.run_literals(&[f32s(&[2], &[1.5, -3.0])]).unwrap();
        assert_eq!(leaves_f64(&out), vec![vec![-1.5, 3.0]]);
    }
    // Exported by the executable, but not a name the allow-list gives.
    let err = compile_with_process_symbols(&neg, ProcessSymbols::only(["other"])).unwrap_err();
    assert_eq!(err, Error::MissingCustomCallTarget("hlojit_test_negate2".into()));
}

#[test]
fn text_cannot_reach_the_c_library_or_the_runtime() {
    // `system` would run a shell command, `abort` would end the process; the others are
    // the dynamic loader's, the Rust runtime's and hlojit's own runtime ABI.
    let names = ["system", "abort", "execv", "exit", "strlen", "dlopen", "__libc_start_main", "rust_eh_personality", "hlojit_rt_alloc", "XLA_FFI_GetApi"];
    for policy in [ProcessSymbols::None, ProcessSymbols::MainExecutable, ProcessSymbols::only(names)] {
        for name in names {
            let err = compile_with_process_symbols(&calling(name), policy.clone()).unwrap_err();
            assert_eq!(err, Error::MissingCustomCallTarget(name.into()), "{policy:?}");
        }
    }
    // Nor through a plugin, which links the C library: its targets are what it defines.
    let with_plugin = registry_with(&[abi_plugin()]);
    for name in ["system", "abort", "strlen"] {
        assert_eq!(compile(&calling(name), &with_plugin).unwrap_err(), Error::MissingCustomCallTarget(name.into()));
    }
    assert!(compile(&calling("which_one"), &with_plugin).is_ok(), "the plugin's own target resolves");
}

/// A typed handler in Rust with the safe helpers: y = x * factor (an f64 attribute).
fn rust_scale(mut call: hlojit::ffi::handler::Call) -> hlojit::ffi::handler::HandlerResult {
    let factor = call.attrs.f64("factor")? as f32;
    let x = call.arg(0)?.as_slice::<f32>()?;
    if factor < 0.0 {
        return Err("negative factor".into());
    }
    for (y, x) in call.rets[0].as_mut_slice::<f32>()?.iter_mut().zip(x) {
        *y = x * factor;
    }
    Ok(())
}

unsafe extern "C" fn rust_scale_handler(
    frame: *mut hlojit::ffi::xla::XLA_FFI_CallFrame,
) -> *mut hlojit::ffi::xla::XLA_FFI_Error {
    hlojit::ffi::handler::dispatch(frame, rust_scale)
}

#[test]
fn rust_handler_registered_with_the_registry() {
    let r = CustomCallRegistry::new();
    r.register_ffi_handler("rust_scale", rust_scale_handler);
    let text = |f: &str| {
        format!("HloModule m\nENTRY e {{\n  x = f32[3] parameter(0)\n  ROOT a = f32[3] custom-call(x), custom_call_target=\"rust_scale\", api_version=API_VERSION_TYPED_FFI, backend_config={{factor = {f} : f64}}\n}}")
    };
    let out = compile(&text("4.0"), &r).unwrap().run_literals(&[f32s(&[3], &[1.0, -0.5, 2.0])]).unwrap();
    assert_eq!(leaves_f64(&out), vec![vec![4.0, -2.0, 8.0]]);
    let err = compile(&text("-1.0"), &r).unwrap().run_literals(&[f32s(&[3], &[1.0, 1.0, 1.0])]).unwrap_err();
    assert_eq!(err.to_string(), "execution failed: custom call 'rust_scale' failed: negative factor");
}

#[test]
fn operands_arrive_in_the_constrained_layout() {
    let r = registry_with(&[abi_plugin()]);
    let exe = compile(
        r#"HloModule m
ENTRY e {
  x = f32[2,3]{1,0} parameter(0)
  ROOT r = f32[6]{0} custom-call(x), custom_call_target="raw_copy6", operand_layout_constraints={f32[2,3]{0,1}}
}"#,
        &r,
    )
    .unwrap();
    let out = exe.run_literals(&[f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])]).unwrap();
    // Column-major memory order of [[1,2,3],[4,5,6]].
    assert_eq!(leaves_f64(&out), vec![vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]]);
}

#[test]
fn aliased_outputs_start_as_the_operand() {
    let r = registry_with(&[abi_plugin()]);
    let exe = compile(
        r#"HloModule m
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] custom-call(x), custom_call_target="increment_in_place", output_to_operand_aliasing={{}: (0, {})}
  ROOT t = (f32[4], f32[4]) tuple(x, y)
}"#,
        &r,
    )
    .unwrap();
    let out = exe.run_literals(&[f32s(&[4], &[1.0, 2.0, 3.0, 4.0])]).unwrap();
    // The operand itself is left alone.
    assert_eq!(leaves_f64(&out), vec![vec![1.0, 2.0, 3.0, 4.0], vec![2.0, 3.0, 4.0, 5.0]]);
}

#[test]
fn failure_inside_a_loop_stops_the_computation() {
    let r = registry_with(&[abi_plugin()]);
    // x counts down by 1 each iteration through checked_sqrt's operand; at -1 it fails. The
    // call's result is unused: only its side effect (the check) keeps it.
    let exe = compile(
        r#"HloModule m
cond {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[4] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  r = f32[4] custom-call(x), custom_call_target="checked_sqrt", api_version=API_VERSION_STATUS_RETURNING, custom_call_has_side_effect=true
  c = f32[] constant(1)
  cb = f32[4] broadcast(c), dimensions={}
  y = f32[4] subtract(x, cb)
  ROOT t = (s32[], f32[4]) tuple(j, y)
}
ENTRY e {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, x)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  ROOT out = f32[4] get-tuple-element(w), index=1
}"#,
        &r,
    )
    .unwrap();
    let err = exe.run_literals(&[f32s(&[4], &[2.0, 5.0, 5.0, 5.0])]).unwrap_err();
    assert_eq!(err.to_string(), "execution failed: custom call 'checked_sqrt' failed: negative input -1 at index 0");
    let out = exe.run_literals(&[f32s(&[4], &[20.0; 4])]).unwrap();
    assert_eq!(leaves_f64(&out), vec![vec![10.0; 4]]);
}

#[test]
fn bad_typed_ffi_attributes_are_parse_errors() {
    // Decoded when the module is parsed: the error points at the attribute.
    let err = parse_module(
        "HloModule m\nENTRY e {\n  x = f32[3] parameter(0)\n  ROOT a = f32[3] custom-call(x), custom_call_target=\"rust_scale\", api_version=API_VERSION_TYPED_FFI, backend_config={factor = 300 : ui8}\n}",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("4:103") && err.contains("300 does not fit"), "{err}");
}

/// The C plugin example under `examples/c-plugin`, built and run as its README says.
#[test]
fn c_plugin_example_runs() {
    let dir = repo().join("examples/c-plugin");
    let lib = build_dir().join("libexample_c_plugin.so");
    run_build(
        Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-I"])
            .arg(repo().join("ffi/include"))
            .arg(dir.join("plugin.c"))
            .arg("-o")
            .arg(&lib),
    );
    let text = std::fs::read_to_string(dir.join("example.hlo")).unwrap();
    let exe = compile(&text, &registry_with(&[&lib])).unwrap();
    let out = exe.run_literals(&[f32s(&[4], &[1.0, -2.0, 0.5, 3.0])]).unwrap();
    // softsign(x) = x / (1 + |x|), then clamp_min with lo = 0.25 (typed FFI).
    assert_eq!(leaves_f64(&out), vec![vec![0.5, 0.25, (1.0f32 / 3.0) as f64, 0.75]]);
}

/// The Rust plugin example under `examples/rust-plugin`, built with cargo and loaded.
#[test]
fn rust_plugin_example_runs() {
    let dir = repo().join("examples/rust-plugin");
    let target = repo().join("target/examples");
    run_build(
        Command::new(env!("CARGO"))
            .args(["build", "--release", "--quiet", "--manifest-path"])
            .arg(dir.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(&target),
    );
    let lib = target.join("release/libhlojit_example_plugin.so");
    let text = std::fs::read_to_string(dir.join("example.hlo")).unwrap();
    let exe = compile(&text, &registry_with(&[&lib])).unwrap();
    let out = exe.run_literals(&[f32s(&[5], &[1.0, 2.0, 3.0, 4.0, 10.0])]).unwrap();
    // Running mean of x (typed FFI), then times `scale` = 2.
    assert_eq!(leaves_f64(&out), vec![vec![2.0, 3.0, 4.0, 5.0, 8.0]]);
    let err = exe.run_literals(&[f32s(&[5], &[1.0, f32::NAN, 3.0, 4.0, 10.0])]).unwrap_err();
    assert_eq!(err.to_string(), "execution failed: custom call 'running_mean' failed: NaN at index 1");
}
