//! The runtime's ABI identity, so that an AOT object refuses at link time a runtime library of
//! another build. An object fills the runtime's descriptors and calls its functions as the
//! runtime the compiler was built with defines them; a library built from other sources may lay
//! them out otherwise and would compute garbage silently. So the library defines a symbol
//! named after a hash of its sources (`build.rs`), and every object `hlojit compile` writes
//! references the one of its compiler's runtime: another build's library leaves it undefined
//! and the link fails naming it. The JIT never references it: its code runs in the process
//! that compiled it, against that very runtime.

/// Expands to the identity symbol's name, `hlojit_rt_abi_` and 16 hexadecimal digits.
macro_rules! abi_symbol {
    () => {
        concat!("hlojit_rt_abi_", env!("HLOJIT_RUNTIME_ABI"))
    };
}

/// The name of the symbol this runtime library defines and AOT objects reference.
pub const ABI_SYMBOL: &str = abi_symbol!();

/// The identity symbol itself: a byte the object's entry function reads, so that no optimizer
/// or section garbage collection drops the reference.
#[export_name = abi_symbol!()]
pub static ABI_IDENTITY: u8 = 0;
