//! `oxydra serve` says when a run starts waiting: one line on stderr with what the
//! call will do and the command that decides it; a trusted `[[hooks]]` `on_event`
//! command gets the `approval_requested` event (to wire a chat or mail notice).

use crate::common;

use common::Sandbox;
use common::approvals::{
    ASK_CONFIG, start_run, the_pending_write, wait_for_status, writer_provider,
};
use common::serve::{Server, runtime};
use oxydra::tools::{SandboxSupport, sandbox_support};
use serde_json::Value;

#[test]
fn serve_says_a_waiting_run_with_the_command_that_decides_it_and_hooks_hear_of_it() {
    let rt = runtime();
    let provider = writer_provider();
    let sandbox = Sandbox::new();
    let heard = sandbox.workspace.join("heard.jsonl");
    sandbox.write_trusted_config(&format!(
        r#"{ASK_CONFIG}
[[hooks]]
event = "on_event"
name = "notify"
matcher = ["approval_requested"]
command = ["sh", "-c", "cat >> '{}'; echo '{{}}'"]
"#,
        heard.display()
    ));
    let url = provider.openai_url();
    let mut args = vec!["--addr", "127.0.0.1:0", "--base-url", &url];
    if matches!(sandbox_support(), SandboxSupport::Unavailable { .. }) {
        args.extend(["--sandbox", "full-access"]);
    }
    let server = Server::start_with(&sandbox, &[], &args);
    let client = oxydra::http::client();
    let (run_id, approval_id) = rt.block_on(async {
        let run_id = start_run(&client, &server, "write out.txt").await;
        let run = wait_for_status(&client, &server.base, &run_id, "waiting_approval").await;
        let approval_id = the_pending_write(&run);
        (run_id, approval_id)
    });
    let line = server.line_with(&format!("oxydra approvals approve {approval_id}"));
    assert!(line.contains(&run_id), "{line}");
    assert!(line.contains("file_write out.txt"), "{line}");
    assert!(
        line.contains(&format!("--server {}", server.base)),
        "{line}"
    );

    // The hook runs on its own task: give it up to 10 s.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let event = loop {
        let text = std::fs::read_to_string(&heard).unwrap_or_default();
        if let Some(first) = text.lines().next() {
            break serde_json::from_str::<Value>(first).unwrap();
        }
        assert!(std::time::Instant::now() < deadline, "the hook never ran");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(event["event"]["type"], "approval_requested", "{event}");
    assert_eq!(
        event["event"]["approval_id"],
        approval_id.as_str(),
        "{event}"
    );
    assert_eq!(event["event"]["name"], "file_write", "{event}");
    let (code, _) = server.terminate();
    assert_eq!(code, Some(0));
}
