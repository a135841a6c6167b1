//! A software model of the AMX tile unit (palette 1), from the instruction descriptions in
//! Intel's SDM: what the driver is tested on where the CPU has no AMX, and what the hardware's
//! first product is compared with before it is used (`hardware.rs`).
//!
//! Modelled: eight tiles of 16 rows x 64 bytes; LDTILECFG (palette 0 releases, palette 1 checks
//! its reserved bytes, at most 16 rows and 64 bytes per row, rows and bytes both zero or both
//! not); loads and stores of the configured rows and bytes per row from the start row, bytes
//! past a row's width and rows past the tile's zeroed on a load; the products' shape rules
//! (three distinct tiles, `C.rows == A.rows`, `C.bytes == B.bytes`, `A.bytes / 4 == B.rows`,
//! at most 16 of each); their results written as rows of `C.bytes` with the rest of the tile
//! zeroed. A broken rule is a fault (`Err`): #GP or #UD on the hardware.
//!
//! TDPBSSD is exact: each `C` dword plus the four byte products of each word pair, wrapping
//! modulo 2^32 (no saturation), so any order gives the same bits.
//!
//! TDPBF16PS rounds, and how is not settled here: the SDM says each accumulation of its fused
//! multiply-adds rounds to nearest even, denormal inputs are read as zero and denormal outputs
//! flushed, MXCSR is ignored; but its pseudocode has been given both as two rounded additions
//! per pair into `C` and as separate even and odd sums over the instruction's 16 pairs, added
//! together and then to `C`. The model does the latter; which one the hardware does (or
//! whether it rounds less often) is unknown until measured on a Xeon, so no test may depend
//! on it: bit-exact tests use values whose every partial sum is exact in f32, others bound
//! the error by the depth.

use super::unit::{TileConfig, TileUnit, MAX_ROWS, MAX_ROW_BYTES, TILES};

/// Rows and bytes per row of one configured tile.
#[derive(Clone, Copy, Default, Debug)]
struct Shape {
    rows: usize,
    bytes: usize,
}

/// One thread's tile state.
pub(crate) struct TileModel {
    /// `None`: the initial state (no palette), where every tile instruction faults.
    shapes: Option<[Shape; TILES]>,
    start_row: usize,
    tiles: [[[u8; MAX_ROW_BYTES]; MAX_ROWS]; TILES],
}

impl Default for TileModel {
    fn default() -> Self {
        TileModel { shapes: None, start_row: 0, tiles: [[[0; MAX_ROW_BYTES]; MAX_ROWS]; TILES] }
    }
}

type Fault = String;

impl TileModel {
    pub(crate) fn ldtilecfg(&mut self, c: &TileConfig) -> Result<(), Fault> {
        match c[0] {
            0 => {
                *self = TileModel::default();
                Ok(())
            }
            1 => {
                let mut reserved = c[2..16].iter().chain(&c[32..48]).chain(&c[56..64]);
                if reserved.any(|&b| b != 0) {
                    return Err("LDTILECFG: reserved bytes set (#GP)".into());
                }
                let mut shapes = [Shape::default(); TILES];
                for (t, s) in shapes.iter_mut().enumerate() {
                    let bytes = usize::from(u16::from_le_bytes([c[16 + 2 * t], c[17 + 2 * t]]));
                    let rows = usize::from(c[48 + t]);
                    if bytes > MAX_ROW_BYTES || rows > MAX_ROWS || (bytes == 0) != (rows == 0) {
                        return Err(format!("LDTILECFG: tile {t} of {rows} rows x {bytes} bytes (#GP)"));
                    }
                    *s = Shape { rows, bytes };
                }
                *self = TileModel { shapes: Some(shapes), start_row: usize::from(c[1]), ..TileModel::default() };
                Ok(())
            }
            p => Err(format!("LDTILECFG: palette {p} (#GP)")),
        }
    }

    /// The shape of tile `t`, which must be configured.
    fn shape(&self, t: u8, what: &str) -> Result<Shape, Fault> {
        let shapes = self.shapes.ok_or_else(|| format!("{what}: tiles not configured (#UD)"))?;
        match shapes.get(usize::from(t)) {
            Some(&s) if s.rows > 0 => Ok(s),
            _ => Err(format!("{what}: tile {t} not configured (#UD)")),
        }
    }

    /// The shape of a load or store's tile, with the start row checked.
    fn moved(&self, t: u8, what: &str) -> Result<Shape, Fault> {
        let s = self.shape(t, what)?;
        if s.bytes % 4 != 0 || self.start_row >= s.rows {
            return Err(format!("{what}: tile {t} of {} x {} bytes from row {} (#UD)", s.rows, s.bytes, self.start_row));
        }
        Ok(s)
    }

    /// # Safety
    /// The tile's rows are readable at `base + r * stride`.
    pub(crate) unsafe fn tileloadd(&mut self, t: u8, base: *const u8, stride: usize) -> Result<(), Fault> {
        let s = self.moved(t, "TILELOADD")?;
        let tile = &mut self.tiles[usize::from(t)];
        for (r, row) in tile.iter_mut().enumerate() {
            row.fill(0);
            if (self.start_row..s.rows).contains(&r) {
                let src = unsafe { std::slice::from_raw_parts(base.wrapping_add(r * stride), s.bytes) };
                row[..s.bytes].copy_from_slice(src);
            }
        }
        self.start_row = 0;
        Ok(())
    }

    /// # Safety
    /// The tile's rows are writable at `base + r * stride`.
    pub(crate) unsafe fn tilestored(&mut self, t: u8, base: *mut u8, stride: usize) -> Result<(), Fault> {
        let s = self.moved(t, "TILESTORED")?;
        for r in self.start_row..s.rows {
            let dst = unsafe { std::slice::from_raw_parts_mut(base.wrapping_add(r * stride), s.bytes) };
            dst.copy_from_slice(&self.tiles[usize::from(t)][r][..s.bytes]);
        }
        self.start_row = 0;
        Ok(())
    }

    pub(crate) fn tilezero(&mut self, t: u8) -> Result<(), Fault> {
        self.shape(t, "TILEZERO")?;
        self.tiles[usize::from(t)] = [[0; MAX_ROW_BYTES]; MAX_ROWS];
        self.start_row = 0;
        Ok(())
    }

    /// The product's `(m, n, k)`: rows of C, dwords per C row, dwords per A row; the shape
    /// rules checked.
    fn product_shape(&self, c: u8, a: u8, b: u8, what: &str) -> Result<(usize, usize, usize), Fault> {
        if c == a || c == b || a == b {
            return Err(format!("{what}: tiles {c}, {a}, {b} not distinct (#UD)"));
        }
        let (sc, sa, sb) = (self.shape(c, what)?, self.shape(a, what)?, self.shape(b, what)?);
        let (m, n, k) = (sc.rows, sc.bytes / 4, sa.bytes / 4);
        let aligned = [sc.bytes, sa.bytes, sb.bytes].iter().all(|b| b % 4 == 0);
        if !aligned || sa.rows != m || sb.bytes != sc.bytes || sb.rows != k || n > 16 || k > 16 {
            return Err(format!("{what}: C {}x{}, A {}x{}, B {}x{} bytes do not multiply (#UD)", sc.rows, sc.bytes, sa.rows, sa.bytes, sb.rows, sb.bytes));
        }
        Ok((m, n, k))
    }

    /// Dword `i` of row `r` of tile `t`.
    fn dword(&self, t: u8, r: usize, i: usize) -> u32 {
        let row = &self.tiles[usize::from(t)][r];
        u32::from_le_bytes([row[4 * i], row[4 * i + 1], row[4 * i + 2], row[4 * i + 3]])
    }

    /// Writes C's new rows (`m` rows of `n` dwords), zeroing the rest of the tile.
    fn write_product(&mut self, c: u8, m: usize, rows: &[[u32; 16]; MAX_ROWS], n: usize) {
        let tile = &mut self.tiles[usize::from(c)];
        for (r, row) in tile.iter_mut().enumerate() {
            row.fill(0);
            if r < m {
                for i in 0..n {
                    row[4 * i..4 * i + 4].copy_from_slice(&rows[r][i].to_le_bytes());
                }
            }
        }
        self.start_row = 0;
    }

    pub(crate) fn tdpbssd(&mut self, c: u8, a: u8, b: u8) -> Result<(), Fault> {
        let (m, n, k) = self.product_shape(c, a, b, "TDPBSSD")?;
        let mut out = [[0u32; 16]; MAX_ROWS];
        for (r, row) in out.iter_mut().enumerate().take(m) {
            for (j, sum) in row.iter_mut().enumerate().take(n) {
                let mut acc = self.dword(c, r, j) as i32;
                for p in 0..k {
                    let (x, y) = (self.dword(a, r, p).to_le_bytes(), self.dword(b, p, j).to_le_bytes());
                    let dot: i32 = (0..4).map(|t| i32::from(x[t] as i8) * i32::from(y[t] as i8)).sum();
                    acc = acc.wrapping_add(dot);
                }
                *sum = acc as u32;
            }
        }
        self.write_product(c, m, &out, n);
        Ok(())
    }

    pub(crate) fn tdpbf16ps(&mut self, c: u8, a: u8, b: u8) -> Result<(), Fault> {
        let (m, n, k) = self.product_shape(c, a, b, "TDPBF16PS")?;
        let mut out = [[0u32; 16]; MAX_ROWS];
        for (r, row) in out.iter_mut().enumerate().take(m) {
            for (j, result) in row.iter_mut().enumerate().take(n) {
                // Even and odd halves of the pairs summed apart (see the module's doc).
                let (mut even, mut odd) = (0f32, 0f32);
                for p in 0..k {
                    let (x, y) = (self.dword(a, r, p), self.dword(b, p, j));
                    even = flush(bf16_daz(x as u16).mul_add(bf16_daz(y as u16), even));
                    odd = flush(bf16_daz((x >> 16) as u16).mul_add(bf16_daz((y >> 16) as u16), odd));
                }
                let acc = f32::from_bits(self.dword(c, r, j));
                *result = flush(acc + flush(even + odd)).to_bits();
            }
        }
        self.write_product(c, m, &out, n);
        Ok(())
    }
}

/// A bf16 value as f32, denormals read as zero.
fn bf16_daz(bits: u16) -> f32 {
    flush(f32::from_bits(u32::from(bits) << 16))
}

/// Denormals flushed to zero (of the same sign).
fn flush(x: f32) -> f32 {
    if x.is_subnormal() {
        f32::from_bits(x.to_bits() & 0x8000_0000)
    } else {
        x
    }
}

/// Faults panic: on the hardware they would end the process (#UD, #GP). Only tests and the
/// hardware probe run the model, with shapes the driver derives, never from user input.
impl TileUnit for TileModel {
    unsafe fn configure(&mut self, config: &TileConfig) {
        self.ldtilecfg(config).unwrap_or_else(|f| panic!("{f}"));
    }
    unsafe fn load<const T: u8>(&mut self, base: *const u8, stride: usize) {
        unsafe { self.tileloadd(T, base, stride) }.unwrap_or_else(|f| panic!("{f}"));
    }
    unsafe fn store<const T: u8>(&mut self, base: *mut u8, stride: usize) {
        unsafe { self.tilestored(T, base, stride) }.unwrap_or_else(|f| panic!("{f}"));
    }
    unsafe fn zero<const T: u8>(&mut self) {
        self.tilezero(T).unwrap_or_else(|f| panic!("{f}"));
    }
    unsafe fn dot_bf16<const C: u8, const A: u8, const B: u8>(&mut self) {
        self.tdpbf16ps(C, A, B).unwrap_or_else(|f| panic!("{f}"));
    }
    unsafe fn dot_s8<const C: u8, const A: u8, const B: u8>(&mut self) {
        self.tdpbssd(C, A, B).unwrap_or_else(|f| panic!("{f}"));
    }
    unsafe fn release(&mut self) {
        *self = TileModel::default();
    }
}
