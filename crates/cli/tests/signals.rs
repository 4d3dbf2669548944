#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]
//! Ctrl-C (SIGINT) in `run`, in `chat` and while MCP servers start, and the
//! interactive `oxydra chat` fed by a pipe.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{Captured, KillOnDrop, PATIENCE, Sandbox, json_lines, json_values, stderr, wait_exit};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use oxydra_e2e::{ScriptServer, mcp_servers, openai};

fn interrupt(child: &Child) {
    kill(
        Pid::from_raw(i32::try_from(child.id()).unwrap()),
        Signal::SIGINT,
    )
    .unwrap();
}

#[test]
fn sigint_mid_run_exits_130_and_keeps_the_session() {
    let sandbox = Sandbox::new();
    let server = ScriptServer::start(vec![openai::hold_after_text("Working on it")]).unwrap();
    let mut command = sandbox.command();
    command
        .args([
            "run",
            "--base-url",
            &server.openai_url(),
            "--output",
            "jsonl",
        ])
        .arg("--db")
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&sandbox.workspace)
        .arg("A long task")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    assert!(
        server.wait_for_requests(1, Duration::from_secs(10)),
        "no request arrived"
    );
    kill(
        Pid::from_raw(i32::try_from(child.id()).unwrap()),
        Signal::SIGINT,
    )
    .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    let events = json_lines(&output);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "error");
    assert_eq!(last["kind"], "cancelled");

    // The user's message was stored before the provider call, and stays.
    let list = sandbox.sessions(&["list", "--output", "jsonl"]);
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
    let server = ScriptServer::start(vec![
        openai::text("First answer."),
        openai::text("Second answer."),
    ])
    .unwrap();
    let mut command = sandbox.command();
    command
        .args([
            "chat",
            "--base-url",
            &server.openai_url(),
            "--output",
            "jsonl",
        ])
        .arg("--db")
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&sandbox.workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"hello\n/bogus\n/new\nagain\n/sessions\n/exit\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let finals: Vec<_> = json_lines(&output)
        .into_iter()
        .filter(|e| e["type"] == "final")
        .collect();
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
    let server = ScriptServer::start(vec![
        openai::hold_after_text("Working on it"),
        openai::text("Second answer."),
    ])
    .unwrap();
    let mut command = sandbox.command();
    command
        .args([
            "chat",
            "--base-url",
            &server.openai_url(),
            "--output",
            "jsonl",
        ])
        .arg("--db")
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&sandbox.workspace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = KillOnDrop(command.spawn().unwrap());
    let mut stdin = child.stdin.take().unwrap();
    let out = Captured::start(child.stdout.take().unwrap());
    let err = Captured::start(child.stderr.take().unwrap());

    stdin.write_all(b"a long task\n").unwrap();
    assert!(
        server.wait_for_requests(1, PATIENCE),
        "no request arrived: {}",
        err.text()
    );
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
    let status = wait_exit(&mut child, &|| err.text());
    assert_eq!(status.code(), Some(130), "{}", err.text());
    let finals = json_values(&out.text())
        .into_iter()
        .filter(|event| event["type"] == "final")
        .count();
    assert_eq!(finals, 1);
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
fn is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

fn read_pid(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
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
    std::fs::write(sandbox.path().join("oxydra.toml"), config).unwrap();
    let server = ScriptServer::start(vec![openai::text("never asked")]).unwrap();
    let mut command = sandbox.command();
    command
        .args([
            "run",
            "--base-url",
            &server.openai_url(),
            "--output",
            "jsonl",
        ])
        .arg("--db")
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&sandbox.workspace)
        .arg("A task")
        .env("RUST_LOG", "oxydra_mcp=info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = KillOnDrop(command.spawn().unwrap());
    let out = Captured::start(child.stdout.take().unwrap());
    let err = Captured::start(child.stderr.take().unwrap());
    err.wait_until("`everything` to start", |text| {
        text.lines()
            .any(|line| line.contains("MCP server started") && line.contains("everything"))
    });
    let deadline = Instant::now() + PATIENCE;
    while read_pid(&stuck_pid).is_none() {
        assert!(
            Instant::now() < deadline,
            "`stuck` never ran: {}",
            err.text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = read_pid(&started_pid).unwrap();
    let helper = read_pid(&helper_pid).unwrap();
    let stuck = read_pid(&stuck_pid).unwrap();
    assert!(!is_gone(started) && !is_gone(helper) && !is_gone(stuck));

    interrupt(&child);
    let status = wait_exit(&mut child, &|| err.text());
    assert_eq!(status.code(), Some(130), "{}", err.text());
    assert!(
        err.text()
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
    let deadline = Instant::now() + PATIENCE;
    while !(is_gone(started) && is_gone(helper) && is_gone(stuck)) {
        assert!(
            Instant::now() < deadline,
            "MCP processes left running: everything {}, its helper {}, stuck {}",
            !is_gone(started),
            !is_gone(helper),
            !is_gone(stuck)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
