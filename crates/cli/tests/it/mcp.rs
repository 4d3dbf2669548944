//! `[[mcp_servers]]` in the real binary: `oxydra mcp list`, and an agent run whose
//! model calls an MCP tool beside a built-in one, against the real
//! `@modelcontextprotocol/server-everything` from the npm registry.

use crate::common;

use common::{Sandbox, is_gone, json_lines, read_pid, shape, stderr, stdout};
use oxydra_test_support::{MockServer, mcp_servers, openai};

fn sandbox_with_everything() -> Option<Sandbox> {
    let script = mcp_servers::require("server-everything")?;
    let sandbox = Sandbox::new();
    let config = format!(
        "[[mcp_servers]]\nname = \"everything\"\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n\
         init_timeout_secs = 30\nallow_tools = [\"echo\", \"get-sum\", \"add\"]\n\
         [mcp_servers.tool_tiers]\necho = \"read_only\"\n",
        script.display().to_string()
    );
    sandbox.write_trusted_config(&config);
    Some(sandbox)
}

#[test]
fn mcp_list_shows_each_server_its_state_and_its_tools() {
    let Some(sandbox) = sandbox_with_everything() else {
        return;
    };
    let output = sandbox.command().args(["mcp", "list"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("everything: running"), "{text}");
    assert!(text.contains("everything__echo  read_only"), "{text}");
    assert!(
        !text.contains("everything__trigger"),
        "allow_tools filters: {text}"
    );

    let output = sandbox
        .command()
        .args(["mcp", "list", "--output", "jsonl"])
        .output()
        .unwrap();
    let servers = json_lines(&output);
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0]["name"], "everything");
    assert_eq!(servers[0]["state"]["state"], "running");
    let tools: Vec<&str> = servers[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"everything__echo"), "{tools:?}");
}

#[test]
fn mcp_list_reports_a_server_that_does_not_start() {
    let sandbox = Sandbox::new();
    sandbox.write_trusted_config(
        "[[mcp_servers]]\nname = \"ghost\"\ncommand = \"oxydra-no-such-program\"\n",
    );
    let output = sandbox.command().args(["mcp", "list"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with("ghost: failed"), "{text}");
    assert!(text.contains("oxydra-no-such-program"), "{text}");
}

#[test]
fn mcp_start_up_failures_are_one_line_per_server_without_internals() {
    let sandbox = Sandbox::new();
    let spawned = sandbox.path().join("spawned.txt");
    sandbox.write_trusted_config(&format!(
        "[[mcp_servers]]\nname = \"ghost\"\ncommand = \"oxydra-no-such-program\"\n\n\
         [[mcp_servers]]\nname = \"mute\"\ncommand = \"sh\"\n\
         args = [\"-c\", \"echo started >> {}; echo not-json; exit 3\"]\n",
        spawned.display()
    ));
    let server = MockServer::start(vec![openai::text("Done.")]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &[], "hello");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    let ghost: Vec<&str> = err.lines().filter(|line| line.contains("ghost")).collect();
    assert_eq!(ghost.len(), 1, "{err}");
    assert!(
        ghost[0].starts_with("warning: MCP server `ghost` did not start"),
        "{err}"
    );
    assert!(ghost[0].contains("oxydra-no-such-program"), "{err}");
    assert_eq!(ghost[0].matches("MCP server").count(), 1, "{err}");
    let mute: Vec<&str> = err.lines().filter(|line| line.contains("`mute`")).collect();
    assert_eq!(mute.len(), 1, "{err}");
    assert!(!err.contains("rmcp"), "{err}");
    assert!(!err.contains("WARN"), "{err}");
    // The broken server was retried; the missing command only tried once (nothing to
    // observe of a spawn that fails but the time it takes: a retry waits first).
    let starts = std::fs::read_to_string(&spawned).unwrap_or_default();
    assert!(starts.lines().count() > 1, "{starts}");
}

/// A server whose command does not exist is tried exactly once in a run, however many
/// turns the run takes, even when the model calls a tool of it by name: its tools were
/// never registered, so such a call is an unknown tool, not a restart. Every start
/// attempt is logged at debug level: one line for one attempt, of the five allowed.
#[test]
fn a_missing_command_is_tried_once_in_a_run_of_several_turns() {
    let sandbox = Sandbox::new();
    sandbox.write_trusted_config(
        "[[mcp_servers]]\nname = \"ghost\"\ncommand = \"oxydra-no-such-program\"\n\
         restart_attempts = 5\nrestart_backoff_ms = 1\n",
    );
    let server = MockServer::start(vec![
        openai::tool_calls(&[("c1", "ghost__echo", r#"{"text":"hi"}"#)]),
        openai::tool_calls(&[("c2", "ghost__echo", r#"{"text":"again"}"#)]),
        openai::text("Done."),
    ])
    .unwrap();
    let mut command = sandbox.oxydra_command(&server, "run");
    command
        .env("RUST_LOG", "warn,oxydra_mcp=debug")
        .arg("hello");
    let output = command.output().unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");

    let attempts: Vec<&str> = err
        .lines()
        .filter(|line| line.contains("MCP server failed to start"))
        .collect();
    assert_eq!(attempts.len(), 1, "{err}");
    assert!(attempts[0].contains("attempt=1"), "{err}");
    let warnings = err
        .lines()
        .filter(|line| line.starts_with("warning: MCP server `ghost` did not start"))
        .count();
    assert_eq!(warnings, 1, "{err}");
    assert!(!err.contains("restarted"), "{err}");

    // Three turns, each call of the server's tool an unknown tool the model is told of.
    let events = json_lines(&output);
    let failed: Vec<&serde_json::Value> = events
        .iter()
        .filter(|event| event["type"] == "tool_failed")
        .collect();
    assert_eq!(failed.len(), 2, "{}", stdout(&output));
    for event in failed {
        let error = event["error"].as_str().unwrap();
        assert!(error.contains("unknown tool `ghost__echo`"), "{error}");
    }
    assert_eq!(server.requests().len(), 3);
    let last = server.requests()[2].body["messages"].to_string();
    assert!(last.contains("unknown tool"), "{last}");
}

#[test]
fn a_bad_mcp_server_entry_is_a_config_error_naming_the_key() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.path().join("oxydra.toml"),
        "[[mcp_servers]]\nname = \"both\"\ncommand = \"node\"\nurl = \"http://127.0.0.1:1/mcp\"\n",
    )
    .unwrap();
    let output = sandbox.command().args(["mcp", "list"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("oxydra.toml"), "{message}");
    assert!(message.contains("mcp_servers[0]"), "{message}");
}

#[test]
fn an_agent_calls_an_mcp_tool_and_a_builtin_in_one_parallel_batch() {
    let Some(sandbox) = sandbox_with_everything() else {
        return;
    };
    std::fs::write(sandbox.workspace.join("plan.md"), "step one\n").unwrap();
    let server = MockServer::start(vec![
        openai::tool_calls(&[
            (
                "call_echo",
                "everything__echo",
                r#"{"message":"hello from mcp"}"#,
            ),
            ("call_read", "file_read", r#"{"path":"plan.md"}"#),
        ]),
        openai::text("Both tools answered."),
    ])
    .unwrap();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--output", "jsonl"],
        "Echo a greeting and read the plan",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_lines(&output);
    let shape = shape(&events);
    // One batch: both calls start (in request order) before either completes.
    assert_eq!(
        &shape[..4],
        [
            "progress provider_call 1",
            "progress tool_execution 1",
            "started everything__echo read_only",
            "started file_read read_only",
        ],
        "{shape:?}"
    );
    let mut completed = shape[4..6].to_vec();
    completed.sort();
    assert_eq!(
        completed,
        ["completed everything__echo", "completed file_read"],
        "{shape:?}"
    );
    assert_eq!(shape.last().map(String::as_str), Some("final"), "{shape:?}");

    // The MCP tool's output reached the model, in request order before file_read's.
    let requests = server.requests();
    let second = requests[1].body["messages"].as_array().unwrap();
    let tool_messages: Vec<&serde_json::Value> =
        second.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_messages.len(), 2);
    assert_eq!(tool_messages[0]["tool_call_id"], "call_echo");
    assert!(
        tool_messages[0]["content"]
            .as_str()
            .unwrap()
            .contains("hello from mcp"),
        "{second:?}"
    );
    assert!(
        tool_messages[1]["content"]
            .as_str()
            .unwrap()
            .contains("step one")
    );
    // The tool schemas the model was offered include the MCP tool.
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"everything__echo"), "{offered:?}");
}

#[test]
fn ctrl_c_twice_kills_everything_an_mcp_server_started() {
    let Some(script) = mcp_servers::require("server-everything") else {
        return;
    };
    let sandbox = Sandbox::new();
    let pid_file = sandbox.path().join("sleeper.pid");
    // The server's process group also holds a process that never reads stdin, as a
    // launcher like npx may leave: only killing the whole group stops it.
    let launcher = format!(
        "sleep 300 & echo $! > {}; exec node {} stdio",
        pid_file.display(),
        script.display()
    );
    sandbox.write_trusted_config(&format!(
        "[[mcp_servers]]\nname = \"everything\"\ncommand = \"sh\"\nargs = [\"-c\", {launcher:?}]\n\
         init_timeout_secs = 30\n"
    ));
    let server = MockServer::start(vec![openai::hold_after_text("Working on it")]).unwrap();
    let mut command = sandbox.oxydra_command(&server, "run");
    command
        .arg("A long task")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    assert!(
        server.wait_for_requests(1, std::time::Duration::from_secs(30)),
        "no request arrived"
    );
    let sleeper = read_pid(&pid_file).unwrap();
    assert!(!is_gone(sleeper), "the sleeper should run with the server");
    let oxydra = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    // The first Ctrl-C cancels the turn; the second, once the first was seen, exits
    // at once (unless the cancelled run already stopped cleanly: the servers must be
    // gone either way).
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let _ = nix::sys::signal::kill(oxydra, nix::sys::signal::Signal::SIGINT);
    let mut seen = String::new();
    while !seen.contains("cancelling") {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut err, &mut line).unwrap_or(0) == 0 {
            break;
        }
        seen.push_str(&line);
    }
    let _ = nix::sys::signal::kill(oxydra, nix::sys::signal::Signal::SIGINT);
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut err, &mut rest);
    let output = child.wait_with_output().unwrap();
    let stderr_text = format!("{seen}{rest}");
    assert_eq!(output.status.code(), Some(130), "{stderr_text}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while !is_gone(sleeper) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let dead = is_gone(sleeper);
    if !dead {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(sleeper),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(dead, "a process the MCP server started outlived oxydra");
}
