//! What a call will do, for a person deciding on it: [`CallPreview`], made by
//! [`Tool::preview`](crate::Tool::preview) (see [`ToolRegistry::preview`](crate::ToolRegistry::preview)).
//!
//! A consent question (the terminal's, a web console's, an API's list of pending
//! approvals) shows the preview instead of the raw JSON arguments: the command of a
//! `shell_exec`, the URL of a `web_fetch`, a unified diff against the current file of a
//! `file_write` / `file_edit`. Every text in a preview is untrusted (it comes from the
//! model and from workspace files): a terminal escapes it, a web page HTML-escapes it.

use serde::Serialize;

/// At most this many lines of a diff are kept; the rest is counted in the note.
pub const PREVIEW_DIFF_LINES: usize = 200;
/// At most this many bytes of any text in a preview are kept (a long command, a long
/// URL, the arguments' JSON, the diff).
pub const PREVIEW_TEXT_BYTES: usize = 32 * 1024;

/// What a call will do, in the words a person reads before deciding on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CallPreview {
    /// A command line to run (`shell_exec`).
    Command {
        /// The command line.
        command: String,
        /// Values of its positional parameters `$1`, `$2`, … (passed as data).
        args: Vec<String>,
    },
    /// A change to a file (`file_write`, `file_edit`).
    FileChange {
        /// The path as the call gives it.
        path: String,
        /// The change as a unified diff (`--- a/PATH` / `+++ b/PATH` and hunks) from
        /// the file's current text; empty when no diff could be made (see `note`).
        diff: String,
        /// What else the person should know: a new file, a file too large to compare,
        /// a path outside the workspace (the call will be refused), a diff cut short.
        note: Option<String>,
    },
    /// A URL to fetch (`web_fetch`).
    Fetch {
        /// The URL.
        url: String,
    },
    /// The arguments as indented JSON: the preview of a tool with no better one.
    Arguments {
        /// The JSON text.
        json: String,
    },
}

impl CallPreview {
    /// The preview of a tool that has no better one: `arguments` as indented JSON.
    pub fn arguments(arguments: &serde_json::Value) -> Self {
        let json =
            serde_json::to_string_pretty(arguments).unwrap_or_else(|_| arguments.to_string());
        Self::Arguments {
            json: cap_text(json),
        }
    }

    /// The preview as plain text, a few lines: `$ COMMAND` (and its parameters), `GET
    /// URL`, the diff (and its note) or the JSON. Not escaped: a terminal or a page must
    /// escape it before showing it.
    pub fn to_text(&self) -> String {
        match self {
            Self::Command { command, args } => {
                let mut text = format!("$ {command}");
                for (index, value) in args.iter().enumerate() {
                    text.push_str(&format!("\n  ${} = {value}", index.saturating_add(1)));
                }
                text
            }
            Self::FileChange { path, diff, note } => {
                let mut text = String::new();
                if diff.is_empty() {
                    text.push_str(&format!("change to {path}"));
                } else {
                    text.push_str(diff.trim_end_matches('\n'));
                }
                if let Some(note) = note {
                    text.push_str(&format!("\n({note})"));
                }
                text
            }
            Self::Fetch { url } => format!("GET {url}"),
            Self::Arguments { json } => json.clone(),
        }
    }
}

/// `text` cut to [`PREVIEW_TEXT_BYTES`] (on a character boundary) with a marker.
pub(crate) fn cap_text(text: String) -> String {
    if text.len() <= PREVIEW_TEXT_BYTES {
        return text;
    }
    let mut end = PREVIEW_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end = end.saturating_sub(1);
    }
    let mut cut = text.get(..end).unwrap_or_default().to_owned();
    cut.push_str(&format!(
        "… ({} bytes more)",
        text.len().saturating_sub(end)
    ));
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_reads_as_text() {
        let command = CallPreview::Command {
            command: "grep -r \"$1\" src".into(),
            args: vec!["TODO".into()],
        };
        assert_eq!(command.to_text(), "$ grep -r \"$1\" src\n  $1 = TODO");
        let fetch = CallPreview::Fetch {
            url: "https://example.com/a".into(),
        };
        assert_eq!(fetch.to_text(), "GET https://example.com/a");
        let change = CallPreview::FileChange {
            path: "a.txt".into(),
            diff: String::new(),
            note: Some("a new file".into()),
        };
        assert_eq!(change.to_text(), "change to a.txt\n(a new file)");
        let args = CallPreview::arguments(&json!({"q": 1}));
        assert_eq!(args.to_text(), "{\n  \"q\": 1\n}");
    }

    #[test]
    fn previews_serialise_with_their_kind() {
        let fetch = CallPreview::Fetch {
            url: "https://example.com".into(),
        };
        assert_eq!(
            serde_json::to_value(&fetch).unwrap(),
            json!({"kind": "fetch", "url": "https://example.com"})
        );
    }

    #[test]
    fn long_text_is_capped_on_a_character_boundary() {
        let long = "é".repeat(PREVIEW_TEXT_BYTES);
        let cut = cap_text(long.clone());
        assert!(cut.len() < long.len());
        assert!(cut.ends_with("bytes more)"), "{}", &cut[cut.len() - 40..]);
        let args = CallPreview::arguments(&json!({"content": "x".repeat(100_000)}));
        assert!(args.to_text().len() < PREVIEW_TEXT_BYTES + 100);
    }
}
