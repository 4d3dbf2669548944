//! The seccomp filter that keeps a command off the network: creating an IPv4 or IPv6
//! socket (TCP, UDP or raw) fails with `EACCES`, and so does `io_uring_setup` (whose
//! operations would bypass the filter). UNIX sockets keep working. A process of
//! another architecture (e.g. a 32-bit binary) is killed rather than let through.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::error::ToolError;

/// The compiled filter, to be applied in the child.
pub(super) fn socket_filter() -> Result<BpfProgram, ToolError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(seccomp_error)?;
    let family = |domain: i32| -> Result<SeccompRule, ToolError> {
        let condition = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            u64::from(domain.unsigned_abs()),
        )
        .map_err(seccomp_error)?;
        SeccompRule::new(vec![condition]).map_err(seccomp_error)
    };
    let rules = BTreeMap::from([
        (
            libc::SYS_socket,
            vec![family(libc::AF_INET)?, family(libc::AF_INET6)?],
        ),
        // No condition: every call matches.
        (libc::SYS_io_uring_setup, Vec::new()),
    ]);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES.unsigned_abs()),
        arch,
    )
    .map_err(seccomp_error)?;
    BpfProgram::try_from(filter).map_err(seccomp_error)
}

fn seccomp_error(err: impl std::fmt::Display) -> ToolError {
    ToolError::Sandbox {
        action: "building the network filter",
        reason: err.to_string(),
    }
}
