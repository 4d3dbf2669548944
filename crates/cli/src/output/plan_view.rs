//! The plan the model keeps with `update_plan`, as people see it: under the tool line
//! as it changes, and at the end of `sessions show` (the newest valid plan).

use std::io::Write;

use oxydra::memory::StoredMessage;
use oxydra::scrubbing::scrub;
use oxydra::tools::{UPDATE_PLAN, UpdatePlanArgs};

use crate::terminal_text::lines as escape_lines;

/// The checklist of an `update_plan` call with `arguments`, indented for showing
/// under its tool line and safe for a terminal; `None` for any other tool or
/// arguments that are no valid plan.
pub fn under_tool_line(name: &str, arguments: &str) -> Option<String> {
    let plan = valid_plan(name, arguments)?;
    Some(indented(&plan.checklist()))
}

/// The newest valid plan among the `update_plan` calls of `messages`.
pub fn latest(messages: &[StoredMessage]) -> Option<UpdatePlanArgs> {
    messages.iter().rev().find_map(|stored| {
        stored
            .message
            .tool_calls
            .iter()
            .rev()
            .find_map(|call| valid_plan(&call.name, &call.arguments))
    })
}

/// Writes `plan:` and the newest plan of `messages` (scrubbed, escaped); nothing when
/// the session has none.
pub fn write_latest(out: &mut impl Write, messages: &[StoredMessage]) -> std::io::Result<()> {
    if let Some(plan) = latest(messages) {
        writeln!(out, "plan:")?;
        writeln!(out, "{}", indented(&scrub(&plan.checklist()).text))?;
    }
    Ok(())
}

fn valid_plan(name: &str, arguments: &str) -> Option<UpdatePlanArgs> {
    if name != UPDATE_PLAN {
        return None;
    }
    UpdatePlanArgs::from_arguments(arguments).filter(|plan| plan.validate().is_ok())
}

fn indented(text: &str) -> String {
    escape_lines(text)
        .lines()
        .map(|line| format!("    {line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra::types::{Message, ToolCall};

    fn plan_call(id: &str, arguments: &str) -> StoredMessage {
        StoredMessage {
            sequence: 0,
            message: Message::assistant_with_tool_calls(
                None,
                vec![ToolCall::new(id.into(), UPDATE_PLAN, arguments)],
            ),
            created_at_ms: 0,
        }
    }

    #[test]
    fn the_plan_is_drawn_under_its_tool_line_and_nothing_for_other_tools() {
        let args = r#"{"plan":[{"step":"read","status":"completed"},{"step":"fix","status":"in_progress"}]}"#;
        assert_eq!(
            under_tool_line(UPDATE_PLAN, args).unwrap(),
            "    [x] read\n    [~] fix"
        );
        assert_eq!(under_tool_line("shell_exec", args), None);
        assert_eq!(under_tool_line(UPDATE_PLAN, "{}"), None);
        let escape = r#"{"plan":[{"step":"\u001b[2Jwipe","status":"pending"}]}"#;
        assert!(
            !under_tool_line(UPDATE_PLAN, escape)
                .unwrap()
                .contains('\u{1b}')
        );
    }

    #[test]
    fn the_latest_valid_plan_wins_and_an_invalid_one_is_skipped() {
        let messages = vec![
            plan_call("c1", r#"{"plan":[{"step":"old","status":"pending"}]}"#),
            plan_call("c2", r#"{"plan":[{"step":"new","status":"completed"}]}"#),
            plan_call(
                "c3",
                r#"{"plan":[{"step":"a","status":"in_progress"},{"step":"b","status":"in_progress"}]}"#,
            ),
        ];
        let mut out = Vec::new();
        write_latest(&mut out, &messages).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "plan:\n    [x] new\n");
        let mut none = Vec::new();
        write_latest(&mut none, &[]).unwrap();
        assert!(none.is_empty());
    }
}
