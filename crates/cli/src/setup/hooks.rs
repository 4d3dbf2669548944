//! The `[[hooks]]` of the configuration as hooks of the runtime: the executor's
//! command hooks ([`oxydra::executor::CommandHooks`]) in the run's workspace and
//! sandbox, started in the process's private launch directory, relative words of their
//! commands found as the files a configuration runs are found for its trust
//! ([`crate::config::lookup_dirs`]). An untrusted file's `[[hooks]]` never get here:
//! the layering withholds them.

use std::sync::Arc;

use oxydra::executor::{CommandHooks, Hook};
use oxydra::tools::SandboxConfig;

use crate::config::{Merged, lookup_dirs};

/// The configured hooks of a run (or of every run of a service), in order.
pub fn from_config<P>(effective: &Merged<P>) -> Vec<Arc<dyn Hook>> {
    if effective.hooks.is_empty() {
        return Vec::new();
    }
    // The run's sandbox, whose protected-paths policy rules on what a hook changes in
    // the workspace.
    let sandbox = SandboxConfig {
        protected: effective.tools.protected.clone(),
        ..effective.tools.sandbox.clone()
    };
    CommandHooks::new(effective.workspace.clone(), sandbox)
        .anchored_in(lookup_dirs(effective.config_file.as_deref()))
        .hooks(effective.hooks.iter().cloned())
}
