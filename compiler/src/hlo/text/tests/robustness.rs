//! The parser never panics: every prefix of real modules and many random mutations of them
//! give `Ok` or `Err`, and whatever parses also prints to text that parses again.

use super::super::{parse_module, print_module};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A module using most of the syntax: header attributes, debug sections, signatures, typed
/// operands, comments, every kind of attribute value and constant.
const RICH: &str = r#"HloModule rich, is_scheduled=true, entry_computation_layout={(f32[4,4]{0,1:T(2,2)}, s32[2]{0})->(f32[4,4]{1,0}, /*index=1*/c64[2]{0})}, input_output_alias={ {0}: (0, {}, may-alias) }, num_partitions=1

FileNames
1 "x.py"

StackFrames
1 {file_location_id=1 parent_frame_id=1}

%add.1 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b), metadata={op_name="add" source_file="a,\"b\".py"}
}

%cond (p: (s32[], f32[4,4])) -> pred[] {
  %p = (s32[], f32[4,4]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT, type=SIGNED
}

%body (p: (s32[], f32[4,4])) -> (s32[], f32[4,4]) {
  ROOT %p = (s32[], f32[4,4]{1,0}) parameter(0)
}

ENTRY %main (x: f32[4,4], i: s32[2]) -> (f32[4,4], c64[2]) {
  %x = f32[4,4]{0,1:T(2,2)} parameter(0), sharding={replicated}
  %i = s32[2]{0} parameter(1)
  %zero = f32[] constant(0)
  %k = f32[2,2]{1,0} constant({ { 1.5, -inf }, { nan(0x1), 1e-07 } })
  %c = c64[2]{0} constant({(1, -2), (0.5, nan)})
  %t = (s32[], f32[4,4]{1,0}) tuple(s32[] %n0, %x)
  %n0 = s32[] constant(0)
  %w = (s32[], f32[4,4]{1,0}) while(%t), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"3"}}
  %y = f32[4,4]{1,0} get-tuple-element(%w), index=1
  %r = f32[4]{0} reduce(%y, %zero), dimensions={1}, to_apply=%add.1
  %rw = f32[2,4]{1,0} reduce-window(%y, %zero), window={size=2x1 stride=2x1 pad=0_0x0_0 lhs_dilate=1x1 rhs_dilate=1x1 rhs_reversal=0x0}, to_apply=%add.1
  %sl = f32[2,2]{1,0} slice(%y), slice={[0:4:2], [1:3]}
  %pd = f32[7,4]{1,0} pad(%rw, %zero), padding=1_2_1x0_0_0
  %cv = f32[1,3,3,1]{3,2,1,0} convolution(f32[1,4,4,1]{3,2,1,0} %x4, %x4), window={size=2x2}, dim_labels=b01f_01io->b01f
  %x4 = f32[1,4,4,1]{3,2,1,0} reshape(%y)
  %ds = f32[2,2]{1,0} dynamic-slice(%y, %n0, %n0), dynamic_slice_sizes={2,2}
  %g = f32[2,4]{1,0} gather(%y, %i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  %d = f32[4,4]{1,0} dot(%y, %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}
  %ar = f32[4,4]{1,0} all-reduce(%d), channel_id=1, replica_groups=[1,1]<=[1], to_apply=%add.1
  %cc = f32[4,4]{1,0} custom-call(%ar), custom_call_target="t\x41", backend_config="{\"a\":1}", control-predecessors={%g}
  ROOT %out = (f32[4,4]{1,0}, c64[2]{0}) tuple(%cc, %c)
}
"#;

/// Parses `text` and, if that works, prints and reparses; panics propagate with context.
fn exercise(text: &str, context: &dyn Fn() -> String) {
    let result = catch_unwind(AssertUnwindSafe(|| {
        if let Ok(module) = parse_module(text) {
            let printed = print_module(&module);
            if let Err(e) = parse_module(&printed) {
                panic!("printed text of a parsed module does not parse: {e}\n{printed}");
            }
        }
    }));
    if let Err(panic) = result {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
        panic!(
            "parser panicked on {}: {message:?}\ninput:\n{text}",
            context()
        );
    }
}

/// Cuts at every character boundary.
fn all_prefixes(text: &str, name: &str) {
    for (end, _) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        exercise(&text[..end], &|| format!("the {end}-byte prefix of {name}"));
    }
}

#[test]
fn rich_module_parses_and_round_trips() {
    let module = parse_module(RICH).unwrap_or_else(|e| panic!("{e}"));
    let printed = print_module(&module);
    assert_eq!(
        print_module(&parse_module(&printed).expect("reparse")),
        printed
    );
}

#[test]
fn every_prefix_of_a_module_is_handled() {
    all_prefixes(RICH, "the rich module");
    if let Some(dir) = super::corpus::conformance_dir() {
        for case in [
            "hlo_conditional/module.hlo",
            "collective_all_reduce/optimized.hlo",
        ] {
            if let Ok(text) = std::fs::read_to_string(dir.join("cases").join(case)) {
                all_prefixes(&text, case);
            }
        }
    }
}

/// A small deterministic generator (SplitMix64), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Characters that matter to the grammar, plus a few that do not belong anywhere.
const PIECES: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    "=",
    ":",
    "%",
    "\"",
    "\\",
    "/*",
    "*/",
    "-",
    "<=",
    "->",
    "x",
    "_",
    "0",
    "9",
    "99999999999999999999",
    "-1",
    "f32",
    "f32[",
    "pred",
    "token[]",
    "ROOT ",
    "ENTRY ",
    "nan(0x",
    "inf",
    "...",
    "\n",
    " ",
    "é",
    "T(",
    "*",
    "#",
    "{...}",
];

#[test]
fn random_mutations_are_handled() {
    let bytes = RICH.as_bytes();
    let mut rng = Rng(0x5eed);
    for round in 0..3000 {
        let mut text: Vec<u8> = bytes.to_vec();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(text.len() + 1);
            match rng.below(4) {
                0 => {
                    let end = (at + 1 + rng.below(12)).min(text.len());
                    text.drain(at..end);
                }
                1 => {
                    let piece = PIECES[rng.below(PIECES.len())];
                    text.splice(at..at, piece.bytes());
                }
                2 => {
                    let piece = PIECES[rng.below(PIECES.len())];
                    let end = (at + piece.len()).min(text.len());
                    text.splice(at..end, piece.bytes());
                }
                _ => {
                    let start = rng.below(text.len());
                    let end = (start + 1 + rng.below(40)).min(text.len());
                    let copy: Vec<u8> = text[start..end].to_vec();
                    text.splice(at.min(text.len())..at.min(text.len()), copy);
                }
            }
        }
        let text = String::from_utf8_lossy(&text).into_owned();
        exercise(&text, &|| format!("mutation round {round}"));
    }
}

#[test]
fn pathological_inputs_are_rejected_without_panicking() {
    let deep_tuple = format!(
        "HloModule m\nENTRY e {{\n  ROOT x = {}f32[]{} parameter(0)\n}}",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    assert!(parse_module(&deep_tuple).is_err());
    let huge =
        "HloModule m\nENTRY e {\n  ROOT x = f32[4294967296,4294967296,4294967296] constant({1})\n}";
    assert!(parse_module(huge).is_err());
    let huge_zero =
        "HloModule m\nENTRY e {\n  ROOT x = f32[4294967296,4294967296,0] parameter(0)\n}";
    assert!(parse_module(huge_zero).is_err());
    let many_dims = format!(
        "HloModule m\nENTRY e {{\n  ROOT x = f32[{}] constant(1)\n}}",
        vec!["1"; 5000].join(",")
    );
    assert!(parse_module(&many_dims).is_err());
    let big_constant = "HloModule m\nENTRY e {\n  ROOT x = f32[100000000] constant({1, 2})\n}";
    assert!(parse_module(big_constant).is_err());
    for text in [
        "",
        "HloModule",
        "HloModule m,",
        "HloModule m, a=",
        "HloModule m\n%",
        "\u{0}",
        "HloModule m\nFileNames\n1 x",
    ] {
        exercise(text, &|| format!("{text:?}"));
    }
}
