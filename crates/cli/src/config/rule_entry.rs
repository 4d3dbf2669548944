//! One `[[rules]]` table: parsed into the executor's rule once, when the file is read,
//! and kept as written so `--print-config` shows it back.

use oxydra::executor::ToolRule;
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

/// How a rule's error message starts; the file loader puts the key (`rules[0]`) after it.
pub(super) const INVALID_RULE: &str = "invalid rule";

/// A checked `[[rules]]` (or `[[agents.rules]]`) table and the rule it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleEntry {
    table: toml::Table,
    rule: ToolRule,
}

/// The rules of a list of entries, as the executor takes them.
pub fn rules(entries: &[RuleEntry]) -> Vec<ToolRule> {
    entries.iter().map(|entry| entry.rule.clone()).collect()
}

impl Serialize for RuleEntry {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.table.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RuleEntry {
    /// Reads the table and parses it into a rule; an invalid rule is an error that
    /// names its tool (`invalid rule (tool `x`): missing `value` …`).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let table = toml::Table::deserialize(deserializer)?;
        let rule = ToolRule::deserialize(toml::Value::Table(table.clone())).map_err(|error| {
            let tool = table
                .get("tool")
                .and_then(toml::Value::as_str)
                .map(|tool| format!(" (tool `{tool}`)"))
                .unwrap_or_default();
            de::Error::custom(format!("{INVALID_RULE}{tool}: {}", error.message().trim()))
        })?;
        Ok(Self { table, rule })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra::executor::ToolRuleKind;

    #[derive(Debug, Deserialize, Serialize)]
    struct File {
        rules: Vec<RuleEntry>,
    }

    #[test]
    fn a_rule_is_parsed_once_and_printed_as_written() {
        let text = "[[rules]]\ntool = \"shell_exec\"\nkind = \"max_calls\"\nvalue = 3\n";
        let file: File = toml::from_str(text).unwrap();
        assert_eq!(
            rules(&file.rules),
            vec![ToolRule::new("shell_exec", ToolRuleKind::MaxCalls(3))]
        );
        let printed = toml::to_string(&file).unwrap();
        let table: toml::Table = printed.parse().unwrap();
        assert_eq!(table["rules"][0]["value"].as_integer(), Some(3));
        assert_eq!(table["rules"][0]["kind"].as_str(), Some("max_calls"));
    }

    #[test]
    fn an_invalid_rule_is_an_error_naming_its_tool() {
        let text = "[[rules]]\ntool = \"shell_exec\"\nkind = \"max_calls\"\nvalue = 0\n";
        let error = toml::from_str::<File>(text).unwrap_err().to_string();
        assert!(
            error.contains("invalid rule (tool `shell_exec`): "),
            "{error}"
        );
        assert!(error.contains("at least 1"), "{error}");
        let text = "[[rules]]\nkind = \"exit_loop\"\n";
        let error = toml::from_str::<File>(text).unwrap_err().to_string();
        assert!(error.contains("invalid rule: "), "{error}");
        assert!(error.contains("missing field `tool`"), "{error}");
    }
}
