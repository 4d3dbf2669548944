//! What a session runs with, recorded and used again through the binary: a session an
//! agent of `oxydra serve` started lists its model and agent, and `oxydra run
//! --session` continues it with the agent's system prompt — unless the configuration
//! names a prompt, which wins. On a SQLite file and on PostgreSQL.

use crate::common;

use std::ffi::OsStr;
use std::process::Output;

use common::serve::{Server, run_to_end, runtime, sandbox_with_config};
use common::{Sandbox, json_lines, output_with_stdin, stderr, stdout};
use oxydra_postgres::testing::TestDatabase;
use oxydra_test_support::{MockServer, openai};
use serde_json::{Value, json};

/// The agent's system prompt: nothing but the agent sends it.
const AGENT_PROMPT: &str = "You are the quokka census agent. Count quokkas only.";
/// The prompt of `oxydra run` when the configuration names none (its start).
const CLI_DEFAULT_PROMPT: &str = "You are Oxydra";

fn config() -> String {
    format!(
        "[[agents]]\nname = \"census\"\ntype = \"agent\"\ndescription = \"Counts quokkas\"\n\
         system_prompt = \"{AGENT_PROMPT}\"\ntools = [\"file_read\"]\n"
    )
}

/// `oxydra <args…> --db DB` in the sandbox.
fn oxydra(sandbox: &Sandbox, db: &OsStr, args: &[&str]) -> Output {
    let mut command = sandbox.command();
    command.args(args).arg("--db").arg(db);
    command.output().unwrap()
}

/// `oxydra run --session SESSION PROMPT` against `provider` on `db`, with `extra` flags.
fn continue_run(
    sandbox: &Sandbox,
    db: &OsStr,
    provider: &MockServer,
    session: &str,
    extra: &[&str],
    prompt: &str,
) {
    let url = provider.openai_url();
    let mut args = vec!["run", "--base-url", &url, "--session", session];
    args.extend_from_slice(extra);
    args.push(prompt);
    let output = oxydra(sandbox, db, &args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// The messages of the provider's request number `index` as (role, content) pairs.
fn conversation(provider: &MockServer, index: usize) -> Vec<(String, String)> {
    let requests = provider.requests();
    let messages = requests[index].body["messages"].as_array().unwrap().clone();
    messages
        .iter()
        .map(|message| {
            (
                message["role"].as_str().unwrap().to_owned(),
                message["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn pair(role: &str, content: &str) -> (String, String) {
    (role.to_owned(), content.to_owned())
}

/// The session's line of `sessions list --output jsonl`.
fn listed(sandbox: &Sandbox, db: &OsStr, session: &str) -> Value {
    let output = oxydra(
        sandbox,
        db,
        &["sessions", "list", "--all", "--output", "jsonl"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    json_lines(&output)
        .into_iter()
        .find(|line| line["session_id"] == session)
        .unwrap_or_else(|| panic!("{session} not listed: {}", stdout(&output)))
}

/// A serve run of the agent, then `run --session` twice: first with nothing said about
/// the prompt, then with a configuration that names one.
fn serve_then_continue(sandbox: &Sandbox, db: &OsStr) {
    let provider = MockServer::start(vec![
        openai::text("Forty quokkas."),
        openai::text("Forty-one now."),
        openai::text("As you say."),
    ])
    .unwrap();
    let server = Server::start_against_on(sandbox, &provider, db);
    let run = runtime().block_on(run_to_end(
        &oxydra::http::client(),
        &server,
        json!({"agent_name": "census", "parameters": {"prompt": "How many quokkas?"}}),
    ));
    let (code, rest) = server.terminate();
    assert_eq!(run["status"], "completed", "{run}\n{rest}");
    assert_eq!(code, Some(0), "{rest}");
    let session = run["result"]["session_id"].as_str().unwrap().to_owned();
    let model = provider.requests()[0].body["model"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        conversation(&provider, 0),
        [
            pair("system", AGENT_PROMPT),
            pair("user", "How many quokkas?")
        ]
    );

    // Listed with the model it ran with and its agent.
    let line = listed(sandbox, db, &session);
    assert_eq!(line["model"], model.as_str(), "{line}");
    assert_eq!(line["agent"], "census", "{line}");
    let text = stdout(&oxydra(sandbox, db, &["sessions", "list", "--all"]));
    assert!(
        text.contains(&format!(
            "{session}  just now  2 messages  {model} (agent census)  {}  How many quokkas?\n",
            sandbox.workspace.canonicalize().unwrap().display()
        )),
        "{text}"
    );
    let shown = stdout(&oxydra(sandbox, db, &["sessions", "show", &session]));
    assert!(
        shown.starts_with(&format!(
            "model {model} (agent census)\nsystem prompt: {AGENT_PROMPT}\n#1 user\n"
        )),
        "{shown}"
    );

    // A chat continuing it says whose prompt it goes on with.
    let mut chat = sandbox.command();
    chat.args([
        "chat",
        "--base-url",
        &provider.openai_url(),
        "--session",
        &session,
    ])
    .arg("--db")
    .arg(db);
    let chatted = output_with_stdin(chat, b"/exit\n");
    assert_eq!(chatted.status.code(), Some(0), "{}", stderr(&chatted));
    assert!(
        stderr(&chatted)
            .contains("(a session of agent `census`: it goes on with that agent's system prompt)"),
        "{}",
        stderr(&chatted)
    );
    assert_eq!(provider.requests().len(), 1, "nothing was sent");

    // Continued with the configuration's defaults: the agent's prompt, not the CLI's.
    continue_run(sandbox, db, &provider, &session, &[], "And now?");
    assert_eq!(
        conversation(&provider, 1),
        [
            pair("system", AGENT_PROMPT),
            pair("user", "How many quokkas?"),
            pair("assistant", "Forty quokkas."),
            pair("user", "And now?"),
        ]
    );
    assert!(
        !provider.requests()[1]
            .body
            .to_string()
            .contains(CLI_DEFAULT_PROMPT)
    );
    assert_eq!(listed(sandbox, db, &session)["agent"], "census");

    // A prompt the configuration names wins; the session records it from then on.
    let explicit = sandbox.path().join("explicit.toml");
    std::fs::write(
        &explicit,
        "[runtime]\nsystem_prompt = \"Answer in one word.\"\n",
    )
    .unwrap();
    continue_run(
        sandbox,
        db,
        &provider,
        &session,
        &["--config", explicit.to_str().unwrap()],
        "Sure?",
    );
    let third = conversation(&provider, 2);
    assert_eq!(third[0], pair("system", "Answer in one word."));
    assert_eq!(third.len(), 6, "{third:?}");
    let line = listed(sandbox, db, &session);
    assert_eq!(line["agent"], Value::Null, "{line}");
    assert_eq!(line["messages"], 6, "{line}");
}

#[test]
fn a_serve_session_continued_with_run_keeps_its_agents_prompt_on_sqlite() {
    let sandbox = sandbox_with_config(&config());
    serve_then_continue(&sandbox, sandbox.db.as_os_str());
}

#[test]
fn a_serve_session_continued_with_run_keeps_its_agents_prompt_on_postgres() {
    let Some(database) = runtime().block_on(TestDatabase::create()) else {
        return;
    };
    let sandbox = sandbox_with_config(&config());
    let db = database.url_with_schema();
    serve_then_continue(&sandbox, db.as_ref());
}

#[test]
fn a_new_session_of_run_records_the_clis_prompt_and_continues_with_it() {
    let sandbox = Sandbox::new();
    let provider = MockServer::start(vec![openai::text("One."), openai::text("Two.")]).unwrap();
    let output = sandbox.run_openai(&provider.openai_url(), &[], "first");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let session =
        json_lines(&sandbox.sessions(&["list", "--all", "--output", "jsonl"]))[0]["session_id"]
            .as_str()
            .unwrap()
            .to_owned();
    let db = sandbox.db.as_os_str();
    let line = listed(&sandbox, db, &session);
    assert_eq!(
        (&line["model"], &line["agent"]),
        (&json!("gpt-4o-mini"), &Value::Null)
    );
    continue_run(&sandbox, db, &provider, &session, &[], "second");
    let (first, second) = (conversation(&provider, 0), conversation(&provider, 1));
    assert!(first[0].1.starts_with(CLI_DEFAULT_PROMPT), "{first:?}");
    assert_eq!(second[0], first[0]);
}
