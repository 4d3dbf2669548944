//! The coordinator of Oxydra.
//!
//! `oxydra-coordinator` owns agent blueprints (`agent` and `deterministic`) with their
//! parameter schemas, validation of run parameters with structured errors an AI can
//! correct itself from, the run queue and its workers, and the HTTP API that lists
//! agents and starts and inspects runs.
