//! A computation: an arena of instructions with a root.

use super::instruction::{InstrId, Instruction};
use super::opcode::Opcode;
use hlojit_runtime::Shape;
use std::collections::HashMap;

/// A computation: named instructions in an arena, one of them the `ROOT`.
///
/// ```rust
/// use hlojit_compiler::hlo::{Computation, Instruction, Opcode};
/// use hlojit_runtime::{ElementType, Shape};
///
/// let f32s = Shape::array(ElementType::F32, [2]);
/// let mut c = Computation::new("neg");
/// let x = c.add(Instruction::new("x", Opcode::Parameter, f32s.clone(), vec![]));
/// c.get_mut(x).attrs.parameter_number = Some(0);
/// let unused = c.add(Instruction::new("unused", Opcode::Abs, f32s.clone(), vec![x]));
/// c.root = c.add(Instruction::new("y", Opcode::Negate, f32s.clone(), vec![x]));
/// assert_eq!(c.parameters(), vec![x]);
/// assert_eq!(c.users()[x.index()].len(), 2);
///
/// let renumbered = c.compact(); // drops `unused`
/// assert!(!renumbered.contains_key(&unused));
/// assert_eq!(c.instructions.len(), 2);
/// assert_eq!(c.root_instruction().name, "y");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Computation {
    /// The computation's name, unique within the module.
    pub name: String,
    /// Every instruction, addressed by `InstrId`. Passes append; `compact` drops dead ones.
    pub instructions: Vec<Instruction>,
    /// The `ROOT` instruction: its value is the computation's result.
    pub root: InstrId,
}

impl Computation {
    /// An empty computation (its root must be set once instructions are added).
    pub fn new(name: impl Into<String>) -> Computation {
        Computation { name: name.into(), instructions: Vec::new(), root: InstrId(0) }
    }

    /// Instruction `id`; panics when it is not in this computation.
    pub fn get(&self, id: InstrId) -> &Instruction {
        &self.instructions[id.index()]
    }

    /// Instruction `id`, mutably; panics when it is not in this computation.
    pub fn get_mut(&mut self, id: InstrId) -> &mut Instruction {
        &mut self.instructions[id.index()]
    }

    /// The `ROOT` instruction.
    pub fn root_instruction(&self) -> &Instruction {
        self.get(self.root)
    }

    /// Appends an instruction and returns its id. The root is not changed.
    pub fn add(&mut self, instruction: Instruction) -> InstrId {
        self.instructions.push(instruction);
        InstrId(self.instructions.len() as u32 - 1)
    }

    /// The ids of all instructions, in arena order (not necessarily dependency order: see
    /// [`Computation::post_order`]).
    pub fn ids(&self) -> impl Iterator<Item = InstrId> {
        (0..self.instructions.len() as u32).map(InstrId)
    }

    /// The ids of the instructions with `opcode`, in arena order, collected so the caller may
    /// change the computation while it visits them.
    pub fn ids_of(&self, opcode: Opcode) -> Vec<InstrId> {
        self.ids().filter(|&id| self.get(id).opcode == opcode).collect()
    }

    /// Parameter instructions ordered by parameter number.
    pub fn parameters(&self) -> Vec<InstrId> {
        let mut params: Vec<(i64, InstrId)> = self
            .ids()
            .filter(|&id| self.get(id).opcode == Opcode::Parameter)
            .map(|id| (self.get(id).attrs.parameter_number.unwrap_or(-1), id))
            .collect();
        params.sort();
        params.into_iter().map(|(_, id)| id).collect()
    }

    /// The parameters' shapes, by parameter number.
    pub fn parameter_shapes(&self) -> Vec<Shape> {
        self.parameters().into_iter().map(|id| self.get(id).shape.clone()).collect()
    }

    /// The root's shape.
    pub fn result_shape(&self) -> &Shape {
        &self.root_instruction().shape
    }

    /// The instruction called `name`, if any.
    pub fn find(&self, name: &str) -> Option<InstrId> {
        self.ids().find(|&id| self.get(id).name == name)
    }

    /// Instructions reachable from the root (through operands and control predecessors), each
    /// after all of its operands; then the unreachable ones, also in dependency order.
    pub fn post_order(&self) -> Vec<InstrId> {
        let n = self.instructions.len();
        let mut visited = vec![false; n];
        let mut order = Vec::with_capacity(n);
        let mut starts = vec![self.root];
        starts.extend(self.ids().filter(|&id| id != self.root));
        for start in starts {
            if visited[start.index()] {
                continue;
            }
            // Iterative DFS: (node, next child to visit).
            let mut stack: Vec<(InstrId, usize)> = vec![(start, 0)];
            visited[start.index()] = true;
            while let Some(&mut (id, ref mut next)) = stack.last_mut() {
                let inst = self.get(id);
                let deps = inst.operands.len() + inst.control_predecessors.len();
                if *next < deps {
                    let child = if *next < inst.operands.len() {
                        inst.operands[*next]
                    } else {
                        inst.control_predecessors[*next - inst.operands.len()]
                    };
                    *next += 1;
                    if !visited[child.index()] {
                        visited[child.index()] = true;
                        stack.push((child, 0));
                    }
                } else {
                    order.push(id);
                    stack.pop();
                }
            }
        }
        order
    }

    /// For each instruction, the instructions that use it as an operand (with repeats when an
    /// operand is used twice).
    pub fn users(&self) -> Vec<Vec<InstrId>> {
        let mut users = vec![Vec::new(); self.instructions.len()];
        for id in self.ids() {
            for &op in &self.get(id).operands {
                users[op.index()].push(id);
            }
        }
        users
    }

    /// Redirects every use of `old` (operands, control edges and the root) to `new`.
    pub fn replace_all_uses(&mut self, old: InstrId, new: InstrId) {
        for inst in &mut self.instructions {
            for op in inst.operands.iter_mut().chain(inst.control_predecessors.iter_mut()) {
                if *op == old {
                    *op = new;
                }
            }
        }
        if self.root == old {
            self.root = new;
        }
    }

    /// Instructions the root does not depend on, parameters and side-effecting instructions
    /// (see [`has_side_effect`]) excepted, are removed and the rest renumbered in post order.
    /// Returns the old-to-new id map (removed instructions are absent from it).
    pub fn compact(&mut self) -> HashMap<InstrId, InstrId> {
        let mut live = vec![false; self.instructions.len()];
        let mut stack = vec![self.root];
        for id in self.ids() {
            let inst = self.get(id);
            if inst.opcode == Opcode::Parameter || has_side_effect(inst) {
                stack.push(id);
            }
        }
        while let Some(id) = stack.pop() {
            if std::mem::replace(&mut live[id.index()], true) {
                continue;
            }
            let inst = self.get(id);
            stack.extend(inst.operands.iter().chain(&inst.control_predecessors));
        }
        let order: Vec<InstrId> = self.post_order().into_iter().filter(|id| live[id.index()]).collect();
        let map: HashMap<InstrId, InstrId> = order.iter().enumerate().map(|(i, &old)| (old, InstrId(i as u32))).collect();
        let mut old: Vec<Option<Instruction>> = std::mem::take(&mut self.instructions).into_iter().map(Some).collect();
        for &id in &order {
            let mut inst = old[id.index()].take().expect("each instruction once");
            for op in inst.operands.iter_mut() {
                *op = map[op];
            }
            inst.control_predecessors.retain(|p| map.contains_key(p));
            for p in inst.control_predecessors.iter_mut() {
                *p = map[p];
            }
            self.instructions.push(inst);
        }
        self.root = map[&self.root];
        map
    }
}

/// Instructions that must stay even when nothing uses their result.
pub fn has_side_effect(inst: &Instruction) -> bool {
    match inst.opcode {
        Opcode::CustomCall => inst.attrs.custom_call_has_side_effect,
        op => op.has_side_effect(),
    }
}
