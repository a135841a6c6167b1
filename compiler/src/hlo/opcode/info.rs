//! The kinds of facts the opcode table records for each opcode, and what the rest of the
//! compiler derives from them. Passes and codegen both ask these methods (never their own
//! lists of opcodes), so adding an opcode is one table row plus its shape rule and emitter.

use super::Opcode;

/// How many operands (or called computations) an opcode takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {
    Exact(usize),
    AtLeast(usize),
}

/// `n` exactly.
pub const fn exact(n: usize) -> Arity {
    Arity::Exact(n)
}

/// `n` or more.
pub const fn at_least(n: usize) -> Arity {
    Arity::AtLeast(n)
}

/// Any number, zero included (the op's shape rule checks what it needs).
pub const ANY: Arity = Arity::AtLeast(0);

/// No called computations.
pub const NONE: Arity = Arity::Exact(0);

impl Arity {
    pub fn admits(self, n: usize) -> bool {
        match self {
            Arity::Exact(e) => n == e,
            Arity::AtLeast(m) => n >= m,
        }
    }
}

/// What kind of work an opcode is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    /// Output element i depends only on the operands' elements at i.
    Elementwise,
    /// Moves or selects elements without arithmetic on them (index remapping, gathers).
    DataMovement,
    /// Produces values from an index pattern or generator state.
    Generator,
    /// Combines many input elements into each output element through a called computation.
    Reduction,
    /// Dedicated emitters or runtime kernels (dot, convolution, sort, FFT, linear algebra).
    Heavy,
    /// Runs called computations (while, conditional, call, fusion, async wrappers).
    Control,
    /// Calls a custom-call target; side-effecting only if its attribute says so.
    CustomCall,
    /// Communicates between devices.
    Collective,
    /// The device's replica or partition number.
    DeviceId,
    /// Must run even when its result is unused (I/O, random state).
    SideEffect,
    /// Needs no code of its own: parameters, constants, tuples, tokens, barriers.
    Structural,
    /// Rewritten into other ops by an expander pass before code generation.
    Expanded,
    /// Everything else (domains, async copies, dynamic dimension sizes).
    Other,
}

/// How fusion treats an opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FusionClass {
    /// Elemental but does no work (its buffer aliases its operand's); never fused.
    Passthrough,
    /// Elemental and cheap to recompute wherever it is used: no arithmetic beyond index remapping.
    Cheap,
    /// Elemental: fused into its consumers, computed per element.
    Elemental,
    /// Elemental but costly per element: not recomputed for every element of a broadcast.
    Expensive,
    /// Like [`FusionClass::Expensive`] for floating-point types, [`FusionClass::Elemental`] otherwise.
    ExpensiveIfFloat,
    /// Not elemental, but may root a fusion that absorbs its elemental producers (reduce).
    Reduction,
    /// Gets a kernel (or a runtime call) of its own.
    Opaque,
}

/// One row of the opcode table.
#[derive(Clone, Copy, Debug)]
pub struct OpInfo {
    pub name: &'static str,
    pub operands: Arity,
    pub called: Arity,
    pub category: Category,
    pub fusion: FusionClass,
    /// A rough measure of the LLVM work one instruction of this opcode makes in a kernel
    /// (the compile scheduler balances kernels by it): 0 for ops that generate no code, more
    /// for the ops whose emitters generate large loop nests.
    pub weight: usize,
    /// The attributes the opcode takes beyond [`crate::hlo::attribute_schema::COMMON`]; the
    /// parser rejects any other.
    pub attributes: &'static [&'static str],
}

impl Opcode {
    /// Elementwise ops of one operand.
    pub fn is_elementwise_unary(self) -> bool {
        self.is_elementwise() && self.info().operands == Arity::Exact(1)
    }

    /// Elementwise ops of two operands of the same shape.
    pub fn is_elementwise_binary(self) -> bool {
        self.is_elementwise() && self.info().operands == Arity::Exact(2)
    }

    /// Ops whose output element at an index depends only on the operands' elements at that
    /// index (`map` excepted: it calls a computation).
    pub fn is_elementwise(self) -> bool {
        self.info().category == Category::Elementwise && self != Opcode::Map
    }

    /// Ops whose every output element is computed independently by the elemental generators.
    pub fn is_elemental(self) -> bool {
        use FusionClass::*;
        matches!(self.info().fusion, Passthrough | Cheap | Elemental | Expensive | ExpensiveIfFloat)
    }

    /// Ops that communicate between devices.
    pub fn is_collective(self) -> bool {
        self.info().category == Category::Collective
    }

    /// Ops that must stay even when nothing uses their result (custom calls decide by their
    /// attribute; see [`crate::hlo::computation::has_side_effect`]).
    pub fn has_side_effect(self) -> bool {
        self.info().category == Category::SideEffect
    }

    /// Ops that need no code: their value is a parameter, a constant or an alias of others.
    pub fn is_structural(self) -> bool {
        self.info().category == Category::Structural
    }

    /// Elemental ops that do no work of their own (their buffers alias their operands').
    pub fn is_passthrough(self) -> bool {
        self.info().fusion == FusionClass::Passthrough
    }

    /// Ops that may be the root of a fusion: elemental ones that do work, and reductions.
    pub fn can_root_fusion(self) -> bool {
        (self.is_elemental() && !self.is_passthrough()) || self.info().fusion == FusionClass::Reduction
    }

    /// Cheap to recompute wherever it is used.
    pub fn is_cheap(self) -> bool {
        self.info().fusion == FusionClass::Cheap
    }

    /// Costly per element for elements of a floating-point type or not.
    pub fn is_expensive(self, floating: bool) -> bool {
        match self.info().fusion {
            FusionClass::Expensive | FusionClass::Reduction => true,
            FusionClass::ExpensiveIfFloat => floating,
            _ => false,
        }
    }

    /// How much LLVM work one instruction of this opcode makes (see [`OpInfo::weight`]).
    pub fn weight(self) -> usize {
        self.info().weight
    }
}
