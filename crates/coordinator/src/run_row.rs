//! How runs and blueprints are stored, written once for every [`RunStore`](crate::RunStore)
//! backend: the columns a backend selects ([`RUN_COLUMNS`]), the rows it reads back
//! ([`RunRow`], [`BlueprintRow`], [`ClaimedRow`]) decoded into the coordinator's types,
//! and the text it writes for parameters, results and errors (scrubbed first).
//!
//! A backend moves column values into these rows and calls `decode`; anything it
//! cannot decode — JSON that does not parse, a status or type no Oxydra wrote, a
//! count out of range — is [`CoordinatorError::CorruptRow`] naming the record.

use serde_json::Value;

use crate::blueprint::BlueprintSummary;
use crate::claims::ClaimedRun;
use crate::config::BlueprintKind;
use crate::error::CoordinatorError;
use crate::run::{Run, RunError, RunLineage, RunStatus, RunTreeUsage};
use crate::run_usage::RunUsage;
use crate::scrub::{scrub_error, scrub_value};

/// The columns of `coordinator_runs` a [`RunRow`] is read from, in its field order
/// (plain SQL every backend so far accepts; a run stored before run trees is its own
/// root), the [`USAGE_COLUMNS`] last.
pub const RUN_COLUMNS: &str = "id, agent_name, status, parameters, result, error, \
    created_at, started_at, finished_at, COALESCE(root_run_id, id), parent_run_id, depth, \
    tree_runs, tree_cost, used_turns, used_input_tokens, used_output_tokens, used_cost";

/// The columns of a run's [`UsageColumns`], in their field order.
pub const USAGE_COLUMNS: &str = "used_turns, used_input_tokens, used_output_tokens, used_cost";

/// What a run used ([`RunUsage`]), as a backend reads it: `used_turns`,
/// `used_input_tokens`, `used_output_tokens`, `used_cost`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UsageColumns {
    /// `used_turns`: within `u32`.
    pub turns: i64,
    /// `used_input_tokens`: not negative.
    pub input_tokens: i64,
    /// `used_output_tokens`: not negative.
    pub output_tokens: i64,
    /// `used_cost` (US dollars): a non-negative number.
    pub cost: f64,
}

impl UsageColumns {
    /// The columns to store for `usage` (token counts beyond `i64` saturate).
    pub fn encode(usage: RunUsage) -> Self {
        Self {
            turns: i64::from(usage.turns),
            input_tokens: i64::try_from(usage.input_tokens).unwrap_or(i64::MAX),
            output_tokens: i64::try_from(usage.output_tokens).unwrap_or(i64::MAX),
            cost: usage.cost,
        }
    }

    /// The usage of run `run_id` these columns hold.
    pub fn decode(self, run_id: &str) -> Result<RunUsage, CoordinatorError> {
        let corrupt = |name: &str, value: String| CoordinatorError::CorruptRow {
            what: "run usage",
            detail: format!("`{run_id}` has {name} {value}"),
        };
        let tokens = |name: &str, value: i64| {
            u64::try_from(value).map_err(|_| corrupt(name, value.to_string()))
        };
        if !self.cost.is_finite() || self.cost < 0.0 {
            return Err(corrupt("used_cost", self.cost.to_string()));
        }
        Ok(RunUsage {
            turns: u32::try_from(self.turns)
                .map_err(|_| corrupt("used_turns", self.turns.to_string()))?,
            input_tokens: tokens("used_input_tokens", self.input_tokens)?,
            output_tokens: tokens("used_output_tokens", self.output_tokens)?,
            cost: self.cost,
        })
    }
}

/// The columns of a stored run ([`RUN_COLUMNS`]), as a backend reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// `id`.
    pub id: String,
    /// `agent_name`.
    pub agent_name: String,
    /// `status`: a [`RunStatus`] wire name.
    pub status: String,
    /// `parameters`: JSON.
    pub parameters: String,
    /// `result`: JSON.
    pub result: Option<String>,
    /// `error`: a [`RunError`] as JSON.
    pub error: Option<String>,
    /// `created_at` (ms since the Unix epoch).
    pub created_at: i64,
    /// `started_at`.
    pub started_at: Option<i64>,
    /// `finished_at`.
    pub finished_at: Option<i64>,
    /// `root_run_id` (the run's own id when none is stored).
    pub root_run_id: String,
    /// `parent_run_id`.
    pub parent_run_id: Option<String>,
    /// `depth`: within `u32`.
    pub depth: i64,
    /// `tree_runs`: within `u32`.
    pub tree_runs: i64,
    /// `tree_cost` (US dollars).
    pub tree_cost: f64,
    /// The usage columns.
    pub usage: UsageColumns,
}

impl RunRow {
    /// The run this row holds.
    pub fn decode(self) -> Result<Run, CoordinatorError> {
        let status =
            RunStatus::parse(&self.status).ok_or_else(|| CoordinatorError::CorruptRow {
                what: "run",
                detail: format!("`{}` has status `{}`", self.id, self.status),
            })?;
        let error = self
            .error
            .map(|text| {
                serde_json::from_str::<RunError>(&text).map_err(|error| {
                    CoordinatorError::CorruptRow {
                        what: "run error",
                        detail: error.to_string(),
                    }
                })
            })
            .transpose()?;
        let count = |name: &str, value: i64| {
            u32::try_from(value).map_err(|_| CoordinatorError::CorruptRow {
                what: "run",
                detail: format!("`{}` has {name} {value}", self.id),
            })
        };
        let depth = count("depth", self.depth)?;
        let tree_runs = count("tree_runs", self.tree_runs)?;
        let usage = self.usage.decode(&self.id)?;
        Ok(Run {
            parameters: parse_json("run parameters", &self.parameters)?,
            result: self
                .result
                .map(|text| parse_json("run result", &text))
                .transpose()?,
            run_id: self.id,
            agent_name: self.agent_name,
            status,
            error,
            created_at: self.created_at,
            started_at: self.started_at,
            finished_at: self.finished_at,
            lineage: RunLineage {
                root_run_id: self.root_run_id,
                parent_run_id: self.parent_run_id,
                depth,
            },
            tree: RunTreeUsage {
                tree_runs,
                tree_cost: self.tree_cost,
            },
            usage,
            pending_approvals: Vec::new(),
        })
    }
}

/// A stored blueprint: `name, type, description, parameters_schema`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlueprintRow {
    /// `name`.
    pub name: String,
    /// `type`: a [`BlueprintKind`] name.
    pub kind: String,
    /// `description`.
    pub description: String,
    /// `parameters_schema`: JSON.
    pub parameters_schema: Option<String>,
}

impl BlueprintRow {
    /// The blueprint summary this row holds.
    pub fn decode(self) -> Result<BlueprintSummary, CoordinatorError> {
        let kind =
            BlueprintKind::parse(&self.kind).ok_or_else(|| CoordinatorError::CorruptRow {
                what: "blueprint",
                detail: format!("`{}` has type `{}`", self.name, self.kind),
            })?;
        Ok(BlueprintSummary {
            name: self.name,
            kind,
            description: self.description,
            parameters_schema: self
                .parameters_schema
                .map(|text| parse_json("blueprint schema", &text))
                .transpose()?,
        })
    }
}

/// A run a worker of a shared queue just claimed: `id, agent_name, parameters,
/// attempts, cancel_requested` and the [`USAGE_COLUMNS`], `attempts` counting this
/// claim.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedRow {
    /// `id`.
    pub id: String,
    /// `agent_name`.
    pub agent_name: String,
    /// `parameters`: JSON.
    pub parameters: String,
    /// `attempts`: how many times the run was claimed, this claim included.
    pub attempts: i64,
    /// `cancel_requested`.
    pub cancel_requested: bool,
    /// What the run used so far (its earlier holders' usage).
    pub usage: UsageColumns,
}

impl ClaimedRow {
    /// The claimed run; resumed when an earlier claim started it.
    pub fn decode(self) -> Result<ClaimedRun, CoordinatorError> {
        let used = self.usage.decode(&self.id)?;
        Ok(ClaimedRun {
            used,
            parameters: parse_json("run parameters", &self.parameters)?,
            run_id: self.id,
            agent_name: self.agent_name,
            resumed: self.attempts > 1,
            cancel_requested: self.cancel_requested,
        })
    }
}

/// Parses stored JSON, naming `what` when it is corrupt.
pub fn parse_json(what: &'static str, text: &str) -> Result<Value, CoordinatorError> {
    serde_json::from_str(text).map_err(|error| CoordinatorError::CorruptRow {
        what,
        detail: error.to_string(),
    })
}

/// The text to store for a run's parameters or result: `value` scrubbed of secrets.
pub fn encode_value(value: Value) -> String {
    scrub_value(value).to_string()
}

/// The text to store for a run's error: `error` scrubbed of secrets, as JSON.
pub fn encode_error(error: RunError) -> Result<String, CoordinatorError> {
    serde_json::to_string(&scrub_error(error))
        .map_err(|error| CoordinatorError::StorageTask(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row() -> RunRow {
        RunRow {
            id: "run_1".into(),
            agent_name: "researcher".into(),
            status: "failed".into(),
            parameters: r#"{"prompt":"hi"}"#.into(),
            result: Some("[1,2]".into()),
            error: Some(r#"{"kind":"provider","message":"down"}"#.into()),
            created_at: 10,
            started_at: Some(11),
            finished_at: None,
            root_run_id: "run_0".into(),
            parent_run_id: Some("run_0".into()),
            depth: 1,
            tree_runs: 0,
            tree_cost: 0.25,
            usage: UsageColumns {
                turns: 3,
                input_tokens: 1_000,
                output_tokens: 50,
                cost: 0.125,
            },
        }
    }

    fn corrupt(error: CoordinatorError) -> (&'static str, String) {
        match error {
            CoordinatorError::CorruptRow { what, detail } => (what, detail),
            other => panic!("expected CorruptRow, got {other:?}"),
        }
    }

    #[test]
    fn a_run_row_decodes_every_column() {
        let run = row().decode().unwrap();
        assert_eq!(run.run_id, "run_1");
        assert_eq!(run.status, RunStatus::Failed);
        assert_eq!(run.parameters, json!({"prompt": "hi"}));
        assert_eq!(run.result, Some(json!([1, 2])));
        assert_eq!(run.error, Some(RunError::new("provider", "down")));
        assert_eq!(
            (run.created_at, run.started_at, run.finished_at),
            (10, Some(11), None)
        );
        assert_eq!(
            run.lineage,
            RunLineage {
                root_run_id: "run_0".into(),
                parent_run_id: Some("run_0".into()),
                depth: 1
            }
        );
        assert_eq!(run.tree.tree_cost, 0.25);
        assert_eq!(
            run.usage,
            RunUsage {
                turns: 3,
                input_tokens: 1_000,
                output_tokens: 50,
                cost: 0.125
            }
        );
        let bare = RunRow {
            result: None,
            error: None,
            ..row()
        };
        let run = bare.decode().unwrap();
        assert_eq!((run.result, run.error), (None, None));
    }

    #[test]
    fn an_unknown_status_is_corrupt_and_names_the_run() {
        for status in ["", "PENDING", "done", "running "] {
            let (what, detail) = corrupt(
                RunRow {
                    status: status.into(),
                    ..row()
                }
                .decode()
                .unwrap_err(),
            );
            assert_eq!(what, "run");
            assert_eq!(detail, format!("`run_1` has status `{status}`"));
        }
    }

    #[test]
    fn bad_json_in_any_column_is_corrupt_and_names_it() {
        let cases = [
            (
                RunRow {
                    parameters: "{".into(),
                    ..row()
                },
                "run parameters",
            ),
            (
                RunRow {
                    parameters: String::new(),
                    ..row()
                },
                "run parameters",
            ),
            (
                RunRow {
                    result: Some("nope".into()),
                    ..row()
                },
                "run result",
            ),
            (
                RunRow {
                    error: Some("{\"kind\":1}".into()),
                    ..row()
                },
                "run error",
            ),
            (
                RunRow {
                    error: Some("\"just text\"".into()),
                    ..row()
                },
                "run error",
            ),
        ];
        for (row, named) in cases {
            let (what, _) = corrupt(row.decode().unwrap_err());
            assert_eq!(what, named);
        }
    }

    #[test]
    fn negative_or_overflowing_counts_are_corrupt() {
        for depth in [-1, i64::MIN, i64::from(u32::MAX) + 1, i64::MAX] {
            let (what, detail) = corrupt(RunRow { depth, ..row() }.decode().unwrap_err());
            assert_eq!(what, "run");
            assert_eq!(detail, format!("`run_1` has depth {depth}"));
        }
        for tree_runs in [-5, i64::from(u32::MAX) + 1] {
            let (_, detail) = corrupt(RunRow { tree_runs, ..row() }.decode().unwrap_err());
            assert!(detail.contains("tree_runs"), "{detail}");
        }
        let run = RunRow {
            depth: i64::from(u32::MAX),
            tree_runs: i64::from(u32::MAX),
            ..row()
        }
        .decode()
        .unwrap();
        assert_eq!(
            (run.lineage.depth, run.tree.tree_runs),
            (u32::MAX, u32::MAX)
        );
    }

    #[test]
    fn usage_round_trips_and_impossible_usage_is_corrupt() {
        let usage = RunUsage {
            turns: u32::MAX,
            input_tokens: 7,
            output_tokens: 8,
            cost: 1.5,
        };
        assert_eq!(UsageColumns::encode(usage).decode("r").unwrap(), usage);
        let huge = RunUsage {
            input_tokens: u64::MAX,
            ..RunUsage::default()
        };
        assert_eq!(UsageColumns::encode(huge).input_tokens, i64::MAX);
        let good = UsageColumns::default();
        let cases = [
            (UsageColumns { turns: -1, ..good }, "used_turns -1"),
            (
                UsageColumns {
                    turns: i64::from(u32::MAX) + 1,
                    ..good
                },
                "used_turns 4294967296",
            ),
            (
                UsageColumns {
                    input_tokens: -5,
                    ..good
                },
                "used_input_tokens -5",
            ),
            (
                UsageColumns {
                    output_tokens: i64::MIN,
                    ..good
                },
                "used_output_tokens",
            ),
            (UsageColumns { cost: -0.5, ..good }, "used_cost -0.5"),
            (
                UsageColumns {
                    cost: f64::NAN,
                    ..good
                },
                "used_cost NaN",
            ),
            (
                UsageColumns {
                    cost: f64::INFINITY,
                    ..good
                },
                "used_cost inf",
            ),
        ];
        for (columns, named) in cases {
            let (what, detail) = corrupt(columns.decode("run_9").unwrap_err());
            assert_eq!(what, "run usage");
            assert!(detail.starts_with("`run_9` has "), "{detail}");
            assert!(detail.contains(named), "{detail} lacks {named}");
        }
        // A stored run with corrupt usage is corrupt as a whole.
        let (what, _) = corrupt(
            RunRow {
                usage: UsageColumns { turns: -1, ..good },
                ..row()
            }
            .decode()
            .unwrap_err(),
        );
        assert_eq!(what, "run usage");
    }

    #[test]
    fn blueprint_rows_decode_or_name_what_is_wrong() {
        let good = BlueprintRow {
            name: "researcher".into(),
            kind: "agent".into(),
            description: "R".into(),
            parameters_schema: Some(r#"{"type":"object"}"#.into()),
        };
        let summary = good.clone().decode().unwrap();
        assert_eq!(summary.kind, BlueprintKind::Agent);
        assert_eq!(summary.parameters_schema, Some(json!({"type": "object"})));
        let (what, detail) = corrupt(
            BlueprintRow {
                kind: "robot".into(),
                ..good.clone()
            }
            .decode()
            .unwrap_err(),
        );
        assert_eq!(
            (what, detail.as_str()),
            ("blueprint", "`researcher` has type `robot`")
        );
        let (what, _) = corrupt(
            BlueprintRow {
                parameters_schema: Some("{oops".into()),
                ..good
            }
            .decode()
            .unwrap_err(),
        );
        assert_eq!(what, "blueprint schema");
    }

    #[test]
    fn a_claim_is_resumed_only_past_its_first_attempt() {
        let claimed = |attempts: i64| ClaimedRow {
            id: "run_1".into(),
            agent_name: "a".into(),
            parameters: "{}".into(),
            attempts,
            cancel_requested: true,
            usage: UsageColumns {
                turns: 2,
                ..UsageColumns::default()
            },
        };
        for (attempts, resumed) in [
            (1, false),
            (2, true),
            (0, false),
            (-3, false),
            (i64::MAX, true),
        ] {
            let run = claimed(attempts).decode().unwrap();
            assert_eq!(run.resumed, resumed, "attempts {attempts}");
            assert!(run.cancel_requested);
            assert_eq!(run.used.turns, 2);
        }
        let (what, _) = corrupt(
            ClaimedRow {
                parameters: "[".into(),
                ..claimed(1)
            }
            .decode()
            .unwrap_err(),
        );
        assert_eq!(what, "run parameters");
    }

    #[test]
    fn stored_values_and_errors_are_scrubbed() {
        let secret = "password=hunter2-very-secret";
        let value = encode_value(json!({"prompt": secret}));
        assert!(!value.contains("hunter2"), "{value}");
        let error = encode_error(RunError::new("provider", secret)).unwrap();
        assert!(!error.contains("hunter2"), "{error}");
        let back: RunError = serde_json::from_str(&error).unwrap();
        assert_eq!(back.kind, "provider");
    }
}
