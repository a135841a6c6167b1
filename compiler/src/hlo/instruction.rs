//! An HLO instruction: opcode, result shape, operands, called computations and attributes.

use super::attributes::Attributes;
use super::opcode::Opcode;
use hlojit_runtime::Shape;

/// An instruction's index in its computation's arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstrId(pub u32);

/// A computation's index in its module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CompId(pub u32);

impl InstrId {
    /// The index into [`Computation::instructions`](super::Computation::instructions).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl CompId {
    /// The index into [`Module::computations`](super::Module::computations).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One HLO instruction, `name = shape opcode(operands), attributes`.
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    /// The name, unique within the module (without the `%` some printers add).
    pub name: String,
    /// What the instruction computes.
    pub opcode: Opcode,
    /// The result's shape (layouts as written, or as the layout passes set them).
    pub shape: Shape,
    /// Operands, in order, as ids in the same computation.
    pub operands: Vec<InstrId>,
    /// Called computations, in the order of the opcode's roles (see the accessors below).
    pub called: Vec<CompId>,
    /// The typed attributes (`dimensions=`, `slice=`, ...) and the kept raw ones.
    pub attrs: Attributes,
    /// `control-predecessors={...}`: instructions that must run before this one although it
    /// does not use their values.
    pub control_predecessors: Vec<InstrId>,
}

impl Instruction {
    /// An instruction with no attributes, called computations or control predecessors.
    pub fn new(name: impl Into<String>, opcode: Opcode, shape: Shape, operands: Vec<InstrId>) -> Instruction {
        Instruction {
            name: name.into(),
            opcode,
            shape,
            operands,
            called: Vec::new(),
            attrs: Attributes::default(),
            control_predecessors: Vec::new(),
        }
    }

    /// Operand `i`.
    ///
    /// # Panics
    /// When the instruction has no operand `i` (the verifier checks operand counts).
    pub fn operand(&self, i: usize) -> InstrId {
        self.operands[i]
    }

    /// `to_apply` of map, reduce, reduce-window, scatter, sort, call, all-reduce,
    /// reduce-scatter and custom-call.
    pub fn to_apply(&self) -> Option<CompId> {
        use Opcode::*;
        match self.opcode {
            Map | Reduce | ReduceWindow | Scatter | Sort | Call | AllReduce | AllReduceStart | ReduceScatter
            | CustomCall => self.called.first().copied(),
            _ => None,
        }
    }

    /// `calls` of a fusion.
    pub fn fused_computation(&self) -> Option<CompId> {
        (self.opcode == Opcode::Fusion).then(|| self.called.first().copied()).flatten()
    }

    /// `condition` of a while loop.
    pub fn while_condition(&self) -> Option<CompId> {
        (self.opcode == Opcode::While).then(|| self.called.first().copied()).flatten()
    }

    /// `body` of a while loop.
    pub fn while_body(&self) -> Option<CompId> {
        (self.opcode == Opcode::While).then(|| self.called.get(1).copied()).flatten()
    }

    /// `select` of select-and-scatter: picks an element of each window.
    pub fn select_computation(&self) -> Option<CompId> {
        (self.opcode == Opcode::SelectAndScatter).then(|| self.called.first().copied()).flatten()
    }

    /// `scatter` of select-and-scatter: combines a source value into the selected element.
    pub fn scatter_computation(&self) -> Option<CompId> {
        (self.opcode == Opcode::SelectAndScatter).then(|| self.called.get(1).copied()).flatten()
    }

    /// Branches of a conditional; with a pred selector, `[true_computation, false_computation]`.
    pub fn branch_computations(&self) -> &[CompId] {
        if self.opcode == Opcode::Conditional {
            &self.called
        } else {
            &[]
        }
    }

    /// The literal of an array constant. A constant printed as `constant({...})` had its
    /// values elided by the printer: they are not in the text, so nothing can compute it.
    pub fn array_literal(&self) -> crate::error::Result<&hlojit_runtime::ArrayLiteral> {
        match &self.attrs.literal {
            Some(hlojit_runtime::Literal::Array(a)) => Ok(a),
            Some(_) => Err(crate::error::Error::Unsupported(format!("tuple constant {}", self.name))),
            None => Err(crate::error::Error::ElidedConstant(self.name.clone())),
        }
    }

    /// The array shape of the result; panics for tuples (callers check first).
    pub fn array_shape(&self) -> &hlojit_runtime::ArrayShape {
        self.shape.as_array().unwrap_or_else(|| panic!("{} has a non-array shape {}", self.name, self.shape))
    }
}
