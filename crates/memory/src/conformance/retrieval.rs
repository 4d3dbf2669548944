#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Retrieval: full text alone, vectors alone, merged; scopes; hostile queries; chunking;
//! a search seeing another store's writes; very common words.

use oxydra_types::SessionId;

use super::MemoryBackend;
use crate::{MemoryRetrieval, RetrievalConfig, SearchScope};

fn weights(vector_weight: f32, text_weight: f32) -> RetrievalConfig {
    RetrievalConfig {
        vector_weight,
        text_weight,
        ..RetrievalConfig::default()
    }
}

/// Stores each text as one chunk (each is shorter than a chunk); their ids in order.
async fn store_each(memory: &impl MemoryRetrieval, texts: Vec<String>) -> Vec<i64> {
    let mut ids = Vec::with_capacity(texts.len());
    for text in texts {
        let stored = memory.store_text(None, &text).await.unwrap();
        assert_eq!(stored.len(), 1, "{text}");
        ids.extend(stored);
    }
    ids
}

/// 1,000 distractor chunks about other things, deterministic.
fn distractors() -> Vec<String> {
    let words = [
        "garden", "tomato", "bicycle", "weather", "holiday", "piano", "recipe", "invoice",
        "football", "mountain", "river", "camera", "coffee", "library", "painting", "train",
        "museum", "orange", "keyboard", "window", "station", "pencil", "harbor", "forest",
    ];
    let mut state: u64 = 42;
    (0..1000)
        .map(|_| {
            (0..25)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    words[(state >> 33) as usize % words.len()]
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

const PLANTED: &str = "The production database failover runbook: promote the replica in eu-west-1, then rotate credentials";
const QUERY: &str = "how do we run a database failover to the replica?";

async fn planted_ranks_first<B: MemoryBackend>(backend: &B, vector_weight: f32, text_weight: f32) {
    let memory = backend.open(weights(vector_weight, text_weight));
    let mut texts = distractors();
    texts.insert(537, PLANTED.to_owned());
    let ids = store_each(&memory, texts).await;
    assert_eq!(ids.len(), 1001);
    let hits = memory.search(QUERY, &SearchScope::Global, 5).await.unwrap();
    assert_eq!(
        hits[0].text, PLANTED,
        "weights {vector_weight}/{text_weight}: {hits:?}"
    );
    assert_eq!(hits[0].chunk_id, ids[537]);
    assert!(hits.len() <= 5);
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
}

/// Among 1,000 distractors the planted chunk ranks first by full text alone.
pub async fn planted_chunk_first_by_text_alone<B: MemoryBackend>(backend: &B) {
    planted_ranks_first(backend, 0.0, 1.0).await;
}

/// Among 1,000 distractors the planted chunk ranks first by vectors alone.
pub async fn planted_chunk_first_by_vectors_alone<B: MemoryBackend>(backend: &B) {
    planted_ranks_first(backend, 1.0, 0.0).await;
}

/// Among 1,000 distractors the planted chunk ranks first with the merged score.
pub async fn planted_chunk_first_merged<B: MemoryBackend>(backend: &B) {
    planted_ranks_first(backend, 0.7, 0.3).await;
}

/// Full text alone finds nothing for words no chunk contains.
pub async fn text_alone_does_not_find_unrelated_words<B: MemoryBackend>(backend: &B) {
    let memory = backend.open(weights(0.0, 1.0));
    store_each(&memory, distractors()).await;
    assert!(
        memory
            .search("failover replica", &SearchScope::Global, 5)
            .await
            .unwrap()
            .is_empty()
    );
}

/// A session scope sees only its own chunks; the global scope sees all; `top_k` bounds the hits.
pub async fn session_scope_sees_only_its_chunks_and_global_sees_all<B: MemoryBackend>(backend: &B) {
    let memory = backend.open(RetrievalConfig::default());
    let (a, b) = (SessionId::from("ses_a"), SessionId::from("ses_b"));
    memory
        .store_text(Some(&a), "alpha team deploys the kafka cluster on fridays")
        .await
        .unwrap();
    memory
        .store_text(Some(&b), "beta team deploys the kafka cluster on mondays")
        .await
        .unwrap();
    memory
        .store_text(
            None,
            "global note: kafka cluster upgrades need a change ticket",
        )
        .await
        .unwrap();

    let in_a = memory
        .search("kafka cluster", &SearchScope::Session(a.clone()), 10)
        .await
        .unwrap();
    assert_eq!(in_a.len(), 1);
    assert_eq!(in_a[0].session_id.as_ref(), Some(&a));
    assert!(in_a[0].text.contains("fridays"));

    let global = memory
        .search("kafka cluster", &SearchScope::Global, 10)
        .await
        .unwrap();
    assert_eq!(global.len(), 3);
    assert!(global.iter().any(|h| h.session_id.is_none()));
    assert_eq!(
        memory
            .search("kafka", &SearchScope::Global, 2)
            .await
            .unwrap()
            .len(),
        2
    );
    let unknown = SearchScope::Session(SessionId::from("ses_none"));
    assert!(
        memory
            .search("kafka", &unknown, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

/// Full-text operators, unbalanced quotes, punctuation and empty queries are searched as plain words, never an error.
pub async fn hostile_and_empty_queries_do_not_error<B: MemoryBackend>(backend: &B) {
    let memory = backend.open(weights(0.0, 1.0));
    memory
        .store_text(
            None,
            "NEAR AND OR NOT are fts5 operators; so are quotes and stars",
        )
        .await
        .unwrap();
    for query in [
        "?!*\"()-:^",
        "\"unbalanced",
        "NEAR(",
        "a AND",
        "col:value",
        "*",
        "",
    ] {
        memory.search(query, &SearchScope::Global, 5).await.unwrap();
    }
    assert!(
        memory
            .search("?!*\"()", &SearchScope::Global, 5)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        memory
            .search("NEAR(operators", &SearchScope::Global, 5)
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(
        memory
            .search("operators", &SearchScope::Global, 0)
            .await
            .unwrap()
            .is_empty()
    );
    // Merged weights with a punctuation-only query: no text hits, no error.
    let merged = backend.open(RetrievalConfig::default());
    merged.store_text(None, "something").await.unwrap();
    merged.search("!!!", &SearchScope::Global, 5).await.unwrap();
}

/// Long texts are split into chunks that are found by their words; blank text stores nothing.
pub async fn long_texts_are_chunked_with_overlap<B: MemoryBackend>(backend: &B) {
    let memory = backend.open(RetrievalConfig {
        chunk_max_chars: 200,
        chunk_overlap: 40,
        ..RetrievalConfig::default()
    });
    let text = (0..100)
        .map(|i| format!("sentence{i} about topic{}.", i % 7))
        .collect::<Vec<_>>()
        .join(" ");
    let ids = memory.store_text(None, &text).await.unwrap();
    assert!(ids.len() >= 10, "{}", ids.len());
    let hits = memory
        .search("sentence57", &SearchScope::Global, 3)
        .await
        .unwrap();
    assert!(hits[0].text.contains("sentence57"));
    assert!(memory.store_text(None, "   ").await.unwrap().is_empty());
}

/// A search sees chunks another store wrote after the searching store loaded its vectors.
pub async fn vector_cache_sees_writes_from_another_connection<B: MemoryBackend>(backend: &B) {
    let reader = backend.open(weights(1.0, 0.0));
    let writer = backend.open(RetrievalConfig::default());
    writer
        .store_text(None, "first note about penguins")
        .await
        .unwrap();
    // Loads the cache with one vector.
    assert_eq!(
        reader
            .search("penguins", &SearchScope::Global, 5)
            .await
            .unwrap()
            .len(),
        1
    );
    writer
        .store_text(None, "second note about penguins and seals")
        .await
        .unwrap();
    // The reader's cache must notice the other connection's commit.
    let hits = reader
        .search("penguins seals", &SearchScope::Global, 5)
        .await
        .unwrap();
    assert_eq!(hits.len(), 2);
    assert!(hits[0].text.contains("seals"));
}

/// Words in more than `max_term_docs` chunks are left out of the full-text search unless only such words remain.
pub async fn very_common_words_are_left_out_unless_nothing_else_remains<B: MemoryBackend>(
    backend: &B,
) {
    let memory = backend.open(RetrievalConfig {
        vector_weight: 0.0,
        text_weight: 1.0,
        max_term_docs: 10,
        ..RetrievalConfig::default()
    });
    let mut texts: Vec<String> = (0..50)
        .map(|i| format!("widget report number {i}"))
        .collect();
    texts.push("widget calibration procedure".into());
    store_each(&memory, texts).await;
    let hits = memory
        .search("widget calibration", &SearchScope::Global, 10)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].text, "widget calibration procedure");
    // Only common words: the rarest is still searched.
    assert_eq!(
        memory
            .search("widget report", &SearchScope::Global, 100)
            .await
            .unwrap()
            .len(),
        50
    );
}
