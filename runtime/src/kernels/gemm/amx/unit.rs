//! The tile operations the AMX driver issues, implemented twice: by the hardware
//! (`hardware.rs`) and by the software model (`model.rs`), so that the driver's use of them
//! is tested on machines without AMX and the hardware can be checked against the model.
//!
//! Tile numbers are const parameters: the hardware names them in its instructions.

/// Bytes of the palette-1 tile configuration that LDTILECFG reads.
pub(crate) type TileConfig = [u8; 64];

/// Palette 1: eight tiles of at most 16 rows of at most 64 bytes.
pub(crate) const TILES: usize = 8;
pub(crate) const MAX_ROWS: usize = 16;
pub(crate) const MAX_ROW_BYTES: usize = 64;

/// A palette-1 configuration (start row 0) giving tile `t` `shape[t] = (rows, bytes per
/// row)`; `(0, 0)` leaves a tile unconfigured. Layout: byte 0 palette, byte 1 start row,
/// bytes 16 + 2t..18 + 2t tile t's bytes per row (little-endian), byte 48 + t its rows; the
/// rest reserved, zero.
pub(crate) fn palette1(shape: [(u8, u16); TILES]) -> TileConfig {
    let mut c = [0u8; 64];
    c[0] = 1;
    for (t, &(rows, bytes)) in shape.iter().enumerate() {
        c[16 + 2 * t..18 + 2 * t].copy_from_slice(&bytes.to_le_bytes());
        c[48 + t] = rows;
    }
    c
}

/// The tile unit of one thread: configure, then load, multiply, store; release when done.
///
/// # Safety
/// Loads and stores read and write `rows x bytes per row` of the tile's configuration at
/// `base + r * stride`: the caller guarantees that memory. Tile numbers are below [`TILES`],
/// the three of a product distinct, and shapes as the instruction requires (the model
/// panics where the hardware would fault).
pub(crate) trait TileUnit {
    /// LDTILECFG.
    unsafe fn configure(&mut self, config: &TileConfig);
    /// TILELOADD: row `r` from `base + r * stride`.
    unsafe fn load<const T: u8>(&mut self, base: *const u8, stride: usize);
    /// TILESTORED: row `r` to `base + r * stride`.
    unsafe fn store<const T: u8>(&mut self, base: *mut u8, stride: usize);
    /// TILEZERO.
    unsafe fn zero<const T: u8>(&mut self);
    /// TDPBF16PS: `C` (f32) += `A` (bf16 pairs) x `B` (bf16 pairs, k-pairs by rows).
    unsafe fn dot_bf16<const C: u8, const A: u8, const B: u8>(&mut self);
    /// TDPBSSD: `C` (s32) += `A` (s8 quads) x `B` (s8 quads, k-quads by rows), wrapping.
    unsafe fn dot_s8<const C: u8, const A: u8, const B: u8>(&mut self);
    /// TILERELEASE: back to the initial state (the operating system then need not save the
    /// tiles on a context switch).
    unsafe fn release(&mut self);
}
