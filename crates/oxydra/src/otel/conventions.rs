//! What a `tracing` field cannot say the way the GenAI conventions want it: the
//! attributes the conventions type as string arrays arrive as one string and are
//! turned into an array of it here.

use opentelemetry::{Array, StringValue, Value};
use opentelemetry_sdk::trace::SpanData;

/// The attributes the conventions type as `string[]` that spans record as one string.
const STRING_ARRAYS: [&str; 1] = ["gen_ai.response.finish_reasons"];

/// Gives `span`'s attributes the types the conventions ask for.
pub(crate) fn shape(span: &mut SpanData) {
    for attribute in &mut span.attributes {
        if STRING_ARRAYS.contains(&attribute.key.as_str())
            && let Value::String(text) = &attribute.value
        {
            let text: StringValue = text.clone();
            attribute.value = Value::Array(Array::String(vec![text]));
        }
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::KeyValue;
    use opentelemetry::trace::Status;

    use super::*;
    use crate::otel::scrub::tests::span_data;

    #[test]
    fn finish_reasons_become_a_string_array_and_nothing_else_changes() {
        let mut span = span_data(
            "chat m",
            vec![
                KeyValue::new("gen_ai.response.finish_reasons", "tool_calls"),
                KeyValue::new("gen_ai.request.model", "m"),
            ],
            "event",
            Status::Unset,
        );
        shape(&mut span);
        assert_eq!(
            span.attributes[0].value,
            Value::Array(Array::String(vec![StringValue::from("tool_calls")]))
        );
        assert_eq!(span.attributes[1].value, Value::from("m"));
    }
}
