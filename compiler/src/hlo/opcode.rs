//! Every HLO opcode, with the name HLO text uses for it.

use std::fmt;

macro_rules! opcodes {
    ($($variant:ident => $name:literal,)*) => {
        /// An HLO opcode. Each variant's semantics are XLA's (see XLA's operation semantics
        /// documentation under the opcode's HLO name).
        ///
        /// ```rust
        /// use hlojit_compiler::hlo::Opcode;
        ///
        /// assert_eq!(Opcode::from_name("dynamic-slice"), Some(Opcode::DynamicSlice));
        /// assert_eq!(Opcode::DynamicSlice.to_string(), "dynamic-slice");
        /// assert_eq!(Opcode::from_name("DynamicSlice"), None);
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Opcode {
            $(#[doc = concat!("`", $name, "` in HLO text.")] $variant,)*
        }

        impl Opcode {
            /// Every opcode, in declaration (alphabetical) order.
            pub const ALL: &'static [Opcode] = &[$(Opcode::$variant,)*];

            /// The opcode's name in HLO text.
            pub fn name(self) -> &'static str {
                match self {
                    $(Opcode::$variant => $name,)*
                }
            }

            /// The opcode HLO text spells `name`, accepting the older spellings XLA's parser
            /// still does; `None` for anything else.
            pub fn from_name(name: &str) -> Option<Opcode> {
                match name {
                    $($name => Some(Opcode::$variant),)*
                    // Older spellings XLA's parser still accepts.
                    "clz" => Some(Opcode::Clz),
                    "optimization-barrier" => Some(Opcode::OptimizationBarrier),
                    _ => None,
                }
            }
        }
    };
}

opcodes! {
    Abs => "abs",
    Add => "add",
    AddDependency => "add-dependency",
    AfterAll => "after-all",
    AllGather => "all-gather",
    AllGatherDone => "all-gather-done",
    AllGatherStart => "all-gather-start",
    AllReduce => "all-reduce",
    AllReduceDone => "all-reduce-done",
    AllReduceStart => "all-reduce-start",
    AllToAll => "all-to-all",
    And => "and",
    AsyncDone => "async-done",
    AsyncStart => "async-start",
    AsyncUpdate => "async-update",
    Atan2 => "atan2",
    BatchNormGrad => "batch-norm-grad",
    BatchNormInference => "batch-norm-inference",
    BatchNormTraining => "batch-norm-training",
    Bitcast => "bitcast",
    BitcastConvert => "bitcast-convert",
    Broadcast => "broadcast",
    Call => "call",
    Cbrt => "cbrt",
    Ceil => "ceil",
    Cholesky => "cholesky",
    Clamp => "clamp",
    Clz => "count-leading-zeros",
    CollectiveBroadcast => "collective-broadcast",
    CollectivePermute => "collective-permute",
    CollectivePermuteDone => "collective-permute-done",
    CollectivePermuteStart => "collective-permute-start",
    Compare => "compare",
    Complex => "complex",
    Concatenate => "concatenate",
    Conditional => "conditional",
    Constant => "constant",
    Convert => "convert",
    Convolution => "convolution",
    Copy => "copy",
    CopyDone => "copy-done",
    CopyStart => "copy-start",
    Cosine => "cosine",
    CustomCall => "custom-call",
    Divide => "divide",
    Domain => "domain",
    Dot => "dot",
    DynamicReshape => "dynamic-reshape",
    DynamicSlice => "dynamic-slice",
    DynamicUpdateSlice => "dynamic-update-slice",
    Erf => "erf",
    Exp => "exponential",
    Expm1 => "exponential-minus-one",
    Fft => "fft",
    Floor => "floor",
    Fusion => "fusion",
    Gather => "gather",
    GetDimensionSize => "get-dimension-size",
    GetTupleElement => "get-tuple-element",
    Imag => "imag",
    Infeed => "infeed",
    Iota => "iota",
    IsFinite => "is-finite",
    Log => "log",
    Log1p => "log-plus-one",
    Logistic => "logistic",
    Map => "map",
    Maximum => "maximum",
    Minimum => "minimum",
    Multiply => "multiply",
    Negate => "negate",
    Not => "not",
    OptimizationBarrier => "opt-barrier",
    Or => "or",
    Outfeed => "outfeed",
    Pad => "pad",
    Parameter => "parameter",
    PartitionId => "partition-id",
    Popcnt => "popcnt",
    Power => "power",
    RaggedAllToAll => "ragged-all-to-all",
    Real => "real",
    Recv => "recv",
    RecvDone => "recv-done",
    Reduce => "reduce",
    ReducePrecision => "reduce-precision",
    ReduceScatter => "reduce-scatter",
    ReduceWindow => "reduce-window",
    Remainder => "remainder",
    ReplicaId => "replica-id",
    Reshape => "reshape",
    Reverse => "reverse",
    Rng => "rng",
    RngBitGenerator => "rng-bit-generator",
    RngGetAndUpdateState => "rng-get-and-update-state",
    RoundNearestAfz => "round-nearest-afz",
    RoundNearestEven => "round-nearest-even",
    Rsqrt => "rsqrt",
    Scatter => "scatter",
    Select => "select",
    SelectAndScatter => "select-and-scatter",
    Send => "send",
    SendDone => "send-done",
    SetDimensionSize => "set-dimension-size",
    ShiftLeft => "shift-left",
    ShiftRightArithmetic => "shift-right-arithmetic",
    ShiftRightLogical => "shift-right-logical",
    Sign => "sign",
    Sine => "sine",
    Slice => "slice",
    Sort => "sort",
    Sqrt => "sqrt",
    StochasticConvert => "stochastic-convert",
    Subtract => "subtract",
    Tan => "tan",
    Tanh => "tanh",
    TopK => "topk",
    Transpose => "transpose",
    TriangularSolve => "triangular-solve",
    Tuple => "tuple",
    While => "while",
    Xor => "xor",
}

impl Opcode {
    /// Elementwise ops of one operand.
    pub fn is_elementwise_unary(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            Abs | Cbrt
                | Ceil
                | Clz
                | Convert
                | BitcastConvert
                | Copy
                | Cosine
                | Erf
                | Exp
                | Expm1
                | Floor
                | Imag
                | IsFinite
                | Log
                | Log1p
                | Logistic
                | Negate
                | Not
                | Popcnt
                | Real
                | ReducePrecision
                | RoundNearestAfz
                | RoundNearestEven
                | Rsqrt
                | Sign
                | Sine
                | Sqrt
                | Tan
                | Tanh
        )
    }

    /// Elementwise ops of two operands of the same shape.
    pub fn is_elementwise_binary(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            Add | Atan2
                | And
                | Complex
                | Compare
                | Divide
                | Maximum
                | Minimum
                | Multiply
                | Or
                | Power
                | Remainder
                | ShiftLeft
                | ShiftRightArithmetic
                | ShiftRightLogical
                | StochasticConvert
                | Subtract
                | Xor
        )
    }

    /// Ops whose output element at an index depends only on the operands' elements at that index.
    pub fn is_elementwise(self) -> bool {
        self.is_elementwise_unary() || self.is_elementwise_binary() || matches!(self, Opcode::Select | Opcode::Clamp)
    }

    /// Ops that communicate between devices.
    pub fn is_collective(self) -> bool {
        use Opcode::*;
        matches!(
            self,
            AllGather
                | AllGatherStart
                | AllGatherDone
                | AllReduce
                | AllReduceStart
                | AllReduceDone
                | AllToAll
                | CollectiveBroadcast
                | CollectivePermute
                | CollectivePermuteStart
                | CollectivePermuteDone
                | ReduceScatter
                | RaggedAllToAll
        )
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &op in Opcode::ALL {
            assert_eq!(Opcode::from_name(op.name()), Some(op));
        }
    }
}
