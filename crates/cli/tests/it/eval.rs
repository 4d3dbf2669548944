//! `oxydra eval SUITE.toml` end to end against the scripted server: passing and
//! failing suites, the threshold's exit code, JSON and JUnit reports, `--compare`,
//! and suites that try to reach outside their folder.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common;

use common::{Sandbox, json_lines, stderr, stdout};
use oxydra_test_support::{MockServer, openai};

const WRITE_SUITE: &str = r#"
name = "greetings"

[[task]]
name = "write hello"
prompt = "Put the word hi in out.txt"
files = { "README.md" = "a workspace" }

[[task.check]]
file = "out.txt"
equals = "hi"

[[task.check]]
tool_called = "file_write"
count = 1

[[task.check]]
answer_contains = "done"

[[task.check]]
max_turns = 2
"#;

fn write_suite(sandbox: &Sandbox, text: &str) -> PathBuf {
    let dir = sandbox.path().join("evals");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("suite.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn eval(sandbox: &Sandbox, server: &MockServer, suite: &Path, extra: &[&str]) -> Output {
    sandbox
        .command()
        .arg("eval")
        .arg(suite)
        .args(["--base-url", &server.openai_url()])
        .args(extra)
        .output()
        .unwrap()
}

fn writes_hi() -> Vec<oxydra_test_support::Reply> {
    vec![
        openai::tool_calls(&[(
            "call_w",
            "file_write",
            r#"{"path":"out.txt","content":"hi"}"#,
        )]),
        openai::text("All done."),
    ]
}

#[test]
fn a_suite_the_scripted_model_does_passes_in_a_fresh_workspace() {
    let sandbox = Sandbox::new();
    let suite = write_suite(&sandbox, WRITE_SUITE);
    let mut replies = writes_hi();
    replies.extend(writes_hi());
    let server = MockServer::start(replies).unwrap();
    let json = sandbox.path().join("report.json");
    let output = eval(
        &sandbox,
        &server,
        &suite,
        &["--runs", "2", "--json", json.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let table = stdout(&output);
    assert!(table.contains("write hello"), "{table}");
    assert!(table.contains("2/2"), "{table}");
    assert!(!table.contains("FAILED"), "{table}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let task = &report["reports"][0]["tasks"][0];
    assert_eq!(task["name"], "write hello");
    assert_eq!(task["successes"], 2);
    assert_eq!(task["success_rate"], 1.0);
    assert_eq!(task["tool_calls"], 2);
    // Each run had a workspace of its own, holding the fixture: the model was shown
    // the prompt alone, and nothing was written where the command ran.
    assert!(!sandbox.path().join("out.txt").exists());
    assert!(!sandbox.workspace.join("out.txt").exists());
    assert!(!suite.parent().unwrap().join("out.txt").exists());
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let first = &requests[0].body["messages"];
    assert!(first.to_string().contains("Put the word hi in out.txt"));
}

#[test]
fn a_failed_check_is_named_and_the_threshold_sets_the_exit_code() {
    let sandbox = Sandbox::new();
    let suite = write_suite(&sandbox, WRITE_SUITE);
    let junit = sandbox.path().join("junit.xml");
    let server = MockServer::start(vec![openai::text("I <won't> & can't")]).unwrap();
    let output = eval(
        &sandbox,
        &server,
        &suite,
        &["--junit", junit.to_str().unwrap()],
    );
    // No threshold: a failing task is reported, not an error.
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let table = stdout(&output);
    assert!(table.contains("0/1"), "{table}");
    assert!(
        table.contains("file out.txt equals \"hi\": it does not exist"),
        "{table}"
    );
    assert!(
        table.contains("tool file_write called 1 times: called 0 times"),
        "{table}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    let document = roxmltree::Document::parse(&xml).unwrap();
    let failures: Vec<_> = document
        .descendants()
        .filter(|node| node.has_tag_name("failure"))
        .collect();
    assert_eq!(failures.len(), 1, "{xml}");
    let message = failures[0].attribute("message").unwrap();
    assert!(message.contains("file out.txt equals"), "{message}");
    assert!(
        message.contains("answer contains \"done\": the answer was \"I <won't> & can't\""),
        "{message}"
    );
    let case = failures[0].parent().unwrap();
    assert_eq!(case.attribute("name"), Some("write hello #1"));

    let server = MockServer::start(vec![openai::text("no")]).unwrap();
    let output = eval(&sandbox, &server, &suite, &["--threshold", "0.5"]);
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("below the threshold") && stderr(&output).contains("write hello"),
        "{}",
        stderr(&output)
    );
    let server = MockServer::start(writes_hi()).unwrap();
    let output = eval(&sandbox, &server, &suite, &["--threshold", "1"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let output = eval(&sandbox, &server, &suite, &["--threshold", "1.5"]);
    assert_eq!(output.status.code(), Some(2), "stderr: {}", stderr(&output));
}

#[test]
fn compare_runs_a_second_model_side_by_side_and_jsonl_has_every_run() {
    let sandbox = Sandbox::new();
    let suite = write_suite(&sandbox, WRITE_SUITE);
    let mut replies = writes_hi();
    replies.push(openai::text("nothing"));
    let server = MockServer::start(replies).unwrap();
    let output = eval(
        &sandbox,
        &server,
        &suite,
        &[
            "--model",
            "model-a",
            "--compare",
            "model-b",
            "--output",
            "jsonl",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let lines = json_lines(&output);
    let kinds: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["eval_run", "eval_run", "eval_report", "eval_report"]
    );
    assert_eq!(lines[2]["label"], "model-a");
    assert_eq!(lines[2]["success_rate"], 1.0);
    assert_eq!(lines[3]["label"], "model-b");
    assert_eq!(lines[3]["success_rate"], 0.0);
    let models: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(models, ["model-a", "model-a", "model-b"]);
}

#[test]
fn parallel_runs_each_get_a_workspace_of_their_own() {
    let sandbox = Sandbox::new();
    let suite = write_suite(
        &sandbox,
        r#"
[[task]]
name = "answer"
prompt = "Say ok"
files = { "a.txt" = "x" }
[[task.check]]
answer_contains = "ok"
[[task.check]]
file = "a.txt"
equals = "x"
"#,
    );
    let server = MockServer::repeating(vec![openai::text("ok")]).unwrap();
    let output = eval(
        &sandbox,
        &server,
        &suite,
        &["--runs", "4", "--parallel", "2"],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(stdout(&output).contains("4/4"), "{}", stdout(&output));
    assert_eq!(server.requests().len(), 4);
}

#[test]
fn bad_suites_are_refused_naming_the_file_task_and_key() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![]).unwrap();
    let outside = sandbox.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "s").unwrap();
    std::fs::create_dir_all(sandbox.path().join("evals")).unwrap();
    std::os::unix::fs::symlink(&outside, sandbox.path().join("evals/link")).unwrap();
    let task = |extra: &str| {
        format!(
            "[[task]]\nname = \"t1\"\nprompt = \"p\"\n{extra}\n[[task.check]]\nanswer_contains = \"x\"\n"
        )
    };
    let cases = [
        (task("fixture = \"../outside\""), "fixture"),
        (task(&format!("fixture = \"{}\"", outside.display())), "fixture"),
        (task("fixture = \"link\""), "outside the suite's folder"),
        (task("files = { \"../escape.txt\" = \"x\" }"), "files.\"../escape.txt\""),
        (task("files = { \"/tmp/abs.txt\" = \"x\" }"), "files.\"/tmp/abs.txt\""),
        (task("colour = \"red\""), "colour"),
        (
            "[[task]]\nname = \"t1\"\nprompt = \"p\"\n[[task.check]]\nanswer_matches = \"(\"\n".into(),
            "check[0].answer_matches",
        ),
        (
            "[[task]]\nname = \"t1\"\nprompt = \"p\"\n[[task.check]]\nfile = \"../x\"\nequals = \"y\"\n".into(),
            "check[0].file",
        ),
        (
            "[[task]]\nname = \"t1\"\nprompt = \"p\"\n[[task.check]]\nequals = \"y\"\n".into(),
            "check[0].file",
        ),
        ("[[task]]\nname = \"t1\"\n".into(), "prompt"),
    ];
    for (text, key) in cases {
        let suite = write_suite(&sandbox, &text);
        let output = eval(&sandbox, &server, &suite, &[]);
        let error = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{text}: {error}");
        assert!(error.contains("suite.toml"), "{text}: {error}");
        assert!(error.contains(key), "{text}: {error}");
        assert!(error.contains("line "), "{text}: {error}");
    }
    assert!(!sandbox.path().join("escape.txt").exists());
    assert_eq!(server.hits(), 0);
    let missing = eval(&sandbox, &server, &sandbox.path().join("nope.toml"), &[]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("nope.toml"),
        "{}",
        stderr(&missing)
    );
}

#[test]
fn a_fixture_folder_is_copied_and_an_escape_sequence_in_a_name_is_not_printed() {
    let sandbox = Sandbox::new();
    let fixture = sandbox.path().join("evals/fixtures/notes");
    std::fs::create_dir_all(fixture.join("sub")).unwrap();
    std::fs::write(fixture.join("sub/fact.txt"), "the code is 7731").unwrap();
    let suite = write_suite(
        &sandbox,
        "[[task]]\nname = \"read \\u001b[31mred\"\nprompt = \"What is the code in sub/fact.txt?\"\nfixture = \"fixtures/notes\"\n[[task.check]]\nanswer_contains = \"7731\"\n[[task.check]]\nfile = \"sub/fact.txt\"\ncontains = \"7731\"\n[[task.check]]\ntool_not_called = \"shell_exec\"\n",
    );
    let server = MockServer::start(vec![
        openai::tool_calls(&[("c1", "file_read", r#"{"path":"sub/fact.txt"}"#)]),
        openai::text("It is 7731."),
    ])
    .unwrap();
    let output = eval(&sandbox, &server, &suite, &[]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(stdout(&output).contains("1/1"), "{}", stdout(&output));
    assert!(!stdout(&output).contains('\u{1b}'), "{:?}", stdout(&output));
    assert!(!stderr(&output).contains('\u{1b}'), "{:?}", stderr(&output));
    let result = server.requests()[1].first_tool_result().unwrap();
    assert!(result.contains("7731"), "{result}");
}
