//! The generic op tree to HLO, as XLA's StableHLO-to-HLO translation does it: each `func.func`
//! becomes a computation (`main` the entry), `func.call` a `call`, regions of reduce / sort /
//! scatter / while / case computations, multi-result ops a tuple-shaped instruction with
//! `get-tuple-element`s, values a `case` or `while` region uses from outside become extra
//! operands (XLA's implicit captures), CHLO ops their decompositions.
//!
//! The result is HLO text, which the HLO parser then reads: the text format is XLA's own stable
//! interface to the IR, so this front end does not depend on how the IR stores attributes.
//! Instruction names map back to the MLIR location of the op that produced them, for errors.

mod chlo;
mod dce;
mod inline_sdy;
mod manual;
mod ops;
mod sink;
mod text;

use super::ir::{Loc, MlirModule, Op, Region, Type, ValueRef};
use std::collections::{HashMap, HashSet};
pub use text::shape_text;

/// HLO text of a converted module plus where each instruction came from.
pub struct Converted {
    pub text: String,
    pub locations: HashMap<String, (String, Loc)>,
}

/// An error of conversion: what is wrong and at which op.
#[derive(Debug)]
pub struct ConvertError {
    pub loc: Loc,
    pub message: String,
}

type CResult<T> = Result<T, ConvertError>;

#[derive(Clone, Debug)]
pub struct Val {
    pub name: String,
    pub ty: Type,
}

/// How a computation's block arguments arrive and whether it may use outer values.
#[derive(Clone, Copy, PartialEq)]
enum Params {
    /// One parameter per argument (functions, reducers, comparators).
    Separate,
    /// One tuple parameter holding the arguments, then the captured outer values (while, case).
    TupleWithCaptures,
}

struct Comp {
    name: String,
    params: Params,
    lines: Vec<(String, String)>,
    values: HashMap<ValueRef, Val>,
    /// Types of the values visible from enclosing scopes (capturable ones).
    outer: HashMap<ValueRef, Type>,
    captures: Vec<(ValueRef, Type)>,
    arg_count: usize,
    param_tuple: String,
    root: Option<String>,
    root_tuple: Option<(Vec<Val>, bool)>,
}

pub struct Converter<'m> {
    funcs: HashMap<String, &'m Op>,
    done: HashMap<String, (String, Vec<Type>)>,
    in_progress: HashSet<String>,
    comps: Vec<String>,
    counter: usize,
    locations: HashMap<String, (String, Loc)>,
    current_loc: Loc,
    current_op: String,
}

pub fn convert_module(m: &MlirModule) -> CResult<Converted> {
    let mut local = m.clone();
    manual::localize(&mut local)?;
    let m = &local;
    let mut ops = m.ops.clone();
    dce::remove_dead_ops(&mut ops);
    sink::sink_constants(&mut ops);
    let m = &MlirModule { name: m.name.clone(), attrs: m.attrs.clone(), ops };
    let mut funcs = HashMap::new();
    for op in &m.ops {
        if op.name == "func.func" {
            let name = str_attr(op, "sym_name").unwrap_or_default();
            funcs.insert(name, op);
        }
    }
    let main = funcs.get("main").copied().ok_or(ConvertError { loc: Loc::Unknown, message: "the module has no function @main".into() })?;
    let mut cv = Converter {
        funcs,
        done: HashMap::new(),
        in_progress: HashSet::new(),
        comps: Vec::new(),
        counter: 0,
        locations: HashMap::new(),
        current_loc: main.loc,
        current_op: "func.func".into(),
    };
    cv.convert_func(main, true)?;
    let name = m.name.clone().unwrap_or_else(|| "main".into());
    let name: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-' { c } else { '_' }).collect();
    let mut header = format!("HloModule {name}");
    for (attr, key) in [("mhlo.num_replicas", "replica_count"), ("mhlo.num_partitions", "num_partitions")] {
        if let Some(n) = m.attrs.get(attr).and_then(|a| text::ints(a).ok()).and_then(|v| v.first().copied()) {
            if n > 1 {
                header.push_str(&format!(", {key}={n}"));
            }
        }
    }
    header.push_str(&aliasing_header(main));
    let mut out = header;
    out.push_str("\n\n");
    for c in &cv.comps {
        out.push_str(c);
        out.push('\n');
    }
    Ok(Converted { text: out, locations: cv.locations })
}

/// `tf.aliasing_output = N` on @main's arguments (what `jax.jit(donate_argnums=...)` writes)
/// as XLA's translation reads it: output N may be computed in that argument's buffer.
fn aliasing_header(main: &Op) -> String {
    use super::ir::Attr;
    let Some(Attr::Array(args)) = main.attr("arg_attrs") else { return String::new() };
    let tupled = func_signature(main).1.len() != 1;
    let entries: Vec<String> = args
        .iter()
        .enumerate()
        .filter_map(|(i, a)| match a {
            Attr::Dict(d) => match d.get("tf.aliasing_output") {
                Some(Attr::Int(n, _)) if *n >= 0 => Some(if tupled { format!("{{{n}}}: ({i}, {{}}, may-alias)") } else { format!("{{}}: ({i}, {{}}, may-alias)") }),
                _ => None,
            },
            _ => None,
        })
        .collect();
    if entries.is_empty() {
        String::new()
    } else {
        format!(", input_output_alias={{ {} }}", entries.join(", "))
    }
}

pub fn str_attr(op: &Op, name: &str) -> Option<String> {
    match op.attr(name)? {
        super::ir::Attr::String(s) => Some(s.clone()),
        super::ir::Attr::Symbol(s) => Some(s.clone()),
        _ => None,
    }
}

fn func_signature(op: &Op) -> (Vec<Type>, Vec<Type>) {
    use super::ir::Attr;
    let Some(Attr::Array(parts)) = op.attr("function_type") else {
        return (Vec::new(), Vec::new());
    };
    let types = |a: Option<&Attr>| match a {
        Some(Attr::Array(items)) => items.iter().filter_map(|t| if let Attr::Type(t) = t { Some(t.clone()) } else { None }).collect(),
        _ => Vec::new(),
    };
    (types(parts.first()), types(parts.get(1)))
}

impl<'m> Converter<'m> {
    fn err(&self, message: impl Into<String>) -> ConvertError {
        ConvertError { loc: self.current_loc, message: format!("{}: {}", self.current_op, message.into()) }
    }

    fn fresh(&mut self, kind: &str) -> String {
        self.counter += 1;
        format!("{kind}.{}", self.counter)
    }

    /// Converts a function once; returns its computation's name and result types.
    fn convert_func(&mut self, op: &'m Op, entry: bool) -> CResult<(String, Vec<Type>)> {
        let sym = str_attr(op, "sym_name").unwrap_or_default();
        if let Some(done) = self.done.get(&sym) {
            return Ok(done.clone());
        }
        if !self.in_progress.insert(sym.clone()) {
            return Err(ConvertError { loc: op.loc, message: format!("function @{sym} calls itself (HLO has no recursion)") });
        }
        let (_, results) = func_signature(op);
        let region = op.regions.first().ok_or(ConvertError { loc: op.loc, message: format!("function @{sym} has no body") })?;
        let base: String = sym.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '.' { c } else { '_' }).collect();
        let name = self.fresh(if base.is_empty() { "func" } else { &base });
        let mut comp = Comp::new(name.clone(), Params::Separate, HashMap::new());
        self.convert_region_into(&mut comp, region, None)?;
        self.finish(comp, entry)?;
        self.in_progress.remove(&sym);
        self.done.insert(sym, (name.clone(), results.clone()));
        Ok((name, results))
    }

    fn callee(&mut self, sym: &str) -> CResult<(String, Vec<Type>)> {
        let op = self.funcs.get(sym).copied().ok_or_else(|| self.err(format!("no function @{sym} in the module")))?;
        let (loc, what) = (self.current_loc, self.current_op.clone());
        let r = self.convert_func(op, false);
        self.current_loc = loc;
        self.current_op = what;
        r
    }

    /// Converts a region (one block) into `comp`; `tuple_root` forces a tuple ROOT (while
    /// bodies, case branches: with the captures appended for while bodies).
    fn convert_region_into(&mut self, comp: &mut Comp, region: &'m Region, tuple_root: Option<bool>) -> CResult<()> {
        let block = region.blocks.first().ok_or_else(|| self.err("empty region"))?;
        comp.arg_count = block.args.len();
        match comp.params {
            Params::Separate => {
                for (i, (name, ty)) in block.args.iter().enumerate() {
                    let pname = self.fresh("Arg");
                    let shape = shape_text(ty).map_err(|e| self.err(e))?;
                    comp.lines.push((pname.clone(), format!("{shape} parameter({i})")));
                    comp.values.insert(ValueRef { name: name.clone(), index: 0 }, Val { name: pname, ty: ty.clone() });
                }
            }
            Params::TupleWithCaptures => {
                comp.param_tuple = self.fresh("state");
                for (i, (name, ty)) in block.args.iter().enumerate() {
                    let g = self.fresh("gte");
                    let shape = shape_text(ty).map_err(|e| self.err(e))?;
                    comp.lines.push((g.clone(), format!("{shape} get-tuple-element({}), index={i}", comp.param_tuple)));
                    comp.values.insert(ValueRef { name: name.clone(), index: 0 }, Val { name: g, ty: ty.clone() });
                }
            }
        }
        for op in &block.ops {
            self.current_loc = op.loc;
            self.current_op = op.name.clone();
            if op.name == "func.return" || op.name == "stablehlo.return" {
                let vals = op.operands.iter().map(|v| self.get(comp, v)).collect::<CResult<Vec<_>>>()?;
                let root = match (tuple_root, vals.len()) {
                    (Some(with_captures), _) => {
                        // Written in `render`: a while body's tuple ends with the captures,
                        // known only once the whole region is converted.
                        let t = self.fresh("tuple");
                        comp.root_tuple = Some((vals, with_captures));
                        t
                    }
                    (None, 1) => vals[0].name.clone(),
                    (None, _) => {
                        let t = self.fresh("tuple");
                        let shape = shape_text(&Type::Tuple(vals.iter().map(|v| v.ty.clone()).collect())).map_err(|e| self.err(e))?;
                        let names: Vec<String> = vals.iter().map(|v| v.name.clone()).collect();
                        comp.lines.push((t.clone(), format!("{shape} tuple({})", names.join(", "))));
                        t
                    }
                };
                comp.root = Some(root);
                continue;
            }
            self.convert_op(comp, op)?;
        }
        if comp.root.is_none() {
            return Err(self.err("region without a return"));
        }
        Ok(())
    }

    /// Writes a finished computation (parameters of captures, the root tuple) to the module.
    fn finish(&mut self, comp: Comp, entry: bool) -> CResult<()> {
        let text = self.render(&comp, entry, &[])?;
        self.comps.push(text);
        Ok(())
    }

    fn render(&self, comp: &Comp, entry: bool, state_types: &[Type]) -> CResult<String> {
        let mut out = String::new();
        out.push_str(if entry { "ENTRY " } else { "" });
        out.push_str(&comp.name);
        out.push_str(" {\n");
        if comp.params == Params::TupleWithCaptures {
            let mut types: Vec<Type> = state_types.to_vec();
            types.extend(comp.captures.iter().map(|c| c.1.clone()));
            let shape = shape_text(&Type::Tuple(types)).map_err(|e| self.err(e))?;
            out.push_str(&format!("  {} = {shape} parameter(0)\n", comp.param_tuple));
        }
        let root = comp.root.clone().unwrap_or_default();
        // Results of multi-result ops nobody reads are not written: an unread element of a
        // while's results would keep HLO passes from seeing that element is dead.
        let mut read: HashSet<&str> = HashSet::new();
        for (_, body) in &comp.lines {
            read.extend(body.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-')));
        }
        if let Some((vals, _)) = &comp.root_tuple {
            read.extend(vals.iter().map(|v| v.name.as_str()));
        }
        read.extend(comp.values.values().filter(|v| comp.captures.iter().any(|c| comp.values.get(&c.0).is_some_and(|x| x.name == v.name))).map(|v| v.name.as_str()));
        let mut rooted = false;
        for (name, body) in &comp.lines {
            if name.starts_with("gte.") && body.contains(" get-tuple-element(") && *name != root && !read.contains(name.as_str()) {
                continue;
            }
            if comp.root_tuple.is_none() && *name == root && !rooted {
                rooted = true;
                out.push_str(&format!("  ROOT {name} = {body}\n"));
            } else {
                out.push_str(&format!("  {name} = {body}\n"));
            }
        }
        if let Some((vals, with_captures)) = &comp.root_tuple {
            let mut names: Vec<String> = vals.iter().map(|v| v.name.clone()).collect();
            let mut types: Vec<Type> = vals.iter().map(|v| v.ty.clone()).collect();
            if *with_captures {
                for (v, ty) in &comp.captures {
                    names.push(comp.values.get(v).map(|x| x.name.clone()).unwrap_or_default());
                    types.push(ty.clone());
                }
            }
            let shape = shape_text(&Type::Tuple(types)).map_err(|e| self.err(e))?;
            out.push_str(&format!("  ROOT {root} = {shape} tuple({})\n", names.join(", ")));
            rooted = true;
        }
        if !rooted {
            return Err(self.err(format!("internal: root {root} of {} not found", comp.name)));
        }
        out.push_str("}\n");
        Ok(out)
    }

    /// The HLO value of an MLIR value, capturing it from an enclosing scope where allowed.
    fn get(&mut self, comp: &mut Comp, v: &ValueRef) -> CResult<Val> {
        if let Some(val) = comp.values.get(v) {
            return Ok(val.clone());
        }
        if comp.params == Params::TupleWithCaptures {
            if let Some(ty) = comp.outer.get(v).cloned() {
                let index = comp.arg_count + comp.captures.len();
                comp.captures.push((v.clone(), ty.clone()));
                let g = self.fresh("capture");
                let shape = shape_text(&ty).map_err(|e| self.err(e))?;
                comp.lines.insert(comp.arg_count, (g.clone(), format!("{shape} get-tuple-element({}), index={index}", comp.param_tuple)));
                let val = Val { name: g, ty };
                comp.values.insert(v.clone(), val.clone());
                return Ok(val);
            }
        }
        Err(self.err(format!("use of undefined value %{}{}", v.name, if v.index > 0 { format!("#{}", v.index) } else { String::new() })))
    }

    fn emit(&mut self, comp: &mut Comp, kind: &str, ty: &Type, body: String) -> CResult<Val> {
        let shape = shape_text(ty).map_err(|e| self.err(e))?;
        self.emit_text(comp, kind, &shape, ty.clone(), body)
    }

    /// `emit` with the shape written out (a layout included).
    fn emit_text(&mut self, comp: &mut Comp, kind: &str, shape: &str, ty: Type, body: String) -> CResult<Val> {
        let name = self.fresh(kind);
        comp.lines.push((name.clone(), format!("{shape} {body}")));
        self.locations.insert(name.clone(), (self.current_op.clone(), self.current_loc));
        Ok(Val { name, ty })
    }

    /// An instruction with several results: a tuple-shaped one and a get-tuple-element each.
    fn emit_multi(&mut self, comp: &mut Comp, kind: &str, types: &[Type], body: String) -> CResult<Vec<Val>> {
        let t = self.emit(comp, kind, &Type::Tuple(types.to_vec()), body)?;
        types
            .iter()
            .enumerate()
            .map(|(i, ty)| self.emit(comp, "gte", ty, format!("get-tuple-element({}), index={i}", t.name)))
            .collect()
    }

    fn bind(&mut self, comp: &mut Comp, op: &Op, vals: Vec<Val>) -> CResult<()> {
        let refs = op.result_refs();
        if refs.len() != vals.len() {
            return Err(self.err(format!("{} results written, the op has {}", refs.len(), vals.len())));
        }
        for (r, v) in refs.into_iter().zip(vals) {
            comp.values.insert(r, v);
        }
        Ok(())
    }

    /// A region as a computation with one parameter per block argument (no captures).
    fn region_computation(&mut self, region: &'m Region, kind: &str) -> CResult<String> {
        let name = self.fresh(kind);
        let mut comp = Comp::new(name.clone(), Params::Separate, HashMap::new());
        let (loc, what) = (self.current_loc, self.current_op.clone());
        self.convert_region_into(&mut comp, region, None)?;
        self.finish(comp, false)?;
        self.current_loc = loc;
        self.current_op = what;
        Ok(name)
    }

    /// Regions taking (state tuple ++ captures): while cond/body, case branches. Returns the
    /// computations' names and the outer values they capture (in tuple order after the state).
    fn capturing_regions(
        &mut self,
        parent: &Comp,
        regions: &[(&'m Region, &str, Option<bool>)],
        state_types: &[Type],
    ) -> CResult<(Vec<String>, Vec<(ValueRef, Type)>)> {
        let (loc, what) = (self.current_loc, self.current_op.clone());
        let mut outer = parent.outer.clone();
        for (k, v) in &parent.values {
            outer.insert(k.clone(), v.ty.clone());
        }
        let mut comps = Vec::new();
        let mut all: Vec<(ValueRef, Type)> = Vec::new();
        for (region, kind, tuple_root) in regions {
            let name = self.fresh(kind);
            let mut comp = Comp::new(name, Params::TupleWithCaptures, outer.clone());
            // Captures found by earlier regions come first, in the same tuple positions.
            self.convert_region_into(&mut comp, region, *tuple_root)?;
            comps.push(comp);
            self.current_loc = loc;
            self.current_op = what.clone();
        }
        // One capture list for all regions: every region's parameter holds all of them.
        for comp in &comps {
            for c in &comp.captures {
                if !all.iter().any(|a| a.0 == c.0) {
                    all.push(c.clone());
                }
            }
        }
        let mut names = Vec::new();
        for mut comp in comps {
            // Re-index this region's capture reads into the shared list.
            let param = comp.param_tuple.clone();
            let base = comp.arg_count;
            for (k, (v, _)) in comp.captures.clone().iter().enumerate() {
                let shared = all.iter().position(|a| a.0 == *v).unwrap_or(k);
                let from = format!("get-tuple-element({param}), index={}", base + k);
                let to = format!("get-tuple-element({param}), index={}", base + shared);
                let g = &comp.values[v].name.clone();
                if let Some(line) = comp.lines.iter_mut().find(|l| &l.0 == g) {
                    line.1 = line.1.replace(&from, &to);
                }
            }
            comp.captures = all.clone();
            // Values of captures this region does not read still have to be named for the
            // root tuple of a while body: read them from the parameter.
            for (k, (v, ty)) in all.iter().enumerate() {
                if !comp.values.contains_key(v) {
                    let g = self.fresh("capture");
                    let shape = shape_text(ty).map_err(|e| self.err(e))?;
                    comp.lines.insert(comp.arg_count, (g.clone(), format!("{shape} get-tuple-element({param}), index={}", base + k)));
                    comp.values.insert(v.clone(), Val { name: g, ty: ty.clone() });
                }
            }
            let text = self.render(&comp, false, state_types)?;
            self.comps.push(text);
            names.push(comp.name);
        }
        Ok((names, all))
    }
}

impl Comp {
    fn new(name: String, params: Params, outer: HashMap<ValueRef, Type>) -> Comp {
        Comp {
            name,
            params,
            lines: Vec::new(),
            values: HashMap::new(),
            outer,
            captures: Vec::new(),
            arg_count: 0,
            param_tuple: String::new(),
            root: None,
            root_tuple: None,
        }
    }
}

