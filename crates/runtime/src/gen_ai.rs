//! The values of the OpenTelemetry GenAI semantic conventions that the runtime's spans
//! carry (`gen_ai.*` fields; an OpenTelemetry layer exports them as attributes).

use oxydra_types::FinishReason;

/// `gen_ai.provider.name` for a provider's own name: the convention's well-known
/// value where it has one, else the name as it is.
pub(crate) fn provider_name(name: &str) -> &str {
    match name {
        "gemini" => "gcp.gemini",
        other => other,
    }
}

/// One entry of `gen_ai.response.finish_reasons`.
pub(crate) fn finish_reason(reason: &FinishReason) -> &str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::Length => "length",
        FinishReason::ContentFilter => "content_filter",
        FinishReason::Refusal => "refusal",
        FinishReason::Other(other) => other,
    }
}

/// A token count as an integer attribute: OpenTelemetry's integers are `i64` (a `u64`
/// field would be exported as text).
pub(crate) fn count(tokens: u64) -> i64 {
    i64::try_from(tokens).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_map_to_the_conventions_names() {
        assert_eq!(provider_name("gemini"), "gcp.gemini");
        assert_eq!(provider_name("anthropic"), "anthropic");
        assert_eq!(provider_name("openai"), "openai");
    }

    #[test]
    fn finish_reasons_use_the_conventions_values() {
        assert_eq!(finish_reason(&FinishReason::ToolCalls), "tool_calls");
        assert_eq!(
            finish_reason(&FinishReason::ContentFilter),
            "content_filter"
        );
        assert_eq!(
            finish_reason(&FinishReason::Other("pause_turn".into())),
            "pause_turn"
        );
    }

    #[test]
    fn counts_past_i64_saturate() {
        assert_eq!(count(150), 150);
        assert_eq!(count(u64::MAX), i64::MAX);
    }
}
