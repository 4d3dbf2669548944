//! `McpTool`: one MCP server tool as an `oxydra_tools::Tool`.

use std::sync::Arc;

use async_trait::async_trait;
use oxydra_tools::{
    DEFAULT_OUTPUT_LIMIT_BYTES, Tool, ToolContext, ToolError, ToolOutput, truncate_output,
};
use oxydra_types::{ContentPart, SafetyTier, Source, ToolSchema};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use tracing::Instrument;

use crate::media::{self, Media};
use crate::server::McpServer;
use crate::tool_spec::{ToolSpec, registry_name};

/// A tool of an MCP server, registered as `<server>__<tool>`.
///
/// Calls go to the server (restarting it first if it died); the result's text
/// blocks become the output, its images and embedded image or PDF blobs become
/// parts of it (checked by their bytes), structured content is kept in
/// [`ToolOutput::structured`], and a result with `isError: true` becomes
/// [`ToolError::Failed`] carrying the server's message.
#[derive(Debug, Clone)]
pub struct McpTool {
    server: Arc<McpServer>,
    spec: ToolSpec,
}

impl McpTool {
    pub(crate) fn new(server: Arc<McpServer>, spec: ToolSpec) -> Self {
        Self { server, spec }
    }

    /// The server's name.
    pub fn server_name(&self) -> &str {
        self.server.name()
    }

    /// The tool's name on the server.
    pub fn mcp_name(&self) -> &str {
        &self.spec.mcp_name
    }
}

#[async_trait]
impl Tool for McpTool {
    fn schema(&self) -> ToolSchema {
        ToolSchema::new(
            self.spec.registry_name.clone(),
            self.spec.description.clone(),
            self.spec.parameters.clone(),
        )
    }

    fn safety_tier(&self) -> SafetyTier {
        self.spec.tier
    }

    fn max_execution_time(&self) -> Option<std::time::Duration> {
        // The server's call timeout (which also covers a restart), plus time to send
        // the cancellation: the MCP timeout fires first and tells the server.
        Some(self.server.call_timeout() + std::time::Duration::from_secs(2))
    }

    /// Every result comes from the server: `mcp:<server>`.
    fn output_source(&self, _args: &serde_json::Value) -> Option<Source> {
        Some(Source::Mcp(self.server.name().to_owned()))
    }

    async fn execute(
        &self,
        args: serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        run_call(&self.server, &self.spec.mcp_name, args, ctx).await
    }
}

/// Call `mcp_name` on `server` with `args` (a JSON object, or null for none).
pub(crate) async fn run_call(
    server: &McpServer,
    mcp_name: &str,
    args: serde_json::Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let arguments = match args {
        serde_json::Value::Object(map) => Some(map),
        serde_json::Value::Null => None,
        other => {
            return Err(ToolError::InvalidArguments {
                message: format!(
                    "`{}` takes a JSON object of arguments, not {other}",
                    registry_name(server.name(), mcp_name)
                ),
            });
        }
    };
    // A client span of the MCP conventions: `tools/call {tool}`.
    let span = tracing::info_span!(
        "mcp_call",
        otel.name = %format_args!("tools/call {mcp_name}"),
        otel.kind = "client",
        mcp.method.name = "tools/call",
        server = %server.name(),
        tool = %mcp_name,
        call_id = %ctx.call_id.as_str(),
    );
    let result = server
        .call(mcp_name, arguments, ctx)
        .instrument(span)
        .await?;
    // A server that echoes a credential (a debug endpoint, a misconfigured proxy)
    // never puts it in front of the model, the events or the logs.
    match tool_output(server.name(), mcp_name, result) {
        Ok(mut output) => {
            output.content = server.redact(&output.content);
            for part in &mut output.parts {
                if let ContentPart::Document {
                    name: Some(name), ..
                } = part
                {
                    *name = server.redact(name);
                }
            }
            if let Some(structured) = &output.structured {
                let text = structured.to_string();
                let redacted = server.redact(&text);
                if redacted != text {
                    output.structured = serde_json::from_str(&redacted).ok();
                }
            }
            Ok(output)
        }
        Err(ToolError::Failed(message)) => Err(ToolError::Failed(server.redact(&message))),
        Err(other) => Err(other),
    }
}

/// Turn a `tools/call` result into the tool's output (or its error).
pub fn tool_output(
    server: &str,
    tool: &str,
    result: CallToolResult,
) -> Result<ToolOutput, ToolError> {
    let mut text = String::new();
    let mut parts = Vec::new();
    for block in &result.content {
        let (piece, part) = render_block(block);
        parts.extend(part);
        if piece.is_empty() {
            continue;
        }
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&piece);
    }
    if result.is_error == Some(true) {
        let message = if text.is_empty() {
            // Some servers report the error only as structured content.
            match &result.structured_content {
                Some(details) => {
                    truncate_output(&details.to_string(), DEFAULT_OUTPUT_LIMIT_BYTES).into_owned()
                }
                None => "(no message)".to_owned(),
            }
        } else {
            truncate_output(&text, DEFAULT_OUTPUT_LIMIT_BYTES).into_owned()
        };
        return Err(ToolError::Failed(format!(
            "MCP server `{server}` tool `{tool}` failed: {message}"
        )));
    }
    if text.is_empty()
        && let Some(structured) = &result.structured_content
    {
        text = serde_json::to_string_pretty(structured).unwrap_or_else(|_| structured.to_string());
    }
    if text.is_empty() {
        text = "(the tool returned no content)".to_owned();
    }
    let content = match truncate_output(&text, DEFAULT_OUTPUT_LIMIT_BYTES) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(cut) => cut,
    };
    Ok(ToolOutput {
        content,
        structured: result.structured_content,
        parts,
    })
}

/// A content block as text the model can read, and the part it attaches: an image or
/// a PDF whose bytes are what it claims ([`media`](crate::media)) becomes a part named
/// in the text; other binary content is described, never inlined.
fn render_block(block: &ContentBlock) -> (String, Option<ContentPart>) {
    let media = match block {
        ContentBlock::Image(image) => media::image(&image.data, &image.mime_type),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => media::blob(uri, mime_type.as_deref(), blob),
            _ => return (render_text_block(block), None),
        },
        _ => return (render_text_block(block), None),
    };
    match media {
        Media::Attached { text, part } => (text, Some(part)),
        Media::Placeholder(text) => (text, None),
    }
}

/// A block that never attaches a part, as text.
fn render_text_block(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!("[image: {}]", image.mime_type),
        ContentBlock::Audio(audio) => format!("[audio: {}]", audio.mime_type),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            ResourceContents::BlobResourceContents { uri, .. } => {
                format!("[binary resource: {uri}]")
            }
            #[allow(unreachable_patterns)]
            _ => "[resource]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => match serde_json::to_value(link) {
            Ok(value) => format!(
                "[resource link: {}]",
                value.get("uri").and_then(|u| u.as_str()).unwrap_or("?")
            ),
            Err(_) => "[resource link]".to_owned(),
        },
        #[allow(unreachable_patterns)]
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(json: serde_json::Value) -> CallToolResult {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn text_blocks_are_joined_and_structured_content_kept() {
        let out = tool_output(
            "s",
            "t",
            result(serde_json::json!({
                "content": [{"type": "text", "text": "a"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}, {"type": "text", "text": "b"}],
                "structuredContent": {"x": 1}
            })),
        )
        .unwrap();
        // `AA==` is one NUL byte, not a PNG: named, not attached.
        assert_eq!(
            out.content,
            "a\n[image: image/png; not attached: its bytes are not a PNG, JPEG, GIF or WebP image or a PDF]\nb"
        );
        assert!(out.parts.is_empty());
        assert_eq!(out.structured, Some(serde_json::json!({"x": 1})));
    }

    #[test]
    fn images_and_pdf_blobs_become_parts_in_order() {
        use base64::Engine as _;
        let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x02\0\0\0\x02";
        let pdf = b"%PDF-1.4\n%%EOF";
        let out = tool_output(
            "s",
            "t",
            result(serde_json::json!({
                "content": [
                    {"type": "text", "text": "here"},
                    {"type": "image", "data": b64(png), "mimeType": "image/png"},
                    {"type": "resource", "resource": {"uri": "file:///r/a.pdf", "mimeType": "application/pdf", "blob": b64(pdf)}},
                    {"type": "audio", "data": "AA==", "mimeType": "audio/wav"}
                ]
            })),
        )
        .unwrap();
        assert_eq!(
            out.parts,
            vec![
                ContentPart::image("image/png", png),
                ContentPart::pdf(pdf, Some("a.pdf".into())),
            ]
        );
        assert_eq!(
            out.content,
            format!(
                "here\n[attached image (image/png, {} B)]\n[attached document a.pdf (application/pdf, {} B)]\n[audio: audio/wav]",
                png.len(),
                pdf.len()
            )
        );
    }

    #[test]
    fn structured_only_results_are_rendered_as_json() {
        let out = tool_output(
            "s",
            "t",
            result(serde_json::json!({"content": [], "structuredContent": {"temp": 21}})),
        )
        .unwrap();
        assert_eq!(out.content, "{\n  \"temp\": 21\n}");
        let out = tool_output("s", "t", result(serde_json::json!({"content": []}))).unwrap();
        assert_eq!(out.content, "(the tool returned no content)");
    }

    #[test]
    fn is_error_becomes_a_tool_error_with_the_servers_message() {
        let err = tool_output(
            "fs",
            "read_file",
            result(serde_json::json!({"content": [{"type": "text", "text": "Access denied"}], "isError": true})),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "MCP server `fs` tool `read_file` failed: Access denied"
        );
    }

    #[test]
    fn an_error_given_only_as_structured_content_keeps_its_details() {
        let err = tool_output(
            "db",
            "query",
            result(serde_json::json!({
                "content": [],
                "structuredContent": {"code": "E_LOCKED", "table": "users"},
                "isError": true
            })),
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("MCP server `db` tool `query` failed: {"),
            "{text}"
        );
        assert!(
            text.contains("E_LOCKED") && text.contains("users"),
            "{text}"
        );
    }

    #[test]
    fn long_output_is_truncated() {
        let big = "x".repeat(DEFAULT_OUTPUT_LIMIT_BYTES * 2);
        let out = tool_output(
            "s",
            "t",
            result(serde_json::json!({"content": [{"type": "text", "text": big}]})),
        )
        .unwrap();
        assert!(out.content.len() < DEFAULT_OUTPUT_LIMIT_BYTES + 200);
    }
}
