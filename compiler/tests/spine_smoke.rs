use hlojit_compiler::hlo::*;
use hlojit_compiler::{CompileOptions, Executable};
use hlojit_runtime::{ArrayLiteral, ElementType, Literal, Shape};

#[test]
fn add_and_broadcast() {
    let mut m = Module::new("m");
    let mut c = Computation::new("main");
    let s = Shape::array_row_major(ElementType::F32, vec![100_000]);
    let mut p0 = Instruction::new("x", Opcode::Parameter, s.clone(), vec![]);
    p0.attrs.parameter_number = Some(0);
    let mut p1 = Instruction::new("y", Opcode::Parameter, s.clone(), vec![]);
    p1.attrs.parameter_number = Some(1);
    let x = c.add(p0);
    let y = c.add(p1);
    let add = c.add(Instruction::new("add", Opcode::Add, s.clone(), vec![x, y]));
    let mut k = Instruction::new("k", Opcode::Constant, Shape::scalar(ElementType::F32), vec![]);
    k.attrs.literal = Some(Literal::Array(ArrayLiteral::scalar(2.0f32)));
    let k = c.add(k);
    let mut b = Instruction::new("b", Opcode::Broadcast, s.clone(), vec![k]);
    b.attrs.dimensions = Some(vec![]);
    let b = c.add(b);
    let mul = c.add(Instruction::new("mul", Opcode::Multiply, s.clone(), vec![add, b]));
    let e = c.add(Instruction::new("e", Opcode::Exp, s.clone(), vec![mul]));
    c.root = c.add(Instruction::new("t", Opcode::Tuple, Shape::Tuple(vec![s.clone(), s.clone()]), vec![mul, e]));
    m.entry = m.add_computation(c);
    let exe = Executable::compile(&m, &CompileOptions::default()).unwrap();
    let xs: Vec<f32> = (0..100_000).map(|i| i as f32 * 0.00001).collect();
    let ys: Vec<f32> = (0..100_000).map(|i| 1.0 - i as f32 * 0.0001).collect();
    let out = exe
        .run_literals(&[ArrayLiteral::from_slice(&[100_000], &xs).unwrap().into(), ArrayLiteral::from_slice(&[100_000], &ys).unwrap().into()])
        .unwrap();
    let leaves = out.leaves();
    let r = leaves[0].as_slice::<f32>().unwrap();
    let r2 = leaves[1].as_slice::<f32>().unwrap();
    for i in [0usize, 1, 777, 99_999] {
        assert_eq!(r[i], (xs[i] + ys[i]) * 2.0);
        assert!((r2[i] - r[i].exp()).abs() <= 1e-6 * r[i].exp());
    }
}
