//! The IR section: ops with their attributes, properties, result types, operands and regions,
//! as MLIR's BytecodeReader lays them out, into the generic op tree (`ir::Op`).
//!
//! Values are numbered per isolated-from-above scope: each region reserves a range for the
//! values it defines (block arguments, then op results, in order), and operands index the
//! scope's whole table. The op tree names values instead (`v<N>`, unique in the module).

use super::attr_type::AttrTypes;
use super::reader::{BcError, BcResult, Reader};
use super::vhlo;
use crate::stablehlo::ir::{Attr, Block, Loc, MlirModule, Op, Region, Type, ValueRef};
use std::collections::BTreeMap;

const HAS_ATTRS: u8 = 0x01;
const HAS_RESULTS: u8 = 0x02;
const HAS_OPERANDS: u8 = 0x04;
const HAS_SUCCESSORS: u8 = 0x08;
const HAS_INLINE_REGIONS: u8 = 0x10;
const HAS_USE_LIST_ORDERS: u8 = 0x20;
const HAS_PROPERTIES: u8 = 0x40;

/// Regions nested deeper than this are refused (the reader recurses once per level).
const MAX_REGION_DEPTH: usize = 256;

pub struct IrReader<'a, 'b> {
    pub version: u64,
    pub ops: &'b [(String, Option<bool>)],
    pub properties: &'b [Reader<'a>],
    pub at: AttrTypes<'a>,
    /// Value tables of the isolated scopes being read, innermost last.
    scopes: Vec<Scope>,
    counter: usize,
}

#[derive(Default)]
struct Scope {
    values: Vec<Option<ValueRef>>,
    /// (next value id, start, end of the range) of each region being read in this scope, innermost last.
    next: Vec<(usize, usize, usize)>,
}

impl<'a, 'b> IrReader<'a, 'b> {
    pub fn new(version: u64, ops: &'b [(String, Option<bool>)], properties: &'b [Reader<'a>], at: AttrTypes<'a>) -> Self {
        IrReader { version, ops, properties, at, scopes: Vec::new(), counter: 0 }
    }

    /// The IR section: one block (no arguments) whose single op is the `builtin.module`.
    pub fn read_module(&mut self, mut r: Reader<'_>) -> BcResult<MlirModule> {
        self.scopes.push(Scope::default());
        self.scopes[0].next.push((0, 0, 0));
        let ops = self.read_block_ops(&mut r, 0, None)?;
        let mut module = MlirModule::default();
        let mut found = false;
        for op in ops {
            if op.name == "builtin.module" && !found {
                found = true;
                module.name = match op.attrs.get("sym_name") {
                    Some(Attr::String(s)) => Some(s.clone()),
                    _ => None,
                };
                module.attrs = op.attrs.into_iter().filter(|(k, _)| k != "sym_name" && k != "sym_visibility").collect();
                let block = op.regions.into_iter().next().and_then(|r| r.blocks.into_iter().next()).unwrap_or_default();
                // Shardy meshes stay: conversion checks them against the module's partitions.
                module.ops = block.ops;
            } else {
                return Err(BcError { offset: 0, message: format!("unexpected top-level op '{}' (a StableHLO artifact holds one builtin.module)", op.name) });
            }
        }
        if !found {
            return r.error("no builtin.module in the IR section");
        }
        Ok(module)
    }

    /// A block header and its ops (`args` set for blocks with arguments).
    fn read_block_ops(&mut self, r: &mut Reader<'_>, depth: usize, args: Option<&mut Vec<(String, Type)>>) -> BcResult<Vec<Op>> {
        let (num_ops, has_args) = r.varint_flag()?;
        if has_args {
            let n = r.bounded_count("block arguments")?;
            let mut defined = Vec::with_capacity(n);
            for _ in 0..n {
                let ty = if self.version >= 4 {
                    let (ty, has_loc) = r.varint_flag()?;
                    if has_loc {
                        r.varint()?;
                    }
                    ty
                } else {
                    let ty = r.varint()?;
                    r.varint()?;
                    ty
                };
                let ty = self.at.ty(ty, r)?;
                let name = self.fresh();
                self.define(r, ValueRef { name: name.clone(), index: 0 })?;
                defined.push((name, ty));
            }
            if self.version >= 3 && r.byte()? != 0 {
                self.skip_use_lists(r, n)?;
            }
            match args {
                Some(a) => *a = defined,
                None if n > 0 => return r.error("block arguments where none are allowed"),
                None => {}
            }
        }
        let num_ops = usize::try_from(num_ops).unwrap_or(usize::MAX);
        if num_ops > r.remaining() {
            return r.error(format!("{num_ops} ops cannot fit in the {} bytes that remain", r.remaining()));
        }
        let mut ops = Vec::with_capacity(num_ops);
        for _ in 0..num_ops {
            ops.push(self.read_op(r, depth)?);
        }
        Ok(ops)
    }

    fn fresh(&mut self) -> String {
        self.counter += 1;
        format!("v{}", self.counter)
    }

    fn define(&mut self, r: &Reader<'_>, v: ValueRef) -> BcResult<()> {
        let scope = self.scopes.last_mut().ok_or(BcError { offset: r.offset(), message: "value outside any scope".into() })?;
        let Some((next, _, end)) = scope.next.last_mut() else {
            return r.error("value outside any region");
        };
        match scope.values.get_mut(*next) {
            Some(slot) if *next < *end => {
                *slot = Some(v);
                *next += 1;
                Ok(())
            }
            _ => r.error("more values defined than the region declares"),
        }
    }

    fn operand(&mut self, r: &mut Reader<'_>) -> BcResult<ValueRef> {
        let at = r.offset();
        let i = r.count()?;
        let scope = self.scopes.last().ok_or(BcError { offset: at, message: "operand outside any scope".into() })?;
        match scope.values.get(i) {
            Some(Some(v)) => Ok(v.clone()),
            Some(None) => Err(BcError { offset: at, message: format!("value {i} used before it is defined (forward references are not StableHLO)") }),
            None => Err(BcError { offset: at, message: format!("value index {i} out of range ({} values in scope)", scope.values.len()) }),
        }
    }

    fn skip_use_lists(&mut self, r: &mut Reader<'_>, range: usize) -> BcResult<()> {
        let n = if range > 1 { r.count()? } else { 1 };
        for _ in 0..n {
            if range > 1 {
                r.varint()?;
            }
            let (count, _) = r.varint_flag()?;
            for _ in 0..count {
                r.varint()?;
            }
        }
        Ok(())
    }

    fn read_op(&mut self, r: &mut Reader<'_>, depth: usize) -> BcResult<Op> {
        let offset = r.offset();
        let at_op = |message: String| BcError { offset, message };
        let name_index = r.count()?;
        let (name, registered) = self.ops.get(name_index).cloned().ok_or_else(|| at_op(format!("op name index {name_index} out of range")))?;
        let in_op = |e: BcError| BcError { offset: e.offset, message: format!("{name}: {}", e.message) };
        let mask = r.byte().map_err(in_op)?;
        r.varint().map_err(in_op)?; // location: not needed, the byte offset names the op
        let mut attrs = BTreeMap::new();
        if mask & HAS_ATTRS != 0 {
            let i = r.varint().map_err(in_op)?;
            match self.at.attr(i, r).map_err(in_op)? {
                Attr::Dict(d) => attrs = d,
                other => return Err(at_op(format!("{name}: attribute dictionary expected, found {other:?}"))),
            }
        }
        let mut props = Vec::new();
        if mask & HAS_PROPERTIES != 0 {
            if registered == Some(true) {
                let i = r.count().map_err(in_op)?;
                let mut p = *self.properties.get(i).ok_or_else(|| at_op(format!("{name}: properties index {i} out of range")))?;
                let optional = name == "builtin.module";
                while !p.is_empty() {
                    if optional {
                        let (i, present) = p.varint_flag().map_err(in_op)?;
                        props.push(if present { Some(self.at.attr(i, &p).map_err(in_op)?) } else { None });
                    } else {
                        let i = p.varint().map_err(in_op)?;
                        props.push(Some(self.at.attr(i, &p).map_err(in_op)?));
                    }
                }
            } else {
                // An op unregistered when written keeps its properties as one attribute.
                let i = r.varint().map_err(in_op)?;
                if let Attr::Dict(d) = self.at.attr(i, r).map_err(in_op)? {
                    attrs.extend(d);
                }
            }
        }
        let mut result_types = Vec::new();
        if mask & HAS_RESULTS != 0 {
            let n = r.bounded_count("results").map_err(in_op)?;
            for _ in 0..n {
                let i = r.varint().map_err(in_op)?;
                result_types.push(self.at.ty(i, r).map_err(in_op)?);
            }
        }
        let mut operands = Vec::new();
        if mask & HAS_OPERANDS != 0 {
            let n = r.bounded_count("operands").map_err(in_op)?;
            for _ in 0..n {
                operands.push(self.operand(r).map_err(in_op)?);
            }
        }
        if mask & HAS_SUCCESSORS != 0 {
            return Err(at_op(format!("{name}: ops with successors (unstructured control flow) are not StableHLO")));
        }
        if self.version >= 3 && mask & HAS_USE_LIST_ORDERS != 0 {
            self.skip_use_lists(r, result_types.len()).map_err(in_op)?;
        }
        let (num_regions, isolated) = if mask & HAS_INLINE_REGIONS != 0 { r.varint_flag().map_err(in_op)? } else { (0, false) };
        let mut results = Vec::new();
        if !result_types.is_empty() {
            // Results get value ids only inside a region that declared values (not at the top level).
            let defines = self.scopes.last().and_then(|s| s.next.last()).is_some_and(|&(_, start, end)| end > start);
            let vname = self.fresh();
            if defines {
                for index in 0..result_types.len() {
                    self.define(r, ValueRef { name: vname.clone(), index }).map_err(in_op)?;
                }
            }
            results.push((vname, result_types.len()));
        }
        let mut regions = Vec::new();
        if num_regions > 0 {
            if depth >= MAX_REGION_DEPTH {
                return Err(at_op(format!("{name}: regions nested more than {MAX_REGION_DEPTH} deep")));
            }
            let num_regions = usize::try_from(num_regions).unwrap_or(usize::MAX);
            if isolated {
                self.scopes.push(Scope::default());
            }
            let read = |this: &mut Self, rr: &mut Reader<'_>| -> BcResult<Vec<Region>> {
                if num_regions > rr.remaining() {
                    return rr.error(format!("{num_regions} regions cannot fit in the {} bytes that remain", rr.remaining()));
                }
                (0..num_regions).map(|_| this.read_region(rr, depth + 1)).collect()
            };
            let got = if isolated && self.version >= 2 {
                let s = r.section().map_err(in_op)?;
                if s.id != 4 {
                    return Err(at_op(format!("{name}: expected an IR section for its regions")));
                }
                let mut sr = s.data;
                read(self, &mut sr)
            } else {
                read(self, r)
            };
            if isolated {
                self.scopes.pop();
            }
            // Errors inside the regions already name their own op.
            regions = got?;
        }
        let mut op = Op { name: name.clone(), results, operands, attrs, regions, result_types, loc: Loc::Bytecode { offset } };
        vhlo::to_stablehlo(&mut op, props).map_err(at_op)?;
        Ok(op)
    }

    fn read_region(&mut self, r: &mut Reader<'_>, depth: usize) -> BcResult<Region> {
        let num_blocks = r.bounded_count("blocks")?;
        if num_blocks == 0 {
            return Ok(Region::default());
        }
        let num_values = r.bounded_count("values")?;
        let scope = self.scopes.last_mut().ok_or(BcError { offset: r.offset(), message: "region outside any scope".into() })?;
        let start = scope.values.len();
        scope.next.push((start, start, start + num_values));
        scope.values.resize(start + num_values, None);
        let mut blocks = Vec::with_capacity(num_blocks);
        let mut result = Ok(());
        for _ in 0..num_blocks {
            let mut args = Vec::new();
            match self.read_block_ops(r, depth, Some(&mut args)) {
                Ok(ops) => blocks.push(Block { args, ops }),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if let Some(scope) = self.scopes.last_mut() {
            scope.values.truncate(start);
            scope.next.pop();
        }
        result?;
        if blocks.len() > 1 {
            return r.error("regions with several blocks are not StableHLO");
        }
        Ok(Region { blocks })
    }
}
