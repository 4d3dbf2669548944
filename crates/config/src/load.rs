//! Finding and reading the configuration: `--config FILE` alone, else the user's own
//! file with the project file `oxydra.toml` layered over it (see [`super::layers`]):
//! the one in the current directory, else the one at the root of the git repository
//! the current directory is in ([`project_file`]).
//! A project file the user has not trusted may only narrow the user's configuration;
//! what it could not set is named in one warning.

use std::path::{Path, PathBuf};

use oxydra::tools::CONFIG_FILE_NAME;
use toml::{Table, Value};

use super::launched::launched_hashes;
use super::layers::{Layered, Trust};
use super::parse::{check, read, user_config_path};
use super::trust::{Verdict, verdict_of};
use crate::ConfigError;
use crate::FileConfig;
use crate::ignored::{Ignored, listed};
use crate::shell_quoted;

/// The configuration that was found and read.
#[derive(Debug, Clone, Default)]
pub struct LoadedFile {
    /// The file read last (the project file over the user's, or the only one); `None`
    /// when no file exists (all defaults).
    pub path: Option<PathBuf>,
    /// The user's own file, when a project file was layered over it.
    pub user_file: Option<PathBuf>,
    /// The layered contents (without the settings that were ignored).
    pub config: FileConfig,
    /// Settings of an untrusted project file that were ignored.
    pub ignored: Vec<Ignored>,
    /// Whether `path` is a project file that is not trusted.
    pub untrusted: bool,
    /// Whether `[provider] model` was taken from that untrusted file (a model name; it
    /// must never be loaded as a local model file).
    pub untrusted_model: bool,
}

/// Locates and reads the configuration (see the module comment): `explicit` alone when
/// given, else the user's file with `./oxydra.toml` over it, trusted as the store at
/// `store` says. The warnings (an untrusted project file, an unreadable trust store) are
/// returned, for the caller to show.
pub fn load_with(
    explicit: Option<&Path>,
    store: Option<&Path>,
) -> Result<(LoadedFile, Vec<String>), ConfigError> {
    if let Some(path) = explicit {
        if !path.is_file() {
            return Err(ConfigError::NotFound {
                path: path.to_path_buf(),
            });
        }
        let file = Read::from(path)?;
        let notes = file.older_words();
        return Ok((file.alone(), notes));
    }
    let project = project_file(Path::new("."));
    let user = user_config_path().filter(|path| path.is_file());
    load_layers(project.as_deref(), user.as_deref(), store)
}

/// The project file for a program started in `dir`: `dir/oxydra.toml` (as the relative
/// `oxydra.toml` when `dir` is `.`), else the `oxydra.toml` at the root of the git
/// repository `dir` is in — the nearest directory above holding `.git` — so a run from
/// a sub-folder finds the project's file (the one root
/// [`oxydra::tools::work_tree_top`] the protected paths use: `.git` is looked at,
/// never followed). No file above the repository root (or above `dir` outside a
/// repository) is ever taken: a directory one does not own (`/tmp`, a shared home)
/// cannot plant one.
pub fn project_file(dir: &Path) -> Option<PathBuf> {
    let here = dir.join(CONFIG_FILE_NAME);
    if here.is_file() {
        return Some(if dir == Path::new(".") {
            PathBuf::from(CONFIG_FILE_NAME)
        } else {
            here
        });
    }
    let start = dir.canonicalize().ok()?;
    let root = oxydra::tools::work_tree_top(&start)?;
    if root == start {
        return None;
    }
    let file = root.join(CONFIG_FILE_NAME);
    file.is_file().then_some(file)
}

/// The user's file `user` with the project file `project` over it, trusted as the
/// store at `store` says.
pub fn load_layers(
    project: Option<&Path>,
    user: Option<&Path>,
    store: Option<&Path>,
) -> Result<(LoadedFile, Vec<String>), ConfigError> {
    let user = user.map(Read::from).transpose()?;
    let Some(project) = project else {
        let notes = user.as_ref().map(Read::older_words).unwrap_or_default();
        return Ok((user.map(Read::alone).unwrap_or_default(), notes));
    };
    let project = Read::from(project)?;
    let base = match &user {
        Some(user) => user.table(),
        None => Table::new(),
    };
    let over = project.table();

    // Narrowed first: a file that only narrows needs no trust (and no store is read).
    let mut layers = Layered::new(base.clone());
    layers.add(over.clone(), Trust::Untrusted);
    let mut warnings: Vec<String> = user
        .iter()
        .chain([&project])
        .flat_map(Read::older_words)
        .collect();
    let mut verdict = Verdict::Untrusted;
    if !layers.ignored().is_empty() {
        let launched = launched_hashes(&project.config, &project.path);
        verdict = verdict_of(
            &project.path,
            project.text.as_bytes(),
            &launched,
            store,
            &mut warnings,
        );
        if verdict == Verdict::Trusted {
            layers = Layered::new(base);
            layers.add(over, Trust::Trusted);
        }
    }
    let untrusted = verdict != Verdict::Trusted;
    let untrusted_model = layers.untrusted_model();
    let (table, ignored) = layers.finish();
    // Each file parsed and checked on its own when read; what the layers combine is
    // checked as a whole once.
    let config: FileConfig =
        serde_path_to_error::deserialize(Value::Table(table)).map_err(|error| {
            ConfigError::Invalid {
                path: project.path.clone(),
                key: error.path().to_string(),
                message: format!(
                    "layered over the user configuration: {}: {}",
                    error.path(),
                    error.inner().message()
                ),
                line: None,
            }
        })?;
    check(&project.path, &config)?;
    if !ignored.is_empty() {
        warnings.push(untrusted_warning(&project.path, verdict, &ignored));
    }
    Ok((
        LoadedFile {
            untrusted: untrusted && !ignored.is_empty(),
            path: Some(project.path),
            user_file: user.map(|user| user.path),
            config,
            ignored,
            untrusted_model,
        },
        warnings,
    ))
}

/// The one warning about an untrusted project file: the file, every key ignored and
/// the command that trusts it.
fn untrusted_warning(path: &Path, verdict: Verdict, ignored: &[Ignored]) -> String {
    let (state, again) = match verdict {
        Verdict::Changed => ("changed since it was trusted".to_owned(), " again"),
        Verdict::LaunchedChanged(file) => (
            format!(
                "runs {}, which changed since the file was trusted (or was not recorded \
                 then, by an older Oxydra),",
                file.display()
            ),
            " again",
        ),
        Verdict::Trusted | Verdict::Untrusted => ("is not trusted".to_owned(), ""),
    };
    format!(
        "{} {state}, so it may only narrow your own configuration; ignoring its settings \
         that grant power or loosen a limit: {}. Review the file, then run `oxydra trust {}`{again} \
         to use them.",
        path.display(),
        listed(ignored),
        shell_quoted(path),
    )
}

/// One file, read and parsed once (what is checked for trust is exactly what is
/// parsed): its checked configuration and the same tree as a table to layer.
struct Read {
    path: PathBuf,
    text: String,
    config: FileConfig,
    table: Table,
}

impl Read {
    fn from(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
            path: path.to_path_buf(),
            source,
        })?;
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let (config, table) = read(&path, &text)?;
        Ok(Self {
            path,
            text,
            config,
            table,
        })
    }

    /// A note for each older word the file uses (`approve = "never"`: now `deny`),
    /// naming the file and the key; the older word still works.
    fn older_words(&self) -> Vec<String> {
        let approve = self
            .table
            .get("runtime")
            .and_then(|runtime| runtime.get("approve"))
            .and_then(Value::as_str);
        approve
            .and_then(|word| Some((word, crate::ApproveMode::renamed(word)?)))
            .map(|(word, new)| {
                format!(
                    "{}: runtime.approve = \"{word}\" is now spelled \"{new}\" (the older word \
                     still works)",
                    self.path.display()
                )
            })
            .into_iter()
            .collect()
    }

    /// The file as the whole configuration.
    fn alone(self) -> LoadedFile {
        LoadedFile {
            path: Some(self.path),
            config: self.config,
            ..LoadedFile::default()
        }
    }

    /// The file as a table to layer, its `[memory] db` made absolute (it is relative
    /// to the file it is written in).
    fn table(&self) -> Table {
        let mut table = self.table.clone();
        let dir = self
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        if let Some(Value::Table(memory)) = table.get_mut("memory")
            && let Some(Value::String(db)) = memory.get_mut("db")
            && !oxydra::storage::is_url(db.as_str())
        {
            *db = dir.join(db.as_str()).display().to_string();
        }
        table
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::{TrustStore, key_of};

    struct Files {
        dir: tempfile::TempDir,
    }

    impl Files {
        fn new() -> Self {
            Self {
                dir: tempfile::tempdir().unwrap(),
            }
        }
        fn write(&self, name: &str, text: &str) -> PathBuf {
            let path = self.dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            path
        }
        fn store(&self) -> PathBuf {
            self.dir.path().join("data/trusted.toml")
        }
        fn load(&self, project: &Path, user: Option<&Path>) -> (LoadedFile, Vec<String>) {
            load_layers(Some(project), user, Some(&self.store())).unwrap()
        }
    }

    const PLANTED: &str = "[runtime]\nmax_turns = 2\napprove = \"allow\"\n\
                           [[mcp_servers]]\nname = \"x\"\ncommand = \"touch\"\n";

    #[test]
    fn the_project_file_is_found_at_the_repository_root_from_a_sub_folder_and_no_higher() {
        let files = Files::new();
        let repo = files.dir.path().join("repo");
        let deep = repo.join("src/deep");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        // A file in the folder holding the repository is not the project's.
        files.write("oxydra.toml", "");
        assert_eq!(project_file(&deep), None);
        let at_root = files.write("repo/oxydra.toml", "[runtime]\nmax_turns = 2\n");
        assert_eq!(project_file(&deep), Some(at_root.canonicalize().unwrap()));
        // The nearer file wins.
        let nearer = files.write("repo/src/deep/oxydra.toml", "");
        assert_eq!(project_file(&deep), Some(nearer));
        // Outside a repository only the current directory counts.
        let outside = files.dir.path().join("other/sub");
        std::fs::create_dir_all(&outside).unwrap();
        files.write("other/oxydra.toml", "");
        assert_eq!(project_file(&outside), None);
        // A worktree or submodule's `.git` is a file: still a repository root.
        let worktree = files.dir.path().join("wt/a");
        std::fs::create_dir_all(&worktree).unwrap();
        files.write("wt/.git", "gitdir: /elsewhere\n");
        let wt_file = files.write("wt/oxydra.toml", "");
        assert_eq!(
            project_file(&worktree),
            Some(wt_file.canonicalize().unwrap())
        );
    }

    #[test]
    fn explicit_missing_file_is_an_error() {
        let error = load_with(Some(Path::new("/nonexistent/oxydra.toml")), None).unwrap_err();
        assert!(matches!(error, ConfigError::NotFound { .. }));
        assert!(error.to_string().contains("/nonexistent/oxydra.toml"));
    }

    #[test]
    fn an_untrusted_file_narrows_the_users_and_one_warning_names_every_key() {
        let files = Files::new();
        let user = files.write(
            "user/config.toml",
            "[runtime]\nmax_turns = 5\n[[rules]]\ntool = \"file_write\"\nkind = \"requires_consent\"\n\
             [memory]\ndb = \"my.db\"\n",
        );
        let project = files.write("ws/oxydra.toml", PLANTED);
        let (loaded, warnings) = files.load(&project, Some(&user));
        let config = &loaded.config;
        assert_eq!(config.runtime.limits.max_turns, 2);
        assert!(config.runtime.approve.is_none() && config.mcp_servers.is_empty());
        assert_eq!(config.rules.len(), 1, "the user's rule stays");
        assert_eq!(
            config.memory.db.as_deref(),
            Some(files.dir.path().join("user/my.db").as_path())
        );
        assert!(loaded.untrusted);
        assert_eq!(loaded.user_file.as_deref(), Some(user.as_path()));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let warning = &warnings[0];
        assert!(
            warning.starts_with(&format!("{} is not trusted", project.display())),
            "{warning}"
        );
        assert!(
            warning.contains("mcp_servers") && warning.contains("runtime.approve = \"allow\""),
            "{warning}"
        );
        assert!(
            warning.contains(&format!("`oxydra trust {}`", project.display())),
            "{warning}"
        );
        assert!(!files.store().exists(), "checking trust writes nothing");
    }

    #[test]
    fn a_trusted_file_sets_what_it_holds_until_it_changes() {
        let files = Files::new();
        let user = files.write("user/config.toml", "[runtime]\nmax_turns = 1\n");
        let project = files.write("ws/oxydra.toml", PLANTED);
        let mut store = TrustStore::open(&files.store()).unwrap();
        store.trust(&key_of(&project), PLANTED.as_bytes(), &[]);
        store.save().unwrap();

        let (loaded, warnings) = files.load(&project, Some(&user));
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(!loaded.untrusted);
        assert_eq!(loaded.config.mcp_servers.len(), 1);
        assert_eq!(loaded.config.runtime.limits.max_turns, 2);

        files.write("ws/oxydra.toml", &format!("{PLANTED}# one more line\n"));
        let (loaded, warnings) = files.load(&project, Some(&user));
        assert!(loaded.config.mcp_servers.is_empty());
        assert_eq!(loaded.config.runtime.limits.max_turns, 1);
        assert!(
            warnings[0].contains("changed since it was trusted"),
            "{warnings:?}"
        );
        assert!(warnings[0].contains("again to use them"), "{warnings:?}");
    }

    #[test]
    fn a_corrupt_or_missing_store_trusts_nothing_and_says_why() {
        let files = Files::new();
        let project = files.write("ws/oxydra.toml", PLANTED);
        files.write("data/trusted.toml", "not = [toml");
        let (loaded, warnings) = files.load(&project, None);
        assert!(loaded.config.mcp_servers.is_empty());
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].contains("not a valid trust store"),
            "{warnings:?}"
        );
        assert!(warnings[1].contains("is not trusted"), "{warnings:?}");

        let (loaded, warnings) = load_layers(Some(&project), None, None).unwrap();
        assert!(loaded.config.mcp_servers.is_empty());
        assert!(
            warnings[0].contains("no user data directory"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_file_that_only_narrows_needs_no_trust_and_reads_no_store() {
        let files = Files::new();
        let project = files.write("ws/oxydra.toml", "[runtime]\nmax_turns = 2\n");
        files.write("data/trusted.toml", "corrupt [");
        let (loaded, warnings) = files.load(&project, None);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(!loaded.untrusted);
        assert_eq!(loaded.config.runtime.limits.max_turns, 2);
    }

    #[test]
    fn an_older_approval_word_works_with_a_note_naming_the_file_and_key() {
        let files = Files::new();
        let user = files.write("user/config.toml", "[runtime]\napprove = \"always\"\n");
        let (loaded, notes) = load_layers(None, Some(&user), None).unwrap();
        assert_eq!(
            loaded.config.runtime.approve,
            Some(crate::ApproveMode::Allow)
        );
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains(&user.display().to_string()), "{notes:?}");
        assert!(notes[0].contains("runtime.approve = \"always\" is now spelled \"allow\""));
        let project = files.write("ws/oxydra.toml", "[runtime]\napprove = \"never\"\n");
        let (loaded, notes) = files.load(&project, Some(&user));
        assert_eq!(
            loaded.config.runtime.approve,
            Some(crate::ApproveMode::Deny)
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[1].contains("\"never\" is now spelled \"deny\""),
            "{notes:?}"
        );
        let (_, notes) = load_with(Some(&project), None).unwrap();
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn without_a_project_file_the_users_file_is_the_configuration() {
        let files = Files::new();
        let user = files.write("user/config.toml", "[memory]\ndb = \"x.db\"\n");
        let (loaded, warnings) = load_layers(None, Some(&user), None).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(loaded.path.as_deref(), Some(user.as_path()));
        assert_eq!(loaded.config.memory.db.as_deref(), Some(Path::new("x.db")));
        let (nothing, _) = load_layers(None, None, None).unwrap();
        assert!(nothing.path.is_none());
    }
}
