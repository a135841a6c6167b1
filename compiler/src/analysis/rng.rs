//! How XLA lays out the random bits of ThreeFry outputs, shared by the rng expander and the
//! `rng-bit-generator` emitter.

/// The dimension XLA splits into pairs for 32-bit and narrower ThreeFry outputs: the first of
/// even size, else the first of the largest size.
pub fn split_dimension(dims: &[i64]) -> usize {
    if let Some(d) = dims.iter().position(|&d| d % 2 == 0) {
        return d;
    }
    let mut best = 0;
    for (i, &d) in dims.iter().enumerate() {
        if d > dims[best] {
            best = i;
        }
    }
    best
}
