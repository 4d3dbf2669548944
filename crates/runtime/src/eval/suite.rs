//! An eval suite file: [`Suite`] and its [`Task`]s, read from TOML with errors that
//! name the file, the line, the task and the key.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::check::Check;
use super::fixture::{self, Fixture};
use crate::error::RuntimeError;

/// A suite of eval tasks (`SUITE.toml`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Suite {
    /// The suite's name (`name`, else the file's stem).
    pub name: String,
    /// `[defaults]`: what each task takes unless it says otherwise.
    pub defaults: Defaults,
    /// The tasks, in the file's order.
    pub tasks: Vec<Task>,
}

/// `[defaults]` of a suite.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Defaults {
    /// How many times each task runs (`runs`; `None`: the caller's choice, else 1).
    pub runs: Option<usize>,
    /// The turn budget of each run (`max_turns`).
    pub max_turns: Option<u32>,
    /// The cost budget of each run in US dollars (`max_cost`).
    pub max_cost: Option<f64>,
}

/// One task: a workspace fixture, a prompt, and the checks of the outcome.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Task {
    /// The task's name (unique in its suite).
    pub name: String,
    /// The user prompt.
    pub prompt: String,
    /// What the workspace holds before the run.
    pub fixture: Fixture,
    /// The checks; a run succeeds when all pass.
    pub checks: Vec<Check>,
    /// The turn budget of each run (the task's `max_turns`, else the default's).
    pub max_turns: Option<u32>,
    /// The cost budget of each run (the task's `max_cost`, else the default's).
    pub max_cost: Option<f64>,
    /// Free labels carried into the report (`tags = ["smoke"]`).
    pub tags: Vec<String>,
}

impl Task {
    /// A task of `name` with `prompt`, an empty workspace and no checks.
    pub fn new(name: impl Into<String>, prompt: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            prompt: prompt.into(),
            fixture: Fixture::default(),
            checks: Vec::new(),
            max_turns: None,
            max_cost: None,
            tags: Vec::new(),
        }
    }

    /// The task with `check` added.
    #[must_use]
    pub fn check(mut self, check: Check) -> Self {
        self.checks.push(check);
        self
    }

    /// The task with `fixture` as its starting workspace.
    #[must_use]
    pub fn fixture(mut self, fixture: Fixture) -> Self {
        self.fixture = fixture;
        self
    }
}

impl Suite {
    /// A suite of `name` with `tasks` and no defaults (for suites built in Rust).
    pub fn new(name: impl Into<String>, tasks: Vec<Task>) -> Self {
        Self {
            name: name.into(),
            defaults: Defaults::default(),
            tasks,
        }
    }

    /// Reads the suite file at `path`. Blocking (it reads the file and walks fixture
    /// folders): call it off the async threads.
    ///
    /// # Errors
    /// [`RuntimeError::EvalSuite`] naming the file, and the line, task and key where
    /// it can: unreadable file, bad TOML, unknown key, a check that is no check, a bad
    /// regex, or a fixture path that leaves the suite's folder (`..`, absolute, or a
    /// symlink out).
    pub fn load(path: &Path) -> Result<Self, RuntimeError> {
        let text = std::fs::read_to_string(path).map_err(|error| RuntimeError::EvalSuite {
            file: path.to_path_buf(),
            message: format!("cannot read it: {error}"),
        })?;
        let folder = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let stem = path
            .file_stem()
            .map_or_else(|| "suite".to_owned(), |s| s.to_string_lossy().into_owned());
        Self::parse(&text, folder, &stem).map_err(|message| RuntimeError::EvalSuite {
            file: path.to_path_buf(),
            message,
        })
    }

    /// Parses a suite's `text`; fixture folders are taken against `folder`, `stem`
    /// is the name when the file gives none. `Err` is the message (without the file).
    fn parse(text: &str, folder: &Path, stem: &str) -> Result<Self, String> {
        let raw: RawSuite = toml::from_str(text).map_err(|error| error.to_string())?;
        let at = |span: std::ops::Range<usize>| position(text, span.start);
        let mut tasks: Vec<Task> = Vec::new();
        for spanned in raw.task {
            let span = spanned.span();
            let raw_task = spanned.into_inner();
            let name = raw_task.name.clone();
            let problem = |key: &str, line: String, message: String| {
                format!("{line}: task `{name}`, key `{key}`: {message}")
            };
            if tasks.iter().any(|task| task.name == name) {
                return Err(problem(
                    "name",
                    at(span),
                    "another task has this name".into(),
                ));
            }
            if raw_task.prompt.trim().is_empty() {
                return Err(problem("prompt", at(span), "the prompt is empty".into()));
            }
            let fixture = match (&raw_task.fixture, raw_task.files.is_empty()) {
                (Some(_), false) => {
                    return Err(problem(
                        "fixture",
                        at(span),
                        "give `fixture` (a folder) or `files` (inline), not both".into(),
                    ));
                }
                (Some(dir), true) => fixture::folder(folder, dir.get_ref())
                    .map_err(|message| problem("fixture", at(dir.span()), message))?,
                (None, _) => {
                    let mut files = BTreeMap::new();
                    for (file, content) in &raw_task.files {
                        let path = fixture::relative(file).map_err(|message| {
                            problem(&format!("files.\"{file}\""), at(span.clone()), message)
                        })?;
                        files.insert(path, content.clone());
                    }
                    Fixture::Files(files)
                }
            };
            let mut checks = Vec::new();
            for (index, check) in raw_task.check.into_iter().enumerate() {
                let check_span = check.span();
                let parsed = Check::from_raw(check.into_inner()).map_err(|(key, message)| {
                    let key = if key.is_empty() {
                        format!("check[{index}]")
                    } else {
                        format!("check[{index}].{key}")
                    };
                    problem(&key, at(check_span), message)
                })?;
                checks.push(parsed);
            }
            if checks.is_empty() {
                return Err(problem(
                    "check",
                    at(span),
                    "a task needs at least one [[task.check]]".into(),
                ));
            }
            tasks.push(Task {
                name,
                prompt: raw_task.prompt,
                fixture,
                checks,
                max_turns: raw_task.max_turns.or(raw.defaults.max_turns),
                max_cost: raw_task.max_cost.or(raw.defaults.max_cost),
                tags: raw_task.tags,
            });
        }
        if tasks.is_empty() {
            return Err("the suite has no [[task]]".into());
        }
        if raw.defaults.runs == Some(0) {
            return Err("key `defaults.runs`: must be above 0".into());
        }
        Ok(Self {
            name: raw.name.unwrap_or_else(|| stem.to_owned()),
            defaults: Defaults {
                runs: raw.defaults.runs,
                max_turns: raw.defaults.max_turns,
                max_cost: raw.defaults.max_cost,
            },
            tasks,
        })
    }
}

/// `line L, column C` of byte `offset` in `text`.
fn position(text: &str, offset: usize) -> String {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {column}")
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    name: Option<String>,
    #[serde(default)]
    defaults: RawDefaults,
    #[serde(default)]
    task: Vec<Spanned<RawTask>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawDefaults {
    runs: Option<usize>,
    max_turns: Option<u32>,
    max_cost: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    name: String,
    prompt: String,
    fixture: Option<Spanned<String>>,
    #[serde(default)]
    files: BTreeMap<String, String>,
    #[serde(default)]
    check: Vec<Spanned<super::check::RawCheck>>,
    max_turns: Option<u32>,
    max_cost: Option<f64>,
    #[serde(default)]
    tags: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Suite, String> {
        Suite::parse(text, Path::new("."), "s")
    }

    #[test]
    fn a_suite_parses_with_defaults_and_checks() {
        let suite = parse(
            r#"
name = "demo"
[defaults]
runs = 2
max_turns = 4
[[task]]
name = "hello"
prompt = "Write hello.txt"
files = { "notes/a.md" = "x" }
[[task.check]]
file = "hello.txt"
equals = "hi"
[[task.check]]
tool_called = "file_write"
count = 1
"#,
        )
        .unwrap();
        assert_eq!(suite.name, "demo");
        assert_eq!(suite.defaults.runs, Some(2));
        let task = &suite.tasks[0];
        assert_eq!(task.max_turns, Some(4));
        assert_eq!(task.checks.len(), 2);
        assert!(matches!(&task.fixture, Fixture::Files(files) if files.len() == 1));
    }

    #[test]
    fn errors_name_the_line_task_and_key() {
        let error = parse(
            "[[task]]\nname = \"t\"\nprompt = \"p\"\n[[task.check]]\nanswer_matches = \"(\"\n",
        )
        .unwrap_err();
        assert!(error.contains("line 4"), "{error}");
        assert!(error.contains("task `t`"), "{error}");
        assert!(error.contains("check[0].answer_matches"), "{error}");
        let unknown = parse("[[task]]\nname = \"t\"\nprompt = \"p\"\nbogus = 1\n").unwrap_err();
        assert!(
            unknown.contains("bogus") && unknown.contains("line 4"),
            "{unknown}"
        );
    }

    #[test]
    fn inline_files_may_not_leave_the_workspace() {
        for bad in ["../x", "/etc/passwd", "a/../../b", ""] {
            let text = format!(
                "[[task]]\nname = \"t\"\nprompt = \"p\"\nfiles = {{ \"{bad}\" = \"x\" }}\n[[task.check]]\nanswer_contains = \"x\"\n"
            );
            let error = parse(&text).unwrap_err();
            assert!(
                error.contains("task `t`") && error.contains("files."),
                "{bad}: {error}"
            );
        }
    }

    #[test]
    fn a_task_without_checks_or_a_suite_without_tasks_is_refused() {
        assert!(parse("name = \"x\"\n").unwrap_err().contains("no [[task]]"));
        let error = parse("[[task]]\nname = \"t\"\nprompt = \"p\"\n").unwrap_err();
        assert!(error.contains("at least one"), "{error}");
    }
}
