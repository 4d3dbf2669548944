//! An MCP tool's image and embedded PDF, end to end through the real binary: a real
//! MCP server process (tests/fixtures/media_probe.mjs, on the official TypeScript SDK)
//! returns an image block and an embedded resource; the runtime turns them into parts,
//! the model's next request carries them in the wire shape the strict mock checks, and
//! the session stores them (described by `sessions show`, never dumped).

use crate::common;

use std::path::Path;

use common::{Sandbox, json_lines, stderr, stdout};
use oxydra_test_support::{MockServer, mcp_servers, openai};
use serde_json::Value;

/// The probe's image and PDF, as it sends them.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAYAAABytg0kAAAAEUlEQVR4nGP4z8AAQv8ZYAwAQ84H+VjtZqAAAAAASUVORK5CYII=";
const PDF: &str = "JVBERi0xLjQKMSAwIG9iaiA8PCAvVHlwZSAvQ2F0YWxvZyA+PiBlbmRvYmoKdHJhaWxlciA8PCAvUm9vdCAxIDAgUiA+PgolJUVPRgo=";

fn sandbox_with_probe() -> Option<Sandbox> {
    mcp_servers::require("server-everything")?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/media_probe.mjs");
    let modules = mcp_servers::servers_dir().join("node_modules");
    let sandbox = Sandbox::new();
    sandbox.write_trusted_config(&format!(
        "[[mcp_servers]]\nname = \"probe\"\ncommand = \"node\"\nargs = [{:?}]\n\
         init_timeout_secs = 30\n[mcp_servers.env]\nMCP_NODE_MODULES = {:?}\n\
         [mcp_servers.tool_tiers]\nchart = \"read_only\"\nforged = \"read_only\"\n",
        script.display().to_string(),
        modules.display().to_string(),
    ));
    Some(sandbox)
}

/// Runs the binary against a strict mock whose model calls the probe's `tool` (as
/// call `call_id`) and then answers; checks the run ended with a final answer. Returns
/// the session id and the messages of the model's second request (the one that
/// carries the tool's result).
fn run_probe_call(sandbox: &Sandbox, call_id: &str, tool: &str) -> (String, Vec<Value>) {
    let server = MockServer::builder()
        .strict_openai()
        .replies(vec![
            openai::tool_calls(&[(call_id, tool, "{}")]),
            openai::text("Here is what came back."),
        ])
        .start()
        .unwrap();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--output", "jsonl"],
        "Show me the Q3 chart",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_lines(&output);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final", "{events:?}");
    let session = last["session_id"].as_str().unwrap().to_owned();
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    (session, messages)
}

#[test]
fn an_mcp_image_and_embedded_pdf_reach_the_model_as_parts_and_are_stored() {
    let Some(sandbox) = sandbox_with_probe() else {
        return;
    };
    // The second request: the tool's text result, then its parts in a user message.
    let (session, messages) = run_probe_call(&sandbox, "call_chart", "probe__chart");
    let tool = messages
        .iter()
        .find(|message| message["role"] == "tool")
        .unwrap();
    assert_eq!(tool["tool_call_id"], "call_chart");
    let tool_text = tool["content"].as_str().unwrap();
    assert!(
        tool_text.contains("The Q3 chart and report:"),
        "{tool_text}"
    );
    assert!(
        !tool_text.contains(PNG) && !tool_text.contains(PDF),
        "{tool_text}"
    );
    let attached = messages.last().unwrap();
    assert_eq!(attached["role"], "user");
    let parts = attached["content"].as_array().unwrap();
    let kinds: Vec<&str> = parts.iter().map(|p| p["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["text", "image_url", "file"], "{attached}");
    assert!(parts[0]["text"].as_str().unwrap().contains("call_chart"));
    assert_eq!(
        parts[1]["image_url"]["url"],
        format!("data:image/png;base64,{PNG}")
    );
    assert_eq!(parts[2]["file"]["filename"], "q3.pdf");
    assert_eq!(
        parts[2]["file"]["file_data"],
        format!("data:application/pdf;base64,{PDF}")
    );

    // The session keeps the parts on the tool result, described without the bytes.
    let shown = sandbox.sessions(&["show", &session, "--output", "jsonl"]);
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    let text = stdout(&shown);
    assert!(!text.contains(PNG) && !text.contains(PDF), "{text}");
    let lines = json_lines(&shown);
    let with_parts: Vec<&Value> = lines.iter().filter(|l| l.get("parts").is_some()).collect();
    assert_eq!(with_parts.len(), 1, "{text}");
    let stored = with_parts[0]["parts"].as_array().unwrap();
    assert_eq!(stored.len(), 2, "{text}");
    assert_eq!(stored[0]["kind"], "image");
    assert_eq!(stored[0]["media_type"], "image/png");
    assert_eq!(stored[1]["kind"], "document");
    assert_eq!(stored[1]["media_type"], "application/pdf");
    let human = stdout(&sandbox.sessions(&["show", &session]));
    assert!(human.contains("[image (image/png,"), "{human}");
    assert!(
        human.contains("[document q3.pdf (application/pdf,"),
        "{human}"
    );
}

#[test]
fn an_mcp_server_that_forges_its_media_attaches_nothing_and_says_why() {
    let Some(sandbox) = sandbox_with_probe() else {
        return;
    };
    // The model hears what was refused and why; no part goes out.
    let (session, messages) = run_probe_call(&sandbox, "call_forged", "probe__forged");
    for message in &messages {
        if let Some(parts) = message["content"].as_array() {
            for part in parts {
                assert_eq!(part["type"], "text", "{message}");
            }
        }
    }
    let tool = messages
        .iter()
        .find(|message| message["role"] == "tool")
        .unwrap();
    let tool_text = tool["content"].as_str().unwrap();
    assert!(
        tool_text.contains("The forged chart and report:"),
        "{tool_text}"
    );
    assert!(
        tool_text
            .contains("not attached: its bytes are not a PNG, JPEG, GIF or WebP image or a PDF"),
        "{tool_text}"
    );
    assert!(
        tool_text.contains("not attached: its bytes are image/gif"),
        "{tool_text}"
    );

    // Nothing forged is stored as a part.
    let shown = sandbox.sessions(&["show", &session, "--output", "jsonl"]);
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    let lines = json_lines(&shown);
    assert!(
        lines.iter().all(|line| line.get("parts").is_none()),
        "{}",
        stdout(&shown)
    );
}
