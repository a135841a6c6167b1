//! Shapes and layouts: `f32[2,<=3]{1,0:T(8,128)(2,1)E(4)S(1)}`, tuples, `token[]`.

use super::cursor::{Cursor, PResult, MAX_DEPTH};
use hlojit_runtime::physical::{LayoutError, PhysicalLayout};
use hlojit_runtime::shape::TILE_COMBINE_DIMENSION;
use hlojit_runtime::{ArrayShape, ElementType, Layout, Shape, Tile};

/// A shape at the cursor.
pub(crate) fn parse_shape(c: &mut Cursor, depth: usize) -> PResult<Shape> {
    c.skip_trivia();
    let start = c.pos();
    if depth > MAX_DEPTH {
        return Err(c.error_at(
            start,
            format!("shape nested deeper than {MAX_DEPTH} levels"),
        ));
    }
    if c.eat(b'(') {
        let mut elements = Vec::new();
        if c.eat(b')') {
            return Ok(Shape::Tuple(elements));
        }
        loop {
            elements.push(parse_shape(c, depth + 1)?);
            if c.eat(b')') {
                return Ok(Shape::Tuple(elements));
            }
            c.expect(b',', "or ')' in tuple shape")?;
        }
    }
    let Some((type_pos, type_name)) = c.ident() else {
        return Err(c.expected("a shape"));
    };
    if c.peek_raw() != Some(b'[') {
        c.set_pos(type_pos);
        return Err(c.expected("a shape (element type followed by '[')"));
    }
    match type_name {
        "token" | "opaque" => {
            c.bump();
            c.expect(b']', &format!("after '{type_name}['"))?;
            return Ok(if type_name == "token" {
                Shape::Token
            } else {
                Shape::Opaque
            });
        }
        _ => {}
    }
    let Some(element_type) = ElementType::from_name(type_name) else {
        return Err(c.error_at(type_pos, format!("unknown element type '{type_name}'")));
    };
    c.bump();
    let (dims, dynamic) = parse_dims(c)?;
    let mut array = ArrayShape {
        element_type,
        dims,
        dynamic,
        layout: None,
    };
    if layout_follows(c) {
        array.layout = Some(parse_layout(c, array.dims.len())?);
    }
    // Sizes beyond the limits, tile padding included, are errors here, with a position; other
    // layouts hlojit cannot lay out (packed elements) are valid HLO and fail where used.
    if let Err(e @ LayoutError::TooLarge { .. }) = PhysicalLayout::new(&array) {
        return Err(c.error_at(start, format!("shape {}: {e}", c.slice(start, c.pos()))));
    }
    Ok(Shape::Array(array))
}

/// Dimensions after the `[`, through the `]`.
fn parse_dims(c: &mut Cursor) -> PResult<(Vec<i64>, Vec<bool>)> {
    let mut dims = Vec::new();
    let mut dynamic = Vec::new();
    if c.eat(b']') {
        return Ok((dims, dynamic));
    }
    loop {
        let is_dynamic = c.eat_str("<=");
        c.skip_trivia();
        if c.peek_raw() == Some(b'?') {
            return Err(c.error_at(
                c.pos(),
                "unbounded dynamic dimensions ('?') are not supported",
            ));
        }
        dims.push(c.non_negative("a dimension size")?);
        dynamic.push(is_dynamic);
        if dims.len() > MAX_DEPTH * 2 {
            return Err(c.error_at(
                c.pos(),
                format!("shapes of rank above {} are not supported", MAX_DEPTH * 2),
            ));
        }
        if c.eat(b']') {
            return Ok((dims, dynamic));
        }
        c.expect(b',', "or ']' after dimension size")?;
    }
}

/// True if a `{` at the cursor starts a layout rather than, say, a computation body after a
/// signature's result shape (`-> f32[2] {`): a layout's first token is a number, `:` or `}`.
fn layout_follows(c: &mut Cursor) -> bool {
    let save = c.pos();
    let result = c.eat(b'{') && matches!(c.peek(), Some(b'0'..=b'9' | b':' | b'}'));
    c.set_pos(save);
    result
}

/// `{minor_to_major[:attributes]}` for an array of rank `rank`.
fn parse_layout(c: &mut Cursor, rank: usize) -> PResult<Layout> {
    c.expect(b'{', "to start a layout")?;
    let start = c.pos();
    let mut layout = Layout::default();
    if !matches!(c.peek(), Some(b':' | b'}')) {
        loop {
            layout
                .minor_to_major
                .push(c.non_negative("a dimension number in the layout")?);
            if layout.minor_to_major.len() > rank {
                break;
            }
            if !c.eat(b',') {
                break;
            }
        }
    }
    // A scalar may carry an empty layout; anything else must name every dimension once.
    let m2m = &layout.minor_to_major;
    let is_permutation = m2m.len() == rank && {
        let mut seen = vec![false; rank];
        m2m.iter()
            .all(|&d| (d as usize) < rank && !std::mem::replace(&mut seen[d as usize], true))
    };
    if !is_permutation {
        let text: Vec<String> = m2m.iter().map(|d| d.to_string()).collect();
        return Err(c.error_at(
            start,
            format!(
                "layout {{{}}} is not a permutation of the {rank} dimensions of the shape",
                text.join(",")
            ),
        ));
    }
    if c.eat(b':') {
        parse_layout_attributes(c, &mut layout)?;
    }
    c.expect(b'}', "to close the layout")?;
    Ok(layout)
}

/// The part after `:`: `T(8,128)(2,1)`, `L(n)`, `E(n)`, `S(n)`, and others kept verbatim.
fn parse_layout_attributes(c: &mut Cursor, layout: &mut Layout) -> PResult<()> {
    loop {
        c.skip_trivia();
        let start = c.pos();
        match c.peek_raw() {
            Some(b'}') | None => return Ok(()),
            Some(b'T') if c.peek_raw_at(1) == Some(b'(') => {
                c.bump();
                while c.peek_raw() == Some(b'(') {
                    layout.tiles.push(parse_tile(c)?);
                }
            }
            Some(b @ (b'L' | b'E' | b'S')) if c.peek_raw_at(1) == Some(b'(') => {
                c.bump();
                c.bump();
                let value = c.non_negative("a number in the layout")?;
                c.expect(b')', "after the number")?;
                match b {
                    b'L' => layout.tail_padding_alignment_in_elements = value,
                    b'E' => layout.element_size_in_bits = value,
                    _ => layout.memory_space = value,
                }
            }
            Some(b) if b.is_ascii_uppercase() || b == b'#' || b == b'*' => {
                while c
                    .peek_raw()
                    .is_some_and(|b| b.is_ascii_uppercase() || b == b'#' || b == b'*')
                {
                    c.bump();
                }
                if c.peek_raw() != Some(b'(') {
                    return Err(c.expected("'(' after a layout attribute name"));
                }
                c.balanced_group("a layout attribute")?;
                layout.other.push(c.slice(start, c.pos()).to_string());
            }
            _ => {
                return Err(
                    c.expected("a layout attribute (T(...), L(...), E(...), S(...), ...) or '}'")
                )
            }
        }
    }
}

/// One `(d0,d1,...)` tile; `*` is the combine dimension.
fn parse_tile(c: &mut Cursor) -> PResult<Tile> {
    c.expect(b'(', "to start a tile")?;
    let mut dims = Vec::new();
    if c.eat(b')') {
        return Ok(Tile { dims });
    }
    loop {
        if c.eat(b'*') {
            dims.push(TILE_COMBINE_DIMENSION);
        } else {
            dims.push(c.non_negative("a tile dimension")?);
        }
        if dims.len() > MAX_DEPTH * 2 {
            return Err(c.error_at(c.pos(), "too many tile dimensions"));
        }
        if c.eat(b')') {
            return Ok(Tile { dims });
        }
        c.expect(b',', "or ')' in tile")?;
    }
}
