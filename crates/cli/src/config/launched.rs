//! The files a configuration makes Oxydra run: the `command`, `args` and `cwd` of each
//! stdio `[[mcp_servers]]` entry, the words of each `[[hooks]]` command and of each
//! deterministic `shell_exec` step,
//! where they name a file or directory that exists. The file tools may not write them
//! (`sh tools/mcp.sh` would otherwise run whatever the model put in `tools/mcp.sh` at the
//! next start), and a trusted project file's record holds their SHA-256, so a change to
//! one untrusts the file.
//!
//! A word is looked up relative to each directory it could be read from: the server's
//! `cwd`, the directory of the configuration file and the current directory. A bare
//! command name (no `/`) is found through `PATH`, not in the workspace, and is skipped.
//! A working directory is protected with what is beneath it, unless it is the
//! configuration's own directory or one above it (that would make the whole project
//! read-only); directories are protected, not hashed.

use std::path::{Path, PathBuf};

use super::FileConfig;
use super::trust::sha256_hex;

/// Files larger than this are protected but not hashed (a model binary is not a script).
const MAX_HASHED_BYTES: u64 = 16 * 1024 * 1024;

/// A path a configuration runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launched {
    /// The path, absolute and canonical.
    pub path: PathBuf,
    /// Whether it is a working directory (protected with what is beneath it).
    pub directory: bool,
}

/// What `config` (read from `config_file`) runs, found from the directories in the
/// module docs.
pub fn launched(config: &FileConfig, config_file: Option<&Path>) -> Vec<Launched> {
    let config_dir = config_file
        .and_then(Path::parent)
        .and_then(|dir| dir.canonicalize().ok());
    let current = std::env::current_dir().ok();
    let bases: Vec<PathBuf> = config_dir.iter().chain(current.iter()).cloned().collect();
    let mut found: Vec<Launched> = Vec::new();
    let mut add = |path: PathBuf, directory: bool| {
        let Ok(path) = path.canonicalize() else {
            return;
        };
        let is_dir = path.is_dir();
        if directory != is_dir {
            return;
        }
        if directory && bases.iter().any(|base| base.starts_with(&path)) {
            return;
        }
        let entry = Launched { path, directory };
        if !found.contains(&entry) {
            found.push(entry);
        }
    };
    for server in &config.mcp_servers {
        let cwds: Vec<PathBuf> = match &server.cwd {
            Some(cwd) => bases.iter().map(|base| base.join(cwd)).collect(),
            None => Vec::new(),
        };
        for cwd in &cwds {
            add(cwd.clone(), true);
        }
        let dirs: Vec<&PathBuf> = cwds.iter().chain(bases.iter()).collect();
        if let Some(command) = server.command.as_deref().filter(|c| c.contains('/')) {
            for dir in &dirs {
                add(dir.join(command), false);
            }
        }
        for arg in &server.args {
            for word in words(arg) {
                for dir in &dirs {
                    add(dir.join(word), false);
                }
            }
        }
    }
    for hook in &config.hooks {
        for word in &hook.command {
            for part in words(word) {
                for dir in &bases {
                    add(dir.join(part), false);
                }
            }
        }
    }
    for agent in &config.agents {
        for step in agent.steps.iter().filter(|step| step.tool == "shell_exec") {
            let mut texts = Vec::new();
            strings(&step.args, &mut texts);
            for word in texts.iter().flat_map(|text| words(text)) {
                for dir in &bases {
                    add(dir.join(word), false);
                }
            }
        }
    }
    found
}

/// The SHA-256 of each launched file under `dir` (the project's directory), by path;
/// `None` for one that cannot be read. Files past [`MAX_HASHED_BYTES`] are left out.
pub fn hashes_under(launched: &[Launched], dir: &Path) -> Vec<(PathBuf, Option<String>)> {
    let Ok(dir) = dir.canonicalize() else {
        return Vec::new();
    };
    launched
        .iter()
        .filter(|entry| !entry.directory && entry.path.starts_with(&dir))
        .filter(|entry| {
            std::fs::metadata(&entry.path).map_or(true, |meta| meta.len() <= MAX_HASHED_BYTES)
        })
        .map(|entry| {
            let hash = std::fs::read(&entry.path)
                .ok()
                .map(|bytes| sha256_hex(&bytes));
            (entry.path.clone(), hash)
        })
        .collect()
}

/// The words of an argument or a shell command that could name a path: split at blanks
/// and shell punctuation, and after a `=` (`--script=tools/x.sh`).
fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || "'\";&|()<>`$".contains(c))
        .flat_map(|word| {
            let value = word.split_once('=').map(|(_, value)| value);
            std::iter::once(word).chain(value)
        })
        .filter(|word| !word.is_empty() && !word.starts_with('-'))
        .collect()
}

/// The SHA-256 of each file in the project of the configuration file `file` (parsed as
/// `config`) that it runs: what a trust record holds.
pub fn launched_hashes(config: &FileConfig, file: &Path) -> Vec<(PathBuf, Option<String>)> {
    let project = file.parent().unwrap_or(Path::new("."));
    hashes_under(&launched(config, Some(file)), project)
}

/// Every string inside `value`.
fn strings<'a>(value: &'a serde_json::Value, out: &mut Vec<&'a str>) {
    match value {
        serde_json::Value::String(text) => out.push(text),
        serde_json::Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
        serde_json::Value::Object(map) => map.values().for_each(|item| strings(item, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_arguments_and_working_directories_that_exist_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("tools/srv")).unwrap();
        std::fs::write(root.join("tools/mcp.sh"), "echo").unwrap();
        std::fs::write(root.join("tools/srv/main.py"), "print()").unwrap();
        std::fs::write(root.join("run.sh"), "echo").unwrap();
        std::fs::write(root.join("step.sh"), "echo").unwrap();
        let text = r#"
[[mcp_servers]]
name = "a"
command = "sh"
args = ["tools/mcp.sh", "--flag", "missing.sh"]

[[mcp_servers]]
name = "b"
command = "./run.sh"
args = ["--main=main.py"]
cwd = "tools/srv"

[[mcp_servers]]
name = "c"
command = "python"
cwd = "."

[[agents]]
name = "d"
type = "deterministic"
[[agents.steps]]
tool = "shell_exec"
args = { command = "sh step.sh && echo {{x}}" }
"#;
        let file = root.join("oxydra.toml");
        let config = crate::config::parse(&file, text).unwrap();
        let found = launched(&config, Some(&file));
        let mut paths: Vec<(String, bool)> = found
            .iter()
            .map(|entry| {
                let rel = entry.path.strip_prefix(&root).unwrap();
                (rel.display().to_string(), entry.directory)
            })
            .collect();
        paths.sort();
        assert_eq!(
            paths,
            [
                ("run.sh".to_owned(), false),
                ("step.sh".to_owned(), false),
                ("tools/mcp.sh".to_owned(), false),
                ("tools/srv".to_owned(), true),
                ("tools/srv/main.py".to_owned(), false),
            ]
        );
        let hashes = hashes_under(&found, &root);
        assert_eq!(hashes.len(), 4, "{hashes:?}");
        assert!(hashes.contains(&(root.join("run.sh"), Some(sha256_hex(b"echo")))));
    }
}
