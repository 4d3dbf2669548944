//! The `oxydra` command-line program.
//!
//! It runs agents (`oxydra run`, `oxydra chat`), lists stored sessions and agent
//! blueprints, serves the coordinator HTTP API and scrubs secrets from files.

fn main() {
    println!("oxydra {}", env!("CARGO_PKG_VERSION"));
}
