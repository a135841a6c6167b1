//! Tokens at the PJRT boundary. A program with ordered effects (an ordered `io_callback`,
//! `jax.debug.print(..., ordered=True)`) takes and returns `token[]` values in its entry
//! computation; the executor passes only array leaves, but JAX counts the tokens among the
//! arguments and outputs (passing an empty bool array for a token the first time, and
//! afterwards the token buffer the previous run returned).

use hlojit::Shape;

/// The leaves of `shapes` in order (tuples flattened depth-first): `Some(i)` for the `i`-th
/// array leaf, `None` for a token (or an opaque value, which carries no data either).
pub fn leaves(shapes: &[Shape]) -> Vec<Option<usize>> {
    fn walk(s: &Shape, next: &mut usize, out: &mut Vec<Option<usize>>) {
        match s {
            Shape::Array(_) => {
                out.push(Some(*next));
                *next += 1;
            }
            Shape::Tuple(elements) => elements.iter().for_each(|e| walk(e, next, out)),
            Shape::Token | Shape::Opaque => out.push(None),
        }
    }
    let mut out = Vec::new();
    let mut next = 0;
    shapes.iter().for_each(|s| walk(s, &mut next, &mut out));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hlojit::ElementType;

    #[test]
    fn tokens_are_leaves_without_an_array_index() {
        let shapes = vec![
            Shape::Token,
            Shape::Tuple(vec![Shape::scalar(ElementType::F32), Shape::Token, Shape::scalar(ElementType::S32)]),
        ];
        assert_eq!(leaves(&shapes), vec![None, Some(0), None, Some(1)]);
    }
}
