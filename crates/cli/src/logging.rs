//! Logs on stderr: `RUST_LOG` when set, else warnings (`-v` debug, `-vv` trace for Oxydra).

use tracing_subscriber::EnvFilter;

/// Installs the stderr subscriber.
pub fn init(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "warn,oxydra=debug",
        _ => "info,oxydra=trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(verbose > 0)
        .try_init();
}
