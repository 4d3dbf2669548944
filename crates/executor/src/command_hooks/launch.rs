//! Where the commands a trusted configuration launches start: command hooks (and, in
//! the CLI, stdio MCP servers without a `cwd`).
//!
//! They start in a private empty directory of this process (`oxydra-launch-…` in the
//! system's temporary directory, readable by this user only), never in the workspace:
//! a command that reads from its working directory (Python's `-m` and `-c` put it first
//! on `sys.path`, a shell's `source ./x`) would otherwise load what the model wrote
//! there. So that `python3 hooks/guard.py` still finds its script, each relative word
//! of the command that names an existing path is made absolute first
//! ([`anchored_command`]) against directories the embedding program chooses (the CLI:
//! the configuration file's directory, then the current directory). A path inside a
//! shell script's text (`sh -c '…'`) is not rewritten.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The private directory, created on first use.
static LAUNCH_DIR: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The private empty directory of this process that launched commands start in:
/// `oxydra-launch-<pid>-<n>` in the system's temporary directory, mode 0700, never one
/// that existed before. It is created on the first call; later calls return the same
/// directory until [`remove_private_launch_dir`].
pub fn private_launch_dir() -> std::io::Result<PathBuf> {
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

/// Removes the private directory of [`private_launch_dir`], if one was made (call it at
/// the end of the process, once nothing launched runs any more).
pub fn remove_private_launch_dir() {
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
///
/// ```
/// let dir = std::env::temp_dir();
/// let (program, args) = oxydra_executor::anchored_command(
///     "python3",
///     &["-u".to_owned(), "no-such-script.py".to_owned()],
///     &[dir],
/// );
/// assert_eq!((program.as_str(), args.len()), ("python3", 2));
/// ```
pub fn anchored_command(program: &str, args: &[String], dirs: &[PathBuf]) -> (String, Vec<String>) {
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
        let (program, args) = anchored_command("./run.sh", &args, std::slice::from_ref(&root));
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
        let (program, _) = anchored_command("python3", &[], &[root]);
        assert_eq!(program, "python3");
    }

    #[test]
    fn the_private_directory_is_made_once_for_this_user_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = private_launch_dir().unwrap();
        assert_eq!(private_launch_dir().unwrap(), dir);
        assert!(dir.is_dir());
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert!(
            dir.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("oxydra-launch-"))
        );
    }
}
