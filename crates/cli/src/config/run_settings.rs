//! `[runtime]` with the flags over it: the runtime's limits (`--max-turns`,
//! `--max-cost`, `--turn-timeout`), who answers consent (`--approve`, and whether anyone
//! can be asked), the tool choice, and the workspace (`--workspace`).

use std::path::PathBuf;

use oxydra::runtime::RuntimeLimits;
use oxydra_config::RuntimeSection;

use super::ApproveMode;
use super::database::absolute;
use crate::args::RunOptions;
use crate::error::CliError;

/// Who answers the consent requests that `approve = "ask"` leaves open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Asked {
    /// A person at the terminal, when stdin is one (the flag); else no one, and `ask`
    /// (or unset) becomes `never`.
    Terminal(bool),
    /// A person later, through the API (`serve`, `mcp serve`): `ask`, also when unset,
    /// makes the run wait for a decision (DESIGN.md §3.8).
    Later,
}

/// The file's `[runtime]` with the flags over it and `approve` decided.
pub(super) fn runtime(
    section: &RuntimeSection,
    flags: &RunOptions,
    asked: Asked,
) -> Result<RuntimeSection, CliError> {
    let mut runtime = section.clone();
    apply_limit_flags(&mut runtime.limits, flags)?;
    let approve = match (flags.approve.or(runtime.approve), asked) {
        (Some(ApproveMode::Ask) | None, Asked::Terminal(false)) => ApproveMode::Deny,
        (Some(mode), _) => mode,
        (None, Asked::Terminal(true) | Asked::Later) => ApproveMode::Ask,
    };
    runtime.approve = Some(approve);
    if let Some(choice) = &flags.tool_choice {
        runtime.tool_choice = Some(choice.clone());
    }
    if flags.no_project_instructions {
        runtime.project_instructions = Some(false);
    }
    Ok(runtime)
}

/// The root of the file tools: `--workspace` (a directory), else the current one.
pub(super) fn workspace(flags: &RunOptions) -> Result<PathBuf, CliError> {
    let workspace = match &flags.workspace {
        Some(dir) if !dir.is_dir() => {
            return Err(CliError::Flag {
                flag: "--workspace",
                message: format!("{} is not a directory", dir.display()),
            });
        }
        Some(dir) => dir.clone(),
        None => PathBuf::from("."),
    };
    Ok(workspace
        .canonicalize()
        .unwrap_or_else(|_| absolute(&workspace)))
}

/// The shortest `--turn-timeout`: a millisecond.
const MIN_TURN_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(1);

/// The flags `--max-turns`, `--max-cost` and `--turn-timeout` (seconds, a fraction
/// allowed) over the file's limits.
fn apply_limit_flags(limits: &mut RuntimeLimits, flags: &RunOptions) -> Result<(), CliError> {
    if let Some(turns) = flags.max_turns {
        if turns == 0 {
            return Err(CliError::Flag {
                flag: "--max-turns",
                message: "expected at least 1, found 0".into(),
            });
        }
        limits.max_turns = turns;
    }
    if let Some(cost) = flags.max_cost {
        if !(cost.is_finite() && cost > 0.0) {
            return Err(CliError::Flag {
                flag: "--max-cost",
                message: format!("expected a positive number, found {cost}"),
            });
        }
        limits.max_cost = Some(cost);
    }
    if let Some(secs) = flags.turn_timeout {
        limits.turn_timeout = std::time::Duration::try_from_secs_f64(secs)
            .ok()
            .filter(|timeout| *timeout >= MIN_TURN_TIMEOUT)
            .ok_or_else(|| CliError::Flag {
                flag: "--turn-timeout",
                message: format!("expected at least 0.001 seconds, found {secs}"),
            })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn timeout(secs: f64) -> Result<Duration, CliError> {
        let mut limits = RuntimeLimits::default();
        let flags = RunOptions {
            turn_timeout: Some(secs),
            ..RunOptions::default()
        };
        apply_limit_flags(&mut limits, &flags).map(|()| limits.turn_timeout)
    }

    #[test]
    fn the_turn_timeout_takes_fractions_of_a_second_and_refuses_nonsense() {
        assert_eq!(timeout(0.3).unwrap(), Duration::from_millis(300));
        assert_eq!(timeout(90.0).unwrap(), Duration::from_secs(90));
        for bad in [0.0, 0.0004, -1.0, f64::NAN, f64::INFINITY, 1e300] {
            let err = timeout(bad).unwrap_err().to_string();
            assert!(err.contains("--turn-timeout"), "{bad}: {err}");
        }
    }
}
