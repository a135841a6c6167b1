//! Unit tests of the algebraic simplifier: what is rewritten and, as importantly, what is not.

use super::*;
use crate::hlo::text::print_module;
use crate::hlo::SliceDim;

fn simplified(text: &str) -> (bool, Module) {
    crate::passes::test_util::run_verified(text, run)
}

fn entry(body: &str) -> String {
    format!("HloModule m\nENTRY e {{\n{body}\n}}\n")
}

/// The root's opcode and its operands' names after simplification.
fn root_of(body: &str) -> (Opcode, String, Vec<String>) {
    let (_, m) = simplified(&entry(body));
    let c = m.entry_computation();
    let root = c.root_instruction();
    (root.opcode, root.name.clone(), root.operands.iter().map(|&o| c.get(o).name.clone()).collect())
}

#[test]
fn additive_and_multiplicative_identities_go() {
    for (op, k) in [("add", "0"), ("subtract", "0"), ("multiply", "1"), ("divide", "1"), ("power", "1")] {
        let body = format!("  x = f32[4] parameter(0)\n  c = f32[] constant({k})\n  b = f32[4] broadcast(c), dimensions={{}}\n  ROOT y = f32[4] {op}(x, b)");
        let (_, m) = simplified(&entry(&body));
        assert_eq!(m.entry_computation().root_instruction().name, "x", "{op}");
    }
    let (_, name, _) = root_of("  x = s32[4] parameter(0)\n  c = s32[4] constant({0, 0, 0, 0})\n  ROOT y = s32[4] add(c, x)");
    assert_eq!(name, "x");
}

#[test]
fn times_zero_folds_for_integers_only() {
    let (_, name, _) = root_of("  x = s32[4] parameter(0)\n  c = s32[] constant(0)\n  b = s32[4] broadcast(c), dimensions={}\n  ROOT y = s32[4] multiply(x, b)");
    assert_eq!(name, "b");
    // NaN * 0 is NaN, -1 * 0 is -0: the multiply stays.
    let (op, _, _) = root_of("  x = f32[4] parameter(0)\n  c = f32[] constant(0)\n  b = f32[4] broadcast(c), dimensions={}\n  ROOT y = f32[4] multiply(x, b)");
    assert_eq!(op, Opcode::Multiply);
    // x - 0 is x but 0 - x is not -x... nor x: it stays.
    let (op, _, _) = root_of("  x = f32[4] parameter(0)\n  c = f32[] constant(0)\n  b = f32[4] broadcast(c), dimensions={}\n  ROOT y = f32[4] subtract(b, x)");
    assert_eq!(op, Opcode::Subtract);
    // Adding 1 is not an identity.
    let (op, _, _) = root_of("  x = f32[4] parameter(0)\n  c = f32[] constant(1)\n  b = f32[4] broadcast(c), dimensions={}\n  ROOT y = f32[4] add(x, b)");
    assert_eq!(op, Opcode::Add);
}

#[test]
fn select_convert_and_double_negation() {
    let (_, name, _) = root_of("  x = f32[4] parameter(0)\n  z = f32[4] parameter(1)\n  t = pred[] constant(true)\n  p = pred[4] broadcast(t), dimensions={}\n  ROOT y = f32[4] select(p, x, z)");
    assert_eq!(name, "x");
    let (_, name, _) = root_of("  x = f32[4] parameter(0)\n  z = f32[4] parameter(1)\n  p = pred[4] constant({0, 0, 0, 0})\n  ROOT y = f32[4] select(p, x, z)");
    assert_eq!(name, "z");
    let (op, _, _) = root_of("  x = f32[4] parameter(0)\n  z = f32[4] parameter(1)\n  p = pred[4] constant({0, 1, 0, 0})\n  ROOT y = f32[4] select(p, x, z)");
    assert_eq!(op, Opcode::Select);
    let (_, name, _) = root_of("  x = f32[4] parameter(0)\n  c = f32[4] convert(x)\n  n = f32[4] negate(c)\n  ROOT y = f32[4] negate(n)");
    assert_eq!(name, "x");
    let (op, _, _) = root_of("  x = f32[4] parameter(0)\n  ROOT c = bf16[4] convert(x)");
    assert_eq!(op, Opcode::Convert);
}

#[test]
fn transposes_compose_and_cancel() {
    let (op, _, operands) = root_of(
        "  x = f32[2,3,4] parameter(0)\n  t = f32[3,4,2] transpose(x), dimensions={1,2,0}\n  ROOT u = f32[4,2,3] transpose(t), dimensions={1,2,0}",
    );
    assert_eq!((op, operands), (Opcode::Transpose, vec!["x".to_string()]));
    let (_, m) = simplified(&entry(
        "  x = f32[2,3,4] parameter(0)\n  t = f32[3,4,2] transpose(x), dimensions={1,2,0}\n  ROOT u = f32[4,2,3] transpose(t), dimensions={1,2,0}",
    ));
    assert_eq!(m.entry_computation().root_instruction().attrs.dims(), &[2, 0, 1]);
    let (_, name, _) = root_of("  x = f32[2,3] parameter(0)\n  t = f32[3,2] transpose(x), dimensions={1,0}\n  ROOT u = f32[2,3] transpose(t), dimensions={1,0}");
    assert_eq!(name, "x");
}

#[test]
fn broadcasts_reshapes_and_slices_compose() {
    let (_, m) = simplified(&entry("  x = f32[3] parameter(0)\n  a = f32[3,4] broadcast(x), dimensions={0}\n  ROOT b = f32[5,3,4] broadcast(a), dimensions={1,2}"));
    let root = m.entry_computation().root_instruction();
    assert_eq!((root.opcode, root.attrs.dims()), (Opcode::Broadcast, &[1i64][..]));

    let (op, _, operands) = root_of("  x = f32[12] parameter(0)\n  a = f32[3,4] reshape(x)\n  ROOT b = f32[2,6] reshape(a)");
    assert_eq!((op, operands), (Opcode::Reshape, vec!["x".to_string()]));
    let (_, name, _) = root_of("  x = f32[12] parameter(0)\n  a = f32[3,4] reshape(x)\n  ROOT b = f32[12] reshape(a)");
    assert_eq!(name, "x");

    let (_, m) = simplified(&entry("  x = f32[20] parameter(0)\n  a = f32[8] slice(x), slice={[3:19:2]}\n  ROOT b = f32[3] slice(a), slice={[1:8:3]}"));
    let root = m.entry_computation().root_instruction();
    // a reads 3,5,...,17; b reads a[1], a[4], a[7] = x[5], x[11], x[17].
    assert_eq!(root.attrs.slice_dims(), &[SliceDim { start: 5, limit: 18, stride: 6 }]);

    let (_, name, _) = root_of("  x = f32[3,1] parameter(0)\n  c = f32[3,1] concatenate(x), dimensions={0}\n  r = f32[3,1] reverse(c), dimensions={1}\n  ROOT s = f32[3,1] slice(r), slice={[0:3], [0:1]}");
    assert_eq!(name, "x");
}

#[test]
fn layouts_and_control_edges_are_respected() {
    // The operand is laid out differently from the reshape: dropping it would change the layout.
    let text = "HloModule m, entry_computation_layout={(f32[2,3]{0,1})->f32[2,3]{1,0}}\nENTRY e {\n  x = f32[2,3]{0,1} parameter(0)\n  ROOT y = f32[2,3]{1,0} reshape(x)\n}\n";
    assert!(!simplified(text).0);
    let (op, _, _) = root_of("  x = f32[4] parameter(0)\n  n = f32[4] negate(x)\n  ROOT y = f32[4] negate(n), control-predecessors={x}");
    assert_eq!(op, Opcode::Negate);
    // A fixed point: nothing more to do on a second run.
    let (_, m) = simplified(&entry("  x = f32[12] parameter(0)\n  a = f32[3,4] reshape(x)\n  ROOT b = f32[2,6] reshape(a)"));
    assert!(!simplified(&print_module(&m)).0);
}

#[test]
fn slices_of_a_broadcast_scalar_are_broadcasts() {
    let (op, _, operands) = root_of(
        "  c = f32[] constant(1)\n  b = f32[200,32,8] broadcast(c), dimensions={}\n  i = s32[] parameter(0)\n  z = s32[] constant(0)\n  ROOT d = f32[1,32,8] dynamic-slice(b, i, z, z), dynamic_slice_sizes={1,32,8}",
    );
    assert_eq!((op, operands), (Opcode::Broadcast, vec!["c".to_string()]));
    let (op, _, operands) = root_of("  c = f32[] constant(2)\n  b = f32[6,4] broadcast(c), dimensions={}\n  ROOT s = f32[2,4] slice(b), slice={[1:5:2], [0:4]}");
    assert_eq!((op, operands), (Opcode::Broadcast, vec!["c".to_string()]));
    // A slice of a broadcast array moves elements: it stays.
    let (op, _, _) = root_of("  x = f32[4] parameter(0)\n  b = f32[6,4] broadcast(x), dimensions={1}\n  i = s32[] parameter(1)\n  ROOT d = f32[2,4] dynamic-slice(b, i, i), dynamic_slice_sizes={2,4}");
    assert_eq!(op, Opcode::DynamicSlice);
}
