//! Typed instruction attributes. Each field is the attribute of one or more opcodes; the
//! verifier checks that an instruction has the ones its opcode needs. Attributes hlojit does not
//! interpret (metadata, sharding, frontend attributes, ...) are kept verbatim in `other`.

use hlojit_runtime::{Literal, Shape};

/// One dimension of a `slice={[start:limit:stride], ...}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceDim {
    /// First index taken (inclusive).
    pub start: i64,
    /// End of the range (exclusive).
    pub limit: i64,
    /// Step between taken indices (positive); the result has `ceil((limit - start) / stride)`
    /// elements in this dimension.
    pub stride: i64,
}

/// One dimension of a pad's `padding=low_high_interior`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PadDim {
    /// Padding elements before the first element; negative removes elements.
    pub low: i64,
    /// Padding elements after the last element; negative removes elements.
    pub high: i64,
    /// Padding elements between each pair of adjacent elements (non-negative).
    pub interior: i64,
}

/// One spatial dimension of a `window={size=... stride=... pad=... lhs_dilate=... rhs_dilate=...}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowDim {
    /// Window extent in this dimension (`size=`).
    pub size: i64,
    /// Step between window positions (`stride=`, 1 when absent).
    pub stride: i64,
    /// Padding before the (dilated) base (`pad=low_high`, 0 when absent).
    pub padding_low: i64,
    /// Padding after the (dilated) base.
    pub padding_high: i64,
    /// `rhs_dilate`: dilation of the window (kernel).
    pub window_dilation: i64,
    /// `lhs_dilate`: dilation of the base (input).
    pub base_dilation: i64,
    /// `rhs_reversal`: the window is applied reversed.
    pub window_reversal: bool,
}

impl WindowDim {
    /// A window of `size` with every other setting at its default: stride 1, no padding,
    /// no dilation, not reversed.
    pub fn new(size: i64) -> WindowDim {
        WindowDim { size, stride: 1, padding_low: 0, padding_high: 0, window_dilation: 1, base_dilation: 1, window_reversal: false }
    }
}

/// Convolution dimension numbers, written as `dim_labels=b01f_01io->b01f`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
///
/// Every field is a dimension index of the operand it names; `b01f_01io->b01f` says the input
/// is batch, spatial 0, spatial 1, feature (`input_batch = 0`, `input_spatial = [1, 2]`,
/// `input_feature = 3`), the kernel is spatial 0, spatial 1, input feature, output feature,
/// and the output is laid out like the input.
pub struct ConvDimensionNumbers {
    /// The input's batch dimension (`b` left of `_`).
    pub input_batch: i64,
    /// The input's feature dimension (`f` left of `_`).
    pub input_feature: i64,
    /// The input's spatial dimensions, in spatial order (`0`, `1`, ...).
    pub input_spatial: Vec<i64>,
    /// The kernel's input-feature dimension (`i`).
    pub kernel_input_feature: i64,
    /// The kernel's output-feature dimension (`o`).
    pub kernel_output_feature: i64,
    /// The kernel's spatial dimensions, in spatial order.
    pub kernel_spatial: Vec<i64>,
    /// The output's batch dimension (`b` after `->`).
    pub output_batch: i64,
    /// The output's feature dimension (`f` after `->`).
    pub output_feature: i64,
    /// The output's spatial dimensions, in spatial order.
    pub output_spatial: Vec<i64>,
}

/// A dot's dimension numbers (`lhs_batch_dims={0} lhs_contracting_dims={2} ...`). Batch
/// dimensions pair up in order and lead the result, then the lhs's free dimensions, then the
/// rhs's; contracting dimensions pair up in order and are summed over.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct DotDimensionNumbers {
    /// `lhs_batch_dims`: the lhs's batch dimensions.
    pub lhs_batch: Vec<i64>,
    /// `rhs_batch_dims`: the rhs's batch dimensions, paired with `lhs_batch`.
    pub rhs_batch: Vec<i64>,
    /// `lhs_contracting_dims`: the lhs's summed-over dimensions.
    pub lhs_contracting: Vec<i64>,
    /// `rhs_contracting_dims`: the rhs's summed-over dimensions, paired with `lhs_contracting`.
    pub rhs_contracting: Vec<i64>,
}

/// A gather's dimension numbers, with XLA's meanings (see XLA's operation semantics).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct GatherDimensionNumbers {
    /// Result dimensions that index within a gathered slice (the rest are batch dimensions).
    pub offset_dims: Vec<i64>,
    /// Operand dimensions whose slice size is 1 and that the result drops.
    pub collapsed_slice_dims: Vec<i64>,
    /// For each component of a start index, the operand dimension it indexes.
    pub start_index_map: Vec<i64>,
    /// Operand dimensions that are batch dimensions (sliced with size 1 and dropped, indexed
    /// by the matching `start_indices_batching_dims`).
    pub operand_batching_dims: Vec<i64>,
    /// The start indices' dimensions paired with `operand_batching_dims`.
    pub start_indices_batching_dims: Vec<i64>,
    /// The start indices' dimension holding each index vector (the rank, for an implicit
    /// trailing dimension of size 1).
    pub index_vector_dim: i64,
}

/// A scatter's dimension numbers, with XLA's meanings (see XLA's operation semantics).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ScatterDimensionNumbers {
    /// Update dimensions that index within a window of the operand (the rest are scatter
    /// dimensions).
    pub update_window_dims: Vec<i64>,
    /// Operand dimensions a window has size 1 in and the updates leave out.
    pub inserted_window_dims: Vec<i64>,
    /// For each component of a scatter index, the operand dimension it indexes.
    pub scatter_dims_to_operand_dims: Vec<i64>,
    /// Operand dimensions that are batch dimensions (indexed by the matching
    /// `scatter_indices_batching_dims`).
    pub input_batching_dims: Vec<i64>,
    /// The scatter indices' dimensions paired with `input_batching_dims`.
    pub scatter_indices_batching_dims: Vec<i64>,
    /// The scatter indices' dimension holding each index vector (the rank, for an implicit
    /// trailing dimension of size 1).
    pub index_vector_dim: i64,
}

macro_rules! text_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident => $text:literal,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vm])* $variant,)* }

        impl $name {
            /// The spelling in HLO text.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }

            /// The value HLO text spells `s` (exactly, case included), if any.
            pub fn from_name(s: &str) -> Option<$name> {
                match s { $($text => Some($name::$variant),)* _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

text_enum!(
    /// `direction=` of a compare: `lhs <op> rhs`.
    ComparisonDirection {
        /// `lhs == rhs`.
        Eq => "EQ",
        /// `lhs != rhs`.
        Ne => "NE",
        /// `lhs >= rhs`.
        Ge => "GE",
        /// `lhs > rhs`.
        Gt => "GT",
        /// `lhs <= rhs`.
        Le => "LE",
        /// `lhs < rhs`.
        Lt => "LT",
    }
);
text_enum!(
    /// `type=` of a compare; absent means the default for the operand type.
    ComparisonType {
        /// IEEE comparison of floats (NaN compares unequal to everything).
        Float => "FLOAT",
        /// Total order of floats: `-NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN`.
        TotalOrder => "TOTALORDER",
        /// Two's-complement integer comparison.
        Signed => "SIGNED",
        /// Unsigned integer comparison (also pred).
        Unsigned => "UNSIGNED",
    }
);
text_enum!(
    /// `distribution=` of `rng`.
    RngDistribution {
        /// Uniform in `[a, b)`.
        Uniform => "rng_uniform",
        /// Normal with mean `a` and standard deviation `b`.
        Normal => "rng_normal",
    }
);
text_enum!(
    /// `algorithm=` of `rng-bit-generator`.
    RngAlgorithm {
        /// The backend's choice (Philox in hlojit).
        Default => "rng_default",
        /// Threefry-2x32.
        ThreeFry => "rng_three_fry",
        /// Philox-4x32.
        Philox => "rng_philox",
    }
);
text_enum!(
    /// `fft_type=` of `fft`.
    FftType {
        /// Forward complex-to-complex transform.
        Fft => "FFT",
        /// Inverse complex-to-complex transform, scaled by 1/N.
        Ifft => "IFFT",
        /// Real-to-complex forward transform (keeps `n/2 + 1` frequencies).
        Rfft => "RFFT",
        /// Complex-to-real inverse of `RFFT`.
        Irfft => "IRFFT",
    }
);
text_enum!(
    /// `transpose_a=` of `triangular-solve`: what is applied to `a` before solving.
    Transpose {
        /// `a` as given.
        NoTranspose => "NO_TRANSPOSE",
        /// `a` transposed.
        Transpose => "TRANSPOSE",
        /// `a` conjugate-transposed (the same as transposed for real types).
        Adjoint => "ADJOINT",
    }
);
text_enum!(
    /// `kind=` of a fusion: how XLA's emitters would treat it. hlojit keeps it for printing.
    FusionKind {
        /// Elementwise-style loop fusion.
        Loop => "kLoop",
        /// A fusion rooted at a reduction-like op.
        Input => "kInput",
        /// A fusion whose root consumes an expensive op (dot, convolution) elementwise.
        Output => "kOutput",
        /// A fusion with a custom emitter.
        Custom => "kCustom",
    }
);
text_enum!(
    /// The calling convention of a custom-call target.
    CustomCallApiVersion {
        /// `void f(void* out, const void** ins)`: no way to report failure.
        Original => "API_VERSION_ORIGINAL",
        /// Like `Original`, plus an `XlaCustomCallStatus*` through which the target reports
        /// failure.
        StatusReturning => "API_VERSION_STATUS_RETURNING",
        /// `void f(void* out, const void** ins, const char* opaque, size_t opaque_len,
        /// XlaCustomCallStatus* status)`: the backend config as `opaque` bytes.
        StatusReturningUnified => "API_VERSION_STATUS_RETURNING_UNIFIED",
        /// XLA's typed FFI: an `XLA_FFI_Handler` receiving a call frame.
        TypedFfi => "API_VERSION_TYPED_FFI",
    }
);

/// A `backend_config`: a quoted string (legacy custom calls, JSON configs) or a braced
/// dictionary (typed-FFI attributes), kept as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendConfig {
    /// The unescaped contents of `"..."`.
    Quoted(String),
    /// The raw text of `{...}`, braces included.
    Braced(String),
}

/// Which zeros of a convolution's padded, dilated input are multiplied by the kernel. The
/// operation semantics pad with zeros, so `0 x w` is computed for every tap and a non-finite
/// `w` on padding gives NaN; XLA:CPU does that only where it runs the convolution on Eigen
/// and skips such taps elsewhere (`passes::conv_taps` has the rules). The two agree whenever
/// the kernel is finite.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConvTaps {
    /// Taps on padding or base-dilation holes contribute `0 x w` (Eigen); else nothing.
    pub multiply_padding: bool,
    /// A grouped convolution computed as one ungrouped convolution whose kernel is zero
    /// outside each group's block (XLA:CPU's depthwise group expansion for f64 and complex): every input
    /// feature of the other groups contributes `x x 0`, NaN when `x` is not finite.
    pub cross_group_zeros: bool,
}

/// An attribute hlojit keeps but does not interpret: `key=value` with the value's raw text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawAttribute {
    /// The attribute name left of `=`.
    pub key: String,
    /// The value's text right of `=`, exactly as written.
    pub value: String,
}

/// One pair of `output_to_operand_aliasing`: the output at shape index `output` starts as
/// operand `operand`'s value at shape index `operand_index`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputAlias {
    pub output: Vec<i64>,
    pub operand: usize,
    pub operand_index: Vec<i64>,
}

/// The attributes of an instruction. A field is `None`/empty/false when the attribute is absent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attributes {
    /// `parameter(N)`.
    pub parameter_number: Option<i64>,
    /// `constant(...)`.
    pub literal: Option<Literal>,
    /// get-tuple-element `index=N`.
    pub tuple_index: Option<i64>,
    /// `dimensions={...}` of broadcast, transpose, reverse, reduce, concatenate, sort, map,
    /// all-gather, all-to-all.
    pub dimensions: Option<Vec<i64>>,
    /// `slice={[start:limit:stride], ...}` of slice, one entry per dimension.
    pub slice: Option<Vec<SliceDim>>,
    /// `padding=low_high_interior x ...` of pad, one entry per dimension.
    pub padding: Option<Vec<PadDim>>,
    /// `window={...}` of convolution (one entry per spatial dimension), reduce-window and
    /// select-and-scatter (one entry per operand dimension).
    pub window: Option<Vec<WindowDim>>,
    /// `dim_labels=` of convolution.
    pub conv_dims: Option<ConvDimensionNumbers>,
    /// `feature_group_count=` of convolution (grouped/depthwise convolution; 1 when absent).
    pub feature_group_count: Option<i64>,
    /// `batch_group_count=` of convolution (1 when absent).
    pub batch_group_count: Option<i64>,
    /// Not printed: how XLA:CPU would treat this convolution's padded taps, decided by the
    /// `conv-taps` pass from where the convolution sits before calls are inlined (see
    /// `passes::conv_taps`); `None` until that pass ran.
    pub conv_taps: Option<ConvTaps>,
    /// Not printed: this instruction sits in a while loop that XLA:CPU compiles as one
    /// small-call kernel with its legacy elemental emitter, whose integer `power` differs
    /// from the main path (set by `passes::small_call_marks`).
    pub small_call: bool,
    /// `lhs_batch_dims=`, `lhs_contracting_dims=` ... of dot.
    pub dot_dims: Option<DotDimensionNumbers>,
    /// `operand_precision={default,high}` of dot and convolution.
    pub operand_precision: Option<Vec<String>>,
    /// `offset_dims=`, `collapsed_slice_dims=` ... of gather.
    pub gather_dims: Option<GatherDimensionNumbers>,
    /// `update_window_dims=`, `inserted_window_dims=` ... of scatter.
    pub scatter_dims: Option<ScatterDimensionNumbers>,
    /// Gather `slice_sizes` and dynamic-slice `dynamic_slice_sizes`.
    pub slice_sizes: Option<Vec<i64>>,
    /// `indices_are_sorted=true` of gather and scatter: a promise the frontend makes; hlojit
    /// keeps it for printing but does not rely on it.
    pub indices_are_sorted: bool,
    /// `unique_indices=true` of scatter (and gather): a promise the frontend makes; hlojit
    /// keeps it for printing but does not rely on it.
    pub unique_indices: bool,
    /// `direction=` of compare.
    pub direction: Option<ComparisonDirection>,
    /// `type=` of compare.
    pub comparison_type: Option<ComparisonType>,
    /// `iota_dimension=` of iota: the dimension along which values count up.
    pub iota_dimension: Option<i64>,
    /// `exponent_bits=` of reduce-precision.
    pub exponent_bits: Option<i64>,
    /// `mantissa_bits=` of reduce-precision.
    pub mantissa_bits: Option<i64>,
    /// `kind=` of fusion.
    pub fusion_kind: Option<FusionKind>,
    /// `distribution=` of rng.
    pub distribution: Option<RngDistribution>,
    /// `algorithm=` of rng-bit-generator.
    pub rng_algorithm: Option<RngAlgorithm>,
    /// `fft_type=` of fft.
    pub fft_type: Option<FftType>,
    /// `fft_length={...}` of fft: the transform lengths of the innermost dimensions.
    pub fft_length: Option<Vec<i64>>,
    /// `is_stable=true` of sort: equal keys keep their order.
    pub is_stable: bool,
    /// topk `k=` and `largest=`.
    pub k: Option<i64>,
    /// `delta=` of rng-get-and-update-state (required): how far the counter advances.
    pub rng_delta: Option<i64>,
    /// topk `largest=`: the `k` largest (true, the default) or smallest elements.
    pub largest: Option<bool>,
    /// `custom_call_target="..."`: the symbol or registered name to call.
    pub custom_call_target: Option<String>,
    /// `api_version=` of custom-call (`API_VERSION_ORIGINAL` when absent).
    pub api_version: Option<CustomCallApiVersion>,
    /// `backend_config=` of custom-call (other opcodes' backend configs are kept in `other`).
    pub backend_config: Option<BackendConfig>,
    /// The typed-FFI attributes of a custom call with `api_version=API_VERSION_TYPED_FFI`,
    /// decoded from its `backend_config` when the instruction is parsed or built (see
    /// [`Attributes::decode_ffi_attributes`]), sorted by name as XLA passes them.
    pub ffi_attributes: Vec<(String, hlojit_runtime::custom_call::AttrValue)>,
    /// `custom_call_has_side_effect=true`: the call must run even if its result is unused.
    pub custom_call_has_side_effect: bool,
    /// `operand_layout_constraints={...}` of custom-call: the layouts the target expects its
    /// operands in.
    pub operand_layout_constraints: Option<Vec<Shape>>,
    /// `output_to_operand_aliasing={{0}: (1, {})}` of custom-call and fusion: outputs that
    /// share their buffer with an operand (computed in place over it).
    pub output_to_operand_aliasing: Option<Vec<OutputAlias>>,
    /// cholesky and triangular-solve `lower=`.
    pub lower: Option<bool>,
    /// triangular-solve `left_side=`: solve `op(a) x = b` (true) or `x op(a) = b` (false).
    pub left_side: Option<bool>,
    /// triangular-solve `unit_diagonal=`: take `a`'s diagonal to be ones without reading it.
    pub unit_diagonal: Option<bool>,
    /// triangular-solve `transpose_a=`.
    pub transpose_a: Option<Transpose>,
    /// `epsilon=` of the batch-norm ops: added to the variance before its square root.
    pub epsilon: Option<f32>,
    /// `feature_index=` of the batch-norm ops: the feature dimension.
    pub feature_index: Option<i64>,
    /// Collectives: `replica_groups={{0,1},{2,3}}` (the iota form `[2,2]<=[4]` is expanded).
    pub replica_groups: Option<Vec<Vec<i64>>>,
    /// `channel_id=` of collectives and send/recv.
    pub channel_id: Option<i64>,
    /// `use_global_device_ids=true` of collectives: replica groups hold global device ids.
    pub use_global_device_ids: bool,
    /// `source_target_pairs={{0,1},...}` of collective-permute: (from, to) replica pairs.
    pub source_target_pairs: Option<Vec<(i64, i64)>>,
    /// `is_composite=true` of call: a named composite op (`composite.name` and friends in
    /// `frontend_attributes`, which the verifier requires); the called body is what runs.
    pub is_composite: bool,
    /// Attributes kept verbatim, in the order they were written.
    pub other: Vec<RawAttribute>,
}

/// A dot without dimension numbers: no batch and no contracting dimensions (an outer product).
static NO_DOT_DIMS: DotDimensionNumbers =
    DotDimensionNumbers { lhs_batch: Vec::new(), rhs_batch: Vec::new(), lhs_contracting: Vec::new(), rhs_contracting: Vec::new() };

/// What an absent attribute means, as XLA's parser defines it: the one place passes and codegen
/// learn it from (the verifier has already refused instructions that lack an attribute XLA
/// requires, so for those the empty value is never seen).
impl Attributes {
    /// `dimensions=`; none when absent.
    pub fn dims(&self) -> &[i64] {
        self.dimensions.as_deref().unwrap_or(&[])
    }

    /// `window=`; absent means no window dimensions (a rank-0 reduce-window, a convolution
    /// without spatial dimensions).
    pub fn window_dims(&self) -> &[WindowDim] {
        self.window.as_deref().unwrap_or(&[])
    }

    /// The dot's dimension numbers; absent ones are empty.
    pub fn dot_dimension_numbers(&self) -> &DotDimensionNumbers {
        self.dot_dims.as_ref().unwrap_or(&NO_DOT_DIMS)
    }

    /// `slice=` of slice (required).
    pub fn slice_dims(&self) -> &[SliceDim] {
        self.slice.as_deref().unwrap_or(&[])
    }

    /// `padding=` of pad (required).
    pub fn pad_dims(&self) -> &[PadDim] {
        self.padding.as_deref().unwrap_or(&[])
    }

    /// `slice_sizes=` of gather / `dynamic_slice_sizes=` of dynamic-slice (required).
    pub fn sizes_of_slices(&self) -> &[i64] {
        self.slice_sizes.as_deref().unwrap_or(&[])
    }

    /// Decodes a typed-FFI custom call's `backend_config` into [`Attributes::ffi_attributes`]
    /// (other API versions pass their config as opaque bytes and keep nothing here). Called by
    /// the parser and the builder, so a malformed dictionary is an error where it is written,
    /// not when the call is compiled.
    pub fn decode_ffi_attributes(&mut self) -> Result<(), String> {
        self.ffi_attributes = match (&self.api_version, &self.backend_config) {
            (Some(CustomCallApiVersion::TypedFfi), Some(BackendConfig::Braced(text))) => {
                super::ffi_attributes::parse_ffi_attributes(text)?
            }
            (Some(CustomCallApiVersion::TypedFfi), Some(BackendConfig::Quoted(text))) if !text.trim().is_empty() => {
                super::ffi_attributes::parse_ffi_attributes(text)?
            }
            _ => Vec::new(),
        };
        Ok(())
    }

    /// The verbatim value of a kept attribute.
    pub fn raw(&self, key: &str) -> Option<&str> {
        self.other.iter().find(|a| a.key == key).map(|a| a.value.as_str())
    }

    /// Sets a kept attribute, replacing its value if present, appending it otherwise.
    pub fn set_raw(&mut self, key: &str, value: impl Into<String>) {
        let value = value.into();
        match self.other.iter_mut().find(|a| a.key == key) {
            Some(a) => a.value = value,
            None => self.other.push(RawAttribute { key: key.to_string(), value }),
        }
    }
}
