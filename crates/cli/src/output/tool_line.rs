//! What a tool line shows of a call: its arguments in short (`file_read notes/plan.md`),
//! the first line of a failure without the schema the model is sent, and a short diff
//! of what `file_write` and `file_edit` change.

use std::fmt::Write as _;
use std::path::Path;

use oxydra::tools::WorkspacePolicy;

use serde_json::{Map, Value};
use similar::{ChangeTag, TextDiff};

use crate::terminal_text::one_line as escape;

/// The longest argument summary shown, in characters.
const SUMMARY_CHARS: usize = 72;
/// The longest failure shown, in characters.
const ERROR_CHARS: usize = 200;
/// At most this many changed lines of a diff are shown.
const DIFF_LINES: usize = 12;
/// A file larger than this is not read to show a diff.
const DIFF_MAX_BYTES: u64 = 256 * 1024;

/// The argument keys that say best what a call is about, in order of preference.
const KEY_ARGUMENTS: [&str; 6] = ["command", "path", "url", "pattern", "query", "name"];

/// `arguments` (the call's JSON text) in short, safe to show: the value of its most
/// telling argument (`command`, `path`, `url`, …), else the compact JSON, on one line
/// and cut to a few dozen characters. Empty when there is nothing to show.
pub fn summary(arguments: &str) -> String {
    let text = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => object_summary(&map),
        Ok(Value::Null) => String::new(),
        Ok(other) => other.to_string(),
        Err(_) => arguments.trim().to_owned(),
    };
    shorten(&text, SUMMARY_CHARS)
}

fn object_summary(map: &Map<String, Value>) -> String {
    let key = KEY_ARGUMENTS
        .iter()
        .find_map(|key| map.get(*key).and_then(Value::as_str));
    match key {
        Some(value) => value.to_owned(),
        None if map.is_empty() => String::new(),
        None => Value::Object(map.clone()).to_string(),
    }
}

/// `text` on one line (every whitespace run a single space), escaped, and cut to
/// `max` characters with `…`.
fn shorten(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let shown = escape(&one_line);
    if shown.chars().count() <= max {
        shown.into_owned()
    } else {
        let mut cut: String = shown.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

/// A tool failure for its status line: its first line, without the parameter schema
/// that the model is sent after `Expected schema:`, cut to a readable length.
pub fn failure(error: &str) -> String {
    let first = error.lines().next().unwrap_or("");
    let without_schema = first
        .split_once(" Expected schema:")
        .map_or(first, |(before, _)| before);
    shorten(without_schema, ERROR_CHARS)
}

/// The diff a `file_write` or `file_edit` call with `arguments` makes, for showing
/// under its line once it succeeded; `None` for any other tool or a call whose
/// arguments do not say. `workspace` is where `file_write`'s path is read from to
/// compare the old content with the new (nothing is read outside it).
pub fn planned_diff(name: &str, arguments: &str, workspace: Option<&Path>) -> Option<String> {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(arguments) else {
        return None;
    };
    let text = |key: &str| map.get(key).and_then(Value::as_str);
    match name {
        "file_edit" => Some(diff(text("old")?, text("new")?)),
        "file_write" => {
            let new = text("content")?;
            let old = workspace
                .and_then(|root| read_old(root, text("path")?))
                .unwrap_or_default();
            Some(diff(&old, new))
        }
        _ => None,
    }
}

/// The current text of `path` in the workspace `root`, when it stays inside (no symlink
/// leads out: the file tools' own resolving and opening), names a small UTF-8 file, and
/// can be read.
fn read_old(root: &Path, path: &str) -> Option<String> {
    WorkspacePolicy::new(root)
        .ok()?
        .read_text(path, DIFF_MAX_BYTES)
}

/// The changed lines from `old` to `new`, `-`/`+` prefixed and indented, at most
/// [`DIFF_LINES`] of them and then how many more there are.
pub fn diff(old: &str, new: &str) -> String {
    let diff = TextDiff::from_lines(old, new);
    let mut shown = String::new();
    let mut changed = 0_usize;
    for change in diff.iter_all_changes() {
        let sign = match change.tag() {
            ChangeTag::Delete => '-',
            ChangeTag::Insert => '+',
            ChangeTag::Equal => continue,
        };
        changed = changed.saturating_add(1);
        if changed <= DIFF_LINES {
            let line = change.value().trim_end_matches(['\n', '\r']);
            let _ = writeln!(shown, "      {sign} {}", shorten_line(line));
        }
    }
    if changed > DIFF_LINES {
        let more = changed.saturating_sub(DIFF_LINES);
        let _ = writeln!(shown, "      … {more} more changed lines");
    }
    shown
}

/// One line of a diff: escaped and cut, but with its indentation kept.
fn shorten_line(line: &str) -> String {
    let shown = escape(line);
    if shown.chars().count() <= 120 {
        shown.into_owned()
    } else {
        let mut cut: String = shown.chars().take(119).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_telling_argument_is_shown() {
        assert_eq!(summary(r#"{"path":"notes/plan.md"}"#), "notes/plan.md");
        assert_eq!(
            summary(r#"{"path":".","command":"cargo test --all"}"#),
            "cargo test --all"
        );
        assert_eq!(summary(r#"{"limit":3}"#), r#"{"limit":3}"#);
        assert_eq!(summary("{}"), "");
        assert_eq!(summary(""), "");
    }

    #[test]
    fn a_long_or_hostile_argument_is_cut_and_escaped_on_one_line() {
        let long = format!(r#"{{"command":"echo {}"}}"#, "x".repeat(10_000));
        let shown = summary(&long);
        assert_eq!(shown.chars().count(), SUMMARY_CHARS);
        assert!(shown.ends_with('…'));
        let hostile = summary(r#"{"path":"a\nb\u001b[2K\u202etxt.exe"}"#);
        assert!(!hostile.contains('\n'), "{hostile}");
        assert!(!hostile.contains('\u{1b}'), "{hostile}");
        assert!(!hostile.contains('\u{202e}'), "{hostile}");
        assert_eq!(summary("not json\n at all"), "not json at all");
    }

    #[test]
    fn a_failure_line_leaves_the_schema_out() {
        let error = "invalid arguments for tool `file_read`: missing `path`. Expected schema: {\"type\":\"object\",\"properties\":{}}\nmore";
        assert_eq!(
            failure(error),
            "invalid arguments for tool `file_read`: missing `path`."
        );
        assert!(failure(&"e".repeat(5_000)).chars().count() <= ERROR_CHARS);
    }

    #[test]
    fn an_edit_shows_its_changed_lines() {
        let arguments = r#"{"path":"a.rs","old":"fn a() {}\nkeep\n","new":"fn b() {}\nkeep\n"}"#;
        let shown = planned_diff("file_edit", arguments, None).unwrap();
        assert_eq!(shown, "      - fn a() {}\n      + fn b() {}\n");
        assert_eq!(planned_diff("file_read", arguments, None), None);
        assert_eq!(planned_diff("file_edit", "not json", None), None);
    }

    #[test]
    fn a_write_is_compared_with_the_file_it_replaces() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "one\ntwo\n").unwrap();
        let arguments = r#"{"path":"f.txt","content":"one\nthree\n"}"#;
        let shown = planned_diff("file_write", arguments, Some(dir.path())).unwrap();
        assert_eq!(shown, "      - two\n      + three\n");
    }

    #[test]
    fn a_write_outside_the_workspace_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(dir.path().join("secret.txt"), "hidden\n").unwrap();
        for path in ["../secret.txt", "/etc/hostname"] {
            let arguments = format!(r#"{{"path":"{path}","content":"x\n"}}"#);
            let shown = planned_diff("file_write", &arguments, Some(&root)).unwrap();
            assert_eq!(shown, "      + x\n", "{path}");
        }
    }

    #[test]
    fn a_huge_diff_is_cut_short() {
        let new: String = (0..1_000).map(|i| format!("line {i}\n")).collect();
        let shown = diff("", &new);
        assert_eq!(shown.lines().count(), DIFF_LINES + 1);
        assert!(shown.ends_with("… 988 more changed lines\n"), "{shown}");
    }
}

#[cfg(test)]
mod read_old_tests {
    use super::read_old;

    #[test]
    fn the_old_text_is_never_read_through_a_symlink_out_of_the_workspace() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("secret.txt"), "outside").unwrap();
        std::fs::write(ws.path().join("mine.txt"), "inside").unwrap();
        std::os::unix::fs::symlink(out.path(), ws.path().join("dir")).unwrap();
        std::os::unix::fs::symlink(out.path().join("secret.txt"), ws.path().join("file")).unwrap();
        assert_eq!(read_old(ws.path(), "mine.txt").as_deref(), Some("inside"));
        assert_eq!(read_old(ws.path(), "dir/secret.txt"), None);
        assert_eq!(read_old(ws.path(), "file"), None);
    }
}
