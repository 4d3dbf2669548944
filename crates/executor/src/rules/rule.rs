//! Tool rules as configured: each binds one rule kind to one tool.

use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use super::kinds::{
    CONTINUE_LOOP, COOLDOWN, DEDUPE, EXCLUSIVE_GROUP, EXIT_LOOP, MAX_CALLS, NEVER_DEDUPE,
    REQUIRED_BEFORE_EXIT, REQUIRES_CONSENT, REQUIRES_FOLLOWING_TOOLS, REQUIRES_PRECEDING_TOOLS,
    RawToolRule, RuleKindSpec, START_CONSTRAINT,
};
use super::rule_kind::ToolRuleKind;

/// One rule, bound to the tool it constrains.
///
/// Deserialises from config tables such as
/// `[[rules]] tool = "shell_exec"  kind = "max_calls"  value = 3`; unknown fields, a
/// missing parameter or a parameter the kind does not use are errors that say so. It
/// serialises back to the same table, so a configuration can be printed and read again.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawToolRule")]
pub struct ToolRule {
    /// The tool the rule applies to.
    pub tool: String,
    /// What the rule says.
    pub kind: ToolRuleKind,
}

impl ToolRule {
    /// A rule binding `kind` to `tool`.
    pub fn new(tool: impl Into<String>, kind: ToolRuleKind) -> Self {
        Self {
            tool: tool.into(),
            kind,
        }
    }

    /// The config name of the rule's kind (`max_calls`, `cooldown`, …).
    pub fn kind_name(&self) -> &'static str {
        self.kind.name()
    }
}

impl Serialize for ToolRule {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("tool", &self.tool)?;
        map.serialize_entry("kind", self.kind_name())?;
        match &self.kind {
            ToolRuleKind::MaxCalls(value) => map.serialize_entry("value", value)?,
            ToolRuleKind::ExclusiveGroup(members) => map.serialize_entry("group", members)?,
            ToolRuleKind::NamedExclusiveGroup { name, tools } => {
                map.serialize_entry("group", name)?;
                map.serialize_entry("tools", tools)?;
            }
            ToolRuleKind::RequiresPrecedingTools(tools)
            | ToolRuleKind::RequiresFollowingTools(tools) => {
                map.serialize_entry("tools", tools)?;
            }
            ToolRuleKind::Cooldown(wait) => map.serialize_entry("secs", &wait.as_secs_f64())?,
            ToolRuleKind::RequiresConsent { scope } => map.serialize_entry("scope", scope)?,
            ToolRuleKind::StartConstraint
            | ToolRuleKind::RequiredBeforeExit
            | ToolRuleKind::ContinueLoop
            | ToolRuleKind::ExitLoop
            | ToolRuleKind::NeverDedupe
            | ToolRuleKind::Dedupe => {}
        }
        map.end()
    }
}

impl ToolRuleKind {
    /// The config name of the kind (`max_calls`, `cooldown`, …).
    pub fn name(&self) -> &'static str {
        self.spec().name
    }

    /// The kind's entry in [`RULE_KINDS`](super::kinds::RULE_KINDS).
    pub fn spec(&self) -> &'static RuleKindSpec {
        match self {
            Self::MaxCalls(_) => &MAX_CALLS,
            Self::ExclusiveGroup(_) | Self::NamedExclusiveGroup { .. } => &EXCLUSIVE_GROUP,
            Self::StartConstraint => &START_CONSTRAINT,
            Self::RequiresPrecedingTools(_) => &REQUIRES_PRECEDING_TOOLS,
            Self::RequiresFollowingTools(_) => &REQUIRES_FOLLOWING_TOOLS,
            Self::RequiredBeforeExit => &REQUIRED_BEFORE_EXIT,
            Self::ContinueLoop => &CONTINUE_LOOP,
            Self::ExitLoop => &EXIT_LOOP,
            Self::Cooldown(_) => &COOLDOWN,
            Self::RequiresConsent { .. } => &REQUIRES_CONSENT,
            Self::NeverDedupe => &NEVER_DEDUPE,
            Self::Dedupe => &DEDUPE,
        }
    }
}

fn rule_error(raw: &RawToolRule, kind: &str, what: String) -> String {
    format!("rule for tool `{}` (kind `{kind}`): {what}", raw.tool)
}

impl TryFrom<RawToolRule> for ToolRule {
    type Error = String;

    fn try_from(raw: RawToolRule) -> Result<Self, String> {
        let spec = raw.kind;
        if let Some(extra) = raw.given().into_iter().find(|f| !spec.fields.contains(f)) {
            let uses = if spec.fields.is_empty() {
                "it takes no parameters".to_owned()
            } else {
                format!("it uses {}", spec.fields.join(", "))
            };
            return Err(rule_error(
                &raw,
                spec.name,
                format!("field `{extra}` does not apply ({uses})"),
            ));
        }
        if raw.tool.trim().is_empty() {
            return Err(format!(
                "rule of kind `{}`: `tool` must not be empty",
                spec.name
            ));
        }
        let kind = spec
            .parse(&raw)
            .map_err(|what| rule_error(&raw, spec.name, what))?;
        Ok(ToolRule {
            tool: raw.tool,
            kind,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::permission_scope::PermissionScope;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Config {
        rules: Vec<ToolRule>,
    }

    #[test]
    fn every_kind_serialises_to_the_table_it_is_read_from() {
        let tools = || vec!["a".to_owned(), "b".to_owned()];
        let kinds = [
            ToolRuleKind::MaxCalls(3),
            ToolRuleKind::ExclusiveGroup(tools()),
            ToolRuleKind::NamedExclusiveGroup {
                name: "writers".into(),
                tools: tools(),
            },
            ToolRuleKind::StartConstraint,
            ToolRuleKind::RequiresPrecedingTools(tools()),
            ToolRuleKind::RequiresFollowingTools(tools()),
            ToolRuleKind::RequiredBeforeExit,
            ToolRuleKind::ContinueLoop,
            ToolRuleKind::ExitLoop,
            ToolRuleKind::Cooldown(Duration::from_millis(1500)),
            ToolRuleKind::RequiresConsent {
                scope: PermissionScope::Arguments,
            },
            ToolRuleKind::NeverDedupe,
            ToolRuleKind::Dedupe,
        ];
        for kind in kinds {
            let rule = ToolRule::new("shell_exec", kind);
            let table = serde_json::to_value(&rule).unwrap();
            assert_eq!(table["kind"], rule.kind_name(), "{table}");
            let back: ToolRule = serde_json::from_value(table.clone()).unwrap();
            assert_eq!(back, rule, "{table}");
        }
    }

    fn parse(text: &str) -> Result<Vec<ToolRule>, String> {
        toml::from_str::<Config>(text)
            .map(|c| c.rules)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn every_kind_parses_from_config() {
        let rules = parse(
            r#"
            [[rules]]
            tool = "shell_exec"
            kind = "max_calls"
            value = 3
            [[rules]]
            tool = "file_write"
            kind = "exclusive_group"
            group = ["file_write", "file_edit"]
            [[rules]]
            tool = "file_edit"
            kind = "exclusive_group"
            group = "writers"
            tools = ["file_write"]
            [[rules]]
            tool = "init"
            kind = "start_constraint"
            [[rules]]
            tool = "file_write"
            kind = "requires_preceding_tools"
            tools = ["file_read"]
            [[rules]]
            tool = "plan"
            kind = "requires_following_tools"
            tools = ["file_write"]
            [[rules]]
            tool = "save"
            kind = "required_before_exit"
            [[rules]]
            tool = "think"
            kind = "continue_loop"
            [[rules]]
            tool = "done"
            kind = "exit_loop"
            [[rules]]
            tool = "web_fetch"
            kind = "cooldown"
            secs = 2
            [[rules]]
            tool = "shell_exec"
            kind = "requires_consent"
            scope = "tool"
            [[rules]]
            tool = "clock"
            kind = "never_dedupe"
            [[rules]]
            tool = "file_write"
            kind = "dedupe"
            "#,
        )
        .unwrap();
        let kinds: Vec<ToolRuleKind> = rules.into_iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            vec![
                ToolRuleKind::MaxCalls(3),
                ToolRuleKind::ExclusiveGroup(vec!["file_write".into(), "file_edit".into()]),
                ToolRuleKind::NamedExclusiveGroup {
                    name: "writers".into(),
                    tools: vec!["file_write".into()]
                },
                ToolRuleKind::StartConstraint,
                ToolRuleKind::RequiresPrecedingTools(vec!["file_read".into()]),
                ToolRuleKind::RequiresFollowingTools(vec!["file_write".into()]),
                ToolRuleKind::RequiredBeforeExit,
                ToolRuleKind::ContinueLoop,
                ToolRuleKind::ExitLoop,
                ToolRuleKind::Cooldown(Duration::from_secs(2)),
                ToolRuleKind::RequiresConsent {
                    scope: PermissionScope::Tool
                },
                ToolRuleKind::NeverDedupe,
                ToolRuleKind::Dedupe,
            ]
        );
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        let cases = [
            ("tool = \"x\"\nkind = \"max_calls\"", "missing `value`"),
            (
                "tool = \"x\"\nkind = \"max_calls\"\nvalue = 0",
                "at least 1",
            ),
            (
                "tool = \"x\"\nkind = \"max_calls\"\nvalue = 3\nsecs = 1",
                "field `secs` does not apply",
            ),
            (
                "tool = \"x\"\nkind = \"exit_loop\"\nvalue = 1",
                "takes no parameters",
            ),
            (
                "tool = \"x\"\nkind = \"max_call\"\nvalue = 1",
                "unknown variant `max_call`",
            ),
            (
                "tool = \"x\"\nkind = \"max_calls\"\nvalu = 1",
                "unknown field `valu`",
            ),
            (
                "tool = \"x\"\nkind = \"cooldown\"\nsecs = -1",
                "positive number",
            ),
            (
                "tool = \"x\"\nkind = \"cooldown\"\nsecs = 1e20",
                "rule for tool `x` (kind `cooldown`): `secs` is too large",
            ),
            (
                "tool = \"x\"\nkind = \"cooldown\"\nsecs = inf",
                "positive number",
            ),
            (
                "tool = \"x\"\nkind = \"requires_preceding_tools\"\ntools = []",
                "at least one tool",
            ),
            (
                "tool = \"x\"\nkind = \"exclusive_group\"",
                "missing `group`",
            ),
            (
                "tool = \"x\"\nkind = \"requires_consent\"\nscope = \"forever\"",
                "unknown variant `forever`",
            ),
            ("kind = \"exit_loop\"", "missing field `tool`"),
        ];
        for (body, expected) in cases {
            let err = parse(&format!("[[rules]]\n{body}\n")).unwrap_err();
            assert!(err.contains(expected), "{body:?}: {err}");
        }
    }

    #[test]
    fn consent_scope_defaults_to_session() {
        let rules = parse("[[rules]]\ntool = \"x\"\nkind = \"requires_consent\"\n").unwrap();
        assert_eq!(
            rules[0].kind,
            ToolRuleKind::RequiresConsent {
                scope: PermissionScope::Session
            }
        );
        assert_eq!(rules[0].kind_name(), "requires_consent");
    }
}
