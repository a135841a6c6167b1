//! Ways `hlojit run` takes its inputs besides one `.npy` per flag: an `.npz` archive, a
//! directory of `in<i>.npy` files, and bf16 arrays as ml_dtypes saves them (`<V2`).

use hlojit_runtime::{npy, ArrayLiteral, ElementType};
use std::io::Write;
use std::path::Path;
use std::process::Command;

const MODULE: &str = "HloModule m
ENTRY e {
  x = bf16[2] parameter(0)
  y = f32[2] parameter(1)
  wide = f32[2] convert(x)
  ROOT z = f32[2] add(wide, y)
}
";

/// `np.save(f, np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16))`, byte for byte.
fn ml_dtypes_bf16() -> Vec<u8> {
    let header = "{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }";
    let header = format!("{header:<117}\n");
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&[0xc0, 0x3f, 0x00, 0xc0]);
    out
}

fn f32_input() -> Vec<u8> {
    npy::to_bytes(&ArrayLiteral::from_slice(&[2], &[10.0f32, 20.0]).unwrap())
}

/// Runs `hlojit run MODULE --input <inputs> --output-dir` and returns out0.
fn run(dir: &Path, inputs: &[&Path]) -> Result<ArrayLiteral, String> {
    let module = dir.join("m.hlo");
    std::fs::write(&module, MODULE).unwrap();
    let out_dir = dir.join("out");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hlojit"));
    cmd.arg("run").arg(&module).arg("--output-dir").arg(&out_dir);
    for i in inputs {
        cmd.arg("--input").arg(i);
    }
    let out = cmd.output().unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    npy::read(&out_dir.join("out0.npy"), Some(ElementType::F32)).map_err(|e| e.to_string())
}

fn expected() -> ArrayLiteral {
    ArrayLiteral::from_slice(&[2], &[11.5f32, 18.0]).unwrap()
}

#[test]
fn ml_dtypes_bf16_files_are_read_where_the_parameter_is_bf16() {
    let dir = tempfile::tempdir().unwrap();
    let (x, y) = (dir.path().join("x.npy"), dir.path().join("y.npy"));
    std::fs::write(&x, ml_dtypes_bf16()).unwrap();
    std::fs::write(&y, f32_input()).unwrap();
    assert_eq!(run(dir.path(), &[&x, &y]).unwrap(), expected());
    // Raw bytes cannot stand for an f32 parameter.
    let e = run(dir.path(), &[&x, &x]).unwrap_err();
    assert!(e.contains("'<V2' cannot hold f32 values"), "{e}");
}

#[test]
fn an_npz_archive_holds_every_input() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inputs.npz");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    // np.savez(f, x, y) names them arr_0, arr_1; the archive order does not matter.
    for (name, bytes) in [("arr_1.npy", f32_input()), ("arr_0.npy", ml_dtypes_bf16())] {
        zip.start_file(name, zip::write::SimpleFileOptions::default()).unwrap();
        zip.write_all(&bytes).unwrap();
    }
    zip.finish().unwrap();
    assert_eq!(run(dir.path(), &[&path]).unwrap(), expected());
}

#[test]
fn a_directory_holds_in0_in1() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("inputs");
    std::fs::create_dir(&inputs).unwrap();
    std::fs::write(inputs.join("in0.npy"), ml_dtypes_bf16()).unwrap();
    std::fs::write(inputs.join("in1.npy"), f32_input()).unwrap();
    assert_eq!(run(dir.path(), &[&inputs]).unwrap(), expected());
}

#[test]
fn conformance_without_cases_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hlojit")).arg("conformance").arg(dir.path()).output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no conformance cases under"), "{stderr}");
}
