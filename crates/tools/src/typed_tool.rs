//! Tools defined from a typed argument struct: the JSON Schema is derived, never
//! written by hand, and the arguments arrive already deserialized.

use async_trait::async_trait;
use oxydra_types::{SafetyTier, Source, ToolSchema};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use tracing::Instrument;

use crate::call_preview::CallPreview;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::permission_scope::PermissionScope;
use crate::rerun::{CrashedCall, RerunSafety};
use crate::tool::{Tool, ToolOutput};
use crate::truncate::{truncate_error, truncate_output};

/// A tool whose arguments are a Rust struct. Every `TypedTool` is a [`Tool`]: its
/// schema is generated from `Args` (JSON Schema draft 2020-12, `type: object`),
/// bad arguments become [`ToolError::InvalidArguments`], each call runs in a
/// `tool` tracing span (name, tier, call id), and output (or an error message) over
/// [`TypedTool::output_limit`] is truncated.
///
/// A tool returns images and documents by putting them in its output's parts
/// ([`ToolOutput::with_parts`]): the truncation cuts only the text and keeps the
/// parts, which the runtime sends after the text in the tool's result message. A
/// `#[tool]` function does the same by returning a `ToolOutput`.
///
/// ```
/// use async_trait::async_trait;
/// use oxydra_tools::{SafetyTier, Tool, ToolContext, ToolError, ToolOutput, TypedTool};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// /// Arguments of `greet`.
/// #[derive(Deserialize, JsonSchema)]
/// struct GreetArgs {
///     /// Who to greet.
///     name: String,
///     /// How many times.
///     times: Option<u32>,
/// }
///
/// struct Greet;
///
/// #[async_trait]
/// impl TypedTool for Greet {
///     type Args = GreetArgs;
///     const NAME: &'static str = "greet";
///     const TIER: SafetyTier = SafetyTier::ReadOnly;
///     fn description(&self) -> String {
///         "Greets someone".into()
///     }
///     async fn run(&self, args: GreetArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
///         Ok(ToolOutput::text(format!("hello {}", args.name).repeat(args.times.unwrap_or(1) as usize)))
///     }
/// }
///
/// let schema = Tool::schema(&Greet);
/// assert_eq!(schema.name, "greet");
/// assert_eq!(schema.parameters["type"], "object");
/// assert_eq!(schema.parameters["required"], serde_json::json!(["name"]));
/// ```
#[async_trait]
pub trait TypedTool: Send + Sync {
    /// The arguments; the schema the model sees is derived from this type.
    type Args: DeserializeOwned + JsonSchema + Send;

    /// The name the model calls the tool by.
    const NAME: &'static str;

    /// How the executor must schedule the tool.
    const TIER: SafetyTier;

    /// What the tool does, for the model.
    fn description(&self) -> String;

    /// Output over this many bytes is truncated with a marker, and so is the message
    /// of an error over it; `None` (the default) leaves both as they are.
    fn output_limit(&self) -> Option<usize> {
        None
    }

    /// What a call with `args` will do, for a person deciding on it (see
    /// [`Tool::preview`]); `None` (the default) shows the arguments as JSON.
    fn preview_args(
        &self,
        args: &Self::Args,
        workspace_root: &std::path::Path,
    ) -> Option<CallPreview> {
        let _ = (args, workspace_root);
        None
    }

    /// See [`Tool::max_execution_time`].
    fn max_execution_time(&self) -> Option<std::time::Duration> {
        None
    }

    /// Where the text a call with `args` returns comes from (see
    /// [`Tool::output_source`]); `None` (the default): nothing from outside the
    /// person's control.
    fn output_source_args(&self, args: &Self::Args) -> Option<Source> {
        let _ = args;
        None
    }

    /// See [`Tool::state_before`] (default `None`).
    fn state_before_args(
        &self,
        args: &Self::Args,
        workspace_root: &std::path::Path,
    ) -> Option<String> {
        let _ = (args, workspace_root);
        None
    }

    /// See [`Tool::rerun_after_crash`]; the default is `Safe` for a read-only tool and
    /// `Unknown` for any other.
    fn rerun_after_crash_args(
        &self,
        args: &Self::Args,
        workspace_root: &std::path::Path,
        before: Option<&str>,
    ) -> RerunSafety {
        let _ = (args, workspace_root, before);
        match Self::TIER {
            SafetyTier::ReadOnly => RerunSafety::Safe,
            SafetyTier::SideEffecting | SafetyTier::Privileged => RerunSafety::Unknown,
        }
    }

    /// See [`Tool::consent`] (default `None`).
    const CONSENT: Option<PermissionScope> = None;

    /// Run the call with arguments that deserialized cleanly.
    async fn run(&self, args: Self::Args, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// The JSON Schema of `T` as tools publish it: draft 2020-12, subschemas inlined,
/// without the top-level `$schema`, `title` and `description` (the tool's own
/// description says what it does), and always with `properties`.
pub fn parameters_schema<T: JsonSchema>() -> serde_json::Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .for_deserialize()
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    if let Some(object) = value.as_object_mut() {
        for key in ["$schema", "title", "description"] {
            object.remove(key);
        }
        if object.get("type").and_then(|t| t.as_str()) == Some("object") {
            object
                .entry("properties")
                .or_insert_with(|| serde_json::json!({}));
        }
    }
    value
}

/// Deserialize `args` into `T`, turning failures into [`ToolError::InvalidArguments`]
/// that name the tool. `null` counts as `{}`.
pub fn parse_arguments<T: DeserializeOwned>(
    tool: &str,
    args: serde_json::Value,
) -> Result<T, ToolError> {
    let args = if args.is_null() {
        serde_json::Value::Object(serde_json::Map::new())
    } else {
        args
    };
    serde_json::from_value(args).map_err(|err| ToolError::InvalidArguments {
        message: format!("`{tool}`: {err}"),
    })
}

#[async_trait]
impl<T: TypedTool> Tool for T {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(T::NAME, self.description(), parameters_schema::<T::Args>())
    }

    fn safety_tier(&self) -> SafetyTier {
        T::TIER
    }

    fn max_execution_time(&self) -> Option<std::time::Duration> {
        TypedTool::max_execution_time(self)
    }

    fn consent(&self) -> Option<PermissionScope> {
        T::CONSENT
    }

    fn preview(&self, args: &serde_json::Value, workspace_root: &std::path::Path) -> CallPreview {
        serde_json::from_value::<T::Args>(args.clone())
            .ok()
            .and_then(|parsed| self.preview_args(&parsed, workspace_root))
            .unwrap_or_else(|| CallPreview::arguments(args))
    }

    fn output_source(&self, args: &serde_json::Value) -> Option<Source> {
        serde_json::from_value::<T::Args>(args.clone())
            .ok()
            .and_then(|parsed| self.output_source_args(&parsed))
    }

    fn state_before(
        &self,
        args: &serde_json::Value,
        workspace_root: &std::path::Path,
    ) -> Option<String> {
        serde_json::from_value::<T::Args>(args.clone())
            .ok()
            .and_then(|parsed| self.state_before_args(&parsed, workspace_root))
    }

    /// Arguments that do not parse never ran: running them again fails the same way.
    fn rerun_after_crash(&self, call: &CrashedCall<'_>) -> RerunSafety {
        match serde_json::from_value::<T::Args>(call.args.clone()) {
            Ok(parsed) => self.rerun_after_crash_args(&parsed, call.workspace_root, call.before),
            Err(_) => RerunSafety::Safe,
        }
    }

    async fn execute(
        &self,
        args: serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let span = tracing::info_span!(
            "tool",
            tool.name = T::NAME,
            tool.tier = T::TIER.as_str(),
            call_id = %ctx.call_id,
        );
        async move {
            let limit = self.output_limit();
            let result = match parse_arguments::<T::Args>(T::NAME, args) {
                Ok(args) => self.run(args, ctx).await,
                Err(err) => Err(err),
            };
            match result {
                Ok(output) => match limit {
                    Some(limit) if output.content.len() > limit => Ok(ToolOutput {
                        content: truncate_output(&output.content, limit).into_owned(),
                        structured: output.structured,
                        parts: output.parts,
                    }),
                    _ => Ok(output),
                },
                Err(err) => {
                    let err = match limit {
                        Some(limit) => truncate_error(err, limit),
                        None => err,
                    };
                    tracing::debug!(error = %err, "tool call failed");
                    Err(err)
                }
            }
        }
        .instrument(span)
        .await
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::*;

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Args {
        /// A path.
        path: String,
        offset: Option<u64>,
        #[serde(default)]
        recursive: bool,
        tags: Vec<String>,
    }

    struct Echo;

    #[async_trait]
    impl TypedTool for Echo {
        type Args = Args;
        const NAME: &'static str = "echo";
        const TIER: SafetyTier = SafetyTier::SideEffecting;
        fn description(&self) -> String {
            "echoes".into()
        }
        fn output_limit(&self) -> Option<usize> {
            Some(8)
        }
        async fn run(&self, args: Args, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(args.path))
        }
    }

    fn ctx() -> ToolContext {
        ToolContext::new("/tmp", CancellationToken::new(), "call-1".into())
    }

    #[test]
    fn schema_is_a_clean_object_with_required_and_types() {
        let schema = Echo.schema();
        assert_eq!(schema.name, "echo");
        assert_eq!(schema.description, "echoes");
        let p = &schema.parameters;
        assert_eq!(p["type"], "object");
        assert!(p.get("$schema").is_none());
        assert!(p.get("title").is_none());
        let mut required: Vec<&str> = p["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        required.sort_unstable();
        assert_eq!(required, ["path", "tags"]);
        assert_eq!(p["properties"]["path"]["type"], "string");
        assert_eq!(p["properties"]["path"]["description"], "A path.");
        assert_eq!(
            p["properties"]["offset"]["type"],
            json!(["integer", "null"])
        );
        assert_eq!(p["properties"]["recursive"]["type"], "boolean");
        assert_eq!(p["properties"]["tags"]["type"], "array");
        assert_eq!(p["properties"]["tags"]["items"]["type"], "string");
        assert_eq!(p["additionalProperties"], false);
        assert_eq!(Tool::safety_tier(&Echo), SafetyTier::SideEffecting);
    }

    #[tokio::test]
    async fn bad_arguments_are_invalid_arguments() {
        for args in [
            json!({"tags": []}),
            json!({"path": 3, "tags": []}),
            json!({"path": "a", "tags": [], "extra": 1}),
            json!({"path": "a", "tags": [], "offset": -1}),
            json!("just a string"),
        ] {
            match Echo.execute(args.clone(), &ctx()).await {
                Err(ToolError::InvalidArguments { message }) => {
                    assert!(message.starts_with("`echo`: "), "{message}");
                }
                other => panic!("{args}: expected InvalidArguments, got {other:?}"),
            }
        }
        // The message is cut at the output limit (8 bytes) like output.
        let err = Echo.execute(json!({"tags": []}), &ctx()).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid arguments: `echo`: \n[... truncated 20 bytes ...]"
        );
    }

    struct Refuse;

    #[async_trait]
    impl TypedTool for Refuse {
        type Args = Args;
        const NAME: &'static str = "refuse";
        const TIER: SafetyTier = SafetyTier::ReadOnly;
        fn description(&self) -> String {
            "fails naming its path".into()
        }
        fn output_limit(&self) -> Option<usize> {
            Some(1024)
        }
        async fn run(&self, args: Args, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
            Err(ToolError::NotFound { path: args.path })
        }
    }

    /// The attack: a megabyte-long path comes back in the error; the error is cut at
    /// the output limit with the same marker as output.
    #[tokio::test]
    async fn a_megabyte_error_is_truncated_with_the_marker() {
        let path = "d/".repeat(500_000);
        let err = Refuse
            .execute(json!({"path": path, "tags": []}), &ctx())
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.len() <= 1024 + 40, "{} bytes", text.len());
        assert!(text.starts_with("`d/d/"), "{text}");
        assert!(text.ends_with(" bytes ...]"), "{text}");
        assert!(text.contains("[... truncated "), "{text}");
    }

    struct Snapshot;

    #[async_trait]
    impl TypedTool for Snapshot {
        type Args = Args;
        const NAME: &'static str = "snapshot";
        const TIER: SafetyTier = SafetyTier::ReadOnly;
        fn description(&self) -> String {
            "returns an image".into()
        }
        fn output_limit(&self) -> Option<usize> {
            Some(4)
        }
        async fn run(&self, args: Args, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(
                ToolOutput::text(format!("captured {}", args.path)).with_parts(vec![
                    oxydra_types::ContentPart::image("image/png", b"\x89PNG\r\n\x1a\n"),
                    oxydra_types::ContentPart::pdf(b"%PDF-1.7", Some(args.path)),
                ]),
            )
        }
    }

    #[tokio::test]
    async fn a_typed_tool_returns_parts_and_truncation_keeps_them() {
        let out = Snapshot
            .execute(json!({"path": "screen", "tags": []}), &ctx())
            .await
            .unwrap();
        assert!(
            out.content.starts_with("capt\n[... truncated"),
            "{}",
            out.content
        );
        assert_eq!(out.parts.len(), 2);
        assert_eq!(out.parts[0].media_type(), Some("image/png"));
        assert_eq!(
            out.parts[1],
            oxydra_types::ContentPart::pdf(b"%PDF-1.7", Some("screen".into()))
        );
    }

    #[tokio::test]
    async fn good_arguments_run_and_output_is_truncated() {
        let out = Echo
            .execute(json!({"path": "abc", "tags": ["x"]}), &ctx())
            .await
            .unwrap();
        assert_eq!(out.content, "abc");
        let out = Echo
            .execute(json!({"path": "0123456789abc", "tags": []}), &ctx())
            .await
            .unwrap();
        assert_eq!(out.content, "01234567\n[... truncated 5 bytes ...]");
    }
}
