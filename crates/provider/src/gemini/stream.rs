//! Decoding Gemini `GenerateContentResponse` chunks (one per SSE event, or one whole
//! non-streamed body) into stream items.

use std::borrow::Cow;
use std::collections::VecDeque;

use oxydra_types::{CallId, FinishReason, ReasoningPart, StreamItem, ToolCallDelta, Usage};
use serde::Deserialize;

use crate::error::ProviderError;
use crate::http_error::{WireError, classify, excerpt};
use crate::sse::SseEvent;
use crate::transport::EventDecoder;

/// One chunk, reading only the fields we use.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk<'a> {
    #[serde(default, borrow)]
    candidates: Vec<Candidate<'a>>,
    #[serde(default)]
    usage_metadata: Option<WireUsage>,
    #[serde(default, borrow)]
    prompt_feedback: Option<PromptFeedback<'a>>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(default, borrow)]
    content: Option<Content<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Content<'a> {
    #[serde(default, borrow)]
    parts: Vec<Part<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    thought: bool,
    #[serde(default, borrow)]
    thought_signature: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function_call: Option<FunctionCall<'a>>,
}

#[derive(Deserialize)]
struct FunctionCall<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    args: Option<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback<'a> {
    #[serde(default, borrow)]
    block_reason: Option<Cow<'a, str>>,
}

/// `usageMetadata`. Its `promptTokenCount` includes cached tokens; thinking tokens are
/// counted apart from `candidatesTokenCount`.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    #[serde(default)]
    prompt_token_count: u64,
    #[serde(default)]
    candidates_token_count: u64,
    #[serde(default)]
    thoughts_token_count: u64,
    #[serde(default)]
    cached_content_token_count: u64,
}

impl WireUsage {
    fn to_usage(self) -> Usage {
        Usage::new(
            self.prompt_token_count,
            self.candidates_token_count
                .saturating_add(self.thoughts_token_count),
            self.cached_content_token_count,
        )
        .with_reasoning_tokens(self.thoughts_token_count)
    }
}

/// Gemini's finish reason; `STOP` after function calls means they are to be run.
fn finish_reason(reason: &str, has_calls: bool) -> FinishReason {
    match reason {
        "STOP" if has_calls => FinishReason::ToolCalls,
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            FinishReason::ContentFilter
        }
        other => FinishReason::Other(other.to_owned()),
    }
}

/// Decodes Gemini response chunks into stream items.
///
/// Text parts become text, `thought: true` parts reasoning text; each `functionCall`
/// part becomes one whole tool call with a fresh id (the API sends none) and its
/// `args` object serialised. A `thoughtSignature` becomes a
/// [`ReasoningPart::ThoughtSignature`] naming the call it came on (or none, for the
/// text). Gemini marks no end of stream: the usage of the last chunk and the finish
/// reason are yielded when the body ends, and a body that ends before any
/// `finishReason` is a cut stream.
#[derive(Debug, Default)]
pub struct GeminiStreamDecoder {
    calls: u32,
    text_signature: bool,
    usage: WireUsage,
    finish: Option<String>,
    done: bool,
}

impl GeminiStreamDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes one chunk (an event's `data`), pushing the items it yields onto `out`.
    pub fn decode_data(
        &mut self,
        data: &str,
        out: &mut VecDeque<StreamItem>,
    ) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        let chunk: Chunk<'_> = serde_json::from_str(data).map_err(|e| ProviderError::Decode {
            what: format!("Gemini response chunk ({e})"),
            excerpt: excerpt(data),
        })?;
        if let Some(error) = chunk.error {
            return Err(classify(None, None, &error));
        }
        if let Some(usage) = chunk.usage_metadata {
            self.usage = usage;
        }
        if let Some(reason) = chunk.prompt_feedback.and_then(|f| f.block_reason) {
            self.finish = Some(format!("PROMPT_{reason}"));
        }
        for candidate in chunk.candidates {
            for part in candidate.content.into_iter().flat_map(|c| c.parts) {
                self.part(part, out);
            }
            if let Some(reason) = candidate.finish_reason {
                self.finish = Some(reason.into_owned());
            }
        }
        Ok(())
    }

    fn part(&mut self, part: Part<'_>, out: &mut VecDeque<StreamItem>) {
        if let Some(call) = part.function_call {
            let id = CallId::generate();
            let arguments = match call.args {
                None | Some(serde_json::Value::Null) => "{}".to_owned(),
                Some(args) => args.to_string(),
            };
            if let Some(signature) = part.thought_signature {
                out.push_back(StreamItem::ReasoningPart(ReasoningPart::ThoughtSignature {
                    call_id: Some(id.clone()),
                    signature: signature.into_owned(),
                }));
            }
            out.push_back(StreamItem::ToolCallDelta(ToolCallDelta {
                index: self.calls,
                id: Some(id),
                name: Some(call.name.into_owned()),
                arguments,
            }));
            self.calls = self.calls.saturating_add(1);
            return;
        }
        if let Some(text) = part.text.filter(|t| !t.is_empty()) {
            out.push_back(if part.thought {
                StreamItem::Reasoning(text.into_owned())
            } else {
                StreamItem::Text(text.into_owned())
            });
        }
        // The text's signature: the first one counts (the text goes back as one part).
        if let Some(signature) = part.thought_signature
            && !self.text_signature
        {
            self.text_signature = true;
            out.push_back(StreamItem::ReasoningPart(ReasoningPart::ThoughtSignature {
                call_id: None,
                signature: signature.into_owned(),
            }));
        }
    }

    /// The body ended: yields the last usage and the finish reason when one was seen.
    pub fn end(&mut self, out: &mut VecDeque<StreamItem>) {
        if self.done {
            return;
        }
        let Some(reason) = self.finish.take() else {
            return;
        };
        self.done = true;
        out.push_back(StreamItem::Usage(self.usage.to_usage()));
        let reason = match reason.strip_prefix("PROMPT_") {
            Some(_) => FinishReason::ContentFilter,
            None => finish_reason(&reason, self.calls > 0),
        };
        out.push_back(StreamItem::Finish(reason));
    }

    /// Whether the stream has ended with a finish reason.
    pub fn is_done(&self) -> bool {
        self.done
    }
}

impl EventDecoder for GeminiStreamDecoder {
    fn decode(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<StreamItem>,
    ) -> Result<(), ProviderError> {
        self.decode_data(&event.data, out)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end_marker(&self) -> &'static str {
        "a chunk with a finishReason"
    }

    fn end_of_body(&mut self, out: &mut VecDeque<StreamItem>) -> Result<(), ProviderError> {
        self.end(out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&str]) -> Vec<StreamItem> {
        let mut decoder = GeminiStreamDecoder::new();
        let mut out = VecDeque::new();
        for chunk in chunks {
            decoder.decode_data(chunk, &mut out).unwrap();
        }
        decoder.end(&mut out);
        out.into_iter().collect()
    }

    #[test]
    fn finish_reasons_map() {
        assert_eq!(finish_reason("STOP", true), FinishReason::ToolCalls);
        assert_eq!(finish_reason("STOP", false), FinishReason::Stop);
        assert_eq!(finish_reason("MAX_TOKENS", false), FinishReason::Length);
        assert_eq!(finish_reason("SAFETY", false), FinishReason::ContentFilter);
        assert_eq!(
            finish_reason("RECITATION", true),
            FinishReason::ContentFilter
        );
        assert_eq!(
            finish_reason("MALFORMED_FUNCTION_CALL", false),
            FinishReason::Other("MALFORMED_FUNCTION_CALL".into())
        );
    }

    #[test]
    fn a_blocked_prompt_is_a_content_filter_finish() {
        let items = decode(&[
            r#"{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":7}}"#,
        ]);
        assert_eq!(
            items,
            vec![
                StreamItem::Usage(Usage::new(7, 0, 0)),
                StreamItem::Finish(FinishReason::ContentFilter)
            ]
        );
    }

    #[test]
    fn no_finish_reason_means_not_done() {
        let mut decoder = GeminiStreamDecoder::new();
        let mut out = VecDeque::new();
        decoder
            .decode_data(
                r#"{"candidates":[{"content":{"parts":[{"text":"Hi"}]}}]}"#,
                &mut out,
            )
            .unwrap();
        decoder.end(&mut out);
        assert!(!decoder.is_done());
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn an_error_chunk_fails_the_stream() {
        let mut decoder = GeminiStreamDecoder::new();
        let error = decoder
            .decode_data(
                r#"{"error":{"code":500,"message":"internal","status":"INTERNAL"}}"#,
                &mut VecDeque::new(),
            )
            .unwrap_err();
        assert!(matches!(error, ProviderError::Server { .. }), "{error}");
    }

    #[test]
    fn cached_and_thought_tokens_count() {
        let items = decode(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"STOP"}],
               "usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":5,"thoughtsTokenCount":20,"cachedContentTokenCount":64}}"#,
        ]);
        assert_eq!(
            items[1],
            StreamItem::Usage(Usage::new(100, 25, 64).with_reasoning_tokens(20))
        );
    }
}
