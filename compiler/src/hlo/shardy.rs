//! Shardy's text forms as JAX's portable artifacts carry them (the round-trip export: meshes in
//! the module's `xla.sdy.meshes` frontend attribute, shardings as `#sdy.sharding<...>` strings):
//! meshes, shardings, and the per-device shape of a sharded array.

use std::collections::BTreeMap;

/// A device mesh: named axes with their sizes, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Mesh {
    pub axes: Vec<(String, i64)>,
    /// `device_ids=[...]` when the mesh lists its devices in an order other than 0..n.
    pub device_ids: Option<Vec<i64>>,
}

impl Mesh {
    pub fn size(&self, axis: &str) -> Option<i64> {
        self.axes.iter().find(|(a, _)| a == axis).map(|(_, n)| *n)
    }

    pub fn devices(&self) -> i64 {
        self.axes.iter().map(|(_, n)| n).product()
    }
}

/// A sharding: which mesh axes split each dimension. No axis in any dimension is a
/// replicated array (every device holds all of it).
#[derive(Clone, Debug, PartialEq)]
pub struct Sharding {
    pub mesh: String,
    pub dims: Vec<Vec<String>>,
}

impl Sharding {
    pub fn replicated() -> Sharding {
        Sharding { mesh: String::new(), dims: Vec::new() }
    }

    pub fn is_replicated(&self) -> bool {
        self.dims.iter().all(|d| d.is_empty())
    }

    /// Two shardings place the same data on the same devices.
    pub fn same_as(&self, other: &Sharding) -> bool {
        if self.is_replicated() || other.is_replicated() {
            return self.is_replicated() && other.is_replicated();
        }
        self.mesh == other.mesh && self.dims == other.dims
    }

    /// The shape one device holds of an array of shape `dims`.
    pub fn local_dims(&self, dims: &[i64], meshes: &BTreeMap<String, Mesh>) -> Result<Vec<i64>, String> {
        if self.is_replicated() {
            return Ok(dims.to_vec());
        }
        if self.dims.len() != dims.len() {
            return Err(format!("a sharding of {} dimensions on an array of {}", self.dims.len(), dims.len()));
        }
        let mesh = meshes.get(&self.mesh).ok_or_else(|| format!("sharding names mesh @{}, which the module does not define", self.mesh))?;
        let mut out = Vec::with_capacity(dims.len());
        for (&size, axes) in dims.iter().zip(&self.dims) {
            let mut split = 1i64;
            for a in axes {
                split *= mesh.size(a).ok_or_else(|| format!("sharding names axis \"{a}\", which mesh @{} does not have", self.mesh))?;
            }
            if split <= 0 || size % split != 0 {
                return Err(format!("a dimension of {size} does not split evenly over {split} devices"));
            }
            out.push(size / split);
        }
        Ok(out)
    }
}

/// Splits `s` at commas outside brackets, braces, angle brackets and quotes.
fn split_top(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut quoted, mut start) = (0i32, false, 0);
    for (i, ch) in s.char_indices() {
        match ch {
            '"' => quoted = !quoted,
            '<' | '[' | '{' | '(' if !quoted => depth += 1,
            '>' | ']' | '}' | ')' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                parts.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !s[start..].trim().is_empty() {
        parts.push(s[start..].trim());
    }
    parts
}

fn strip<'a>(s: &'a str, open: char, close: char) -> Option<&'a str> {
    s.trim().strip_prefix(open)?.strip_suffix(close)
}

fn unquote(s: &str) -> Option<&str> {
    s.trim().strip_prefix('"')?.strip_suffix('"')
}

/// `{mesh = #sdy.mesh<["i"=2]>, other = #sdy.mesh<[], device_ids=[0]>}`.
pub fn parse_meshes(text: &str) -> Result<BTreeMap<String, Mesh>, String> {
    let body = strip(text, '{', '}').ok_or_else(|| format!("xla.sdy.meshes is not a dictionary: {text}"))?;
    let mut out = BTreeMap::new();
    for entry in split_top(body) {
        let (name, value) = entry.split_once('=').ok_or_else(|| format!("bad mesh entry '{entry}'"))?;
        let name = name.trim();
        let name = unquote(name).unwrap_or(name).to_string();
        let value = value.trim();
        let inner = value.strip_prefix("#sdy.mesh").ok_or_else(|| format!("mesh @{name} is not a #sdy.mesh: {value}"))?;
        out.insert(name, parse_mesh_body(inner)?);
    }
    Ok(out)
}

/// `<["i"=2, "j"=4], device_ids=[...]>`.
pub fn parse_mesh_body(text: &str) -> Result<Mesh, String> {
    let inner = strip(text, '<', '>').ok_or_else(|| format!("bad mesh '{text}'"))?;
    let parts = split_top(inner);
    let mut axes = Vec::new();
    let mut device_ids = None;
    for (k, part) in parts.iter().enumerate() {
        if k == 0 && part.starts_with('[') {
            let list = strip(part, '[', ']').ok_or_else(|| format!("bad mesh axes '{part}'"))?;
            for axis in split_top(list) {
                let (name, size) = axis.split_once('=').ok_or_else(|| format!("bad mesh axis '{axis}'"))?;
                let name = unquote(name).ok_or_else(|| format!("bad mesh axis name '{name}'"))?;
                let size: i64 = size.trim().parse().map_err(|_| format!("bad mesh axis size '{size}'"))?;
                axes.push((name.to_string(), size));
            }
        } else if let Some(ids) = part.strip_prefix("device_ids=") {
            let list = strip(ids, '[', ']').ok_or_else(|| format!("bad device_ids '{ids}'"))?;
            let ids: Vec<i64> = split_top(list).iter().map(|d| d.parse().map_err(|_| format!("bad device id '{d}'"))).collect::<Result<_, _>>()?;
            if !ids.iter().enumerate().all(|(i, &d)| d == i as i64) {
                device_ids = Some(ids);
            }
        } else {
            return Err(format!("unknown mesh part '{part}'"));
        }
    }
    Ok(Mesh { axes, device_ids })
}

/// `#sdy.sharding<@mesh, [{"i"}, {}]>` or one element of a `#sdy.sharding_per_value<[...]>`
/// (`<@mesh, [...]>`). Open dimensions (`?`) and priorities add nothing to where data is;
/// `replicated={...}` only says so explicitly. Sub-axes, inline meshes and unreduced axes
/// are refused (nothing JAX's shard_map or pmap writes).
pub fn parse_sharding(text: &str) -> Result<Sharding, String> {
    let t = text.trim();
    let t = t.strip_prefix("#sdy.sharding").unwrap_or(t);
    let inner = strip(t, '<', '>').ok_or_else(|| format!("bad sharding '{text}'"))?;
    let parts = split_top(inner);
    let mesh = parts.first().and_then(|m| m.strip_prefix('@')).ok_or_else(|| format!("sharding '{text}' does not name a mesh (@name)"))?;
    let dims_text = parts.get(1).ok_or_else(|| format!("sharding '{text}' has no dimensions"))?;
    let dims_list = strip(dims_text, '[', ']').ok_or_else(|| format!("bad sharding dimensions '{dims_text}'"))?;
    let mut dims = Vec::new();
    for d in split_top(dims_list) {
        // `{"i"}p1`: the priority follows the closing brace.
        let close = d.rfind('}').ok_or_else(|| format!("bad sharding dimension '{d}'"))?;
        let body = strip(&d[..=close], '{', '}').ok_or_else(|| format!("bad sharding dimension '{d}'"))?;
        let mut axes = Vec::new();
        for a in split_top(body) {
            if a == "?" {
                continue;
            }
            let name = unquote(a).ok_or_else(|| format!("sharding axis '{a}' (sub-axes are not supported)"))?;
            axes.push(name.to_string());
        }
        dims.push(axes);
    }
    for extra in parts.iter().skip(2) {
        if let Some(list) = extra.strip_prefix("unreduced=") {
            if strip(list, '{', '}').is_some_and(|l| !l.trim().is_empty()) {
                return Err(format!("sharding '{text}' has unreduced axes"));
            }
        } else if !extra.starts_with("replicated=") {
            return Err(format!("unknown sharding part '{extra}'"));
        }
    }
    Ok(Sharding { mesh: mesh.to_string(), dims })
}

/// `#sdy.sharding_per_value<[<@mesh, [...]>, ...]>`.
pub fn parse_sharding_per_value(text: &str) -> Result<Vec<Sharding>, String> {
    let t = text.trim().strip_prefix("#sdy.sharding_per_value").ok_or_else(|| format!("not a sharding_per_value: {text}"))?;
    let list = strip(t, '<', '>').and_then(|l| strip(l, '[', ']')).ok_or_else(|| format!("bad sharding_per_value '{text}'"))?;
    split_top(list).into_iter().map(parse_sharding).collect()
}

/// `#sdy<manual_axes{"i", "j"}>`.
pub fn parse_manual_axes(text: &str) -> Result<Vec<String>, String> {
    let t = text.trim().strip_prefix("#sdy<manual_axes").and_then(|t| t.strip_suffix('>')).ok_or_else(|| format!("bad manual_axes '{text}'"))?;
    let list = strip(t, '{', '}').ok_or_else(|| format!("bad manual_axes '{text}'"))?;
    split_top(list).into_iter().map(|a| unquote(a).map(str::to_string).ok_or_else(|| format!("bad manual axis '{a}'"))).collect()
}

/// The value of `key` in an HLO `frontend_attributes={k="v",...}` dictionary, quotes and
/// their escapes removed (`{xla.sdy.sharding="#sdy.sharding<@mesh, [{\"x\"}]>"}`); an
/// unquoted value (`{xla.sdy.meshes={mesh = ...}}`) as written.
pub fn frontend_attribute(dictionary: &str, key: &str) -> Option<String> {
    let body = strip(dictionary, '{', '}')?;
    let (mut depth, mut quoted, mut escaped, mut start) = (0i32, false, false, 0);
    let mut entries = Vec::new();
    for (i, ch) in body.char_indices() {
        match ch {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '<' | '[' | '{' | '(' if !quoted => depth += 1,
            '>' | ']' | '}' | ')' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                entries.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    entries.push(&body[start..]);
    let value = entries.into_iter().find_map(|e| e.split_once('=').filter(|(k, _)| k.trim() == key).map(|(_, v)| v.trim()))?;
    match value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Some(quoted) => {
            let mut out = String::with_capacity(quoted.len());
            let mut chars = quoted.chars();
            while let Some(c) = chars.next() {
                out.push(if c == '\\' { chars.next().unwrap_or(c) } else { c });
            }
            Some(out)
        }
        None => Some(value.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meshes_and_shardings() {
        let m = parse_meshes(r#"{mesh = #sdy.mesh<["i"=2, "j"=4]>, one = #sdy.mesh<[], device_ids=[0]>}"#).unwrap();
        assert_eq!(m["mesh"].axes, vec![("i".to_string(), 2), ("j".to_string(), 4)]);
        assert_eq!(m["one"].device_ids, None);
        assert_eq!(parse_mesh_body(r#"<["x"=2], device_ids=[1, 0]>"#).unwrap().device_ids, Some(vec![1, 0]));
        let s = parse_sharding(r#"#sdy.sharding<@mesh, [{"i", ?}p1, {}, {"j"}], replicated={"k"}>"#).unwrap();
        assert_eq!(s.dims, vec![vec!["i".to_string()], vec![], vec!["j".to_string()]]);
        assert_eq!(s.local_dims(&[4, 3, 8], &m).unwrap(), vec![2, 3, 2]);
        assert!(s.local_dims(&[3, 3, 8], &m).unwrap_err().contains("does not split evenly"));
        let v = parse_sharding_per_value(r#"#sdy.sharding_per_value<[<@mesh, [{"i"}, {}]>, <@mesh, []>]>"#).unwrap();
        assert_eq!(v.len(), 2);
        assert!(v[1].is_replicated() && v[1].same_as(&Sharding::replicated()));
        assert!(!v[0].same_as(&s));
        assert_eq!(parse_manual_axes(r#"#sdy<manual_axes{"i", "j"}>"#).unwrap(), vec!["i", "j"]);
        assert!(parse_sharding(r#"#sdy.sharding<@mesh, [{"i":(1)2}]>"#).is_err());
    }

    #[test]
    fn frontend_attributes() {
        let f = r##"{xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>"}"##;
        assert_eq!(frontend_attribute(f, "xla.sdy.manual_axes").unwrap(), r#"#sdy<manual_axes{"x"}>"#);
        assert_eq!(frontend_attribute(f, "xla.sdy.in_shardings").unwrap(), r#"#sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>"#);
        assert_eq!(frontend_attribute(f, "xla.sdy.sharding"), None);
        let meshes = r#"{xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=2]>}, other="1"}"#;
        assert_eq!(frontend_attribute(meshes, "xla.sdy.meshes").unwrap(), r#"{mesh = #sdy.mesh<["x"=2, "y"=2]>}"#);
        assert_eq!(frontend_attribute(meshes, "other").unwrap(), "1");
    }
}
