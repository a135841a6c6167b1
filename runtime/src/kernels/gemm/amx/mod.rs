//! GEMMs on Intel's AMX tiles: bf16 x bf16 -> f32 (AMX-BF16's TDPBF16PS) and s8 x s8 -> s32
//! (AMX-INT8's TDPBSSD), behind entry points with the descriptor of the AVX-512 word kernels,
//! which they run instead where AMX cannot be used.
//!
//! Written and tested on a CPU without AMX: the driver (`driver.rs`) is generic over the tile
//! unit (`unit.rs`) and is checked against float64 and wrapping-i32 references on a software
//! model of the unit (`model.rs`). On a CPU with AMX, before the first use in a process, the
//! hardware must give exactly the model's result on a small product of integer values
//! (edges, several k steps and k blocks); otherwise AMX is not used (one warning on stderr)
//! and the word kernels run, so a wrong reading of the instructions or layouts costs speed,
//! not answers. (An instruction that faults is not caught: the probe cannot help there.)

mod driver;
mod hardware;
mod model;
mod unit;

#[cfg(test)]
mod tests;

use super::{gemm, BatchStrides, GemmF32, Isa, Operands};
use driver::{gemm_on, Kind};
use hardware::{Hardware, Product};
use model::TileModel;
use std::sync::OnceLock;

/// Words per k block: 1024 bf16 or 2048 s8 elements, the word kernels' blocks (a packed A
/// tile strip of 32 rows is then 64 KiB, a B panel 64 KiB). Not yet tuned on a Xeon.
const KC_WORDS: i64 = 512;

/// Whether this process multiplies `product` on the AMX hardware: `Err` says why not.
pub fn amx_status(product_is_bf16: bool) -> Result<(), String> {
    let product = if product_is_bf16 { Product::Bf16 } else { Product::Int8 };
    static BF16: OnceLock<Result<(), String>> = OnceLock::new();
    static INT8: OnceLock<Result<(), String>> = OnceLock::new();
    let cell = if product_is_bf16 { &BF16 } else { &INT8 };
    cell.get_or_init(|| {
        if let Some(why) = hardware::unusable_because(product) {
            return Err(why.to_string());
        }
        let result = probe(product);
        if let Err(why) = &result {
            eprintln!("hlojit: not using AMX for {product:?} products: {why}");
        }
        result
    })
    .clone()
}

/// The hardware against the model on a product of integer values with edge tiles, several
/// k steps and k blocks (C loaded back into the tiles), one thread: every partial sum is
/// exact, so the results must be equal bit for bit.
fn probe(product: Product) -> Result<(), String> {
    let kind = match product {
        Product::Bf16 => Kind::Bf16,
        Product::Int8 => Kind::S8,
    };
    let (m, n, k) = (35, 37, 16 * 4 * 3 + 5);
    let hw = product_of_integers::<Hardware>(kind, m, n, k, 16)?;
    let model = product_of_integers::<TileModel>(kind, m, n, k, 16)?;
    if hw != model {
        let first = hw.iter().zip(&model).position(|(x, y)| x != y).unwrap_or(0);
        return Err(format!("the hardware's {m}x{n}x{k} product differs from the model's at element {first} ({:#x}, model {:#x})", hw[first], model[first]));
    }
    Ok(())
}

/// C (as 4-byte words) of an `m x n x k` product of small integers (bf16) or any bytes (s8),
/// A and B row-major, on tile units `U` with k blocks of `kc_words` words, one thread.
fn product_of_integers<U: unit::TileUnit + Default>(kind: Kind, m: i64, n: i64, k: i64, kc_words: i64) -> Result<Vec<u32>, String> {
    let value = |i: i64| -> u16 {
        let v = (i * 7919 % 13) as i8 - 6;
        match kind {
            Kind::Bf16 => (f32::from(v).to_bits() >> 16) as u16,
            Kind::S8 => (i * 7919 % 251) as u8 as u16,
        }
    };
    let (a16, b16): (Vec<u16>, Vec<u16>) = ((0..m * k).map(value).collect(), (0..k * n).map(|i| value(i + 5)).collect());
    let (a8, b8): (Vec<u8>, Vec<u8>) = (a16.iter().map(|&x| x as u8).collect(), b16.iter().map(|&x| x as u8).collect());
    let (a, b) = match kind {
        Kind::Bf16 => (a16.as_ptr() as *const std::ffi::c_void, b16.as_ptr() as *const std::ffi::c_void),
        Kind::S8 => (a8.as_ptr() as *const std::ffi::c_void, b8.as_ptr() as *const std::ffi::c_void),
    };
    let mut c = vec![0u32; (m * n) as usize];
    let desc = GemmF32 {
        batch: 1, batch_inner: 1, m, n, k,
        a, a_batch: BatchStrides::single(0), a_row: k, a_col: 1,
        b, b_batch: BatchStrides::single(0), b_row: n, b_col: 1,
        c: c.as_mut_ptr() as *mut std::ffi::c_void, c_batch: BatchStrides::single(0), c_row: n,
        mr: 0, nv: 0, kc: 0, nc: 0,
        epilogue: None, epilogue_ctx: std::ptr::null(), epilogue_rows: 0,
    };
    // Below the parallel threshold: one thread, one tile unit.
    if unsafe { gemm_on::<U>(&desc, kind, kc_words) } != 0 {
        return Err(crate::custom_call::take_last_error().unwrap_or_default());
    }
    Ok(c)
}

/// The bf16 x bf16 -> f32 GEMM on AMX tiles where this process may use them (see the module's
/// doc), else [`super::hlojit_rt_gemm_bf16_pairs_avx512`] with the descriptor's tile; 0 on
/// success, 1 with this thread's last error set.
///
/// # Safety
/// As [`super::hlojit_rt_gemm_bf16_pairs_avx512`].
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_gemm_bf16_amx(desc: *const GemmF32) -> i32 {
    let g = unsafe { &*desc };
    match amx_status(true) {
        Ok(()) => unsafe { gemm_on::<Hardware>(g, Kind::Bf16, KC_WORDS) },
        Err(_) => unsafe { gemm(g, Isa::Avx512, Operands::Bf16Pairs) },
    }
}

/// The s8 x s8 -> s32 GEMM on AMX tiles where this process may use them, else
/// [`super::hlojit_rt_gemm_s8_vnni_avx512`] (as [`hlojit_rt_gemm_bf16_amx`]).
///
/// # Safety
/// As [`super::hlojit_rt_gemm_s8_vnni_avx512`].
#[no_mangle]
pub unsafe extern "C" fn hlojit_rt_gemm_s8_amx(desc: *const GemmF32) -> i32 {
    let g = unsafe { &*desc };
    match amx_status(false) {
        Ok(()) => unsafe { gemm_on::<Hardware>(g, Kind::S8, KC_WORDS) },
        Err(_) => unsafe { gemm(g, Isa::Avx512, Operands::S8Quads) },
    }
}
