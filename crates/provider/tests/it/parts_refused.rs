//! Parts a provider cannot send are refused before anything is sent, naming the
//! provider and the part: never dropped, never a request the API would answer 400.

use oxydra_provider::{
    AnthropicProvider, GeminiProvider, MAX_PARTS_PER_REQUEST, OllamaProvider, OpenAiProvider,
    OpenAiResponsesProvider, Provider, ProviderConfig, ProviderError, ProviderRequest,
};
use oxydra_test_support::{MockServer, Reply};
use oxydra_types::{CallId, ContentPart, Message};
use tokio_util::sync::CancellationToken;

use crate::parts_wire::{PNG, pdf, png};

/// Every client, each pointed at `server` (which must never be asked).
fn clients(server: &MockServer) -> Vec<Box<dyn Provider>> {
    let config = || ProviderConfig::new(server.url("/v1"), Some("k".into()));
    vec![
        Box::new(OpenAiProvider::new(config())),
        Box::new(OpenAiResponsesProvider::new(config())),
        Box::new(AnthropicProvider::new(config())),
        Box::new(GeminiProvider::new(config())),
        Box::new(OllamaProvider::new(config())),
    ]
}

fn silent_server() -> MockServer {
    MockServer::builder()
        .respond_with(|_| Reply::json(500, "{}"))
        .start()
        .unwrap()
}

/// The errors of `complete` and `stream` for `messages`.
async fn refusals(provider: &dyn Provider, messages: Vec<Message>) -> [ProviderError; 2] {
    let request = ProviderRequest::new("model-x", messages);
    let cancel = CancellationToken::new();
    let completed = provider.complete(&request, &cancel).await.unwrap_err();
    let streamed = match provider.stream(&request, &cancel).await {
        Err(error) => error,
        Ok(_) => panic!("{}: the stream was opened", provider.name()),
    };
    [completed, streamed]
}

fn assert_unsupported(error: &ProviderError, provider: &str, kind: &str, reason: &str) {
    match error {
        ProviderError::UnsupportedPart {
            provider: named,
            part,
            reason: why,
        } => {
            assert_eq!(named, provider);
            assert_eq!(*part, kind);
            assert!(why.contains(reason), "{provider}: {why}");
            let shown = error.to_string();
            assert!(shown.contains(provider) && shown.contains(kind), "{shown}");
        }
        ProviderError::BadPartBytes {
            provider: named,
            index,
            part,
            reason: why,
        } => {
            assert_eq!(named, provider);
            assert_eq!(*part, kind);
            assert!(why.contains(reason), "{provider}: {why}");
            let shown = error.to_string();
            assert!(
                shown.contains(provider) && shown.contains(&format!("part {index} ")),
                "{shown}"
            );
        }
        other => panic!("{provider}: {other:?}"),
    }
}

#[tokio::test]
async fn a_web_image_url_is_refused_where_the_provider_needs_bytes() {
    let server = silent_server();
    let web = || {
        vec![
            Message::user("see")
                .with_parts(vec![ContentPart::image_url("https://example.com/a.png")]),
        ]
    };
    let gemini = GeminiProvider::new(ProviderConfig::new(server.url(""), Some("k".into())));
    let ollama = OllamaProvider::new(ProviderConfig::new(server.url(""), None));
    for error in refusals(&gemini, web()).await {
        assert_unsupported(&error, "gemini", "image_url", "URL");
    }
    for error in refusals(&ollama, web()).await {
        assert_unsupported(&error, "ollama", "image_url", "URL");
    }
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn ollama_refuses_documents_in_user_messages_and_tool_results() {
    let server = silent_server();
    let ollama = OllamaProvider::new(ProviderConfig::new(server.url(""), None));
    let in_user = vec![Message::user("read").with_parts(vec![pdf()])];
    let in_tool = vec![
        Message::user("read"),
        Message::tool_result(CallId::from("c"), "file_read", "r").with_parts(vec![pdf()]),
    ];
    for messages in [in_user, in_tool] {
        for error in refusals(&ollama, messages).await {
            assert_unsupported(&error, "ollama", "document", "no documents");
        }
    }
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn every_provider_refuses_what_no_api_takes() {
    let server = silent_server();
    let cases: Vec<(Vec<Message>, &str, &str)> = vec![
        (
            vec![Message::user("x").with_parts(vec![ContentPart::image("image/bmp", b"BM....")])],
            "image",
            "image/bmp",
        ),
        (
            vec![
                Message::user("x")
                    .with_parts(vec![ContentPart::image("image/png", b"not a png at all")]),
            ],
            "image",
            "claims to be image/png",
        ),
        (
            vec![Message::user("x").with_parts(vec![ContentPart::image_url("file:///etc/passwd")])],
            "image_url",
            "http(s)",
        ),
        (
            vec![
                Message::system("x").with_parts(vec![png()]),
                Message::user("y"),
            ],
            "image",
            "only user and tool-result",
        ),
        (
            vec![
                Message::user("y"),
                Message::assistant("x").with_parts(vec![png()]),
            ],
            "image",
            "only user and tool-result",
        ),
    ];
    for (messages, kind, reason) in cases {
        for client in clients(&server) {
            let name = client.name().to_owned();
            for error in refusals(client.as_ref(), messages.clone()).await {
                assert_unsupported(&error, &name, kind, reason);
            }
        }
    }
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn a_thousand_parts_are_refused_by_every_provider() {
    let server = silent_server();
    let messages = vec![Message::user("look").with_parts(vec![png(); 1_000])];
    for client in clients(&server) {
        for error in refusals(client.as_ref(), messages.clone()).await {
            match &error {
                ProviderError::PartLimit { provider, message } => {
                    assert_eq!(provider, client.name());
                    assert!(message.contains("at most"), "{message}");
                }
                other => panic!("{}: {other:?}", client.name()),
            }
        }
    }
    assert_eq!(server.hits(), 0);
    const { assert!(MAX_PARTS_PER_REQUEST < 1_000) };
}

#[tokio::test]
async fn an_image_over_the_documented_limit_is_refused() {
    let server = silent_server();
    let mut six_mb = PNG.to_vec();
    six_mb.resize(6 * 1024 * 1024, 0);
    let big =
        vec![Message::user("look").with_parts(vec![ContentPart::image("image/png", &six_mb)])];
    let anthropic = AnthropicProvider::new(ProviderConfig::new(server.url(""), Some("k".into())));
    for error in refusals(&anthropic, big.clone()).await {
        assert!(
            matches!(&error, ProviderError::PartLimit { provider, message }
                if provider == "anthropic" && message.contains("5 MB")),
            "{error:?}"
        );
    }
    let mut twenty_one_mb = PNG.to_vec();
    twenty_one_mb.resize(21 * 1024 * 1024, 0);
    let bigger = vec![
        Message::user("look").with_parts(vec![ContentPart::image("image/png", &twenty_one_mb)]),
    ];
    let openai = OpenAiProvider::new(ProviderConfig::new(server.url("/v1"), None));
    for error in refusals(&openai, bigger).await {
        assert!(
            matches!(&error, ProviderError::PartLimit { message, .. } if message.contains("20 MB")),
            "{error:?}"
        );
    }
    assert_eq!(server.hits(), 0);
}
