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
//! read-only); working directories are protected, not hashed.
//!
//! An interpreter loads more than the script it is given: Python a `json.py` beside
//! it, Node its `node_modules`, a shell what it sources. So the directory of each
//! script a hook or an MCP server runs (the program itself when it is a path, and the
//! first argument naming a file, the script an interpreter is given) is protected with
//! what is beneath it and every file in it is hashed with the trust, under the same
//! exception: a script beside the configuration file only has itself protected (keep
//! scripts in a directory of their own).

use std::path::{Path, PathBuf};

use super::trust::sha256_hex;
use crate::FileConfig;

/// Files larger than this are protected but not hashed (a model binary is not a script).
const MAX_HASHED_BYTES: u64 = 16 * 1024 * 1024;

/// A script directory with more files than this cannot be trusted: its hash is
/// recorded as missing, so the configuration stays untrusted (fail closed).
const MAX_HASHED_FILES: usize = 2_000;

/// Directories of a script's directory left out of its hash: the interpreter's own
/// cache, which it rewrites as it runs.
const UNHASHED_DIRS: [&str; 1] = ["__pycache__"];

/// What a launched path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchedKind {
    /// A file a command, argument or step names: protected and hashed.
    File,
    /// A working directory: protected with what is beneath it, not hashed.
    WorkingDir,
    /// The directory of a script a hook or an MCP server runs: protected with what is
    /// beneath it, and every file in it hashed.
    ScriptDir,
}

/// A path a configuration runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launched {
    /// The path, absolute and canonical.
    pub path: PathBuf,
    /// What it is.
    pub kind: LaunchedKind,
}

impl Launched {
    /// Whether it is a directory, protected with what is beneath it.
    pub fn is_directory(&self) -> bool {
        self.kind != LaunchedKind::File
    }
}

/// The directories a relative word of a command is looked up in, in order: the
/// directory of `config_file` (canonical), then the current directory.
pub fn lookup_dirs(config_file: Option<&Path>) -> Vec<PathBuf> {
    let config_dir = config_file
        .and_then(Path::parent)
        .and_then(|dir| dir.canonicalize().ok());
    let current = std::env::current_dir().ok();
    config_dir.into_iter().chain(current).collect()
}

/// What `config` (read from `config_file`) runs, found from the directories in the
/// module docs.
pub fn launched(config: &FileConfig, config_file: Option<&Path>) -> Vec<Launched> {
    let bases = lookup_dirs(config_file);
    let mut found: Vec<Launched> = Vec::new();
    let mut add = |path: PathBuf, kind: LaunchedKind| {
        let Ok(path) = path.canonicalize() else {
            return;
        };
        let directory = kind != LaunchedKind::File;
        if directory != path.is_dir() {
            return;
        }
        if directory && bases.iter().any(|base| base.starts_with(&path)) {
            return;
        }
        let entry = Launched { path, kind };
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
            add(cwd.clone(), LaunchedKind::WorkingDir);
        }
        let dirs: Vec<&PathBuf> = cwds.iter().chain(bases.iter()).collect();
        if let Some(command) = server.command.as_deref().filter(|c| c.contains('/')) {
            for dir in &dirs {
                add(dir.join(command), LaunchedKind::File);
            }
        }
        for arg in &server.args {
            for word in words(arg) {
                for dir in &dirs {
                    add(dir.join(word), LaunchedKind::File);
                }
            }
        }
        let program = server.command.as_deref().unwrap_or_default();
        for script in scripts(program, &server.args, &dirs) {
            add(script, LaunchedKind::ScriptDir);
        }
    }
    for hook in &config.hooks {
        for word in &hook.command {
            for part in words(word) {
                for dir in &bases {
                    add(dir.join(part), LaunchedKind::File);
                }
            }
        }
        if let Some((program, args)) = hook.command.split_first() {
            let dirs: Vec<&PathBuf> = bases.iter().collect();
            for script in scripts(program, args, &dirs) {
                add(script, LaunchedKind::ScriptDir);
            }
        }
    }
    for agent in &config.agents {
        for step in agent.steps.iter().filter(|step| step.tool == "shell_exec") {
            let mut texts = Vec::new();
            strings(&step.args, &mut texts);
            for word in texts.iter().flat_map(|text| words(text)) {
                for dir in &bases {
                    add(dir.join(word), LaunchedKind::File);
                }
            }
        }
    }
    found
}

/// The directories of the scripts a command runs, looked up in `dirs`: the program's
/// when it is a path to a file, and that of the first argument naming a file (the
/// script an interpreter runs).
fn scripts(program: &str, args: &[String], dirs: &[&PathBuf]) -> Vec<PathBuf> {
    let file_in = |word: &str| {
        dirs.iter()
            .map(|dir| dir.join(word))
            .find(|path| path.is_file())
    };
    let program = Some(program)
        .filter(|program| program.contains('/'))
        .and_then(file_in);
    let script = args
        .iter()
        .filter(|arg| !arg.starts_with('-'))
        .find_map(|arg| file_in(arg));
    program
        .into_iter()
        .chain(script)
        .filter_map(|file| file.canonicalize().ok())
        .filter_map(|file| file.parent().map(Path::to_path_buf))
        .collect()
}

/// The SHA-256 of each launched file under `dir` (the project's directory), and of
/// every file in each script directory under it, by path; `None` for one that cannot
/// be read, and for a script directory past [`MAX_HASHED_FILES`]. Files past
/// [`MAX_HASHED_BYTES`] are left out.
pub fn hashes_under(launched: &[Launched], dir: &Path) -> Vec<(PathBuf, Option<String>)> {
    let Ok(dir) = dir.canonicalize() else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = Vec::new();
    let mut too_big: Vec<PathBuf> = Vec::new();
    for entry in launched.iter().filter(|entry| entry.path.starts_with(&dir)) {
        match entry.kind {
            LaunchedKind::File => files.push(entry.path.clone()),
            LaunchedKind::WorkingDir => {}
            LaunchedKind::ScriptDir => {
                if !files_beneath(&entry.path, &mut files) {
                    too_big.push(entry.path.clone());
                }
            }
        }
    }
    files.sort();
    files.dedup();
    files
        .into_iter()
        .filter(|path| std::fs::metadata(path).map_or(true, |meta| meta.len() <= MAX_HASHED_BYTES))
        .map(|path| {
            let hash = std::fs::read(&path).ok().map(|bytes| sha256_hex(&bytes));
            (path, hash)
        })
        .chain(too_big.into_iter().map(|path| (path, None)))
        .collect()
}

/// Adds the regular files beneath `dir` (not following links to directories, leaving
/// out [`UNHASHED_DIRS`]) to `files`; `false` when there are more than
/// [`MAX_HASHED_FILES`] or the directory cannot be read whole.
fn files_beneath(dir: &Path, files: &mut Vec<PathBuf>) -> bool {
    let mut pending = vec![dir.to_path_buf()];
    let mut count = 0_usize;
    while let Some(next) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            return false;
        };
        for entry in entries {
            let Ok(entry) = entry else {
                return false;
            };
            let Ok(kind) = entry.file_type() else {
                return false;
            };
            let path = entry.path();
            if kind.is_dir() {
                let skipped = UNHASHED_DIRS
                    .iter()
                    .any(|name| entry.file_name() == std::ffi::OsStr::new(name));
                if !skipped {
                    pending.push(path);
                }
                continue;
            }
            count += 1;
            if count > MAX_HASHED_FILES {
                return false;
            }
            if kind.is_file() || path.is_file() {
                files.push(path);
            }
        }
    }
    true
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
        let config = crate::parse(&file, text).unwrap();
        let found = launched(&config, Some(&file));
        let mut paths: Vec<(String, bool)> = found
            .iter()
            .map(|entry| {
                let rel = entry.path.strip_prefix(&root).unwrap();
                (rel.display().to_string(), entry.is_directory())
            })
            .collect();
        paths.sort();
        assert_eq!(
            paths,
            [
                ("run.sh".to_owned(), false),
                ("step.sh".to_owned(), false),
                ("tools".to_owned(), true),
                ("tools/mcp.sh".to_owned(), false),
                ("tools/srv".to_owned(), true),
                ("tools/srv/main.py".to_owned(), false),
            ]
        );
        let hashes = hashes_under(&found, &root);
        assert_eq!(hashes.len(), 4, "{hashes:?}");
        assert!(hashes.contains(&(root.join("run.sh"), Some(sha256_hex(b"echo")))));
    }

    #[test]
    fn the_directory_of_a_hooks_script_is_protected_and_hashed_whole() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("hooks/lib/__pycache__")).unwrap();
        std::fs::write(root.join("hooks/guard.py"), "import json").unwrap();
        std::fs::write(root.join("hooks/lib/util.py"), "x = 1").unwrap();
        std::fs::write(root.join("hooks/lib/__pycache__/util.pyc"), "cache").unwrap();
        std::fs::write(root.join("beside.py"), "pass").unwrap();
        let text = r#"
[[hooks]]
event = "before_tool"
command = ["python3", "-u", "hooks/guard.py", "beside.py"]

[[hooks]]
event = "after_tool"
command = ["python3", "beside.py"]
"#;
        let file = root.join("oxydra.toml");
        let config = crate::parse(&file, text).unwrap();
        let found = launched(&config, Some(&file));
        let dirs: Vec<&Path> = found
            .iter()
            .filter(|entry| entry.kind == LaunchedKind::ScriptDir)
            .map(|entry| entry.path.as_path())
            .collect();
        // The script beside the configuration file does not make the project read-only.
        assert_eq!(dirs, [root.join("hooks").as_path()]);
        let hashed = |found: &[Launched]| {
            let mut paths: Vec<String> = hashes_under(found, &root)
                .into_iter()
                .map(|(path, _)| path.strip_prefix(&root).unwrap().display().to_string())
                .collect();
            paths.sort();
            paths
        };
        assert_eq!(
            hashed(&found),
            ["beside.py", "hooks/guard.py", "hooks/lib/util.py"]
        );
        // A file the model would add beside the script is hashed too.
        std::fs::write(root.join("hooks/json.py"), "evil").unwrap();
        assert!(hashed(&found).contains(&"hooks/json.py".to_owned()));
    }

    #[test]
    fn a_script_directory_too_large_to_hash_cannot_be_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("srv")).unwrap();
        for n in 0..=MAX_HASHED_FILES {
            std::fs::write(root.join(format!("srv/{n}.js")), "").unwrap();
        }
        let text = "[[mcp_servers]]\nname = \"s\"\ncommand = \"node\"\nargs = [\"srv/0.js\"]\n";
        let file = root.join("oxydra.toml");
        let config = crate::parse(&file, text).unwrap();
        let hashes = hashes_under(&launched(&config, Some(&file)), &root);
        assert!(
            hashes.contains(&(root.join("srv"), None)),
            "{}",
            hashes.len()
        );
    }
}
