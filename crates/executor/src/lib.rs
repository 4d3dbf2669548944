//! The tool executor of Oxydra.
//!
//! `oxydra-executor` owns `ToolExecutor`: it validates a call's raw arguments against
//! the tool's JSON Schema (with validators compiled once), enforces the tool rules
//! (max calls, ordering, exclusive groups, start and exit constraints, continue/exit
//! loop, cooldown), dedupes repeated calls, asks a `PermissionBroker` for consent,
//! applies per-call timeouts and runs read-only calls in parallel while side-effecting
//! and privileged calls run alone, returning results in request order.
