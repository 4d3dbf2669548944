//! `oxydra sessions list | show | delete`, `--continue`, and what a failed run leaves.

use crate::common;

use common::{Sandbox, json_lines, stderr, stdout};
use oxydra_test_support::{MockServer, openai};

fn session_ids(sandbox: &Sandbox) -> Vec<String> {
    let list = sandbox.sessions(&["list", "--all", "--output", "jsonl"]);
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    json_lines(&list)
        .iter()
        .map(|session| session["session_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn list_shows_model_first_prompt_and_age_and_delete_removes_a_session() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("One."), openai::text("Two.")]).unwrap();
    for prompt in ["Fix the flaky\ntest please", "Write the docs"] {
        let output = sandbox.run_openai(&server.openai_url(), &[], prompt);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    let list = sandbox.sessions(&["list", "--all"]);
    let text = stdout(&list);
    assert_eq!(text.lines().count(), 2, "{text}");
    let workspace = sandbox.workspace.canonicalize().unwrap();
    assert!(
        text.contains(&format!(
            "  just now  2 messages  gpt-4o-mini  {}  Fix the flaky test please\n",
            workspace.display()
        )),
        "{text}"
    );
    assert!(text.contains("  Write the docs\n"), "{text}");
    let jsonl = json_lines(&sandbox.sessions(&["list", "--all", "--output", "jsonl"]));
    assert_eq!(jsonl[0]["first_prompt"], "Write the docs", "newest first");
    assert_eq!(jsonl[0]["model"], "gpt-4o-mini");
    assert_eq!(jsonl[0]["agent"], serde_json::Value::Null);

    let ids = session_ids(&sandbox);
    let deleted = sandbox.sessions(&["delete", &ids[0]]);
    assert_eq!(deleted.status.code(), Some(0), "{}", stderr(&deleted));
    assert!(stderr(&deleted).contains(&format!("deleted session {}", ids[0])));
    assert_eq!(session_ids(&sandbox), vec![ids[1].clone()]);
    let shown = sandbox.sessions(&["show", &ids[0]]);
    assert_eq!(shown.status.code(), Some(2), "{}", stderr(&shown));

    let again = sandbox.sessions(&["delete", &ids[0]]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("not found"), "{}", stderr(&again));
}

#[test]
fn a_db_that_does_not_exist_is_an_error_not_an_empty_store() {
    let sandbox = Sandbox::new();
    let missing = sandbox.path().join("typo.db");
    for args in [vec!["list"], vec!["show", "ses_1"], vec!["delete", "ses_1"]] {
        let output = sandbox
            .command()
            .arg("sessions")
            .args(&args)
            .arg("--db")
            .arg(&missing)
            .output()
            .unwrap();
        let err = stderr(&output);
        assert_ne!(output.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.contains("no database at"), "{args:?}: {err}");
        assert!(!stdout(&output).contains("no sessions stored"));
        assert!(!missing.exists(), "nothing was created");
    }
}

#[test]
fn continue_resumes_the_newest_session() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![
        openai::text("Old."),
        openai::text("New."),
        openai::text("Continued."),
    ])
    .unwrap();
    for prompt in ["older task", "newer task"] {
        let output = sandbox.run_openai(&server.openai_url(), &[], prompt);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    let output = sandbox.run_openai(&server.openai_url(), &["--continue"], "and then?");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let third = server.requests()[2].body["messages"].to_string();
    assert!(third.contains("newer task"), "{third}");
    assert!(third.contains("New."), "{third}");
    assert!(!third.contains("older task"), "{third}");
    assert_eq!(session_ids(&sandbox).len(), 2, "no new session");

    let both = sandbox.run_openai(
        &server.openai_url(),
        &["--continue", "--session", "ses_x"],
        "x",
    );
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));
}

#[test]
fn continue_with_nothing_stored_says_so() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("unused")]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--continue"], "hi");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("no stored session to continue"), "{err}");
    assert!(server.requests().is_empty());
}

#[test]
fn a_failed_run_leaves_no_empty_session() {
    let sandbox = Sandbox::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let output = sandbox.run_openai(&format!("http://{addr}/v1"), &[], "hello");
    let err = stderr(&output);
    assert_ne!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("(nothing was stored)"), "{err}");
    assert!(!err.contains("--session"), "{err}");
    assert!(session_ids(&sandbox).is_empty());
}

#[test]
fn a_unique_prefix_of_an_id_names_the_session_as_git_takes_a_commit() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("One."), openai::text("Two.")]).unwrap();
    for prompt in ["First", "Second"] {
        let output = sandbox.run_openai(&server.openai_url(), &[], prompt);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    let ids = session_ids(&sandbox);
    // The shortest prefix of ids[0] that ids[1] does not share.
    let unique = (1..=ids[0].len())
        .map(|end| &ids[0][..end])
        .find(|prefix| !ids[1].starts_with(prefix))
        .unwrap();
    let shown = sandbox.sessions(&["show", unique]);
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    assert!(stdout(&shown).contains("Second"), "{}", stdout(&shown));
    // `ses_` is a prefix of both: the error lists them and asks for more.
    let ambiguous = sandbox.sessions(&["show", "ses_"]);
    assert_eq!(ambiguous.status.code(), Some(2));
    let message = stderr(&ambiguous);
    assert!(message.contains("names 2 sessions"), "{message}");
    assert!(
        message.contains(&ids[0]) && message.contains(&ids[1]),
        "{message}"
    );
    // `--session PREFIX` continues it.
    let server = MockServer::start(vec![openai::text("Three.")]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--session", unique], "Third");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(session_ids(&sandbox).len(), 2);
    let body = &server.requests()[0].body;
    assert!(body.to_string().contains("Second"), "{body}");
}

#[test]
fn list_shows_this_workspaces_sessions_unless_all_and_says_how_many_are_elsewhere() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("One."), openai::text("Two.")]).unwrap();
    let other = sandbox.path().join("home").join("other");
    std::fs::create_dir_all(&other).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &[], "in ws");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut command = sandbox.command();
    command
        .args(["run", "--db"])
        .arg(&sandbox.db)
        .args(["--base-url", &server.openai_url(), "-C"])
        .arg(&other)
        .arg("in other");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    // Run from the sandbox root: neither session worked there.
    let here = sandbox.sessions(&["list"]);
    assert_eq!(here.status.code(), Some(0), "{}", stderr(&here));
    assert_eq!(stdout(&here), "no sessions stored\n");
    assert!(
        stderr(&here).contains("(2 sessions of other workspaces not shown: --all lists them)"),
        "{}",
        stderr(&here)
    );
    // -C names the workspace; the home directory is shown as `~`.
    let mut command = sandbox.command();
    command
        .args(["sessions", "list", "--db"])
        .arg(&sandbox.db)
        .arg("-C")
        .arg(&other);
    let there = stdout(&command.output().unwrap());
    assert_eq!(there.lines().count(), 1, "{there}");
    assert!(
        there.contains("  gpt-4o-mini  ~/other  in other\n"),
        "{there}"
    );
    let all = stdout(&sandbox.sessions(&["list", "--all"]));
    assert_eq!(all.lines().count(), 2, "{all}");
    let jsonl = json_lines(&sandbox.sessions(&["list", "--output", "jsonl", "-C", "ws"]));
    assert_eq!(jsonl.len(), 1);
    assert_eq!(jsonl[0]["first_prompt"], "in ws");
    // A workspace that does not exist is an error naming it.
    let missing = sandbox.sessions(&["list", "-C", "nowhere"]);
    assert_eq!(missing.status.code(), Some(2), "{}", stderr(&missing));
    assert!(stderr(&missing).contains("nowhere"), "{}", stderr(&missing));
}
