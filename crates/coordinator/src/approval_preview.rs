//! What an approval will do, shown to the person deciding it: the command of a
//! `shell_exec`, the URL of a `web_fetch`, and for `file_write` / `file_edit` a
//! unified diff against the file as it is now (when the coordinator can read it in
//! the workspace). Everything shown is scrubbed, and characters that hide or restyle
//! text (controls but newline and tab, bidi and zero-width marks) are shown as
//! `\u{…}` escapes, so what a person reads is what will happen.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::scrub::scrub_text;

/// The largest file a diff is made against (bytes); a larger one is not read.
pub const MAX_DIFF_SOURCE: u64 = 256 * 1024;

/// The longest diff shown (bytes); a longer one is cut with a marker.
pub const MAX_DIFF_TEXT: usize = 64 * 1024;

/// What a waiting tool call will do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ApprovalPreview {
    /// A command `shell_exec` will run.
    Command {
        /// The command text.
        command: String,
    },
    /// A page `web_fetch` will fetch.
    Url {
        /// The URL.
        url: String,
    },
    /// A change `file_write` / `file_edit` will make.
    Diff {
        /// The file, relative to the workspace.
        path: String,
        /// A unified diff from the file as it is now (empty for a new file).
        diff: String,
        /// Whether the file exists now.
        exists: bool,
    },
    /// The arguments alone say what will happen (another tool, or a file the
    /// coordinator cannot read): `note` says why there is no more.
    Arguments {
        /// Why nothing more is shown.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
}

/// What `tool` with `arguments` (the JSON text a person sees) will do, files read
/// under `workspace` when given.
pub fn preview(tool: &str, arguments: &str, workspace: Option<&Path>) -> ApprovalPreview {
    let Ok(Value::Object(args)) = serde_json::from_str::<Value>(arguments) else {
        return note("the arguments are not a JSON object");
    };
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
    match tool {
        "shell_exec" => match text("command") {
            Some(command) => ApprovalPreview::Command {
                command: shown(&command),
            },
            None => note("no `command` argument"),
        },
        "web_fetch" => match text("url") {
            Some(url) => ApprovalPreview::Url { url: shown(&url) },
            None => note("no `url` argument"),
        },
        "file_write" | "file_edit" => {
            let Some(path) = text("path") else {
                return note("no `path` argument");
            };
            let Some(workspace) = workspace else {
                return note("the coordinator does not know the workspace");
            };
            file_change(tool, &path, &args, workspace)
        }
        _ => ApprovalPreview::Arguments { note: None },
    }
}

/// `text` scrubbed, with every character that could hide or restyle text (a control
/// character but `\n` and `\t`, a bidi or zero-width mark) written as `\u{…}`.
pub(crate) fn shown(text: &str) -> String {
    let scrubbed = scrub_text(text);
    let hidden = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
    };
    if !scrubbed.chars().any(hidden) {
        return scrubbed;
    }
    scrubbed
        .chars()
        .map(|c| {
            if hidden(c) {
                format!("\\u{{{:x}}}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn note(why: &str) -> ApprovalPreview {
    ApprovalPreview::Arguments {
        note: Some(why.to_owned()),
    }
}

/// The diff `tool` would make to `path` in `workspace`.
fn file_change(
    tool: &str,
    path: &str,
    args: &serde_json::Map<String, Value>,
    workspace: &Path,
) -> ApprovalPreview {
    let Some(target) = inside(workspace, path) else {
        return note("the path is outside the workspace");
    };
    let current = match std::fs::metadata(&target) {
        Ok(meta) if !meta.is_file() => return note("the path is not a regular file"),
        Ok(meta) if meta.len() > MAX_DIFF_SOURCE => {
            return note("the file is too large to show a diff");
        }
        Ok(_) => match std::fs::read_to_string(&target) {
            Ok(text) => Some(text),
            Err(_) => return note("the file cannot be read as text"),
        },
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(_) => return note("the file cannot be read"),
    };
    let before = current.clone().unwrap_or_default();
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let after = if tool == "file_write" {
        match text("content") {
            Some(content) => content.to_owned(),
            None => return note("no `content` argument"),
        }
    } else {
        let (Some(old), Some(new)) = (text("old"), text("new")) else {
            return note("no `old` / `new` arguments");
        };
        if old.is_empty() || before.matches(old).count() != 1 {
            return note("`old` does not occur exactly once in the file now");
        }
        before.replacen(old, new, 1)
    };
    let diff = similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    ApprovalPreview::Diff {
        path: shown(path),
        diff: cut(shown(&diff)),
        exists: current.is_some(),
    }
}

/// `path` under `workspace` when it is relative, has no `..`, and its existing part
/// resolves (links followed) inside the workspace.
fn inside(workspace: &Path, path: &str) -> Option<PathBuf> {
    let relative = Path::new(path);
    if relative
        .components()
        .any(|part| !matches!(part, Component::Normal(_) | Component::CurDir))
    {
        return None;
    }
    let root = workspace.canonicalize().ok()?;
    let target = root.join(relative);
    let resolved = match target.canonicalize() {
        Ok(resolved) => resolved,
        Err(_) => target
            .parent()?
            .canonicalize()
            .ok()?
            .join(target.file_name()?),
    };
    resolved.starts_with(&root).then_some(resolved)
}

fn cut(mut diff: String) -> String {
    if diff.len() > MAX_DIFF_TEXT {
        let mut end = MAX_DIFF_TEXT;
        while !diff.is_char_boundary(end) {
            end -= 1;
        }
        let cut = diff.len() - end;
        diff.truncate(end);
        diff.push_str(&format!("\n[… {cut} more bytes of diff not shown]\n"));
    }
    diff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_and_a_url_are_shown_as_they_are() {
        assert_eq!(
            preview("shell_exec", r#"{"command": "rm -rf build"}"#, None),
            ApprovalPreview::Command {
                command: "rm -rf build".into()
            }
        );
        assert_eq!(
            preview("web_fetch", r#"{"url": "https://example.com/"}"#, None),
            ApprovalPreview::Url {
                url: "https://example.com/".into()
            }
        );
        assert!(matches!(
            preview("shell_exec", "not json", None),
            ApprovalPreview::Arguments { note: Some(_) }
        ));
    }

    #[test]
    fn characters_that_hide_text_are_shown_escaped() {
        let shown = preview(
            "shell_exec",
            r#"{"command": "echo ok\u001b[2K\u202e; rm -rf ~"}"#,
            None,
        );
        assert_eq!(
            shown,
            ApprovalPreview::Command {
                command: "echo ok\\u{1b}[2K\\u{202e}; rm -rf ~".into()
            }
        );
    }

    #[test]
    fn a_write_and_an_edit_are_diffs_against_the_file_now() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let edit = preview(
            "file_edit",
            r#"{"path": "a.txt", "old": "two", "new": "TWO"}"#,
            Some(dir.path()),
        );
        let ApprovalPreview::Diff { diff, exists, .. } = edit else {
            panic!("{edit:?}")
        };
        assert!(exists);
        assert!(diff.contains("-two\n+TWO\n"), "{diff}");
        let write = preview(
            "file_write",
            r#"{"path": "new.txt", "content": "hello\n"}"#,
            Some(dir.path()),
        );
        let ApprovalPreview::Diff { diff, exists, .. } = write else {
            panic!("{write:?}")
        };
        assert!(!exists);
        assert!(diff.contains("+hello"), "{diff}");
    }

    #[test]
    fn paths_outside_the_workspace_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        for path in ["../secret", "/etc/passwd", "link/secret"] {
            let args = serde_json::json!({"path": path, "content": "y"}).to_string();
            assert_eq!(
                preview("file_write", &args, Some(dir.path())),
                note("the path is outside the workspace"),
                "{path}"
            );
        }
    }

    #[test]
    fn a_secret_in_the_file_is_not_shown() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(".env"),
            "API_KEY=sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c\n",
        )
        .unwrap();
        let shown = preview(
            "file_write",
            r#"{"path": ".env", "content": ""}"#,
            Some(dir.path()),
        );
        assert!(!format!("{shown:?}").contains("4f9a8b7c6d5e"), "{shown:?}");
    }
}
