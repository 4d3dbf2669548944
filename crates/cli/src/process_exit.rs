//! Ending the process without racing the local model's threads.
//!
//! llama.cpp computes on threads of its own. If the process ran its exit (the C++
//! static destructors of llama.cpp and ggml) while one of them was still inside a
//! decode, it died with SIGSEGV. So every exit of `oxydra` goes through here:
//!
//! 1. [`oxydra::local::stop_all`] stops each loaded model's decoding at its next
//!    token or prompt chunk (milliseconds; a few hundred under load while a prompt
//!    is read) and joins its thread, waiting at most
//!    [`LOCAL_STOP_GRACE`];
//! 2. then the process exits as usual (`exit`, destructors and all);
//! 3. only if a thread is still inside llama.cpp after the grace (a long prompt batch
//!    of a large model), stdout and stderr are flushed and the process ends with
//!    `_exit` ([`oxydra::local::exit_skipping_destructors`]), which runs no
//!    destructors, so there is nothing left to race.
//!
//! Joining is the sound default: the model is freed in order and nothing is cut
//! off. `_exit` is only the bounded fallback, so that an exit never hangs.

use std::io::Write;
use std::time::Duration;

/// How long an exit waits for the local model's threads to stop.
#[cfg_attr(not(feature = "local"), allow(dead_code))]
pub const LOCAL_STOP_GRACE: Duration = Duration::from_secs(5);

/// Stops the local models (if any were loaded) before the process exits; `false`
/// when one is still computing after [`LOCAL_STOP_GRACE`].
pub fn stop_local_models() -> bool {
    #[cfg(feature = "local")]
    {
        oxydra::local::stop_all(LOCAL_STOP_GRACE)
    }
    #[cfg(not(feature = "local"))]
    {
        true
    }
}

/// Prepares the normal end of `main` (returning `code`): stops the local models,
/// and if one would not stop, ends the process now without destructors.
pub fn before_exit(code: u8) {
    oxydra::executor::remove_private_launch_dir();
    if !stop_local_models() {
        skip_destructors(code);
    }
}

/// Ends the process with `code` at once (a second Ctrl-C, SIGTERM), without
/// racing the local model's threads.
pub fn exit(code: u8) -> ! {
    oxydra::executor::remove_private_launch_dir();
    if stop_local_models() {
        std::process::exit(i32::from(code));
    }
    skip_destructors(code)
}

fn skip_destructors(code: u8) -> ! {
    tracing::warn!("the local model did not stop in time: exiting without cleanup");
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    #[cfg(feature = "local")]
    {
        oxydra::local::exit_skipping_destructors(i32::from(code))
    }
    #[cfg(not(feature = "local"))]
    {
        std::process::exit(i32::from(code))
    }
}
