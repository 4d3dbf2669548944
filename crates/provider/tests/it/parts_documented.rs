//! Our requests against the request shapes the vendors document for images and PDFs:
//! one fixture per API family under `tests/fixtures/requests/` (written from the
//! vendors' documentation, see its README), each holding the documented request for a
//! question with a PNG and a PDF (Ollama: the PNG only). The same parts go through the
//! real client to a local server, and the body it sent must have the documented field
//! names, nesting and byte encoding (bare base64 or a `data:` URL).
//!
//! The comparison: every documented field is in ours with the same value; a field of
//! ours the documentation does not show is an error unless the fixture names it in
//! `our_extra_keys` (per part type); the parts of a content list match by their type
//! (the `type` field, else their one field's name), in order within a type, because
//! the APIs take the parts in any order; Gemini's snake_case names are folded to the
//! lowerCamelCase its JSON also takes.

use futures::TryStreamExt;
use oxydra_provider::{
    AnthropicProvider, GeminiProvider, OllamaProvider, OpenAiProvider, OpenAiResponsesProvider,
    Provider, ProviderConfig, ProviderRequest, StreamAccumulator,
};
use oxydra_test_support::{MockServer, anthropic, fixture_text, openai, responses};
use oxydra_types::{ContentPart, Message, StreamItem};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::parts_wire::{PDF, PNG};

/// A documented request: its body with the placeholders filled, where its messages
/// are, and the fields of ours it allows beyond the documented ones.
struct Documented {
    name: String,
    request: Value,
    messages_key: String,
    extra: Map<String, Value>,
}

fn b64(bytes: &[u8]) -> String {
    ContentPart::image("image/png", bytes)
        .base64_data()
        .unwrap()
        .to_owned()
}

fn fill(value: Value) -> Value {
    match value {
        Value::String(text) => Value::String(
            text.replace("<IMAGE_BASE64>", &b64(PNG))
                .replace("<PDF_BASE64>", &b64(PDF)),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(fill).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, fill(v))).collect()),
        other => other,
    }
}

fn documented(name: &str) -> Documented {
    let file: Value = serde_json::from_str(&fixture_text(&format!("requests/{name}"))).unwrap();
    for key in ["api", "documented_at", "facts"] {
        assert!(file.get(key).is_some(), "{name}: no `{key}`");
    }
    Documented {
        name: name.to_owned(),
        request: fill(file["request"].clone()),
        messages_key: file["messages_key"].as_str().unwrap().to_owned(),
        extra: file["our_extra_keys"].as_object().unwrap().clone(),
    }
}

/// `snake_case` as `lowerCamelCase`.
fn camel(key: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for ch in key.chars() {
        if ch == '_' {
            upper = true;
        } else if upper {
            out.extend(ch.to_uppercase());
            upper = false;
        } else {
            out.push(ch);
        }
    }
    out
}

/// What kind of part `value` is: its `type`, else its one field's name.
fn kind(value: &Value) -> String {
    match value {
        Value::Object(map) => match map.get("type").and_then(Value::as_str) {
            Some(kind) => kind.to_owned(),
            None => {
                let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
                keys.sort_unstable();
                keys.join("+")
            }
        },
        _ => String::new(),
    }
}

/// Checks `ours` against the documented `doc` at `path`; `camel_case` folds the
/// documented names.
fn conforms(
    doc: &Value,
    ours: &Value,
    extra: &Map<String, Value>,
    camel_case: bool,
    path: &str,
) -> Result<(), String> {
    match (doc, ours) {
        (Value::Object(doc_map), Value::Object(our_map)) => {
            let doc_keys: Vec<String> = doc_map
                .keys()
                .map(|key| if camel_case { camel(key) } else { key.clone() })
                .collect();
            for (key, value) in doc_map {
                let ours_key = if camel_case { camel(key) } else { key.clone() };
                let Some(our_value) = our_map.get(&ours_key) else {
                    return Err(format!("{path}: we send no `{ours_key}` (ours: {ours})"));
                };
                conforms(
                    value,
                    our_value,
                    extra,
                    camel_case,
                    &format!("{path}.{ours_key}"),
                )?;
            }
            let allowed = extra.get(&kind(ours)).and_then(Value::as_array);
            for key in our_map.keys() {
                let documented = doc_keys.contains(key);
                let allowed = allowed.is_some_and(|list| list.iter().any(|k| k == key));
                if !documented && !allowed {
                    return Err(format!("{path}: we send `{key}`, which is not documented"));
                }
            }
            Ok(())
        }
        (Value::Array(doc_items), Value::Array(our_items)) => {
            if doc_items.len() != our_items.len() {
                return Err(format!(
                    "{path}: {} documented items, we send {}",
                    doc_items.len(),
                    our_items.len()
                ));
            }
            let mut used = vec![false; our_items.len()];
            for (index, doc_item) in doc_items.iter().enumerate() {
                let wanted = kind(doc_item);
                let wanted = if camel_case { camel(&wanted) } else { wanted };
                let found = our_items
                    .iter()
                    .enumerate()
                    .find(|(at, item)| !used[*at] && kind(item) == wanted);
                let Some((at, our_item)) = found else {
                    return Err(format!("{path}[{index}]: we send no `{wanted}` item"));
                };
                used[at] = true;
                conforms(
                    doc_item,
                    our_item,
                    extra,
                    camel_case,
                    &format!("{path}[{wanted}]"),
                )?;
            }
            Ok(())
        }
        _ if doc == ours => Ok(()),
        _ => Err(format!("{path}: documented {doc}, we send {ours}")),
    }
}

/// Asserts the one request `server` received has the documented messages.
fn assert_conforms(doc: &Documented, server: &MockServer, camel_case: bool) {
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{}", doc.name);
    let key = if camel_case {
        camel(&doc.messages_key)
    } else {
        doc.messages_key.clone()
    };
    let ours = &requests[0].body[&key];
    if let Err(message) = conforms(
        &doc.request[&doc.messages_key],
        ours,
        &doc.extra,
        camel_case,
        &doc.name,
    ) {
        panic!("{message}");
    }
}

/// The user's question with the documented text and the PNG (and the PDF, named as
/// in the fixtures).
fn question(doc: &Documented, text_at: &[&str], with_pdf: bool) -> Vec<Message> {
    let mut text = &doc.request[&doc.messages_key][0];
    for key in text_at {
        text = &text[*key];
    }
    let text = match text {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .find_map(|part| part["text"].as_str())
            .unwrap()
            .to_owned(),
        other => panic!("{}: no text at {text_at:?}: {other}", doc.name),
    };
    let mut parts = vec![ContentPart::image("image/png", PNG)];
    if with_pdf {
        parts.push(ContentPart::pdf(PDF, Some("report.pdf".into())));
    }
    vec![Message::user(text).with_parts(parts)]
}

async fn send(provider: &dyn Provider, model: &str, messages: Vec<Message>) {
    let request = ProviderRequest::new(model, messages);
    let items: Vec<StreamItem> = provider
        .stream(&request, &CancellationToken::new())
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let mut acc = StreamAccumulator::new();
    items.iter().for_each(|item| acc.push(item));
    acc.finish().unwrap();
}

#[tokio::test]
async fn openai_chat_sends_image_url_and_file_as_documented() {
    let doc = documented("openai_chat_image_url_and_file.json");
    let server = MockServer::builder()
        .strict_openai()
        .replies(vec![openai::text("ok")])
        .start()
        .unwrap();
    let provider = OpenAiProvider::new(ProviderConfig::new(server.openai_url(), None));
    send(&provider, "gpt-4o", question(&doc, &["content"], true)).await;
    assert_conforms(&doc, &server, false);
}

#[tokio::test]
async fn responses_sends_input_image_and_input_file_as_documented() {
    let doc = documented("openai_responses_input_image_and_input_file.json");
    let server = responses::strict_server(vec![responses::text("ok")]).unwrap();
    let provider =
        OpenAiResponsesProvider::new(ProviderConfig::new(server.openai_url(), Some("sk".into())));
    send(&provider, "gpt-4o", question(&doc, &["content"], true)).await;
    assert_conforms(&doc, &server, false);
}

#[tokio::test]
async fn anthropic_sends_image_and_cached_document_as_documented() {
    let doc = documented("anthropic_image_and_document_cached.json");
    let server = MockServer::builder()
        .only("POST", anthropic::MESSAGES_PATH)
        .strict_anthropic()
        .replies(vec![anthropic::text("ok")])
        .start()
        .unwrap();
    let provider =
        AnthropicProvider::new(ProviderConfig::new(server.url(""), Some("sk-ant".into())));
    send(
        &provider,
        "claude-sonnet-4-5",
        question(&doc, &["content"], true),
    )
    .await;
    assert_conforms(&doc, &server, false);
}

#[tokio::test]
async fn gemini_sends_inline_data_as_documented() {
    let doc = documented("gemini_inline_data.json");
    let server = crate::gemini_strict::strict_text_server();
    let provider = GeminiProvider::new(ProviderConfig::new(server.url(""), Some("k".into())));
    send(
        &provider,
        "gemini-2.5-flash",
        question(&doc, &["parts"], true),
    )
    .await;
    assert_conforms(&doc, &server, true);
}

#[tokio::test]
async fn ollama_sends_images_as_documented() {
    let doc = documented("ollama_chat_images.json");
    let server = crate::parts_wire::ollama_server();
    let provider = OllamaProvider::new(ProviderConfig::new(server.url(""), None));
    send(&provider, "llava", question(&doc, &["content"], false)).await;
    assert_conforms(&doc, &server, false);
}

/// The comparison itself refuses what it must: a renamed field, a data URL where bare
/// base64 is documented, a field of ours the documentation lacks, a missing part.
#[test]
fn the_comparison_catches_a_wrong_shape() {
    let doc = documented("anthropic_image_and_document_cached.json");
    let messages = &doc.request["messages"];
    let none = Map::new();
    conforms(messages, messages, &none, false, "same").unwrap();

    let mut renamed = messages.clone();
    let source = renamed[0]["content"][0]["source"].as_object_mut().unwrap();
    let media = source.remove("media_type").unwrap();
    source.insert("mediaType".into(), media);
    assert!(conforms(messages, &renamed, &none, false, "x").is_err());

    let mut data_url = messages.clone();
    data_url[0]["content"][0]["source"]["data"] =
        Value::String(format!("data:image/png;base64,{}", b64(PNG)));
    let error = conforms(messages, &data_url, &none, false, "x").unwrap_err();
    assert!(error.contains("data:image/png"), "{error}");

    let mut extra = messages.clone();
    extra[0]["content"][2]["cache_control"] = serde_json::json!({"type": "ephemeral"});
    let error = conforms(messages, &extra, &none, false, "x").unwrap_err();
    assert!(error.contains("cache_control"), "{error}");

    let mut missing = messages.clone();
    missing[0]["content"].as_array_mut().unwrap().remove(1);
    assert!(conforms(messages, &missing, &none, false, "x").is_err());

    let gemini = documented("gemini_inline_data.json");
    let snake = &gemini.request["contents"];
    let camel_body = serde_json::json!([{"role": "user", "parts": [
        {"text": snake[0]["parts"][2]["text"]},
        {"inlineData": {"mimeType": "image/png", "data": b64(PNG)}},
        {"inlineData": {"mimeType": "application/pdf", "data": b64(PDF)}},
    ]}]);
    conforms(snake, &camel_body, &none, true, "gemini").unwrap();
    let mut swapped = camel_body.clone();
    swapped[0]["parts"][1]["inlineData"]["mimeType"] = "application/pdf".into();
    swapped[0]["parts"][2]["inlineData"]["mimeType"] = "image/png".into();
    assert!(conforms(snake, &swapped, &none, true, "gemini").is_err());
}
