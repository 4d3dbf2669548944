//! Hooks around tool calls: denial, argument rewrites (validated again), output
//! rewrites, failures (closed before a call, open after it) and their order.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use oxydra_executor::{
    AfterToolDecision, BeforeToolDecision, CollectingEventSink, Hook, HookChain, HookError,
    ToolExecutionError, ToolHookCall,
};
use oxydra_tools::ToolOutput;
use oxydra_types::{RuntimeEvent, SafetyTier};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{FnTool, call, ctx, executor};

/// A hook whose `before_tool` answers with `decide(args)` and whose `after_tool`
/// answers with `after(output)`; it notes each call as `name:point`.
struct Scripted {
    name: &'static str,
    before: fn(&Value) -> Result<BeforeToolDecision, HookError>,
    after: fn(&str) -> Result<AfterToolDecision, HookError>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Scripted {
    fn new(name: &'static str, seen: &Arc<Mutex<Vec<String>>>) -> Self {
        Self {
            name,
            before: |_| Ok(BeforeToolDecision::Allow),
            after: |_| Ok(AfterToolDecision::Keep),
            seen: Arc::clone(seen),
        }
    }
}

#[async_trait]
impl Hook for Scripted {
    fn name(&self) -> &str {
        self.name
    }

    async fn before_tool(
        &self,
        call: &ToolHookCall,
        _cancel: &CancellationToken,
    ) -> Result<BeforeToolDecision, HookError> {
        self.seen
            .lock()
            .unwrap()
            .push(format!("{}:before:{}", self.name, call.arguments));
        (self.before)(&call.arguments)
    }

    async fn after_tool(
        &self,
        _call: &ToolHookCall,
        output: &ToolOutput,
        _cancel: &CancellationToken,
    ) -> Result<AfterToolDecision, HookError> {
        self.seen
            .lock()
            .unwrap()
            .push(format!("{}:after:{}", self.name, output.content));
        (self.after)(&output.content)
    }
}

/// A tool requiring a string `path`, answering `read:{args}`.
fn reader() -> FnTool {
    FnTool::new("read", SafetyTier::ReadOnly, |args, _| async move {
        Ok(ToolOutput::text(format!("read:{args}")))
    })
    .with_schema(json!({
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": false
    }))
}

fn chain(hooks: Vec<Scripted>) -> HookChain {
    HookChain::new(
        hooks
            .into_iter()
            .map(|hook| Arc::new(hook) as Arc<dyn Hook>)
            .collect(),
    )
}

fn hook_events(events: &CollectingEventSink) -> Vec<(String, String, Option<String>)> {
    events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            RuntimeEvent::HookDecision {
                hook,
                decision,
                reason,
                ..
            } => Some((hook, decision, reason)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_denial_reaches_the_model_and_the_tool_never_runs() {
    let seen = Arc::default();
    let tool = reader();
    let mut guard = Scripted::new("guard", &seen);
    guard.before = |_| {
        Ok(BeforeToolDecision::Deny {
            reason: "reading is off today".into(),
        })
    };
    let executor = executor(std::slice::from_ref(&tool), vec![]).with_hooks(chain(vec![guard]));
    let events = CollectingEventSink::new();
    let mut process = executor.new_process_state();
    let result = executor
        .execute_batch(
            &[call("1", "read", r#"{"path":"a"}"#)],
            &mut process,
            &ctx(),
            &events,
        )
        .await;
    assert_eq!(tool.runs(), 0);
    let record = &result.records[0];
    assert!(matches!(
        record.error(),
        Some(ToolExecutionError::HookDenied { .. })
    ));
    assert_eq!(
        record.content_for_model(),
        "Tool execution failed: hook `guard` denied `read`: reading is off today"
    );
    assert_eq!(
        hook_events(&events),
        [(
            "guard".to_owned(),
            "deny".to_owned(),
            Some("reading is off today".to_owned())
        )]
    );
    // The call's own events still come: started, then failed with the reason.
    assert!(events.events().iter().any(|event| matches!(
        event,
        RuntimeEvent::ToolFailed { error, .. } if error.contains("reading is off today")
    )));
}

#[tokio::test]
async fn a_rewrite_into_invalid_arguments_is_a_validation_error_and_nothing_runs() {
    let seen = Arc::default();
    let tool = reader();
    let mut bad = Scripted::new("bad", &seen);
    bad.before = |_| {
        Ok(BeforeToolDecision::Rewrite {
            arguments: json!({"path": 7}),
        })
    };
    let executor = executor(std::slice::from_ref(&tool), vec![]).with_hooks(chain(vec![bad]));
    let mut process = executor.new_process_state();
    let result = executor
        .execute_batch(
            &[call("1", "read", r#"{"path":"a"}"#)],
            &mut process,
            &ctx(),
            &CollectingEventSink::new(),
        )
        .await;
    assert_eq!(tool.runs(), 0);
    let text = result.records[0].content_for_model();
    assert!(
        text.contains("hook `bad` rewrote the arguments of `read` into invalid ones"),
        "{text}"
    );
    // The validation error the model corrects itself from: path, keyword, schema.
    assert!(text.contains("$.path"), "{text}");
    assert!(text.contains("Expected schema"), "{text}");
}

#[tokio::test]
async fn a_rewrite_that_is_not_an_object_is_refused_too() {
    let seen = Arc::default();
    let tool = reader();
    let mut bad = Scripted::new("bad", &seen);
    bad.before = |_| {
        Ok(BeforeToolDecision::Rewrite {
            arguments: json!("rm -rf /"),
        })
    };
    let executor = executor(std::slice::from_ref(&tool), vec![]).with_hooks(chain(vec![bad]));
    let mut process = executor.new_process_state();
    let result = executor
        .execute_batch(
            &[call("1", "read", r#"{"path":"a"}"#)],
            &mut process,
            &ctx(),
            &CollectingEventSink::new(),
        )
        .await;
    assert_eq!(tool.runs(), 0);
    assert!(matches!(
        result.records[0].error(),
        Some(ToolExecutionError::HookRewriteInvalid { .. })
    ));
}

#[tokio::test]
async fn a_valid_rewrite_is_what_the_tool_gets() {
    let seen = Arc::default();
    let tool = reader();
    let mut confine = Scripted::new("confine", &seen);
    confine.before = |_| {
        Ok(BeforeToolDecision::Rewrite {
            arguments: json!({"path": "safe.txt"}),
        })
    };
    let executor = executor(std::slice::from_ref(&tool), vec![]).with_hooks(chain(vec![confine]));
    let events = CollectingEventSink::new();
    let mut process = executor.new_process_state();
    let result = executor
        .execute_batch(
            &[call("1", "read", r#"{"path":"/etc/passwd"}"#)],
            &mut process,
            &ctx(),
            &events,
        )
        .await;
    assert_eq!(tool.runs(), 1);
    assert_eq!(
        result.records[0].content_for_model(),
        r#"read:{"path":"safe.txt"}"#
    );
    assert_eq!(hook_events(&events)[0].1, "rewrite");
}

#[tokio::test]
async fn hooks_run_in_order_the_first_denial_wins_and_rewrites_chain() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let tool = reader();
    let mut first = Scripted::new("first", &seen);
    first.before = |_| {
        Ok(BeforeToolDecision::Rewrite {
            arguments: json!({"path": "one"}),
        })
    };
    let mut second = Scripted::new("second", &seen);
    second.before = |args| {
        if args["path"] == "one" {
            Ok(BeforeToolDecision::Deny {
                reason: "saw the first rewrite".into(),
            })
        } else {
            Ok(BeforeToolDecision::Allow)
        }
    };
    let mut third = Scripted::new("third", &seen);
    third.before = |_| {
        Ok(BeforeToolDecision::Deny {
            reason: "never asked".into(),
        })
    };
    let executor =
        executor(std::slice::from_ref(&tool), vec![]).with_hooks(chain(vec![first, second, third]));
    let mut process = executor.new_process_state();
    let result = executor
        .execute_batch(
            &[call("1", "read", r#"{"path":"zero"}"#)],
            &mut process,
            &ctx(),
            &CollectingEventSink::new(),
        )
        .await;
    assert_eq!(tool.runs(), 0);
    assert!(
        result.records[0]
            .content_for_model()
            .contains("hook `second` denied `read`: saw the first rewrite")
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [
            r#"first:before:{"path":"zero"}"#,
            r#"second:before:{"path":"one"}"#
        ]
    );
}

#[tokio::test]
async fn a_failing_before_tool_hook_denies_and_says_so() {
    let seen = Arc::default();
    let tool = reader();
    let mut broken = Scripted::new("broken", &seen);
    broken.before = |_| {
        Err(HookError::Failed {
            message: "exit status 3".into(),
        })
    };
    let executor = executor(std::slice::from_ref(&tool), vec![]).with_hooks(chain(vec![broken]));
    let mut process = executor.new_process_state();
    let result = executor
        .execute_batch(
            &[call("1", "read", r#"{"path":"a"}"#)],
            &mut process,
            &ctx(),
            &CollectingEventSink::new(),
        )
        .await;
    assert_eq!(tool.runs(), 0);
    let text = result.records[0].content_for_model();
    assert!(text.contains("hook `broken` denied `read`"), "{text}");
    assert!(text.contains("the hook failed (exit status 3)"), "{text}");
    assert!(text.contains("denies the call"), "{text}");
}

#[tokio::test]
async fn after_tool_rewrites_chain_and_a_failure_keeps_the_output() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let tool = reader();
    let mut redact = Scripted::new("redact", &seen);
    redact.after = |_| {
        Ok(AfterToolDecision::Replace {
            content: "redacted".into(),
        })
    };
    let mut broken = Scripted::new("broken", &seen);
    broken.after = |_| {
        Err(HookError::TimedOut {
            after: std::time::Duration::from_millis(5),
        })
    };
    let mut tag = Scripted::new("tag", &seen);
    tag.after = |content| {
        Ok(AfterToolDecision::Replace {
            content: format!("{content} (tagged)"),
        })
    };
    let executor =
        executor(std::slice::from_ref(&tool), vec![]).with_hooks(chain(vec![redact, broken, tag]));
    let events = CollectingEventSink::new();
    let mut process = executor.new_process_state();
    let result = executor
        .execute_batch(
            &[call("1", "read", r#"{"path":"a"}"#)],
            &mut process,
            &ctx(),
            &events,
        )
        .await;
    assert_eq!(tool.runs(), 1);
    assert!(result.records[0].is_success());
    assert_eq!(result.records[0].content_for_model(), "redacted (tagged)");
    let decisions: Vec<String> = hook_events(&events)
        .into_iter()
        .map(|(h, d, _)| format!("{h}:{d}"))
        .collect();
    assert_eq!(
        decisions,
        ["redact:replace", "broken:failed", "tag:replace"]
    );
}

#[tokio::test]
async fn after_tool_is_not_called_for_a_failed_call() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let failing = FnTool::new("fail", SafetyTier::ReadOnly, |_, _| async move {
        Err(oxydra_tools::ToolError::Failed("boom".into()))
    });
    let executor =
        executor(&[failing], vec![]).with_hooks(chain(vec![Scripted::new("watch", &seen)]));
    let mut process = executor.new_process_state();
    let result = executor
        .execute_batch(
            &[call("1", "fail", "{}")],
            &mut process,
            &ctx(),
            &CollectingEventSink::new(),
        )
        .await;
    assert!(!result.records[0].is_success());
    assert_eq!(*seen.lock().unwrap(), ["watch:before:{}"]);
}

/// A hook that keeps every output and notes the parts it saw.
struct PartsWatcher {
    seen: Arc<Mutex<Vec<oxydra_types::ContentPart>>>,
}

#[async_trait]
impl Hook for PartsWatcher {
    async fn after_tool(
        &self,
        _call: &ToolHookCall,
        output: &ToolOutput,
        _cancel: &CancellationToken,
    ) -> Result<AfterToolDecision, HookError> {
        self.seen
            .lock()
            .unwrap()
            .extend(output.parts.iter().cloned());
        Ok(AfterToolDecision::Keep)
    }
}

#[tokio::test]
async fn after_tool_sees_the_parts_unchanged_and_the_record_keeps_them() {
    use oxydra_types::ContentPart;
    let parts = vec![
        ContentPart::image("image/png", b"\x89PNG\r\n\x1a\n"),
        ContentPart::pdf(b"%PDF-1.7", Some("a.pdf".into())),
    ];
    let tool = FnTool::new("shot", SafetyTier::ReadOnly, |_, _| async move {
        Ok(ToolOutput::text("two attachments").with_parts(vec![
            ContentPart::image("image/png", b"\x89PNG\r\n\x1a\n"),
            ContentPart::pdf(b"%PDF-1.7", Some("a.pdf".into())),
        ]))
    });
    let seen: Arc<Mutex<Vec<ContentPart>>> = Arc::default();
    let watcher = PartsWatcher {
        seen: Arc::clone(&seen),
    };
    let executor = executor(std::slice::from_ref(&tool), vec![])
        .with_hooks(HookChain::new(vec![Arc::new(watcher) as Arc<dyn Hook>]));
    let mut process = executor.new_process_state();
    let result = executor
        .execute_batch(
            &[call("1", "shot", "{}")],
            &mut process,
            &ctx(),
            &CollectingEventSink::new(),
        )
        .await;
    assert_eq!(*seen.lock().unwrap(), parts);
    assert_eq!(result.records[0].content_for_model(), "two attachments");
    assert_eq!(result.records[0].parts_for_model(), parts.as_slice());
}
