//! `oxydra replay` through the binary: a recorded multi-tool session (file_read,
//! file_write, shell_exec) replayed against the same script reproduces it exactly,
//! with the recorded outputs and without running a tool; against another script the
//! report names the first difference and the unrecorded call is refused (the model
//! gets a tool error); with `--live` that call runs in a scratch copy. The workspace
//! and the original session never change. Unknown and ambiguous ids and a `--from`
//! beyond the session's turns are errors naming what is at fault.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common;

use common::{Sandbox, json_lines, stderr, stdout};
use oxydra_test_support::{MockServer, openai};
use serde_json::Value;

/// Every entry under `root` with its content (links as their target).
fn tree(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, rel: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(root.join(rel)).unwrap() {
            let child = rel.join(entry.unwrap().file_name());
            let path = root.join(&child);
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let key = child.to_str().unwrap().to_owned();
            if meta.is_dir() {
                out.insert(key, "dir".into());
                walk(root, &child, out);
            } else if meta.file_type().is_symlink() {
                out.insert(
                    key,
                    format!("link {}", std::fs::read_link(&path).unwrap().display()),
                );
            } else {
                out.insert(
                    key,
                    String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, Path::new(""), &mut out);
    out
}

const READ: &str = r#"{"path":"a.txt"}"#;
const WRITE: &str = r#"{"path":"b.txt","content":"bee\n"}"#;
/// The same arguments as [`WRITE`], keys in another order.
const WRITE_REORDERED: &str = r#"{"content":"bee\n","path":"b.txt"}"#;
const SHELL: &str = r#"{"command":"echo sea > c.txt && cat a.txt"}"#;

/// The script of the recorded session: three calls over three steps, then an answer.
fn script(write: &str, answer: &str) -> Vec<oxydra_test_support::Reply> {
    vec![
        openai::tool_calls(&[("call_1", "file_read", READ)]),
        openai::tool_calls(&[("call_2", "file_write", write)]),
        openai::tool_calls(&[("call_3", "shell_exec", SHELL)]),
        openai::text(answer),
    ]
}

/// The tool results the model got, in order, from the requests `server` received.
fn tool_results(server: &MockServer) -> Vec<String> {
    let requests = server.requests();
    let last = requests.last().unwrap();
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A sandbox with a recorded session; returns it, the session's id, the tool results
/// of the recording and the workspace's tree after it.
fn recorded() -> (Sandbox, String, Vec<String>, BTreeMap<String, String>) {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("a.txt"), "one\n").unwrap();
    let server = MockServer::start(script(WRITE, "done")).unwrap();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--approve", "allow", "--sandbox", "full-access"],
        "make b and c",
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let results = tool_results(&server);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results[2].contains("one"), "{results:?}");
    let listed = json_lines(&sandbox.sessions(&["list", "--all", "--output", "jsonl"]));
    let id = listed[0]["session_id"].as_str().unwrap().to_owned();
    let tree = tree(&sandbox.workspace);
    assert_eq!(tree.get("c.txt").map(String::as_str), Some("sea\n"));
    (sandbox, id, results, tree)
}

fn replay(sandbox: &Sandbox, server: &MockServer, args: &[&str]) -> std::process::Output {
    let mut command = sandbox.stored_command("replay");
    command
        .args(["--base-url", &server.openai_url()])
        .args(args);
    command.output().unwrap()
}

fn shown(sandbox: &Sandbox, id: &str) -> String {
    stdout(&sandbox.sessions(&["show", id, "--output", "jsonl"]))
}

fn report(output: &std::process::Output) -> Value {
    let lines = json_lines(output);
    let last = lines.last().cloned().unwrap();
    assert_eq!(last["type"], "replay_report", "{lines:?}");
    last
}

#[test]
fn the_same_script_reproduces_the_session_exactly_without_running_a_tool() {
    let (sandbox, id, recorded_results, before) = recorded();
    let original = shown(&sandbox, &id);
    let server = MockServer::start(script(WRITE_REORDERED, "done")).unwrap();
    let prefix = &id[..id.len() - 4];
    let output = replay(&sandbox, &server, &[prefix]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("identical"), "{text}");
    assert!(text.contains("turn 1 call 2"), "{text}");
    // The model got the recorded outputs, the command's included.
    assert_eq!(tool_results(&server), recorded_results);
    assert_eq!(tree(&sandbox.workspace), before);
    assert_eq!(shown(&sandbox, &id), original);
    // A new session, holding the replay.
    let listed = json_lines(&sandbox.sessions(&["list", "--all", "--output", "jsonl"]));
    assert_eq!(listed.len(), 2, "{listed:?}");
    let marked: Vec<&Value> = listed
        .iter()
        .filter(|s| s["replay_of"] == id.as_str())
        .collect();
    assert_eq!(marked.len(), 1, "{listed:?}");
    assert_ne!(marked[0]["session_id"], id.as_str());
    assert!(
        listed
            .iter()
            .any(|s| s["session_id"] == id.as_str() && s["replay_of"].is_null())
    );

    let server = MockServer::start(script(WRITE, "done")).unwrap();
    let output = replay(&sandbox, &server, &[&id, "--output", "jsonl"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let report = report(&output);
    assert_eq!(report["identical"], true, "{report}");
    assert_eq!(report["original"]["calls"], 3);
    assert_eq!(report["replay"]["calls"], 3);
    assert_eq!(report["unrecorded_calls"], 0);
    // The original's use is its own, kept with each stored answer: the same script
    // used the same tokens and, priced alike, cost the same.
    for key in ["input_tokens", "output_tokens", "cost"] {
        assert!(report["original"][key].is_number(), "{key}: {report}");
        assert_eq!(report["original"][key], report["replay"][key], "{key}");
    }
    assert!(report["original"]["input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(report["original"]["session_id"], id.as_str());
    assert_ne!(report["replay"]["session_id"], id.as_str());
    assert_eq!(tree(&sandbox.workspace), before);
}

#[test]
fn another_script_shows_the_first_difference_and_its_unrecorded_call_is_refused() {
    let (sandbox, id, _, before) = recorded();
    let other = r#"{"path":"b.txt","content":"BEE\n"}"#;
    let server = MockServer::start(script(other, "done")).unwrap();
    let output = replay(&sandbox, &server, &[&id]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("first difference: turn 1, call 2: different arguments to file_write"),
        "{text}"
    );
    let results = tool_results(&server);
    assert!(
        results[1].contains("was not called in the recorded session"),
        "{results:?}"
    );
    assert_eq!(tree(&sandbox.workspace), before);

    // Live: the call runs, in a scratch copy (it reads a.txt there, as the command does).
    let server = MockServer::start(script(other, "done")).unwrap();
    let output = replay(
        &sandbox,
        &server,
        &[
            &id,
            "--live",
            "--approve",
            "allow",
            "--sandbox",
            "full-access",
            "--output",
            "jsonl",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let report = report(&output);
    assert_eq!(report["identical"], false);
    assert_eq!(report["first_difference"]["kind"], "different_arguments");
    assert_eq!(report["first_difference"]["turn"], 1);
    assert_eq!(report["unrecorded_calls"], 1);
    let results = tool_results(&server);
    assert!(!results[1].contains("Tool execution failed"), "{results:?}");
    assert_eq!(tree(&sandbox.workspace), before);
}

#[test]
fn another_answer_is_a_difference_and_from_copies_the_turns_before() {
    let (sandbox, id, _, before) = recorded();
    // A second turn, continuing the session.
    let server = MockServer::start(vec![openai::text("second answer")]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--session", &id], "and then?");
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));

    let server = MockServer::start(vec![openai::text("\u{1b}[31mother answer")]).unwrap();
    let output = replay(&sandbox, &server, &[&id, "--from", "2"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("turn 2: different answer"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text:?}");
    // The first turn went to the model as context: its prompt and its three results.
    let body = &server.requests()[0].body;
    let messages = body["messages"].as_array().unwrap();
    assert!(
        messages.iter().any(|m| m["content"] == "make b and c"),
        "{body}"
    );
    assert_eq!(messages.iter().filter(|m| m["role"] == "tool").count(), 3);
    assert_eq!(tree(&sandbox.workspace), before);
}

#[test]
fn unknown_ambiguous_ids_and_turns_beyond_the_session_are_errors_naming_them() {
    let (sandbox, id, _, _) = recorded();
    let server = MockServer::start(Vec::new()).unwrap();
    let output = replay(&sandbox, &server, &["ses_nothing_like_it"]);
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("ses_nothing_like_it"),
        "{}",
        stderr(&output)
    );

    let output = replay(&sandbox, &server, &[&id, "--from", "2"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let error = stderr(&output);
    assert!(
        error.contains("--from") && error.contains("has no turn 2"),
        "{error}"
    );
    let output = replay(&sandbox, &server, &[&id, "--from", "0"]);
    assert!(stderr(&output).contains("--from"), "{}", stderr(&output));
    let output = replay(&sandbox, &server, &[&id, "--session", &id]);
    assert!(stderr(&output).contains("--session"), "{}", stderr(&output));

    // A replay makes a second session: `ses_` names both.
    let again = MockServer::start(script(WRITE, "done")).unwrap();
    let output = replay(&sandbox, &again, &[&id]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let output = replay(&sandbox, &server, &["ses_"]);
    assert_ne!(output.status.code(), Some(0));
    let error = stderr(&output);
    assert!(
        error.contains("ses_") && error.contains("2 sessions"),
        "{error}"
    );
    assert!(server.requests().is_empty());
}
