//! The rule kinds as configured: one table, [`RULE_KINDS`], of each kind's name, the
//! parameters it takes and the scope of its state, and how its parameters become a
//! [`ToolRuleKind`]. The rule parser, its error messages and the documentation's listing
//! all read that table.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

use super::rule_kind::ToolRuleKind;
use crate::permission_scope::PermissionScope;

/// How long the state a rule kind keeps lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleScope {
    /// One session run ([`SessionRunId`](crate::SessionRunId)): the counters last through
    /// every batch of the run.
    Run,
    /// One process ([`ProcessToolState`](crate::ProcessToolState)).
    Process,
    /// No state: the rule is read whenever the loop asks.
    Static,
    /// Kept on the executor across runs and sessions until `prune_expired` finds it
    /// expired (cooldown stamps, dedupe entries, consent grants).
    Persistent,
}

impl RuleScope {
    /// The scope's name in the documentation: `run`, `process`, `static`, `persistent`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Run => "run",
            Self::Process => "process",
            Self::Static => "static",
            Self::Persistent => "persistent",
        }
    }
}

/// One rule kind: its config name, the parameters it takes and the scope of its state.
#[derive(Clone, Copy)]
pub struct RuleKindSpec {
    /// The `kind` value in config (`max_calls`, `cooldown`, …).
    pub name: &'static str,
    /// The parameters it takes besides `tool` and `kind`; any other is an error.
    pub fields: &'static [&'static str],
    /// How long its state lasts.
    pub scope: RuleScope,
    /// Builds the kind from a table that gives only `fields`; the error says what is
    /// wrong with them.
    parse: fn(&RawToolRule) -> Result<ToolRuleKind, String>,
}

impl fmt::Debug for RuleKindSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuleKindSpec")
            .field("name", &self.name)
            .field("fields", &self.fields)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl RuleKindSpec {
    /// The kind called `name` in config.
    pub fn find(name: &str) -> Option<&'static RuleKindSpec> {
        RULE_KINDS.iter().find(|kind| kind.name == name)
    }

    /// Builds the kind from `raw`, whose fields were checked against [`Self::fields`].
    pub(crate) fn parse(&self, raw: &RawToolRule) -> Result<ToolRuleKind, String> {
        (self.parse)(raw)
    }
}

pub(crate) const MAX_CALLS: RuleKindSpec = RuleKindSpec {
    name: "max_calls",
    fields: &["value"],
    scope: RuleScope::Run,
    parse: parse_max_calls,
};
pub(crate) const EXCLUSIVE_GROUP: RuleKindSpec = RuleKindSpec {
    name: "exclusive_group",
    fields: &["group", "tools"],
    scope: RuleScope::Run,
    parse: parse_exclusive_group,
};
pub(crate) const START_CONSTRAINT: RuleKindSpec = RuleKindSpec {
    name: "start_constraint",
    fields: &[],
    scope: RuleScope::Process,
    parse: |_| Ok(ToolRuleKind::StartConstraint),
};
pub(crate) const REQUIRES_PRECEDING_TOOLS: RuleKindSpec = RuleKindSpec {
    name: "requires_preceding_tools",
    fields: &["tools"],
    scope: RuleScope::Process,
    parse: |raw| nonempty_tools(raw).map(ToolRuleKind::RequiresPrecedingTools),
};
pub(crate) const REQUIRES_FOLLOWING_TOOLS: RuleKindSpec = RuleKindSpec {
    name: "requires_following_tools",
    fields: &["tools"],
    scope: RuleScope::Process,
    parse: |raw| nonempty_tools(raw).map(ToolRuleKind::RequiresFollowingTools),
};
pub(crate) const REQUIRED_BEFORE_EXIT: RuleKindSpec = RuleKindSpec {
    name: "required_before_exit",
    fields: &[],
    scope: RuleScope::Process,
    parse: |_| Ok(ToolRuleKind::RequiredBeforeExit),
};
pub(crate) const CONTINUE_LOOP: RuleKindSpec = RuleKindSpec {
    name: "continue_loop",
    fields: &[],
    scope: RuleScope::Static,
    parse: |_| Ok(ToolRuleKind::ContinueLoop),
};
pub(crate) const EXIT_LOOP: RuleKindSpec = RuleKindSpec {
    name: "exit_loop",
    fields: &[],
    scope: RuleScope::Process,
    parse: |_| Ok(ToolRuleKind::ExitLoop),
};
pub(crate) const COOLDOWN: RuleKindSpec = RuleKindSpec {
    name: "cooldown",
    fields: &["secs"],
    scope: RuleScope::Persistent,
    parse: parse_cooldown,
};
pub(crate) const REQUIRES_CONSENT: RuleKindSpec = RuleKindSpec {
    name: "requires_consent",
    fields: &["scope"],
    scope: RuleScope::Persistent,
    parse: |raw| {
        Ok(ToolRuleKind::RequiresConsent {
            scope: raw.scope.unwrap_or_default(),
        })
    },
};
pub(crate) const NEVER_DEDUPE: RuleKindSpec = RuleKindSpec {
    name: "never_dedupe",
    fields: &[],
    scope: RuleScope::Persistent,
    parse: |_| Ok(ToolRuleKind::NeverDedupe),
};
pub(crate) const DEDUPE: RuleKindSpec = RuleKindSpec {
    name: "dedupe",
    fields: &[],
    scope: RuleScope::Persistent,
    parse: |_| Ok(ToolRuleKind::Dedupe),
};

/// Every rule kind, in the order the documentation lists them.
pub static RULE_KINDS: &[RuleKindSpec] = &[
    MAX_CALLS,
    EXCLUSIVE_GROUP,
    START_CONSTRAINT,
    REQUIRES_PRECEDING_TOOLS,
    REQUIRES_FOLLOWING_TOOLS,
    REQUIRED_BEFORE_EXIT,
    CONTINUE_LOOP,
    EXIT_LOOP,
    COOLDOWN,
    REQUIRES_CONSENT,
    NEVER_DEDUPE,
    DEDUPE,
];

/// A `[[rules]]` table as written: `tool`, `kind` and every parameter any kind takes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawToolRule {
    pub(crate) tool: String,
    #[serde(deserialize_with = "kind_by_name")]
    pub(crate) kind: &'static RuleKindSpec,
    value: Option<u32>,
    group: Option<GroupSpec>,
    tools: Option<Vec<String>>,
    secs: Option<f64>,
    scope: Option<PermissionScope>,
}

impl RawToolRule {
    /// Fields given besides `tool` and `kind`, by name.
    pub(crate) fn given(&self) -> Vec<&'static str> {
        [
            ("value", self.value.is_some()),
            ("group", self.group.is_some()),
            ("tools", self.tools.is_some()),
            ("secs", self.secs.is_some()),
            ("scope", self.scope.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, given)| given.then_some(name))
        .collect()
    }
}

/// Reads `kind` as the name of one of [`RULE_KINDS`].
fn kind_by_name<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<&'static RuleKindSpec, D::Error> {
    let name = String::deserialize(deserializer)?;
    RuleKindSpec::find(&name).ok_or_else(|| {
        let expected: Vec<String> = RULE_KINDS
            .iter()
            .map(|kind| format!("`{}`", kind.name))
            .collect();
        de::Error::custom(format_args!(
            "unknown variant `{name}`, expected one of {}",
            expected.join(", ")
        ))
    })
}

/// `group` is either the member list or a group name (with `tools`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum GroupSpec {
    Members(Vec<String>),
    Name(String),
}

impl<'de> Deserialize<'de> for GroupSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct GroupVisitor;
        impl<'de> Visitor<'de> for GroupVisitor {
            type Value = GroupSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of tool names or a group name")
            }
            fn visit_str<E: de::Error>(self, value: &str) -> Result<GroupSpec, E> {
                Ok(GroupSpec::Name(value.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<GroupSpec, A::Error> {
                let mut members = Vec::new();
                while let Some(name) = seq.next_element::<String>()? {
                    members.push(name);
                }
                Ok(GroupSpec::Members(members))
            }
        }
        deserializer.deserialize_any(GroupVisitor)
    }
}

fn parse_max_calls(raw: &RawToolRule) -> Result<ToolRuleKind, String> {
    match raw.value {
        Some(0) => {
            Err("`value` must be at least 1 (remove the tool from the agent instead)".into())
        }
        Some(value) => Ok(ToolRuleKind::MaxCalls(value)),
        None => Err("missing `value` (the most calls per run)".into()),
    }
}

fn parse_exclusive_group(raw: &RawToolRule) -> Result<ToolRuleKind, String> {
    match (&raw.group, &raw.tools) {
        (Some(GroupSpec::Members(members)), None) if !members.is_empty() => {
            Ok(ToolRuleKind::ExclusiveGroup(members.clone()))
        }
        (Some(GroupSpec::Members(_)), None) => Err("`group` must list at least one tool".into()),
        (Some(GroupSpec::Name(group)), tools) => Ok(ToolRuleKind::NamedExclusiveGroup {
            name: group.clone(),
            tools: tools.clone().unwrap_or_default(),
        }),
        (Some(GroupSpec::Members(_)), Some(_)) => Err(
            "give `group` as a list of tools, or as a name together with `tools`, not both lists"
                .into(),
        ),
        (None, _) => {
            Err("missing `group` (a list of tool names, or a group name with `tools`)".into())
        }
    }
}

fn parse_cooldown(raw: &RawToolRule) -> Result<ToolRuleKind, String> {
    match raw.secs {
        Some(secs) if secs.is_finite() && secs > 0.0 => Duration::try_from_secs_f64(secs)
            .map(ToolRuleKind::Cooldown)
            .map_err(|_| format!("`secs` is too large to be a duration, got {secs}")),
        Some(secs) => Err(format!(
            "`secs` must be a positive number of seconds, got {secs}"
        )),
        None => Err("missing `secs` (seconds between runs)".into()),
    }
}

fn nonempty_tools(raw: &RawToolRule) -> Result<Vec<String>, String> {
    match &raw.tools {
        Some(tools) if !tools.is_empty() => Ok(tools.clone()),
        Some(_) => Err("`tools` must name at least one tool".into()),
        None => Err("missing `tools` (a list of tool names)".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::rule::ToolRule;

    /// A table giving each of the kind's fields a valid value.
    fn sample(kind: &RuleKindSpec) -> String {
        let mut text = format!("tool = \"t\"\nkind = \"{}\"\n", kind.name);
        for field in kind.fields {
            text.push_str(match *field {
                "value" => "value = 2\n",
                "group" => "group = \"g\"\n",
                "tools" => "tools = [\"u\"]\n",
                "secs" => "secs = 1.5\n",
                "scope" => "scope = \"tool\"\n",
                other => panic!("no sample for field `{other}`"),
            });
        }
        text
    }

    #[test]
    fn every_kind_of_the_table_parses_back_to_itself() {
        for kind in RULE_KINDS {
            let rule: ToolRule = toml::from_str(&sample(kind)).unwrap();
            assert_eq!(rule.kind_name(), kind.name);
            assert_eq!(rule.kind.spec().scope, kind.scope, "{}", kind.name);
            assert!(std::ptr::eq(RuleKindSpec::find(kind.name).unwrap(), kind));
        }
        let mut names: Vec<&str> = RULE_KINDS.iter().map(|kind| kind.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), RULE_KINDS.len(), "a kind is listed twice");
    }

    #[test]
    fn an_unknown_kind_names_every_known_one() {
        let error = toml::from_str::<ToolRule>("tool = \"t\"\nkind = \"sometimes\"\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("unknown variant `sometimes`"), "{error}");
        for kind in RULE_KINDS {
            assert!(error.contains(&format!("`{}`", kind.name)), "{error}");
        }
    }

    #[test]
    fn a_field_of_another_kind_is_refused_with_the_fields_the_kind_uses() {
        for kind in RULE_KINDS {
            let extra = ["value", "secs", "scope"]
                .into_iter()
                .find(|field| !kind.fields.contains(field))
                .unwrap();
            let text = format!("{}{extra} = 1\n", sample(kind));
            let error = toml::from_str::<ToolRule>(&text).unwrap_err().to_string();
            assert!(
                error.contains(&format!("field `{extra}` does not apply")),
                "{}: {error}",
                kind.name
            );
            let uses = if kind.fields.is_empty() {
                "it takes no parameters".to_owned()
            } else {
                format!("it uses {}", kind.fields.join(", "))
            };
            assert!(error.contains(&uses), "{}: {error}", kind.name);
        }
    }

    /// The rules table of docs/executor.md lists exactly the kinds of [`RULE_KINDS`],
    /// each with its parameters and scope.
    #[test]
    fn the_documentation_lists_every_kind_with_its_fields_and_scope() {
        let doc = include_str!("../../../../docs/executor.md");
        let rows: Vec<Vec<&str>> = doc
            .lines()
            .filter(|line| line.starts_with("| `"))
            .map(|line| {
                line.split(" | ")
                    .map(|cell| cell.trim_matches(['|', ' ']))
                    .collect()
            })
            .filter(|cells: &Vec<&str>| cells.len() == 4)
            .collect();
        let mut listed = Vec::new();
        for cells in &rows {
            for name in cells[0].split(" / ") {
                let name = name.trim_matches('`');
                let kind = RuleKindSpec::find(name)
                    .unwrap_or_else(|| panic!("docs list `{name}`, which is no rule kind"));
                assert_eq!(
                    cells[2],
                    kind.scope.as_str(),
                    "scope of `{name}` in the docs"
                );
                if kind.fields.is_empty() {
                    assert_eq!(cells[1], "–", "parameters of `{name}` in the docs");
                }
                for field in kind.fields {
                    assert!(
                        cells[1].contains(&format!("`{field}")),
                        "docs do not give `{field}` for `{name}`: {}",
                        cells[1]
                    );
                }
                listed.push(name);
            }
        }
        for kind in RULE_KINDS {
            assert!(
                listed.contains(&kind.name),
                "docs do not list `{}`",
                kind.name
            );
        }
    }
}
