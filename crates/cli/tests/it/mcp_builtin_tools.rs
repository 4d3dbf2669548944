//! `oxydra mcp serve --tools …`: built-in tools served next to the coordinator's,
//! confined as in `oxydra run` — the workspace, protected paths, scrubbing of every
//! result, and consent that no one can give over MCP.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use common::serve::{CONFIG, sandbox_with_config};
use common::{Sandbox, stderr};
use serde_json::{Value, json};

/// `oxydra mcp serve --tools TOOLS` on stdio, initialized.
struct Session {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
    next_id: u64,
}

impl Session {
    fn start(sandbox: &Sandbox, tools: &str) -> Self {
        let mut command = sandbox.command();
        command
            .args(["mcp", "serve", "--tools", tools, "--db"])
            .arg(&sandbox.db)
            .arg("--workspace")
            .arg(&sandbox.workspace)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().unwrap();
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut session = Self {
            child,
            stdin,
            lines,
            next_id: 1,
        };
        let initialized = session.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}),
        );
        assert!(initialized["result"]["capabilities"]["tools"].is_object());
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let line = self
            .lines
            .next()
            .expect("the server closed stdout")
            .unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }

    /// A `tools/call`: whether it is an error, and its text.
    fn call(&mut self, name: &str, arguments: Value) -> (bool, String) {
        let answer = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        let result = &answer["result"];
        assert!(result.is_object(), "{answer}");
        let text = result["content"][0]["text"].as_str().unwrap().to_owned();
        (result["isError"] == true, text)
    }

    fn close(mut self) -> (Option<i32>, String) {
        drop(self.stdin.take());
        let output = self.child.wait_with_output().unwrap();
        (output.status.code(), stderr(&output))
    }
}

const SECRET: &str = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c";

#[test]
fn built_in_tools_are_listed_with_annotations_and_confined_to_the_workspace() {
    let sandbox = sandbox_with_config(CONFIG);
    std::fs::write(
        sandbox.workspace.join("notes.txt"),
        "the launch is on tuesday\n",
    )
    .unwrap();
    std::fs::write(
        sandbox.workspace.join("deploy.env"),
        format!("OPENAI_API_KEY={SECRET}\n"),
    )
    .unwrap();
    std::fs::write(
        sandbox.path().join("outside.txt"),
        "outside the workspace\n",
    )
    .unwrap();
    std::fs::create_dir_all(sandbox.workspace.join(".git")).unwrap();
    std::fs::write(sandbox.workspace.join(".git/config"), "[core]\n").unwrap();

    let mut session = Session::start(&sandbox, "file_read,file_list,file_write,shell_exec");
    let listed = session.request("tools/list", json!({}));
    let tools: Vec<&Value> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for name in [
        "list_agent_blueprints",
        "start_agent_run",
        "get_agent_run",
        "cancel_agent_run",
        "file_read",
        "file_list",
        "file_write",
        "shell_exec",
    ] {
        assert!(names.contains(&name), "{name}: {names:?}");
    }
    let hints = |name: &str| {
        let tool = tools.iter().find(|t| t["name"] == name).unwrap();
        let a = &tool["annotations"];
        (a["readOnlyHint"].clone(), a["destructiveHint"].clone())
    };
    assert_eq!(hints("file_read"), (json!(true), json!(false)));
    assert_eq!(hints("file_write"), (json!(false), json!(true)));

    // Inside the workspace: read.
    let (error, text) = session.call("file_read", json!({"path": "notes.txt"}));
    assert!(
        !error && text.contains("the launch is on tuesday"),
        "{text}"
    );

    // Outside it: refused, and nothing of the file comes back.
    for path in ["../outside.txt", "/etc/passwd"] {
        let (error, text) = session.call("file_read", json!({"path": path}));
        assert!(error, "{path}: {text}");
        assert!(!text.contains("outside the workspace\n"), "{text}");
        assert!(!text.contains("root:"), "{text}");
    }

    // A protected path: never written.
    let (error, text) = session.call(
        "file_write",
        json!({"path": ".git/config", "content": "[core]\n\thooksPath = /tmp/evil\n"}),
    );
    assert!(error, "{text}");
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace.join(".git/config")).unwrap(),
        "[core]\n"
    );

    // A secret in a file comes back scrubbed.
    let (error, text) = session.call("file_read", json!({"path": "deploy.env"}));
    assert!(!error, "{text}");
    assert!(text.contains("OPENAI_API_KEY"), "{text}");
    assert!(!text.contains(SECRET), "{text}");

    // A privileged tool needs consent, which no one can give here: denied, saying why.
    let (error, text) = session.call("shell_exec", json!({"command": "touch ran.txt"}));
    assert!(error, "{text}");
    assert!(text.contains("no one can give it over MCP"), "{text}");
    assert!(!sandbox.workspace.join("ran.txt").exists());

    // Wrong argument types: the executor's validation error, as a tool error.
    let (error, text) = session.call("file_read", json!({"path": 7}));
    assert!(error && text.contains("path"), "{text}");

    let (code, rest) = session.close();
    assert_eq!(code, Some(0), "{rest}");
}

#[test]
fn an_unknown_tool_in_tools_is_an_error_naming_the_flag() {
    let sandbox = Sandbox::new();
    for list in ["file_read,rm_rf", "file_read,file_read", ","] {
        let output = sandbox
            .command()
            .args(["mcp", "serve", "--tools", list, "--db"])
            .arg(&sandbox.db)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{list}: {}", stderr(&output));
        assert!(stderr(&output).contains("--tools"), "{}", stderr(&output));
        assert!(!sandbox.db.exists(), "refused before anything was opened");
    }
}
