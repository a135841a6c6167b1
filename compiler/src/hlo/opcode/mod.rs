//! Every HLO opcode and the facts about it, in one table: its name in HLO text, how many
//! operands and called computations it takes, what kind of work it is, how fusion treats it
//! and how much code it makes. Everything else asks the table (see [`info`]); adding an
//! opcode is one row here plus its shape rule (`shape_inference/`) and its emitter
//! (`codegen/`).

mod info;

pub use info::{Arity, Category, FusionClass, OpInfo};
use super::attribute_schema as schema;
use info::{at_least, exact, ANY, NONE};
use std::fmt;

macro_rules! opcodes {
    ($($variant:ident => $name:literal, $operands:expr, $called:expr, $category:ident, $fusion:ident, $weight:literal, $attributes:expr;)*) => {
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

            /// The opcode's row of the table.
            pub fn info(self) -> &'static OpInfo {
                &Self::TABLE[self as usize]
            }

            const TABLE: &'static [OpInfo] = &[$(OpInfo {
                name: $name,
                operands: $operands,
                called: $called,
                category: Category::$category,
                fusion: FusionClass::$fusion,
                weight: $weight,
                attributes: $attributes,
            },)*];

            /// The opcode's name in HLO text.
            pub fn name(self) -> &'static str {
                self.info().name
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

// Columns: variant => HLO name, operands, called computations, category, fusion class,
// code weight, the attributes it takes beyond the common ones (`attribute_schema.rs`).
opcodes! {
    Abs                     => "abs", exact(1), NONE, Elementwise, Elemental, 2, schema::UNARY;
    Add                     => "add", exact(2), NONE, Elementwise, Elemental, 2, schema::NO_OWN;
    AddDependency           => "add-dependency", exact(2), NONE, Structural, Opaque, 2, schema::NO_OWN;
    AfterAll                => "after-all", ANY, NONE, Structural, Opaque, 2, schema::NO_OWN;
    AllGather               => "all-gather", ANY, NONE, Collective, Opaque, 2, schema::ALL_GATHER;
    AllGatherDone           => "all-gather-done", exact(1), NONE, Collective, Opaque, 2, schema::NO_OWN;
    AllGatherStart          => "all-gather-start", ANY, NONE, Collective, Opaque, 2, schema::ALL_GATHER;
    AllReduce               => "all-reduce", ANY, exact(1), Collective, Opaque, 2, schema::ALL_REDUCE;
    AllReduceDone           => "all-reduce-done", exact(1), NONE, Collective, Opaque, 2, schema::NO_OWN;
    AllReduceStart          => "all-reduce-start", ANY, exact(1), Collective, Opaque, 2, schema::ALL_REDUCE;
    AllToAll                => "all-to-all", ANY, NONE, Collective, Opaque, 2, schema::ALL_GATHER;
    And                     => "and", exact(2), NONE, Elementwise, Elemental, 2, schema::NO_OWN;
    AsyncDone               => "async-done", exact(1), exact(1), Control, Opaque, 2, schema::ASYNC;
    AsyncStart              => "async-start", ANY, exact(1), Control, Opaque, 2, schema::ASYNC;
    AsyncUpdate             => "async-update", exact(1), exact(1), Control, Opaque, 2, schema::ASYNC;
    Atan2                   => "atan2", exact(2), NONE, Elementwise, Expensive, 2, schema::NO_OWN;
    BatchNormGrad           => "batch-norm-grad", exact(5), NONE, Expanded, Opaque, 2, schema::BATCH_NORM;
    BatchNormInference      => "batch-norm-inference", exact(5), NONE, Expanded, Opaque, 2, schema::BATCH_NORM;
    BatchNormTraining       => "batch-norm-training", exact(3), NONE, Expanded, Opaque, 2, schema::BATCH_NORM;
    Bitcast                 => "bitcast", exact(1), NONE, DataMovement, Passthrough, 0, schema::NO_OWN;
    BitcastConvert          => "bitcast-convert", exact(1), NONE, Elementwise, Elemental, 2, schema::UNARY;
    Broadcast               => "broadcast", exact(1), NONE, DataMovement, Cheap, 2, schema::DIMENSIONS;
    Call                    => "call", ANY, exact(1), Control, Opaque, 2, schema::CALL;
    Cbrt                    => "cbrt", exact(1), NONE, Elementwise, Expensive, 2, schema::UNARY;
    Ceil                    => "ceil", exact(1), NONE, Elementwise, Elemental, 2, schema::UNARY;
    Cholesky                => "cholesky", exact(1), NONE, Heavy, Opaque, 12, schema::CHOLESKY;
    Clamp                   => "clamp", exact(3), NONE, Elementwise, Elemental, 2, schema::NO_OWN;
    Clz                     => "count-leading-zeros", exact(1), NONE, Elementwise, Elemental, 2, schema::UNARY;
    CollectiveBroadcast     => "collective-broadcast", ANY, NONE, Collective, Opaque, 2, schema::COLLECTIVE;
    CollectivePermute       => "collective-permute", ANY, NONE, Collective, Opaque, 2, schema::COLLECTIVE_PERMUTE;
    CollectivePermuteDone   => "collective-permute-done", exact(1), NONE, Collective, Opaque, 2, schema::NO_OWN;
    CollectivePermuteStart  => "collective-permute-start", ANY, NONE, Collective, Opaque, 2, schema::COLLECTIVE_PERMUTE;
    Compare                 => "compare", exact(2), NONE, Elementwise, Elemental, 2, schema::COMPARE;
    Complex                 => "complex", exact(2), NONE, Elementwise, Elemental, 2, schema::NO_OWN;
    Concatenate             => "concatenate", at_least(1), NONE, DataMovement, Expensive, 2, schema::DIMENSIONS;
    Conditional             => "conditional", at_least(1), at_least(1), Control, Opaque, 2, schema::CONDITIONAL;
    Constant                => "constant", exact(0), NONE, Structural, Cheap, 0, schema::NO_OWN;
    Convert                 => "convert", exact(1), NONE, Elementwise, Elemental, 2, schema::UNARY;
    Convolution             => "convolution", exact(2), NONE, Heavy, Opaque, 40, schema::CONVOLUTION;
    Copy                    => "copy", exact(1), NONE, Elementwise, Elemental, 2, schema::UNARY;
    CopyDone                => "copy-done", exact(1), NONE, Other, Opaque, 2, schema::NO_OWN;
    CopyStart               => "copy-start", exact(1), NONE, Other, Opaque, 2, schema::COPY_START;
    Cosine                  => "cosine", exact(1), NONE, Elementwise, Expensive, 2, schema::UNARY;
    CustomCall              => "custom-call", ANY, ANY, CustomCall, Opaque, 2, schema::CUSTOM_CALL;
    Divide                  => "divide", exact(2), NONE, Elementwise, ExpensiveIfFloat, 2, schema::NO_OWN;
    Domain                  => "domain", exact(1), NONE, Other, Opaque, 2, schema::DOMAIN;
    Dot                     => "dot", exact(2), NONE, Heavy, Opaque, 40, schema::DOT;
    DynamicReshape          => "dynamic-reshape", at_least(1), NONE, DataMovement, Opaque, 2, schema::NO_OWN;
    DynamicSlice            => "dynamic-slice", at_least(1), NONE, DataMovement, Elemental, 2, schema::DYNAMIC_SLICE;
    DynamicUpdateSlice      => "dynamic-update-slice", at_least(2), NONE, DataMovement, Elemental, 2, schema::NO_OWN;
    Erf                     => "erf", exact(1), NONE, Elementwise, Expensive, 2, schema::UNARY;
    Exp                     => "exponential", exact(1), NONE, Elementwise, Expensive, 2, schema::UNARY;
    Expm1                   => "exponential-minus-one", exact(1), NONE, Elementwise, Expensive, 2, schema::UNARY;
    Fft                     => "fft", exact(1), NONE, Heavy, Opaque, 12, schema::FFT;
    Floor                   => "floor", exact(1), NONE, Elementwise, Elemental, 2, schema::UNARY;
    Fusion                  => "fusion", ANY, exact(1), Control, Opaque, 2, schema::FUSION;
    Gather                  => "gather", exact(2), NONE, DataMovement, Elemental, 2, schema::GATHER;
    GetDimensionSize        => "get-dimension-size", exact(1), NONE, Other, Opaque, 2, schema::DIMENSIONS;
    GetTupleElement         => "get-tuple-element", exact(1), NONE, Structural, Passthrough, 0, schema::GET_TUPLE_ELEMENT;
    Imag                    => "imag", exact(1), NONE, Elementwise, Elemental, 2, schema::UNARY;
    Infeed                  => "infeed", exact(1), NONE, SideEffect, Opaque, 2, schema::INFEED;
    Iota                    => "iota", exact(0), NONE, Generator, Cheap, 2, schema::IOTA;
    IsFinite                => "is-finite", exact(1), NONE, Elementwise, Elemental, 2, schema::UNARY;
    Log                     => "log", exact(1), NONE, Elementwise, Expensive, 2, schema::UNARY;
    Log1p                   => "log-plus-one", exact(1), NONE, Elementwise, Expensive, 2, schema::UNARY;
    Logistic                => "logistic", exact(1), NONE, Elementwise, Expensive, 2, schema::UNARY;
    Map                     => "map", ANY, exact(1), Elementwise, Elemental, 2, schema::REDUCE;
    Maximum                 => "maximum", exact(2), NONE, Elementwise, Elemental, 2, schema::NO_OWN;
    Minimum                 => "minimum", exact(2), NONE, Elementwise, Elemental, 2, schema::NO_OWN;
    MulHi                   => "mulhi", exact(2), NONE, Elementwise, Elemental, 2, schema::NO_OWN;
    Multiply                => "multiply", exact(2), NONE, Elementwise, Elemental, 2, schema::NO_OWN;
    Negate                  => "negate", exact(1), NONE, Elementwise, Elemental, 2, schema::UNARY;
    Not                     => "not", exact(1), NONE, Elementwise, Elemental, 2, schema::UNARY;
    OptimizationBarrier     => "opt-barrier", exact(1), NONE, Structural, Passthrough, 2, schema::NO_OWN;
    Or                      => "or", exact(2), NONE, Elementwise, Elemental, 2, schema::NO_OWN;
    Outfeed                 => "outfeed", exact(2), NONE, SideEffect, Opaque, 2, schema::OUTFEED;
    Pad                     => "pad", exact(2), NONE, DataMovement, Expensive, 2, schema::PAD;
    Parameter               => "parameter", exact(0), NONE, Structural, Passthrough, 0, schema::PARAMETER;
    PartitionId             => "partition-id", exact(0), NONE, DeviceId, Opaque, 2, schema::NO_OWN;
    Popcnt                  => "popcnt", exact(1), NONE, Elementwise, Elemental, 2, schema::UNARY;
    Power                   => "power", exact(2), NONE, Elementwise, Expensive, 2, schema::NO_OWN;
    RaggedAllToAll          => "ragged-all-to-all", ANY, NONE, Collective, Opaque, 2, schema::COLLECTIVE;
    Real                    => "real", exact(1), NONE, Elementwise, Elemental, 2, schema::UNARY;
    Recv                    => "recv", exact(1), NONE, SideEffect, Opaque, 2, schema::SEND_RECV;
    RecvDone                => "recv-done", exact(1), NONE, SideEffect, Opaque, 2, schema::SEND_RECV;
    Reduce                  => "reduce", ANY, exact(1), Reduction, Reduction, 12, schema::REDUCE;
    ReducePrecision         => "reduce-precision", exact(1), NONE, Elementwise, Elemental, 2, schema::REDUCE_PRECISION;
    ReduceScatter           => "reduce-scatter", ANY, exact(1), Collective, Opaque, 2, schema::REDUCE_SCATTER;
    ReduceWindow            => "reduce-window", ANY, exact(1), Reduction, Opaque, 12, schema::REDUCE_WINDOW;
    Remainder               => "remainder", exact(2), NONE, Elementwise, ExpensiveIfFloat, 2, schema::NO_OWN;
    ReplicaId               => "replica-id", exact(0), NONE, DeviceId, Opaque, 2, schema::NO_OWN;
    Reshape                 => "reshape", exact(1), NONE, DataMovement, Cheap, 2, schema::RESHAPE;
    Reverse                 => "reverse", exact(1), NONE, DataMovement, Cheap, 2, schema::DIMENSIONS;
    Rng                     => "rng", exact(2), NONE, SideEffect, Opaque, 2, schema::RNG;
    RngBitGenerator         => "rng-bit-generator", exact(1), NONE, Generator, Opaque, 2, schema::RNG_BIT_GENERATOR;
    RngGetAndUpdateState    => "rng-get-and-update-state", exact(0), NONE, SideEffect, Opaque, 2, schema::RNG_STATE;
    RoundNearestAfz         => "round-nearest-afz", exact(1), NONE, Elementwise, Elemental, 2, schema::UNARY;
    RoundNearestEven        => "round-nearest-even", exact(1), NONE, Elementwise, Elemental, 2, schema::UNARY;
    Rsqrt                   => "rsqrt", exact(1), NONE, Elementwise, Expensive, 2, schema::UNARY;
    Scatter                 => "scatter", ANY, exact(1), DataMovement, Opaque, 12, schema::SCATTER;
    Select                  => "select", exact(3), NONE, Elementwise, Elemental, 2, schema::NO_OWN;
    SelectAndScatter        => "select-and-scatter", exact(3), exact(2), Reduction, Opaque, 12, schema::SELECT_AND_SCATTER;
    Send                    => "send", exact(2), NONE, SideEffect, Opaque, 2, schema::SEND_RECV;
    SendDone                => "send-done", exact(1), NONE, SideEffect, Opaque, 2, schema::SEND_RECV;
    SetDimensionSize        => "set-dimension-size", exact(2), NONE, Other, Opaque, 2, schema::DIMENSIONS;
    ShiftLeft               => "shift-left", exact(2), NONE, Elementwise, Elemental, 2, schema::NO_OWN;
    ShiftRightArithmetic    => "shift-right-arithmetic", exact(2), NONE, Elementwise, Elemental, 2, schema::NO_OWN;
    ShiftRightLogical       => "shift-right-logical", exact(2), NONE, Elementwise, Elemental, 2, schema::NO_OWN;
    Sign                    => "sign", exact(1), NONE, Elementwise, Elemental, 2, schema::UNARY;
    Sine                    => "sine", exact(1), NONE, Elementwise, Expensive, 2, schema::UNARY;
    Slice                   => "slice", exact(1), NONE, DataMovement, Cheap, 2, schema::SLICE;
    Sort                    => "sort", ANY, exact(1), Heavy, Opaque, 12, schema::SORT;
    Sqrt                    => "sqrt", exact(1), NONE, Elementwise, Expensive, 2, schema::UNARY;
    StochasticConvert       => "stochastic-convert", exact(2), NONE, Elementwise, Elemental, 2, schema::NO_OWN;
    Subtract                => "subtract", exact(2), NONE, Elementwise, Elemental, 2, schema::NO_OWN;
    Tan                     => "tan", exact(1), NONE, Elementwise, Expensive, 2, schema::UNARY;
    Tanh                    => "tanh", exact(1), NONE, Elementwise, Expensive, 2, schema::UNARY;
    TopK                    => "topk", exact(1), NONE, Heavy, Opaque, 2, schema::TOPK;
    Transpose               => "transpose", exact(1), NONE, DataMovement, Cheap, 2, schema::DIMENSIONS;
    TriangularSolve         => "triangular-solve", exact(2), NONE, Heavy, Opaque, 12, schema::TRIANGULAR_SOLVE;
    Tuple                   => "tuple", ANY, NONE, Structural, Passthrough, 0, schema::NO_OWN;
    While                   => "while", exact(1), exact(2), Control, Opaque, 2, schema::WHILE;
    Xor                     => "xor", exact(2), NONE, Elementwise, Elemental, 2, schema::NO_OWN;

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

    /// The derived predicates agree with the lists they replaced (kept here as the check).
    #[test]
    fn derived_facts() {
        use Opcode::*;
        assert!(Exp.is_elementwise_unary() && Convert.is_elementwise_unary() && !Select.is_elementwise_unary());
        assert!(Compare.is_elementwise_binary() && StochasticConvert.is_elementwise_binary());
        assert!(Select.is_elementwise() && Clamp.is_elementwise() && !Map.is_elementwise() && Map.is_elemental());
        assert!(!Reduce.is_elemental() && Reduce.is_expensive(false) && Gather.is_elemental());
        assert!(Divide.is_expensive(true) && !Divide.is_expensive(false) && Pad.is_expensive(false));
        assert!(Rng.has_side_effect() && !CustomCall.has_side_effect() && !Add.has_side_effect());
        assert!(!ReplicaId.is_collective() && AllReduceDone.is_collective());
        let unary = Opcode::ALL.iter().filter(|o| o.is_elementwise_unary()).count();
        let binary = Opcode::ALL.iter().filter(|o| o.is_elementwise_binary()).count();
        assert_eq!((unary, binary), (30, 19));
    }
}
