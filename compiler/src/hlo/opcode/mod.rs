//! Every HLO opcode and the facts about it, in one table: its name in HLO text, how many
//! operands and called computations it takes, what kind of work it is, how fusion treats it
//! and how much code it makes. Everything else asks the table (see [`info`]); adding an
//! opcode is one row here plus its shape rule (`shape_inference/`), its attributes
//! (`attribute_schema.rs`) and its emitter (`codegen/`).

mod info;

pub use info::{Arity, Category, FusionClass, OpInfo};
use info::{at_least, exact, ANY, NONE};
use std::fmt;

macro_rules! opcodes {
    ($($variant:ident => $name:literal, $operands:expr, $called:expr, $category:ident, $fusion:ident, $weight:literal;)*) => {
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
// code weight.
opcodes! {
    Abs                     => "abs", exact(1), NONE, Elementwise, Elemental, 2;
    Add                     => "add", exact(2), NONE, Elementwise, Elemental, 2;
    AddDependency           => "add-dependency", exact(2), NONE, Structural, Opaque, 2;
    AfterAll                => "after-all", ANY, NONE, Structural, Opaque, 2;
    AllGather               => "all-gather", ANY, NONE, Collective, Opaque, 2;
    AllGatherDone           => "all-gather-done", exact(1), NONE, Collective, Opaque, 2;
    AllGatherStart          => "all-gather-start", ANY, NONE, Collective, Opaque, 2;
    AllReduce               => "all-reduce", ANY, exact(1), Collective, Opaque, 2;
    AllReduceDone           => "all-reduce-done", exact(1), NONE, Collective, Opaque, 2;
    AllReduceStart          => "all-reduce-start", ANY, exact(1), Collective, Opaque, 2;
    AllToAll                => "all-to-all", ANY, NONE, Collective, Opaque, 2;
    And                     => "and", exact(2), NONE, Elementwise, Elemental, 2;
    AsyncDone               => "async-done", exact(1), exact(1), Control, Opaque, 2;
    AsyncStart              => "async-start", ANY, exact(1), Control, Opaque, 2;
    AsyncUpdate             => "async-update", exact(1), exact(1), Control, Opaque, 2;
    Atan2                   => "atan2", exact(2), NONE, Elementwise, Expensive, 2;
    BatchNormGrad           => "batch-norm-grad", exact(5), NONE, Expanded, Opaque, 2;
    BatchNormInference      => "batch-norm-inference", exact(5), NONE, Expanded, Opaque, 2;
    BatchNormTraining       => "batch-norm-training", exact(3), NONE, Expanded, Opaque, 2;
    Bitcast                 => "bitcast", exact(1), NONE, DataMovement, Passthrough, 0;
    BitcastConvert          => "bitcast-convert", exact(1), NONE, Elementwise, Elemental, 2;
    Broadcast               => "broadcast", exact(1), NONE, DataMovement, Cheap, 2;
    Call                    => "call", ANY, exact(1), Control, Opaque, 2;
    Cbrt                    => "cbrt", exact(1), NONE, Elementwise, Expensive, 2;
    Ceil                    => "ceil", exact(1), NONE, Elementwise, Elemental, 2;
    Cholesky                => "cholesky", exact(1), NONE, Heavy, Opaque, 12;
    Clamp                   => "clamp", exact(3), NONE, Elementwise, Elemental, 2;
    Clz                     => "count-leading-zeros", exact(1), NONE, Elementwise, Elemental, 2;
    CollectiveBroadcast     => "collective-broadcast", ANY, NONE, Collective, Opaque, 2;
    CollectivePermute       => "collective-permute", ANY, NONE, Collective, Opaque, 2;
    CollectivePermuteDone   => "collective-permute-done", exact(1), NONE, Collective, Opaque, 2;
    CollectivePermuteStart  => "collective-permute-start", ANY, NONE, Collective, Opaque, 2;
    Compare                 => "compare", exact(2), NONE, Elementwise, Elemental, 2;
    Complex                 => "complex", exact(2), NONE, Elementwise, Elemental, 2;
    Concatenate             => "concatenate", at_least(1), NONE, DataMovement, Expensive, 2;
    Conditional             => "conditional", at_least(1), at_least(1), Control, Opaque, 2;
    Constant                => "constant", exact(0), NONE, Structural, Cheap, 0;
    Convert                 => "convert", exact(1), NONE, Elementwise, Elemental, 2;
    Convolution             => "convolution", exact(2), NONE, Heavy, Opaque, 40;
    Copy                    => "copy", exact(1), NONE, Elementwise, Elemental, 2;
    CopyDone                => "copy-done", exact(1), NONE, Other, Opaque, 2;
    CopyStart               => "copy-start", exact(1), NONE, Other, Opaque, 2;
    Cosine                  => "cosine", exact(1), NONE, Elementwise, Expensive, 2;
    CustomCall              => "custom-call", ANY, ANY, CustomCall, Opaque, 2;
    Divide                  => "divide", exact(2), NONE, Elementwise, ExpensiveIfFloat, 2;
    Domain                  => "domain", exact(1), NONE, Other, Opaque, 2;
    Dot                     => "dot", exact(2), NONE, Heavy, Opaque, 40;
    DynamicReshape          => "dynamic-reshape", at_least(1), NONE, DataMovement, Opaque, 2;
    DynamicSlice            => "dynamic-slice", at_least(1), NONE, DataMovement, Elemental, 2;
    DynamicUpdateSlice      => "dynamic-update-slice", at_least(2), NONE, DataMovement, Elemental, 2;
    Erf                     => "erf", exact(1), NONE, Elementwise, Expensive, 2;
    Exp                     => "exponential", exact(1), NONE, Elementwise, Expensive, 2;
    Expm1                   => "exponential-minus-one", exact(1), NONE, Elementwise, Expensive, 2;
    Fft                     => "fft", exact(1), NONE, Heavy, Opaque, 12;
    Floor                   => "floor", exact(1), NONE, Elementwise, Elemental, 2;
    Fusion                  => "fusion", ANY, exact(1), Control, Opaque, 2;
    Gather                  => "gather", exact(2), NONE, DataMovement, Elemental, 2;
    GetDimensionSize        => "get-dimension-size", exact(1), NONE, Other, Opaque, 2;
    GetTupleElement         => "get-tuple-element", exact(1), NONE, Structural, Passthrough, 0;
    Imag                    => "imag", exact(1), NONE, Elementwise, Elemental, 2;
    Infeed                  => "infeed", exact(1), NONE, SideEffect, Opaque, 2;
    Iota                    => "iota", exact(0), NONE, Generator, Cheap, 2;
    IsFinite                => "is-finite", exact(1), NONE, Elementwise, Elemental, 2;
    Log                     => "log", exact(1), NONE, Elementwise, Expensive, 2;
    Log1p                   => "log-plus-one", exact(1), NONE, Elementwise, Expensive, 2;
    Logistic                => "logistic", exact(1), NONE, Elementwise, Expensive, 2;
    Map                     => "map", ANY, exact(1), Elementwise, Elemental, 2;
    Maximum                 => "maximum", exact(2), NONE, Elementwise, Elemental, 2;
    Minimum                 => "minimum", exact(2), NONE, Elementwise, Elemental, 2;
    Multiply                => "multiply", exact(2), NONE, Elementwise, Elemental, 2;
    Negate                  => "negate", exact(1), NONE, Elementwise, Elemental, 2;
    Not                     => "not", exact(1), NONE, Elementwise, Elemental, 2;
    OptimizationBarrier     => "opt-barrier", exact(1), NONE, Structural, Passthrough, 2;
    Or                      => "or", exact(2), NONE, Elementwise, Elemental, 2;
    Outfeed                 => "outfeed", exact(2), NONE, SideEffect, Opaque, 2;
    Pad                     => "pad", exact(2), NONE, DataMovement, Expensive, 2;
    Parameter               => "parameter", exact(0), NONE, Structural, Passthrough, 0;
    PartitionId             => "partition-id", exact(0), NONE, DeviceId, Opaque, 2;
    Popcnt                  => "popcnt", exact(1), NONE, Elementwise, Elemental, 2;
    Power                   => "power", exact(2), NONE, Elementwise, Expensive, 2;
    RaggedAllToAll          => "ragged-all-to-all", ANY, NONE, Collective, Opaque, 2;
    Real                    => "real", exact(1), NONE, Elementwise, Elemental, 2;
    Recv                    => "recv", exact(1), NONE, SideEffect, Opaque, 2;
    RecvDone                => "recv-done", exact(1), NONE, SideEffect, Opaque, 2;
    Reduce                  => "reduce", ANY, exact(1), Reduction, Reduction, 12;
    ReducePrecision         => "reduce-precision", exact(1), NONE, Elementwise, Elemental, 2;
    ReduceScatter           => "reduce-scatter", ANY, exact(1), Collective, Opaque, 2;
    ReduceWindow            => "reduce-window", ANY, exact(1), Reduction, Opaque, 12;
    Remainder               => "remainder", exact(2), NONE, Elementwise, ExpensiveIfFloat, 2;
    ReplicaId               => "replica-id", exact(0), NONE, DeviceId, Opaque, 2;
    Reshape                 => "reshape", exact(1), NONE, DataMovement, Cheap, 2;
    Reverse                 => "reverse", exact(1), NONE, DataMovement, Cheap, 2;
    Rng                     => "rng", exact(2), NONE, SideEffect, Opaque, 2;
    RngBitGenerator         => "rng-bit-generator", exact(1), NONE, Generator, Opaque, 2;
    RngGetAndUpdateState    => "rng-get-and-update-state", exact(0), NONE, SideEffect, Opaque, 2;
    RoundNearestAfz         => "round-nearest-afz", exact(1), NONE, Elementwise, Elemental, 2;
    RoundNearestEven        => "round-nearest-even", exact(1), NONE, Elementwise, Elemental, 2;
    Rsqrt                   => "rsqrt", exact(1), NONE, Elementwise, Expensive, 2;
    Scatter                 => "scatter", ANY, exact(1), DataMovement, Opaque, 12;
    Select                  => "select", exact(3), NONE, Elementwise, Elemental, 2;
    SelectAndScatter        => "select-and-scatter", exact(3), exact(2), Reduction, Opaque, 12;
    Send                    => "send", exact(2), NONE, SideEffect, Opaque, 2;
    SendDone                => "send-done", exact(1), NONE, SideEffect, Opaque, 2;
    SetDimensionSize        => "set-dimension-size", exact(2), NONE, Other, Opaque, 2;
    ShiftLeft               => "shift-left", exact(2), NONE, Elementwise, Elemental, 2;
    ShiftRightArithmetic    => "shift-right-arithmetic", exact(2), NONE, Elementwise, Elemental, 2;
    ShiftRightLogical       => "shift-right-logical", exact(2), NONE, Elementwise, Elemental, 2;
    Sign                    => "sign", exact(1), NONE, Elementwise, Elemental, 2;
    Sine                    => "sine", exact(1), NONE, Elementwise, Expensive, 2;
    Slice                   => "slice", exact(1), NONE, DataMovement, Cheap, 2;
    Sort                    => "sort", ANY, exact(1), Heavy, Opaque, 12;
    Sqrt                    => "sqrt", exact(1), NONE, Elementwise, Expensive, 2;
    StochasticConvert       => "stochastic-convert", exact(2), NONE, Elementwise, Elemental, 2;
    Subtract                => "subtract", exact(2), NONE, Elementwise, Elemental, 2;
    Tan                     => "tan", exact(1), NONE, Elementwise, Expensive, 2;
    Tanh                    => "tanh", exact(1), NONE, Elementwise, Expensive, 2;
    TopK                    => "topk", exact(1), NONE, Heavy, Opaque, 2;
    Transpose               => "transpose", exact(1), NONE, DataMovement, Cheap, 2;
    TriangularSolve         => "triangular-solve", exact(2), NONE, Heavy, Opaque, 12;
    Tuple                   => "tuple", ANY, NONE, Structural, Passthrough, 0;
    While                   => "while", exact(1), exact(2), Control, Opaque, 2;
    Xor                     => "xor", exact(2), NONE, Elementwise, Elemental, 2;

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
        assert_eq!((unary, binary), (30, 18));
    }
}
