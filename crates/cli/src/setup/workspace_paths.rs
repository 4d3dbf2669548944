//! The workspace's paths as the argument choices of a small local model's file tools:
//! `file_read` may name one of its files, `file_list` one of its directories,
//! `file_search` either. Listed anew for each request, so a file written in one turn
//! can be read in the next.
//!
//! A small workspace is listed whole. Past [`MAX_FILES`] files or [`MAX_DIRS`]
//! directories a listing would crowd a small context and leave paths out, so only the
//! paths the conversation names (the user's words, a listing a tool returned) that
//! exist in the workspace are offered, and a tool whose conversation names none of its
//! kind keeps its argument free. Hidden entries (`.git`, `.oxydra`) and symlinks are
//! never offered, and the walk stops [`MAX_DEPTH`] directories down.

use std::path::{Component, Path, PathBuf};

use oxydra::local::{ArgumentChoice, ArgumentChoices};
use oxydra::types::{Message, MessageRole};

/// The most files a listing offers.
pub const MAX_FILES: usize = 64;
/// The most directories a listing offers (the root, `.`, among them).
pub const MAX_DIRS: usize = 32;
/// How deep the walk goes below the root.
pub const MAX_DEPTH: usize = 4;
/// How much of each message is read for the paths it names.
const SCANNED_BYTES: usize = 64 * 1024;

/// The paths of one workspace, listed on each request.
#[derive(Debug, Clone)]
pub struct WorkspacePaths {
    root: PathBuf,
}

impl WorkspacePaths {
    /// The paths under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }
}

impl ArgumentChoices for WorkspacePaths {
    fn choices(&self, messages: &[Message]) -> Vec<ArgumentChoice> {
        let Some((files, dirs)) = listing(&self.root) else {
            return named_choices(&self.root, messages);
        };
        // The paths the user names narrow the listing: offered the one file a
        // question names, a small model reads that file rather than its neighbour.
        let asked = messages
            .iter()
            .filter(|message| message.role == MessageRole::User);
        let (named_files, named_dirs) = named_paths(&self.root, asked);
        let files = if named_files.is_empty() {
            files
        } else {
            named_files
        };
        let dirs = if named_dirs.is_empty() {
            dirs
        } else {
            named_dirs
        };
        let both: Vec<String> = dirs.iter().chain(&files).cloned().collect();
        let mut choices = vec![ArgumentChoice::new("file_list", "path", dirs)];
        if !files.is_empty() {
            choices.push(ArgumentChoice::new("file_read", "path", files));
        }
        choices.push(ArgumentChoice::new("file_search", "path", both));
        choices
    }
}

/// The choices of a workspace too large to list: the files and directories the
/// conversation names that exist (each kind only where at least one is named).
fn named_choices(root: &Path, messages: &[Message]) -> Vec<ArgumentChoice> {
    let (files, dirs) = named_paths(root, messages.iter());
    let mut choices = Vec::new();
    if !dirs.is_empty() {
        choices.push(ArgumentChoice::new("file_list", "path", dirs.clone()));
    }
    if !files.is_empty() {
        choices.push(ArgumentChoice::new("file_read", "path", files.clone()));
    }
    if !files.is_empty() || !dirs.is_empty() {
        let both: Vec<String> = dirs.into_iter().chain(files).collect();
        choices.push(ArgumentChoice::new("file_search", "path", both));
    }
    choices
}

/// The relative paths `messages` name that are files or directories under `root`
/// (no absolute path, no `..`, nothing hidden, no symlink), sorted, at most
/// [`MAX_FILES`] files and [`MAX_DIRS`] directories.
pub fn named_paths<'a>(
    root: &Path,
    messages: impl IntoIterator<Item = &'a Message>,
) -> (Vec<String>, Vec<String>) {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    for message in messages {
        let text = message.text();
        let end = (0..=text.len().min(SCANNED_BYTES))
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        for word in text.get(..end).unwrap_or("").split(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    '`' | '"' | '\'' | ',' | '(' | ')' | '<' | '>' | '[' | ']'
                )
        }) {
            let word = word.trim_end_matches(['.', ':', ';', '!', '?']);
            let word = word
                .strip_prefix("./")
                .unwrap_or(word)
                .trim_end_matches('/');
            let Some(path) = safe_relative(word) else {
                continue;
            };
            let Ok(meta) = std::fs::symlink_metadata(root.join(path)) else {
                continue;
            };
            let list = if meta.is_file() {
                &mut files
            } else if meta.is_dir() {
                &mut dirs
            } else {
                continue;
            };
            if !list.iter().any(|known| known == word) {
                list.push(word.to_owned());
            }
        }
    }
    files.sort();
    dirs.sort();
    files.truncate(MAX_FILES);
    dirs.truncate(MAX_DIRS);
    (files, dirs)
}

/// `word` as a path inside the workspace: relative, plain components only, none
/// hidden, and not empty.
fn safe_relative(word: &str) -> Option<&Path> {
    let path = Path::new(word);
    let plain = !word.is_empty()
        && path.components().all(|part| match part {
            Component::Normal(name) => !name.to_str().is_some_and(|n| n.starts_with('.')),
            _ => false,
        });
    plain.then_some(path)
}

/// The files and directories under `root` (relative, `/`-separated, sorted; the
/// directories start with `.`), or `None` when there are more than the caps allow or
/// the root cannot be read.
pub fn listing(root: &Path) -> Option<(Vec<String>, Vec<String>)> {
    let mut files = Vec::new();
    let mut dirs = vec![".".to_owned()];
    let mut pending = vec![(root.to_path_buf(), String::new(), 0usize)];
    while let Some((dir, prefix, depth)) = pending.pop() {
        let entries = std::fs::read_dir(&dir).ok()?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with('.') {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = format!("{prefix}{name}");
            if kind.is_file() {
                files.push(path);
            } else if kind.is_dir() {
                if depth < MAX_DEPTH {
                    pending.push((entry.path(), format!("{path}/"), depth + 1));
                }
                dirs.push(path);
            }
            if files.len() > MAX_FILES || dirs.len() > MAX_DIRS {
                return None;
            }
        }
    }
    files.sort();
    dirs.sort();
    Some((files, dirs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra::types::CallId;

    fn workspace(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for file in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        dir
    }

    #[test]
    fn files_and_directories_are_listed_relative_and_sorted() {
        let dir = workspace(&["README.md", "notes/plan.md", "a/b/c.txt", ".git/HEAD"]);
        std::os::unix::fs::symlink("/etc", dir.path().join("etc")).unwrap();
        let (files, dirs) = listing(dir.path()).unwrap();
        assert_eq!(files, ["README.md", "a/b/c.txt", "notes/plan.md"]);
        assert_eq!(dirs, [".", "a", "a/b", "notes"]);
    }

    #[test]
    fn each_file_tool_gets_its_kind_of_path() {
        let dir = workspace(&["notes/plan.md"]);
        let choices = WorkspacePaths::new(dir.path()).choices(&[]);
        let of = |tool: &str| {
            choices
                .iter()
                .find(|c| c.tool == tool)
                .map(|c| c.values.clone())
                .unwrap_or_default()
        };
        assert_eq!(of("file_read"), ["notes/plan.md"]);
        assert_eq!(of("file_list"), [".", "notes"]);
        assert_eq!(of("file_search"), [".", "notes", "notes/plan.md"]);
        assert!(of("file_write").is_empty(), "a new file's path stays free");
    }

    #[test]
    fn the_paths_the_user_names_narrow_the_listing() {
        let dir = workspace(&["notes/plan.md", "notes/old.md", "README.md"]);
        let of = |messages: &[Message], tool: &str| {
            WorkspacePaths::new(dir.path())
                .choices(messages)
                .into_iter()
                .find(|c| c.tool == tool)
                .map(|c| c.values)
                .unwrap_or_default()
        };
        let asked = [Message::user("What does notes/plan.md say?")];
        assert_eq!(of(&asked, "file_read"), ["notes/plan.md"]);
        // No directory named: every directory stays on offer.
        assert_eq!(of(&asked, "file_list"), [".", "notes"]);
        // A path named only by a tool's output (or the model) narrows nothing.
        let listed = [
            Message::user("What is here?"),
            Message::tool_result(CallId::from("c1"), "file_list", "notes/plan.md"),
        ];
        assert_eq!(
            of(&listed, "file_read"),
            ["README.md", "notes/old.md", "notes/plan.md"]
        );
        // A named path out of the workspace is no path of it.
        let escaping = [Message::user("Read ../README.md and /etc/passwd")];
        assert_eq!(
            of(&escaping, "file_read"),
            ["README.md", "notes/old.md", "notes/plan.md"]
        );
    }

    #[test]
    fn a_large_or_missing_workspace_leaves_the_paths_free() {
        let names: Vec<String> = (0..=MAX_FILES).map(|i| format!("f{i}.txt")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let dir = workspace(&names);
        assert!(listing(dir.path()).is_none());
        assert!(WorkspacePaths::new(dir.path()).choices(&[]).is_empty());
        assert!(listing(&dir.path().join("missing")).is_none());
        let empty = workspace(&[]);
        let choices = WorkspacePaths::new(empty.path()).choices(&[]);
        assert!(choices.iter().all(|c| c.tool != "file_read"), "{choices:?}");
    }

    #[test]
    fn a_large_workspace_offers_the_paths_the_conversation_names() {
        let mut names: Vec<String> = (0..=MAX_FILES).map(|i| format!("f{i}.txt")).collect();
        names.push("README.md".into());
        names.push("docs/guide.md".into());
        names.push(".env".into());
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let dir = workspace(&names);
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link.txt")).unwrap();
        let asked = Message::user(
            "Summarise README.md, then `./docs/guide.md`; not /etc/passwd, ../x, .env, \
             link.txt or missing.md. Look in docs/.",
        );
        let (files, dirs) = named_paths(dir.path(), std::slice::from_ref(&asked).iter());
        assert_eq!(files, ["README.md", "docs/guide.md"]);
        assert_eq!(dirs, ["docs"]);
        let choices = WorkspacePaths::new(dir.path()).choices(&[asked]);
        let read = choices.iter().find(|c| c.tool == "file_read").unwrap();
        assert_eq!(read.values, ["README.md", "docs/guide.md"]);
        let silent = WorkspacePaths::new(dir.path()).choices(&[Message::user("Hello")]);
        assert!(silent.is_empty(), "{silent:?}");
    }

    #[test]
    fn the_walk_stops_at_its_depth() {
        let deep = format!("{}/f.txt", ["d"; MAX_DEPTH + 1].join("/"));
        let shallow = format!("{}/f.txt", ["d"; MAX_DEPTH].join("/"));
        let dir = workspace(&[deep.as_str(), shallow.as_str()]);
        let (files, _) = listing(dir.path()).unwrap();
        assert_eq!(files, [shallow]);
    }
}
