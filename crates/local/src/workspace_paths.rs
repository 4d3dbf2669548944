//! [`WorkspacePaths`]: the workspace's paths as the argument choices of a small local
//! model's file tools (set by [`LocalProvider::with_workspace`](crate::LocalProvider::with_workspace)):
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

use oxydra_provider::ToolChoice;
use oxydra_types::{Message, MessageRole};

use crate::choices::{ArgumentChoice, ArgumentChoices};

/// The tool that reads a file (a built-in tool of `oxydra-tools`).
pub const READ_TOOL: &str = "file_read";

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
            choices.push(ArgumentChoice::new(READ_TOOL, "path", files));
        }
        choices.push(ArgumentChoice::new("file_search", "path", both));
        choices.extend(write_choice(&self.root, messages));
        choices
    }
}

/// The tool choice of a run in `root` opening with `messages`: when the last user
/// message names files of the workspace that exist, [`READ_TOOL`] (their content is
/// what the message is about, and the grammar holds the path to them); when it names
/// only directories that exist, any call (the grammar holds each file tool's path to
/// the workspace's paths); `None` otherwise. Only what exists counts, never a word of
/// the message: a greeting, a question the model can answer itself or a file not
/// written yet is not made into a call.
pub(crate) fn opening_choice(root: &Path, messages: &[Message]) -> Option<ToolChoice> {
    let asked = messages
        .iter()
        .rev()
        .find(|message| message.role == MessageRole::User)?;
    let (files, dirs) = named_paths(root, [asked]);
    if !files.is_empty() {
        Some(ToolChoice::Tool(READ_TOOL.to_owned()))
    } else if !dirs.is_empty() {
        Some(ToolChoice::Required)
    } else {
        None
    }
}

/// The choice of `file_write`'s `path`: the new files the user names
/// ([`named_new_files`]), when there are any; otherwise the path stays free. A file
/// that exists is never offered: a small model asked about a file must not be steered
/// into writing over it.
fn write_choice(root: &Path, messages: &[Message]) -> Option<ArgumentChoice> {
    let asked = messages
        .iter()
        .filter(|message| message.role == MessageRole::User);
    let new = named_new_files(root, asked);
    (!new.is_empty()).then(|| ArgumentChoice::new("file_write", "path", new))
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
        choices.push(ArgumentChoice::new(READ_TOOL, "path", files.clone()));
    }
    if !files.is_empty() || !dirs.is_empty() {
        let both: Vec<String> = dirs.into_iter().chain(files).collect();
        choices.push(ArgumentChoice::new("file_search", "path", both));
    }
    choices.extend(write_choice(root, messages));
    choices
}

/// The words of `text` that may be paths (split at blanks, quotes, brackets and
/// commas; sentence punctuation and `./` and a trailing `/` taken off), in its first
/// [`SCANNED_BYTES`].
fn path_words(text: &str) -> impl Iterator<Item = &str> {
    let end = (0..=text.len().min(SCANNED_BYTES))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    text.get(..end)
        .unwrap_or("")
        .split(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    '`' | '"' | '\'' | ',' | '(' | ')' | '<' | '>' | '[' | ']'
                )
        })
        .map(|word| {
            let word = word.trim_end_matches(['.', ':', ';', '!', '?']);
            word.strip_prefix("./")
                .unwrap_or(word)
                .trim_end_matches('/')
        })
}

/// The files `messages` name that do not exist under `root` yet (sorted, at most
/// [`MAX_FILES`]): relative paths inside the workspace as [`named_paths`] takes them,
/// with no `:` (a URL), whose last part looks like a file's name — a stem and an
/// extension of letters and digits, at least one letter (`greeting.txt`,
/// `notes/todo.md`; not `1.5`, `e.g`) — and whose parent is not a file.
pub(crate) fn named_new_files<'a>(
    root: &Path,
    messages: impl IntoIterator<Item = &'a Message>,
) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for message in messages {
        for word in path_words(message.text()) {
            let Some(path) = safe_relative(word).filter(|_| !word.contains(':')) else {
                continue;
            };
            if !looks_like_file_name(path) || std::fs::symlink_metadata(root.join(path)).is_ok() {
                continue;
            }
            let parent_is_file = path
                .parent()
                .filter(|parent| !parent.as_os_str().is_empty())
                .and_then(|parent| std::fs::symlink_metadata(root.join(parent)).ok())
                .is_some_and(|meta| !meta.is_dir());
            if !parent_is_file && !files.iter().any(|known| known == word) {
                files.push(word.to_owned());
            }
        }
    }
    files.sort();
    files.truncate(MAX_FILES);
    files
}

/// Whether the last part of `path` is a stem and an extension of ASCII letters and
/// digits (at least one letter, at most 10), the two not both a single character.
fn looks_like_file_name(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|name| name.to_str()) else {
        return false;
    };
    let Some((stem, extension)) = name.rsplit_once('.') else {
        return false;
    };
    !stem.is_empty()
        && (1..=10).contains(&extension.len())
        && extension.chars().all(|c| c.is_ascii_alphanumeric())
        && extension.chars().any(|c| c.is_ascii_alphabetic())
        && (stem.chars().count() > 1 || extension.len() > 1)
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
        for word in path_words(message.text()) {
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
    use oxydra_types::CallId;

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
    fn a_new_file_the_user_names_is_the_write_choice() {
        let dir = workspace(&["README.md", "notes/plan.md"]);
        let write = |text: &str| {
            WorkspacePaths::new(dir.path())
                .choices(&[Message::user(text)])
                .into_iter()
                .find(|c| c.tool == "file_write")
                .map(|c| c.values)
        };
        assert_eq!(
            write("Create a file named greeting.txt that says: hello").unwrap(),
            ["greeting.txt"]
        );
        assert_eq!(
            write("Write `notes/todo.md` and ./out/report.v2.json, then greeting.txt.").unwrap(),
            ["greeting.txt", "notes/todo.md", "out/report.v2.json"]
        );
        // Files that exist, paths out of the workspace, under a file, hidden, URLs and
        // words that only look like names are never write choices.
        for text in [
            "Write over README.md and notes/plan.md",
            "Create ../up.txt, /tmp/abs.txt, README.md/inner.txt and .hidden.txt",
            "Save https://example.com/page.html",
            "Make it 1.5 times bigger, e.g. now",
            "Write a poem",
        ] {
            assert_eq!(write(text), None, "{text}");
        }
        // Only what the user says counts, not a tool's output.
        let listed = [
            Message::user("What is here?"),
            Message::tool_result(CallId::from("c1"), "file_list", "draft.txt"),
        ];
        let choices = WorkspacePaths::new(dir.path()).choices(&listed);
        assert!(
            choices.iter().all(|c| c.tool != "file_write"),
            "{choices:?}"
        );
    }

    #[test]
    fn a_run_opens_with_a_call_only_when_the_prompt_names_a_path_that_exists() {
        let dir = workspace(&["notes/plan.md", "config/server.toml"]);
        let first = |text: &str| opening_choice(dir.path(), &[Message::user(text)]);
        let read = Some(ToolChoice::Tool(READ_TOOL.into()));
        for text in [
            "What colour, according to notes/plan.md?",
            "Sur quel port écoute le serveur de config/server.toml ?",
            "`./notes/plan.md`: don't change it, just tell me what it says",
        ] {
            assert_eq!(first(text), read, "{text}");
        }
        for text in [
            "Which files are in notes?",
            "Welche Datei in config erwähnt 8471?",
        ] {
            assert_eq!(first(text), Some(ToolChoice::Required), "{text}");
        }
        for text in [
            "hello",
            "Where should I store report.pdf?",
            "Create greeting.txt that says hi",
            "Read ../notes/plan.md or /etc/passwd",
            "Bonjour ! Comment ça va ?",
        ] {
            assert_eq!(first(text), None, "{text}");
        }
        // The last user message counts, not a listing a tool returned.
        let listed = [
            Message::user("hello"),
            Message::tool_result(CallId::from("c1"), "file_list", "notes/plan.md"),
        ];
        assert_eq!(opening_choice(dir.path(), &listed), None);
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
