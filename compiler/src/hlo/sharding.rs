//! GSPMD's `sharding={...}` attribute as a value: which part of an array each partition holds.
//!
//! A tiled sharding cuts each dimension of the array into equal parts (the last ones padded
//! when the size does not divide) and lists, in the tile assignment, the partition holding each
//! part. Trailing dimensions of the tile assignment beyond the array's rank are subgroups:
//! partitions that hold the same part (`last_tile_dim_replicate`, `last_tile_dims={replicated}`)
//! or a part of their own manual value (`last_tile_dims={manual}`). Shardy's named-axis
//! shardings become the same value through [`Tiling::from_mesh_axes`].

use super::shardy::Mesh;

/// Where the parts of a value are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HloSharding {
    /// Every partition holds the whole value.
    Replicated,
    /// The value is already per partition (a manual region's, pmap's).
    Manual,
    /// Only partition `device` holds the value.
    Maximal { device: i64 },
    /// Every partition holds a partial value; the whole is their sum.
    Unreduced,
    /// Each partition holds one tile.
    Tiled(Tiling),
    /// One sharding per element of a tuple.
    Tuple(Vec<HloSharding>),
}

/// What the partitions of one subgroup dimension share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subgroup {
    Replicated,
    Manual,
    Unreduced,
}

/// A tiled sharding: tile counts per array dimension and the tile assignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tiling {
    /// How many parts each dimension of the array is cut into.
    pub tiles: Vec<i64>,
    /// The tile assignment's dimensions after the array's, with what their partitions share.
    pub subgroups: Vec<(Subgroup, i64)>,
    /// Partition ids, row-major over `tiles` then the subgroup sizes.
    pub devices: Vec<i64>,
}

impl HloSharding {
    /// Parses the attribute's text (`{devices=[2,1]0,1}`, `{{replicated}, {manual}}`, ...).
    ///
    /// # Errors
    /// Text that is not a sharding, or a tile assignment that is not a permutation of its
    /// partitions, says what is wrong.
    pub fn parse(text: &str) -> Result<HloSharding, String> {
        if text.contains("/*") {
            return HloSharding::parse(&without_comments(text));
        }
        let inner = text.trim().strip_prefix('{').and_then(|t| t.strip_suffix('}')).ok_or_else(|| format!("a sharding is in braces: {text}"))?;
        if inner.trim_start().starts_with('{') {
            return split_outside_brackets(inner, ',').into_iter().map(HloSharding::parse).collect::<Result<_, _>>().map(HloSharding::Tuple);
        }
        let words = split_outside_brackets(inner, ' ');
        let mut words = words.into_iter().filter(|w| !w.starts_with("metadata="));
        let first = words.next().ok_or_else(|| format!("empty sharding {text}"))?;
        let rest: Vec<&str> = words.collect();
        let no_more = |s: HloSharding| if rest.is_empty() { Ok(s) } else { Err(format!("unexpected '{}' in sharding {text}", rest.join(" "))) };
        match first {
            "replicated" => no_more(HloSharding::Replicated),
            "manual" => no_more(HloSharding::Manual),
            "unreduced" => no_more(HloSharding::Unreduced),
            "maximal" => match rest.as_slice() {
                [device] => {
                    let id = device.strip_prefix("device=").and_then(|d| d.parse().ok()).ok_or_else(|| format!("bad maximal device in {text}"))?;
                    Ok(HloSharding::Maximal { device: id })
                }
                _ => Err(format!("bad maximal sharding {text}")),
            },
            devices => parse_tiled(devices, &rest).map(HloSharding::Tiled).map_err(|e| format!("{e} in sharding {text}")),
        }
    }

    /// A tuple sharding's elements, or this sharding alone.
    pub fn elements(&self) -> &[HloSharding] {
        match self {
            HloSharding::Tuple(elements) => elements,
            one => std::slice::from_ref(one),
        }
    }

    /// The sharding of each array leaf, for a value of `leaves` leaves: a tuple sharding's
    /// elements, or one sharding for every leaf.
    pub fn leaves(&self, leaves: usize) -> Result<Vec<HloSharding>, String> {
        match self {
            HloSharding::Tuple(elements) if elements.len() == leaves => Ok(elements.clone()),
            HloSharding::Tuple(elements) => Err(format!("a sharding of {} elements for {leaves} values", elements.len())),
            one => Ok(vec![one.clone(); leaves]),
        }
    }
}

/// `devices=[2,2]0,1,2,3` / `devices=[2,4]<=[8]` / `devices=[2,4]<=[4,2]T(1,0)`, then
/// `last_tile_dim_replicate` or `last_tile_dims={manual, replicated}`.
fn parse_tiled(devices: &str, rest: &[&str]) -> Result<Tiling, String> {
    let spec = devices.strip_prefix("devices=[").ok_or_else(|| format!("unknown sharding kind '{devices}'"))?;
    let (dims, list) = spec.split_once(']').ok_or("unclosed tile assignment dimensions")?;
    let dims = numbers(dims)?;
    let count: i64 = dims.iter().product();
    let ids = match list.strip_prefix("<=[") {
        Some(iota) => {
            let (shape, transpose) = iota.split_once(']').ok_or("unclosed iota shape")?;
            let shape = numbers(shape)?;
            let perm = match transpose.strip_prefix("T(") {
                Some(p) => numbers(p.strip_suffix(')').ok_or("unclosed iota transpose")?)?,
                None if transpose.is_empty() => (0..shape.len() as i64).collect(),
                None => return Err(format!("unexpected '{transpose}' after the iota shape")),
            };
            transposed_iota(&shape, &perm)?
        }
        None => numbers(list)?,
    };
    let kinds: Vec<Subgroup> = match rest {
        [] => vec![],
        ["last_tile_dim_replicate"] => vec![Subgroup::Replicated],
        [kinds] if kinds.starts_with("last_tile_dims={") => kinds["last_tile_dims={".len()..]
            .strip_suffix('}')
            .ok_or("unclosed last_tile_dims")?
            .split(',')
            .map(|k| match k.trim() {
                "replicated" => Ok(Subgroup::Replicated),
                "manual" => Ok(Subgroup::Manual),
                "unreduced" => Ok(Subgroup::Unreduced),
                other => Err(format!("unknown subgroup kind '{other}'")),
            })
            .collect::<Result<_, _>>()?,
        other => return Err(format!("unexpected '{}'", other.join(" "))),
    };
    if kinds.len() > dims.len() {
        return Err("more subgroup kinds than tile assignment dimensions".into());
    }
    let rank = dims.len() - kinds.len();
    let tiling = Tiling { tiles: dims[..rank].to_vec(), subgroups: kinds.into_iter().zip(dims[rank..].iter().copied()).collect(), devices: ids };
    if tiling.devices.len() as i64 != count || !is_permutation(&tiling.devices) {
        return Err(format!("the tile assignment {:?} is not a permutation of {count} partitions", tiling.devices));
    }
    Ok(tiling)
}

/// `text` without its `/*...*/` comments (XLA numbers long tuples' elements: `/*index=5*/{...}`).
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        rest = rest[start..].find("*/").map_or("", |end| &rest[start + end + 2..]);
    }
    out.push_str(rest);
    out
}

fn numbers(list: &str) -> Result<Vec<i64>, String> {
    list.split(',').map(|n| n.trim().parse::<i64>().map_err(|_| format!("bad number '{n}'"))).collect()
}

fn is_permutation(ids: &[i64]) -> bool {
    let mut seen = vec![false; ids.len()];
    ids.iter().all(|&d| usize::try_from(d).ok().and_then(|d| seen.get_mut(d)).is_some_and(|s| !std::mem::replace(s, true)))
}

/// `0..n` laid out with dimensions `shape`, transposed by `perm`, in row-major order.
fn transposed_iota(shape: &[i64], perm: &[i64]) -> Result<Vec<i64>, String> {
    let mut order: Vec<usize> = perm.iter().filter_map(|&p| usize::try_from(p).ok()).filter(|&p| p < shape.len()).collect();
    order.sort_unstable();
    order.dedup();
    if perm.len() != shape.len() || order.len() != shape.len() || shape.iter().any(|&d| d < 0) {
        return Err(format!("bad iota {shape:?} transposed by {perm:?}"));
    }
    let ids: Vec<i64> = (0..shape.iter().product()).collect();
    Ok(transpose(&ids, shape, &perm.iter().map(|&p| p as usize).collect::<Vec<_>>()))
}

/// `values` laid out row-major with dimensions `dims`, transposed by `perm` (output dimension
/// `k` is input dimension `perm[k]`).
fn transpose(values: &[i64], dims: &[i64], perm: &[usize]) -> Vec<i64> {
    let strides: Vec<i64> = (0..dims.len()).map(|k| dims[k + 1..].iter().product()).collect();
    let out_dims: Vec<i64> = perm.iter().map(|&p| dims[p]).collect();
    let mut index = vec![0i64; dims.len()];
    (0..values.len())
        .map(|_| {
            let at: i64 = index.iter().zip(perm).map(|(&i, &p)| i * strides[p]).sum();
            for k in (0..index.len()).rev() {
                index[k] += 1;
                if index[k] < out_dims[k] {
                    break;
                }
                index[k] = 0;
            }
            values[at as usize]
        })
        .collect()
}

/// Splits at `sep` outside brackets, braces, parentheses and quotes (not angle brackets:
/// `<=` starts an iota tile assignment).
fn split_outside_brackets(s: &str, sep: char) -> Vec<&str> {
    let (mut parts, mut depth, mut quoted, mut start) = (Vec::new(), 0i32, false, 0);
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '[' | '{' | '(' if !quoted => depth += 1,
            ']' | '}' | ')' if !quoted => depth -= 1,
            c if c == sep && depth == 0 && !quoted => {
                parts.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(s[start..].trim());
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

impl Tiling {
    /// How many tiles the array is cut into.
    pub fn tile_count(&self) -> i64 {
        self.tiles.iter().product()
    }

    /// Whether any subgroup dimension is of `kind`.
    pub fn has_subgroup(&self, kind: Subgroup) -> bool {
        self.subgroups.iter().any(|&(k, _)| k == kind)
    }

    /// The dimensions of one tile of an array of dimensions `dims` (rounded up: the last
    /// tiles are padded when a size does not divide).
    pub fn tile_dims(&self, dims: &[i64]) -> Result<Vec<i64>, String> {
        if dims.len() != self.tiles.len() {
            return Err(format!("a sharding of {} dimensions on an array of {}", self.tiles.len(), dims.len()));
        }
        Ok(dims.iter().zip(&self.tiles).map(|(&d, &t)| (d + t - 1) / t).collect())
    }

    /// For each partition `0..devices.len()`, the coordinates of the tile it holds.
    pub fn tile_of_each_partition(&self) -> Vec<Vec<i64>> {
        let mut out = vec![Vec::new(); self.devices.len()];
        let group: i64 = self.subgroups.iter().map(|&(_, n)| n).product();
        for (position, &device) in self.devices.iter().enumerate() {
            let mut tile = position as i64 / group;
            let mut coords = vec![0; self.tiles.len()];
            for k in (0..self.tiles.len()).rev() {
                coords[k] = tile % self.tiles[k];
                tile /= self.tiles[k];
            }
            out[device as usize] = coords;
        }
        out
    }

    /// The partitions that together hold one whole value, one group per subgroup position,
    /// each listing its partitions in tile order (row-major over the tiles).
    pub fn gather_groups(&self) -> Vec<Vec<i64>> {
        let group = self.subgroups.iter().map(|&(_, n)| n).product::<i64>() as usize;
        (0..group).map(|g| self.devices.iter().skip(g).step_by(group).copied().collect()).collect()
    }

    /// Shardy's named-axis sharding: dimension `k` cut by the mesh axes `dim_axes[k]` (major
    /// first), the mesh's other axes holding copies (a replicated subgroup).
    pub fn from_mesh_axes(dim_axes: &[Vec<String>], mesh: &Mesh) -> Result<Tiling, String> {
        let position = |a: &str| mesh.axes.iter().position(|(name, _)| name == a).ok_or_else(|| format!("the mesh has no axis \"{a}\""));
        let mut order = Vec::new();
        let mut tiles = Vec::new();
        for axes in dim_axes {
            let mut count = 1;
            for a in axes {
                let p = position(a)?;
                if order.contains(&p) {
                    return Err(format!("axis \"{a}\" cuts two dimensions"));
                }
                order.push(p);
                count *= mesh.axes[p].1;
            }
            tiles.push(count);
        }
        let copies: i64 = (0..mesh.axes.len()).filter(|p| !order.contains(p)).map(|p| mesh.axes[p].1).product();
        let rest: Vec<usize> = (0..mesh.axes.len()).filter(|p| !order.contains(p)).collect();
        order.extend(rest);
        let shape: Vec<i64> = mesh.axes.iter().map(|&(_, n)| n).collect();
        let ids = mesh.device_ids.clone().unwrap_or_else(|| (0..mesh.devices()).collect());
        if ids.len() as i64 != mesh.devices() || !is_permutation(&ids) {
            return Err(format!("the mesh's device ids {ids:?} are not a permutation of its {} devices", mesh.devices()));
        }
        let subgroups = if copies > 1 { vec![(Subgroup::Replicated, copies)] } else { vec![] };
        Ok(Tiling { tiles, subgroups, devices: transpose(&ids, &shape, &order) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::shardy::parse_mesh_body;

    fn tiled(text: &str) -> Tiling {
        match HloSharding::parse(text).unwrap() {
            HloSharding::Tiled(t) => t,
            other => panic!("{text} parsed as {other:?}"),
        }
    }

    #[test]
    fn kinds() {
        assert_eq!(HloSharding::parse("{replicated}").unwrap(), HloSharding::Replicated);
        assert_eq!(HloSharding::parse("{manual}").unwrap(), HloSharding::Manual);
        assert_eq!(HloSharding::parse("{unreduced}").unwrap(), HloSharding::Unreduced);
        assert_eq!(HloSharding::parse("{maximal device=3}").unwrap(), HloSharding::Maximal { device: 3 });
        assert_eq!(
            HloSharding::parse("{{replicated}, {manual}}").unwrap(),
            HloSharding::Tuple(vec![HloSharding::Replicated, HloSharding::Manual])
        );
        assert_eq!(HloSharding::parse(r#"{replicated metadata={op_name="a b"}}"#).unwrap(), HloSharding::Replicated);
        assert_eq!(
            HloSharding::parse("{{manual}, /*index=1*/{replicated}}").unwrap(),
            HloSharding::Tuple(vec![HloSharding::Manual, HloSharding::Replicated])
        );
    }

    #[test]
    fn tile_assignments() {
        let t = tiled("{devices=[2,2]0,2,1,3}");
        assert_eq!((t.tiles.clone(), t.devices.clone()), (vec![2, 2], vec![0, 2, 1, 3]));
        assert_eq!(t.tile_of_each_partition(), vec![vec![0, 0], vec![1, 0], vec![0, 1], vec![1, 1]]);
        assert_eq!(t.gather_groups(), vec![vec![0, 2, 1, 3]]);
        assert_eq!(tiled("{devices=[2,4]<=[8]}").devices, (0..8).collect::<Vec<_>>());
        assert_eq!(tiled("{devices=[2,4]<=[4,2]T(1,0)}").devices, vec![0, 2, 4, 6, 1, 3, 5, 7]);
        assert_eq!(tiled("{devices=[4]<=[2,2]T(1,0)}").devices, vec![0, 2, 1, 3]);
        let t = tiled("{devices=[2,1,2,2]<=[2,2,2]T(2,1,0) last_tile_dim_replicate}");
        assert_eq!((t.tiles, t.devices), (vec![2, 1, 2], vec![0, 4, 2, 6, 1, 5, 3, 7]));
    }

    #[test]
    fn subgroups() {
        let t = tiled("{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
        assert_eq!((t.tiles.clone(), t.subgroups.clone()), (vec![2, 1], vec![(Subgroup::Replicated, 2)]));
        assert_eq!(t.gather_groups(), vec![vec![0, 2], vec![1, 3]]);
        assert_eq!(t.tile_of_each_partition(), vec![vec![0, 0], vec![0, 0], vec![1, 0], vec![1, 0]]);
        let m = tiled("{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}");
        assert_eq!(m.subgroups, vec![(Subgroup::Manual, 2), (Subgroup::Replicated, 2)]);
        assert!(m.has_subgroup(Subgroup::Manual) && !m.has_subgroup(Subgroup::Unreduced));
        assert_eq!(m.gather_groups(), vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]);
    }

    #[test]
    fn tiles_round_up() {
        let t = tiled("{devices=[4,1]<=[4]}");
        assert_eq!(t.tile_dims(&[10, 3]).unwrap(), vec![3, 3]);
        assert!(t.tile_dims(&[10]).is_err());
    }

    #[test]
    fn malformed_text_is_an_error() {
        for bad in [
            "replicated",
            "{}",
            "{devices=[2,2]0,1,2}",
            "{devices=[2]0,0}",
            "{devices=[2]<=[3]}",
            "{devices=[4]<=[2,2]T(0,0)}",
            "{devices=[2]0,1 last_tile_dims={odd}}",
            "{maximal}",
            "{replicated extra}",
            "{tiled}",
        ] {
            assert!(HloSharding::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn named_axes() {
        let mesh = parse_mesh_body(r#"<["x"=2, "y"=2, "z"=2]>"#).unwrap();
        let t = Tiling::from_mesh_axes(&[vec!["y".into()], vec![]], &mesh).unwrap();
        assert_eq!((t.tiles.clone(), t.subgroups.clone()), (vec![2, 1], vec![(Subgroup::Replicated, 4)]));
        assert_eq!(t.devices, vec![0, 1, 4, 5, 2, 3, 6, 7]);
        let both = Tiling::from_mesh_axes(&[vec!["z".into(), "x".into()]], &mesh).unwrap();
        assert_eq!(both.tiles, vec![4]);
        assert_eq!(both.devices, vec![0, 2, 4, 6, 1, 3, 5, 7]);
        let listed = parse_mesh_body(r#"<["x"=2], device_ids=[1, 0]>"#).unwrap();
        assert_eq!(Tiling::from_mesh_axes(&[vec!["x".into()]], &listed).unwrap().devices, vec![1, 0]);
        assert!(Tiling::from_mesh_axes(&[vec!["w".into()]], &mesh).is_err());
        assert!(Tiling::from_mesh_axes(&[vec!["x".into()], vec!["x".into()]], &mesh).is_err());
    }
}
