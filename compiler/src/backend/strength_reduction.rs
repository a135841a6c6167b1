//! Loop strength reduction (LSR) on or off for each LLVM module's code generation, by the
//! module's kind.
//!
//! LSR rewrites each loop's address arithmetic into extra induction variables before
//! instruction selection. On loop-kernel modules (elementwise, data movement, reductions:
//! [`Optimization::LoopKernels`]) it was the most expensive single code generation pass (a
//! fifth of `llc`'s time on softmax's row kernel), and what it buys there on x86, whose
//! addressing modes take base + index * scale + offset, is about one instruction per
//! iteration of loops that wait on memory (softmax's four inner loops: 86 -> 81
//! instructions). Measured (repeat-compile CPU time, one process, a busy machine): softmax
//! 17.6 -> 14.7 ms, layernorm 13.4 -> 10.0, reduce_sum_max 13.4 -> 12.2, gelu 10.1 -> 9.0.
//! Modules with dots, convolutions, sorts or loops keep it: their inner loops grow by up to a
//! fifth without it (mlp_train's), and their compile time is well below XLA's anyway.
//!
//! LLVM has no per-module switch for it, only the process-wide `-disable-lsr` option, read
//! when a code generation pipeline is built. So code generation runs under a [`Mode`] guard:
//! any number of modules of one mode generate code at a time, and the option changes only
//! while none is (modules of the other mode wait for those to finish). The partitions of one
//! module compiled in parallel all take the whole module's mode, so they never wait for each
//! other.

use super::optimization::Optimization;
use std::sync::{Condvar, Mutex};

/// Whether the loops of modules of this kind get strength reduction.
pub fn wanted(optimization: Optimization) -> bool {
    optimization != Optimization::LoopKernels
}

struct State {
    /// LLVM's current setting (LLVM's default: on).
    on: bool,
    /// Code generations running under it.
    active: usize,
}

static STATE: Mutex<State> = Mutex::new(State { on: true, active: 0 });
static IDLE: Condvar = Condvar::new();

/// Holds LLVM's LSR setting while a module's code is generated.
pub struct Mode(());

/// Waits until LSR can be `on` (or off) for this thread's code generation and sets it. When
/// `HLOJIT_LLVM_OPTIONS` sets `-disable-lsr` itself, that setting stays.
pub fn enter(on: bool) -> Mode {
    let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
    if !set_by_environment() {
        while state.on != on && state.active > 0 {
            state = IDLE.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        if state.on != on {
            super::target::parse_llvm_options(&[if on { "-disable-lsr=false" } else { "-disable-lsr" }]);
            state.on = on;
        }
    }
    state.active += 1;
    Mode(())
}

impl Drop for Mode {
    fn drop(&mut self) {
        let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
        state.active -= 1;
        if state.active == 0 {
            IDLE.notify_all();
        }
    }
}

fn set_by_environment() -> bool {
    static SET: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SET.get_or_init(|| std::env::var(super::target::LLVM_OPTIONS_VARIABLE).is_ok_and(|o| o.contains("disable-lsr")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_kernel_modules_are_generated_without_strength_reduction() {
        assert!(!wanted(Optimization::LoopKernels));
        assert!(wanted(Optimization::Full));
    }

    #[test]
    fn the_setting_changes_only_when_no_generation_runs_under_the_other() {
        let first = enter(true);
        let waiter = std::thread::spawn(|| drop(enter(false)));
        // Whatever the waiter has done meanwhile, it cannot have switched LSR off under us.
        assert!(STATE.lock().unwrap().on, "switched off while a generation with it on runs");
        drop(first);
        waiter.join().expect("the waiter proceeds once the generation with it on is done");
    }
}
