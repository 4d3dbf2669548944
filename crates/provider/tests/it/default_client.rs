//! `ProviderConfig::new`'s client needs no process-wide rustls crypto provider: reqwest
//! 0.13 built without one panics when a client uses its own TLS set-up, even for
//! `http://`. nextest runs each test in its own process, so none is installed here.

use oxydra_provider::{OpenAiProvider, Provider, ProviderConfig, ProviderRequest};
use oxydra_test_support::{MockServer, Reply};
use oxydra_types::Message;
use rustls::crypto::CryptoProvider;
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn a_default_config_completes_with_no_crypto_provider_installed_and_installs_none() {
    assert!(CryptoProvider::get_default().is_none());
    let completion = json!({"id":"x","choices":[{"index":0,"message":{"role":"assistant",
        "content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}});
    let server = MockServer::repeating(vec![Reply::json(200, completion.to_string())]).unwrap();
    let provider = OpenAiProvider::new(ProviderConfig::new(server.url("/v1"), None));
    let request = ProviderRequest::new("llama3.2", vec![Message::user("hi")]);
    let response = provider
        .complete(&request, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(response.message.text(), "hello");
    assert!(CryptoProvider::get_default().is_none());
}
