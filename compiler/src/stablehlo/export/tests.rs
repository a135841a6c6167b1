//! Hand-made `Exported` flatbuffers around the hand-made artifact of the bytecode tests.

use super::*;
use crate::stablehlo::bytecode::tests::artifact;

/// A FlatBuffer with table `Exported`'s fields function_name (slot 1), platforms (9),
/// mlir_module_serialized (13), calling_convention_version (14) and nr_devices (18).
fn exported(platforms: &[&str], nr_devices: u32, ccv: u16, module: &[u8]) -> Vec<u8> {
    let mut b = vec![0u8; 48];
    b[0..4].copy_from_slice(&48u32.to_le_bytes());
    // vtable at 4: 19 slots.
    let vt = 4;
    let put16 = |b: &mut Vec<u8>, at: usize, v: u16| b[at..at + 2].copy_from_slice(&v.to_le_bytes());
    put16(&mut b, vt, 4 + 2 * 19);
    put16(&mut b, vt + 2, 24);
    for (slot, off) in [(1, 4), (9, 8), (13, 12), (18, 16), (14, 20)] {
        put16(&mut b, vt + 4 + 2 * slot, off);
    }
    let t = 48;
    b.resize(t + 24, 0);
    b[t..t + 4].copy_from_slice(&((t - vt) as u32).to_le_bytes());
    b[t + 16..t + 20].copy_from_slice(&nr_devices.to_le_bytes());
    b[t + 20..t + 22].copy_from_slice(&ccv.to_le_bytes());
    let align = |b: &mut Vec<u8>| {
        while b.len() % 4 != 0 {
            b.push(0);
        }
    };
    let string = |b: &mut Vec<u8>, s: &[u8]| -> usize {
        align(b);
        let at = b.len();
        b.extend_from_slice(&(s.len() as u32).to_le_bytes());
        b.extend_from_slice(s);
        b.push(0);
        at
    };
    let set = |b: &mut Vec<u8>, field: usize, target: usize| b[field..field + 4].copy_from_slice(&((target - field) as u32).to_le_bytes());
    let name = string(&mut b, b"f");
    set(&mut b, t + 4, name);
    align(&mut b);
    let vec_at = b.len();
    b.extend_from_slice(&(platforms.len() as u32).to_le_bytes());
    b.resize(vec_at + 4 + 4 * platforms.len(), 0);
    set(&mut b, t + 8, vec_at);
    for (i, p) in platforms.iter().enumerate() {
        let s = string(&mut b, p.as_bytes());
        set(&mut b, vec_at + 4 + 4 * i, s);
    }
    let m = string(&mut b, module);
    set(&mut b, t + 12, m);
    b
}

#[test]
fn reads_and_checks_what_the_export_declares() {
    let module = artifact("StableHLO_v1.15.0", "add_v1");
    let good = exported(&["cpu"], 1, 10, &module);
    let e = read_exported(&good).expect("reads");
    assert_eq!((e.function_name.as_str(), e.nr_devices, e.calling_convention_version), ("f", 1, 10));
    assert_eq!(e.module, &module[..]);
    let m = crate::stablehlo::parse_jax_export(&good).expect("runs through to HLO");
    assert_eq!(m.to_string().matches("parameter(").count(), 1);

    let err = |b: Vec<u8>| read_exported(&b).unwrap_err();
    assert!(err(exported(&["cuda", "tpu"], 1, 10, &module)).contains("platforms [cuda, tpu], not for cpu"));
    assert!(err(exported(&["cpu"], 8, 10, &module)).contains("exported for 8 devices"));
    assert!(err(exported(&["cpu"], 1, 8, &module)).contains("calling convention version 8; versions 9 to 10"));
}

#[test]
fn several_platforms_bind_the_platform_index() {
    // A two-platform export's @main takes the index first: here the hand-made module's one
    // argument plays that part, so after binding @main has no parameters.
    let module = artifact("StableHLO_v1.15.0", "add_v1");
    let b = exported(&["cuda", "cpu"], 1, 10, &module);
    let exp = read_exported(&b).unwrap();
    let mut m = crate::stablehlo::bytecode::parse_bytecode(exp.module).unwrap();
    bind_platform_index(&mut m, &exp).unwrap();
    let block = &m.ops[0].regions[0].blocks[0];
    assert!(block.args.is_empty());
    assert_eq!(block.ops[0].name, "stablehlo.constant");
    assert_eq!(block.ops[0].attr("value"), Some(&Attr::Dense(DenseElements { ty: TensorType { dims: vec![], bounds: None, element: ScalarType::Element(ElementType::S32) }, bits: vec![1], resource: None })));
}

#[test]
fn truncated_and_corrupt_files_are_errors() {
    let good = exported(&["cpu"], 1, 10, &artifact("StableHLO_v1.15.0", "add_v1"));
    for len in 0..good.len() {
        let _ = crate::stablehlo::parse_jax_export(&good[..len]);
    }
    for len in 0..80 {
        assert!(read_exported(&good[..len]).is_err(), "{len}");
    }
    for i in 0..good.len() {
        for v in [0x00, 0x7F, 0x80, 0xFF] {
            let mut bad = good.clone();
            bad[i] = v;
            let _ = crate::stablehlo::parse_jax_export(&bad);
        }
    }
}
