//! The seccomp filter every confined command runs under. It allows what it does not
//! name and refuses, with `EPERM`/`EACCES`, the calls that would reach past the box:
//!
//! - `socket` for any address family outside an allow-list: with the network off only
//!   `socketpair` is left (no family at all: not even `AF_UNIX`, whose named sockets,
//!   such as a container engine's, live in the file system and are not behind the
//!   network namespace); with the network on `AF_UNIX`, `AF_INET`, `AF_INET6` and
//!   `AF_NETLINK`. So `AF_PACKET`, raw `AF_INET` on another family, `AF_VSOCK`,
//!   `AF_BLUETOOTH` … are refused whatever the network setting.
//! - `ioctl` requests that push input into a terminal (`TIOCSTI`) or act on the
//!   console (`TIOCLINUX`): a command could otherwise type into the person's shell.
//! - `io_uring_setup` (its operations would bypass this filter);
//! - the kernel keyring calls (`keyctl`, `add_key`, `request_key`): keyrings are not
//!   namespaced and may hold the user's credentials.
//!
//! A process of another architecture (e.g. a 32-bit binary) is killed rather than let
//! through.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::error::ToolError;

/// The socket families a command may create, by network setting.
fn allowed_families(network: bool) -> &'static [i32] {
    if network {
        &[
            libc::AF_UNIX,
            libc::AF_INET,
            libc::AF_INET6,
            libc::AF_NETLINK,
        ]
    } else {
        &[]
    }
}

/// The terminal `ioctl` requests no command may make. (Their type differs across
/// targets, hence the casts.)
#[allow(clippy::unnecessary_cast)]
const TERMINAL_INJECTION: [u64; 2] = [libc::TIOCSTI as u64, libc::TIOCLINUX as u64];

/// The compiled filter, to be applied in the child.
pub(super) fn filter(network: bool) -> Result<BpfProgram, ToolError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(seccomp_error)?;
    let allowed = allowed_families(network);
    // `socket` is refused unless its family is allowed: one rule per family that is
    // *not* allowed cannot be written (the set is open), so the condition is "not equal
    // to each allowed family", all of them in one rule (conditions of a rule are ANDed).
    let mut not_allowed = Vec::with_capacity(allowed.len());
    for family in allowed {
        not_allowed.push(condition(
            0,
            SeccompCmpOp::Ne,
            family.unsigned_abs().into(),
        )?);
    }
    let socket_rule = if not_allowed.is_empty() {
        // No family is allowed: every call matches.
        Vec::new()
    } else {
        vec![SeccompRule::new(not_allowed).map_err(seccomp_error)?]
    };
    let mut ioctl_rules = Vec::with_capacity(TERMINAL_INJECTION.len());
    for request in TERMINAL_INJECTION {
        ioctl_rules.push(
            SeccompRule::new(vec![condition(1, SeccompCmpOp::Eq, request)?])
                .map_err(seccomp_error)?,
        );
    }
    let rules = BTreeMap::from([
        (libc::SYS_socket, socket_rule),
        (libc::SYS_ioctl, ioctl_rules),
        // No condition: every call matches.
        (libc::SYS_io_uring_setup, Vec::new()),
        (libc::SYS_keyctl, Vec::new()),
        (libc::SYS_add_key, Vec::new()),
        (libc::SYS_request_key, Vec::new()),
    ]);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM.unsigned_abs()),
        arch,
    )
    .map_err(seccomp_error)?;
    BpfProgram::try_from(filter).map_err(seccomp_error)
}

/// A condition on argument `index`, compared as the kernel reads it: 32 bits (the
/// family is an `int`; `ioctl` truncates its request to 32 bits).
fn condition(index: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, ToolError> {
    SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value).map_err(seccomp_error)
}

fn seccomp_error(err: impl std::fmt::Display) -> ToolError {
    ToolError::Sandbox {
        action: "building the system call filter",
        reason: err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_filters_compile() {
        assert!(!filter(false).unwrap().is_empty());
        assert!(!filter(true).unwrap().is_empty());
    }

    #[test]
    fn the_network_adds_the_internet_families_only() {
        assert!(allowed_families(false).is_empty());
        assert!(!allowed_families(true).contains(&libc::AF_PACKET));
        assert!(allowed_families(true).contains(&libc::AF_INET6));
    }
}
