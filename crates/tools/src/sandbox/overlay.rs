//! The layers of a command's view of the workspace.
//!
//! In `workspace-write` mode the command does not write the workspace itself: it
//! sees an overlay whose lower layer is the workspace and whose upper layer is a
//! private directory, so everything it creates, changes, renames or removes lands in
//! that upper layer. When the command has ended, [`super::changes`] applies each
//! change to the workspace under the protected-paths policy. That policy therefore
//! rules on what a command *did*, including names that did not exist when it started
//! (a `.git` made by `git init` in a sub-folder, a bare repository), with no walk of
//! the workspace beforehand and no cap that could give up.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::child::OverlayMount;
use super::{c_path, sandbox_io};
use crate::error::ToolError;

/// The private directories of one command's overlay, removed when dropped.
#[derive(Debug)]
pub(super) struct Layers {
    dir: Option<tempfile::TempDir>,
}

impl Layers {
    /// The upper layer: what the command changed.
    pub fn upper(&self) -> Option<PathBuf> {
        self.dir.as_ref().map(|dir| dir.path().join("upper"))
    }
}

impl Drop for Layers {
    fn drop(&mut self) {
        let Some(dir) = self.dir.take() else {
            return;
        };
        // overlayfs leaves `work/work` with mode 0, which a user without
        // CAP_DAC_OVERRIDE cannot empty.
        let work = dir.path().join("work");
        if let Ok(entries) = std::fs::read_dir(&work) {
            for entry in entries.flatten() {
                let _ = std::fs::set_permissions(
                    entry.path(),
                    std::os::unix::fs::PermissionsExt::from_mode(0o700),
                );
            }
        }
        let _ = dir.close();
    }
}

/// Creates the layers for `workspace` (absolute, canonical) and the mount the child
/// makes of them.
pub(super) fn prepare(workspace: &Path) -> Result<(Layers, OverlayMount), ToolError> {
    let dir = tempfile::Builder::new()
        .prefix("oxydra-overlay-")
        .tempdir()
        .map_err(|source| sandbox_io("creating the workspace overlay's layers", source))?;
    let upper = dir.path().join("upper");
    let work = dir.path().join("work");
    for layer in [&upper, &work] {
        std::fs::create_dir(layer)
            .map_err(|source| sandbox_io("creating the workspace overlay's layers", source))?;
    }
    let options = mount_options(workspace, &upper, &work)?;
    let mount = OverlayMount {
        target: c_path(workspace)?,
        options,
    };
    Ok((Layers { dir: Some(dir) }, mount))
}

/// `lowerdir=L,upperdir=U,workdir=W,userxattr`, each path with `\`, `,` and `:`
/// escaped by a backslash as overlayfs reads them. (Paths, not descriptors: a
/// descriptor opened before the child entered its mount namespace names a mount of
/// the old namespace, which overlayfs refuses as a layer.)
pub(super) fn mount_options(lower: &Path, upper: &Path, work: &Path) -> Result<CString, ToolError> {
    let mut options = b"lowerdir=".to_vec();
    escape_into(&mut options, lower);
    options.extend_from_slice(b",upperdir=");
    escape_into(&mut options, upper);
    options.extend_from_slice(b",workdir=");
    escape_into(&mut options, work);
    options.extend_from_slice(b",userxattr");
    CString::new(options).map_err(|_| ToolError::Sandbox {
        action: "preparing the workspace overlay",
        reason: "a path contains a NUL byte".to_owned(),
    })
}

fn escape_into(options: &mut Vec<u8>, path: &Path) {
    for &byte in path.as_os_str().as_bytes() {
        if matches!(byte, b'\\' | b',' | b':') {
            options.push(b'\\');
        }
        options.push(byte);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_in_paths_are_escaped() {
        let options =
            mount_options(Path::new("/w,s:x\\y"), Path::new("/u"), Path::new("/w")).unwrap();
        assert_eq!(
            options.to_bytes(),
            b"lowerdir=/w\\,s\\:x\\\\y,upperdir=/u,workdir=/w,userxattr"
        );
    }
}
