//! `oxydra run --provider local` with a real model (SmolLM2-135M-Instruct, fetched by
//! `scripts/fetch-test-model.sh`), and the ways of picking and fetching a local
//! model, against a local HTTP server standing in for the hub.

use crate::common;

use common::{Sandbox, json_lines, stderr, stdout};
use oxydra_test_support::{MockServer, RecordedRequest, Reply, test_model};

#[test]
fn a_real_model_asked_plainly_calls_a_tool_that_runs_and_the_session_is_stored() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("notes.txt"), "buy milk\ncall Ana\n").unwrap();
    // Greedy, as this test was written for (the default is now temperature 0.8).
    let config = sandbox.path().join("greedy.toml");
    std::fs::write(&config, "[provider.sampling]\ntemperature = 0\n").unwrap();
    let output = sandbox
        .stored_command("run")
        .arg("--config")
        .arg(&config)
        .args(["--provider", "local", "--model"])
        .arg(&model)
        // A plain request, as a person writes it: nothing says which tool or how to
        // call it. A model this small gets tool choice `required` on its first turn
        // (the CLI's default for small local models) and greedy decoding, so the run
        // is the same every time. The machine may be loaded: a long turn timeout.
        .args(["--output", "jsonl", "--approve", "deny", "--max-turns", "2"])
        .args(["--turn-timeout", "600"])
        .arg("What is on my list in notes.txt?")
        .output()
        .unwrap();
    let code = output.status.code();
    assert!(
        matches!(code, Some(0 | 3)),
        "exit {code:?}\nstderr: {}\nstdout: {}",
        stderr(&output),
        stdout(&output)
    );
    // stdout is JSON lines and nothing else.
    let text = stdout(&output);
    for line in text.lines() {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    }
    let events = json_lines(&output);
    let started: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "tool_started")
        .collect();
    // Every call ran and has its result (the model may pick a wrong path: the
    // tool's error is then its result, and the next turn answers from it).
    let ended: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "tool_completed" || e["type"] == "tool_failed")
        .collect();
    assert!(!started.is_empty(), "no tool call: {text}");
    assert_eq!(
        ended.len(),
        started.len(),
        "a call without a result: {text}"
    );
    // The turn after the call answered (the run ended with `final`).
    assert!(
        events.iter().any(|e| e["type"] == "final"),
        "no final answer: {text}"
    );
    // The session is stored.
    let session = events
        .iter()
        .rev()
        .find_map(|e| e["session_id"].as_str())
        .unwrap_or_else(|| panic!("no session id: {text}"))
        .to_owned();
    let listed = sandbox.sessions(&["list", "--all"]);
    assert!(stdout(&listed).contains(&session), "{}", stdout(&listed));
}

#[test]
fn a_missing_model_file_is_a_usage_error_naming_it() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .stored_command("run")
        .args(["--provider", "local", "--model", "nowhere.gguf", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("nowhere.gguf"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_file_that_is_not_a_model_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let fake = sandbox.path().join("fake.gguf");
    std::fs::write(&fake, b"GGUF but not really").unwrap();
    let output = sandbox
        .stored_command("run")
        .args(["--provider", "local", "--model"])
        .arg(&fake)
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("fake.gguf"), "{}", stderr(&output));
}

#[test]
fn the_local_provider_without_a_model_names_the_ways_to_give_one() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .stored_command("run")
        .args(["--provider", "local", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    for way in [
        "--model PATH.gguf",
        "hf:OWNER/REPO/FILE.gguf",
        "OXYDRA_LOCAL_MODEL",
        "default.gguf",
    ] {
        assert!(err.contains(way), "{way} missing: {err}");
    }
}

#[test]
fn no_provider_at_all_names_three_ways_to_get_going() {
    let sandbox = Sandbox::new();
    let output = sandbox.stored_command("run").arg("hi").output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    for way in [
        "OPENAI_API_KEY",
        "--base-url",
        "--provider local --model PATH.gguf",
        "OXYDRA_LOCAL_MODEL",
    ] {
        assert!(err.contains(way), "{way} missing: {err}");
    }
}

#[test]
fn with_no_provider_the_model_in_the_data_dir_is_used() {
    // A placeholder file at the default place: it is picked (and fails to load,
    // which names it), instead of the "no provider" message.
    let sandbox = Sandbox::new();
    let models = sandbox.path().join("data/oxydra/models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::write(models.join("default.gguf"), b"not a model").unwrap();
    let output = sandbox.stored_command("run").arg("hi").output().unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("default.gguf"), "{err}");
    assert!(!err.contains("no provider configured"), "{err}");
}

#[test]
fn with_no_provider_oxydra_local_model_is_used() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .stored_command("run")
        .env("OXYDRA_LOCAL_MODEL", "from-env.gguf")
        .arg("hi")
        .output()
        .unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("from-env.gguf"), "{err}");
}

#[test]
fn an_hf_model_is_downloaded_once_into_the_data_dir() {
    let body = b"GGUF-ish bytes that are no model".to_vec();
    let server = MockServer::builder()
        .respond_with(move |request: &RecordedRequest| {
            if request.path == "/o/r/resolve/main/m.gguf" {
                Reply::new(200).body(body.clone())
            } else {
                Reply::new(404)
            }
        })
        .start()
        .unwrap();
    let sandbox = Sandbox::new();
    let run = || {
        sandbox
            .stored_command("run")
            .env("HF_ENDPOINT", format!("http://{}", server.addr()))
            .args(["--provider", "local", "--model", "hf:o/r/m.gguf", "hi"])
            .output()
            .unwrap()
    };
    let first = run();
    let target = sandbox.path().join("data/oxydra/models/hf/o/r/m.gguf");
    assert_eq!(
        std::fs::read(&target).unwrap(),
        b"GGUF-ish bytes that are no model"
    );
    // Not a model: the load fails, naming it, as a usage error.
    assert_eq!(first.status.code(), Some(2), "{}", stderr(&first));
    let second = run();
    assert_eq!(second.status.code(), Some(2), "{}", stderr(&second));
    assert_eq!(server.requests().len(), 1, "downloaded twice");
}

#[test]
fn an_hf_name_that_escapes_is_refused_before_any_request() {
    let server = MockServer::start(vec![]).unwrap();
    let sandbox = Sandbox::new();
    let output = sandbox
        .stored_command("run")
        .env("HF_ENDPOINT", format!("http://{}", server.addr()))
        .args(["--provider", "local", "--model", "hf:o/../../x.gguf", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(server.requests().is_empty());
}

#[test]
fn provider_kind_local_in_the_file_with_threads() {
    let sandbox = Sandbox::new();
    sandbox.write_trusted_config(
        "[provider]\nkind = \"local\"\nmodel = \"configured.gguf\"\nthreads = 1\n",
    );
    let output = sandbox.stored_command("run").arg("hi").output().unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("configured.gguf"), "{err}");
}

/// A `run` of the test model in `sandbox` on `prompt`, greedy, with `config` lines
/// added to the run's config file.
fn small_model_run(
    sandbox: &Sandbox,
    model: &std::path::Path,
    config: &str,
    prompt: &str,
) -> std::process::Output {
    let file = sandbox.path().join("small.toml");
    std::fs::write(
        &file,
        format!("[provider.sampling]\ntemperature = 0\n{config}"),
    )
    .unwrap();
    sandbox
        .stored_command("run")
        .arg("--config")
        .arg(&file)
        .args(["--provider", "local", "--model"])
        .arg(model)
        .args(["--output", "jsonl", "--approve", "deny"])
        .args(["--max-turns", "3", "--turn-timeout", "600"])
        .arg(prompt)
        .output()
        .unwrap()
}

#[test]
fn a_greeting_to_a_small_model_is_no_tool_call_and_the_header_names_the_withheld_tools() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("notes.txt"), "buy milk\n").unwrap();
    let output = small_model_run(&sandbox, &model, "", "hello");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_lines(&output);
    assert!(
        events.iter().all(|e| e["type"] != "tool_started"),
        "a greeting became a call: {}",
        stdout(&output)
    );
    let err = stderr(&output);
    assert!(
        err.contains("tools offered: file_list, file_read, file_search, file_write")
            && err.contains("withheld: file_edit, shell_exec, web_fetch"),
        "{err}"
    );
}

#[test]
fn a_tool_call_the_token_limit_cuts_is_never_the_answer() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("notes.txt"), "buy milk\n").unwrap();
    // The prompt names a file of the workspace: the first turn must call a tool, and
    // six tokens cannot hold a whole call.
    let output = small_model_run(
        &sandbox,
        &model,
        "[runtime]\nmax_output_tokens = 6\n",
        "What is on my list in notes.txt?",
    );
    let text = stdout(&output);
    assert_ne!(output.status.code(), Some(0), "{text}\n{}", stderr(&output));
    for event in json_lines(&output) {
        let said = event["text"].as_str().unwrap_or_default();
        assert!(!said.contains("<tool_call>"), "a call as text: {text}");
    }
}

#[test]
fn print_config_of_a_local_model_says_what_a_small_one_is_offered() {
    let sandbox = Sandbox::new();
    let model = sandbox.path().join("m.gguf");
    std::fs::write(&model, "not read").unwrap();
    let output = sandbox
        .command()
        .args(["run", "--print-config", "--provider", "local", "--model"])
        .arg(&model)
        .output()
        .unwrap();
    let text = stdout(&output);
    assert!(
        text.contains("offered only the tools file_list, file_read, file_search, file_write")
            && text.contains("withheld: file_edit, shell_exec, web_fetch"),
        "{text}"
    );
}

/// An MCP server offers the local model tools whose schemas attack the grammar the
/// model is held to: a cycle of `$ref`s, a `$ref` to a URL (here a local server that
/// counts what it is asked), counts and ranges in the billions, nesting 40 deep, a
/// pattern that backtracks, forty branches. The model is held to each tool in turn
/// (`--tool-choice`): each run makes its call and ends as a run does, with no crash,
/// within the tests' patience, and the `$ref`'s URL is never asked for (that tool's
/// call fails: its schema does not compile).
#[test]
fn an_mcp_server_s_hostile_schemas_do_not_stall_or_crash_a_local_model_run() {
    use crate::terminal_text::{mcp_server_with_tools, node_available};
    use common::{spawn_captured, wait_exit};
    use serde_json::json;

    let Some(model) = test_model::or_skip() else {
        return;
    };
    if !node_available() {
        eprintln!("skipped: node is not installed");
        return;
    }
    let referee = MockServer::start(vec![]).unwrap();
    let mut deep = json!({"type": "string"});
    for _ in 0..40 {
        deep = json!({"type": "object", "properties": {"a": deep}, "required": ["a"]});
    }
    let branches: Vec<_> = (0..40)
        .map(|i| json!({"type": "object", "properties": {format!("k{i}"): {"const": i}}, "required": [format!("k{i}")]}))
        .collect();
    let tools = json!([
        {"name": "cycle", "description": "Looks a thing up.", "inputSchema": {
            "type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}, "required": ["x"],
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}]}}}},
        {"name": "remote", "description": "Fetches a record.", "inputSchema": {
            "type": "object", "properties": {"r": {"$ref": referee.url("/schema.json")}}, "required": ["r"]}},
        {"name": "huge", "description": "Lists items.", "inputSchema": {
            "type": "object", "properties": {
                "items": {"type": "array", "items": {"type": "string", "minLength": 1_000_000_000_u64}, "minItems": 100_000, "maxItems": 1_000_000_000_000_u64},
                "n": {"type": "integer", "minimum": -1_000_000_000_000_000_000_i64, "maximum": 1_000_000_000_000_000_000_i64},
                "p": {"type": "string", "pattern": "^(a+)+$"}},
            "required": ["items", "n", "p"]}},
        {"name": "deep", "description": "Stores a value.", "inputSchema": {
            "type": "object", "properties": {"v": deep}, "required": ["v"]}},
        {"name": "branches", "description": "Picks one.", "inputSchema": {
            "type": "object", "properties": {"o": {"oneOf": branches}}, "required": ["o"]}},
    ]);
    let sandbox = Sandbox::new();
    let script = mcp_server_with_tools(&sandbox, &tools);
    sandbox.write_trusted_config(&format!(
        "[[mcp_servers]]\nname = \"evil\"\ncommand = \"node\"\nargs = [{:?}]\n\n\
         [provider.sampling]\ntemperature = 0\n",
        script.display().to_string()
    ));
    // Each tool in turn, the model held to calling it.
    for tool in ["cycle", "remote", "huge", "deep", "branches"] {
        let name = format!("evil__{tool}");
        let mut command = sandbox.stored_command("run");
        command
            .args(["--provider", "local", "--model"])
            .arg(&model)
            .args(["--output", "jsonl", "--approve", "deny", "--max-turns", "1"])
            .args(["--tool-choice", &name])
            .arg("Look up what the weather will be tomorrow.");
        let (mut child, out, err) = spawn_captured(command);
        let status = wait_exit(&mut child, &|| format!("{}\n{}", out.text(), err.text()));
        let (text, errors) = (out.text(), err.text());
        assert!(
            matches!(status.code(), Some(0 | 3)),
            "{tool}: exit {status:?}\nstderr: {errors}\nstdout: {text}"
        );
        assert!(!errors.contains("panicked"), "{tool}: {errors}");
        let events: Vec<serde_json::Value> = text
            .lines()
            .map(|line| {
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
            })
            .collect();
        assert!(
            events
                .iter()
                .any(|e| e["tool"] == name.as_str() || e["name"] == name.as_str()),
            "{tool}: no call of it: {text}"
        );
    }
    assert_eq!(referee.hits(), 0, "a schema's $ref was fetched");
}
