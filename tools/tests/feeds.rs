//! `hlojit run --infeed F.npy ... --outfeed-dir DIR`: infeed files in program order (a tuple
//! infeed reads one per leaf), outfed arrays written flattened, per device for a multi-device
//! program, and errors for too few infeed files. Expected values from the operation semantics
//! (jax 0.10 no longer lowers infeed/outfeed, so XLA cannot compute them).

use hlojit_runtime::{npy, ArrayLiteral, ElementType};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SINGLE: &str = "HloModule feeds
ENTRY e {
  t0 = token[] after-all()
  in = ((f32[2,2]{0,1}, s32[]), token[]) infeed(t0)
  v = (f32[2,2]{0,1}, s32[]) get-tuple-element(in), index=0
  x = f32[2,2]{0,1} get-tuple-element(v), index=0
  n = s32[] get-tuple-element(v), index=1
  t1 = token[] get-tuple-element(in), index=1
  d = f32[2,2] add(x, x)
  tup = (f32[2,2], s32[]) tuple(d, n)
  o = token[] outfeed(tup, t1), outfeed_shape=(f32[2,2], s32[])
  in2 = (bf16[2], token[]) infeed(o)
  y = bf16[2] get-tuple-element(in2), index=0
  ROOT w = f32[2] convert(y)
}
";

const TWO_DEVICES: &str = "HloModule feeds2, replica_count=2
ENTRY e {
  t0 = token[] after-all()
  in = (s32[2], token[]) infeed(t0)
  x = s32[2] get-tuple-element(in), index=0
  t1 = token[] get-tuple-element(in), index=1
  r = u32[] replica-id()
  ri = s32[] convert(r)
  b = s32[2] broadcast(ri), dimensions={}
  y = s32[2] multiply(x, b)
  o = token[] outfeed(y, t1), outfeed_shape=s32[2]
  ROOT z = s32[2] negate(x)
}
";

fn save(dir: &Path, name: &str, a: &ArrayLiteral) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, npy::to_bytes(a)).unwrap();
    p
}

fn run(dir: &Path, module: &str, infeeds: &[PathBuf]) -> Output {
    let path = dir.join("m.hlo");
    std::fs::write(&path, module).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hlojit"));
    cmd.arg("run").arg(&path).arg("--outfeed-dir").arg(dir.join("out")).arg("--output-dir").arg(dir.join("res"));
    for f in infeeds {
        cmd.arg("--infeed").arg(f);
    }
    cmd.output().unwrap()
}

fn load(p: &Path, t: ElementType) -> ArrayLiteral {
    npy::read(p, Some(t)).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn infeed_files_in_program_order_and_outfeed_files_flattened() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let x = save(dir, "x.npy", &ArrayLiteral::from_slice(&[2, 2], &[1f32, 2.0, 3.0, 4.0]).unwrap());
    let n = save(dir, "n.npy", &ArrayLiteral::from_slice(&[], &[9i32]).unwrap());
    // bf16 as raw bits (uint16), as the corpus stores it: 1.5 and -2.0.
    let y = save(dir, "y.npy", &ArrayLiteral::from_slice(&[2], &[0x3fc0u16, 0xc000]).unwrap());
    let out = run(dir, SINGLE, &[x, n, y]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(load(&dir.join("out/outfeed0.npy"), ElementType::F32).as_slice::<f32>().unwrap(), &[2.0, 4.0, 6.0, 8.0]);
    assert_eq!(load(&dir.join("out/outfeed1.npy"), ElementType::S32).as_slice::<i32>().unwrap(), &[9]);
    assert!(!dir.join("out/outfeed2.npy").exists());
    assert_eq!(load(&dir.join("res/out0.npy"), ElementType::F32).as_slice::<f32>().unwrap(), &[1.5, -2.0]);
}

#[test]
fn too_few_infeed_files_is_an_error_not_a_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let x = save(dir, "x.npy", &ArrayLiteral::from_slice(&[2, 2], &[1f32, 2.0, 3.0, 4.0]).unwrap());
    let n = save(dir, "n.npy", &ArrayLiteral::from_slice(&[], &[9i32]).unwrap());
    let out = run(dir, SINGLE, &[x, n]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in2: device 0's infeed holds 0 of the 1 arrays it reads"), "{err}");
}

#[test]
fn several_devices_take_stacked_infeeds_and_outfeed_per_device() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let x = save(dir, "x.npy", &ArrayLiteral::from_slice(&[2, 2], &[1i32, 2, 3, 4]).unwrap());
    let out = run(dir, TWO_DEVICES, &[x]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(load(&dir.join("out/device0/outfeed0.npy"), ElementType::S32).as_slice::<i32>().unwrap(), &[0, 0]);
    assert_eq!(load(&dir.join("out/device1/outfeed0.npy"), ElementType::S32).as_slice::<i32>().unwrap(), &[3, 4]);
    assert_eq!(load(&dir.join("res/out0.npy"), ElementType::S32).as_slice::<i32>().unwrap(), &[-1, -2, -3, -4]);
}
