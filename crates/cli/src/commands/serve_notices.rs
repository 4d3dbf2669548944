//! What `oxydra serve` says when a run starts waiting for a person: one line on
//! stderr per approval request, with what it will do and the command that decides it
//! (`oxydra approvals approve <id> --server URL`). The store is read every half
//! second, so requests of runs another `serve` process suspended on a shared database
//! are said too.

use std::collections::HashSet;
use std::time::Duration;

use oxydra::coordinator::{ApprovalPreview, ApprovalView, Coordinator};
use tokio_util::sync::CancellationToken;

use crate::terminal_text::one_line;

/// How often the waiting approvals are read.
const POLL: Duration = Duration::from_millis(500);

/// The line said of `approval`, decided through `server`.
pub fn notice(approval: &ApprovalView, server: &str) -> String {
    let waiting = &approval.waiting;
    let what = match &approval.preview {
        ApprovalPreview::Command { command } => format!("`{}`", one_line(command)),
        ApprovalPreview::Url { url } => one_line(url).into_owned(),
        ApprovalPreview::Diff { path, .. } => one_line(path).into_owned(),
        ApprovalPreview::Arguments { .. } => String::from("(see its arguments)"),
    };
    format!(
        "oxydra serve: run {} ({}) waits for approval of {} {what}: oxydra approvals approve {} \
         --server {server} (or deny)",
        one_line(&waiting.run_id),
        one_line(&waiting.agent_name),
        one_line(&waiting.approval.tool),
        one_line(waiting.approval.approval_id.as_str()),
    )
}

/// Says each approval request of `coordinator` once, as it appears, until `stop`.
pub fn spawn(coordinator: Coordinator, server: String, stop: CancellationToken) {
    tokio::spawn(async move {
        let mut said: HashSet<String> = HashSet::new();
        loop {
            match coordinator.waiting_approvals().await {
                Ok(waiting) => {
                    let listed: HashSet<String> = waiting
                        .iter()
                        .map(|view| view.waiting.approval.approval_id.as_str().to_owned())
                        .collect();
                    for view in &waiting {
                        let id = view.waiting.approval.approval_id.as_str();
                        if !said.contains(id) {
                            eprintln!("{}", notice(view, &server));
                        }
                    }
                    // Forget decided requests: the set stays as small as what waits.
                    said = listed;
                }
                Err(error) => tracing::warn!(%error, "cannot list the waiting approvals"),
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(POLL) => {}
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra::coordinator::{PendingApproval, WaitingApproval};

    #[test]
    fn the_line_says_the_command_that_decides_and_escapes_what_the_model_wrote() {
        let approval: PendingApproval = serde_json::from_value(serde_json::json!({
            "approval_id": "apr_1", "call_id": "c1", "tool": "shell_exec",
            "arguments": "{}", "tier": "privileged", "scope": "session",
            "requested_at": 1, "expires_at": 2,
        }))
        .unwrap();
        let view = ApprovalView {
            waiting: WaitingApproval {
                run_id: "run_1".into(),
                agent_name: "builder".into(),
                approval,
            },
            preview: ApprovalPreview::Command {
                command: "make\n\u{1b}[2Jclean".into(),
            },
        };
        let line = notice(&view, "http://127.0.0.1:8080");
        assert!(
            line.contains("oxydra approvals approve apr_1 --server http://127.0.0.1:8080"),
            "{line}"
        );
        assert!(!line.contains('\n') && !line.contains('\u{1b}'), "{line:?}");
    }
}
