//! `oxydra_coordinator::client::Client` against a real served coordinator: pages of
//! runs filtered and continued by cursor, approvals decided, a run's events resumed
//! after `Last-Event-ID`, and the server's refusals (400 naming the field, 401
//! without the token, 404, 409) as `CoordinatorError::Client`.

use crate::person_api::{served, start, until};

use futures::StreamExt;
use oxydra_coordinator::client::{Client, RunEvent, RunFilter};
use oxydra_coordinator::{ApprovalDecision, CoordinatorConfig, CoordinatorError, RunStatus};
use oxydra_provider::ScriptedTurn;
use serde_json::json;

/// The status, code and field of a client error.
fn refusal(error: CoordinatorError) -> (Option<u16>, String, Option<String>) {
    match error {
        CoordinatorError::Client {
            status,
            code,
            field,
            ..
        } => (status, code, field),
        other => panic!("not a client error: {other:?}"),
    }
}

fn ids(page: &oxydra_coordinator::RunPage) -> Vec<&str> {
    page.runs.iter().map(|run| run.run_id.as_str()).collect()
}

/// Every event of a stream until it ends (at most 10 s).
async fn all_events(client: &Client, run_id: &str, last: Option<&str>) -> Vec<RunEvent> {
    let stream = client.events(run_id, last);
    let read = stream.map(Result::unwrap).collect::<Vec<_>>();
    tokio::time::timeout(std::time::Duration::from_secs(10), read)
        .await
        .expect("the event stream did not end with its run")
}

#[tokio::test]
async fn runs_are_listed_filtered_and_paged_by_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let turns = vec![
        ScriptedTurn::tool_call("c1", "shell_exec", r#"{"command":"make"}"#),
        ScriptedTurn::text("one"),
        ScriptedTurn::text("two"),
    ];
    let server = served(CoordinatorConfig::default(), turns, dir.path()).await;
    let client = Client::new(&format!("{}/", server.base), None).unwrap();
    let waiting = start(&server, "builder").await;
    until(&server, &waiting, "waiting_approval").await;
    let second = client
        .create_run("fetcher", json!({"prompt": "Go."}))
        .await
        .unwrap();
    assert_eq!(second.status, RunStatus::Pending);
    let second = second.run_id;
    server.finished(&second).await;
    let third = start(&server, "builder").await;
    server.finished(&third).await;

    let all = client.list_runs(&RunFilter::new()).await.unwrap();
    assert_eq!(ids(&all), [&third, &second, &waiting]);
    assert_eq!(all.next_cursor, None);
    let page = client
        .list_runs(&RunFilter::new().with_status(RunStatus::WaitingApproval))
        .await
        .unwrap();
    assert_eq!(ids(&page), [&waiting]);
    let run = client.run(&waiting).await.unwrap();
    assert_eq!(run.pending_approvals.len(), 1, "{run:?}");
    let filter = RunFilter {
        agent: Some("builder".into()),
        since: Some("1h".into()),
        ..RunFilter::new()
    };
    let page = client.list_runs(&filter).await.unwrap();
    assert_eq!(ids(&page), [&third, &waiting]);

    let first = RunFilter {
        limit: Some(2),
        ..RunFilter::new()
    };
    let page = client.list_runs(&first).await.unwrap();
    assert_eq!(ids(&page), [&third, &second]);
    let cursor = page.next_cursor.clone().unwrap();
    let next = client.list_runs(&first.after(cursor)).await.unwrap();
    assert_eq!(ids(&next), [&waiting]);
    assert_eq!(next.next_cursor, None);

    let run = client.run(&third).await.unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.agent_name, "builder");
    let cancelled = client.cancel(&waiting).await.unwrap();
    assert_eq!(cancelled.status, RunStatus::Cancelled);
    let agents = client.agents().await.unwrap();
    assert_eq!(agents.agents.len(), 2);
}

#[tokio::test]
async fn an_approval_is_decided_and_the_events_resume_after_the_last_event_id() {
    let dir = tempfile::tempdir().unwrap();
    let turns = vec![
        ScriptedTurn::tool_call("c1", "shell_exec", r#"{"command":"make"}"#),
        ScriptedTurn::text("Built."),
    ];
    let server = served(CoordinatorConfig::default(), turns, dir.path()).await;
    let client = Client::new(&server.base, None).unwrap();
    let run_id = start(&server, "builder").await;
    until(&server, &run_id, "waiting_approval").await;

    // The history so far: read until the run says it waits.
    let mut history = Box::pin(client.events(&run_id, None));
    let mut waiting = None;
    while let Some(event) = history.next().await {
        let event = event.unwrap();
        if event
            .run()
            .is_some_and(|run| run.status == RunStatus::WaitingApproval)
        {
            waiting = Some(event);
            break;
        }
        assert_eq!(event.kind, "message", "{event:?}");
        assert!(event.message().unwrap().sequence > 0);
    }
    drop(history);
    let waiting = waiting.expect("the stream never showed the run waiting");
    let last_id = waiting.id.clone().unwrap();

    let approvals = client.list_approvals().await.unwrap();
    assert_eq!(approvals.len(), 1);
    let approval = &approvals[0].waiting;
    assert_eq!(
        (approval.run_id.as_str(), approval.approval.tool.as_str()),
        (run_id.as_str(), "shell_exec")
    );
    let decided = client
        .decide(
            &run_id,
            approval.approval.approval_id.as_str(),
            &ApprovalDecision::ApproveOnce,
        )
        .await
        .unwrap();
    assert_eq!(decided.run_id, run_id);
    let again = client
        .decide(
            &run_id,
            approval.approval.approval_id.as_str(),
            &ApprovalDecision::Deny {
                reason: Some("too late".into()),
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(refusal(again).0, Some(404 | 409)));

    // Resumed after the waiting event: only later messages, then the end; the stream
    // ends with the run.
    let sequence: u64 = last_id.split('.').next().unwrap().parse().unwrap();
    let live = all_events(&client, &run_id, Some(&last_id)).await;
    let end = live.last().unwrap();
    assert!(end.is_last());
    assert_eq!(end.run().unwrap().status, RunStatus::Completed);
    let later: Vec<u64> = live
        .iter()
        .filter_map(RunEvent::message)
        .map(|message| message.sequence)
        .collect();
    assert!(!later.is_empty(), "{live:?}");
    assert!(later.iter().all(|later| *later > sequence), "{live:?}");
    // From the start, an ended run's stream is its whole history and its end.
    let whole = all_events(&client, &run_id, None).await;
    assert!(whole.len() > live.len(), "{whole:?}");
}

#[tokio::test]
async fn the_servers_refusals_keep_their_status_code_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let server = served(CoordinatorConfig::default(), vec![], dir.path()).await;
    let client = Client::new(&server.base, None).unwrap();
    for (filter, field) in [
        (
            RunFilter {
                limit: Some(0),
                ..RunFilter::new()
            },
            "limit",
        ),
        (
            RunFilter {
                status: Some("finished".into()),
                ..RunFilter::new()
            },
            "status",
        ),
        (RunFilter::new().after("' OR 1=1--"), "cursor"),
        (
            RunFilter {
                since: Some("last-week".into()),
                ..RunFilter::new()
            },
            "since",
        ),
    ] {
        let error = client.list_runs(&filter).await.unwrap_err();
        assert!(
            error.to_string().contains(&format!("(field `{field}`)")),
            "{error}"
        );
        assert_eq!(
            refusal(error),
            (Some(400), "invalid_query".into(), Some(field.into()))
        );
    }
    let mut events = Box::pin(client.events("run_nope", Some("not-an-id")));
    let error = events.next().await.unwrap().unwrap_err();
    assert_eq!(
        refusal(error),
        (
            Some(400),
            "invalid_header".into(),
            Some("Last-Event-ID".into())
        )
    );
    assert!(events.next().await.is_none(), "an error ends the stream");
    let mut events = Box::pin(client.events("run_nope", None));
    let error = events.next().await.unwrap().unwrap_err();
    assert_eq!(refusal(error).1, "run_not_found");
    assert_eq!(
        refusal(client.run("run_nope").await.unwrap_err()),
        (Some(404), "run_not_found".into(), None)
    );
    assert_eq!(
        refusal(client.create_run("nobody", json!({})).await.unwrap_err()),
        (Some(404), "agent_not_found".into(), None)
    );
    assert_eq!(
        refusal(
            client
                .create_run("builder", json!({"wrong": 1}))
                .await
                .unwrap_err()
        )
        .1,
        "parameter_validation_failed"
    );
    // No server there: no status.
    let nobody = Client::new("http://127.0.0.1:9", None).unwrap();
    let (status, code, _) = refusal(nobody.list_approvals().await.unwrap_err());
    assert_eq!((status, code.as_str()), (None, "unreachable"));
}

#[tokio::test]
async fn without_the_token_the_client_is_refused_401_and_with_it_answered() {
    let dir = tempfile::tempdir().unwrap();
    let config = CoordinatorConfig {
        auth_token: Some("s3cret-token-for-the-client".into()),
        ..CoordinatorConfig::default()
    };
    let server = served(config, vec![], dir.path()).await;
    for token in [None, Some("wrong-token".to_owned())] {
        let client = Client::new(&server.base, token).unwrap();
        assert_eq!(
            refusal(client.list_runs(&RunFilter::new()).await.unwrap_err()),
            (Some(401), "unauthorized".into(), None)
        );
        let mut events = Box::pin(client.events("run_x", None));
        assert_eq!(
            refusal(events.next().await.unwrap().unwrap_err()).0,
            Some(401)
        );
    }
    let client = Client::new(&server.base, Some("s3cret-token-for-the-client".into())).unwrap();
    assert!(
        client
            .list_runs(&RunFilter::new())
            .await
            .unwrap()
            .runs
            .is_empty()
    );
    assert!(client.list_approvals().await.unwrap().is_empty());
}
