//! `oxydra runs changes` and `oxydra runs revert` against a real `oxydra serve`
//! (which records its runs' checkpoints from `[checkpoints]`): a person sees what a
//! run changed, is refused when a file changed since (unless `--force`), reverts it,
//! and `oxydra undo` on the run's session takes the revert back. On PostgreSQL, a run of
//! one worker is listed and reverted through another.

use crate::common;

use std::process::{Command, Output};

use common::approvals::{WRITTEN, start_run, wait_for_status, writer_provider};
use common::serve::{Server, runtime, sandbox_with_config};
use common::{Sandbox, stderr, stdout};
use oxydra_postgres::testing::TestDatabase;
use serde_json::Value;

/// `file_write` allowed, one `writer` agent.
const ALLOW_CONFIG: &str = r#"
[runtime]
approve = "allow"

[[agents]]
name = "writer"
type = "agent"
description = "Writes files"
system_prompt = "You write files."
tools = ["file_write"]
"#;

fn client(sandbox: &Sandbox, server: &Server, args: &[&str]) -> Output {
    let mut command: Command = sandbox.command();
    command
        .args(args)
        .args(["--server", &server.base])
        .env_remove("OXYDRA_TOKEN")
        .env_remove("OXYDRA_SERVE_TOKEN")
        .env_remove("OXYDRA_SERVER");
    command.output().unwrap()
}

fn ok(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        stdout(output),
        stderr(output)
    );
    stdout(output)
}

#[test]
fn a_person_sees_a_run_s_changes_reverts_them_and_can_undo_the_revert() {
    let rt = runtime();
    let provider = writer_provider();
    let sandbox = sandbox_with_config(ALLOW_CONFIG);
    let server = Server::start_against(&sandbox, &provider);
    let http = oxydra::http::client();
    let out = sandbox.workspace.join("out.txt");
    let run_id = rt.block_on(async {
        let run_id = start_run(&http, &server, "write out.txt").await;
        wait_for_status(&http, &server.base, &run_id, "completed").await;
        run_id
    });
    assert_eq!(std::fs::read_to_string(&out).unwrap(), WRITTEN);

    // What it changed, its escapes shown escaped.
    let listed = ok(&client(&sandbox, &server, &["runs", "changes", &run_id]));
    assert!(listed.contains("turn 1: 1 path(s)"), "{listed}");
    assert!(listed.contains("added out.txt (+1 -0)"), "{listed}");
    assert!(listed.contains("+hello"), "{listed}");
    assert!(!listed.contains('\u{1b}'), "{listed:?}");
    let json = ok(&client(
        &sandbox,
        &server,
        &["runs", "changes", &run_id, "--json"],
    ));
    let changes: Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(
        changes["turns"][0]["paths"][0]["kind"], "added",
        "{changes}"
    );
    let session = changes["session_id"].as_str().unwrap().to_owned();

    // Someone edits the file: the revert is refused, naming it, until forced.
    std::fs::write(&out, "edited by hand\n").unwrap();
    let refused = client(&sandbox, &server, &["runs", "revert", &run_id]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let said = stderr(&refused);
    assert!(
        said.contains("revert_conflicts") && said.contains("out.txt"),
        "{said}"
    );
    assert!(said.contains("--force"), "{said}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "edited by hand\n");
    let forced = ok(&client(
        &sandbox,
        &server,
        &["runs", "revert", &run_id, "--force"],
    ));
    assert!(
        forced.contains(&format!(
            "reverted run {run_id}: turn(s) 1; 1 path(s) put back"
        )),
        "{forced}"
    );
    assert!(!out.exists());

    // A turn the run does not have.
    let no_turn = client(&sandbox, &server, &["runs", "revert", &run_id, "--to", "7"]);
    assert_eq!(no_turn.status.code(), Some(2));
    assert!(
        stderr(&no_turn).contains("turn_not_found"),
        "{}",
        stderr(&no_turn)
    );

    // The revert is recorded in the run's session: `undo` takes it back.
    let mut undo = sandbox.stored_command("undo");
    undo.args(["--session", &session, "--force"]);
    let undone = undo.output().unwrap();
    assert_eq!(undone.status.code(), Some(0), "{}", stderr(&undone));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "edited by hand\n");
    let (code, _) = server.terminate();
    assert_eq!(code, Some(0));
}

#[test]
fn on_postgres_a_run_of_one_worker_is_listed_and_reverted_through_another() {
    let rt = runtime();
    let Some(database) = rt.block_on(TestDatabase::create()) else {
        return;
    };
    let provider = writer_provider();
    let sandbox = sandbox_with_config(ALLOW_CONFIG);
    let db = database.url_with_schema();
    let first = Server::start_against_on(&sandbox, &provider, db.as_ref());
    let second = Server::start_against_on(&sandbox, &provider, db.as_ref());
    let http = oxydra::http::client();
    let run_id = rt.block_on(async {
        let run_id = start_run(&http, &first, "write out.txt").await;
        wait_for_status(&http, &first.base, &run_id, "completed").await;
        run_id
    });
    let out = sandbox.workspace.join("out.txt");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), WRITTEN);
    let json = ok(&client(
        &sandbox,
        &second,
        &["runs", "changes", &run_id, "--json"],
    ));
    let changes: Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(
        changes["turns"][0]["paths"][0]["path"], "out.txt",
        "{changes}"
    );
    let reverted = ok(&client(&sandbox, &second, &["runs", "revert", &run_id]));
    assert!(reverted.contains("1 path(s) put back"), "{reverted}");
    assert!(!out.exists());
    for server in [first, second] {
        let (code, rest) = server.terminate();
        assert_eq!(code, Some(0), "{rest}");
    }
}
