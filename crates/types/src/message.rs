//! Conversation messages.

use serde::{Deserialize, Serialize};

use crate::content::ContentPart;
use crate::ids::CallId;
use crate::provenance::Source;
use crate::reasoning::ReasoningPart;
use crate::tool::ToolCall;
use crate::usage::Usage;

/// Who authored a [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    /// Instructions to the model (system prompt, rolling summary, retrieved snippets).
    System,
    /// The human (or calling program).
    User,
    /// The model.
    Assistant,
    /// The result of a tool call, linked to it by `tool_call_id`.
    Tool,
}

impl MessageRole {
    /// The role's wire name: `system`, `user`, `assistant` or `tool`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: MessageRole,
    /// Its text; `None` for an assistant message that only calls tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Its parts besides the text (images, documents), in order after the text; empty
    /// for a message of text only, which then serialises exactly as before parts
    /// existed (DESIGN.md §3.10).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<ContentPart>,
    /// Tool calls the assistant asked for, in the order it asked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<CallId>,
    /// For a tool message: the tool's name (some providers need it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// For an assistant message: the reasoning state its provider must get back on the
    /// next request (thinking blocks, reasoning items, thought signatures), in the
    /// order the provider produced it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<ReasoningPart>,
    /// Where the text came from (DESIGN.md §3.13), when known: a tool result carries
    /// the source of what the tool read (`web:<url>`, `mcp:<server>`, `workspace`,
    /// `command`). Kept with the stored message; providers never send it (each builds
    /// its own wire form), and a message without it serialises as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// Where else the text came from, for a message that mixes sources (a prompt
    /// given as an argument, text piped beside it and attached files): every source
    /// but [`source`](Self::source), which is the least trusted of them
    /// ([`with_sources`](Self::with_sources)). Kept with the stored message so that a
    /// restored session counts each; empty (and not serialised) for a message of one
    /// source or none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_sources: Vec<Source>,
    /// For an assistant message: the model that wrote it, when it is not the one the
    /// run asked (a fallback model answered the turn). Kept with the stored message
    /// (`sessions show` names it); providers never send it, and a message without it
    /// serialises as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// For an assistant message: the tokens of the provider call that wrote it. Kept
    /// with the stored message (a replay compares the runs' use by it); providers never
    /// send it, and a message without it serialises as before. `None` for messages
    /// stored before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl Message {
    fn plain(role: MessageRole, content: impl Into<String>) -> Self {
        Self {
            role,
            content: Some(content.into()),
            parts: Vec::new(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            reasoning: Vec::new(),
            source: None,
            other_sources: Vec::new(),
            model: None,
            usage: None,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(MessageRole::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(MessageRole::User, content)
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::plain(MessageRole::Assistant, content)
    }

    /// An assistant message that calls tools, with optional text beside the calls.
    pub fn assistant_with_tool_calls(content: Option<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            role: MessageRole::Assistant,
            content,
            parts: Vec::new(),
            tool_calls,
            tool_call_id: None,
            name: None,
            reasoning: Vec::new(),
            source: None,
            other_sources: Vec::new(),
            model: None,
            usage: None,
        }
    }

    /// The result of tool call `call_id` to tool `name`.
    pub fn tool_result(
        call_id: CallId,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self {
            role: MessageRole::Tool,
            content: Some(content.into()),
            parts: Vec::new(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id),
            name: Some(name.into()),
            reasoning: Vec::new(),
            source: None,
            other_sources: Vec::new(),
            model: None,
            usage: None,
        }
    }

    /// This message with `reasoning` as its reasoning state.
    pub fn with_reasoning(mut self, reasoning: Vec<ReasoningPart>) -> Self {
        self.reasoning = reasoning;
        self
    }

    /// This message with `source` as where its text came from (and nowhere else).
    pub fn with_source(mut self, source: Option<Source>) -> Self {
        self.source = source;
        self.other_sources.clear();
        self
    }

    /// This message with `sources` as where its text came from, each kept once: the
    /// least trusted by [`SourceKind::distrust`](crate::SourceKind::distrust) (the
    /// first given among equals) becomes [`source`](Self::source), the others
    /// [`other_sources`](Self::other_sources), least trusted first. `person` is
    /// dropped beside any other source (the others are what matters); no sources
    /// leaves the message without one.
    pub fn with_sources(mut self, sources: impl IntoIterator<Item = Source>) -> Self {
        let mut all: Vec<Source> = Vec::new();
        for source in sources {
            if !all.contains(&source) {
                all.push(source);
            }
        }
        if all.len() > 1 {
            all.retain(|source| *source != Source::Person);
        }
        // A stable sort: among equals the order given stays.
        all.sort_by_key(|source| std::cmp::Reverse(source.kind().distrust()));
        let mut all = all.into_iter();
        self.source = all.next();
        self.other_sources = all.collect();
        self
    }

    /// Every source of the message: [`source`](Self::source), then
    /// [`other_sources`](Self::other_sources).
    pub fn sources(&self) -> impl Iterator<Item = &Source> {
        self.source.iter().chain(&self.other_sources)
    }

    /// This message marked as written by `model` (a fallback model; `None`: the model
    /// the run asked).
    pub fn with_model(mut self, model: Option<String>) -> Self {
        self.model = model;
        self
    }

    /// This message with `parts` (images, documents) after its text.
    pub fn with_parts(mut self, parts: Vec<ContentPart>) -> Self {
        self.parts = parts;
        self
    }

    /// Whether the message carries parts besides its text.
    pub fn has_parts(&self) -> bool {
        !self.parts.is_empty()
    }

    /// The text of the message, or `""` when it has none.
    pub fn text(&self) -> &str {
        self.content.as_deref().unwrap_or("")
    }

    /// Whether this is an assistant message that asks for tool calls.
    pub fn has_tool_calls(&self) -> bool {
        !self.tool_calls.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(message: &Message) -> Message {
        let json = serde_json::to_string(message).unwrap();
        serde_json::from_str(&json).unwrap()
    }

    #[test]
    fn every_constructor_round_trips() {
        let call = ToolCall::new(CallId::from("c1"), "file_read", r#"{"path":"a"}"#);
        for message in [
            Message::system("be brief"),
            Message::user("hi"),
            Message::assistant("hello"),
            Message::assistant_with_tool_calls(Some("looking".into()), vec![call.clone()]),
            Message::assistant_with_tool_calls(None, vec![call]),
            Message::tool_result(CallId::from("c1"), "file_read", "contents"),
            Message::user("look").with_parts(vec![
                ContentPart::image("image/png", b"\x89PNG"),
                ContentPart::image_url("https://example.com/a.png"),
                ContentPart::pdf(b"%PDF-1.7", None),
            ]),
            Message::tool_result(CallId::from("c2"), "web_fetch", "page")
                .with_source(Some(Source::Web("https://example.com/".into()))),
            Message::assistant("fell back").with_model(Some("claude-haiku".into())),
            Message::assistant("done").with_reasoning(vec![ReasoningPart::Thinking {
                text: "hmm".into(),
                signature: "sig".into(),
            }]),
        ] {
            assert_eq!(round_trip(&message), message);
        }
    }

    #[test]
    fn wire_shape_is_stable() {
        let message = Message::tool_result(CallId::from("c1"), "file_read", "ok");
        let value = serde_json::to_value(&message).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"role":"tool","content":"ok","tool_call_id":"c1","name":"file_read"})
        );
        let user = serde_json::to_value(Message::user("hi")).unwrap();
        assert_eq!(user, serde_json::json!({"role":"user","content":"hi"}));
        let with_image =
            serde_json::to_value(Message::user("hi").with_parts(vec![ContentPart::image_url("u")]))
                .unwrap();
        assert_eq!(
            with_image,
            serde_json::json!({"role":"user","content":"hi","parts":[{"type":"image_url","url":"u"}]})
        );
    }

    #[test]
    fn the_least_trusted_source_names_a_message_and_every_one_is_kept() {
        let web = || Source::Web("https://x.test/".into());
        // A prompt typed, with piped output and an attached file: the command's
        // output names it, the file is kept beside it, the person's words drop out.
        let message = Message::user("do it").with_sources([
            Source::Person,
            Source::Workspace,
            Source::Command,
            Source::Workspace,
        ]);
        assert_eq!(message.source, Some(Source::Command));
        assert_eq!(message.other_sources, vec![Source::Workspace]);
        let all: Vec<&Source> = message.sources().collect();
        assert_eq!(all, [&Source::Command, &Source::Workspace]);
        let json = serde_json::to_value(&message).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"role":"user","content":"do it","source":"command",
                "other_sources":["workspace"]})
        );
        assert_eq!(round_trip(&message), message);

        let mixed = Message::user("x").with_sources([
            Source::Mcp("gh".into()),
            web(),
            Source::Config,
            Source::Web("https://y.test/".into()),
        ]);
        assert_eq!(mixed.source, Some(web()), "the first of equals");
        assert_eq!(
            mixed.other_sources,
            vec![
                Source::Web("https://y.test/".into()),
                Source::Mcp("gh".into()),
                Source::Config
            ]
        );
        // One source, the person alone, or none.
        let one = Message::user("x").with_sources([Source::Workspace]);
        assert_eq!(one.source, Some(Source::Workspace));
        assert!(one.other_sources.is_empty());
        let person = Message::user("x").with_sources([Source::Person, Source::Person]);
        assert_eq!(person.source, Some(Source::Person));
        let none = Message::user("x").with_sources([]);
        assert_eq!((none.source, none.other_sources.len()), (None, 0));
        // A single source set after replaces them all.
        let replaced = message.with_source(Some(web()));
        assert_eq!(replaced.sources().collect::<Vec<_>>(), [&web()]);
    }

    #[test]
    fn a_stored_message_of_one_source_reads_as_before() {
        let stored: Message =
            serde_json::from_str(r#"{"role":"user","content":"hi","source":"workspace"}"#).unwrap();
        assert_eq!(stored.sources().collect::<Vec<_>>(), [&Source::Workspace]);
        assert!(
            serde_json::from_str::<Message>(r#"{"role":"user","other_sources":["ftp:x"]}"#)
                .is_err()
        );
    }

    #[test]
    fn missing_optional_fields_default() {
        let message: Message = serde_json::from_str(r#"{"role":"assistant"}"#).unwrap();
        assert_eq!(message.text(), "");
        assert!(!message.has_tool_calls());
        assert!(serde_json::from_str::<Message>(r#"{"role":"robot"}"#).is_err());
    }
}
