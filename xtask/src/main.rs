//! `cargo xtask setup|demo|test|bench|conformance`: project automation. This crate does not
//! depend on LLVM, so it builds on a fresh machine and installs LLVM before anything needs it.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const LLVM_PREFIX: &str = "/usr/lib/llvm-19";
const DEBIAN_PACKAGES: &[&str] = &["llvm-19-dev", "libpolly-19-dev", "libzstd-dev"];

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
        _ => {
            eprintln!(
                "usage: cargo xtask <task>\n\n  setup        install what a fresh machine lacks (LLVM 19, jax for the FFI tests), refresh the test corpus\n  demo         compile and run the bundled example module\n  test         run the whole test suite, conformance corpus included\n  bench        run the benchmarks (hlojit vs XLA:CPU on the perf workloads)\n  conformance  run the conformance corpus and print failures"
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

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {status}"))
    }
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    c.env("LLVM_SYS_191_PREFIX", llvm_prefix());
    c
}

fn llvm_prefix() -> String {
    std::env::var("LLVM_SYS_191_PREFIX").unwrap_or_else(|_| LLVM_PREFIX.to_string())
}

/// Installs LLVM 19 if missing and refreshes the in-repository copy of the corpus.
fn setup() -> Result<(), String> {
    let llvm_config = Path::new(&llvm_prefix()).join("bin/llvm-config");
    let have_llvm = llvm_config.exists() && Path::new(&llvm_prefix()).join("lib/libLLVM.so").exists();
    if !have_llvm {
        eprintln!("xtask: installing LLVM 19 ({})", DEBIAN_PACKAGES.join(" "));
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
        install.extend_from_slice(DEBIAN_PACKAGES);
        apt(&install)?;
    }
    python_packages()?;
    refresh_corpus()
}

/// The custom-call tests compile handlers against XLA's FFI headers from the jaxlib wheel and
/// run jaxlib's LAPACK handlers (which take LAPACK from SciPy): install jax when python3 is
/// there but jax is not.
fn python_packages() -> Result<(), String> {
    let have = |code: &str| Command::new("python3").args(["-c", code]).output().map(|o| o.status.success());
    match have("import jax, scipy") {
        Ok(true) => Ok(()),
        Ok(false) => {
            eprintln!("xtask: installing jax and scipy (pip)");
            run(Command::new("python3").args(["-m", "pip", "install", "--quiet", "jax", "scipy"]))
        }
        Err(_) => Ok(()), // no python3: the tests that need it say so
    }
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
    let module = args.first().cloned().unwrap_or_else(|| "examples/gelu.hlo".into());
    run(cargo().args(["run", "--release", "--quiet", "--bin", "hlojit", "--", "run", &module, "--random-inputs", "0"]))
}

fn test(args: &[String]) -> Result<(), String> {
    run(cargo().args(["test", "--release", "--workspace"]).args(args))
}

fn conformance(args: &[String]) -> Result<(), String> {
    run(cargo().args(["run", "--release", "--quiet", "--bin", "hlojit", "--", "conformance", "tests/conformance", "--module", "both"]).args(args))
}

fn bench(args: &[String]) -> Result<(), String> {
    run(cargo().args(["bench", "--workspace"]).args(args))
}
