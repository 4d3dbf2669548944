//! The recorded tool calls of a stored session, and the tool wrapper that answers a
//! replayed call from them: [`Recordings`], [`ReplayTool`].

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use oxydra_tools::{
    CallPreview, PermissionScope, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry,
};
use oxydra_types::{CallId, Message, MessageRole, SafetyTier, Source, ToolSchema};

/// The prefix the executor gives a failed call's result message.
const FAILED_PREFIX: &str = "Tool execution failed: ";

/// `value` as canonical JSON: object keys sorted at every depth, no whitespace. Two
/// argument objects that differ only in key order have the same canonical form.
pub fn canonical_json(value: &serde_json::Value) -> String {
    fn sorted(value: &serde_json::Value) -> serde_json::Value {
        match value {
            serde_json::Value::Object(map) => {
                let mut entries: Vec<(&String, &serde_json::Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                serde_json::Value::Object(
                    entries
                        .into_iter()
                        .map(|(key, value)| (key.clone(), sorted(value)))
                        .collect(),
                )
            }
            serde_json::Value::Array(items) => {
                serde_json::Value::Array(items.iter().map(sorted).collect())
            }
            other => other.clone(),
        }
    }
    // A map built in sorted order serialises in that order with or without
    // serde_json's `preserve_order`.
    sorted(value).to_string()
}

/// The canonical JSON of raw arguments as a model sent them; text that is not JSON
/// stays as it is (it then matches only the same text).
pub fn canonical_arguments(raw: &str) -> String {
    serde_json::from_str::<serde_json::Value>(raw)
        .map(|value| canonical_json(&value))
        .unwrap_or_else(|_| raw.to_owned())
}

/// What a recorded call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedOutput {
    /// The text the model got (for a failure, without the executor's prefix).
    pub content: String,
    /// Whether the call failed.
    pub failed: bool,
}

/// The recorded calls of a session, by tool name and canonical arguments, each key's
/// outputs in the order they were recorded. Taking one consumes it: repeated
/// identical calls get the recorded outputs in order.
#[derive(Debug, Default, Clone)]
pub struct Recordings {
    by_call: HashMap<(String, String), VecDeque<RecordedOutput>>,
}

impl Recordings {
    /// The calls of `messages` (assistant tool calls with the tool message answering
    /// each); a call without a result is not recorded.
    pub fn from_messages(messages: &[Message]) -> Self {
        let results: HashMap<&CallId, &Message> = messages
            .iter()
            .filter(|message| message.role == MessageRole::Tool)
            .filter_map(|message| message.tool_call_id.as_ref().map(|id| (id, message)))
            .collect();
        let mut recordings = Self::default();
        for message in messages
            .iter()
            .filter(|message| message.role == MessageRole::Assistant)
        {
            for call in &message.tool_calls {
                let Some(result) = results.get(&call.id) else {
                    continue;
                };
                let text = result.content.clone().unwrap_or_default();
                let output = match text.strip_prefix(FAILED_PREFIX) {
                    Some(error) => RecordedOutput {
                        content: error.to_owned(),
                        failed: true,
                    },
                    None => RecordedOutput {
                        content: text,
                        failed: false,
                    },
                };
                recordings
                    .by_call
                    .entry((call.name.clone(), canonical_arguments(&call.arguments)))
                    .or_default()
                    .push_back(output);
            }
        }
        recordings
    }

    /// The next recorded output of a call to `tool` with `arguments`, if one is left.
    pub fn take(&mut self, tool: &str, arguments: &serde_json::Value) -> Option<RecordedOutput> {
        self.by_call
            .get_mut(&(tool.to_owned(), canonical_json(arguments)))
            .and_then(VecDeque::pop_front)
    }

    /// How many recorded outputs are left.
    pub fn remaining(&self) -> usize {
        self.by_call.values().map(VecDeque::len).sum()
    }
}

/// Recordings shared by the wrapped tools of one replay.
pub type SharedRecordings = Arc<Mutex<Recordings>>;

/// A tool of a replay: a call matching a recorded one gets the recorded output without
/// running; any other is refused with a tool error the model gets, or, when `live`,
/// runs the wrapped tool (whose workspace the caller must make a scratch copy).
pub struct ReplayTool {
    inner: Arc<dyn Tool>,
    recordings: SharedRecordings,
    live: bool,
}

impl ReplayTool {
    /// `inner` answered from `recordings`; `live` runs unrecorded calls.
    pub fn new(inner: Arc<dyn Tool>, recordings: SharedRecordings, live: bool) -> Self {
        Self {
            inner,
            recordings,
            live,
        }
    }

    /// Every tool of `tools` wrapped so, sharing `recordings`.
    ///
    /// # Errors
    /// Never in practice (the names are those of a registry already); a
    /// [`ToolError::DuplicateTool`] otherwise.
    pub fn wrap_all(
        tools: &ToolRegistry,
        recordings: &SharedRecordings,
        live: bool,
    ) -> Result<ToolRegistry, ToolError> {
        let mut wrapped = ToolRegistry::new();
        for name in tools.names() {
            if let Some(tool) = tools.get(&name) {
                wrapped.register(Self::new(tool, Arc::clone(recordings), live))?;
            }
        }
        Ok(wrapped)
    }
}

#[async_trait]
impl Tool for ReplayTool {
    fn schema(&self) -> ToolSchema {
        self.inner.schema()
    }

    fn safety_tier(&self) -> SafetyTier {
        self.inner.safety_tier()
    }

    fn max_execution_time(&self) -> Option<Duration> {
        self.inner.max_execution_time()
    }

    fn consent(&self) -> Option<PermissionScope> {
        self.inner.consent()
    }

    fn preview(&self, args: &serde_json::Value, workspace_root: &Path) -> CallPreview {
        self.inner.preview(args, workspace_root)
    }

    fn output_source(&self, args: &serde_json::Value) -> Option<Source> {
        self.inner.output_source(args)
    }

    fn state_before(&self, args: &serde_json::Value, workspace_root: &Path) -> Option<String> {
        self.inner.state_before(args, workspace_root)
    }

    fn rerun_after_crash(&self, call: &oxydra_tools::CrashedCall<'_>) -> oxydra_tools::RerunSafety {
        self.inner.rerun_after_crash(call)
    }

    async fn execute(
        &self,
        args: serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let name = self.inner.schema().name;
        let recorded = self
            .recordings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(&name, &args);
        match recorded {
            Some(output) if output.failed => Err(ToolError::Failed(output.content)),
            Some(output) => Ok(ToolOutput::text(output.content)),
            None if self.live => self.inner.execute(args, ctx).await,
            None => Err(ToolError::Failed(format!(
                "replay: `{name}` with these arguments was not called in the recorded session, \
                 so it was not run (a replay runs only recorded calls unless it is live)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra_types::ToolCall;
    use serde_json::json;

    fn session(calls: &[(&str, &str, &str)]) -> Vec<Message> {
        let mut messages = vec![Message::user("go")];
        for (index, (name, args, output)) in calls.iter().enumerate() {
            let id = CallId::from(format!("c{index}"));
            messages.push(Message::assistant_with_tool_calls(
                None,
                vec![ToolCall::new(id.clone(), *name, *args)],
            ));
            messages.push(Message::tool_result(id, *name, *output));
        }
        messages
    }

    #[test]
    fn arguments_match_whatever_their_key_order_and_spacing() {
        let mut recordings = Recordings::from_messages(&session(&[(
            "file_write",
            r#"{"path": "a.txt", "content": {"z": 1, "a": [ {"y": 2, "b": 3} ]}}"#,
            "wrote a.txt",
        )]));
        let args = json!({"content": {"a": [{"b": 3, "y": 2}], "z": 1}, "path": "a.txt"});
        assert_eq!(
            recordings.take("file_write", &args),
            Some(RecordedOutput {
                content: "wrote a.txt".into(),
                failed: false
            })
        );
        assert_eq!(recordings.remaining(), 0);
    }

    #[test]
    fn another_tool_other_values_or_a_missing_key_do_not_match() {
        let mut recordings =
            Recordings::from_messages(&session(&[("file_read", r#"{"path":"a.txt"}"#, "one")]));
        assert_eq!(
            recordings.take("file_write", &json!({"path": "a.txt"})),
            None
        );
        assert_eq!(
            recordings.take("file_read", &json!({"path": "b.txt"})),
            None
        );
        assert_eq!(
            recordings.take("file_read", &json!({"path": "a.txt", "offset": 1})),
            None
        );
        assert_eq!(recordings.take("file_read", &json!({"path": 1})), None);
        assert_eq!(recordings.remaining(), 1);
    }

    #[test]
    fn repeated_identical_calls_consume_the_recordings_in_order() {
        let mut recordings = Recordings::from_messages(&session(&[
            ("shell_exec", r#"{"command":"date"}"#, "first"),
            ("file_read", r#"{"path":"x"}"#, "x"),
            ("shell_exec", r#"{"command":"date"}"#, "second"),
        ]));
        let args = json!({"command": "date"});
        let contents: Vec<Option<String>> = (0..3)
            .map(|_| recordings.take("shell_exec", &args).map(|o| o.content))
            .collect();
        assert_eq!(
            contents,
            vec![Some("first".into()), Some("second".into()), None]
        );
    }

    #[test]
    fn a_recorded_failure_replays_as_a_failure_without_the_prefix_twice() {
        let mut recordings = Recordings::from_messages(&session(&[(
            "file_read",
            r#"{"path":"gone"}"#,
            "Tool execution failed: `gone` does not exist in the workspace",
        )]));
        let output = recordings
            .take("file_read", &json!({"path": "gone"}))
            .unwrap();
        assert!(output.failed);
        assert_eq!(output.content, "`gone` does not exist in the workspace");
    }

    #[test]
    fn a_call_without_a_result_or_with_arguments_that_are_not_json_is_handled() {
        let mut messages = session(&[("file_read", "not json {", "odd")]);
        messages.push(Message::assistant_with_tool_calls(
            None,
            vec![ToolCall::new(
                CallId::from("orphan"),
                "file_read",
                r#"{"path":"o"}"#,
            )],
        ));
        let mut recordings = Recordings::from_messages(&messages);
        assert_eq!(recordings.remaining(), 1);
        assert_eq!(recordings.take("file_read", &json!({"path": "o"})), None);
        assert_eq!(canonical_arguments("not json {"), "not json {");
    }
}
