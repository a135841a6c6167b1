//! Shardy's attributes (shardy/dialect/sdy/ir/bytecode.td), decoded to the text MLIR prints for
//! them (`#sdy.mesh<["i"=2]>`, `#sdy.sharding<@mesh, [{"i"}, {}]>`, ...), which the converter
//! reads as it reads them in MLIR text. JAX's programs for several devices carry them: meshes,
//! argument shardings, manual computations (pmap, shard_map).
//!
//! Nested attributes are references into the attribute table; names are string-table indices.

use super::{AttrTypes, Reader};
use crate::stablehlo::bytecode::reader::BcResult;
use crate::stablehlo::ir::Attr;

impl AttrTypes<'_> {
    /// One Shardy attribute, by its code's position in `SdyDialectTypes`.
    pub(super) fn sdy_attr(&mut self, r: &mut Reader<'_>, depth: usize) -> BcResult<Attr> {
        let code = r.varint()?;
        let text = match code {
            // ManualAxesAttr: string attributes.
            0 => {
                let names = self.attr_list(r, depth)?.iter().map(quoted).collect::<Vec<_>>();
                format!("#sdy<manual_axes{{{}}}>", names.join(", "))
            }
            // MeshAxisAttr: name, size.
            1 => {
                let name = self.string(r)?;
                let size = r.svarint()?;
                format!("\"{name}\"={size}")
            }
            // MeshAttr: axes, device ids (empty: 0..n).
            2 => {
                let axes = self.attr_list(r, depth)?.iter().map(text_of).collect::<Vec<_>>();
                let ids = Self::svarints(r)?;
                let ids = if ids.is_empty() { String::new() } else { format!(", device_ids=[{}]", ids.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")) };
                format!("#sdy.mesh<[{}]{ids}>", axes.join(", "))
            }
            // SubAxisInfoAttr: pre-size, size.
            3 => {
                let pre = r.svarint()?;
                let size = r.svarint()?;
                format!("({pre}){size}")
            }
            // AxisRefAttr: name, optional sub-axis.
            4 => {
                let name = self.string(r)?;
                let (index, present) = r.varint_flag()?;
                if present {
                    let sub = self.attr_depth(index, r, depth + 1)?;
                    format!("\"{name}\":{}", text_of(&sub))
                } else {
                    format!("\"{name}\"")
                }
            }
            // DimensionShardingAttr: axes, closed, optional priority.
            5 => {
                let mut axes = self.attr_list(r, depth)?.iter().map(text_of).collect::<Vec<_>>();
                // MLIR writes a Bool as one byte, not a varint.
                let closed = r.byte()? != 0;
                let (priority, has_priority) = r.varint_flag()?;
                if !closed {
                    axes.push("?".into());
                }
                let p = if has_priority { format!("p{priority}") } else { String::new() };
                format!("{{{}}}{p}", axes.join(", "))
            }
            // TensorShardingAttr V1 / V2 (unreduced axes) / V3 (and a reduction).
            6 | 15 | 17 => {
                let mesh = self.sub_attr(r, depth)?;
                let mesh = match &mesh {
                    Attr::Symbol(s) => format!("@{s}"),
                    other => text_of(other).trim_start_matches("#sdy.").to_string(),
                };
                let dims = self.attr_list(r, depth)?.iter().map(text_of).collect::<Vec<_>>();
                let replicated = self.attr_list(r, depth)?.iter().map(text_of).collect::<Vec<_>>();
                let mut out = format!("#sdy.sharding<{mesh}, [{}]", dims.join(", "));
                if !replicated.is_empty() {
                    out.push_str(&format!(", replicated={{{}}}", replicated.join(", ")));
                }
                if code != 6 {
                    let unreduced = self.attr_list(r, depth)?.iter().map(text_of).collect::<Vec<_>>();
                    if !unreduced.is_empty() {
                        out.push_str(&format!(", unreduced={{{}}}", unreduced.join(", ")));
                    }
                }
                out.push('>');
                out
            }
            // TensorShardingPerValueAttr V1 / V2.
            7 | 16 => {
                let items = self.attr_list(r, depth)?.iter().map(|a| text_of(a).trim_start_matches("#sdy.sharding").to_string()).collect::<Vec<_>>();
                format!("#sdy.sharding_per_value<[{}]>", items.join(", "))
            }
            // Sharding rules and collective parameters: nothing the converter reads.
            other => format!("#sdy attribute {other}"),
        };
        Ok(Attr::Opaque(text))
    }
}

fn text_of(a: &Attr) -> String {
    match a {
        Attr::Opaque(t) => t.clone(),
        Attr::String(s) => format!("\"{s}\""),
        Attr::Symbol(s) => format!("@{s}"),
        other => format!("{other:?}"),
    }
}

fn quoted(a: &Attr) -> String {
    match a {
        Attr::String(s) => format!("\"{s}\""),
        other => text_of(other),
    }
}
