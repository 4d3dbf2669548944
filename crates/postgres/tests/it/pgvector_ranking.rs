//! The two vector backends on the same data: pgvector's search on the server and the
//! in-process ranking give the same results, and refuse the same bad vectors.

use crate::common;

use common::{DIMS, connect, dense_memory, raw};
use oxydra_memory::{MemoryError, MemoryRetrieval, RetrievalConfig, RetrievedChunk, SearchScope};
use oxydra_postgres::testing::TestDatabase;
use oxydra_postgres::{PostgresMemory, VectorBackend};
use oxydra_types::SessionId;

/// The same memory twice on the pgvector server: one schema on pgvector, one with it
/// turned off (in-process), or `None` having said why.
async fn both(
    retrieval: RetrievalConfig,
) -> Option<(TestDatabase, TestDatabase, [PostgresMemory; 2])> {
    let on = TestDatabase::create_pgvector().await?;
    let off = TestDatabase::create_pgvector().await?;
    let pgvector = dense_memory(connect(&on.options(), true).await, retrieval.clone());
    let in_process = dense_memory(connect(&off.options(), false).await, retrieval);
    assert_eq!(pgvector.vector_backend(), VectorBackend::PgVector);
    assert_eq!(in_process.vector_backend(), VectorBackend::InProcess);
    Some((on, off, [pgvector, in_process]))
}

/// 600 texts of twelve words from a small vocabulary: 200 without a session and 100
/// in each of four sessions.
fn corpus() -> Vec<(Option<SessionId>, String)> {
    let words = [
        "deploy", "rollback", "replica", "failover", "invoice", "garden", "tomato", "piano",
        "harbor", "forest", "camera", "coffee", "ledger", "kernel", "socket", "thread", "orbit",
        "canyon", "violin", "pepper", "glacier", "lantern", "marble", "quartz",
    ];
    let mut state: u64 = 7;
    (0..600)
        .map(|n| {
            let text = (0..12)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    words[(state >> 33) as usize % words.len()]
                })
                .collect::<Vec<_>>()
                .join(" ");
            let session = (n >= 200).then(|| SessionId::from(format!("ses_{}", n % 4)));
            (session, format!("{text} {n}"))
        })
        .collect()
}

const QUERIES: &[&str] = &[
    "deploy rollback",
    "replica failover",
    "garden tomato piano",
    "kernel socket thread",
    "violin",
    "quartz marble lantern",
    "coffee ledger invoice",
    "canyon glacier orbit",
    "unrelated words entirely",
    "pepper",
];

fn ids(hits: &[RetrievedChunk]) -> Vec<i64> {
    hits.iter().map(|hit| hit.chunk_id).collect()
}

/// Stores the corpus in both memories (the same ids in each) and checks every query,
/// globally and in two sessions, ranks alike.
async fn rank_alike(retrieval: RetrievalConfig, top_k: usize) {
    let Some((_on, _off, memories)) = both(retrieval).await else {
        return;
    };
    for (session, text) in corpus() {
        let mut stored = Vec::new();
        for memory in &memories {
            stored.push(memory.store_text(session.as_ref(), &text).await.unwrap());
        }
        assert_eq!(stored[0], stored[1]);
    }
    let scopes = [
        SearchScope::Global,
        SearchScope::Session(SessionId::from("ses_1")),
        SearchScope::Session(SessionId::from("ses_3")),
    ];
    let mut compared = 0;
    for query in QUERIES {
        for scope in &scopes {
            let pgvector = memories[0].search(query, scope, top_k).await.unwrap();
            let in_process = memories[1].search(query, scope, top_k).await.unwrap();
            assert_eq!(ids(&pgvector), ids(&in_process), "{query} in {scope:?}");
            for (a, b) in pgvector.iter().zip(&in_process) {
                assert!(
                    (a.score - b.score).abs() < 1e-4,
                    "{query} in {scope:?}: {a:?} vs {b:?}"
                );
                assert_eq!((&a.text, &a.session_id), (&b.text, &b.session_id));
            }
            if let SearchScope::Session(id) = scope {
                assert!(
                    pgvector
                        .iter()
                        .all(|hit| hit.session_id.as_ref() == Some(id))
                );
            }
            compared += pgvector.len();
        }
    }
    assert!(
        compared >= QUERIES.len() * scopes.len() * top_k / 2,
        "{compared}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vectors_alone_rank_alike_on_both_backends() {
    let retrieval = RetrievalConfig {
        vector_weight: 1.0,
        text_weight: 0.0,
        min_candidates: 20,
        ..RetrievalConfig::default()
    };
    rank_alike(retrieval, 10).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merged_scores_rank_alike_on_both_backends() {
    let retrieval = RetrievalConfig {
        min_candidates: 20,
        ..RetrievalConfig::default()
    };
    rank_alike(retrieval, 5).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_vectors_are_refused_alike_on_both_backends() {
    let Some((on, _off, memories)) = both(RetrievalConfig::default()).await else {
        return;
    };
    for memory in &memories {
        memory.store_text(None, "a fine note").await.unwrap();
    }
    // The embedder returns a vector of the wrong length, or with a NaN: for a query
    // and for a text to store.
    for bad in ["wrongdims query", "nanvalue query"] {
        let mut errors = Vec::new();
        for memory in &memories {
            let searched = memory
                .search(bad, &SearchScope::Global, 5)
                .await
                .unwrap_err();
            let stored = memory.store_text(None, bad).await.unwrap_err();
            for error in [&searched, &stored] {
                assert!(
                    matches!(error, MemoryError::Embedding(_)),
                    "{bad}: {error:?}"
                );
            }
            errors.push((searched.to_string(), stored.to_string()));
        }
        assert_eq!(errors[0], errors[1], "{bad}");
    }
    // Nothing bad was stored: the fine note is all there is.
    for memory in &memories {
        let hits = memory
            .search("a fine note", &SearchScope::Global, 5)
            .await
            .unwrap();
        assert_eq!(hits.len(), 1);
    }
    // The database itself refuses a vector whose length is not its row's `dims`.
    let client = raw(on.url()).await;
    let error = client
        .execute(
            &format!(
                "INSERT INTO {}.chunks (session_id, text, model, dims, embedding, created_at)
                 VALUES (NULL, 'x', 'test-dense:{DIMS}', {DIMS}, '[1,0,0]', 0)",
                on.schema()
            ),
            &[],
        )
        .await
        .unwrap_err();
    let message = error.as_db_error().unwrap().message().to_owned();
    assert!(message.contains("chunks_embedding_dims"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_vector_is_never_a_hit_on_either_backend() {
    let Some((on, off, memories)) = both(RetrievalConfig {
        vector_weight: 1.0,
        text_weight: 0.0,
        ..RetrievalConfig::default()
    })
    .await
    else {
        return;
    };
    for memory in &memories {
        memory.store_text(None, "first").await.unwrap();
        memory.store_text(None, "second").await.unwrap();
    }
    // Zero the second chunk's vector in both schemas.
    let client = raw(on.url()).await;
    let zero_vector = format!("[{}]", vec!["0"; DIMS].join(","));
    client
        .batch_execute(&format!(
            "UPDATE {}.chunks SET embedding = '{zero_vector}' WHERE id = 2;
             UPDATE {}.chunks SET embedding = '\\x{}'::BYTEA WHERE id = 2",
            on.schema(),
            off.schema(),
            "00".repeat(DIMS * 4)
        ))
        .await
        .unwrap();
    for memory in &memories {
        let hits = memory
            .search("second", &SearchScope::Global, 5)
            .await
            .unwrap();
        assert!(hits.iter().all(|hit| hit.chunk_id != 2), "{hits:?}");
    }
}
