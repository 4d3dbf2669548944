//! `[provenance]`: which sources, once a run has read them, make its side-effecting and
//! privileged calls wait for a person (DESIGN.md §3.13; docs/security.md,
//! "Provenance").
//!
//! `hold` lists the kinds of source for every tool (default `["web", "mcp"]`);
//! `[provenance.tools.NAME] hold` replaces that list for one tool. An untrusted project
//! file may only add kinds to either list (see `layers.rs`), never remove one.

use std::collections::BTreeMap;

use oxydra::executor::ProvenancePolicy;
use oxydra::types::SourceKind;
use serde::{Deserialize, Serialize};

/// The kinds held when `[provenance] hold` is not set.
pub const DEFAULT_HOLD: [SourceKind; 2] = [SourceKind::Web, SourceKind::Mcp];

/// `[provenance]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvenanceSection {
    /// The kinds of source that hold every tool (`person`, `config`, `workspace`,
    /// `web`, `mcp`, `command`); default `["web", "mcp"]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<Vec<SourceKind>>,
    /// `[provenance.tools.NAME]`: a tool's own list instead of `hold`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ProvenanceTool>,
}

/// `[provenance.tools.NAME]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvenanceTool {
    /// The kinds of source that hold this tool; absent: `[provenance] hold`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<Vec<SourceKind>>,
}

impl ProvenanceSection {
    /// The executor's policy.
    pub fn policy(&self) -> ProvenancePolicy {
        let hold = self.hold.clone().unwrap_or_else(|| DEFAULT_HOLD.to_vec());
        self.tools
            .iter()
            .filter_map(|(tool, own)| Some((tool, own.hold.as_ref()?)))
            .fold(ProvenancePolicy::new(hold), |policy, (tool, own)| {
                policy.with_tool(tool.clone(), own.iter().copied())
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_policy_holds_on_web_and_mcp() {
        let policy = ProvenanceSection::default().policy();
        assert_eq!(policy, ProvenancePolicy::default());
        let section = ProvenanceSection {
            hold: Some(vec![SourceKind::Web]),
            tools: BTreeMap::from([(
                "shell_exec".to_owned(),
                ProvenanceTool {
                    hold: Some(vec![SourceKind::Workspace, SourceKind::Command]),
                },
            )]),
        };
        let policy = section.policy();
        assert!(policy.holds("file_write").contains(&SourceKind::Web));
        assert!(!policy.holds("file_write").contains(&SourceKind::Mcp));
        assert!(policy.holds("shell_exec").contains(&SourceKind::Command));
        assert!(!policy.holds("shell_exec").contains(&SourceKind::Web));
    }

    /// The user's file, then `project` as an untrusted file: the merged
    /// `[provenance]` and the keys named as ignored.
    fn untrusted_over(user: &str, project: &str) -> (ProvenanceSection, Vec<String>) {
        use crate::layers::{Layered, Trust};
        let mut layers = Layered::new(user.parse().unwrap());
        layers.add(project.parse().unwrap(), Trust::Untrusted);
        let (table, ignored) = layers.finish();
        let section = table
            .get("provenance")
            .map(|value| value.clone().try_into().unwrap())
            .unwrap_or_default();
        (section, ignored.iter().map(ToString::to_string).collect())
    }

    fn kinds(list: &[&str]) -> Vec<SourceKind> {
        list.iter().map(|kind| kind.parse().unwrap()).collect()
    }

    #[test]
    fn an_untrusted_file_cannot_loosen_provenance() {
        // Emptying the list adds nothing: the default stays.
        let (section, _) = untrusted_over("", "[provenance]\nhold = []\n");
        assert_eq!(section.hold, Some(kinds(&["web", "mcp"])));
        // Replacing the user's list only adds to it.
        let user = "[provenance]\nhold = [\"web\", \"mcp\", \"workspace\"]\n";
        let (section, _) = untrusted_over(user, "[provenance]\nhold = [\"command\"]\n");
        assert_eq!(
            section.hold,
            Some(kinds(&["web", "mcp", "workspace", "command"]))
        );
        // A tool's own list of the project's starts from the list that applies.
        let (section, _) = untrusted_over(
            user,
            "[provenance.tools.shell_exec]\nhold = [\"command\"]\n",
        );
        assert_eq!(
            section.tools["shell_exec"].hold,
            Some(kinds(&["web", "mcp", "workspace", "command"]))
        );
        assert!(
            section
                .policy()
                .holds("shell_exec")
                .contains(&SourceKind::Web)
        );
        // ... and from the user's own list for the tool when there is one.
        let user = "[provenance.tools.file_write]\nhold = [\"web\"]\n";
        let (section, _) = untrusted_over(
            user,
            "[provenance.tools.file_write]\nhold = []\n[provenance]\nhold = [\"workspace\"]\n",
        );
        assert_eq!(section.tools["file_write"].hold, Some(kinds(&["web"])));
        assert_eq!(section.hold, Some(kinds(&["web", "mcp", "workspace"])));
    }

    #[test]
    fn an_untrusted_file_with_a_malformed_or_unknown_key_is_named() {
        let (section, ignored) = untrusted_over(
            "",
            "[provenance]\nhold = \"web\"\nrelease = [\"web\"]\n\
             [provenance.tools.x]\nrelease = [\"mcp\"]\n",
        );
        assert_eq!(section.hold, None);
        // The tool's table left empty holds as the default does.
        assert_eq!(section.tools["x"].hold, None);
        assert_eq!(section.policy(), ProvenancePolicy::default());
        assert_eq!(
            ignored,
            [
                "provenance.hold",
                "provenance.release",
                "provenance.tools.x.release"
            ]
        );
    }

    #[test]
    fn a_trusted_file_may_loosen() {
        use crate::layers::{Layered, Trust};
        let mut layers = Layered::new("[provenance]\nhold = [\"web\"]\n".parse().unwrap());
        layers.add("[provenance]\nhold = []\n".parse().unwrap(), Trust::Trusted);
        let (table, _) = layers.finish();
        let section: ProvenanceSection = table["provenance"].clone().try_into().unwrap();
        assert_eq!(section.hold, Some(Vec::new()));
    }
}
