//! Consent in the terminal: the `PermissionBroker` of the CLI.
//!
//! A call that needs consent (every `Privileged` tool, and tools a rule marks) shows
//! the tool and its arguments on stderr and asks `[y]es once / [a]lways this session /
//! [n]o`. `--approve always|never` answers without asking; without a terminal on
//! stdin the answer is no (the configuration merge turns `ask` into `never` then).

use std::io::{BufRead, Write};
use std::sync::Arc;

use async_trait::async_trait;
use oxydra::executor::{PermissionBroker, PermissionDecision, PermissionRequest};

use crate::config::ApproveMode;
use crate::output::Renderer;

/// Answers permission requests for one `oxydra run` / `oxydra chat` process.
pub struct TerminalBroker {
    mode: ApproveMode,
    renderer: Arc<Renderer>,
    /// One question at a time.
    asking: tokio::sync::Mutex<()>,
}

impl TerminalBroker {
    /// A broker answering per `mode`; `renderer` is paused while a question is shown.
    pub fn new(mode: ApproveMode, renderer: Arc<Renderer>) -> Self {
        Self {
            mode,
            renderer,
            asking: tokio::sync::Mutex::new(()),
        }
    }
}

#[async_trait]
impl PermissionBroker for TerminalBroker {
    async fn request(&self, request: PermissionRequest) -> PermissionDecision {
        match self.mode {
            ApproveMode::Always => PermissionDecision::ApproveOnce,
            ApproveMode::Never => {
                tracing::info!(tool = %request.tool_name, "denied by --approve never");
                PermissionDecision::Deny
            }
            ApproveMode::Ask => {
                let _turn = self.asking.lock().await;
                self.renderer.suspend();
                let asked = tokio::task::spawn_blocking(move || {
                    let stdin = std::io::stdin();
                    let mut input = stdin.lock();
                    let mut err = std::io::stderr();
                    ask(&mut input, &mut err, &request)
                })
                .await;
                asked.unwrap_or(PermissionDecision::Deny)
            }
        }
    }
}

/// Shows `request` on `out` and reads the answer from `input`. An unclear answer is
/// asked again (three times at most); end of input, or no clear answer, denies.
pub fn ask(
    input: &mut impl BufRead,
    out: &mut impl Write,
    request: &PermissionRequest,
) -> PermissionDecision {
    let arguments = serde_json::to_string_pretty(&request.arguments)
        .unwrap_or_else(|_| request.arguments.to_string());
    let _ = writeln!(
        out,
        "\n{} ({}) asks for permission{}:",
        request.tool_name,
        request.tier.as_str(),
        if request.reason.is_empty() {
            String::new()
        } else {
            format!(" — {}", request.reason)
        }
    );
    for line in arguments.lines() {
        let _ = writeln!(out, "    {line}");
    }
    for _ in 0..3 {
        let _ = write!(out, "Allow? [y]es once / [a]lways this session / [n]o: ");
        let _ = out.flush();
        let mut answer = String::new();
        match input.read_line(&mut answer) {
            Ok(0) | Err(_) => {
                let _ = writeln!(out);
                return PermissionDecision::Deny;
            }
            Ok(_) => {}
        }
        match answer.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => return PermissionDecision::ApproveOnce,
            "a" | "always" => return PermissionDecision::ApproveForScope,
            "n" | "no" => return PermissionDecision::Deny,
            _ => {}
        }
    }
    PermissionDecision::Deny
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra::executor::PermissionScope;
    use oxydra::types::{CallId, SafetyTier, SessionId};

    fn request() -> PermissionRequest {
        PermissionRequest {
            tool_name: "shell_exec".into(),
            arguments: serde_json::json!({"command": "ls -la"}),
            tier: SafetyTier::Privileged,
            scope: PermissionScope::Session,
            session_id: SessionId::from("ses_1"),
            call_id: CallId::from("c1"),
            reason: String::new(),
        }
    }

    fn answer(input: &str) -> (PermissionDecision, String) {
        let mut out = Vec::new();
        let decision = ask(&mut input.as_bytes(), &mut out, &request());
        (decision, String::from_utf8(out).unwrap())
    }

    #[test]
    fn answers_map_to_decisions() {
        let (decision, shown) = answer("y\n");
        assert_eq!(decision, PermissionDecision::ApproveOnce);
        assert!(shown.contains("shell_exec (privileged)"));
        assert!(shown.contains("\"command\": \"ls -la\""));
        assert!(shown.contains("[y]es once / [a]lways this session / [n]o"));
        assert_eq!(answer("a\n").0, PermissionDecision::ApproveForScope);
        assert_eq!(answer("No\n").0, PermissionDecision::Deny);
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
        let always = TerminalBroker::new(ApproveMode::Always, Arc::clone(&renderer));
        assert_eq!(
            always.request(request()).await,
            PermissionDecision::ApproveOnce
        );
        let never = TerminalBroker::new(ApproveMode::Never, renderer);
        assert_eq!(never.request(request()).await, PermissionDecision::Deny);
    }
}
