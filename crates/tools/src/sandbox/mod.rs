//! The OS sandbox commands run in: `shell_exec`, deterministic shell steps and command
//! hooks all confine their child process with [`SandboxConfig::confine`].
//!
//! On Linux a confined command runs under Landlock (the `landlock` crate): it may read
//! and execute anything, but write only inside the workspace (in `workspace-write`
//! mode) and its own private temporary directory (`TMPDIR`). Paths listed in
//! [`SandboxConfig::read_only`] stay read-only inside the writable workspace: the
//! child enters a new user and mount namespace and bind-mounts each of them read-only
//! onto itself before Landlock applies; where user namespaces are unavailable, the
//! workspace is granted piece by piece around them instead (see `rules`). With the
//! network off, Landlock refuses every TCP bind and connect (ABI 4) and a seccomp
//! filter refuses to create IPv4 and IPv6 sockets at all (so UDP and raw sockets too)
//! and io_uring. Since ABI 6 the command also cannot signal processes outside the
//! sandbox nor reach their abstract UNIX sockets.
//!
//! Everything that can fail (opening the rule paths, building the filter, the
//! namespace's id maps) is prepared in the parent; the `pre_exec` hook between fork
//! and exec only makes system calls.
//!
//! ```
//! use oxydra_tools::{SandboxConfig, SandboxMode};
//!
//! let config: SandboxConfig = serde_json::from_value(serde_json::json!({
//!     "mode": "read-only",
//!     "network": true
//! })).unwrap();
//! assert_eq!(config.mode, SandboxMode::ReadOnly);
//! assert_eq!(SandboxConfig::default().mode, SandboxMode::WorkspaceWrite);
//! assert_eq!("full-access".parse::<SandboxMode>(), Ok(SandboxMode::FullAccess));
//! ```

mod child;
mod mode;
mod network;
mod rules;
mod support;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::ToolError;

pub use mode::SandboxMode;
pub use support::{SandboxSupport, sandbox_support};

/// How commands are confined (the `[sandbox]` table of the CLI's config).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// What a command may write (default `workspace-write`).
    pub mode: SandboxMode,
    /// Whether a command may use the network (default: no).
    pub network: bool,
    /// Paths inside the workspace a command may read but never change (absolute, or
    /// relative to the workspace root), e.g. `.git`. Set by the embedding program from
    /// its protected-paths policy, never read from a file.
    #[serde(skip)]
    pub read_only: Vec<PathBuf>,
}

/// What must live as long as a confined command runs: its private temporary
/// directory, removed when this is dropped.
#[derive(Debug)]
pub struct Confinement {
    temp: Option<tempfile::TempDir>,
}

impl Confinement {
    /// The command's private temporary directory (`TMPDIR`), if it has one.
    pub fn temp_dir(&self) -> Option<&Path> {
        self.temp.as_ref().map(tempfile::TempDir::path)
    }
}

impl SandboxConfig {
    /// What a command may do, in a few words for a tool description.
    pub fn describe(&self) -> String {
        let writes = match self.mode {
            SandboxMode::FullAccess => return "none (full access)".to_owned(),
            SandboxMode::ReadOnly => "writes only to $TMPDIR",
            SandboxMode::WorkspaceWrite if self.read_only.is_empty() => {
                "writes only in the workspace and $TMPDIR"
            }
            SandboxMode::WorkspaceWrite => {
                "writes only in the workspace (not its protected paths such as .git) and $TMPDIR"
            }
        };
        let network = if self.network {
            "network allowed"
        } else {
            "no network"
        };
        format!("{writes}; {network}")
    }

    /// Prepares `command` to run confined to `workspace` under this configuration:
    /// sets `TMPDIR` to a fresh private directory and installs the hook that applies
    /// the sandbox in the child. Keep the returned [`Confinement`] until the command
    /// has ended.
    ///
    /// In `full-access` mode the command is left as it is. Otherwise this fails, with
    /// nothing started, when the kernel cannot enforce the sandbox
    /// ([`sandbox_support`]) or a path cannot be prepared.
    pub fn confine(
        &self,
        command: &mut std::process::Command,
        workspace: &Path,
    ) -> Result<Confinement, ToolError> {
        if self.mode == SandboxMode::FullAccess {
            return Ok(Confinement { temp: None });
        }
        if let SandboxSupport::Unavailable { reason } = sandbox_support() {
            return Err(ToolError::SandboxUnavailable {
                reason: reason.clone(),
            });
        }
        let temp = tempfile::Builder::new()
            .prefix("oxydra-sandbox-")
            .tempdir()
            .map_err(|source| sandbox_io("creating the private temporary directory", source))?;
        let workspace = workspace
            .canonicalize()
            .map_err(|source| sandbox_io("resolving the workspace", source))?;
        let writable_workspace = self.mode == SandboxMode::WorkspaceWrite;
        let read_only = if writable_workspace {
            protected_inside(&workspace, &self.read_only)
        } else {
            Vec::new()
        };
        let paths = rules::RulePaths {
            workspace: writable_workspace.then_some(workspace.as_path()),
            temp: temp.path(),
            read_only: &read_only,
        };
        let primary = rules::ruleset(&paths, self.network, rules::Layout::Whole)?;
        let (fallback, mounts) = if read_only.is_empty() {
            (None, Vec::new())
        } else {
            let fallback = rules::ruleset(&paths, self.network, rules::Layout::AroundReadOnly)?;
            (Some(fallback), child::read_only_mounts(&read_only)?)
        };
        let filter = if self.network {
            None
        } else {
            Some(network::socket_filter()?)
        };
        command.env("TMPDIR", temp.path());
        child::install(
            command,
            child::Plan {
                primary,
                fallback,
                mounts,
                filter,
            },
        );
        Ok(Confinement { temp: Some(temp) })
    }
}

/// The read-only paths that exist inside `workspace`, resolved (a link to a path in
/// the workspace protects its target). Paths that do not exist, or lead outside the
/// workspace (writable there only if Landlock allows it anyway), are left out.
fn protected_inside(workspace: &Path, read_only: &[PathBuf]) -> Vec<PathBuf> {
    let mut resolved: Vec<PathBuf> = read_only
        .iter()
        .filter_map(|path| workspace.join(path).canonicalize().ok())
        .filter(|path| path.starts_with(workspace) && path != workspace)
        .collect();
    resolved.sort();
    resolved.dedup();
    resolved
}

fn sandbox_io(action: &'static str, source: std::io::Error) -> ToolError {
    ToolError::Sandbox {
        action,
        reason: source.to_string(),
    }
}

/// `path` as a C string for the child's system calls.
fn c_path(path: &Path) -> Result<CString, ToolError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| ToolError::Sandbox {
        action: "preparing a path",
        reason: format!("`{}` contains a NUL byte", path.display()),
    })
}
