//! The run listing's plans on PostgreSQL (`EXPLAIN`) over 1,000 analysed runs: every
//! filter of `GET /runs` reads an index of runs migration 5 in the listing's order,
//! with no sequential scan of the runs and no sort.

use oxydra_coordinator::{RunCursor, RunQuery, RunStatus};

use super::listing::{RunArgs, runs_statement};
use crate::testing::TestDatabase;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_run_listing_reads_an_index_in_order() {
    let Some(test) = TestDatabase::create().await else {
        return;
    };
    // Migrates the schema.
    let _db = test.connect().await;
    let (client, connection) = tokio_postgres::connect(test.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!(
            "SET search_path TO {schema};
             INSERT INTO coordinator_runs (id, agent_name, status, parameters, created_at)
             SELECT 'run_' || lpad(i::text, 4, '0'), 'agent_' || (i % 5),
                    CASE WHEN i % 10 = 0 THEN 'waiting_approval' ELSE 'completed' END,
                    '{{}}', 1700000000000 + i
             FROM generate_series(1, 1000) AS i;
             ANALYZE coordinator_runs;",
            schema = test.schema()
        ))
        .await
        .unwrap();
    let cursor = Some(RunCursor::after(1_700_000_000_500, "run_0500"));
    let queries = [
        RunQuery::default(),
        RunQuery {
            after: cursor.clone(),
            ..RunQuery::default()
        },
        RunQuery {
            status: Some(RunStatus::WaitingApproval),
            ..RunQuery::default()
        },
        RunQuery {
            status: Some(RunStatus::Completed),
            after: cursor.clone(),
            ..RunQuery::default()
        },
        RunQuery {
            agent: Some("agent_3".into()),
            after: cursor,
            ..RunQuery::default()
        },
    ];
    for query in queries {
        let owned = RunArgs::of(&query);
        let (sql, args) = runs_statement(&query, &owned);
        let plan: Vec<String> = client
            .query(&format!("EXPLAIN {sql}"), &args)
            .await
            .unwrap()
            .iter()
            .map(|row| row.get::<_, String>(0))
            .collect();
        let text = plan.join("\n");
        assert!(
            text.contains("Index Scan Backward using coordinator_runs_by_"),
            "{query:?}:\n{text}"
        );
        assert!(!text.contains("Seq Scan"), "{query:?}:\n{text}");
        assert!(!text.contains("Sort"), "{query:?}:\n{text}");
    }
}
