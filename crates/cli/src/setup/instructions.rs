//! Project instructions: the `AGENTS.md` files of the workspace and of its parent
//! directories up to the repository root (the nearest directory upwards holding a
//! `.git`; without one, only the workspace's own), read into the system prompt
//! outermost first, innermost last, within [`MAX_BYTES`] in all.
//!
//! They are workspace text, not the operator's: each file is one delimited block of
//! its own (so a provenance can be attached to it), scrubbed like any text going to the
//! provider, and a file that is a symbolic link leading outside the repository (or the
//! workspace, without one) is refused. What is cut or refused is said.

use std::io::Read as _;
use std::path::Path;

use oxydra::scrubbing::Scrubber;

/// The file read in each directory.
pub const FILE_NAME: &str = "AGENTS.md";

/// The most bytes of instructions read, all files together.
pub const MAX_BYTES: usize = 32 * 1024;

/// What was read, to add to the system prompt and to name to the person.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ProjectInstructions {
    /// The files read, outermost first.
    pub files: Vec<ReadFile>,
    /// What a person should know: files refused, cut or left out, in words.
    pub notes: Vec<String>,
}

/// One file read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadFile {
    /// Its path as shown: relative to the repository root (or the workspace).
    pub shown: String,
    /// Its text, scrubbed, cut to what the cap left.
    pub text: String,
    /// How many bytes of it were cut by the cap.
    pub cut_bytes: usize,
}

impl ProjectInstructions {
    /// Whether nothing was read.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The block appended to the system prompt: a short heading saying what it is, then
    /// each file in a `<project_instructions path="…">` element of its own.
    pub fn prompt_block(&self) -> String {
        let mut block = String::from(
            "Project instructions: the following comes from AGENTS.md files in the user's \
             workspace (workspace text, outermost directory first). Follow them where they \
             do not conflict with the instructions above.",
        );
        for file in &self.files {
            block.push_str("\n\n<project_instructions path=\"");
            block.push_str(&file.shown.replace('"', "'"));
            block.push_str("\">\n");
            block.push_str(file.text.trim_end());
            if file.cut_bytes > 0 {
                block.push_str(&format!(
                    "\n[… {} bytes cut: project instructions are capped at {MAX_BYTES} bytes]",
                    file.cut_bytes
                ));
            }
            block.push_str("\n</project_instructions>");
        }
        block
    }

    /// The line on stderr naming what was read, e.g.
    /// `project instructions: AGENTS.md, crates/cli/AGENTS.md (1.2 KiB)`; `None` when
    /// nothing was.
    pub fn summary_line(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let names: Vec<String> = self
            .files
            .iter()
            .map(|file| crate::terminal_text::one_line(&file.shown).into_owned())
            .collect();
        let bytes: usize = self.files.iter().map(|file| file.text.len()).sum();
        let cut: usize = self.files.iter().map(|file| file.cut_bytes).sum();
        let size = if bytes >= 1024 {
            format!("{:.1} KiB", bytes as f64 / 1024.0)
        } else {
            format!("{bytes} bytes")
        };
        let cut = if cut > 0 {
            format!(", {cut} bytes cut at the {} KiB cap", MAX_BYTES / 1024)
        } else {
            String::new()
        };
        Some(format!(
            "project instructions: {} ({size}{cut}; --no-project-instructions leaves them out)",
            names.join(", ")
        ))
    }
}

/// Reads the instructions of `workspace` (an absolute, canonical directory), scrubbing
/// them with `scrubber`. Blocking: call it off the async threads.
pub fn load(workspace: &Path, scrubber: &Scrubber) -> ProjectInstructions {
    load_capped(workspace, scrubber, MAX_BYTES)
}

fn load_capped(workspace: &Path, scrubber: &Scrubber, cap: usize) -> ProjectInstructions {
    let root = oxydra::tools::work_tree_top(workspace).unwrap_or_else(|| workspace.to_path_buf());
    let mut dirs: Vec<&Path> = workspace
        .ancestors()
        .take_while(|dir| dir.starts_with(&root))
        .collect();
    dirs.reverse();
    let mut found = ProjectInstructions::default();
    let mut left = cap;
    for dir in dirs {
        let path = dir.join(FILE_NAME);
        let shown = shown_path(&path, &root);
        match read_one(&path, &root, left) {
            Ok(None) => {}
            Ok(Some((bytes, total))) => {
                let cut_bytes = total.saturating_sub(bytes.len());
                let text = match String::from_utf8(bytes) {
                    Ok(text) => text,
                    Err(error) if cut_bytes > 0 && error.utf8_error().error_len().is_none() => {
                        // The cap fell inside a character: keep the whole ones before it.
                        let valid = error.utf8_error().valid_up_to();
                        let mut bytes = error.into_bytes();
                        bytes.truncate(valid);
                        String::from_utf8(bytes).unwrap_or_default()
                    }
                    Err(_) => {
                        found
                            .notes
                            .push(format!("{shown} is not UTF-8 text; it was not read"));
                        continue;
                    }
                };
                // What a character cut at the cap left unread is still there for the next.
                left = left.saturating_sub(text.len());
                let cut_bytes = total.saturating_sub(text.len());
                if cut_bytes > 0 {
                    found.notes.push(format!(
                        "{shown}: {cut_bytes} of its {total} bytes were cut (project \
                         instructions are capped at {} KiB in all)",
                        cap / 1024
                    ));
                }
                let text = scrubber.scrub(&text).into_owned();
                found.files.push(ReadFile {
                    shown,
                    text,
                    cut_bytes,
                });
            }
            Err(why) => found.notes.push(format!("{shown} was not read: {why}")),
        }
    }
    found
}

fn shown_path(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// Reads at most `left` bytes of `path`: `None` when there is no such file, else the
/// bytes and the file's whole size. A link that leads outside `root` and anything but a
/// regular file are refused with the reason.
fn read_one(path: &Path, root: &Path, left: usize) -> Result<Option<(Vec<u8>, usize)>, String> {
    let Ok(link) = std::fs::symlink_metadata(path) else {
        return Ok(None);
    };
    let real = path
        .canonicalize()
        .map_err(|error| format!("it cannot be resolved ({error})"))?;
    if link.file_type().is_symlink() && !real.starts_with(root) {
        return Err(format!(
            "it is a link to {}, outside {}",
            real.display(),
            root.display()
        ));
    }
    let meta = std::fs::metadata(&real).map_err(|error| error.to_string())?;
    if !meta.is_file() {
        return Err("it is not a regular file".to_owned());
    }
    let total = usize::try_from(meta.len()).unwrap_or(usize::MAX);
    let file = std::fs::File::open(&real).map_err(|error| error.to_string())?;
    let mut bytes = Vec::with_capacity(total.min(left));
    file.take(u64::try_from(left).unwrap_or(u64::MAX))
        .read_to_end(&mut bytes)
        .map_err(|error| error.to_string())?;
    let total = total.max(bytes.len());
    Ok(Some((bytes, total)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &[u8]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn repo() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        (dir, root)
    }

    #[test]
    fn reads_from_the_repository_root_down_to_the_workspace_outermost_first() {
        let (dir, root) = repo();
        write(&dir.path().join("AGENTS.md"), b"above the repository");
        write(&root.join("AGENTS.md"), b"root rules");
        write(&root.join("crates/AGENTS.md"), b"crate rules");
        let workspace = root.join("crates/cli");
        std::fs::create_dir_all(&workspace).unwrap();
        write(&workspace.join("AGENTS.md"), b"cli rules");
        let found = load(&workspace, &Scrubber::new());
        let shown: Vec<&str> = found.files.iter().map(|f| f.shown.as_str()).collect();
        assert_eq!(
            shown,
            ["AGENTS.md", "crates/AGENTS.md", "crates/cli/AGENTS.md"]
        );
        let block = found.prompt_block();
        let root_at = block.find("root rules").unwrap();
        let cli_at = block.find("cli rules").unwrap();
        assert!(root_at < cli_at, "{block}");
        assert!(!block.contains("above the repository"));
        assert!(block.contains("<project_instructions path=\"crates/cli/AGENTS.md\">"));
        assert!(found.notes.is_empty(), "{:?}", found.notes);
        let line = found.summary_line().unwrap();
        assert!(
            line.contains("AGENTS.md, crates/AGENTS.md, crates/cli/AGENTS.md"),
            "{line}"
        );
    }

    #[test]
    fn without_a_repository_only_the_workspace_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        write(&base.join("AGENTS.md"), b"parent");
        let workspace = base.join("ws");
        write(&workspace.join("AGENTS.md"), b"own");
        let found = load(&workspace, &Scrubber::new());
        assert_eq!(found.files.len(), 1);
        assert_eq!(found.files[0].text, "own");
        assert_eq!(load(&base.join("ws"), &Scrubber::new()).files.len(), 1);
        let empty = tempfile::tempdir().unwrap();
        let none = load(&empty.path().canonicalize().unwrap(), &Scrubber::new());
        assert!(none.is_empty());
        assert_eq!(none.summary_line(), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_leading_outside_the_repository_is_refused_and_one_inside_is_read() {
        let (dir, root) = repo();
        let outside = dir.path().canonicalize().unwrap().join("secret.txt");
        write(&outside, b"outside text");
        std::os::unix::fs::symlink(&outside, root.join("AGENTS.md")).unwrap();
        let sub = root.join("sub");
        write(&root.join("docs/agents.txt"), b"inside text");
        std::fs::create_dir_all(&sub).unwrap();
        std::os::unix::fs::symlink(root.join("docs/agents.txt"), sub.join("AGENTS.md")).unwrap();
        let found = load(&sub, &Scrubber::new());
        assert_eq!(found.files.len(), 1);
        assert_eq!(found.files[0].text, "inside text");
        assert!(!found.prompt_block().contains("outside text"));
        assert_eq!(found.notes.len(), 1);
        assert!(found.notes[0].contains("outside"), "{:?}", found.notes);
    }

    #[test]
    fn the_cap_cuts_at_a_character_and_says_so_and_later_files_get_what_is_left() {
        let (_dir, root) = repo();
        write(&root.join("AGENTS.md"), "é".repeat(40).as_bytes());
        let workspace = root.join("ws");
        write(&workspace.join("AGENTS.md"), b"inner");
        let found = load_capped(&workspace, &Scrubber::new(), 33);
        assert_eq!(found.files[0].text, "é".repeat(16));
        assert_eq!(found.files[0].cut_bytes, 48);
        assert!(found.prompt_block().contains("48 bytes cut"));
        // One byte was left for the inner file.
        assert_eq!(found.files[1].text, "i");
        assert_eq!(found.notes.len(), 2, "{:?}", found.notes);
        assert!(found.summary_line().unwrap().contains("bytes cut"));
    }

    #[test]
    fn a_huge_file_is_read_only_up_to_the_cap() {
        let (_dir, root) = repo();
        write(&root.join("AGENTS.md"), &vec![b'a'; 5 * MAX_BYTES]);
        let found = load(&root, &Scrubber::new());
        assert_eq!(found.files[0].text.len(), MAX_BYTES);
        assert_eq!(found.files[0].cut_bytes, 4 * MAX_BYTES);
    }

    #[test]
    fn non_utf8_text_and_directories_are_named_not_read() {
        let (_dir, root) = repo();
        write(&root.join("AGENTS.md"), &[0x66, 0xff, 0xfe, 0x66]);
        std::fs::create_dir_all(root.join("ws/AGENTS.md")).unwrap();
        let found = load(&root.join("ws"), &Scrubber::new());
        assert!(found.is_empty());
        assert_eq!(found.notes.len(), 2, "{:?}", found.notes);
        assert!(found.notes[0].contains("not UTF-8"));
        assert!(found.notes[1].contains("not a regular file"));
    }

    #[test]
    fn secrets_in_the_instructions_are_scrubbed() {
        let (_dir, root) = repo();
        let key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd";
        write(
            &root.join("AGENTS.md"),
            format!("deploy with OPENAI_API_KEY={key}").as_bytes(),
        );
        let found = load(&root, &Scrubber::new());
        assert!(!found.prompt_block().contains(key));
        assert!(found.files[0].text.contains("deploy with"));
    }
}
