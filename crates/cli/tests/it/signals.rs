//! Ctrl-C (SIGINT) in `run`, in `chat` and while MCP servers start, and the
//! interactive `oxydra chat` fed by a pipe.

use crate::common;

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use common::{
    Sandbox, assert_exit_code, events_of_type, interrupt, is_gone, json_lines, json_values,
    output_with_stdin, poll_until, read_pid, spawn_captured, spawn_with_stdin, stderr,
    wait_for_first_request,
};
use oxydra_test_support::{MockServer, mcp_servers, openai};

#[test]
fn sigint_mid_run_exits_130_and_keeps_the_session() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::hold_after_text("Working on it")]).unwrap();
    let mut command = sandbox.oxydra_command(&server, "run");
    command
        .arg("A long task")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    assert!(
        server.wait_for_requests(1, Duration::from_secs(10)),
        "no request arrived"
    );
    interrupt(&child);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    let events = json_lines(&output);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "error");
    assert_eq!(last["kind"], "cancelled");

    // The user's message was stored before the provider call, and stays.
    let list = sandbox.sessions(&["list", "--all", "--output", "jsonl"]);
    let sessions = json_lines(&list);
    assert_eq!(sessions.len(), 1, "{}", stderr(&list));
    let id = sessions[0]["session_id"].as_str().unwrap();
    let show = sandbox.sessions(&["show", id, "--output", "jsonl"]);
    let messages = json_lines(&show);
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[0]["content"], "A long task");
}

#[test]
fn chat_reads_lines_and_commands_from_stdin() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![
        openai::text("First answer."),
        openai::text("Second answer."),
    ])
    .unwrap();
    let output = output_with_stdin(
        sandbox.oxydra_command(&server, "chat"),
        b"hello\n/bogus\n/new\nagain\n/sessions\n/exit\n",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_lines(&output);
    let finals = events_of_type(&events, "final");
    assert_eq!(finals.len(), 2);
    assert_eq!(finals[0]["text"], "First answer.");
    assert_eq!(finals[1]["text"], "Second answer.");
    // /new started a second session.
    assert_ne!(finals[0]["session_id"], finals[1]["session_id"]);
    let err = stderr(&output);
    assert!(err.contains("unknown command `/bogus`"), "{err}");
    assert!(err.contains("new session ses_"), "{err}");
    // The second request is a fresh conversation.
    let second = &server.requests()[1].body["messages"];
    assert!(!second.to_string().contains("hello"));
}

#[test]
fn sigint_in_chat_cancels_the_turn_and_a_second_one_at_the_prompt_exits_130() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![
        openai::hold_after_text("Working on it"),
        openai::text("Second answer."),
    ])
    .unwrap();
    let (mut child, mut stdin, out, err) =
        spawn_with_stdin(sandbox.oxydra_command(&server, "chat"));

    stdin.write_all(b"a long task\n").unwrap();
    wait_for_first_request(&server, &err);
    interrupt(&child);
    out.wait_for(r#""kind":"cancelled""#);

    // The chat goes on: the next line is a message in the same session.
    stdin.write_all(b"next\n").unwrap();
    out.wait_for(r#""text":"Second answer.""#);
    let second = server.requests()[1].body["messages"].to_string();
    assert!(second.contains("a long task"), "{second}");
    // `/sessions` answered: the chat is at its prompt, no turn runs.
    stdin.write_all(b"/sessions\n").unwrap();
    err.wait_for("current: ses_");
    interrupt(&child);
    assert_exit_code(&mut child, 130, &err);
    let events = json_values(&out.all());
    assert_eq!(events_of_type(&events, "final").len(), 1);
}

#[test]
fn sigint_while_mcp_servers_start_kills_them_and_exits_130() {
    let Some(script) = mcp_servers::require("server-everything") else {
        return;
    };
    let sandbox = Sandbox::new();
    let started_pid = sandbox.path().join("everything.pid");
    let helper_pid = sandbox.path().join("helper.pid");
    let stuck_pid = sandbox.path().join("stuck.pid");
    // `everything` starts, with a helper in its process group that only a kill of the
    // whole group stops; `stuck` never answers the handshake. Each writes its pid
    // first (`exec` keeps it).
    let config = format!(
        "[[mcp_servers]]\nname = \"everything\"\ncommand = \"sh\"\n\
         args = [\"-c\", {everything:?}]\ninit_timeout_secs = 60\n\
         [[mcp_servers]]\nname = \"stuck\"\ncommand = \"sh\"\n\
         args = [\"-c\", {stuck:?}]\ninit_timeout_secs = 60\n",
        everything = format!(
            "echo $$ > '{}'; sleep 120 >/dev/null 2>&1 & echo $! > '{}'; exec node '{}' stdio",
            started_pid.display(),
            helper_pid.display(),
            script.display()
        ),
        stuck = format!("echo $$ > '{}'; exec sleep 120", stuck_pid.display()),
    );
    sandbox.write_trusted_config(&config);
    let server = MockServer::start(vec![openai::text("never asked")]).unwrap();
    let mut command = sandbox.oxydra_command(&server, "run");
    command.arg("A task").env("RUST_LOG", "oxydra_mcp=info");
    let (mut child, out, err) = spawn_captured(command);
    err.wait_until("`everything` to start", |text| {
        text.lines()
            .any(|line| line.contains("MCP server started") && line.contains("everything"))
    });
    poll_until(|| read_pid(&stuck_pid).is_some(), &|| {
        format!("`stuck` never ran: {}", err.text())
    });
    let started = read_pid(&started_pid).unwrap();
    let helper = read_pid(&helper_pid).unwrap();
    let stuck = read_pid(&stuck_pid).unwrap();
    assert!(!is_gone(started) && !is_gone(helper) && !is_gone(stuck));

    interrupt(&child);
    assert_exit_code(&mut child, 130, &err);
    assert!(
        err.all()
            .contains("cancelled while starting the MCP servers"),
        "{}",
        err.text()
    );
    let events = json_values(&out.wait_for("\n"));
    assert_eq!(events.len(), 1, "{}", out.text());
    assert_eq!(events[0]["type"], "error");
    assert_eq!(events[0]["kind"], "cancelled");
    assert_eq!(server.requests().len(), 0);
    // Both servers are killed: the started one with its whole process group, the one
    // still in its handshake too.
    poll_until(
        || is_gone(started) && is_gone(helper) && is_gone(stuck),
        &|| {
            format!(
                "MCP processes left running: everything {}, its helper {}, stuck {}",
                !is_gone(started),
                !is_gone(helper),
                !is_gone(stuck)
            )
        },
    );
}
