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

#[cfg(test)]
mod tests {
    use super::*;

    /// The statuses of the lines of `script`, each `CMD; echo $?` in the child.
    fn statuses(plan: child::Plan, workspace: &Path, script: &str) -> Vec<i32> {
        let mut command = std::process::Command::new("sh");
        command.arg("-c").arg(script).current_dir(workspace);
        child::install(&mut command, plan);
        let output = command.output().unwrap();
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(|line| line.parse().unwrap())
            .collect()
    }

    #[test]
    fn without_namespaces_the_workspace_is_granted_around_read_only_paths() {
        if sandbox_support() != &SandboxSupport::Available {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(workspace.join(".git")).unwrap();
        std::fs::write(workspace.join(".git/config"), "[core]\n").unwrap();
        std::fs::create_dir(workspace.join("src")).unwrap();
        std::fs::write(workspace.join("file.txt"), "f\n").unwrap();
        let temp = tempfile::tempdir().unwrap();
        let read_only = protected_inside(&workspace, &[PathBuf::from(".git")]);
        assert_eq!(read_only, [workspace.join(".git")]);
        let paths = rules::RulePaths {
            workspace: Some(&workspace),
            temp: temp.path(),
            read_only: &read_only,
        };
        // The plan the child falls back to when it cannot enter a namespace.
        let plan = child::Plan {
            primary: rules::ruleset(&paths, false, rules::Layout::AroundReadOnly).unwrap(),
            fallback: None,
            mounts: Vec::new(),
            filter: None,
        };
        let script = "echo x >> .git/config 2>/dev/null; echo $?\n\
                      echo y > src/f; echo $?\n\
                      echo z >> file.txt; echo $?\n\
                      echo n > new.txt 2>/dev/null; echo $?\n";
        let codes = statuses(plan, &workspace, script);
        assert_eq!(codes.len(), 4, "{codes:?}");
        assert_ne!(codes[0], 0, "wrote .git/config");
        assert_eq!(codes[1..3], [0, 0], "{codes:?}");
        // The cost of this layout: no new entries at the root that holds `.git`.
        assert_ne!(codes[3], 0, "{codes:?}");
        assert_eq!(
            std::fs::read_to_string(workspace.join(".git/config")).unwrap(),
            "[core]\n"
        );
        assert_eq!(
            std::fs::read_to_string(workspace.join("src/f")).unwrap(),
            "y\n"
        );
    }

    #[test]
    fn read_only_paths_outside_the_workspace_or_missing_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().canonicalize().unwrap();
        std::fs::create_dir(workspace.join(".git")).unwrap();
        std::os::unix::fs::symlink(workspace.join(".git"), workspace.join("alias")).unwrap();
        let resolved = protected_inside(
            &workspace,
            &[
                PathBuf::from("alias"),
                workspace.join(".git"),
                PathBuf::from(".envrc"),
                PathBuf::from("/etc"),
                PathBuf::from("."),
            ],
        );
        assert_eq!(resolved, [workspace.join(".git")]);
    }
}
