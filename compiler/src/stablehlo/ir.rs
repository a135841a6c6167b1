//! The generic op tree both front ends (MLIR text, MLIR bytecode) produce: MLIR's own model of
//! operations with operands, attributes, regions and result types, before any StableHLO meaning
//! is given to them. Pretty-printed ops are normalized to the attribute names of their generic
//! form, so conversion reads one representation.

use hlojit_runtime::ElementType;
use std::collections::BTreeMap;

/// Where an op came from: line and column in MLIR text, or an offset in bytecode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Loc {
    #[default]
    Unknown,
    Text { line: usize, column: usize },
    Bytecode { offset: usize },
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Loc::Unknown => write!(f, "?"),
            Loc::Text { line, column } => write!(f, "{line}:{column}"),
            Loc::Bytecode { offset } => write!(f, "bytecode offset {offset}"),
        }
    }
}

/// An element type of a tensor: HLO's element types plus `index` (shapes in attributes) and
/// `!stablehlo.token`.
#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    Tensor(TensorType),
    Token,
    Tuple(Vec<Type>),
    /// A scalar type outside a tensor (attribute values: `1 : i64`).
    Scalar(ScalarType),
    /// A type the converter has no use for, kept by name (`!sdy.mesh`, `index` ...).
    Other(String),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarType {
    Element(ElementType),
    Index,
    /// `none` and other non-numeric builtin types.
    None,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TensorType {
    /// Dimension sizes; `None` is a dynamic dimension `?`.
    pub dims: Vec<Option<i64>>,
    /// Upper bounds of dynamic dimensions (`#stablehlo.bounds<?, 7>`), one per dimension.
    pub bounds: Option<Vec<Option<i64>>>,
    pub element: ScalarType,
}

/// An attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    Unit,
    Bool(bool),
    Int(i128, Option<ScalarType>),
    Float(f64, Option<ScalarType>),
    String(String),
    Type(Type),
    Array(Vec<Attr>),
    /// `array<i64: 1, 2>` (also i1 arrays as 0/1).
    DenseArray(Vec<i64>),
    /// `dense<...> : tensor<...>` with its elements as bit patterns (complex: two per element),
    /// or a `dense_resource` whose blob is resolved at the end of parsing.
    Dense(DenseElements),
    Dict(BTreeMap<String, Attr>),
    /// `@sym` or `@a::@b`.
    Symbol(String),
    /// A dialect enum or struct: `#stablehlo<comparison_direction LT>` is
    /// `Dialect { name: "comparison_direction", fields: {"value": LT} }`; `#stablehlo.gather<...>`
    /// is `Dialect { name: "gather", fields }`; a bare enum word in a pretty form is `Enum`.
    Dialect { name: String, fields: BTreeMap<String, Attr> },
    Enum(String),
    /// Attributes the converter ignores but must parse (`#sdy.sharding<...>`, locations).
    Opaque(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct DenseElements {
    pub ty: TensorType,
    /// One bit pattern per scalar, row-major (complex: real, imaginary); a single value is a
    /// splat. Empty with `resource` set until the resource is resolved.
    pub bits: Vec<u64>,
    pub resource: Option<String>,
}

/// A use of a value: `%name` or result `#index` of a multi-result op.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueRef {
    pub name: String,
    pub index: usize,
}

#[derive(Clone, Debug, Default)]
pub struct Op {
    pub name: String,
    /// Result groups as written: `%0:2 = ...` is ("0", 2); `%a, %b = ...` is two groups of one.
    pub results: Vec<(String, usize)>,
    pub operands: Vec<ValueRef>,
    pub attrs: BTreeMap<String, Attr>,
    pub regions: Vec<Region>,
    pub result_types: Vec<Type>,
    pub loc: Loc,
}

impl Op {
    pub fn attr(&self, name: &str) -> Option<&Attr> {
        self.attrs.get(name)
    }

    /// The value names this op defines, in result order.
    pub fn result_refs(&self) -> Vec<ValueRef> {
        let mut refs = Vec::new();
        for (name, count) in &self.results {
            if *count == 1 && self.results.len() > 1 {
                refs.push(ValueRef { name: name.clone(), index: 0 });
            } else {
                for index in 0..*count {
                    refs.push(ValueRef { name: name.clone(), index });
                }
            }
        }
        refs
    }
}

#[derive(Clone, Debug, Default)]
pub struct Region {
    pub blocks: Vec<Block>,
}

#[derive(Clone, Debug, Default)]
pub struct Block {
    pub args: Vec<(String, Type)>,
    pub ops: Vec<Op>,
}

/// A parsed `module`: its attributes and top-level ops (`func.func`s).
#[derive(Clone, Debug, Default)]
pub struct MlirModule {
    pub name: Option<String>,
    pub attrs: BTreeMap<String, Attr>,
    pub ops: Vec<Op>,
}
