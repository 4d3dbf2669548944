//! Where a message's text came from (DESIGN.md §3.13): the person, a trusted config or
//! instruction file, a workspace file, a web page, an MCP server, a command's output.
//!
//! A [`Source`] travels on each [`Message`](crate::Message) it is known for; the
//! executor uses the untrusted sources a run has read to hold side-effecting calls for
//! a person's decision. On the wire (JSON, stored sessions) a source is one string:
//! `person`, `config`, `workspace`, `command`, `web:<url>`, `mcp:<server>`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::TypesError;

/// Where a message's text came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
#[non_exhaustive]
pub enum Source {
    /// The person running the agent (a prompt, an answer).
    Person,
    /// A trusted config or instruction file.
    Config,
    /// A file of the workspace (which the project, not the person, may have written).
    Workspace,
    /// A web page, by the URL it was fetched from.
    Web(String),
    /// An MCP server's result, by the server's name.
    Mcp(String),
    /// A command's output.
    Command,
}

/// The kind of a [`Source`], without its URL or server: what a `[provenance]` policy
/// names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SourceKind {
    /// [`Source::Person`].
    Person,
    /// [`Source::Config`].
    Config,
    /// [`Source::Workspace`].
    Workspace,
    /// [`Source::Web`].
    Web,
    /// [`Source::Mcp`].
    Mcp,
    /// [`Source::Command`].
    Command,
}

impl SourceKind {
    /// The kind's name: `person`, `config`, `workspace`, `web`, `mcp` or `command`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Person => "person",
            Self::Config => "config",
            Self::Workspace => "workspace",
            Self::Web => "web",
            Self::Mcp => "mcp",
            Self::Command => "command",
        }
    }

    /// How far the kind is from the person's own words, for choosing which of a
    /// message's several sources it is stored under (the highest:
    /// [`Message::with_sources`](crate::Message::with_sources)): `person` 0, `config` 1
    /// (the person's trusted files), `workspace` 2 (the project's files), `command` 3
    /// (a program's output, which may carry what it fetched), `mcp` 4 (a third party's
    /// server), `web` 5 (anyone's page). The rank only names the message: every source
    /// of it counts for the `[provenance]` policy.
    pub fn distrust(self) -> u8 {
        match self {
            Self::Person => 0,
            Self::Config => 1,
            Self::Workspace => 2,
            Self::Command => 3,
            Self::Mcp => 4,
            Self::Web => 5,
        }
    }

    /// Every kind, in a stable order.
    pub const ALL: [SourceKind; 6] = [
        Self::Person,
        Self::Config,
        Self::Workspace,
        Self::Web,
        Self::Mcp,
        Self::Command,
    ];
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SourceKind {
    type Err = TypesError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| TypesError::UnknownSource(text.to_owned()))
    }
}

impl Source {
    /// The source's kind.
    pub fn kind(&self) -> SourceKind {
        match self {
            Self::Person => SourceKind::Person,
            Self::Config => SourceKind::Config,
            Self::Workspace => SourceKind::Workspace,
            Self::Web(_) => SourceKind::Web,
            Self::Mcp(_) => SourceKind::Mcp,
            Self::Command => SourceKind::Command,
        }
    }

    /// How a question to a person names the source: `https://example.com/page`,
    /// `the MCP server "github"`, `a workspace file`, `a command's output`.
    pub fn describe(&self) -> String {
        match self {
            Self::Person => "the person".to_owned(),
            Self::Config => "a trusted config file".to_owned(),
            Self::Workspace => "a workspace file".to_owned(),
            Self::Web(url) => url.clone(),
            Self::Mcp(server) => format!("the MCP server \"{server}\""),
            Self::Command => "a command's output".to_owned(),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Web(url) => write!(f, "web:{url}"),
            Self::Mcp(server) => write!(f, "mcp:{server}"),
            other => f.write_str(other.kind().as_str()),
        }
    }
}

impl FromStr for Source {
    type Err = TypesError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if let Some(url) = text.strip_prefix("web:") {
            return Ok(Self::Web(url.to_owned()));
        }
        if let Some(server) = text.strip_prefix("mcp:") {
            return Ok(Self::Mcp(server.to_owned()));
        }
        match text.parse::<SourceKind>()? {
            SourceKind::Person => Ok(Self::Person),
            SourceKind::Config => Ok(Self::Config),
            SourceKind::Workspace => Ok(Self::Workspace),
            SourceKind::Command => Ok(Self::Command),
            SourceKind::Web | SourceKind::Mcp => Err(TypesError::UnknownSource(text.to_owned())),
        }
    }
}

impl From<Source> for String {
    fn from(source: Source) -> Self {
        source.to_string()
    }
}

impl TryFrom<String> for Source {
    type Error = TypesError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_round_trip_as_one_string() {
        for source in [
            Source::Person,
            Source::Config,
            Source::Workspace,
            Source::Command,
            Source::Web("https://example.com/a?b=c:d".into()),
            Source::Mcp("git:hub".into()),
        ] {
            let json = serde_json::to_value(&source).unwrap();
            assert!(json.is_string(), "{json}");
            assert_eq!(serde_json::from_value::<Source>(json).unwrap(), source);
        }
        assert_eq!(
            serde_json::to_value(Source::Web("https://x.test/".into())).unwrap(),
            serde_json::json!("web:https://x.test/")
        );
    }

    #[test]
    fn distrust_ranks_the_person_first_and_the_web_last() {
        let mut kinds = SourceKind::ALL;
        kinds.sort_by_key(|kind| kind.distrust());
        assert_eq!(
            kinds,
            [
                SourceKind::Person,
                SourceKind::Config,
                SourceKind::Workspace,
                SourceKind::Command,
                SourceKind::Mcp,
                SourceKind::Web,
            ]
        );
    }

    #[test]
    fn bad_sources_are_refused() {
        for text in ["", "web", "mcp", "Person", "webpage", "ftp:x"] {
            assert!(text.parse::<Source>().is_err(), "{text}");
        }
        assert!(serde_json::from_value::<Source>(serde_json::json!(3)).is_err());
        assert_eq!("mcp".parse::<SourceKind>().unwrap(), SourceKind::Mcp);
        assert!("MCP".parse::<SourceKind>().is_err());
    }
}
