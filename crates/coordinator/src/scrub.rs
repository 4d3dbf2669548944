//! Scrubbing of what runs produce before it is stored: nothing unscrubbed
//! reaches the database.
//!
//! A run's result and error are JSON: deterministic step outputs (tool text and
//! structured output, which the executor does not scrub), an AI agent's final text
//! (a model may echo a secret) and error messages and details. Every string is
//! scrubbed on its own, and every `"key": value` entry of an object is scrubbed as a
//! one-entry object too, so a secret labelled only by its key
//! (`{"password": "hunter2"}`) is caught. An entry whose scrubbed form is no longer
//! valid JSON is replaced by `"[REDACTED]"` whole: it fails closed.

use oxydra_scrubbing::scrub;
use serde_json::{Map, Value};

use crate::run::RunError;

/// What replaces a value whose redaction cannot be mapped back onto the JSON.
const REDACTED: &str = "[REDACTED]";

/// `text`, scrubbed.
pub(crate) fn scrub_text(text: &str) -> String {
    scrub(text).into_owned()
}

/// `value` with every secret in it redacted.
pub fn scrub_value(value: Value) -> Value {
    match value {
        Value::String(text) => match scrub(&text) {
            scrubbed if scrubbed.is_clean() => Value::String(text),
            scrubbed => Value::String(scrubbed.into_owned()),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(scrub_value).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, item)| {
                    let key = scrub_text(&key);
                    let item = match scrub_value(item) {
                        leaf @ (Value::String(_) | Value::Number(_)) => scrub_entry(&key, leaf),
                        nested => nested,
                    };
                    (key, item)
                })
                .collect::<Map<_, _>>(),
        ),
        other => other,
    }
}

/// `value` as the value of `key`: redacted when the pair reads as a labelled secret.
fn scrub_entry(key: &str, value: Value) -> Value {
    let text = format!("{{{}:{value}}}", Value::String(key.to_owned()));
    let scrubbed = scrub(&text);
    if scrubbed.is_clean() {
        return value;
    }
    match serde_json::from_str::<Map<String, Value>>(&scrubbed.text) {
        Ok(map) if map.len() == 1 => map
            .into_iter()
            .next()
            .map_or_else(|| Value::String(REDACTED.into()), |(_, value)| value),
        _ => Value::String(REDACTED.into()),
    }
}

/// `error` with its message and detail scrubbed (its kind is a fixed code).
pub fn scrub_error(error: RunError) -> RunError {
    RunError {
        kind: error.kind,
        message: scrub_text(&error.message),
        detail: error.detail.map(scrub_value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const AWS: &str = "AKIAIOSFODNN7EXAMPLE";
    const LIVE: &str = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e";

    #[test]
    fn secrets_in_strings_keys_and_labelled_entries_are_redacted() {
        let value = json!({
            "steps": [{
                "step": 1,
                "tool": "file_read",
                "output": format!("api_key = \"{LIVE}\"\naws = {AWS}\n"),
                "structured": {"password": "hunter2", "nested": [format!("id {AWS}")]},
            }],
            "output": format!("api_key = \"{LIVE}\""),
            "count": 3,
        });
        let scrubbed = scrub_value(value).to_string();
        assert!(!scrubbed.contains(LIVE), "{scrubbed}");
        assert!(!scrubbed.contains(AWS), "{scrubbed}");
        assert!(!scrubbed.contains("hunter2"), "{scrubbed}");
        assert!(scrubbed.contains(REDACTED), "{scrubbed}");
        let back: Value = serde_json::from_str(&scrubbed).unwrap();
        assert_eq!(back["count"], 3);
        assert_eq!(back["steps"][0]["tool"], "file_read");
        assert_eq!(back["steps"][0]["structured"]["password"], REDACTED);
    }

    #[test]
    fn clean_values_are_unchanged() {
        let value = json!({
            "text": "The answer is 42.",
            "session_id": "ses_0123456789abcdef0123",
            "turns": 2,
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "cost": 0.25,
            "ok": true,
            "none": null,
        });
        assert_eq!(scrub_value(value.clone()), value);
    }

    #[test]
    fn errors_keep_their_kind_and_lose_their_secrets() {
        let error = RunError::new("step_failed", format!("token {AWS} refused"))
            .with_detail(json!({"arguments": {"api_key": LIVE}}));
        let scrubbed = scrub_error(error);
        assert_eq!(scrubbed.kind, "step_failed");
        assert!(!scrubbed.message.contains(AWS));
        let detail = scrubbed.detail.unwrap().to_string();
        assert!(!detail.contains(LIVE), "{detail}");
    }
}
