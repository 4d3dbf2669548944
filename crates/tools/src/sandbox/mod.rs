//! The box commands run in: `shell_exec`, deterministic shell steps and command hooks
//! all start their child process with [`SandboxConfig::confine`], which denies by
//! default and grants what a command needs, as bubblewrap's `--unshare-all
//! --new-session --die-with-parent --cap-drop ALL --clearenv` does:
//!
//! - **no terminal**: a new session with no controlling terminal, no `/dev/tty`, and
//!   the `ioctl`s that inject terminal input (`TIOCSTI`, `TIOCLINUX`) refused;
//! - **no capabilities**, root included: always a new user namespace mapping only the
//!   command's own ids, every capability dropped inside it, `no_new_privs`; no device
//!   node can be made (Landlock grants no device creation; a user namespace cannot);
//! - **no network** unless allowed: an empty network namespace, and a seccomp filter
//!   whose socket families are an allow-list behind it;
//! - **no inherited secrets**: a cleared environment plus an allow-list (see
//!   `environment`);
//! - **nothing outlives the call**: the command is the first process of its own PID
//!   namespace, which the kernel empties when it ends, and which dies with the process
//!   the caller holds (see `child`);
//! - **writes ruled after the fact**: in `workspace-write` the command writes an
//!   overlay of the workspace; once it has ended, [`Confinement::apply_changes`]
//!   applies each change the protected-paths policy allows and names each one it
//!   refuses — names that did not exist before included (see `overlay`, `changes`).
//!   Reads reach everything but `/dev` (Landlock) and the program's own files that
//!   nothing may read (the session database, the trust store: `/dev/null` is mounted
//!   over each); writes reach only the overlay and a private temporary directory
//!   (`TMPDIR`).
//!
//! Where the kernel cannot build the box (no Landlock ABI 3, no user namespaces, no
//! overlay in one), [`sandbox_support`] says why and `confine` refuses: only
//! `full-access` runs commands then. Everything that can fail or allocate is prepared
//! in the parent; the hook between fork and exec only makes system calls.
//!
//! ```
//! use oxydra_tools::{SandboxConfig, SandboxMode};
//!
//! let config: SandboxConfig = serde_json::from_value(serde_json::json!({
//!     "mode": "read-only",
//!     "network": true,
//!     "pass_env": ["CARGO_HOME"]
//! })).unwrap();
//! assert_eq!(config.mode, SandboxMode::ReadOnly);
//! assert_eq!(config.pass_env, ["CARGO_HOME"]);
//! assert_eq!(SandboxConfig::default().mode, SandboxMode::WorkspaceWrite);
//! assert_eq!("full-access".parse::<SandboxMode>(), Ok(SandboxMode::FullAccess));
//! ```

mod changes;
mod child;
mod environment;
mod mode;
mod overlay;
mod rules;
mod support;
mod syscall_filter;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use crate::error::ToolError;
use crate::protected::ProtectedPaths;

pub use changes::{RefusedChange, WorkspaceChanges};
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
    /// Names of environment variables passed to commands beside the allow-list
    /// (`PATH`, `HOME`, `LANG`, `LC_*` …). Only a trusted configuration may set them.
    pub pass_env: Vec<String>,
    /// Paths inside the workspace a command may read but never change (absolute, or
    /// relative to the workspace root). Set by the embedding program, never read from
    /// a file.
    #[serde(skip)]
    pub read_only: Vec<PathBuf>,
    /// The protected-paths policy that rules on a command's changes to the workspace.
    /// Set by the embedding program, never read from a file.
    #[serde(skip)]
    pub protected: ProtectedPaths,
}

/// What must live as long as a confined command runs: its private temporary
/// directory and the layers of its view of the workspace, removed when this is
/// dropped. Call [`Confinement::apply_changes`] once the command has ended, or what it
/// wrote to the workspace is dropped with it.
#[derive(Debug)]
pub struct Confinement {
    temp: Option<tempfile::TempDir>,
    layers: Option<overlay::Layers>,
    workspace: PathBuf,
    read_only: Vec<PathBuf>,
    protected: ProtectedPaths,
}

impl Confinement {
    /// The command's private temporary directory (`TMPDIR`), if it has one.
    pub fn temp_dir(&self) -> Option<&Path> {
        self.temp.as_ref().map(tempfile::TempDir::path)
    }

    /// Applies what the command wrote to the workspace, change by change, as the
    /// protected-paths policy allows (see the module docs). Call it only once every
    /// process of the command has ended (the spawned child has been waited for).
    /// Blocking: it walks what the command changed. In `read-only` and `full-access`
    /// mode there is nothing to apply.
    pub fn apply_changes_blocking(self) -> WorkspaceChanges {
        let Some(upper) = self.layers.as_ref().and_then(overlay::Layers::upper) else {
            return WorkspaceChanges::default();
        };
        let policy = changes::Policy {
            protected: &self.protected,
            read_only: &self.read_only,
        };
        changes::apply(&upper, &self.workspace, &policy)
    }

    /// [`Confinement::apply_changes_blocking`] on a blocking thread.
    pub async fn apply_changes(self) -> Result<WorkspaceChanges, ToolError> {
        tokio::task::spawn_blocking(move || self.apply_changes_blocking())
            .await
            .map_err(|err| ToolError::Sandbox {
                action: "applying the command's changes to the workspace",
                reason: err.to_string(),
            })
    }
}

impl SandboxConfig {
    /// What a command may do, in a few words for a tool description.
    pub fn describe(&self) -> String {
        let writes = match self.mode {
            SandboxMode::FullAccess => return "none (full access)".to_owned(),
            SandboxMode::ReadOnly => "writes only to $TMPDIR",
            SandboxMode::WorkspaceWrite => {
                "writes only in the workspace (changes to protected paths such as .git are \
                 not applied) and $TMPDIR"
            }
        };
        let network = if self.network {
            "network allowed"
        } else {
            "no network"
        };
        format!("{writes}; {network}; no terminal; a cleared environment")
    }

    /// Prepares `command` to run confined to `workspace` under this configuration:
    /// clears its environment but for the allow-list, sets `TMPDIR` to a fresh private
    /// directory and installs the hook that builds the box in the child. Keep the
    /// returned [`Confinement`] until the command has ended, then apply its changes.
    /// Set the command's working directory before calling this.
    ///
    /// In `full-access` mode the command is left as it is. Otherwise this fails, with
    /// nothing started, when the kernel cannot build the box ([`sandbox_support`]) or
    /// a path cannot be prepared.
    pub fn confine(
        &self,
        command: &mut std::process::Command,
        workspace: &Path,
    ) -> Result<Confinement, ToolError> {
        let workspace = workspace
            .canonicalize()
            .map_err(|source| sandbox_io("resolving the workspace", source))?;
        let mut confinement = Confinement {
            temp: None,
            layers: None,
            workspace,
            read_only: Vec::new(),
            protected: self.protected.clone(),
        };
        if self.mode == SandboxMode::FullAccess {
            return Ok(confinement);
        }
        if let SandboxSupport::Unavailable { reason } = sandbox_support() {
            REFUSED.fetch_add(1, Ordering::Relaxed);
            return Err(ToolError::SandboxUnavailable {
                reason: reason.clone(),
            });
        }
        let temp = tempfile::Builder::new()
            .prefix("oxydra-sandbox-")
            .tempdir()
            .map_err(|source| sandbox_io("creating the private temporary directory", source))?;
        let cwd = match command.get_current_dir() {
            Some(dir) => dir
                .canonicalize()
                .map_err(|source| sandbox_io("resolving the working directory", source))?,
            None => std::env::current_dir()
                .map_err(|source| sandbox_io("resolving the working directory", source))?,
        };
        let overlay = if self.mode == SandboxMode::WorkspaceWrite {
            let (layers, mount) = overlay::prepare(&confinement.workspace)?;
            confinement.layers = Some(layers);
            confinement.read_only = resolved_inside(&confinement.workspace, &self.read_only);
            Some(mount)
        } else {
            None
        };
        let hidden = self
            .protected
            .unreadable_files()
            .iter()
            .map(|path| c_path(path))
            .collect::<Result<Vec<_>, _>>()?;
        let (uid_map, gid_map) = child::id_maps();
        let plan = child::Plan {
            ruleset: rules::ruleset(temp.path(), self.network)?,
            overlay,
            hidden,
            workspace_access: rights().0,
            proc_access: rights().1,
            cwd: c_path(&cwd)?,
            network: self.network,
            filter: syscall_filter::filter(self.network)?,
            uid_map,
            gid_map,
        };
        environment::restrict(command, &self.pass_env, temp.path());
        child::install(command, plan);
        confinement.temp = Some(temp);
        Ok(confinement)
    }
}

/// How many commands this process refused because the box cannot be built here.
static REFUSED: AtomicUsize = AtomicUsize::new(0);

/// How many commands this process has refused so far because the kernel cannot build
/// the box ([`SandboxSupport::Unavailable`]): a program that runs one task (the CLI's
/// `run`) ends it with an error then, so a refusal is never mistaken for success.
pub fn commands_refused_unconfinable() -> usize {
    REFUSED.load(Ordering::Relaxed)
}

/// The rights of the rules the child adds (the workspace's, the new `/proc`'s) on
/// this kernel, computed once.
fn rights() -> (u64, u64) {
    static RIGHTS: OnceLock<(u64, u64)> = OnceLock::new();
    *RIGHTS.get_or_init(|| (rules::workspace_access(), rules::proc_access()))
}

/// The read-only paths, absolute under `workspace` (resolved where they exist, so a
/// link in the workspace protects its target).
fn resolved_inside(workspace: &Path, read_only: &[PathBuf]) -> Vec<PathBuf> {
    let mut resolved: Vec<PathBuf> = read_only
        .iter()
        .map(|path| {
            let joined = workspace.join(path);
            joined.canonicalize().unwrap_or(joined)
        })
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

    #[test]
    fn read_only_paths_resolve_inside_the_workspace_only() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().canonicalize().unwrap();
        std::fs::create_dir(workspace.join(".git")).unwrap();
        std::os::unix::fs::symlink(workspace.join(".git"), workspace.join("alias")).unwrap();
        let resolved = resolved_inside(
            &workspace,
            &[
                PathBuf::from("alias"),
                workspace.join(".git"),
                PathBuf::from(".envrc"),
                PathBuf::from("/etc"),
                PathBuf::from("."),
            ],
        );
        assert_eq!(resolved, [workspace.join(".envrc"), workspace.join(".git")]);
    }
}
