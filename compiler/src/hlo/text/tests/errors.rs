//! Malformed inputs give a parse error at the offending token's line:column with a message
//! saying what was expected and what was found.

use super::super::{parse_module, parse_shape};
use crate::error::Error;

/// Parses `text`, expecting an error at `line:column` whose message contains every fragment.
fn assert_error(text: &str, line: usize, column: usize, fragments: &[&str]) {
    match parse_module(text) {
        Ok(_) => panic!("expected an error at {line}:{column} for:\n{text}"),
        Err(Error::Parse {
            line: l,
            column: c,
            message,
        }) => {
            assert_eq!(
                (l, c),
                (line, column),
                "position of '{message}' in:\n{text}"
            );
            for f in fragments {
                assert!(message.contains(f), "message '{message}' lacks '{f}'");
            }
        }
        Err(other) => panic!("not a parse error: {other}"),
    }
}

/// A module whose entry body is `body` (lines start on line 3).
fn module(body: &str) -> String {
    format!("HloModule m\n\nENTRY e {{\n{body}\n}}\n")
}

#[test]
fn unknown_opcode() {
    assert_error(
        &module("  x = f32[] parameter(0)\n  ROOT y = f32[] frobnicate(x)"),
        5,
        18,
        &["unknown opcode 'frobnicate'"],
    );
}

#[test]
fn unknown_operand() {
    assert_error(
        &module("  x = f32[] parameter(0)\n  ROOT y = f32[] add(x, %z)"),
        5,
        25,
        &["unknown operand 'z'", "computation 'e'"],
    );
}

#[test]
fn bad_shapes() {
    assert_error(
        &module("  x = f32[2x3] parameter(0)"),
        4,
        12,
        &["expected ',' or ']' after dimension size, found 'x3'"],
    );
    assert_error(
        &module("  x = f32[2,] parameter(0)"),
        4,
        13,
        &["expected a dimension size, found ']'"],
    );
    assert_error(
        &module("  x = f33[2] parameter(0)"),
        4,
        7,
        &["unknown element type 'f33'"],
    );
    assert_error(
        &module("  x = f32[2,3]{0,0} parameter(0)"),
        4,
        16,
        &["not a permutation"],
    );
    assert_error(
        &module("  x = f32[2]{0:T(8,} parameter(0)"),
        4,
        20,
        &["expected a tile dimension, found '}'"],
    );
    let Err(Error::Parse {
        line,
        column,
        message,
    }) = parse_shape("f32[2]{0} junk")
    else {
        panic!("trailing text accepted")
    };
    assert_eq!((line, column), (1, 11));
    assert!(
        message.contains("expected end of shape, found 'junk'"),
        "{message}"
    );
}

#[test]
fn unterminated_braces() {
    // The computation's brace is never closed: reported at the end, naming the opener.
    assert_error(
        "HloModule m\nENTRY e {\n  ROOT x = f32[] parameter(0)\n",
        4,
        1,
        &["unterminated computation 'e'", "2:9", "end of input"],
    );
    // An attribute's braces run to the end of the text.
    assert_error(
        "HloModule m\nENTRY e {\n  ROOT x = f32[] parameter(0), metadata={op_name=\"x\"\n",
        3,
        41,
        &["unterminated '{' in a value for metadata"],
    );
    assert_error(
        &module("  ROOT x = f32[] parameter(0), metadata={op_name=\"x}"),
        4,
        50,
        &["unterminated string"],
    );
}

#[test]
fn bad_attribute_values() {
    assert_error(
        &module("  x = f32[2,2] parameter(0)\n  ROOT t = f32[2,2] transpose(x), dimensions={1,a}"),
        5,
        49,
        &["expected an integer in dimensions, found 'a'"],
    );
    assert_error(
        &module("  x = f32[1,4,4,1] parameter(0)\n  ROOT r = f32[1,4,4,1] convolution(x, x), window={size=3x3 stride=1}, dim_labels=b01f_01io->b01f"),
        5,
        61,
        &["window stride has 1 dimensions but size has 2"],
    );
    assert_error(
        &module("  x = f32[1,4,4,1] parameter(0)\n  ROOT r = f32[1,4,4,1] convolution(x, x), window={size=3x3}, dim_labels=b01f_01xo->b01f"),
        5,
        74,
        &["bad dim_labels", "kernel"],
    );
    assert_error(
        &module("  x = f32[] parameter(0)\n  ROOT c = pred[] compare(x, x), direction=SIDEWAYS"),
        5,
        44,
        &["bad direction 'SIDEWAYS'", "EQ, NE"],
    );
    assert_error(
        &module("  ROOT c = u8[] constant(256)"),
        4,
        26,
        &["256 is out of range for u8"],
    );
    assert_error(
        &module("  ROOT c = s32[3] constant({1, 2})"),
        4,
        28,
        &["dimension 0 of the constant has 2 elements, its shape says 3"],
    );
    assert_error(
        &module("  ROOT c = s32[] constant(1.5)"),
        4,
        27,
        &["expected an integer for a s32 element, found '1.5'"],
    );
    assert_error(
        &module("  x = f32[] parameter(0)\n  ROOT c = f32[2] broadcast(x), dimensions={}, dimensions={}"),
        5,
        48,
        &["duplicate attribute 'dimensions'"],
    );
}

#[test]
fn duplicate_names() {
    assert_error(
        &module("  x = f32[] parameter(0)\n  x = f32[] negate(x)"),
        5,
        3,
        &["duplicate instruction name 'x' in computation 'e' (first defined at 4:3)"],
    );
    assert_error(
        "HloModule m\nc {\n  ROOT a = f32[] constant(1)\n}\nc {\n  ROOT b = f32[] constant(2)\n}",
        5,
        1,
        &["duplicate computation name 'c'"],
    );
    assert_error(
        &module("  ROOT x = f32[] parameter(0)\n  ROOT y = f32[] negate(x)"),
        5,
        3,
        &["a second ROOT", "4:3"],
    );
    assert_error(
        "HloModule m\nENTRY a {\n  ROOT x = f32[] constant(1)\n}\nENTRY b {\n  ROOT y = f32[] constant(2)\n}",
        5,
        1,
        &["a second ENTRY computation", "2:1"],
    );
}

#[test]
fn unknown_computation() {
    assert_error(&module("  x = f32[4] parameter(0)\n  ROOT m = f32[4] map(x), dimensions={0}, to_apply=%nowhere"), 5, 52, &["unknown computation 'nowhere'"]);
}

#[test]
fn structural_errors() {
    assert_error(
        "ENTRY e {\n}",
        1,
        1,
        &["expected 'HloModule' at the start of the module, found 'ENTRY'"],
    );
    assert_error(
        "HloModule m\n",
        2,
        1,
        &["expected a computation, found end of input"],
    );
    assert_error(
        "HloModule m\nENTRY e {\n}\n",
        2,
        9,
        &["computation 'e' has no instructions"],
    );
    assert_error(
        &module("  x f32[] parameter(0)"),
        4,
        5,
        &["expected '=' after instruction name 'x', found 'f32'"],
    );
    assert_error(
        &module("  x = f32[] parameter(0)\n  ROOT y = f32[] negate(x"),
        6,
        1,
        &["expected ',' or ')' between operands, found '}'"],
    );
    assert_error(
        &module("  w = f32[] while(x), body=b"),
        4,
        13,
        &["while needs both condition= and body="],
    );
    assert_error(
        "HloModule m, entry_computation_layout={(f32[])}\n",
        1,
        47,
        &["expected '->' before the result shape, found '}'"],
    );
}

#[test]
fn written_shapes_must_agree() {
    assert_error(
        &module("  x = f32[2] parameter(0)\n  ROOT y = f32[2] negate(f32[3]{0} %x)"),
        5,
        36,
        &["operand 'x' is written as f32[3] but its shape is f32[2]"],
    );
    assert_error(
        "HloModule m\nENTRY e (x: f32[2]) -> s32[2] {\n  ROOT x = f32[2] parameter(0)\n}",
        2,
        24,
        &["declared to return s32[2] but its root 'x' has shape f32[2]"],
    );
}

#[test]
fn missing_root_is_fine() {
    let m =
        parse_module(&module("  x = f32[] parameter(0)\n  y = f32[] negate(x)")).expect("parses");
    assert_eq!(m.entry_computation().root_instruction().name, "y");
}

#[test]
fn columns_count_characters_not_bytes() {
    // The metadata string holds multi-byte characters; the bad opcode after it is located in
    // characters.
    let text =
        module("  x = f32[] parameter(0), metadata={op_name=\"äöü\"}\n  ROOT y = f32[] bogus(x)");
    assert_error(&text, 5, 18, &["unknown opcode 'bogus'"]);
    assert_error(
        "HloModule m\nENTRY e {\n  ROOT x = f32[] parameter(0), metadata={a=\"é\"} é\n}",
        3,
        49,
        &["expected an instruction name, found 'é'"],
    );
}
