//! [`Check`]: one test of a run's outcome — a file of the workspace, the answer, the
//! tool calls, the turns or the cost.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::fixture;
use super::record::RunRecord;

/// One check of a run's outcome. A run succeeds when every check of its task passes.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Check {
    /// The file (relative to the workspace) holds exactly this text
    /// (`file = "a.txt"`, `equals = "…"`; a trailing newline of either is ignored).
    FileEquals {
        /// The file.
        path: PathBuf,
        /// Its expected content.
        content: String,
    },
    /// The file holds this text (`contains = "…"`).
    FileContains {
        /// The file.
        path: PathBuf,
        /// The text.
        text: String,
    },
    /// The file's content matches this regex (`matches = "…"`).
    FileMatches {
        /// The file.
        path: PathBuf,
        /// The regex.
        regex: regex::Regex,
    },
    /// The file does not exist (`absent = true`).
    FileAbsent {
        /// The file.
        path: PathBuf,
    },
    /// The final answer holds this text (`answer_contains`), ignoring case.
    AnswerContains(String),
    /// The final answer matches this regex (`answer_matches`).
    AnswerMatches(regex::Regex),
    /// The tool was called (`tool_called`), exactly `count` times when given.
    ToolCalled {
        /// The tool's name.
        name: String,
        /// How many calls; `None`: at least one.
        count: Option<usize>,
    },
    /// The tool was never called (`tool_not_called`).
    ToolNotCalled(String),
    /// At most this many tool calls of any tool (`max_tool_calls`; 0: an answer
    /// without tools).
    MaxToolCalls(usize),
    /// The run took at most this many turns (`max_turns`).
    MaxTurns(usize),
    /// The run cost at most this many US dollars (`max_cost`).
    MaxCost(f64),
}

/// A check as the TOML has it: one table, one kind of check.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCheck {
    file: Option<String>,
    equals: Option<String>,
    contains: Option<String>,
    matches: Option<String>,
    absent: Option<bool>,
    answer_contains: Option<String>,
    answer_matches: Option<String>,
    tool_called: Option<String>,
    count: Option<usize>,
    tool_not_called: Option<String>,
    max_tool_calls: Option<usize>,
    max_turns: Option<usize>,
    max_cost: Option<f64>,
}

/// `Err((key, message))` of a check that cannot be used.
type RawResult = Result<Check, (&'static str, String)>;

fn regex(key: &'static str, pattern: &str) -> Result<regex::Regex, (&'static str, String)> {
    regex::Regex::new(pattern).map_err(|error| (key, format!("invalid regex: {error}")))
}

impl Check {
    /// The check of a `[[task.check]]` table.
    pub(super) fn from_raw(raw: RawCheck) -> RawResult {
        let file_keys = [
            raw.equals.is_some(),
            raw.contains.is_some(),
            raw.matches.is_some(),
            raw.absent.is_some(),
        ];
        let file_key_count = file_keys.iter().filter(|&&key| key).count();
        if raw.file.is_none() && file_key_count > 0 {
            return Err((
                "file",
                "equals, contains, matches and absent need `file`".into(),
            ));
        }
        let kinds = [
            raw.file.is_some(),
            raw.answer_contains.is_some(),
            raw.answer_matches.is_some(),
            raw.tool_called.is_some(),
            raw.tool_not_called.is_some(),
            raw.max_tool_calls.is_some(),
            raw.max_turns.is_some(),
            raw.max_cost.is_some(),
        ];
        if kinds.iter().filter(|&&kind| kind).count() != 1 {
            return Err((
                "",
                "a check takes exactly one of file, answer_contains, answer_matches, \
                 tool_called, tool_not_called, max_tool_calls, max_turns, max_cost"
                    .into(),
            ));
        }
        if raw.count.is_some() && raw.tool_called.is_none() {
            return Err(("count", "`count` goes with `tool_called` only".into()));
        }
        if let Some(file) = raw.file {
            let path = fixture::relative(&file).map_err(|message| ("file", message))?;
            if file_key_count != 1 {
                return Err((
                    "file",
                    "a file check takes exactly one of equals, contains, matches, absent".into(),
                ));
            }
            return Ok(if let Some(content) = raw.equals {
                Self::FileEquals { path, content }
            } else if let Some(text) = raw.contains {
                Self::FileContains { path, text }
            } else if let Some(pattern) = raw.matches {
                Self::FileMatches {
                    path,
                    regex: regex("matches", &pattern)?,
                }
            } else if raw.absent == Some(true) {
                Self::FileAbsent { path }
            } else {
                return Err(("absent", "only `absent = true` is a check".into()));
            });
        }
        if let Some(text) = raw.answer_contains {
            return Ok(Self::AnswerContains(text));
        }
        if let Some(pattern) = raw.answer_matches {
            return Ok(Self::AnswerMatches(regex("answer_matches", &pattern)?));
        }
        if let Some(name) = raw.tool_called {
            return Ok(Self::ToolCalled {
                name,
                count: raw.count,
            });
        }
        if let Some(name) = raw.tool_not_called {
            return Ok(Self::ToolNotCalled(name));
        }
        if let Some(calls) = raw.max_tool_calls {
            return Ok(Self::MaxToolCalls(calls));
        }
        if let Some(turns) = raw.max_turns {
            return Ok(Self::MaxTurns(turns));
        }
        match raw.max_cost {
            Some(cost) if cost.is_finite() && cost >= 0.0 => Ok(Self::MaxCost(cost)),
            _ => Err(("max_cost", "must be a number of dollars, 0 or more".into())),
        }
    }

    /// Judges `record`, the outcome of a run in `workspace`: `Err` says why the check
    /// failed. Blocking for file checks (it reads the file).
    ///
    /// A file check never reads outside `workspace`: a path through a symlink that
    /// leads out fails the check.
    pub fn judge(&self, record: &RunRecord, workspace: &Path) -> Result<(), String> {
        match self {
            Self::FileEquals { path, content } => {
                let found = fixture::read_in(workspace, path)?;
                let trim = |text: &str| text.strip_suffix('\n').unwrap_or(text).to_owned();
                if trim(&found) == trim(content) {
                    Ok(())
                } else {
                    Err(format!("it holds {}", quote(&found)))
                }
            }
            Self::FileContains { path, text } => {
                let found = fixture::read_in(workspace, path)?;
                if found.contains(text.as_str()) {
                    Ok(())
                } else {
                    Err(format!("it holds {}", quote(&found)))
                }
            }
            Self::FileMatches { path, regex } => {
                let found = fixture::read_in(workspace, path)?;
                if regex.is_match(&found) {
                    Ok(())
                } else {
                    Err(format!("it holds {}", quote(&found)))
                }
            }
            Self::FileAbsent { path } => match workspace.join(path).symlink_metadata() {
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(error) => Err(error.to_string()),
                Ok(_) => Err("it exists".into()),
            },
            Self::AnswerContains(text) => {
                if record.answer.to_lowercase().contains(&text.to_lowercase()) {
                    Ok(())
                } else {
                    Err(format!("the answer was {}", quote(&record.answer)))
                }
            }
            Self::AnswerMatches(regex) => {
                if regex.is_match(&record.answer) {
                    Ok(())
                } else {
                    Err(format!("the answer was {}", quote(&record.answer)))
                }
            }
            Self::ToolCalled { name, count } => {
                let calls = record.calls_of(name);
                match count {
                    Some(count) if calls != *count => Err(format!("called {calls} times")),
                    None if calls == 0 => Err("never called".into()),
                    _ => Ok(()),
                }
            }
            Self::ToolNotCalled(name) => match record.calls_of(name) {
                0 => Ok(()),
                calls => Err(format!("called {calls} times")),
            },
            Self::MaxToolCalls(max) if record.tool_calls.len() > *max => {
                Err(format!("{} tool calls", record.tool_calls.len()))
            }
            Self::MaxTurns(max) if record.turns > *max => {
                Err(format!("took {} turns", record.turns))
            }
            Self::MaxCost(max) if record.cost > *max => Err(format!("cost ${:.6}", record.cost)),
            Self::MaxToolCalls(_) | Self::MaxTurns(_) | Self::MaxCost(_) => Ok(()),
        }
    }
}

/// At most 200 characters of `text`, quoted.
fn quote(text: &str) -> String {
    let short: String = text.chars().take(200).collect();
    let more = if short.len() < text.len() { "…" } else { "" };
    format!("{short:?}{more}")
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::FileEquals { path, content } => {
                write!(f, "file {} equals {}", path.display(), quote(content))
            }
            Self::FileContains { path, text } => {
                write!(f, "file {} contains {}", path.display(), quote(text))
            }
            Self::FileMatches { path, regex } => {
                write!(f, "file {} matches /{}/", path.display(), regex.as_str())
            }
            Self::FileAbsent { path } => write!(f, "file {} absent", path.display()),
            Self::AnswerContains(text) => write!(f, "answer contains {}", quote(text)),
            Self::AnswerMatches(regex) => write!(f, "answer matches /{}/", regex.as_str()),
            Self::ToolCalled {
                name,
                count: Some(count),
            } => write!(f, "tool {name} called {count} times"),
            Self::ToolCalled { name, count: None } => write!(f, "tool {name} called"),
            Self::ToolNotCalled(name) => write!(f, "tool {name} not called"),
            Self::MaxToolCalls(max) => write!(f, "at most {max} tool calls"),
            Self::MaxTurns(max) => write!(f, "at most {max} turns"),
            Self::MaxCost(max) => write!(f, "cost at most ${max}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra_types::Usage;

    fn record(answer: &str, calls: &[&str]) -> RunRecord {
        RunRecord {
            answer: answer.into(),
            tool_calls: calls.iter().map(|&c| c.to_owned()).collect(),
            turns: 2,
            usage: Usage::default(),
            cost: 0.5,
        }
    }

    #[test]
    fn answer_tool_turn_and_cost_checks_judge_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let run = record("The Answer is 42", &["file_read", "file_read"]);
        let judge = |check: Check| check.judge(&run, dir.path());
        assert!(judge(Check::AnswerContains("answer is 42".into())).is_ok());
        assert!(judge(Check::AnswerMatches(regex::Regex::new(r"\b43\b").unwrap())).is_err());
        assert!(
            judge(Check::ToolCalled {
                name: "file_read".into(),
                count: Some(2)
            })
            .is_ok()
        );
        let once = judge(Check::ToolCalled {
            name: "file_read".into(),
            count: Some(1),
        });
        assert_eq!(once.unwrap_err(), "called 2 times");
        assert!(judge(Check::ToolNotCalled("shell".into())).is_ok());
        assert!(judge(Check::ToolNotCalled("file_read".into())).is_err());
        assert!(judge(Check::MaxTurns(1)).is_err());
        assert!(judge(Check::MaxToolCalls(2)).is_ok());
        assert_eq!(judge(Check::MaxToolCalls(0)).unwrap_err(), "2 tool calls");
        assert!(judge(Check::MaxCost(0.5)).is_ok());
        assert!(judge(Check::MaxCost(0.1)).is_err());
    }

    #[test]
    fn file_checks_read_the_workspace_and_never_outside_it() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
        std::fs::write(outside.path().join("secret"), "hello").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();
        let run = record("", &[]);
        let file = |check: Check| check.judge(&run, dir.path());
        assert!(
            file(Check::FileEquals {
                path: "a.txt".into(),
                content: "hello".into()
            })
            .is_ok()
        );
        let escaped = file(Check::FileContains {
            path: "link".into(),
            text: "hello".into(),
        });
        assert!(escaped.unwrap_err().contains("outside"));
        assert!(file(Check::FileAbsent { path: "b".into() }).is_ok());
        assert!(
            file(Check::FileAbsent {
                path: "a.txt".into()
            })
            .is_err()
        );
    }
}
