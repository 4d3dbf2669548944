//! Whether this kernel can enforce the sandbox: probed once, reported once.

use std::sync::OnceLock;

use landlock::{ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr};

/// Whether the sandbox can be enforced here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxSupport {
    /// Landlock enforces at least the file system rights of ABI 3 (writes, removal,
    /// creation, renames across directories and truncation), and a process may enter
    /// a new user namespace and mount an overlay in it.
    Available,
    /// It cannot: confined commands are refused (only `full-access` runs them).
    Unavailable {
        /// Why, for the person running Oxydra.
        reason: String,
    },
}

/// This kernel's support for the sandbox, probed on first use. When the sandbox is
/// unavailable that is logged (a `tracing` warning) once; the CLI prints it once too.
pub fn sandbox_support() -> &'static SandboxSupport {
    static SUPPORT: OnceLock<SandboxSupport> = OnceLock::new();
    SUPPORT.get_or_init(|| {
        let support = probe();
        if let SandboxSupport::Unavailable { reason } = &support {
            tracing::warn!(
                %reason,
                "the command sandbox is unavailable: privileged tools run only in full-access mode"
            );
        }
        support
    })
}

/// The smallest ABI whose file system rights the sandbox needs: ABI 3 (Linux 6.2)
/// adds `truncate`, without which a command could truncate any file it can name. Then
/// the namespaces and the overlay, tried in a forked probe.
fn probe() -> SandboxSupport {
    if let Some(reason) = probe_landlock() {
        return SandboxSupport::Unavailable { reason };
    }
    match probe_namespaces() {
        Ok(()) => SandboxSupport::Available,
        Err(reason) => SandboxSupport::Unavailable { reason },
    }
}

/// Whether a process can enter the box's namespaces and mount an overlay there.
fn probe_namespaces() -> Result<(), String> {
    let dir = tempfile::Builder::new()
        .prefix("oxydra-sandbox-probe-")
        .tempdir()
        .map_err(|err| format!("the sandbox probe could not create a directory: {err}"))?;
    let [lower, upper, work, target] =
        ["lower", "upper", "work", "target"].map(|name| dir.path().join(name));
    for layer in [&lower, &upper, &work, &target] {
        std::fs::create_dir(layer)
            .map_err(|err| format!("the sandbox probe could not create a directory: {err}"))?;
    }
    let options =
        super::overlay::mount_options(&lower, &upper, &work).map_err(|err| err.to_string())?;
    let target = super::c_path(&target).map_err(|err| err.to_string())?;
    let failed = super::child::probe(&options, &target);
    // The overlay's work directory is left with mode 0 inside `work`.
    if let Ok(entries) = std::fs::read_dir(&work) {
        for entry in entries.flatten() {
            let _ = std::fs::set_permissions(
                entry.path(),
                std::os::unix::fs::PermissionsExt::from_mode(0o700),
            );
        }
    }
    match failed {
        None => Ok(()),
        Some(reason) => Err(reason.to_owned()),
    }
}

fn probe_landlock() -> Option<String> {
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V3))
        .and_then(Ruleset::create);
    created.err().map(|err| {
        format!(
            "this kernel does not enforce Landlock ABI 3 (Linux 6.2 or later with \
             Landlock enabled): {err}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_is_stable() {
        assert_eq!(sandbox_support(), &probe());
    }
}
