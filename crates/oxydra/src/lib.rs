//! Oxydra: a Rust runtime for tool-using LLM agents.
//!
//! This facade re-exports the layer crates, one cargo feature per layer, so an
//! application can depend on `oxydra` alone and switch off what it does not use:
//!
//! | module | crate | feature |
//! |---|---|---|
//! | [`types`] | `oxydra-types` | always |
//! | `provider` | `oxydra-provider` | `provider` |
//! | `tools` | `oxydra-tools` | `tools` |
//! | `executor` | `oxydra-executor` | `executor` |
//! | `memory` | `oxydra-memory` | `memory` |
//! | `scrubbing` | `oxydra-scrubbing` | `scrubbing` |
//! | `runtime` | `oxydra-runtime` | `runtime` |
//! | `coordinator` | `oxydra-coordinator` | `coordinator` |

pub use oxydra_types as types;

#[cfg(feature = "coordinator")]
pub use oxydra_coordinator as coordinator;
#[cfg(feature = "executor")]
pub use oxydra_executor as executor;
#[cfg(feature = "memory")]
pub use oxydra_memory as memory;
#[cfg(feature = "provider")]
pub use oxydra_provider as provider;
#[cfg(feature = "runtime")]
pub use oxydra_runtime as runtime;
#[cfg(feature = "scrubbing")]
pub use oxydra_scrubbing as scrubbing;
#[cfg(feature = "tools")]
pub use oxydra_tools as tools;
