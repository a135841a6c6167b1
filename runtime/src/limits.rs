//! Limits on what hostile or mistaken input can ask for. Each is far beyond what a real
//! program needs, and each is what makes the arithmetic behind it safe: sizes computed from
//! shapes, tiles and paddings are checked against these limits once, when a shape is parsed,
//! verified or laid out, so that the offsets generated code computes cannot overflow an i64.

/// Most elements one array may hold or be laid out over, tile and tail padding included:
/// 2^48 (256 Ti elements, 4 PiB of c128). Every element offset and stride then fits in an i64
/// with room for the sums and products of a few of them that shape arithmetic forms.
pub const MAX_ARRAY_ELEMENTS: i64 = 1 << 48;

/// Most elements one tile of a tiled layout (`T(8,128)`) may hold. Real tiles hold a few
/// thousand; a larger one only pads small arrays into enormous buffers.
pub const MAX_TILE_ELEMENTS: i64 = 1 << 20;

/// Most devices (`replica_count` × `num_partitions`) a program may run on in this process:
/// each is a thread with its own buffers.
pub const MAX_DEVICES: usize = 1024;

/// Largest HLO module text read from a file: 1 GiB, ten times the largest module JAX
/// programs print with their constants inlined.
pub const MAX_MODULE_TEXT_BYTES: u64 = 1 << 30;

/// A byte count for messages: `4000000000000 bytes (3.6 TiB)`.
pub fn describe_bytes(bytes: u128) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{bytes} bytes ({value:.1} {})", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_read_well() {
        assert_eq!(describe_bytes(12), "12 bytes");
        assert_eq!(describe_bytes(4_000_000_000_000), "4000000000000 bytes (3.6 TiB)");
        assert_eq!(describe_bytes(1 << 30), "1073741824 bytes (1.0 GiB)");
    }
}
