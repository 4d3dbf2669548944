//! `#[tool]`: the generated tools' schemas, tiers and calls (the compile errors of
//! the mistakes users make are tested in `oxydra-macros`).

use oxydra::tool;
use oxydra::tools::{Tool, ToolContext, ToolError};
use oxydra::types::{CallId, SafetyTier};
use oxydra::{CancellationToken, serde_json::json};

/// Tells the weather in a city.
///
/// Temperatures are in Celsius.
#[tool(read_only)]
async fn get_weather(
    /// The city, e.g. "Paris".
    city: String,
    /// How many days ahead (default 0).
    days: Option<u8>,
) -> Result<String, std::convert::Infallible> {
    Ok(format!("{city}: sunny in {} days", days.unwrap_or(0)))
}

/// Writes a note; fails on an empty one.
#[tool(side_effecting, name = "write_note")]
pub async fn note(
    /// The text.
    text: String,
    ctx: &ToolContext,
) -> Result<oxydra::serde_json::Value, String> {
    if text.is_empty() {
        return Err("the note is empty".into());
    }
    Ok(json!({"call": ctx.call_id.to_string(), "len": text.len()}))
}

/// Needs nothing.
#[tool(privileged)]
async fn ping() -> Result<&'static str, ToolError> {
    Ok("pong")
}

fn ctx() -> ToolContext {
    ToolContext::new(".", CancellationToken::new(), CallId::from("call_7"))
}

#[test]
fn doc_comments_become_the_description_and_the_schema() {
    let schema = GetWeather.schema();
    assert_eq!(schema.name, "get_weather");
    assert_eq!(
        schema.description,
        "Tells the weather in a city.\n\nTemperatures are in Celsius."
    );
    let params = &schema.parameters;
    assert_eq!(params["type"], "object");
    assert_eq!(params["required"], json!(["city"]));
    assert_eq!(
        params["properties"]["city"]["description"],
        "The city, e.g. \"Paris\"."
    );
    assert_eq!(
        params["properties"]["days"]["description"],
        "How many days ahead (default 0)."
    );
    assert_eq!(params["additionalProperties"], false);
    assert_eq!(GetWeather.safety_tier(), SafetyTier::ReadOnly);
    assert_eq!(Note.schema().name, "write_note");
    assert_eq!(Note.safety_tier(), SafetyTier::SideEffecting);
    // The context is not a parameter the model sees.
    assert_eq!(Note.schema().parameters["required"], json!(["text"]));
    assert_eq!(Ping.safety_tier(), SafetyTier::Privileged);
    assert_eq!(Ping.schema().parameters["properties"], json!({}));
}

#[tokio::test]
async fn calls_run_the_function_with_the_arguments_and_the_context() {
    let out = GetWeather
        .execute(json!({"city": "Oslo", "days": 2}), &ctx())
        .await
        .unwrap();
    assert_eq!(out.content, "Oslo: sunny in 2 days");
    // The function itself is still there to call.
    assert_eq!(
        get_weather("Rome".into(), None).await.unwrap(),
        "Rome: sunny in 0 days"
    );
    let out = Note.execute(json!({"text": "hi"}), &ctx()).await.unwrap();
    assert_eq!(out.structured, Some(json!({"call": "call_7", "len": 2})));
    assert_eq!(
        Ping.execute(json!(null), &ctx()).await.unwrap().content,
        "pong"
    );
}

#[tokio::test]
async fn bad_arguments_and_errors_reach_the_model_as_failures() {
    let error = Note.execute(json!({"text": ""}), &ctx()).await.unwrap_err();
    assert_eq!(error.to_string(), "the note is empty");
    for bad in [
        json!({}),
        json!({"city": 3}),
        json!({"city": "x", "unknown": 1}),
        json!({"city": "x", "days": 300}),
        json!("a string"),
    ] {
        let error = GetWeather.execute(bad.clone(), &ctx()).await.unwrap_err();
        assert!(
            matches!(error, ToolError::InvalidArguments { .. }),
            "{bad}: {error}"
        );
    }
}

/// Writes a note to a file in the workspace (the library guide's example).
#[tool(side_effecting, consent = "session", name = "add_note")]
async fn guide_note(
    /// The note.
    text: String,
    /// Which file, relative to the workspace (default `notes.txt`).
    file: Option<String>,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let file = file.unwrap_or_else(|| "notes.txt".into());
    let path = ctx.resolve(&file)?;
    tokio::fs::write(&path, text)
        .await
        .map_err(|source| ToolError::Io {
            action: "writing the note",
            path: file.clone(),
            source,
        })?;
    Ok(format!("wrote {file}"))
}

#[tokio::test]
async fn the_guides_note_tool_asks_consent_and_stays_in_the_workspace() {
    use oxydra::tools::PermissionScope;
    assert_eq!(GuideNote.consent(), Some(PermissionScope::Session));
    let workspace = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(
        workspace.path(),
        CancellationToken::new(),
        CallId::from("c1"),
    );
    let wrote = GuideNote
        .execute(json!({"text": "hi", "file": "a.txt"}), &ctx)
        .await
        .unwrap();
    assert_eq!(wrote.content, "wrote a.txt");
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("a.txt")).unwrap(),
        "hi"
    );
    let escape = GuideNote
        .execute(json!({"text": "x", "file": "../../escaped.txt"}), &ctx)
        .await
        .unwrap_err();
    assert!(
        escape.to_string().contains("outside the workspace"),
        "{escape}"
    );
}
