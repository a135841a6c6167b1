//! Compiles `../aot-c/model.hlo` ahead of time with the `hlojit` binary and links the object
//! into this program. `HLOJIT` names the binary (default: the workspace's release build).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let model = manifest.join("../aot-c/model.hlo");
    let hlojit =
        std::env::var("HLOJIT").map(PathBuf::from).unwrap_or_else(|_| manifest.join("../../target/release/hlojit"));
    println!("cargo:rerun-if-changed={}", model.display());
    println!("cargo:rerun-if-env-changed=HLOJIT");
    println!("cargo:rerun-if-changed={}", hlojit.display());
    let object = out.join("model.o");
    let status = Command::new(&hlojit)
        .arg("compile")
        .arg(&model)
        .args(["--emit", "obj", "--name", "model", "-o"])
        .arg(&object)
        .arg("--header")
        .arg(out.join("model.h"))
        .status()
        .unwrap_or_else(|e| panic!("cannot run {} (build hlojit first: cargo build --release): {e}", hlojit.display()));
    assert!(status.success(), "hlojit compile failed");
    let status = Command::new("ar").arg("crs").arg(out.join("libmodel.a")).arg(&object).status().expect("ar");
    assert!(status.success(), "ar failed");
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=model");
}
