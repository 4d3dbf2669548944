//! `OpenAiEmbedder` against a real local HTTP server.

use std::sync::Arc;

use oxydra_memory::{
    Embedder, MemoryError, MemoryRetrieval, OpenAiEmbedder, OpenAiEmbedderConfig, SearchScope,
    SqliteConfig, SqliteMemory,
};
use oxydra_test_support::{MockServer, RecordedRequest, Reply};
use serde_json::{Value, json};

/// A tiny embedding server: vector = [count of 'a', count of 'b', count of 'c', 1],
/// returned in reverse order with explicit indexes. A model named "broken" gets a 500.
fn embeddings(request: &RecordedRequest) -> Reply {
    let body = &request.body;
    if body["model"] == "broken" {
        return Reply::json(
            500,
            json!({"error": {"message": "model exploded"}}).to_string(),
        );
    }
    let inputs = body["input"].as_array().unwrap();
    let mut data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let text = text.as_str().unwrap();
            let count = |c| text.matches(c).count() as f32;
            json!({"object": "embedding", "index": index, "embedding": [count('a'), count('b'), count('c'), 1.0]})
        })
        .collect();
    data.reverse();
    Reply::json(
        200,
        json!({"object": "list", "data": data, "model": body["model"]}).to_string(),
    )
}

/// Serves only `POST /v1/embeddings` with JSON bodies, like the real API.
async fn server() -> (String, MockServer) {
    let server = MockServer::builder()
        .only("POST", "/v1/embeddings")
        .respond_with(embeddings)
        .start()
        .unwrap();
    (server.url("/v1/"), server)
}

/// The `Authorization` header and JSON body of each request the server saw.
fn seen(server: &MockServer) -> Vec<(Option<String>, Value)> {
    server
        .requests()
        .into_iter()
        .map(|r| (r.authorization().map(str::to_owned), r.body))
        .collect()
}

fn embedder(base_url: &str, model: &str, key: Option<&str>) -> OpenAiEmbedder {
    let mut config = OpenAiEmbedderConfig::new(base_url, model, 4);
    config.api_key = key.map(str::to_owned);
    OpenAiEmbedder::new(config, oxydra_http::client())
}

#[tokio::test]
async fn embeds_in_input_order_with_bearer_auth() {
    let (url, server) = server().await;
    let embedder = embedder(&url, "text-embedding-test", Some("sk-test"));
    assert_eq!(embedder.dimensions(), 4);
    let vectors = embedder.embed(&["aaa".into(), "bb".into()]).await.unwrap();
    assert_eq!(vectors.len(), 2);
    // Normalised, and in input order despite the reversed response.
    let unit = |v: [f32; 4]| {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.map(|x| x / n)
    };
    for (got, want) in vectors
        .iter()
        .zip([unit([3.0, 0.0, 0.0, 1.0]), unit([0.0, 2.0, 0.0, 1.0])])
    {
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{got:?}");
        }
    }
    let requests = seen(&server);
    assert_eq!(requests[0].0.as_deref(), Some("Bearer sk-test"));
    assert_eq!(
        requests[0].1,
        json!({"model": "text-embedding-test", "input": ["aaa", "bb"]})
    );
}

#[tokio::test]
async fn no_key_sends_no_auth_and_errors_name_url_and_status() {
    let (url, server) = server().await;
    embedder(&url, "m", None)
        .embed(&["x".into()])
        .await
        .unwrap();
    assert_eq!(seen(&server)[0].0, None);

    let error = embedder(&url, "broken", None)
        .embed(&["x".into()])
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, MemoryError::Embedding(_)));
    assert!(
        text.contains("/v1/embeddings") && text.contains("500") && text.contains("model exploded"),
        "{text}"
    );

    // Wrong declared dimensions are caught.
    let mut config = OpenAiEmbedderConfig::new(&url, "m", 8);
    config.send_dimensions = true;
    let error = OpenAiEmbedder::new(config, oxydra_http::client())
        .embed(&["x".into()])
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("4 dimensions, expected 8"),
        "{error}"
    );
    assert_eq!(seen(&server).last().unwrap().1["dimensions"], 8);

    // Nothing listening.
    let error = embedder("http://127.0.0.1:9", "m", None)
        .embed(&["x".into()])
        .await
        .unwrap_err();
    assert!(error.to_string().contains("127.0.0.1:9"), "{error}");
}

#[tokio::test]
async fn sqlite_memory_searches_with_the_openai_embedder() {
    let (url, _server) = server().await;
    let memory = SqliteMemory::open_in_memory_with(SqliteConfig {
        embedder: Arc::new(embedder(&url, "m", None)),
        ..SqliteConfig::default()
    })
    .unwrap();
    memory
        .store_chunks(None, vec!["aaaa".into(), "bbbb".into(), "cccc".into()])
        .await
        .unwrap();
    let hits = memory
        .search("bbbbbb", &SearchScope::Global, 1)
        .await
        .unwrap();
    assert_eq!(hits[0].text, "bbbb");
}
