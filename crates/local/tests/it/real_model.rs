//! The local provider with the real test model (SmolLM2-135M-Instruct, fetched by
//! `scripts/fetch-test-model.sh`): sampling from the configuration, the GGUF and the
//! defaults; the output cap; chat templates that loop; stopping the model's thread.
//! Without the model each test is skipped, except under `CI=true`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use oxydra_local::{LocalConfig, LocalProvider, Sampling, SamplingOverrides};
use oxydra_provider::{Provider, ProviderError, ProviderRequest};
use oxydra_test_support::gguf_metadata::{MetaValue, copy_with_metadata};
use oxydra_test_support::test_model;
use oxydra_types::{Message, StreamItem};
use tokio_util::sync::CancellationToken;

/// A copy of the test model in `dir` with `set` in its metadata.
fn model_copy(model: &Path, dir: &Path, set: &[(&str, MetaValue)]) -> PathBuf {
    let copy = dir.join("copy.gguf");
    copy_with_metadata(model, &copy, set).unwrap();
    copy
}

async fn load(config: LocalConfig) -> LocalProvider {
    LocalProvider::load_async(config).await.unwrap()
}

fn ask(prompt: &str) -> ProviderRequest {
    ProviderRequest::new("local", vec![Message::user(prompt)])
}

/// A template that loops far past its fuel without writing a byte.
const LOOPING_TEMPLATE: &str =
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";

#[tokio::test]
async fn a_plain_prompt_ends_within_the_output_cap() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let mut config = LocalConfig::new(model);
    config.sampling.max_tokens = Some(48);
    let provider = load(config).await;
    assert_eq!(provider.capabilities("local").max_output_tokens, 48);
    let response = provider
        .complete(
            &ask("Write a long essay about the history of the river Thames."),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(
        response.usage.output_tokens <= 48,
        "{} tokens",
        response.usage.output_tokens
    );
    assert!(response.usage.output_tokens > 0);
}

#[tokio::test]
async fn without_a_recommendation_in_the_gguf_the_small_model_defaults_apply() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let provider = load(LocalConfig::new(model)).await;
    assert!(provider.is_small());
    assert_eq!(
        provider.sampling(),
        Sampling {
            temperature: oxydra_local::SMALL_MODEL_TEMPERATURE,
            top_p: oxydra_local::SMALL_MODEL_TOP_P,
            ..Sampling::default()
        }
    );
    assert_eq!(provider.sampling().temperature, 0.2);
    assert_eq!(provider.sampling().repeat_last_n, 64);
}

#[tokio::test]
async fn the_gguf_recommendation_is_used_and_the_configuration_wins_over_it() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let copy = model_copy(
        &model,
        dir.path(),
        &[
            ("general.sampling.temp", MetaValue::F32(0.25)),
            ("general.sampling.top_k", MetaValue::I32(17)),
            ("general.sampling.penalty_last_n", MetaValue::I32(32)),
        ],
    );
    let mut config = LocalConfig::new(copy);
    config.sampling = SamplingOverrides {
        top_k: Some(5),
        ..SamplingOverrides::default()
    };
    let sampling = load(config).await.sampling();
    assert_eq!(sampling.temperature, 0.25);
    assert_eq!(sampling.top_k, 5);
    assert_eq!(sampling.repeat_last_n, 32);
    // What neither sets comes from the small-model defaults.
    assert_eq!(sampling.top_p, oxydra_local::SMALL_MODEL_TOP_P);
}

#[tokio::test]
async fn a_chat_template_that_loops_fails_naming_its_fuel_limit() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let copy = model_copy(
        &model,
        dir.path(),
        &[(
            "tokenizer.chat_template",
            MetaValue::Str(LOOPING_TEMPLATE.into()),
        )],
    );
    let provider = load(LocalConfig::new(copy)).await;
    let error = provider
        .complete(&ask("hi"), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("ran out of fuel"), "{error}");
}

#[tokio::test]
async fn a_cancelled_turn_does_not_wait_for_a_template_still_burning_fuel() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let copy = model_copy(
        &model,
        dir.path(),
        &[(
            "tokenizer.chat_template",
            MetaValue::Str(LOOPING_TEMPLATE.into()),
        )],
    );
    let provider = load(LocalConfig::new(copy)).await;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let error = provider.stream(&ask("hi"), &cancel).await.err().unwrap();
    assert!(matches!(error, ProviderError::Cancelled), "{error}");
}

#[tokio::test]
async fn stopping_the_models_ends_a_decode_and_joins_its_thread() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let mut config = LocalConfig::new(model);
    config.sampling.max_tokens = Some(100_000);
    let provider = load(config).await;
    let cancel = CancellationToken::new();
    let mut stream = provider
        .stream(
            &ask("Tell me a very long story about a dragon, in many chapters."),
            &cancel,
        )
        .await
        .unwrap();
    // Decoding is under way once the first text arrives.
    loop {
        match stream.next().await {
            Some(Ok(StreamItem::Text(_))) => break,
            Some(Ok(_)) => {}
            other => panic!("no text came: {other:?}"),
        }
    }
    let stopped = tokio::task::spawn_blocking(|| oxydra_local::stop_all(Duration::from_secs(60)))
        .await
        .unwrap();
    assert!(stopped, "the model's thread did not stop");
    // The generation was cut, not finished.
    let mut ended_by_cancel = false;
    while let Some(item) = stream.next().await {
        if let Err(error) = item {
            ended_by_cancel = matches!(error, ProviderError::Cancelled);
        }
    }
    assert!(ended_by_cancel);
    // The stopped model takes no more work.
    let error = provider
        .complete(&ask("hi"), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("worker thread"), "{error}");
}

#[tokio::test]
async fn an_image_or_a_document_is_refused_naming_the_provider_and_the_part() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let provider = load(LocalConfig::new(model)).await;
    let png = b"\x89PNG\r\n\x1a\n0000";
    let cases = [
        (
            Message::user("look")
                .with_parts(vec![oxydra_types::ContentPart::image("image/png", png)]),
            "image",
        ),
        (
            Message::user("read")
                .with_parts(vec![oxydra_types::ContentPart::pdf(b"%PDF-1.7", None)]),
            "document",
        ),
        (
            Message::user("see").with_parts(vec![oxydra_types::ContentPart::image_url(
                "https://example.com/a.png",
            )]),
            "image_url",
        ),
    ];
    for (message, kind) in cases {
        let request = ProviderRequest::new("local", vec![message]);
        let cancel = CancellationToken::new();
        for error in [
            provider.complete(&request, &cancel).await.unwrap_err(),
            provider.stream(&request, &cancel).await.err().unwrap(),
        ] {
            match &error {
                ProviderError::UnsupportedPart {
                    provider,
                    part,
                    reason,
                } => {
                    assert_eq!(provider, "local");
                    assert_eq!(*part, kind);
                    assert!(reason.contains("projector"), "{reason}");
                }
                other => panic!("{kind}: {other:?}"),
            }
            assert!(error.to_string().contains("local"), "{error}");
        }
    }
    // A text-only request still runs.
    let mut config_request = ask("Say hi.");
    config_request.max_tokens = Some(4);
    assert!(
        provider
            .complete(&config_request, &CancellationToken::new())
            .await
            .is_ok()
    );
}
