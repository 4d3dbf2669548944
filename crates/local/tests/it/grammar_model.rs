//! The tool-call grammars with the real test model (SmolLM2-135M-Instruct): llama.cpp's
//! grammar parser takes every grammar `oxydra-local` writes, and a call the model is
//! made to write under it satisfies the tool's schema — enums, integer ranges, array
//! bounds, nested objects and `$ref`s — checked by a JSON Schema validator. Without the
//! model each test is skipped, except under `CI=true`.

use oxydra_local::{LocalConfig, LocalProvider};
use oxydra_provider::{Provider, ProviderRequest, ToolChoice};
use oxydra_test_support::test_model;
use oxydra_types::{Message, ToolSchema};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Schemas whose every property is required (a small model is offered only the
/// required ones), each holding the model to something the grammar must say.
fn tools() -> Vec<ToolSchema> {
    vec![
        ToolSchema::new(
            "set_mode",
            "Set the mode and the level.",
            json!({
                "type": "object",
                "properties": {
                    "mode": {"enum": ["fast", "slow", "off"]},
                    "level": {"type": "integer", "minimum": 3, "maximum": 17}
                },
                "required": ["mode", "level"],
                "additionalProperties": false
            }),
        ),
        ToolSchema::new(
            "tag_files",
            "Tag between two and three files.",
            json!({
                "type": "object",
                "properties": {
                    "paths": {"type": "array", "items": {"type": "string", "maxLength": 12}, "minItems": 2, "maxItems": 3},
                    "when": {"type": "string", "format": "date"}
                },
                "required": ["paths", "when"],
                "additionalProperties": false
            }),
        ),
        ToolSchema::new(
            "move_to",
            "Move to a point.",
            json!({
                "type": "object",
                "properties": {"to": {"$ref": "#/$defs/point"}, "note": {"type": ["string", "null"], "maxLength": 20}},
                "required": ["to", "note"],
                "additionalProperties": false,
                "$defs": {"point": {
                    "type": "object",
                    "properties": {"x": {"type": "integer", "minimum": -5, "maximum": 5}, "y": {"type": "boolean"}},
                    "required": ["x", "y"],
                    "additionalProperties": false
                }}
            }),
        ),
    ]
}

/// What a person would ask for, in words of their own: neither the tool's name nor
/// its description (the grammar and `tool_choice` are what hold the model to the
/// tool, and they are what this test checks).
fn request_for(tool: &str) -> String {
    match tool {
        "set_mode" => "Slow things down a bit, please; medium strength is fine.",
        "tag_files" => "Label my notes and the todo list for review on the first of May.",
        _ => "Head a little to the left and remember why.",
    }
    .to_owned()
}

#[tokio::test]
async fn calls_made_under_the_grammar_satisfy_the_schema() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let mut config = LocalConfig::new(model);
    config.sampling.seed = Some(11);
    let provider = LocalProvider::load_async(config).await.unwrap();
    let tools = tools();
    for tool in &tools {
        for temperature in [0.2, 1.5] {
            let prompt = request_for(&tool.name);
            let mut request = ProviderRequest::new("local", vec![Message::user(prompt)]);
            request.tools = tools.clone();
            request.tool_choice = ToolChoice::Tool(tool.name.clone());
            request.max_tokens = Some(256);
            request.temperature = Some(temperature);
            let response = provider
                .complete(&request, &CancellationToken::new())
                .await
                .unwrap();
            let calls = &response.message.tool_calls;
            assert!(!calls.is_empty(), "{}: {:?}", tool.name, response.message);
            for call in calls {
                let arguments: Value = serde_json::from_str(&call.arguments)
                    .unwrap_or_else(|e| panic!("{}: {e}: {}", call.name, call.arguments));
                let schema = &tools
                    .iter()
                    .find(|t| t.name == call.name)
                    .unwrap()
                    .parameters;
                let validator = jsonschema::validator_for(schema).unwrap();
                let errors: Vec<String> = validator
                    .iter_errors(&arguments)
                    .map(|e| e.to_string())
                    .collect();
                assert!(
                    errors.is_empty(),
                    "{}: {} — {errors:?}",
                    call.name,
                    call.arguments
                );
            }
        }
    }
}
