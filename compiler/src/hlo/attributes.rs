//! Typed instruction attributes. Each field is the attribute of one or more opcodes; the
//! verifier checks that an instruction has the ones its opcode needs. Attributes hlojit does not
//! interpret (metadata, sharding, frontend attributes, ...) are kept verbatim in `other`.

use hlojit_runtime::{Literal, Shape};

/// One dimension of a `slice={[start:limit:stride], ...}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceDim {
    pub start: i64,
    pub limit: i64,
    pub stride: i64,
}

/// One dimension of a pad's `padding=low_high_interior`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PadDim {
    pub low: i64,
    pub high: i64,
    pub interior: i64,
}

/// One spatial dimension of a `window={size=... stride=... pad=... lhs_dilate=... rhs_dilate=...}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowDim {
    pub size: i64,
    pub stride: i64,
    pub padding_low: i64,
    pub padding_high: i64,
    /// `rhs_dilate`: dilation of the window (kernel).
    pub window_dilation: i64,
    /// `lhs_dilate`: dilation of the base (input).
    pub base_dilation: i64,
    /// `rhs_reversal`: the window is applied reversed.
    pub window_reversal: bool,
}

impl WindowDim {
    pub fn new(size: i64) -> WindowDim {
        WindowDim { size, stride: 1, padding_low: 0, padding_high: 0, window_dilation: 1, base_dilation: 1, window_reversal: false }
    }
}

/// Convolution dimension numbers, written as `dim_labels=b01f_01io->b01f`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ConvDimensionNumbers {
    pub input_batch: i64,
    pub input_feature: i64,
    pub input_spatial: Vec<i64>,
    pub kernel_input_feature: i64,
    pub kernel_output_feature: i64,
    pub kernel_spatial: Vec<i64>,
    pub output_batch: i64,
    pub output_feature: i64,
    pub output_spatial: Vec<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct DotDimensionNumbers {
    pub lhs_batch: Vec<i64>,
    pub rhs_batch: Vec<i64>,
    pub lhs_contracting: Vec<i64>,
    pub rhs_contracting: Vec<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct GatherDimensionNumbers {
    pub offset_dims: Vec<i64>,
    pub collapsed_slice_dims: Vec<i64>,
    pub start_index_map: Vec<i64>,
    pub operand_batching_dims: Vec<i64>,
    pub start_indices_batching_dims: Vec<i64>,
    pub index_vector_dim: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ScatterDimensionNumbers {
    pub update_window_dims: Vec<i64>,
    pub inserted_window_dims: Vec<i64>,
    pub scatter_dims_to_operand_dims: Vec<i64>,
    pub input_batching_dims: Vec<i64>,
    pub scatter_indices_batching_dims: Vec<i64>,
    pub index_vector_dim: i64,
}

macro_rules! text_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident => $text:literal,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($variant,)* }

        impl $name {
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }

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

text_enum!(ComparisonDirection { Eq => "EQ", Ne => "NE", Ge => "GE", Gt => "GT", Le => "LE", Lt => "LT", });
text_enum!(
    /// `type=` of a compare; absent means the default for the operand type.
    ComparisonType { Float => "FLOAT", TotalOrder => "TOTALORDER", Signed => "SIGNED", Unsigned => "UNSIGNED", }
);
text_enum!(RngDistribution { Uniform => "rng_uniform", Normal => "rng_normal", });
text_enum!(RngAlgorithm { Default => "rng_default", ThreeFry => "rng_three_fry", Philox => "rng_philox", });
text_enum!(FftType { Fft => "FFT", Ifft => "IFFT", Rfft => "RFFT", Irfft => "IRFFT", });
text_enum!(Transpose { NoTranspose => "NO_TRANSPOSE", Transpose => "TRANSPOSE", Adjoint => "ADJOINT", });
text_enum!(FusionKind { Loop => "kLoop", Input => "kInput", Output => "kOutput", Custom => "kCustom", });
text_enum!(
    /// The calling convention of a custom-call target.
    CustomCallApiVersion {
        Original => "API_VERSION_ORIGINAL",
        StatusReturning => "API_VERSION_STATUS_RETURNING",
        StatusReturningUnified => "API_VERSION_STATUS_RETURNING_UNIFIED",
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

/// An attribute hlojit keeps but does not interpret: `key=value` with the value's raw text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawAttribute {
    pub key: String,
    pub value: String,
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
    pub slice: Option<Vec<SliceDim>>,
    pub padding: Option<Vec<PadDim>>,
    pub window: Option<Vec<WindowDim>>,
    pub conv_dims: Option<ConvDimensionNumbers>,
    pub feature_group_count: Option<i64>,
    pub batch_group_count: Option<i64>,
    pub dot_dims: Option<DotDimensionNumbers>,
    /// `operand_precision={default,high}` of dot and convolution.
    pub operand_precision: Option<Vec<String>>,
    pub gather_dims: Option<GatherDimensionNumbers>,
    pub scatter_dims: Option<ScatterDimensionNumbers>,
    /// Gather `slice_sizes` and dynamic-slice `dynamic_slice_sizes`.
    pub slice_sizes: Option<Vec<i64>>,
    pub indices_are_sorted: bool,
    pub unique_indices: bool,
    pub direction: Option<ComparisonDirection>,
    pub comparison_type: Option<ComparisonType>,
    pub iota_dimension: Option<i64>,
    pub exponent_bits: Option<i64>,
    pub mantissa_bits: Option<i64>,
    pub fusion_kind: Option<FusionKind>,
    pub distribution: Option<RngDistribution>,
    pub rng_algorithm: Option<RngAlgorithm>,
    pub fft_type: Option<FftType>,
    pub fft_length: Option<Vec<i64>>,
    pub is_stable: bool,
    /// topk `k=` and `largest=`.
    pub k: Option<i64>,
    pub largest: Option<bool>,
    pub custom_call_target: Option<String>,
    pub api_version: Option<CustomCallApiVersion>,
    pub backend_config: Option<BackendConfig>,
    pub custom_call_has_side_effect: bool,
    pub operand_layout_constraints: Option<Vec<Shape>>,
    /// cholesky and triangular-solve `lower=`.
    pub lower: Option<bool>,
    pub left_side: Option<bool>,
    pub unit_diagonal: Option<bool>,
    pub transpose_a: Option<Transpose>,
    pub epsilon: Option<f32>,
    pub feature_index: Option<i64>,
    /// Collectives: `replica_groups={{0,1},{2,3}}` (the iota form `[2,2]<=[4]` is expanded).
    pub replica_groups: Option<Vec<Vec<i64>>>,
    pub channel_id: Option<i64>,
    pub use_global_device_ids: bool,
    pub source_target_pairs: Option<Vec<(i64, i64)>>,
    pub is_composite: bool,
    /// Attributes kept verbatim, in the order they were written.
    pub other: Vec<RawAttribute>,
}

impl Attributes {
    /// The verbatim value of a kept attribute.
    pub fn raw(&self, key: &str) -> Option<&str> {
        self.other.iter().find(|a| a.key == key).map(|a| a.value.as_str())
    }

    pub fn set_raw(&mut self, key: &str, value: impl Into<String>) {
        let value = value.into();
        match self.other.iter_mut().find(|a| a.key == key) {
            Some(a) => a.value = value,
            None => self.other.push(RawAttribute { key: key.to_string(), value }),
        }
    }
}
