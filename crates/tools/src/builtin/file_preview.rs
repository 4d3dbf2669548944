//! The previews of `file_write` and `file_edit` ([`CallPreview::FileChange`]): a
//! unified diff from the file's current text, read as the file tools read (inside the
//! workspace, no symlink followed out), with the cases a person must know about said
//! in the note: a new file, a file too large or not text, a path outside the
//! workspace, an edit whose `old` text does not occur exactly once, a diff cut short.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use similar::TextDiff;

use crate::beneath::WorkspaceDir;
use crate::call_preview::{CallPreview, PREVIEW_DIFF_LINES, cap_text};
use crate::workspace_policy::WorkspacePolicy;

/// A file larger than this is not read to compare (nor is new content this large).
pub const PREVIEW_MAX_FILE_BYTES: u64 = 256 * 1024;
/// The longest a diff may take to compute; past it the diff is coarser, not wrong.
const DIFF_TIMEOUT: Duration = Duration::from_millis(250);

/// The file a change applies to, as it is now.
enum Current {
    /// No file there yet.
    Missing,
    /// Its text.
    Text(String),
    /// Why it cannot be compared (too large, not text, not a file, unreadable,
    /// outside the workspace).
    Unusable(String),
}

/// What `file_write` of `content` to `path` (in the workspace `root`) will change.
pub fn file_write(root: &Path, path: &str, content: &str) -> CallPreview {
    let change = |diff: String, note: Option<String>| CallPreview::FileChange {
        path: path.to_owned(),
        diff,
        note,
    };
    if content.len() as u64 > PREVIEW_MAX_FILE_BYTES {
        return change(
            String::new(),
            Some(format!(
                "writes {} bytes, too many to show a diff",
                content.len()
            )),
        );
    }
    match current(root, path) {
        Current::Missing => {
            let (diff, cut) = unified(path, "", content);
            change(diff, Some(joined("a new file", cut)))
        }
        Current::Text(old) => {
            let (diff, cut) = unified(path, &old, content);
            let note = match (diff.is_empty(), cut) {
                (true, _) => Some("the file already holds this text".to_owned()),
                (false, cut) => cut,
            };
            change(diff, note)
        }
        Current::Unusable(why) => change(
            String::new(),
            Some(format!(
                "{why}; the write replaces it with {} bytes",
                content.len()
            )),
        ),
    }
}

/// What `file_edit` of `old` to `new` in `path` (in the workspace `root`) will change.
pub fn file_edit(root: &Path, path: &str, old: &str, new: &str) -> CallPreview {
    let change = |diff: String, note: Option<String>| CallPreview::FileChange {
        path: path.to_owned(),
        diff,
        note,
    };
    // What the edit replaces, as given, for when the file cannot be compared.
    let as_given = |why: String| {
        let (diff, cut) = unified(path, old, new);
        change(
            diff,
            Some(joined(&format!("{why}; the replacement as given"), cut)),
        )
    };
    if old.is_empty() {
        return change(
            String::new(),
            Some("`old` is empty: the edit will fail".to_owned()),
        );
    }
    match current(root, path) {
        Current::Missing => as_given("the file does not exist: the edit will fail".to_owned()),
        Current::Unusable(why) => as_given(why),
        Current::Text(text) => match text.matches(old).count() {
            1 => {
                let edited = text.replacen(old, new, 1);
                let (diff, cut) = unified(path, &text, &edited);
                change(diff, cut)
            }
            count => as_given(format!(
                "`old` occurs {count} times in the file, not once: the edit will fail"
            )),
        },
    }
}

/// `first`, and `then` after it when there is one.
fn joined(first: &str, then: Option<String>) -> String {
    match then {
        Some(then) => format!("{first}; {then}"),
        None => first.to_owned(),
    }
}

/// The file at `path` in the workspace `root`, read as the file tools read it.
fn current(root: &Path, path: &str) -> Current {
    let policy = match WorkspacePolicy::new(root) {
        Ok(policy) => policy,
        Err(error) => return Current::Unusable(format!("the workspace cannot be opened: {error}")),
    };
    let resolved = match policy.resolve(path) {
        Ok(resolved) => resolved,
        Err(error) => {
            return Current::Unusable(format!("the call will be refused: {error}"));
        }
    };
    let opened =
        WorkspaceDir::open(policy.root()).and_then(|dir| dir.open_read(&resolved.absolute));
    let file = match opened {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Current::Missing,
        Err(error) => return Current::Unusable(format!("the file cannot be read ({error})")),
    };
    let size = match file.metadata() {
        Ok(meta) if !meta.is_file() => {
            return Current::Unusable("it is not a regular file".to_owned());
        }
        Ok(meta) => meta.len(),
        Err(error) => return Current::Unusable(format!("the file cannot be read ({error})")),
    };
    if size > PREVIEW_MAX_FILE_BYTES {
        return Current::Unusable(format!("the file holds {size} bytes, too many to compare"));
    }
    let mut bytes = Vec::new();
    if let Err(error) = file.take(PREVIEW_MAX_FILE_BYTES).read_to_end(&mut bytes) {
        return Current::Unusable(format!("the file cannot be read ({error})"));
    }
    match String::from_utf8(bytes) {
        Ok(text) => Current::Text(text),
        Err(_) => Current::Unusable("the file is not UTF-8 text".to_owned()),
    }
}

/// The unified diff from `old` to `new` (3 lines of context, headed `a/PATH` and
/// `b/PATH`), empty when they are equal, cut to [`PREVIEW_DIFF_LINES`] lines; and a
/// note when it was cut.
fn unified(path: &str, old: &str, new: &str) -> (String, Option<String>) {
    if old == new {
        return (String::new(), None);
    }
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    let total = text.lines().count();
    if total <= PREVIEW_DIFF_LINES {
        return (cap_text(text), None);
    }
    let mut kept: String = text
        .lines()
        .take(PREVIEW_DIFF_LINES)
        .flat_map(|line| [line, "\n"])
        .collect();
    kept = cap_text(kept);
    let more = total.saturating_sub(PREVIEW_DIFF_LINES);
    (
        kept,
        Some(format!("the diff is cut here: {more} more lines")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    fn parts(preview: CallPreview) -> (String, Option<String>) {
        match preview {
            CallPreview::FileChange { diff, note, .. } => (diff, note),
            other => panic!("not a file change: {other:?}"),
        }
    }

    #[test]
    fn a_write_is_a_diff_against_the_current_file() {
        let dir = workspace();
        std::fs::write(dir.path().join("f.txt"), "one\ntwo\nthree\n").unwrap();
        let (diff, note) = parts(file_write(dir.path(), "f.txt", "one\n2\nthree\n"));
        assert_eq!(
            diff,
            "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
        );
        assert_eq!(note, None);
    }

    #[test]
    fn a_new_file_and_an_unchanged_one_say_so() {
        let dir = workspace();
        let (diff, note) = parts(file_write(dir.path(), "new/n.txt", "hello\n"));
        assert!(diff.contains("+hello"), "{diff}");
        assert_eq!(note.as_deref(), Some("a new file"));
        std::fs::write(dir.path().join("same.txt"), "x\n").unwrap();
        let (diff, note) = parts(file_write(dir.path(), "same.txt", "x\n"));
        assert_eq!(diff, "");
        assert_eq!(note.as_deref(), Some("the file already holds this text"));
    }

    #[test]
    fn an_edit_shows_the_file_after_it() {
        let dir = workspace();
        std::fs::write(dir.path().join("a.rs"), "fn a() {}\nfn b() {}\n").unwrap();
        let (diff, note) = parts(file_edit(dir.path(), "a.rs", "fn b() {}", "fn c() {}"));
        assert!(diff.contains("-fn b() {}\n+fn c() {}\n"), "{diff}");
        assert!(diff.contains(" fn a() {}\n"), "{diff}");
        assert_eq!(note, None);
    }

    #[test]
    fn an_edit_that_will_fail_says_why() {
        let dir = workspace();
        std::fs::write(dir.path().join("a.txt"), "x x\n").unwrap();
        let (diff, note) = parts(file_edit(dir.path(), "a.txt", "x", "y"));
        assert!(note.unwrap().contains("occurs 2 times"));
        assert!(diff.contains("-x") && diff.contains("+y"), "{diff}");
        let (_, note) = parts(file_edit(dir.path(), "missing.txt", "x", "y"));
        assert!(note.unwrap().contains("does not exist"));
        let (_, note) = parts(file_edit(dir.path(), "a.txt", "", "y"));
        assert!(note.unwrap().contains("empty"));
    }

    #[test]
    fn a_path_outside_the_workspace_is_not_read() {
        let dir = workspace();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "the secret\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        let absolute = outside.path().join("secret.txt");
        for path in [
            "../secret.txt",
            "out/secret.txt",
            absolute.to_str().unwrap(),
        ] {
            let (diff, note) = parts(file_write(dir.path(), path, "new\n"));
            assert!(!diff.contains("the secret"), "{path}: {diff}");
            assert_eq!(diff, "", "{path}");
            assert!(note.unwrap().contains("will be refused"), "{path}");
            let (diff, _) = parts(file_edit(dir.path(), path, "the secret", "x"));
            assert!(!diff.contains(" the secret"), "{path}: {diff}");
        }
    }

    #[test]
    fn a_huge_file_or_content_is_not_diffed_and_a_long_diff_is_cut() {
        let dir = workspace();
        let big = "line\n".repeat(100_000);
        std::fs::write(dir.path().join("big.txt"), &big).unwrap();
        let (diff, note) = parts(file_write(dir.path(), "big.txt", "small\n"));
        assert_eq!(diff, "");
        assert!(note.unwrap().contains("too many to compare"));
        let (diff, note) = parts(file_write(dir.path(), "other.txt", &big));
        assert_eq!(diff, "");
        assert!(note.unwrap().contains("too many to show a diff"));
        let many: String = (0..1_000).map(|i| format!("{i}\n")).collect();
        let (diff, note) = parts(file_write(dir.path(), "many.txt", &many));
        assert_eq!(diff.lines().count(), PREVIEW_DIFF_LINES);
        let note = note.unwrap();
        assert!(
            note.contains("a new file") && note.contains("cut here"),
            "{note}"
        );
    }

    #[test]
    fn escape_sequences_in_the_file_come_through_as_data() {
        // The preview keeps the bytes: showing them safely is the display's job (the
        // terminal escapes them); the test pins that nothing is dropped silently.
        let dir = workspace();
        std::fs::write(dir.path().join("e.txt"), "ok\n\u{1b}]0;owned\u{7}\n").unwrap();
        let (diff, _) = parts(file_write(dir.path(), "e.txt", "ok\n"));
        assert!(diff.contains("-\u{1b}]0;owned\u{7}"), "{diff:?}");
        let (_, note) = parts(file_write(dir.path(), "bin", "x"));
        assert_eq!(note.as_deref(), Some("a new file"));
        std::fs::write(dir.path().join("bin"), b"\xff\xfe").unwrap();
        let (_, note) = parts(file_write(dir.path(), "bin", "x"));
        assert!(note.unwrap().contains("not UTF-8"));
    }
}
