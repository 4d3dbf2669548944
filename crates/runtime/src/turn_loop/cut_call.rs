//! A tool call the output-token limit cut off.
//!
//! When a response ends with `finish_reason: length` its last tool call may be
//! incomplete: its arguments stop mid-JSON (`{"note": "The`), or nothing came after the
//! tool's name at all. Empty arguments would otherwise read as `{}` and run the tool with
//! no arguments; cut JSON would get a parse error that does not say why. Such a call is
//! not run: it gets a failed result that tells the model what happened.

use oxydra_types::{FinishReason, Message, TOOL_FAILURE_PREFIX, ToolCall};

/// The calls to run and, when the output-token limit cut the last one off, that call.
pub(crate) fn split_cut_call<'c>(
    calls: &'c [ToolCall],
    finish: &FinishReason,
) -> (&'c [ToolCall], Option<&'c ToolCall>) {
    if *finish != FinishReason::Length {
        return (calls, None);
    }
    match calls.split_last() {
        Some((last, rest)) if is_incomplete(&last.arguments) => (rest, Some(last)),
        _ => (calls, None),
    }
}

/// Whether `arguments` cannot be a whole argument object: empty, or not valid JSON.
fn is_incomplete(arguments: &str) -> bool {
    arguments.trim().is_empty() || serde_json::from_str::<serde_json::Value>(arguments).is_err()
}

/// What the model is told about the cut call.
pub(crate) fn cut_call_error() -> String {
    "the output-token limit cut this call off before its arguments were complete, so it \
     was not run; call the tool again, with shorter arguments if they were long"
        .to_owned()
}

/// The failed result of the cut `call`.
pub(crate) fn cut_call_result(call: &ToolCall) -> Message {
    Message::tool_result(
        call.id.clone(),
        call.name.clone(),
        format!("{TOOL_FAILURE_PREFIX}: {}", cut_call_error()),
    )
}

#[cfg(test)]
mod tests {
    use oxydra_types::CallId;

    use super::*;

    fn call(arguments: &str) -> ToolCall {
        ToolCall::new(CallId::from("c"), "note_write", arguments)
    }

    #[test]
    fn only_a_length_finish_cuts_and_only_the_last_call() {
        let calls = vec![call(r#"{"a":1}"#), call(r#"{"note": "The"#)];
        let (run, cut) = split_cut_call(&calls, &FinishReason::Length);
        assert_eq!(run.len(), 1);
        assert_eq!(cut.map(|c| c.arguments.as_str()), Some(r#"{"note": "The"#));
        let (run, cut) = split_cut_call(&calls, &FinishReason::ToolCalls);
        assert_eq!((run.len(), cut), (2, None));
    }

    #[test]
    fn empty_arguments_under_length_are_cut_but_whole_ones_run() {
        let empty = vec![call("")];
        assert!(split_cut_call(&empty, &FinishReason::Length).1.is_some());
        let whole = vec![call(r#"{"path":"a"}"#)];
        assert!(split_cut_call(&whole, &FinishReason::Length).1.is_none());
        assert!(split_cut_call(&[], &FinishReason::Length).1.is_none());
    }

    #[test]
    fn the_result_is_a_failure_the_model_can_act_on() {
        let message = cut_call_result(&call(""));
        assert!(message.text().starts_with(TOOL_FAILURE_PREFIX));
        assert!(message.text().contains("output-token limit"));
    }
}
