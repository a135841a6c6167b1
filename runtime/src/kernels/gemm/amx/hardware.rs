//! The AMX tile unit itself: each operation one instruction, the tile registers named in the
//! template (tile numbers are const parameters), so the driver's loops compile to straight
//! tile instructions. Whether the CPU and the operating system let this process use it is
//! [`tiles_usable`]'s question; whether the instructions do what the model says is the
//! probe's (`mod.rs`).

use super::unit::{TileConfig, TileUnit};
use std::sync::OnceLock;

/// The hardware unit. Its operations may only run once [`tiles_usable`] (and, for products,
/// the product's feature) said yes on this process.
#[derive(Default)]
pub(crate) struct Hardware;

/// The AMX features a product needs besides the tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Product {
    Bf16,
    Int8,
}

/// Every asm block that writes tiles declares them all clobbered: the compiler never keeps
/// values in tile registers, but says so rather than relies on it.
#[cfg(target_arch = "x86_64")]
macro_rules! tile_asm {
    ($template:literal $(, $($operands:tt)*)?) => {
        std::arch::asm!(
            $template,
            $($($operands)*,)?
            out("tmm0") _, out("tmm1") _, out("tmm2") _, out("tmm3") _,
            out("tmm4") _, out("tmm5") _, out("tmm6") _, out("tmm7") _,
            options(nostack, preserves_flags)
        )
    };
}

#[cfg(target_arch = "x86_64")]
impl TileUnit for Hardware {
    #[inline(always)]
    unsafe fn configure(&mut self, config: &TileConfig) {
        unsafe { tile_asm!("ldtilecfg [{cfg}]", cfg = in(reg) config.as_ptr()) };
    }
    #[inline(always)]
    unsafe fn load<const T: u8>(&mut self, base: *const u8, stride: usize) {
        unsafe { tile_asm!("tileloadd tmm{t}, [{base} + {stride}*1]", t = const T, base = in(reg) base, stride = in(reg) stride) };
    }
    #[inline(always)]
    unsafe fn store<const T: u8>(&mut self, base: *mut u8, stride: usize) {
        unsafe { tile_asm!("tilestored [{base} + {stride}*1], tmm{t}", t = const T, base = in(reg) base, stride = in(reg) stride) };
    }
    #[inline(always)]
    unsafe fn zero<const T: u8>(&mut self) {
        unsafe { tile_asm!("tilezero tmm{t}", t = const T) };
    }
    #[inline(always)]
    unsafe fn dot_bf16<const C: u8, const A: u8, const B: u8>(&mut self) {
        const { assert!(C != A && C != B && A != B, "the three tiles of a product must differ (#UD)") };
        unsafe { tile_asm!("tdpbf16ps tmm{c}, tmm{a}, tmm{b}", c = const C, a = const A, b = const B) };
    }
    #[inline(always)]
    unsafe fn dot_s8<const C: u8, const A: u8, const B: u8>(&mut self) {
        const { assert!(C != A && C != B && A != B, "the three tiles of a product must differ (#UD)") };
        unsafe { tile_asm!("tdpbssd tmm{c}, tmm{a}, tmm{b}", c = const C, a = const A, b = const B) };
    }
    #[inline(always)]
    unsafe fn release(&mut self) {
        unsafe { tile_asm!("tilerelease") };
    }
}

/// Why AMX is not used on this machine, or `None` when the CPU has the tiles and `product`'s
/// instructions, the operating system saves the tile state (XCR0 bits 17 and 18) and Linux
/// granted this process the tile data (once per process).
pub(crate) fn unusable_because(product: Product) -> Option<&'static str> {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        static TILES: OnceLock<Option<&'static str>> = OnceLock::new();
        let tiles = *TILES.get_or_init(tiles_unusable_because);
        tiles.or_else(|| {
            // CPUID leaf 7, EDX: AMX-BF16 bit 22, AMX-INT8 bit 25.
            let edx = std::arch::x86_64::__cpuid_count(7, 0).edx;
            let bit = match product {
                Product::Bf16 => 22,
                Product::Int8 => 25,
            };
            (edx >> bit & 1 == 0).then_some("the CPU lacks the product's AMX instructions")
        })
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        let _ = product;
        Some("AMX is used only on x86-64 Linux")
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn tiles_unusable_because() -> Option<&'static str> {
    use std::arch::x86_64::__cpuid_count;
    // Leaves past the maximum return another leaf's values: the maximum first.
    let max_leaf = __cpuid_count(0, 0).eax;
    if max_leaf < 0x1d {
        return Some("the CPU has no AMX (CPUID leaf 0x1d absent)");
    }
    // Leaf 7, EDX bit 24: AMX-TILE.
    if __cpuid_count(7, 0).edx >> 24 & 1 == 0 {
        return Some("the CPU has no AMX tiles");
    }
    // Palette 1 as the driver configures it (leaf 0x1d, subleaf 1): 64 bytes per row, at least
    // 8 tiles, 16 rows.
    let palette = __cpuid_count(0x1d, 1);
    if palette.ebx & 0xffff != 64 || palette.ebx >> 16 < 8 || palette.ecx & 0xffff != 16 {
        return Some("the CPU's AMX palette 1 is not 8 tiles of 16 rows of 64 bytes");
    }
    // OSXSAVE (leaf 1, ECX bit 27), then XCR0 bits 17 (tile configuration) and 18 (tile data).
    if __cpuid_count(1, 0).ecx >> 27 & 1 == 0 {
        return Some("the operating system does not enable XSAVE");
    }
    let xcr0 = xgetbv0();
    if xcr0 >> 17 & 3 != 3 {
        return Some("the operating system does not enable the AMX state (XCR0)");
    }
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: asks Linux for this process's permission to use the tile data; no memory is
    // passed.
    if unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) } != 0 {
        return Some("Linux refused this process the AMX tile data (arch_prctl)");
    }
    None
}

/// XCR0 (XGETBV with ECX = 0); only after OSXSAVE was seen.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn xgetbv0() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: XGETBV 0 is allowed at any privilege level once the OS set CR4.OSXSAVE.
    unsafe { std::arch::asm!("xgetbv", in("ecx") 0u32, out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags)) };
    u64::from(hi) << 32 | u64::from(lo)
}
