//! `cargo xtask setup|demo|test|bench|conformance`: project automation. This crate does not
//! depend on LLVM, so it builds on a fresh machine and installs LLVM before anything needs it.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod jax_suite;
use jax_suite::jax_suite;

const LLVM_PREFIX: &str = "/usr/lib/llvm-19";
const DEBIAN_PACKAGES: &[&str] = &["llvm-19-dev", "libpolly-19-dev", "libzstd-dev"];
/// `hlojit run --distributed mpi` (the tools' default `mpi` feature): OpenMPI, and libclang for
/// the bindings the `mpi` crate generates at build time.
const MPI_PACKAGES: &[&str] = &["libopenmpi-dev", "openmpi-bin", "libclang-19-dev"];
/// The system LAPACK and BLAS the runtime opens when a LAPACK target first runs: Debian's
/// alternatives then point liblapack.so.3 / libblas.so.3 at OpenBLAS.
const LAPACK_PACKAGES: &[&str] = &["liblapack-dev", "libblas-dev", "libopenblas-dev"];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (task, rest) = match args.split_first() {
        Some((t, rest)) => (t.as_str(), rest.to_vec()),
        None => ("help", Vec::new()),
    };
    let result = match task {
        "setup" => setup(),
        "demo" => setup().and_then(|_| demo(&rest)),
        "test" => setup().and_then(|_| test(&rest)),
        "bench" => setup().and_then(|_| bench(&rest)),
        "conformance" => setup().and_then(|_| conformance(&rest)),
        "jax-suite" => setup().and_then(|_| jax_suite(&rest)),
        "wheel" => setup().and_then(|_| wheel().map(|w| eprintln!("xtask: built {}", w.display()))),
        "pytest" => setup().and_then(|_| pytest(&rest)),
        "jax-tests" => setup().and_then(|_| jax_tests(&rest)),
        _ => {
            eprintln!(
                "usage: cargo xtask <task>\n\n  setup        install what a fresh machine lacks (LLVM 19, jax for the FFI tests), refresh the test corpus\n  demo         compile and run the bundled example modules (an MLP, a GELU chain)\n  test         run the whole test suite, conformance corpus included, and the Python tests (as pytest)\n  bench        run the benchmarks (hlojit vs XLA:CPU on the perf workloads)\n  conformance  run the conformance corpus and print failures\n  jax-suite    JAX's own test files as a differential test against XLA:CPU: jax-suite TESTS_DIR [--parts N] [--collect-only] [TEST.py]...\n  wheel        build the hlojit Python package (python/: hlojit.compile and the PJRT plugin) into target/wheels\n  pytest       build the wheel, install it with the pinned jax into a fresh venv (target/wheel-venv) and run python/tests through JAX\n  jax-tests    JAX's own test files on hlojit (the plugin; JAX_PLATFORMS=hlojit,cpu) and on XLA:CPU, per-file pass counts: jax-tests TESTS_DIR [--platforms cpu,hlojit,hlojit-only] [TEST.py]... [-- PYTEST_ARGS]"
            );
            return if task == "help" { ExitCode::SUCCESS } else { ExitCode::FAILURE };
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {task}: {e}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

pub(crate) fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {status}"))
    }
}

pub(crate) fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    c.env("LLVM_SYS_191_PREFIX", llvm_prefix());
    // bindgen (the `mpi` crate's build) finds Debian's libclang here.
    if std::env::var_os("LIBCLANG_PATH").is_none() {
        c.env("LIBCLANG_PATH", Path::new(&llvm_prefix()).join("lib"));
    }
    with_venv(&mut c);
    c
}

fn llvm_prefix() -> String {
    std::env::var("LLVM_SYS_191_PREFIX").unwrap_or_else(|_| LLVM_PREFIX.to_string())
}

/// Installs LLVM 19 and OpenMPI if missing and refreshes the in-repository copy of the corpus.
fn setup() -> Result<(), String> {
    let llvm_config = Path::new(&llvm_prefix()).join("bin/llvm-config");
    let have_llvm = llvm_config.exists() && Path::new(&llvm_prefix()).join("lib/libLLVM.so").exists();
    let have_mpi = Path::new("/usr/bin/mpirun").exists()
        && Path::new("/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h").exists()
        && Path::new(&llvm_prefix()).join("lib/libclang.so").exists();
    let have_lapack = Command::new("dpkg").arg("-s").args(LAPACK_PACKAGES).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).status().is_ok_and(|s| s.success());
    let mut packages: Vec<&str> = Vec::new();
    if !have_llvm {
        packages.extend_from_slice(DEBIAN_PACKAGES);
    }
    if !have_mpi {
        packages.extend_from_slice(MPI_PACKAGES);
    }
    if !have_lapack {
        packages.extend_from_slice(LAPACK_PACKAGES);
    }
    if !packages.is_empty() {
        eprintln!("xtask: installing {}", packages.join(" "));
        let sudo = !is_root();
        let apt = |args: &[&str]| -> Result<(), String> {
            let mut c = if sudo { Command::new("sudo") } else { Command::new("apt-get") };
            if sudo {
                c.arg("apt-get");
            }
            c.args(args).env("DEBIAN_FRONTEND", "noninteractive");
            run(&mut c)
        };
        apt(&["update", "-qq"])?;
        let mut install = vec!["install", "-y", "-qq", "--no-install-recommends"];
        install.extend_from_slice(&packages);
        apt(&install)?;
    }
    graphviz()?;
    python_packages()?;
    refresh_corpus()
}

/// Graphviz's `dot` lays out `hlojit graph`'s pictures (its SVG output and test need it).
fn graphviz() -> Result<(), String> {
    if Command::new("dot").arg("-V").output().is_ok() {
        return Ok(());
    }
    eprintln!("xtask: installing graphviz (for hlojit graph)");
    let mut c = if is_root() { Command::new("apt-get") } else { Command::new("sudo") };
    if !is_root() {
        c.arg("apt-get");
    }
    c.args(["install", "-y", "-qq", "--no-install-recommends", "graphviz"]).env("DEBIAN_FRONTEND", "noninteractive");
    run(&mut c)
}

/// The pinned Python packages (jax, scipy, ...) the tests, benchmarks and tools use.
const PYTHON_REQUIREMENTS: &str = include_str!("../python-requirements.txt");

/// The project's virtual environment: Python packages never go into the system's Python.
pub(crate) fn venv() -> PathBuf {
    root().join("target/venv")
}

/// The custom-call tests compile handlers against XLA's FFI headers from the jaxlib wheel and
/// run jaxlib's LAPACK handlers (which take LAPACK from SciPy); the benchmarks time XLA:CPU
/// through jaxlib. Creates `target/venv` and installs the pinned packages when they changed.
fn python_packages() -> Result<(), String> {
    if Command::new("python3").arg("--version").output().is_err() {
        return Ok(()); // no python3: the tests that need it say so
    }
    let venv = venv();
    if !venv.join("bin/python3").exists() {
        eprintln!("xtask: creating the virtual environment {}", venv.display());
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    }
    let stamp = venv.join("requirements.installed");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(PYTHON_REQUIREMENTS) {
        return Ok(());
    }
    eprintln!("xtask: installing the pinned Python packages into {}", venv.display());
    let requirements = root().join("xtask/python-requirements.txt");
    run(Command::new(venv.join("bin/python3")).args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"]).arg(requirements))?;
    std::fs::write(&stamp, PYTHON_REQUIREMENTS).map_err(|e| format!("{}: {e}", stamp.display()))
}

/// Makes `python3` in a child process (and in the tests it runs) the project's virtual
/// environment, as `source target/venv/bin/activate` would.
fn with_venv(cmd: &mut Command) -> &mut Command {
    let bin = venv().join("bin");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin];
    dirs.extend(std::env::split_paths(&path));
    cmd.env("PATH", std::env::join_paths(dirs).expect("PATH entries")).env("VIRTUAL_ENV", venv())
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false)
}

/// Copies `../shared/conformance` into `tests/conformance` when the shared copy exists and
/// differs, so that the repository tests itself with nothing beside it.
fn refresh_corpus() -> Result<(), String> {
    let shared = root().join("../shared/conformance");
    let local = root().join("tests/conformance");
    if !shared.join("cases").is_dir() {
        return Ok(());
    }
    copy_tree_if_changed(&shared, &local).map_err(|e| format!("copying the corpus: {e}"))
}

fn copy_tree_if_changed(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let src = entry.path();
        let dst = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree_if_changed(&src, &dst)?;
        } else {
            let same = std::fs::read(&dst).ok().is_some_and(|d| std::fs::read(&src).ok().is_some_and(|s| s == d));
            if !same {
                std::fs::copy(&src, &dst)?;
            }
        }
    }
    Ok(())
}

fn demo(args: &[String]) -> Result<(), String> {
    let defaults = ["examples/mlp.hlo".to_string(), "examples/gelu.hlo".to_string()];
    let modules = if args.is_empty() { &defaults[..] } else { args };
    run(cargo().args(["build", "--release", "--quiet", "-p", "hlojit-tools", "--bin", "hlojit"]))?;
    for module in modules {
        eprintln!("xtask: hlojit run {module} --random-inputs 0");
        run(Command::new(root().join("target/release/hlojit")).current_dir(root()).args(["run", module, "--random-inputs", "0"]))?;
    }
    Ok(())
}

/// Builds the `hlojit` Python package (maturin; the wheel needs LLVM 19's shared library at
/// run time, as every hlojit binary does) and returns the wheel's path.
fn wheel() -> Result<PathBuf, String> {
    let out = root().join("target/wheels");
    let _ = std::fs::remove_dir_all(&out);
    let mut c = Command::new(venv().join("bin/maturin"));
    c.current_dir(root().join("python"))
        .args(["build", "--release", "--quiet", "--auditwheel", "skip", "--out"])
        .arg(&out)
        .env("LLVM_SYS_191_PREFIX", llvm_prefix());
    run(with_venv(&mut c))?;
    let wheels: Vec<PathBuf> = std::fs::read_dir(&out)
        .map_err(|e| format!("{}: {e}", out.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    match wheels.as_slice() {
        [w] => Ok(w.clone()),
        _ => Err(format!("expected one wheel in {}, found {wheels:?}", out.display())),
    }
}

/// The pinned version of a Python package in xtask/python-requirements.txt, as `name==version`.
fn pinned(name: &str) -> Result<String, String> {
    PYTHON_REQUIREMENTS
        .lines()
        .map(str::trim)
        .find(|l| l.split("==").next() == Some(name))
        .map(str::to_string)
        .ok_or_else(|| format!("{name} is not pinned in xtask/python-requirements.txt"))
}

/// The Python tests (python/tests) as a user would run them: the freshly built wheel installed
/// by pip into a new virtual environment (target/wheel-venv, recreated every time) together
/// with the pinned jax and jaxlib, so JAX finds the plugin through the package's `jax_plugins`
/// entry point and the wheel's declared dependencies are all it gets. pip's cache keeps this
/// to an unpack after the first download.
fn pytest(args: &[String]) -> Result<(), String> {
    let wheel = wheel()?;
    let env = root().join("target/wheel-venv");
    let _ = std::fs::remove_dir_all(&env);
    eprintln!("xtask: installing {} with the pinned jax into a fresh {}", wheel.display(), env.display());
    run(Command::new("python3").args(["-m", "venv"]).arg(&env))?;
    let python = env.join("bin/python3");
    let mut install = Command::new(&python);
    install.args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"]).arg(&wheel);
    // absl-py: JAX's own test utilities (jax._src.test_util), which the tests of the suite's
    // configuration (test_beside_cpu.py) use to ask what device JAX's tests run on.
    for package in ["jax", "jaxlib", "pytest", "absl-py"] {
        install.arg(pinned(package)?);
    }
    run(&mut install)?;
    let mut c = Command::new(&python);
    c.current_dir(root()).args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "python/tests"]).args(args);
    run(&mut c)
}

/// The wheel installed (without dependencies) into target/python-site, for running it with
/// the project's virtual environment (PYTHONPATH=target/python-site) as `jax-tests` does.
fn python_site() -> Result<PathBuf, String> {
    let wheel = wheel()?;
    let site = root().join("target/python-site");
    let _ = std::fs::remove_dir_all(&site);
    run(Command::new(venv().join("bin/python3"))
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--target"])
        .arg(&site)
        .arg(&wheel))?;
    Ok(site)
}

/// JAX's own test files with JAX_PLATFORMS=hlojit,cpu (hlojit the default backend, XLA:CPU
/// beside it as in a real installation) and JAX_PLATFORMS=cpu (XLA), file by file
/// (tools/jax_tests.py; `--platforms` adds hlojit-only, JAX_PLATFORMS=hlojit); the report is
/// target/jax-tests/report.md and report.json.
fn jax_tests(args: &[String]) -> Result<(), String> {
    let Some((tests_dir, rest)) = args.split_first() else {
        return Err("usage: cargo xtask jax-tests TESTS_DIR [TEST_FILE.py]... [-- PYTEST_ARGS] (TESTS_DIR: the tests/ folder of jax at the installed version's tag)".into());
    };
    let site = python_site()?;
    let mut c = Command::new(venv().join("bin/python3"));
    c.current_dir(root())
        .arg(root().join("tools/jax_tests.py"))
        .arg("--tests-dir")
        .arg(tests_dir)
        .arg("--out")
        .arg(root().join("target/jax-tests"))
        .arg("--site")
        .arg(&site)
        .args(rest);
    run(with_venv(&mut c))
}

/// The test suite, then every example program (they check their own results), then the
/// Python package's tests through JAX from a fresh install of the wheel.
fn test(args: &[String]) -> Result<(), String> {
    run(cargo().args(["test", "--release", "--workspace", "--no-fail-fast"]).args(args))?;
    for example in examples()? {
        eprintln!("xtask: running example {example}");
        run(cargo().args(["run", "--release", "--quiet", "--example", &example]))?;
    }
    pytest(&[])
}

/// The root package's example programs (examples/*.rs).
fn examples() -> Result<Vec<String>, String> {
    let dir = root().join("examples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    names.sort();
    Ok(names)
}

fn conformance(args: &[String]) -> Result<(), String> {
    run(cargo().args(["run", "--release", "--quiet", "-p", "hlojit-tools", "--bin", "hlojit", "--", "conformance", "tests/conformance", "--module", "both"]).args(args))
}

/// Times the perf workloads on XLA:CPU (jaxlib, through `xla_reference.py`) and on hlojit in
/// the same run, with the same inputs, checks that the outputs agree and prints the ratios.
/// Arguments are workload names (all by default).
fn bench(args: &[String]) -> Result<(), String> {
    let perf = root().join("../shared/perf");
    if !perf.join("xla_reference.py").exists() {
        return Err(format!("{} not found: the perf workloads live there", perf.display()));
    }
    let work = root().join("target/bench");
    let inputs = work.join("inputs");
    let xla_out = work.join("xla");
    std::fs::create_dir_all(&inputs).map_err(|e| e.to_string())?;
    // The workloads' own input recipe, from xla_reference.py itself.
    let script = format!(
        "import sys, os, json, numpy as np\nsys.path.insert(0, {perf:?})\nimport xla_reference as x\n\
         for d in x.find_workloads(sys.argv[1:]):\n    meta = json.load(open(os.path.join(d, 'perf.json')))\n\
         \x20   out = os.path.join({inputs:?}, meta['name']); os.makedirs(out, exist_ok=True)\n\
         \x20   for i, a in enumerate(x.make_inputs(meta)):\n\
         \x20       np.save(os.path.join(out, f'in{{i}}.npy'), a.view(x.RAW[a.dtype]) if a.dtype in x.RAW else a)\n",
        perf = perf.display().to_string(),
        inputs = inputs.display().to_string()
    );
    run(Command::new(venv().join("bin/python3")).arg("-c").arg(&script).args(args))?;
    let xla = Command::new(venv().join("bin/python3"))
        .arg(perf.join("xla_reference.py"))
        .args(["--save-outputs", &xla_out.display().to_string()])
        .args(args)
        .output()
        .map_err(|e| format!("xla_reference.py: {e}"))?;
    let xla_lines = String::from_utf8_lossy(&xla.stdout).into_owned();
    run(cargo().args(["build", "--release", "--quiet", "-p", "hlojit-tools", "--bin", "hlojit"]))?;
    let ours = Command::new(root().join("target/release/hlojit"))
        .current_dir(root())
        .args(["bench", "--root", &perf.display().to_string()])
        .args(["--inputs-dir", &inputs.display().to_string(), "--check-dir", &xla_out.display().to_string()])
        .args(args)
        .output()
        .map_err(|e| format!("hlojit bench: {e}"))?;
    let our_lines = String::from_utf8_lossy(&ours.stdout).into_owned();
    println!("{:<36} {:>12} {:>12} {:>9} {:>12} {:>12}", "workload", "XLA run ms", "hlojit ms", "speedup", "XLA comp ms", "hlojit comp");
    for line in xla_lines.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 {
            continue;
        }
        let ours = our_lines.lines().find(|l| l.split_whitespace().next() == Some(f[0]));
        let o: Vec<&str> = ours.map(|l| l.split_whitespace().collect()).unwrap_or_default();
        let (xr, xc) = (f[2].parse::<f64>().unwrap_or(f64::NAN), f[1].parse::<f64>().unwrap_or(f64::NAN));
        let (hr, hc) = match o.as_slice() {
            [_, c, r, ..] => (r.parse::<f64>().unwrap_or(f64::NAN), c.parse::<f64>().unwrap_or(f64::NAN)),
            _ => (f64::NAN, f64::NAN),
        };
        let note = ours.and_then(|l| l.find('(').map(|i| l[i..].to_string())).unwrap_or_else(|| "(hlojit failed)".into());
        println!("{:<36} {:>12.3} {:>12.3} {:>8.2}x {:>12.1} {:>12.1} {note}", f[0], xr, hr, xr / hr, xc, hc);
    }
    if !ours.status.success() {
        eprint!("{}", String::from_utf8_lossy(&ours.stderr));
    }
    Ok(())
}


