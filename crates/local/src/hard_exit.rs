//! Ending the process without running its exit handlers, for the one case where a
//! llama.cpp thread may still be computing: `exit` runs the C++ static destructors
//! of llama.cpp and ggml, and destroying them under a running decode crashes the
//! process (SIGSEGV). `_exit` runs none, so there is nothing left to race; the
//! kernel frees the memory and closes the files. Use it only when [`stop_all`]
//! could not stop the models in time, after flushing what must be written.
//!
//! [`stop_all`]: crate::stop_all

#![allow(unsafe_code)]

// SAFETY: `_exit(2)` is async-signal-safe, takes any int and never returns; it
// touches no Rust state, so calling it is safe in any context.
unsafe extern "C" {
    safe fn _exit(status: std::ffi::c_int) -> !;
}

/// Ends the process with `code` at once: no exit handlers, no static destructors,
/// no flushing of buffered output (flush stdout and stderr first).
pub fn exit_skipping_destructors(code: i32) -> ! {
    _exit(code)
}
