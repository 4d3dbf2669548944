//! Issue 50.2 ("serve keeps answering 1,000 concurrent `POST /runs`"), asserted by
//! structure, not time: a burst of clients, each on its own connection and many more
//! than the connection cap, each sending a whole `POST /runs` at once. Every one gets
//! its `201` (none is shed or lost: a connection whose request has come is not an idle
//! one), each names a distinct run, every run is in the store, answering does not wait
//! for any run (the runs are held at a gate meanwhile), and no more runs execute at
//! once than `max_concurrent_runs`.

use crate::support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use oxydra_coordinator::{CoordinatorConfig, RunnerDeps};
use serde_json::Value;
use support::{Served, gate_blueprint, registry};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One `POST /runs` on a fresh connection, sent whole at once: the status code and
/// the body of the answer (status 0 when the connection closed without one).
async fn post_on_own_connection(addr: String, label: usize) -> (u16, String) {
    let body = format!(r#"{{"agent_name":"waiter","parameters":{{"label":"{label}"}}}}"#);
    let request = format!(
        "POST /runs HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    // A reset is what a shed connection can get: it counts as no answer.
    let _ = stream.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_over_the_connection_cap_is_answered_whole_and_stored() {
    const CLIENTS: usize = 300;
    const CAP: usize = 8;
    const WORKERS: usize = 2;
    let (gate_tool, mut control) = support::gate();
    let config = CoordinatorConfig {
        max_connections: CAP,
        max_concurrent_runs: WORKERS,
        ..CoordinatorConfig::default()
    };
    let deps = RunnerDeps::new(registry(vec![Arc::new(gate_tool)]), ".");
    let server = Served::with(config, vec![gate_blueprint()], deps).await;
    let addr = server.base.trim_start_matches("http://").to_owned();

    let posts: Vec<_> = (0..CLIENTS)
        .map(|label| tokio::spawn(post_on_own_connection(addr.clone(), label)))
        .collect();
    let mut ids = BTreeSet::new();
    let mut statuses = Vec::new();
    for post in posts {
        let (status, body) = post.await.unwrap();
        statuses.push(status);
        if status == 201 {
            let body: Value = serde_json::from_str(&body).unwrap();
            ids.insert(body["run_id"].as_str().unwrap().to_owned());
        }
    }
    let answered = statuses.iter().filter(|status| **status == 201).count();
    assert_eq!(
        answered,
        CLIENTS,
        "every request answered 201; the others got {:?}",
        statuses
            .iter()
            .filter(|status| **status != 201)
            .collect::<Vec<_>>()
    );
    assert_eq!(ids.len(), CLIENTS, "each answer names a run of its own");

    // All answered while the workers were held at the gate: the first runs are in it,
    // never more than the workers.
    for _ in 0..WORKERS {
        control.entered.recv().await.unwrap();
    }
    assert!(control.max_in_flight.load(Ordering::SeqCst) <= WORKERS);
    for id in &ids {
        let (status, run) = server.get(&format!("/runs/{id}")).await;
        assert_eq!(status, 200, "{run}");
        assert!(
            matches!(run["status"].as_str(), Some("pending" | "running")),
            "{run}"
        );
    }

    // Released, every run completes, and never more than the workers ran at once.
    control.release.add_permits(CLIENTS);
    for id in &ids {
        let run = server.finished(id).await;
        assert_eq!(run["status"], "completed", "{run}");
    }
    assert!(control.max_in_flight.load(Ordering::SeqCst) <= WORKERS);
    server.stop().await;
}
