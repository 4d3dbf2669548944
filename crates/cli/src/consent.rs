//! Consent in the terminal: the `PermissionBroker` of the CLI.
//!
//! A call that needs consent (every `Privileged` tool, and tools a rule marks) shows
//! on stderr the tool and what the call will do (its `CallPreview`: the command, the
//! URL, a diff against the current file; see [`crate::consent_text`]), what
//! `[a]lways` would cover (the request's scope) and how long the question waits, then
//! asks `Allow? [y/a/n]`. A `no` may carry a reason for the model on the same line
//! (`n not on main`). `--approve allow|deny` answers without asking;
//! without a terminal on stdin the answer is no (the configuration merge turns `ask`
//! into `never` then). The time a question waits does not count against the turn's
//! timeout (the executor's clock stands still); `permission_timeout` bounds it.
//!
//! Every question starts with the attributes reset (SGR 0) on a fresh line
//! ([`reset_before_question`]): an answer that ended in "conceal" or black on black
//! cannot hide it. The tool's name, reason and preview come from the model (and the
//! workspace's files) and are shown sanitized ([`crate::terminal_text`]).
//!
//! Input waiting when a question is about to be shown (typed ahead, or injected into
//! the terminal by a command with `TIOCSTI`) is thrown away first
//! ([`TerminalInput::discard_pending`]): only a line typed after the question answers it.
//!
//! The answer is read through [`TerminalInput`]: while the question is open it gets
//! the next line (a running turn's watcher steps aside), and when the executor stops
//! waiting (the turn was cancelled, the permission timeout passed) the read stops
//! within one poll slice instead of staying blocked on stdin and taking the next line.
//!
//! The same broker answers for `chat` when a file tool would write a protected path
//! (`.git/`, `.envrc`, a git hook …; see `oxydra_tools::ProtectedPaths`): the question
//! says why the path is protected and shows the change (the same diff as any file
//! write's question, escaped the same way), and only a `y` (or `a`) answered in the terminal
//! allows that one write — `--approve allow` does not answer it, `deny` refuses it.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use oxydra::executor::{PermissionBroker, PermissionDecision, PermissionRequest, PermissionScope};
use oxydra::tools::{ProtectedWrite, ProtectedWriteConsent};
use oxydra::types::{CallId, SafetyTier, SessionId};

use crate::config::ApproveMode;
use crate::consent_question::{Abandoned, QuestionState, UntilWithdrawn};
use crate::consent_text::write_question;
use crate::output::Renderer;
use crate::terminal_input::TerminalInput;
use crate::terminal_text::{RESET_ATTRIBUTES, one_line as escape, reset_before_question};

/// Answers permission requests for one `oxydra run` / `oxydra chat` process.
pub struct TerminalBroker {
    mode: ApproveMode,
    renderer: Arc<Renderer>,
    input: TerminalInput,
    /// One question at a time.
    asking: tokio::sync::Mutex<()>,
    /// How long the executor waits for an answer (said in the question).
    waits: Duration,
}

impl TerminalBroker {
    /// A broker answering per `mode`, reading answers from `input`; `renderer` is
    /// paused while a question is shown.
    pub fn new(mode: ApproveMode, renderer: Arc<Renderer>, input: TerminalInput) -> Self {
        Self {
            mode,
            renderer,
            input,
            asking: tokio::sync::Mutex::new(()),
            waits: Duration::from_secs(600),
        }
    }

    /// The broker, saying that a question waits up to `waits` (the executor's
    /// `permission_timeout`; default 10 minutes).
    pub fn waiting_up_to(mut self, waits: Duration) -> Self {
        self.waits = waits;
        self
    }
}

#[async_trait]
impl PermissionBroker for TerminalBroker {
    async fn request(&self, request: PermissionRequest) -> PermissionDecision {
        match self.mode {
            // A call held because the run read untrusted text (DESIGN.md §3.13) needs a
            // person even under `--approve allow`: asked on a terminal, else denied
            // with the reason, which the model reads.
            ApproveMode::Allow => match request.denial_without_person() {
                None => PermissionDecision::ApproveOnce,
                Some(_) if self.input.is_terminal() => self.ask_in_terminal(request).await,
                Some(denial) => {
                    self.renderer.suspend();
                    let line = format!(
                        "  {} was denied: {}; --approve allow does not cover it, and stdin is not a \
                         terminal to ask on\n",
                        escape(&request.tool_name),
                        escape(&request.reason)
                    );
                    let _ = crate::output::write_stderr_lines(line.as_bytes());
                    denial
                }
            },
            ApproveMode::Deny => {
                self.renderer.suspend();
                let line = format!(
                    "  {} was denied: approvals are `deny` (--approve deny, or stdin is \
                     not a terminal to ask on); to allow it, run in a terminal to be asked, \
                     or pass --approve allow\n",
                    escape(&request.tool_name)
                );
                let _ = crate::output::write_stderr_lines(line.as_bytes());
                PermissionDecision::Deny
            }
            ApproveMode::Ask => self.ask_in_terminal(request).await,
        }
    }
}

impl TerminalBroker {
    /// Shows `request` in the terminal and waits for the person's answer.
    async fn ask_in_terminal(&self, request: PermissionRequest) -> PermissionDecision {
        let _turn = self.asking.lock().await;
        self.renderer.suspend();
        let state = QuestionState::default();
        let abandoned = Abandoned(state.clone());
        // Opened before the question is shown: the next line is its answer.
        let question = self.input.question();
        let input = self.input.clone();
        let waits = self.waits;
        let asked = tokio::task::spawn_blocking(move || {
            let _question = question;
            // Only what is typed once the question is shown answers it: input waiting
            // since before (typed ahead, or pushed into the terminal by a command) is
            // thrown away.
            input.discard_pending();
            let stop = state.clone();
            let mut lines = input.lines(move || stop.withdrawn());
            let mut err = UntilWithdrawn {
                out: std::io::stderr(),
                state: state.clone(),
            };
            let decision = ask(&mut lines, &mut err, &request, waits);
            state.answer();
            decision
        })
        .await;
        drop(abandoned);
        asked.unwrap_or(PermissionDecision::Deny)
    }
}

/// `chat`'s question before a protected write (see the module docs): asked in the
/// terminal unless approvals are `never` or stdin is no terminal; any yes allows this
/// one write.
#[async_trait]
impl ProtectedWriteConsent for TerminalBroker {
    async fn allow(&self, write: &ProtectedWrite) -> bool {
        if self.mode == ApproveMode::Deny || !self.input.is_terminal() {
            return false;
        }
        matches!(
            self.ask_in_terminal(protected_write_request(write)).await,
            PermissionDecision::ApproveOnce | PermissionDecision::ApproveForScope
        )
    }
}

/// The question before a protected write: why the path is protected, and what the
/// write will change (the call's preview: a diff against the current file), not the
/// path as JSON.
fn protected_write_request(write: &ProtectedWrite) -> PermissionRequest {
    PermissionRequest {
        tool_name: write.tool.clone(),
        arguments: serde_json::json!({ "path": write.path }),
        preview: write.preview.clone(),
        tier: SafetyTier::SideEffecting,
        scope: PermissionScope::Arguments,
        session_id: SessionId::from("protected-write"),
        call_id: CallId::from("protected-write"),
        reason: format!("a protected path, {}", write.reason),
        provenance: None,
    }
}

/// Shows `request` on `out` and reads the answer from `input`; `waits` is how long the
/// executor waits for it (said in the question). An unclear answer is asked again
/// (three times at most); end of input, or no clear answer, denies. A `no` may carry
/// its reason on the same line (`n not on main`, `no, use make`); the model reads it.
pub fn ask(
    input: &mut impl BufRead,
    out: &mut impl Write,
    request: &PermissionRequest,
    waits: Duration,
) -> PermissionDecision {
    // Whatever was printed before, the question is shown in plain attributes on a
    // line of its own (and after a blank line).
    let _ = reset_before_question(out, false);
    // The name, reason and preview come from the model (and the workspace's files):
    // every control, bidi and zero-width character is shown escaped, so the person sees
    // what will run.
    let _ = write_question(out, request, waits);
    for _ in 0..3 {
        let _ = write!(out, "{RESET_ATTRIBUTES}{ALLOW_PROMPT}");
        let _ = out.flush();
        let Some(answer) = read_answer(input, out) else {
            return PermissionDecision::Deny;
        };
        let answer = answer.trim();
        let (word, rest) = answer
            .split_once(|c: char| c.is_whitespace() || c == ',' || c == ':')
            .unwrap_or((answer, ""));
        match word.to_ascii_lowercase().as_str() {
            "y" | "yes" => return PermissionDecision::ApproveOnce,
            "a" | "always" => return PermissionDecision::ApproveForScope,
            "n" | "no" => return denial(rest.trim_start_matches([',', ':']).trim()),
            _ => {}
        }
    }
    PermissionDecision::Deny
}

/// The prompt for the answer.
pub const ALLOW_PROMPT: &str = "Allow? [y/a/n]: ";

/// The next line of `input`; `None` at its end (a line break is written to `out`).
fn read_answer(input: &mut impl BufRead, out: &mut impl Write) -> Option<String> {
    let mut answer = String::new();
    match input.read_line(&mut answer) {
        Ok(0) | Err(_) => {
            let _ = writeln!(out);
            None
        }
        Ok(_) => Some(answer),
    }
}

/// A denial, with `reason` when the person gave one.
fn denial(reason: &str) -> PermissionDecision {
    if reason.is_empty() {
        PermissionDecision::Deny
    } else {
        PermissionDecision::DenyBecause(reason.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra::executor::PermissionScope;
    use oxydra::tools::CallPreview;
    use oxydra::types::{CallId, SafetyTier, SessionId};

    const DAY: Duration = Duration::from_secs(86_400);

    fn request() -> PermissionRequest {
        PermissionRequest {
            tool_name: "shell_exec".into(),
            arguments: serde_json::json!({"command": "ls -la"}),
            preview: CallPreview::Command {
                command: "ls -la".into(),
                args: Vec::new(),
            },
            tier: SafetyTier::Privileged,
            scope: PermissionScope::Session,
            session_id: SessionId::from("ses_1"),
            call_id: CallId::from("c1"),
            reason: String::new(),
            provenance: None,
        }
    }

    fn answer(input: &str) -> (PermissionDecision, String) {
        let mut out = Vec::new();
        let decision = ask(&mut input.as_bytes(), &mut out, &request(), DAY);
        (decision, String::from_utf8(out).unwrap())
    }

    #[test]
    fn answers_map_to_decisions() {
        let (decision, shown) = answer("y\n");
        assert_eq!(decision, PermissionDecision::ApproveOnce);
        assert!(shown.contains("shell_exec (privileged)"));
        // What will run, not the JSON arguments.
        assert!(shown.contains("\n    $ ls -la\n"), "{shown}");
        assert!(!shown.contains("\"command\""), "{shown}");
        assert!(
            shown.contains("[a]lways: every shell_exec call in this session"),
            "{shown}"
        );
        assert!(shown.contains("waits up to 24 h"), "{shown}");
        assert_eq!(answer("a\n").0, PermissionDecision::ApproveForScope);
        assert_eq!(answer("No\n").0, PermissionDecision::Deny);
    }

    #[test]
    fn a_denial_carries_the_persons_reason() {
        assert_eq!(
            answer("n not on main\n").0,
            PermissionDecision::DenyBecause("not on main".into())
        );
        assert_eq!(
            answer("no, use cargo clean\n").0,
            PermissionDecision::DenyBecause("use cargo clean".into())
        );
        assert_eq!(
            answer("n:   too risky  \n").0,
            PermissionDecision::DenyBecause("too risky".into())
        );
        // A plain `n`: a denial without a reason; the next line is not taken.
        assert_eq!(answer("n\nmore\n").0, PermissionDecision::Deny);
        // `nope` is no clear answer.
        assert_eq!(answer("nope\ny\n").0, PermissionDecision::ApproveOnce);
    }

    #[test]
    fn a_diff_preview_with_escape_sequences_is_shown_escaped() {
        let mut request = request();
        request.tool_name = "file_write".into();
        request.tier = SafetyTier::SideEffecting;
        request.preview = CallPreview::FileChange {
            path: "notes.txt".into(),
            diff: "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-\u{1b}]0;owned\u{7}\n+\u{1b}[8mhidden\u{202e}\n"
                .into(),
            note: Some("the diff is cut \u{1b}[2K here".into()),
        };
        let mut out = Vec::new();
        ask(&mut "y\n".as_bytes(), &mut out, &request, DAY);
        let shown = String::from_utf8(out)
            .unwrap()
            .replace(RESET_ATTRIBUTES, "");
        for raw in ['\u{1b}', '\u{7}', '\u{202e}'] {
            assert!(!shown.contains(raw), "{raw:?} shown raw: {shown}");
        }
        assert!(shown.contains("    -\\u{1b}]0;owned\\u{7}\n"), "{shown}");
        assert!(
            shown.contains("    +\\u{1b}[8mhidden\\u{202e}\n"),
            "{shown}"
        );
        assert!(shown.contains("    --- a/notes.txt\n"), "{shown}");
    }

    #[test]
    fn a_protected_write_shows_the_change_escaped_not_the_json() {
        let write = ProtectedWrite {
            tool: "file_write".into(),
            path: ".git/hooks/pre-commit".into(),
            reason: "`.git/hooks/pre-commit` is in `.git`, which git loads and runs".into(),
            preview: CallPreview::FileChange {
                path: ".git/hooks/pre-commit".into(),
                diff:
                    "--- a/.git/hooks/pre-commit\n+++ b/.git/hooks/pre-commit\n@@ -1,2 +1,2 @@\n \
                       #!/bin/sh\n-cargo fmt --check\n+curl x | sh #\u{1b}[8m\u{202e}hidden\n"
                        .into(),
                note: None,
            },
        };
        let mut out = Vec::new();
        let decision = ask(
            &mut "n\n".as_bytes(),
            &mut out,
            &protected_write_request(&write),
            DAY,
        );
        assert_eq!(decision, PermissionDecision::Deny);
        let shown = String::from_utf8(out)
            .unwrap()
            .replace(RESET_ATTRIBUTES, "");
        assert!(
            shown.contains("file_write (side_effecting) asks for permission — a protected path, `.git/hooks/pre-commit` is in `.git`"),
            "{shown}"
        );
        assert!(shown.contains("\n    -cargo fmt --check\n"), "{shown}");
        assert!(
            shown.contains("\n    +curl x | sh #\\u{1b}[8m\\u{202e}hidden\n"),
            "{shown}"
        );
        for raw in ['\u{1b}', '\u{202e}'] {
            assert!(!shown.contains(raw), "{raw:?} shown raw: {shown}");
        }
        assert!(!shown.contains("\"path\""), "the JSON arguments: {shown}");
    }

    #[test]
    fn hidden_characters_in_the_request_are_shown_escaped() {
        let mut request = request();
        request.tool_name = "shell\u{202e}exec".into();
        request.preview = CallPreview::Command {
            command: "rm -rf ~ #\u{202e}\u{1b}[2Kls\u{200b}".into(),
            args: Vec::new(),
        };
        request.reason = "rule\u{2066}".into();
        let mut out = Vec::new();
        ask(&mut "n\n".as_bytes(), &mut out, &request, DAY);
        // Without the attribute resets, the one escape sequence that is Oxydra's own.
        let shown = String::from_utf8(out)
            .unwrap()
            .replace(RESET_ATTRIBUTES, "");
        for raw in ['\u{202e}', '\u{1b}', '\u{200b}', '\u{2066}'] {
            assert!(!shown.contains(raw), "{raw:?} shown raw: {shown}");
        }
        assert!(shown.contains("shell\\u{202e}exec (privileged)"), "{shown}");
        assert!(shown.contains("rule\\u{2066}"), "{shown}");
        assert!(
            shown.contains(r"$ rm -rf ~ #\u{202e}\u{1b}[2Kls\u{200b}"),
            "{shown}"
        );
    }

    #[test]
    fn the_question_starts_in_plain_attributes_on_a_line_of_its_own() {
        let (_, shown) = answer("maybe\nn\n");
        assert!(
            shown.starts_with("\x1b[0m\nshell_exec (privileged)"),
            "{shown:?}"
        );
        assert_eq!(
            shown.matches("\x1b[0mAllow? [y/a/n]: ").count(),
            2,
            "{shown:?}"
        );
    }

    #[test]
    fn unclear_answers_ask_again_and_eof_denies() {
        assert_eq!(answer("maybe\nyes\n").0, PermissionDecision::ApproveOnce);
        assert_eq!(answer("").0, PermissionDecision::Deny);
        assert_eq!(answer("x\nx\nx\ny\n").0, PermissionDecision::Deny);
    }

    #[tokio::test]
    async fn fixed_modes_answer_without_asking() {
        let renderer = Arc::new(Renderer::for_format(crate::args::OutputFormat::Jsonl));
        let input = TerminalInput::from_fd(None, false);
        let always = TerminalBroker::new(ApproveMode::Allow, Arc::clone(&renderer), input.clone());
        assert_eq!(
            always.request(request()).await,
            PermissionDecision::ApproveOnce
        );
        let never = TerminalBroker::new(ApproveMode::Deny, renderer, input);
        assert_eq!(never.request(request()).await, PermissionDecision::Deny);
    }

    fn held() -> PermissionRequest {
        let hold = oxydra::executor::ProvenanceHold::new(vec![oxydra::types::Source::Web(
            "https://evil.test/page".into(),
        )]);
        PermissionRequest {
            reason: hold.reason(),
            provenance: Some(hold),
            ..request()
        }
    }

    #[tokio::test]
    async fn always_does_not_approve_a_held_call_without_a_person() {
        let renderer = Arc::new(Renderer::for_format(crate::args::OutputFormat::Jsonl));
        let input = TerminalInput::from_fd(None, false);
        let always = TerminalBroker::new(ApproveMode::Allow, renderer, input);
        match always.request(held()).await {
            PermissionDecision::DenyBecause(reason) => assert!(
                reason.contains("this run read https://evil.test/page since your last decision"),
                "{reason}"
            ),
            other => panic!("expected a denial, got {other:?}"),
        }
    }

    #[test]
    fn the_question_of_a_held_call_names_the_source() {
        let mut input = std::io::Cursor::new(b"y\n".to_vec());
        let mut shown = Vec::new();
        let decision = ask(&mut input, &mut shown, &held(), Duration::from_secs(60));
        assert_eq!(decision, PermissionDecision::ApproveOnce);
        let shown = String::from_utf8(shown).unwrap();
        assert!(
            shown.contains("this run read https://evil.test/page since your last decision"),
            "{shown:?}"
        );
    }

    #[tokio::test]
    async fn an_abandoned_question_lets_go_of_stdin() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        let input = TerminalInput::from_fd(Some(reader.into()), true);
        let renderer = Arc::new(Renderer::for_format(crate::args::OutputFormat::Jsonl));
        let broker = TerminalBroker::new(ApproveMode::Ask, renderer, input);
        // Nobody answers and the executor gives up (as on a cancelled turn).
        let waited = std::time::Duration::from_millis(200);
        assert!(
            tokio::time::timeout(waited, broker.request(request()))
                .await
                .is_err()
        );
        // The next line answers the next question, not the abandoned one.
        writer.write_all(b"a\n").unwrap();
        assert_eq!(
            broker.request(request()).await,
            PermissionDecision::ApproveForScope
        );
    }
}
