//! The protected-paths policy: the paths the file tools may not write because another
//! program runs or loads them by itself, or because they are Oxydra's own.
//!
//! - **Paths other programs run or load by themselves**, by one rule: a file another
//!   program executes, or loads as configuration that names commands, without the user
//!   choosing to run that file. Recognised four ways, each reading the filesystem at
//!   the call: by name wherever they lie, in any letter case, whether they exist or not
//!   (the table in `rules`: `.git/`, `.envrc`, `.cargo/config.toml`, editor, agent,
//!   shell and package-manager files, Python's `.pth` files …); by content, the
//!   directories git takes for a repository whatever their name (`git_dir`: `HEAD`,
//!   `objects`, `refs`); by what git's configuration names, read as git resolves it
//!   (`git_config`: `core.hooksPath`, includes, command programs); and the modules a
//!   `.pth` file imports (`python_site`). A trusted configuration may allow them
//!   ([`ProtectedPaths::allowing`]); `chat` asks a person ([`ProtectedWriteConsent`]).
//! - **Oxydra's own files** ([`ProtectedKind`]): any file named `oxydra.toml`, the
//!   configuration in use, the session database (with its SQLite siblings) and the trust
//!   store, which nothing allows writing (the database and trust store not even reading);
//!   and the files a trusted configuration runs ([`ProtectedKind::Launched`]), which may
//!   be allowed like the paths above.
//!
//! Paths are compared whole and without regard to case, in every form a write could take:
//! the path as the call named it (so a protected name that is itself a symlink is refused
//! whatever it points at) and its canonical target (so a symlink that leads to a protected
//! path is refused). A protected name that is a symlink protects its target too: the
//! target of `.envrc -> notes/env.sh` may not be written as `notes/env.sh` either (such
//! links are looked for in every directory from the workspace root down to the written
//! file, and at the exact files the program named).

mod consent;
mod git_config;
mod git_dir;
mod own;
mod python_site;
mod rules;
mod within;

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

pub use consent::{ProtectedWrite, ProtectedWriteConsent};
pub use git_config::{GitConfigLocations, work_tree_top};
pub use own::ProtectedKind;

use crate::call_preview::CallPreview;
use crate::error::ToolError;
use crate::workspace_policy::ResolvedPath;
use own::{Entry, comparable, fold};

/// The file name that is always configuration, compared case-insensitively.
pub const CONFIG_FILE_NAME: &str = "oxydra.toml";

/// The hint of a refusal a trusted configuration could lift.
const ALLOW_HINT: &str = " (a trusted configuration may allow it: `[tools] allow_protected`)";

/// Why writing a path is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protection {
    /// What the path is and which program runs or loads it, completing "`path` is …".
    pub what: String,
    /// Whether a trusted configuration or a person may allow the write (everything but
    /// Oxydra's own files).
    pub allowable: bool,
}

/// The protected-paths policy (see the module docs). The default protects the paths
/// other programs run or load and every file named `oxydra.toml`; the embedding program
/// adds its own files with [`ProtectedPaths::with`].
///
/// ```
/// use std::path::Path;
/// use oxydra_tools::{ProtectedKind, ProtectedPaths};
///
/// let protected = ProtectedPaths::default().with(ProtectedKind::Database, "/data/oxydra.db");
/// let ws = Path::new("/ws");
/// assert!(protected.check_write(ws, "sub/OXYDRA.toml", Path::new("/ws/sub/OXYDRA.toml")).is_err());
/// assert!(protected.check_write(ws, ".git/config", Path::new("/ws/.git/config")).is_err());
/// assert!(protected.check_read(Path::new("/ws/oxydra.toml"), "oxydra.toml").is_ok());
/// assert!(protected.check_read(Path::new("/data/oxydra.db-wal"), "x").is_err());
/// assert!(protected.check_write(ws, "notes.md", Path::new("/ws/notes.md")).is_ok());
/// ```
#[derive(Debug, Clone, Default)]
pub struct ProtectedPaths {
    own: Vec<Entry>,
    /// Paths a trusted configuration allows writing, as it named them (relative ones
    /// are under the workspace root).
    allowed: Vec<PathBuf>,
    consent: Option<Arc<dyn ProtectedWriteConsent>>,
    /// Where git's system and global configuration lie; `None`: where this process's
    /// environment says, looked up at each check.
    git_config: Option<GitConfigLocations>,
}

/// Equal when they protect and allow the same paths (who is asked does not count).
impl PartialEq for ProtectedPaths {
    fn eq(&self, other: &Self) -> bool {
        self.own == other.own
            && self.allowed == other.allowed
            && self.git_config == other.git_config
    }
}

impl Eq for ProtectedPaths {}

impl ProtectedPaths {
    /// Adds the file `path` as a `kind` (a database brings its SQLite siblings): the
    /// path as given and, when it is a symlink, its target.
    #[must_use]
    pub fn with(self, kind: ProtectedKind, path: impl AsRef<Path>) -> Self {
        self.add(kind, path.as_ref(), false)
    }

    /// Adds the directory `path` and everything beneath it as a `kind` (a working
    /// directory a trusted configuration names).
    #[must_use]
    pub fn with_directory(self, kind: ProtectedKind, path: impl AsRef<Path>) -> Self {
        self.add(kind, path.as_ref(), true)
    }

    fn add(mut self, kind: ProtectedKind, path: &Path, beneath: bool) -> Self {
        for entry in Entry::all(kind, path, beneath) {
            if !self.own.contains(&entry) {
                self.own.push(entry);
            }
        }
        self
    }

    /// Allows writing `paths` (files, or directories with what is beneath them; relative
    /// ones are under the workspace root) although they are protected. Only the
    /// embedding program calls this, with what a trusted configuration lists
    /// (`[tools] allow_protected`); Oxydra's own files stay refused.
    #[must_use]
    pub fn allowing<P: Into<PathBuf>>(mut self, paths: impl IntoIterator<Item = P>) -> Self {
        self.allowed.extend(paths.into_iter().map(Into::into));
        self
    }

    /// Asks `consent` before a protected write that could be allowed, instead of
    /// refusing it (the CLI's `chat`).
    #[must_use]
    pub fn with_consent(mut self, consent: Arc<dyn ProtectedWriteConsent>) -> Self {
        self.consent = Some(consent);
        self
    }

    /// Reads git's system and global configuration from `locations` instead of where
    /// the process's environment says (a test, or a program that runs git with another
    /// environment).
    #[must_use]
    pub fn with_git_config(mut self, locations: GitConfigLocations) -> Self {
        self.git_config = Some(locations);
        self
    }

    /// Where git's system and global configuration lie for this policy.
    fn git_config_locations(&self) -> GitConfigLocations {
        self.git_config
            .clone()
            .unwrap_or_else(GitConfigLocations::from_env)
    }

    /// Which of the program's own files `path` (absolute, resolved) is, if any.
    pub fn kind_of(&self, path: &Path) -> Option<ProtectedKind> {
        let folded = fold(path);
        let name = path.file_name()?.to_string_lossy().to_lowercase();
        if let Some(entry) = self.own.iter().find(|entry| entry.covers(&folded, &name)) {
            return Some(entry.kind);
        }
        (name == CONFIG_FILE_NAME).then_some(ProtectedKind::Config)
    }

    /// Whether `path` is protected by its own name or as one of the program's files
    /// (not by git's configuration nor as a symlink's target): the walk's cheap test.
    fn protected_by_name(&self, path: &Path) -> bool {
        self.kind_of(path).is_some() || rules::matching(&lower_names(path)).is_some()
    }

    /// Why writing `path` (an absolute path, resolved or as named) in the workspace
    /// `root` is refused, if it is: creating, replacing, changing or removing it, as a
    /// file, a directory or a symlink alike. A path that does not exist yet is judged
    /// by its names and by what exists around it now.
    pub fn protection(&self, root: &Path, path: &Path) -> Option<Protection> {
        if let Some(kind) = self.kind_of(path) {
            return Some(Protection {
                what: kind.describe().to_owned(),
                allowable: !kind.is_own(),
            });
        }
        if let Some(rule) = rules::matching(&lower_names(path)) {
            return Some(allowable(rule.what.to_owned()));
        }
        if let Some(what) = git_dir::refusal(root, path) {
            return Some(allowable(what));
        }
        if let Some(what) = python_site::refusal(path) {
            return Some(allowable(what));
        }
        let folded = fold(path);
        for named in git_config::named_paths(root, &self.git_config_locations()) {
            let plain = lexical(Path::new("/"), &named.path.to_string_lossy());
            let forms = [Some(comparable(&plain)), named.path.canonicalize().ok()];
            let covered = forms.iter().flatten().any(|form| {
                let form = fold(form);
                folded == form
                    || (named.beneath()
                        && folded
                            .strip_prefix(&form)
                            .is_some_and(|rest| rest.starts_with('/')))
            });
            if covered {
                return Some(allowable(named.what()));
            }
        }
        linked_rule_target(root, path).map(allowable)
    }

    /// Refuses writing the path a call named `given`, resolved to `resolved`, in the
    /// workspace `root`, unless nothing protects it or a trusted configuration allowed
    /// it. Never asks: see [`ProtectedPaths::authorize_write`].
    ///
    /// "Writing" is any change to the entry at that path: creating it (a file, a
    /// directory or a symlink), replacing or changing it, or removing it. A path that
    /// does not exist yet is refused when its names match the table of files other
    /// programs load (at any depth, in any case), when any directory from `root` down
    /// to its parent is a directory git takes for a repository, or when creating it (or
    /// the first of its directories missing now) would make one. The filesystem is read
    /// at each call, nothing is cached, and symlinks are not followed out of the
    /// workspace for the git-directory test. Three forms are judged: the path as named,
    /// `resolved`, and where the named path leads now through existing symlinks. The
    /// caller applying an entry must not itself follow a symlink the check did not see;
    /// removing a directory removes what is beneath it, which is not looked at here.
    pub fn check_write(&self, root: &Path, given: &str, resolved: &Path) -> Result<(), ToolError> {
        match self.refusal(root, given, resolved) {
            None => Ok(()),
            Some((path, protection)) => {
                Err(refused(path, &protection, "changed", hint(&protection)))
            }
        }
    }

    /// Decides whether the file tool `tool` may write `resolved`, which the call named
    /// `given`, in the workspace `root`: allowed when nothing protects it or a trusted
    /// configuration allowed it; else asked when a [`ProtectedWriteConsent`] is set and
    /// the path is not Oxydra's own, showing what `preview` returns (called only then:
    /// the call's [`CallPreview`], a diff against the current file); else refused with a
    /// [`ToolError::Protected`] that says why. The file checks run off the async threads.
    pub async fn authorize_write(
        &self,
        tool: &str,
        root: &Path,
        given: &str,
        resolved: &ResolvedPath,
        preview: impl FnOnce() -> CallPreview + Send,
    ) -> Result<(), ToolError> {
        let policy = self.clone();
        let (root_owned, given_owned, absolute) = (
            root.to_path_buf(),
            given.to_owned(),
            resolved.absolute.clone(),
        );
        let refusal = tokio::task::spawn_blocking(move || {
            policy.refusal(&root_owned, &given_owned, &absolute)
        })
        .await
        .map_err(|err| ToolError::Failed(format!("checking protected paths failed: {err}")))?;
        let Some((path, protection)) = refusal else {
            return Ok(());
        };
        match &self.consent {
            Some(consent) if protection.allowable => {
                let write = ProtectedWrite {
                    tool: tool.to_owned(),
                    path: path.clone(),
                    reason: format!("`{path}` is {}", protection.what),
                    preview: preview(),
                };
                if consent.allow(&write).await {
                    Ok(())
                } else {
                    Err(refused(
                        path,
                        &protection,
                        "changed",
                        " (the person declined)".into(),
                    ))
                }
            }
            _ => Err(refused(path, &protection, "changed", hint(&protection))),
        }
    }

    /// Refuses reading `path` when it is the database or the trust store.
    pub fn check_read(&self, path: &Path, shown: &str) -> Result<(), ToolError> {
        match self.kind_of(path) {
            Some(kind) if kind.refuses_reads() => Err(ToolError::Protected {
                path: shown.to_owned(),
                what: kind.describe().to_owned(),
                verb: "read",
                hint: String::new(),
            }),
            _ => Ok(()),
        }
    }

    /// Whether reading `path` is refused (for tools that read many files and skip
    /// those they may not).
    pub fn refuses_read(&self, path: &Path) -> bool {
        self.kind_of(path).is_some_and(ProtectedKind::refuses_reads)
    }

    /// The program's own files that nothing may read (the session database with its
    /// SQLite siblings, the trust store) as they exist now, resolved: the command
    /// sandbox hides each from commands.
    pub fn unreadable_files(&self) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = self
            .own
            .iter()
            .filter(|entry| entry.kind.refuses_reads())
            .flat_map(Entry::existing)
            .filter_map(|path| path.canonicalize().ok())
            .filter(|path| path.is_file())
            .collect();
        found.sort();
        found.dedup();
        found
    }

    /// The protected files and directories that exist inside `workspace`, for an OS
    /// sandbox that must keep them read-only while the rest of the workspace is writable:
    /// each `.git` directory, `.cargo` configuration, `.envrc`, `.vscode` … found (a
    /// directory stands for everything beneath it), git's hooks directory and includes,
    /// the program's own files, the targets of protected symlinks that lie inside, all
    /// canonical and sorted, without duplicates and without paths beneath another listed
    /// directory. Paths that do not exist yet are not listed (a sandbox can only rule on
    /// what exists); the file tools check those by name on each write.
    ///
    /// The workspace is walked without following symlinks, up to 200,000 entries. A
    /// walk cut short fails closed: the list is then the workspace itself (all of it
    /// read-only), with a warning logged; [`ProtectedPaths::try_read_only_paths_within`]
    /// returns an error instead.
    pub fn read_only_paths_within(&self, workspace: &Path) -> Vec<PathBuf> {
        match within::read_only_paths(self, workspace) {
            Ok(paths) => paths,
            Err(err) => {
                tracing::warn!("{err}; the whole workspace is kept read-only");
                vec![
                    workspace
                        .canonicalize()
                        .unwrap_or_else(|_| workspace.to_path_buf()),
                ]
            }
        }
    }

    /// [`ProtectedPaths::read_only_paths_within`], but a walk cut short (more than
    /// 200,000 entries) is a [`ToolError::Failed`] saying so, never a partial list.
    pub fn try_read_only_paths_within(&self, workspace: &Path) -> Result<Vec<PathBuf>, ToolError> {
        within::read_only_paths(self, workspace)
    }

    /// The form of a write that is protected and not allowed, as shown in messages, and
    /// why: the path as named first, then its canonical target.
    fn refusal(&self, root: &Path, given: &str, resolved: &Path) -> Option<(String, Protection)> {
        let named = lexical(root, given);
        let relative = |path: &Path| {
            path.strip_prefix(root).map_or_else(
                |_| path.display().to_string(),
                |rel| rel.display().to_string(),
            )
        };
        let mut forms = vec![named.clone()];
        let leads = leads_to(&named);
        for form in [Some(resolved.to_path_buf()), leads].into_iter().flatten() {
            if !forms.iter().any(|have| fold(have) == fold(&form)) {
                forms.push(form);
            }
        }
        forms.iter().find_map(|form| {
            let protection = self.protection(root, form)?;
            if protection.allowable && self.allows(root, form) {
                return None;
            }
            let shown = if *form == named {
                given.to_owned()
            } else {
                format!("{given}` → `{}", relative(form))
            };
            Some((shown, protection))
        })
    }

    /// Whether a trusted configuration allowed writing `path`.
    fn allows(&self, root: &Path, path: &Path) -> bool {
        let folded = fold(path);
        self.allowed.iter().any(|allowed| {
            // Never its target: an allowed name must not allow what it links to.
            let named = lexical(root, &allowed.to_string_lossy());
            [comparable(&named), named].iter().any(|form| {
                let form = fold(form);
                folded == form
                    || folded
                        .strip_prefix(&form)
                        .is_some_and(|rest| rest.starts_with('/'))
            })
        })
    }
}

/// The names of `path`, lower-cased.
fn lower_names(path: &Path) -> Vec<String> {
    path.components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name.to_string_lossy().to_lowercase()),
            _ => None,
        })
        .collect()
}

fn allowable(what: String) -> Protection {
    Protection {
        what,
        allowable: true,
    }
}

fn hint(protection: &Protection) -> String {
    if protection.allowable {
        ALLOW_HINT.to_owned()
    } else {
        String::new()
    }
}

fn refused(path: String, protection: &Protection, verb: &'static str, hint: String) -> ToolError {
    ToolError::Protected {
        path,
        what: protection.what.clone(),
        verb,
        hint,
    }
}

/// `given` joined to `root` without following any symlink: `.` dropped, `..` taking
/// off the name before it.
fn lexical(root: &Path, given: &str) -> PathBuf {
    let mut path = PathBuf::new();
    for component in root.join(given).components() {
        match component {
            Component::ParentDir => {
                path.pop();
            }
            Component::CurDir => {}
            other => path.push(other),
        }
    }
    path
}

/// Where `path` leads now: its longest existing ancestor canonicalised (symlinks
/// followed), with the names that do not exist yet after it.
fn leads_to(path: &Path) -> Option<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut missing: Vec<OsString> = Vec::new();
    loop {
        if let Ok(mut canonical) = existing.canonicalize() {
            canonical.extend(missing.iter().rev());
            return Some(canonical);
        }
        missing.push(existing.file_name()?.to_owned());
        if !existing.pop() {
            return None;
        }
    }
}

/// When `path` is the target of a protected name that is a symlink, in one of the
/// directories from `root` down to `path`'s own (`.envrc -> notes/env.sh`, or a
/// `.cargo` linked elsewhere): what that name is.
fn linked_rule_target(root: &Path, path: &Path) -> Option<String> {
    let folded = fold(path);
    let parent = path.parent()?;
    let dirs = parent
        .ancestors()
        .take_while(|dir| dir.starts_with(root))
        .collect::<Vec<_>>();
    for dir in dirs {
        for rule in rules::RULES.iter().filter(|rule| rule.is_exact()) {
            let mut link = dir.to_path_buf();
            for (index, name) in rule.names().enumerate() {
                link.push(name);
                let Ok(meta) = link.symlink_metadata() else {
                    break;
                };
                if !meta.file_type().is_symlink() {
                    continue;
                }
                let Ok(mut target) = link.canonicalize() else {
                    break;
                };
                target.extend(rule.names().skip(index + 1).map(OsString::from));
                let target = fold(&target);
                let covered = folded == target
                    || (rule.beneath()
                        && folded
                            .strip_prefix(&target)
                            .is_some_and(|rest| rest.starts_with('/')));
                if covered {
                    let shown = link
                        .strip_prefix(root)
                        .unwrap_or(&link)
                        .display()
                        .to_string();
                    return Some(format!(
                        "the target of the symlink `{shown}`, which is {}",
                        rule.what
                    ));
                }
                break;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;
