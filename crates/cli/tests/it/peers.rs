//! What users of codex and Claude Code expect (issue 48): project instructions from
//! `AGENTS.md`, a plan the model keeps with `update_plan`, and a command's output
//! visible under its tool line and in `tool_completed` — scrubbed in both.

use crate::common;

use common::{Sandbox, events_of_type, json_lines, stderr, stdout};
use oxydra_test_support::{MockServer, openai};

/// The system message of the first request the server got.
fn system_prompt(server: &MockServer) -> String {
    let requests = server.requests();
    let messages = requests[0].body["messages"].as_array().unwrap().clone();
    let system = messages
        .iter()
        .find(|message| message["role"] == "system")
        .unwrap_or_else(|| panic!("no system message in {messages:?}"));
    system["content"].as_str().unwrap().to_owned()
}

/// A sandbox whose workspace is a sub-folder of a repository with `AGENTS.md` at its
/// root and in the workspace.
fn repository_with_instructions() -> (Sandbox, std::path::PathBuf) {
    let sandbox = Sandbox::new();
    let repo = sandbox.path().join("repo");
    let workspace = repo.join("app");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(
        repo.join("AGENTS.md"),
        "Run `make check` before you finish.\ntoken = sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd\n",
    )
    .unwrap();
    std::fs::write(workspace.join("AGENTS.md"), "Answer in French.").unwrap();
    (sandbox, workspace)
}

#[test]
fn agents_md_from_the_repository_root_to_the_workspace_goes_into_the_system_prompt() {
    let (sandbox, workspace) = repository_with_instructions();
    let server = MockServer::start(vec![openai::text("fait")]).unwrap();
    let output = sandbox
        .command()
        .arg("run")
        .arg("--db")
        .arg(&sandbox.db)
        .arg("--workspace")
        .arg(&workspace)
        .args(["--base-url", &server.openai_url(), "hello"])
        .output()
        .unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(
        err.contains("project instructions: AGENTS.md, app/AGENTS.md"),
        "named on stderr: {err}"
    );
    let prompt = system_prompt(&server);
    let root = prompt.find("make check").expect("root instructions sent");
    let inner = prompt
        .find("Answer in French.")
        .expect("workspace instructions sent");
    assert!(root < inner, "outermost first: {prompt}");
    assert!(
        prompt.contains("<project_instructions path=\"app/AGENTS.md\">"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"),
        "scrubbed before the provider: {prompt}"
    );
}

#[test]
fn no_project_instructions_leaves_them_out_and_so_does_the_config_key() {
    let (sandbox, workspace) = repository_with_instructions();
    let server = MockServer::start(vec![openai::text("ok"), openai::text("ok")]).unwrap();
    let run = |extra: &[&str]| {
        sandbox
            .command()
            .arg("run")
            .arg("--db")
            .arg(&sandbox.db)
            .arg("--workspace")
            .arg(&workspace)
            .args(["--base-url", &server.openai_url()])
            .args(extra)
            .arg("hello")
            .output()
            .unwrap()
    };
    let output = run(&["--no-project-instructions"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!stderr(&output).contains("project instructions:"));
    assert!(!system_prompt(&server).contains("make check"));

    let config = sandbox.path().join("quiet.toml");
    std::fs::write(&config, "[runtime]\nproject_instructions = false\n").unwrap();
    let output = run(&["--config", config.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let second = &server.requests()[1];
    let system = second.body["messages"][0]["content"].as_str().unwrap();
    assert!(!system.contains("make check"), "{system}");
}

#[cfg(unix)]
#[test]
fn an_agents_md_linking_outside_the_repository_is_refused() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.workspace.join(".git")).unwrap();
    let outside = sandbox.path().join("private.txt");
    std::fs::write(&outside, "private notes outside the repository").unwrap();
    std::os::unix::fs::symlink(&outside, sandbox.workspace.join("AGENTS.md")).unwrap();
    let server = MockServer::start(vec![openai::text("ok")]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &[], "hello");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(
        err.contains("AGENTS.md was not read") && err.contains("outside"),
        "{err}"
    );
    assert!(!system_prompt(&server).contains("private notes"));
}

const PLAN: &str = r#"{"explanation":"two steps","plan":[{"step":"look around","status":"completed"},{"step":"write the answer","status":"in_progress"}]}"#;

#[test]
fn the_plan_is_shown_as_it_changes_carried_in_jsonl_and_kept_by_sessions_show() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![
        openai::tool_calls(&[("p1", "update_plan", PLAN)]),
        openai::text("done"),
        openai::tool_calls(&[("p2", "update_plan", PLAN)]),
        openai::text("done"),
    ])
    .unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &[], "plan it");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(
        err.contains("  ✓ update_plan")
            && err.contains("    two steps\n    [x] look around\n    [~] write the answer"),
        "{err}"
    );

    let output = sandbox
        .oxydra_command(&server, "run")
        .arg("plan again")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_lines(&output);
    let completed = events_of_type(&events, "tool_completed");
    assert_eq!(completed.len(), 1, "{events:?}");
    assert_eq!(completed[0]["name"], "update_plan");
    let shown = completed[0]["output"].as_str().unwrap();
    assert!(shown.contains("[~] write the answer"), "{shown}");
    let started = events_of_type(&events, "tool_started");
    assert_eq!(started[0]["tier"], "read_only");
    let session = events_of_type(&events, "final")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let listed = sandbox.sessions(&["show", &session]);
    let text = stdout(&listed);
    assert!(
        text.contains("plan:\n    two steps\n    [x] look around\n    [~] write the answer\n"),
        "{text}"
    );
}

#[test]
fn a_plan_with_two_steps_in_progress_is_refused_to_the_model() {
    let sandbox = Sandbox::new();
    let bad =
        r#"{"plan":[{"step":"a","status":"in_progress"},{"step":"b","status":"in_progress"}]}"#;
    let server = MockServer::start(vec![
        openai::tool_calls(&[("p1", "update_plan", bad)]),
        openai::text("sorry"),
    ])
    .unwrap();
    let output = sandbox
        .oxydra_command(&server, "run")
        .arg("plan")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_lines(&output);
    let failed = events_of_type(&events, "tool_failed");
    assert!(
        failed[0]["error"].as_str().unwrap().contains("at most one"),
        "{events:?}"
    );
    let result = server.requests()[1].first_tool_result().unwrap();
    assert!(
        result.contains("at most one step may be in_progress"),
        "{result}"
    );
}

/// A command that prints a secret among more lines than the tool line shows.
const NOISY: &str = r#"{"command":"for n in 1 2 3 4 5 6; do echo line $n; done; echo OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"}"#;

#[test]
fn a_commands_output_is_shown_cut_and_scrubbed_under_its_line_and_in_jsonl() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![
        openai::tool_calls(&[("c1", "shell_exec", NOISY)]),
        openai::text("done"),
        openai::tool_calls(&[("c2", "shell_exec", NOISY)]),
        openai::text("done"),
    ])
    .unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--approve", "allow"], "go");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("  ✓ shell_exec for n in"), "{err}");
    assert!(
        err.contains("    … 5 more lines\n    line 4\n    line 5\n    line 6\n"),
        "{err}"
    );
    assert!(err.contains("    OPENAI_API_KEY="), "{err}");
    assert!(
        !err.contains("sk-proj-AbCdEf"),
        "the secret is redacted: {err}"
    );

    let output = sandbox
        .oxydra_command(&server, "run")
        .args(["--approve", "allow", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_lines(&output);
    let completed = events_of_type(&events, "tool_completed");
    let shown = completed[0]["output"].as_str().unwrap();
    assert!(
        shown.starts_with("exit code: 0\nstdout:\nline 1\n"),
        "{shown}"
    );
    assert!(!shown.contains("sk-proj-AbCdEf"), "{shown}");
    let model_got = server.requests()[3].first_tool_result().unwrap();
    assert_eq!(shown, model_got, "the event carries what the model got");
    assert!(!stdout(&output).contains("sk-proj-AbCdEf"));
}
