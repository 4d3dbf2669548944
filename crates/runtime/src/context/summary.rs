//! The rolling summary: condensing the oldest turns when the context fills up.
//!
//! When the live history (everything not yet condensed) passes
//! `summary_trigger_ratio` of the usable context, the planner picks the oldest whole
//! groups and keeps the newest groups worth about half the trigger — and always the
//! latest user message, verbatim, even when the turns around it are condensed (a long
//! run of tool turns for one prompt). The provider condenses the picked messages,
//! together with the previous summary, into a new summary; it is stored with an epoch
//! compare-and-swap and sent as a system message in place of the condensed turns.

use std::ops::Range;

use oxydra_provider::ProviderRequest;
use oxydra_types::{Message, MessageRole};

use super::groups::group_ranges;
use super::history::{History, counted_tokens};
use super::message_tokens::CountMode;

/// The first line of the summary system message.
pub const SUMMARY_HEADER: &str = "Summary of the earlier conversation:";

/// The instructions of the summarisation request.
pub const SUMMARY_INSTRUCTIONS: &str = "You condense the older part of a conversation between a user and an AI agent that calls tools. \
Write a concise summary that keeps every fact, decision, file name, number, result and open task needed to continue the work. \
Merge it with the previous summary if one is given. Name every attachment (image or document) the conversation mentions as it is written. \
Answer with the summary only.";

/// The most characters of one message put into the summarisation request.
const MAX_MESSAGE_CHARS: usize = 2_000;

/// The system message carrying a summary.
pub fn summary_message(text: &str) -> Message {
    Message::system(format!("{SUMMARY_HEADER}\n{text}"))
}

/// Which entries to condense.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryPlan {
    /// Entry indices to condense (from the live start).
    pub condense: Range<usize>,
    /// Sequence number of the last condensed message.
    pub covers_through: u64,
}

/// Picks the oldest live groups to condense, keeping the newest groups whose tokens
/// (counted under `mode`) fit `keep_tokens` (always at least the newest group) and the latest user
/// message. `None` when nothing can be condensed.
///
/// The cut may fall after the latest user message, so that in a long run of tool turns
/// for one prompt the old turns are condensed too. The user message is then condensed
/// with them (so the summary carries it on once a newer prompt arrives) and stays in the
/// prompt verbatim besides ([`History::pinned_user`]). Groups are condensed whole,
/// so a tool call is never separated from its results.
pub(crate) fn plan(state: &mut History, keep_tokens: u64, mode: CountMode) -> Option<SummaryPlan> {
    let live_start = state.live_start;
    // The latest user message is kept whatever happens: its tokens come first.
    let user_tokens = match state.latest_user {
        Some(user) => counted_tokens(state.entries.get_mut(user..=user).unwrap_or_default(), mode),
        None => 0,
    };
    let latest_user = state.latest_user.filter(|user| *user >= live_start);
    let live = state.entries.get_mut(live_start..)?;
    let groups = group_ranges(live.iter().map(|entry| &entry.message));
    let user_group = latest_user
        .map(|user| user - live_start)
        .and_then(|user| groups.iter().position(|group| group.contains(&user)));
    let mut remaining = keep_tokens.saturating_sub(user_tokens);
    let mut cut = live.len();
    for (index, group) in groups.iter().enumerate().rev() {
        if Some(index) == user_group {
            cut = group.start;
            continue;
        }
        let tokens = counted_tokens(live.get_mut(group.clone()).unwrap_or_default(), mode);
        let newest = index + 1 == groups.len();
        if !newest && tokens > remaining {
            break;
        }
        remaining = remaining.saturating_sub(tokens);
        cut = group.start;
    }
    // The walk stops only at a group newer than the user message (then the cut lies at
    // least one group past it) or older than it (then the message stays live).
    let cut = cut + live_start;
    if cut <= live_start {
        return None;
    }
    let last = state.entries.get(cut - 1)?;
    Some(SummaryPlan {
        condense: live_start..cut,
        covers_through: last.sequence,
    })
}

fn shorten(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!(
            "{} […{} more characters]",
            text.get(..cut).unwrap_or_default(),
            text.chars().count() - max_chars
        ),
        None => text.to_owned(),
    }
}

/// The messages as a plain transcript for the summariser.
pub fn transcript<'a>(messages: impl IntoIterator<Item = &'a Message>) -> String {
    let mut out = String::new();
    for message in messages {
        match message.role {
            MessageRole::Tool => {
                let name = message.name.as_deref().unwrap_or("tool");
                out.push_str(&format!(
                    "[{name} result] {}\n",
                    shorten(message.text(), MAX_MESSAGE_CHARS)
                ));
                for part in &message.parts {
                    out.push_str(&format!("[{name} result attached {}]\n", part.describe()));
                }
            }
            role => {
                if !message.text().is_empty() {
                    out.push_str(&format!(
                        "[{}] {}\n",
                        role.as_str(),
                        shorten(message.text(), MAX_MESSAGE_CHARS)
                    ));
                }
                for part in &message.parts {
                    out.push_str(&format!(
                        "[{} attached {}]\n",
                        role.as_str(),
                        part.describe()
                    ));
                }
                for call in &message.tool_calls {
                    out.push_str(&format!(
                        "[assistant called {}] {}\n",
                        call.name,
                        shorten(&call.arguments, MAX_MESSAGE_CHARS)
                    ));
                }
            }
        }
    }
    out
}

/// The most attachments [`with_placeholders`] names one by one.
const MAX_PLACEHOLDERS: usize = 20;

/// The descriptions ([`ContentPart::describe`](oxydra_types::ContentPart::describe))
/// of every part of `messages`, in order: what a summary of them must still name.
pub fn placeholders<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<String> {
    messages
        .into_iter()
        .flat_map(|message| message.parts.iter().map(|part| part.describe()))
        .collect()
}

/// The summary `text`, followed by a line naming each of `placeholders` (the parts of
/// the condensed turns) the summariser left out: the model reading the summary knows
/// those attachments existed, though it sees them no more.
pub fn with_placeholders(mut text: String, placeholders: &[String]) -> String {
    let missing: Vec<&str> = placeholders
        .iter()
        .map(String::as_str)
        .filter(|description| !text.contains(description))
        .collect();
    if missing.is_empty() {
        return text;
    }
    let shown = missing
        .iter()
        .take(MAX_PLACEHOLDERS)
        .copied()
        .collect::<Vec<_>>()
        .join("; ");
    let more = missing.len().saturating_sub(MAX_PLACEHOLDERS);
    text.push_str(&format!(
        "\n[attachments of the condensed turns, no longer shown: {shown}"
    ));
    if more > 0 {
        text.push_str(&format!("; and {more} more"));
    }
    text.push(']');
    text
}

/// The summarisation request for `model`.
pub fn summary_request<'a>(
    model: &str,
    previous: Option<&str>,
    messages: impl IntoIterator<Item = &'a Message>,
    max_tokens: Option<u32>,
) -> ProviderRequest {
    let mut prompt = String::new();
    if let Some(previous) = previous {
        prompt.push_str("Previous summary:\n");
        prompt.push_str(previous);
        prompt.push_str("\n\n");
    }
    prompt.push_str("Conversation to condense:\n");
    prompt.push_str(&transcript(messages));
    let mut request = ProviderRequest::new(
        model,
        vec![Message::system(SUMMARY_INSTRUCTIONS), Message::user(prompt)],
    );
    request.max_tokens = max_tokens;
    request.tool_choice = oxydra_provider::ToolChoice::None;
    request
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra_memory::SessionSummary;
    use oxydra_types::{CallId, ToolCall};

    fn state_with(messages: Vec<Message>) -> History {
        let mut state = History::default();
        for (index, message) in messages.into_iter().enumerate() {
            state.push(message, index as u64 + 1);
        }
        state
    }

    fn long(text: &str) -> String {
        format!("{text} {}", "lorem ipsum ".repeat(50))
    }

    #[test]
    fn plan_condenses_old_groups_and_keeps_the_latest_user_turn() {
        let call = ToolCall::new(CallId::from("c1"), "file_read", "{}");
        let mut state = state_with(vec![
            Message::user(long("q1")),
            Message::assistant_with_tool_calls(None, vec![call]),
            Message::tool_result(CallId::from("c1"), "file_read", long("r1")),
            Message::assistant(long("a1")),
            Message::user(long("q2")),
        ]);
        let plan = plan(&mut state, 150, CountMode::Exact).unwrap();
        // q2 (~100 tokens) kept; a1 does not fit beside it.
        assert_eq!(plan.condense, 0..4);
        assert_eq!(plan.covers_through, 4);
        // Even with room for everything, the latest user message stays.
        let everything = super::plan(&mut state, 0, CountMode::Exact).unwrap();
        assert_eq!(everything.condense, 0..4);
        let none = super::plan(&mut state, 1_000_000, CountMode::Exact);
        assert_eq!(none, None);
    }

    #[test]
    fn plan_never_splits_a_call_from_its_results() {
        let call = ToolCall::new(CallId::from("c1"), "file_read", "{}");
        let mut state = state_with(vec![
            Message::user(long("q1")),
            Message::assistant_with_tool_calls(None, vec![call]),
            Message::tool_result(CallId::from("c1"), "file_read", long("r1")),
            Message::user("q2".to_owned()),
        ]);
        // Room for the tool result alone, but not for its call group.
        let plan = plan(&mut state, 80, CountMode::Exact).unwrap();
        assert_eq!(plan.condense, 0..3);
    }

    #[test]
    fn plan_condenses_tool_turns_after_the_latest_user_message() {
        let turn = |id: &str| {
            vec![
                Message::assistant_with_tool_calls(
                    None,
                    vec![ToolCall::new(CallId::from(id), "file_read", "{}")],
                ),
                Message::tool_result(CallId::from(id), "file_read", long(id)),
            ]
        };
        let mut messages = vec![Message::user("read the files")];
        for id in ["c1", "c2", "c3"] {
            messages.extend(turn(id));
        }
        let mut state = state_with(messages);
        assert_eq!(state.latest_user, Some(0));
        // Room for one tool turn (~110 tokens) beside the prompt: the two older turns
        // go, with the prompt, which stays pinned in the prompt.
        let plan = plan(&mut state, 130, CountMode::Exact).unwrap();
        assert_eq!(plan.condense, 0..5);
        assert_eq!(plan.covers_through, 5);
        state.apply_summary(SessionSummary {
            text: Some("read c1 and c2".into()),
            covers_through: plan.covers_through,
            epoch: 1,
        });
        assert_eq!(state.live_start, 5);
        assert_eq!(state.pinned_user(), Some(0));
        assert!(state.history_upper() > state.live_upper);
        // The newest group is kept even without room for it; nothing else is left.
        assert_eq!(super::plan(&mut state, 0, CountMode::Exact), None);
        // The prompt and a single turn: nothing to condense.
        let mut state = state_with({
            let mut messages = vec![Message::user("read the files")];
            messages.extend(turn("c1"));
            messages
        });
        assert_eq!(super::plan(&mut state, 0, CountMode::Exact), None);
    }

    #[test]
    fn a_dropped_part_keeps_a_placeholder() {
        use oxydra_types::ContentPart;
        let image = ContentPart::image("image/png", &[0u8; 2048]);
        let pdf = ContentPart::pdf(&[1u8; 10], Some("r.pdf".into()));
        let messages = vec![
            Message::user("look at this").with_parts(vec![image.clone()]),
            Message::tool_result(CallId::from("c1"), "file_read", "Attached `r.pdf`")
                .with_parts(vec![pdf.clone()]),
        ];
        let text = transcript(&messages);
        assert!(
            text.contains("[user attached image (image/png, 2.0 KiB)]"),
            "{text}"
        );
        assert!(
            text.contains("[file_read result attached document r.pdf (application/pdf, 10 B)]"),
            "{text}"
        );
        // Never the bytes.
        assert!(!text.contains("AAAA"), "{text}");
        let names = placeholders(&messages);
        assert_eq!(names, [image.describe(), pdf.describe()]);
        // A summary that named the image keeps only the document's placeholder.
        let summary = with_placeholders(
            "The user sent an image (image/png, 2.0 KiB) of a chart.".into(),
            &names,
        );
        assert!(summary.ends_with(
            "\n[attachments of the condensed turns, no longer shown: document r.pdf (application/pdf, 10 B)]"
        ), "{summary}");
        assert_eq!(with_placeholders("x".into(), &[]), "x");
        let many: Vec<String> = (0..25).map(|i| format!("image {i}")).collect();
        let summary = with_placeholders(String::new(), &many);
        assert!(summary.ends_with("image 19; and 5 more]"), "{summary}");
    }

    #[test]
    fn request_carries_previous_summary_and_transcript() {
        let call = ToolCall::new(CallId::from("c1"), "file_read", r#"{"path":"a"}"#);
        let messages = [
            Message::user("read a"),
            Message::assistant_with_tool_calls(None, vec![call]),
            Message::tool_result(CallId::from("c1"), "file_read", "x".repeat(5_000)),
        ];
        let request = summary_request("m", Some("before"), &messages, Some(256));
        assert_eq!(request.messages.len(), 2);
        let prompt = request.messages[1].text();
        assert!(prompt.starts_with("Previous summary:\nbefore"));
        assert!(prompt.contains("[user] read a"));
        assert!(prompt.contains("[assistant called file_read] {\"path\":\"a\"}"));
        assert!(prompt.contains("[file_read result] xxx"));
        assert!(prompt.contains("[…3000 more characters]"));
        assert_eq!(request.max_tokens, Some(256));
        assert!(summary_message("s").text().starts_with(SUMMARY_HEADER));
    }
}
