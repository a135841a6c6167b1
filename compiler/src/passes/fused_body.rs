//! Building one fused computation out of the bodies of several fusions, as multi-output fusion
//! (`multi_output::merge`) and row fusion (`row_fusion`) both do: each body is copied in, its
//! parameters bound either to a value already in the new body (the producer's result that the
//! consumer read from memory) or to a parameter of the new body, one per distinct operand of the
//! fusion that will call it, so an array both bodies read is read once.

use crate::error::Result;
use crate::hlo::{Computation, InstrId, Instruction, Opcode};
use hlojit_runtime::Shape;
use std::collections::{HashMap, HashSet};

/// A fused computation being assembled, with the operands its fusion instruction will take.
pub struct FusedBody {
    pub body: Computation,
    /// The calling fusion's operands (instructions of the enclosing computation), by parameter
    /// number.
    pub operands: Vec<InstrId>,
    /// Instruction names in `body`: copies keep their names where those are still free.
    names: HashSet<String>,
    /// Operand of the enclosing computation -> the parameter that reads it.
    param_of: HashMap<InstrId, InstrId>,
}

impl FusedBody {
    pub fn new(name: String) -> FusedBody {
        FusedBody { body: Computation::new(name), operands: Vec::new(), names: HashSet::new(), param_of: HashMap::new() }
    }

    /// The parameter that reads `operand` (of `shape`) of the enclosing computation, added
    /// the first time it is asked for.
    pub fn parameter(&mut self, operand: InstrId, shape: &Shape) -> InstrId {
        if let Some(&p) = self.param_of.get(&operand) {
            return p;
        }
        let n = self.operands.len();
        let name = unique_name(&mut self.names, &format!("param_{n}"));
        let mut param = Instruction::new(name, Opcode::Parameter, shape.clone(), vec![]);
        param.attrs.parameter_number = Some(n as i64);
        self.operands.push(operand);
        let p = self.body.add(param);
        self.param_of.insert(operand, p);
        p
    }

    /// Copies computation `from` into the body, producers first; its parameter `n` becomes
    /// `bind(self, n)`. Control edges inside `from` are dropped (they name `from`'s
    /// instructions). Returns where each instruction of `from` went.
    pub fn copy(&mut self, from: &Computation, bind: &mut dyn FnMut(&mut FusedBody, usize) -> Result<InstrId>) -> Result<HashMap<InstrId, InstrId>> {
        let mut map: HashMap<InstrId, InstrId> = HashMap::new();
        for id in from.post_order() {
            let inst = from.get(id);
            let new = if inst.opcode == Opcode::Parameter {
                bind(self, inst.attrs.parameter_number.unwrap_or(-1) as usize)?
            } else {
                let mut copy = inst.clone();
                copy.operands = inst.operands.iter().map(|o| map[o]).collect();
                copy.control_predecessors.clear();
                copy.name = unique_name(&mut self.names, &inst.name);
                self.body.add(copy)
            };
            map.insert(id, new);
        }
        Ok(map)
    }

    /// A name for a new instruction of the body, `base` or `base.<k>` if that is taken.
    pub fn fresh_name(&mut self, base: &str) -> String {
        unique_name(&mut self.names, base)
    }
}

/// `base`, or `base.<k>` for the first `k` that is not in `names`; recorded in `names`.
pub fn unique_name(names: &mut HashSet<String>, base: &str) -> String {
    let mut name = base.to_string();
    let mut k = 1;
    while names.contains(&name) {
        name = format!("{base}.{k}");
        k += 1;
    }
    names.insert(name.clone());
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use hlojit_runtime::{ArrayShape, ElementType};

    fn f32s(n: i64) -> Shape {
        Shape::Array(ArrayShape::new(ElementType::F32, vec![n]))
    }

    /// `x + y` over two parameters.
    fn add_body(name: &str) -> Computation {
        let mut c = Computation::new(name);
        let mut params = Vec::new();
        for n in 0..2 {
            let mut p = Instruction::new(format!("p{n}"), Opcode::Parameter, f32s(4), vec![]);
            p.attrs.parameter_number = Some(n);
            params.push(c.add(p));
        }
        c.root = c.add(Instruction::new("sum", Opcode::Add, f32s(4), params));
        c
    }

    #[test]
    fn shared_operands_become_one_parameter_and_names_stay_unique() {
        let (x, y, z) = (InstrId(10), InstrId(11), InstrId(12));
        let mut fused = FusedBody::new("merged".into());
        let first = add_body("a");
        let map = fused.copy(&first, &mut |f, n| Ok(f.parameter([x, y][n], &f32s(4)))).unwrap();
        let sum = map[&first.root];
        // The second body reads the first's result and x again, which keeps its parameter.
        let second = add_body("b");
        let map2 = fused.copy(&second, &mut |f, n| Ok(if n == 0 { sum } else { f.parameter(x, &f32s(4)) })).unwrap();
        assert_eq!(fused.operands, vec![x, y]);
        let names: Vec<&str> = fused.body.instructions.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["param_0", "param_1", "sum", "sum.1"]);
        let x_param = fused.parameter(x, &f32s(4));
        assert_eq!(fused.body.get(map2[&second.root]).operands, vec![sum, x_param]);
        assert_eq!(fused.parameter(z, &f32s(4)), InstrId(4));
        assert_eq!(fused.operands, vec![x, y, z]);
    }
}
