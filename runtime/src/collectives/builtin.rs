//! All-reduces whose reduction a communicator may run itself (MPI's built-in operations)
//! instead of handing every member's buffers to generated code.
//!
//! Only reductions whose result does not depend on the order or grouping in which the members'
//! values are combined qualify: wrapping integer add and multiply, integer min and max, and the
//! bitwise and / or / xor of integers and predicates. MPI may combine the members' values in any
//! grouping (even for a non-commutative user-defined op it only keeps the operand order, not the
//! association), so a floating-point sum or product would differ in the last bits from XLA's,
//! which folds the members in group order; and MPI's floating min/max do not propagate NaN as
//! XLA's do. Those keep the exchange: every member's buffers are copied and generated code folds
//! them in group order, exactly like the in-process run.

/// The one operation the reduction computation applies to its two parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum BuiltinOp {
    Sum = 0,
    Product = 1,
    Min = 2,
    Max = 3,
    And = 4,
    Or = 5,
    Xor = 6,
}

/// The element types a built-in reduction runs on (a predicate is a byte holding 0 or 1, so
/// the bitwise operations on bytes are its logical ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum BuiltinElement {
    S8 = 0,
    S16 = 1,
    S32 = 2,
    S64 = 3,
    U8 = 4,
    U16 = 5,
    U32 = 6,
    U64 = 7,
    Pred = 8,
}

impl BuiltinOp {
    pub fn from_code(code: i32) -> Option<BuiltinOp> {
        use BuiltinOp::*;
        [Sum, Product, Min, Max, And, Or, Xor].into_iter().find(|o| *o as i32 == code)
    }
}

impl BuiltinElement {
    pub fn from_code(code: i32) -> Option<BuiltinElement> {
        use BuiltinElement::*;
        [S8, S16, S32, S64, U8, U16, U32, U64, Pred].into_iter().find(|e| *e as i32 == code)
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        use BuiltinElement::*;
        match self {
            S8 | U8 | Pred => 1,
            S16 | U16 => 2,
            S32 | U32 => 4,
            S64 | U64 => 8,
        }
    }
}

/// A reduction a communicator may run natively; [`BuiltinReduction::new`] refuses the pairs
/// whose result would depend on the combining order (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuiltinReduction {
    pub op: BuiltinOp,
    pub element: BuiltinElement,
}

impl BuiltinReduction {
    pub fn new(op: BuiltinOp, element: BuiltinElement) -> Option<BuiltinReduction> {
        // On predicates only the bitwise operations are logical ones; XLA's add on pred is
        // not a wrapping byte add.
        let ok = element != BuiltinElement::Pred || matches!(op, BuiltinOp::And | BuiltinOp::Or | BuiltinOp::Xor);
        ok.then_some(BuiltinReduction { op, element })
    }
}

/// One leaf of a built-in all-reduce: this device's operand and its result, both `bytes` long
/// and in the same physical layout (they may be the same buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReduceLeaf {
    pub input: usize,
    pub output: usize,
    pub bytes: usize,
}
