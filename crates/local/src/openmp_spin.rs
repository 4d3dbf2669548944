//! How long llama.cpp's threads spin at a barrier before they sleep.
//!
//! llama.cpp's CPU backend runs each token's graph on OpenMP threads that meet at a
//! barrier dozens of times per token. libgomp, left to its defaults, spins some
//! 300,000 rounds at every barrier before it sleeps. On an idle machine that is
//! fine; when another process holds a core, a thread spinning for a partner that is
//! off the CPU burns its whole time slice, and decoding drops tenfold (on the 2-core
//! bench machine, 116 → 12 tokens/s with one busy core). A spin count of 1,000
//! (what libgomp itself drops to under `OMP_WAIT_POLICY=active` when it has more
//! threads than CPUs) decodes as fast as the default when the machine is idle and
//! three times faster when it is not
//! (docs/performance.md, "The embedded local model").
//!
//! libgomp reads its settings from the environment once, while the program is
//! loaded, so the choice has to be in the environment before then. On Linux with
//! glibc, libgomp is linked statically (the `static-openmp` feature of
//! `llama-cpp-2`) and an ELF constructor with an early priority sets
//! `GOMP_SPINCOUNT=1000` before libgomp's own constructor reads it — unless
//! `GOMP_SPINCOUNT` or `OMP_WAIT_POLICY` is already set, in which case the user's
//! choice stands. Programs this process starts inherit the variable.

use std::sync::atomic::{AtomicBool, Ordering};

/// The environment variable libgomp reads its barrier spin count from.
pub const SPIN_COUNT_VAR: &str = "GOMP_SPINCOUNT";

/// The OpenMP variable that, when set, also leaves the spin count to the user.
pub const WAIT_POLICY_VAR: &str = "OMP_WAIT_POLICY";

/// The spin count this crate gives libgomp when the environment does not choose.
pub const DEFAULT_SPIN_COUNT: &str = "1000";

static APPLIED: AtomicBool = AtomicBool::new(false);

/// Whether this process started with [`DEFAULT_SPIN_COUNT`] set by this crate
/// (`false` when the environment chose, or on a platform without the constructor).
pub fn short_spin_applied() -> bool {
    APPLIED.load(Ordering::Relaxed)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
mod constructor {
    use super::{APPLIED, DEFAULT_SPIN_COUNT, Ordering, SPIN_COUNT_VAR, WAIT_POLICY_VAR};

    /// Runs before the constructors without a priority, libgomp's among them: the
    /// linker orders `.init_array.NNNNN` sections by priority ahead of plain
    /// `.init_array` entries.
    #[used]
    #[unsafe(link_section = ".init_array.00100")]
    static SHORT_SPIN: extern "C" fn() = short_spin;

    extern "C" fn short_spin() {
        let chosen = std::env::var_os(SPIN_COUNT_VAR).is_some()
            || std::env::var_os(WAIT_POLICY_VAR).is_some();
        if chosen {
            return;
        }
        // SAFETY: constructors run on the loading thread before `main`, when no
        // other thread exists to read the environment concurrently.
        unsafe { std::env::set_var(SPIN_COUNT_VAR, DEFAULT_SPIN_COUNT) };
        APPLIED.store(true, Ordering::Relaxed);
    }
}
