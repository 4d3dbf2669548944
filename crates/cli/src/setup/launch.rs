//! Where and how the commands a trusted configuration launches start: `[[hooks]]`
//! commands and stdio `[[mcp_servers]]` without a `cwd`.
//!
//! They start in a private empty directory of this process (`oxydra-launch-…` in the
//! system's temporary directory, removed at exit), never in the workspace: a command
//! that reads from its working directory (Python's `-m` and `-c` put it first on
//! `sys.path`, a shell's `source ./x`) would otherwise load what the model wrote there.
//! So that `python3 hooks/guard.py` still finds its script, each relative word of the
//! command that names an existing path is made absolute first, looked up as the files
//! a configuration runs are found for its trust (`launched`): against the configuration
//! file's directory, then the current directory. A path inside a shell script's text
//! (`sh -c '…'`) is not rewritten.
//!
//! The environment loses the interpreter settings that load code from elsewhere
//! ([`oxydra::tools::interpreter_env_changes`]).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use oxydra::mcp::McpServerConfig;

use crate::config::lookup_dirs;
use crate::error::CliError;

/// The private directory, created on first use.
static LAUNCH_DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The private empty directory commands start in (created on first use, readable by
/// this user only).
pub fn launch_dir() -> std::io::Result<PathBuf> {
    let mut dir = LAUNCH_DIR.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(dir) = dir.as_ref() {
        return Ok(dir.clone());
    }
    let created = create_private_dir()?;
    *dir = Some(created.clone());
    Ok(created)
}

/// A new directory `oxydra-launch-<pid>-<n>` in the system's temporary directory,
/// mode 0700; never one that existed before.
fn create_private_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos());
    let mut last = None;
    for attempt in 0..16_u32 {
        let path = base.join(format!(
            "oxydra-launch-{}-{}",
            std::process::id(),
            nanos.wrapping_add(attempt)
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => return Ok(path),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => last = Some(error),
            Err(error) => return Err(error),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free name")))
}

/// Removes the private directory, if one was made (at the end of the process).
pub fn remove_launch_dir() {
    let taken = LAUNCH_DIR
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(dir) = taken {
        // Gone already, or something left in it that cannot go: nothing to do at exit.
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// `program` and `args` with each relative word naming an existing path (for the
/// program: one with a `/`; for an argument: the whole word or the value after
/// `--flag=`) made absolute against the first of `dirs` where it exists.
pub fn anchored(program: &str, args: &[String], dirs: &[PathBuf]) -> (String, Vec<String>) {
    let program = if program.contains('/') {
        anchored_word(program, dirs)
    } else {
        program.to_owned()
    };
    let args = args
        .iter()
        .map(|arg| match arg.split_once('=') {
            Some((flag, value)) if arg.starts_with('-') => {
                format!("{flag}={}", anchored_word(value, dirs))
            }
            _ if arg.starts_with('-') => arg.clone(),
            _ => anchored_word(arg, dirs),
        })
        .collect();
    (program, args)
}

/// `word` as an absolute path when it is relative and names something in one of
/// `dirs`; else as it is.
fn anchored_word(word: &str, dirs: &[PathBuf]) -> String {
    let path = Path::new(word);
    if word.is_empty() || path.is_absolute() {
        return word.to_owned();
    }
    dirs.iter()
        .map(|dir| dir.join(path))
        .find(|candidate| candidate.exists())
        .map_or_else(|| word.to_owned(), |found| found.display().to_string())
}

/// A hook's command, ready to start outside the workspace (see the module docs).
pub fn hook_command(command: &[String], config_file: Option<&Path>) -> Vec<String> {
    let Some((program, args)) = command.split_first() else {
        return Vec::new();
    };
    let (program, args) = anchored(program, args, &lookup_dirs(config_file));
    std::iter::once(program).chain(args).collect()
}

/// The MCP servers `servers`, each stdio server without a `cwd` set to start in the
/// private directory, its command and arguments anchored (see the module docs).
pub fn mcp_servers(
    servers: &[McpServerConfig],
    config_file: Option<&Path>,
) -> Result<Vec<McpServerConfig>, CliError> {
    let dirs = lookup_dirs(config_file);
    let mut ready = Vec::with_capacity(servers.len());
    for server in servers {
        let mut server = server.clone();
        if server.cwd.is_none()
            && let Some(command) = &server.command
        {
            let (command, args) = anchored(command, &server.args, &dirs);
            let dir = launch_dir().map_err(|error| {
                CliError::Mcp(format!(
                    "MCP server `{}`: cannot create the private directory it starts in: {error}",
                    server.name
                ))
            })?;
            server.command = Some(command);
            server.args = args;
            server.cwd = Some(dir);
        }
        ready.push(server);
    }
    Ok(ready)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_words_that_exist_are_made_absolute() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir(root.join("hooks")).unwrap();
        std::fs::write(root.join("hooks/guard.py"), "").unwrap();
        std::fs::write(root.join("run.sh"), "").unwrap();
        let args: Vec<String> = ["-u", "hooks/guard.py", "--rules=hooks", "missing.py", "-c"]
            .map(String::from)
            .to_vec();
        let (program, args) = anchored("./run.sh", &args, std::slice::from_ref(&root));
        assert_eq!(program, root.join("./run.sh").display().to_string());
        assert_eq!(
            args,
            [
                "-u".to_owned(),
                root.join("hooks/guard.py").display().to_string(),
                format!("--rules={}", root.join("hooks").display()),
                "missing.py".to_owned(),
                "-c".to_owned(),
            ]
        );
        let (program, _) = anchored("python3", &[], &[root]);
        assert_eq!(program, "python3");
    }

    #[test]
    fn a_stdio_server_without_a_cwd_starts_in_the_private_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("oxydra.toml");
        std::fs::write(dir.path().join("srv.js"), "").unwrap();
        let parse = |text: &str| toml::from_str::<McpServerConfig>(text).unwrap();
        let servers = [
            parse("name = \"a\"\ncommand = \"node\"\nargs = [\"srv.js\"]"),
            parse("name = \"b\"\ncommand = \"node\"\ncwd = \"/opt\""),
            parse("name = \"c\"\nurl = \"http://127.0.0.1:1/mcp\""),
        ];
        let ready = mcp_servers(&servers, Some(&file)).unwrap();
        let private = launch_dir().unwrap();
        assert_eq!(ready[0].cwd.as_deref(), Some(private.as_path()));
        let canonical = dir.path().canonicalize().unwrap();
        assert_eq!(
            ready[0].args,
            [canonical.join("srv.js").display().to_string()]
        );
        assert_eq!(ready[1], servers[1]);
        assert_eq!(ready[2], servers[2]);
        assert!(private.is_dir());
        assert_eq!(std::fs::read_dir(&private).unwrap().count(), 0);
    }
}
