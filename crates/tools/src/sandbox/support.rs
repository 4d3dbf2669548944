//! Whether this kernel can enforce the sandbox: probed once, reported once.

use std::sync::OnceLock;

use landlock::{ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr};

/// Whether the sandbox can be enforced here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxSupport {
    /// Landlock enforces at least the file system rights of ABI 3 (writes, removal,
    /// creation, renames across directories and truncation).
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
/// adds `truncate`, without which a command could truncate any file it can name.
fn probe() -> SandboxSupport {
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V3))
        .and_then(Ruleset::create);
    match created {
        Ok(_) => SandboxSupport::Available,
        Err(err) => SandboxSupport::Unavailable {
            reason: format!(
                "this kernel does not enforce Landlock ABI 3 (Linux 6.2 or later with \
                 Landlock enabled): {err}"
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_is_stable() {
        assert_eq!(sandbox_support(), &probe());
    }
}
