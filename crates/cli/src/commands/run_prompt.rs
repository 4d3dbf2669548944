//! The prompt of `oxydra run` and where its text came from (DESIGN.md §3.13): the
//! argument is the person's words; text read from stdin is another program's output
//! (a pipe, a socket, a device: [`Source::Command`]) or a file's contents (stdin
//! redirected from a regular file: [`Source::Workspace`], the kind for files the person
//! did not necessarily write); attached files (`--image`) are [`Source::Workspace`].
//!
//! A prompt read whole from stdin (`oxydra run -`, `cmd | oxydra run`) is marked too:
//! a script piping its own prompt cannot be told from a file or a program carrying
//! someone else's words. The default `[provenance]` policy holds neither `command` nor
//! `workspace`, so marking changes nothing until a person turns them on; one who has
//! and wants a prompt to count as their own words gives it as the argument.

use std::io::{IsTerminal, Read};

use oxydra::types::Source;

use crate::error::CliError;

/// What stdin is, as far as where text read from it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdin {
    /// A terminal: the person types.
    Terminal,
    /// A pipe or FIFO (`cmd | oxydra run …`).
    Pipe,
    /// A regular file (`oxydra run … < file`).
    File,
    /// Anything else: a socket, a device such as `/dev/null`, or closed.
    Other,
}

impl Stdin {
    /// What the process's stdin is.
    pub fn of_process() -> Self {
        use nix::sys::stat::{SFlag, fstat};
        if std::io::stdin().is_terminal() {
            return Self::Terminal;
        }
        let Ok(stat) = fstat(std::io::stdin()) else {
            return Self::Other;
        };
        match SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT {
            SFlag::S_IFIFO => Self::Pipe,
            SFlag::S_IFREG => Self::File,
            _ => Self::Other,
        }
    }

    /// Whether text piped beside a prompt argument is read: from a pipe or a file,
    /// never a terminal or a device such as `/dev/null` (which could wait forever).
    pub fn is_piped(self) -> bool {
        matches!(self, Self::Pipe | Self::File)
    }

    /// Where text read from it came from: `None` for the person at a terminal.
    pub fn source(self) -> Option<Source> {
        match self {
            Self::Terminal => None,
            Self::File => Some(Source::Workspace),
            Self::Pipe | Self::Other => Some(Source::Command),
        }
    }
}

/// The prompt of a run and every source of its text but the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The text sent as the user's message.
    pub text: String,
    /// Where the text came from besides the person, in the order it appears; empty
    /// for the person's words alone.
    pub sources: Vec<Source>,
}

/// The prompt argument, or stdin when it is `-`. Text piped in beside a prompt
/// argument (`git diff | oxydra run "Review this"`) follows the prompt after a blank
/// line, as `llm` and `codex exec` do; stdin is read only when it is a pipe or a file,
/// never a terminal or a device such as `/dev/null`.
pub fn prompt_text(prompt: Option<&str>) -> Result<Prompt, CliError> {
    prompt_from(prompt, Stdin::of_process(), || {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map(|_| text)
            .map_err(|source| CliError::Stdio {
                what: "cannot read the prompt from stdin",
                source,
            })
    })
}

/// [`prompt_text`] with `stdin` of the kind given and read by `read_stdin`.
pub fn prompt_from(
    prompt: Option<&str>,
    stdin: Stdin,
    read_stdin: impl FnOnce() -> Result<String, CliError>,
) -> Result<Prompt, CliError> {
    let from_stdin = |text: String| Prompt {
        text,
        sources: stdin.source().into_iter().collect(),
    };
    let prompt = match prompt {
        Some("-") => from_stdin(read_stdin()?),
        Some(text) if stdin.is_piped() => match join_piped(text, &read_stdin()?) {
            Some(joined) => from_stdin(joined),
            None => person(text),
        },
        Some(text) => person(text),
        None => person(""),
    };
    non_empty(prompt)
}

/// The person's own words.
fn person(text: &str) -> Prompt {
    Prompt {
        text: text.to_owned(),
        sources: Vec::new(),
    }
}

/// The prompt followed by the text piped in; `None` when nothing but blanks was.
fn join_piped(prompt: &str, piped: &str) -> Option<String> {
    let piped = piped.trim_end();
    (!piped.trim().is_empty()).then(|| format!("{prompt}\n\n{piped}"))
}

fn non_empty(prompt: Prompt) -> Result<Prompt, CliError> {
    if prompt.text.trim().is_empty() {
        Err(CliError::Flag {
            flag: "<PROMPT>",
            message: "the prompt is empty: give it as the argument, or on stdin".into(),
        })
    } else {
        Ok(prompt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piped(text: &'static str) -> impl FnOnce() -> Result<String, CliError> {
        move || Ok(text.to_owned())
    }

    fn never() -> Result<String, CliError> {
        panic!("stdin read")
    }

    #[test]
    fn piped_text_follows_the_prompt_after_a_blank_line() {
        assert_eq!(
            join_piped("Summarise this", "line one\nline two\n\n").as_deref(),
            Some("Summarise this\n\nline one\nline two")
        );
        assert_eq!(join_piped("Summarise this", " \n"), None);
        assert_eq!(join_piped("Summarise this", ""), None);
    }

    #[test]
    fn an_argument_alone_is_the_persons_words() {
        for stdin in [Stdin::Terminal, Stdin::Other] {
            let prompt = prompt_from(Some("do it"), stdin, never).unwrap();
            assert_eq!(prompt, person("do it"), "{stdin:?}");
        }
        // Nothing but blanks piped beside it adds no text, so no source.
        let prompt = prompt_from(Some("do it"), Stdin::Pipe, piped(" \n")).unwrap();
        assert_eq!(prompt, person("do it"));
    }

    #[test]
    fn text_piped_beside_the_argument_is_a_commands_or_a_files() {
        let prompt = prompt_from(Some("summarise"), Stdin::Pipe, piped("run rm\n")).unwrap();
        assert_eq!(prompt.text, "summarise\n\nrun rm");
        assert_eq!(prompt.sources, vec![Source::Command]);
        let prompt = prompt_from(Some("summarise"), Stdin::File, piped("notes")).unwrap();
        assert_eq!(prompt.sources, vec![Source::Workspace]);
    }

    #[test]
    fn a_prompt_read_whole_from_stdin_is_marked_by_what_stdin_is() {
        let cases = [
            (Stdin::Pipe, Some(Source::Command)),
            (Stdin::File, Some(Source::Workspace)),
            (Stdin::Other, Some(Source::Command)),
            (Stdin::Terminal, None),
        ];
        for (stdin, source) in cases {
            let prompt = prompt_from(Some("-"), stdin, piped("fix it\n")).unwrap();
            assert_eq!(prompt.text, "fix it\n");
            assert_eq!(prompt.sources, source.into_iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn an_empty_prompt_is_refused_naming_the_argument() {
        for (prompt, stdin) in [
            (Some("-"), Stdin::Pipe),
            (Some(" "), Stdin::Pipe),
            (None, Stdin::Terminal),
        ] {
            let error = prompt_from(prompt, stdin, piped("\n")).unwrap_err();
            assert!(error.to_string().contains("<PROMPT>"), "{error}");
        }
        let failing = || {
            Err(CliError::Stdio {
                what: "cannot read the prompt from stdin",
                source: std::io::Error::other("gone"),
            })
        };
        assert!(prompt_from(Some("-"), Stdin::Pipe, failing).is_err());
    }
}
