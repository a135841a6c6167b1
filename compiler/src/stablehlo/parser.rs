//! MLIR text to the generic op tree: the `module`, `func.func` and every op in generic form
//! (`"stablehlo.gather"(%a, %b) <{...}> ({regions}) {...} : (...) -> ...`) or in the pretty
//! forms StableHLO's and CHLO's printers write (`stablehlo.add %a, %b : tensor<4xf32>`,
//! `stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [0]`, ...).
//! Pretty forms are normalized to their generic attribute names (see `pretty.rs`).

use super::attrs::{decode_hex, parse_attr, parse_dict};
use super::cursor::{Cursor, PResult};
use super::ir::{Attr, Block, Loc, MlirModule, Op, Region, Type, ValueRef};
use super::pretty::{parse_pretty_body, PrettyItems};
use super::types::{parse_op_signature, parse_result_types, parse_type};
use std::collections::BTreeMap;

/// Deepest nesting of regions accepted (hostile input must not overflow the stack).
const MAX_DEPTH: usize = 64;

pub fn parse_mlir_text(text: &str) -> PResult<MlirModule> {
    let mut c = Cursor::new(text);
    let mut module = MlirModule::default();
    let mut resources: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut saw_module = false;
    loop {
        c.skip_ws();
        if c.at_end() {
            break;
        }
        let start = c.pos();
        if c.rest().starts_with("{-#") {
            parse_resources(&mut c, &mut resources)?;
        } else if c.rest().starts_with('#') {
            // Attribute aliases: `#loc1 = loc(...)`, `#sdy.mesh = ...`.
            let _ = c.sigil_name('#')?;
            c.expect("=")?;
            parse_attr(&mut c)?;
        } else if c.rest().starts_with('!') {
            let _ = c.sigil_name('!')?;
            c.expect("=")?;
            parse_type(&mut c)?;
        } else if c.eat_word("module") {
            if saw_module {
                return Err(c.error_at(start, "a second top-level module"));
            }
            saw_module = true;
            if c.peek() == Some('@') {
                module.name = Some(c.sigil_name('@')?);
            }
            if c.eat_word("attributes") {
                module.attrs = parse_dict(&mut c)?;
            }
            c.expect("{")?;
            while !c.eat("}") {
                if c.at_end() {
                    return Err(c.error_at(start, "unterminated module"));
                }
                if c.rest().starts_with("sdy.mesh") {
                    skip_sdy_mesh(&mut c)?;
                    continue;
                }
                module.ops.push(parse_op(&mut c, 0)?);
            }
            skip_loc(&mut c)?;
        } else if !saw_module && (c.rest().starts_with("func.func") || c.rest().starts_with("\"func.func\"")) {
            module.ops.push(parse_op(&mut c, 0)?);
        } else {
            return Err(c.error("expected 'module'"));
        }
    }
    if module.ops.is_empty() {
        return Err(Cursor::new(text).error_at(0, "the MLIR module has no functions"));
    }
    resolve_resources(&mut module.ops, &resources).map_err(|m| Cursor::new(text).error_at(0, m))?;
    Ok(module)
}

/// `{-# dialect_resources: { builtin: { name: "0x<alignment><data>" } } #-}`.
fn parse_resources(c: &mut Cursor, out: &mut BTreeMap<String, Vec<u8>>) -> PResult<()> {
    c.expect("{-#")?;
    loop {
        if c.eat("#-}") {
            return Ok(());
        }
        let section = c.ident()?.to_string();
        c.expect(":")?;
        c.expect("{")?;
        while !c.eat("}") {
            let _dialect = c.ident()?;
            c.expect(":")?;
            c.expect("{")?;
            while !c.eat("}") {
                let key = c.ident()?.to_string();
                c.expect(":")?;
                let at = c.pos();
                let value = c.string()?;
                if section == "dialect_resources" {
                    let bytes = decode_hex(&value).filter(|b| b.len() >= 4).ok_or_else(|| c.error_at(at, "bad resource blob (expected \"0x\" + 4-byte alignment + data)"))?;
                    out.insert(key, bytes[4..].to_vec());
                }
                c.eat(",");
            }
            c.eat(",");
        }
        c.eat(",");
    }
}

fn resolve_resources(ops: &mut [Op], resources: &BTreeMap<String, Vec<u8>>) -> Result<(), String> {
    for op in ops {
        for attr in op.attrs.values_mut() {
            if let Attr::Dense(d) = attr {
                if let Some(name) = &d.resource {
                    let bytes = resources.get(name).ok_or_else(|| format!("dense_resource '{name}' is not in the module's dialect_resources"))?;
                    let super::ir::ScalarType::Element(t) = d.ty.element else {
                        return Err(format!("dense_resource '{name}' of a non-numeric type"));
                    };
                    d.bits = super::attrs::bytes_to_bits(bytes, t).ok_or_else(|| format!("dense_resource '{name}': data does not fit its type"))?;
                    d.resource = None;
                }
            }
        }
        for region in &mut op.regions {
            for block in &mut region.blocks {
                resolve_resources(&mut block.ops, resources)?;
            }
        }
    }
    Ok(())
}

/// `sdy.mesh @name = <["x"=2, ...]> {attrs}`: Shardy's device mesh, which JAX writes into
/// every module whose arrays are committed to devices (`#sdy.sharding` argument attributes
/// name it; conversion ignores them). hlojit runs programs that are already per device: a mesh
/// without axes larger than 1 changes nothing, a larger one is a sharded program, refused.
fn skip_sdy_mesh(c: &mut Cursor) -> PResult<()> {
    let start = c.pos();
    c.set_pos(start + "sdy.mesh".len());
    let _ = c.sigil_name('@')?;
    c.expect("=")?;
    c.skip_ws();
    let body = c.rest();
    let body_start = c.pos();
    c.skip_balanced('<', '>')?;
    let body = &body[..c.pos() - body_start];
    if let Err(e) = check_single_device_mesh(body) {
        return Err(c.error_at(start, e));
    }
    c.skip_ws();
    if c.rest().starts_with('{') {
        parse_dict(c)?;
    }
    skip_loc(c)
}

/// A Shardy mesh's body (`<["x"=2, "y"=1]>`, as text) is fine when no axis is larger than 1;
/// a larger one makes the module a sharded program, which hlojit does not partition.
pub(crate) fn check_single_device_mesh(body: &str) -> Result<(), String> {
    // Axis sizes follow `=` ("x"=2); device ids (`device_ids=[...]`) do not.
    let largest = body
        .split('=')
        .skip(1)
        .filter_map(|after| after.trim_start().split(|ch: char| !ch.is_ascii_digit()).next().and_then(|d| d.parse::<u64>().ok()))
        .max()
        .unwrap_or(1);
    if largest > 1 {
        return Err(format!(
            "a sharded program (sdy.mesh with an axis of {largest} devices): hlojit runs programs that are already per device, it does not partition sharded ones"
        ));
    }
    Ok(())
}

fn skip_loc(c: &mut Cursor) -> PResult<()> {
    c.skip_ws();
    if c.rest().starts_with("loc(") {
        c.set_pos(c.pos() + 3);
        c.skip_balanced('(', ')')?;
    }
    Ok(())
}

fn value_ref(c: &mut Cursor) -> PResult<ValueRef> {
    let name = c.sigil_name('%')?;
    let index = if c.rest().starts_with('#') {
        c.set_pos(c.pos() + 1);
        let at = c.pos();
        usize::try_from(c.integer()?).map_err(|_| c.error_at(at, "bad result index"))?
    } else {
        0
    };
    Ok(ValueRef { name, index })
}

pub fn parse_value_ref(c: &mut Cursor) -> PResult<ValueRef> {
    value_ref(c)
}

/// One op with its results, regions and trailing location.
pub fn parse_op(c: &mut Cursor, depth: usize) -> PResult<Op> {
    if depth > MAX_DEPTH {
        return Err(c.error("regions nested too deeply"));
    }
    c.skip_ws();
    let start = c.pos();
    let (line, column) = c.line_col(start);
    let mut op = Op { loc: Loc::Text { line, column }, ..Op::default() };
    if c.rest().starts_with('%') {
        loop {
            let name = c.sigil_name('%')?;
            let count = if c.eat(":") {
                let at = c.pos();
                usize::try_from(c.integer()?).map_err(|_| c.error_at(at, "bad result count"))?
            } else {
                1
            };
            op.results.push((name, count));
            if !c.eat(",") {
                break;
            }
        }
        c.expect("=")?;
    }
    c.skip_ws();
    if c.rest().starts_with('"') {
        op.name = c.string()?;
        parse_generic_body(c, &mut op, depth)?;
    } else {
        let name_at = c.pos();
        op.name = c.ident()?.to_string();
        // The func dialect is the default one: `call @f(...)` is `func.call`.
        if op.name == "call" {
            op.name = "func.call".into();
        }
        if op.name == "func.func" {
            parse_func(c, &mut op, depth)?;
        } else if op.name == "return" || op.name == "func.return" {
            op.name = "func.return".into();
            parse_return_like(c, &mut op)?;
        } else {
            let result_count = op.results.iter().map(|r| r.1).sum::<usize>();
            let items = parse_pretty_body(c, &op.name, name_at, result_count)?;
            apply_pretty(c, &mut op, items, depth)?;
        }
    }
    skip_loc(c)?;
    Ok(op)
}

/// `(%a, %b) <{props}> ({regions}) {attrs} : (types) -> types` after a quoted op name.
fn parse_generic_body(c: &mut Cursor, op: &mut Op, depth: usize) -> PResult<()> {
    c.expect("(")?;
    if !c.eat(")") {
        loop {
            op.operands.push(value_ref(c)?);
            if c.eat(")") {
                break;
            }
            c.expect(",")?;
        }
    }
    // Successors (`[^bb1]`) do not occur in StableHLO.
    if c.eat("<{") {
        c.set_pos(c.pos() - 1);
        op.attrs.extend(parse_dict(c)?);
        c.expect(">")?;
    }
    c.skip_ws();
    if c.rest().starts_with("({") || c.rest().starts_with("( {") {
        c.expect("(")?;
        loop {
            op.regions.push(parse_region(c, depth + 1, &[])?);
            if c.eat(")") {
                break;
            }
            c.expect(",")?;
        }
    }
    if c.peek() == Some('{') {
        op.attrs.extend(parse_dict(c)?);
    }
    c.expect(":")?;
    let (_, results) = parse_op_signature(c)?;
    op.result_types = results;
    Ok(())
}

/// `{ ^bb0(%a: t, ...): ops }` or `{ ops }` with the block arguments given by the caller.
pub fn parse_region(c: &mut Cursor, depth: usize, implicit_args: &[(String, Type)]) -> PResult<Region> {
    if depth > MAX_DEPTH {
        return Err(c.error("regions nested too deeply"));
    }
    c.expect("{")?;
    let mut block = Block { args: implicit_args.to_vec(), ops: Vec::new() };
    c.skip_ws();
    if c.rest().starts_with('^') {
        let _label = c.sigil_name('^')?;
        block.args.clear();
        if c.eat("(") && !c.eat(")") {
            loop {
                let name = c.sigil_name('%')?;
                c.expect(":")?;
                let ty = parse_type(c)?;
                skip_loc(c)?;
                block.args.push((name, ty));
                if c.eat(")") {
                    break;
                }
                c.expect(",")?;
            }
        }
        c.expect(":")?;
    }
    while !c.eat("}") {
        if c.at_end() {
            return Err(c.error("unterminated region"));
        }
        if c.rest().starts_with('^') {
            return Err(c.error("regions with several blocks are not StableHLO"));
        }
        block.ops.push(parse_op(c, depth)?);
    }
    Ok(Region { blocks: vec![block] })
}

/// `public @name(%arg0: t {attrs}, ...) -> (t {attrs}, ...) attributes {...} { body }`.
fn parse_func(c: &mut Cursor, op: &mut Op, depth: usize) -> PResult<()> {
    if c.eat_word("public") {
        op.attrs.insert("sym_visibility".into(), Attr::String("public".into()));
    } else if c.eat_word("private") {
        op.attrs.insert("sym_visibility".into(), Attr::String("private".into()));
    } else if c.eat_word("nested") {
        op.attrs.insert("sym_visibility".into(), Attr::String("nested".into()));
    }
    let name = c.sigil_name('@')?;
    op.attrs.insert("sym_name".into(), Attr::String(name));
    c.expect("(")?;
    let mut args = Vec::new();
    let mut arg_attrs = Vec::new();
    if !c.eat(")") {
        loop {
            let name = c.sigil_name('%')?;
            c.expect(":")?;
            let ty = parse_type(c)?;
            let attrs = if c.peek() == Some('{') { parse_dict(c)? } else { BTreeMap::new() };
            arg_attrs.push(Attr::Dict(attrs));
            skip_loc(c)?;
            args.push((name, ty));
            if c.eat(")") {
                break;
            }
            c.expect(",")?;
        }
    }
    let results = if c.eat("->") { parse_result_types(c)? } else { Vec::new() };
    if c.eat_word("attributes") {
        op.attrs.extend(parse_dict(c)?);
    }
    op.attrs.insert("arg_attrs".into(), Attr::Array(arg_attrs));
    op.attrs.insert(
        "function_type".into(),
        Attr::Array(vec![
            Attr::Array(args.iter().map(|a| Attr::Type(a.1.clone())).collect()),
            Attr::Array(results.iter().cloned().map(Attr::Type).collect()),
        ]),
    );
    c.skip_ws();
    if c.rest().starts_with('{') {
        op.regions.push(parse_region(c, depth + 1, &args)?);
    }
    Ok(())
}

/// `return %a, %b : t, t` (also `stablehlo.return`).
fn parse_return_like(c: &mut Cursor, op: &mut Op) -> PResult<()> {
    c.skip_ws();
    if !c.rest().starts_with('%') {
        return Ok(());
    }
    loop {
        op.operands.push(value_ref(c)?);
        if !c.eat(",") {
            break;
        }
    }
    c.expect(":")?;
    let (_, types) = parse_op_signature(c)?;
    let _ = types;
    Ok(())
}

/// Moves a pretty op's items into the op (regions after the signature included).
fn apply_pretty(c: &mut Cursor, op: &mut Op, items: PrettyItems, depth: usize) -> PResult<()> {
    op.operands = items.operands;
    op.attrs = items.attrs;
    op.result_types = items.result_types;
    match op.name.as_str() {
        "stablehlo.while" => {
            let args: Vec<(String, Type)> = items.block_args.into_iter().zip(op.result_types.iter().cloned()).collect();
            c.skip_ws();
            if !c.eat_word("cond") {
                return Err(c.error("expected 'cond' after stablehlo.while"));
            }
            op.regions.push(parse_region(c, depth + 1, &args)?);
            if !c.eat_word("do") {
                return Err(c.error("expected 'do' after the while condition"));
            }
            op.regions.push(parse_region(c, depth + 1, &args)?);
        }
        "stablehlo.reduce" if !op.attrs.contains_key("__applies") => {
            c.skip_ws();
            if !c.eat_word("reducer") {
                return Err(c.error("expected 'reducer' or 'applies' in stablehlo.reduce"));
            }
            // `reducer(%a: t, %b: t) (%c: t, %d: t)`: pairs (accumulator, value) per input;
            // the block takes all accumulators first, then all values.
            let mut accs = Vec::new();
            let mut vals = Vec::new();
            while c.eat("(") {
                let a = c.sigil_name('%')?;
                c.expect(":")?;
                let ta = parse_type(c)?;
                skip_loc(c)?;
                c.expect(",")?;
                let b = c.sigil_name('%')?;
                c.expect(":")?;
                let tb = parse_type(c)?;
                skip_loc(c)?;
                c.expect(")")?;
                accs.push((a, ta));
                vals.push((b, tb));
            }
            accs.extend(vals);
            op.regions.push(parse_region(c, depth + 1, &accs)?);
        }
        _ => {}
    }
    Ok(())
}
