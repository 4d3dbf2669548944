//! Stored sessions and messages as `oxydra sessions` and `chat`'s `/sessions` print
//! them: one line (text) or one JSON object (jsonl) per session or message. What a
//! database holds is scrubbed and escaped before it is shown.

use std::io::Write;

use oxydra::memory::{SessionInfo, SessionMeta, StoredMessage};
use oxydra::scrubbing::scrub;
use oxydra::types::ContentPart;
use serde_json::json;

use crate::args::OutputFormat;
use crate::error::CliError;
use crate::output::parts::{part_json, part_line};
use crate::terminal_text::one_line as escape;

/// A stored session as listed: when it was used, and what it was started with.
pub struct Listed {
    /// The session.
    pub info: SessionInfo,
    /// Its first user message, on one line and cut short.
    pub first_prompt: Option<String>,
}

/// A prompt on one line, scrubbed, escaped and cut to 60 characters.
pub fn one_line_prompt(text: &str) -> String {
    let scrubbed = scrub(text).text.into_owned();
    let line = scrubbed.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = escape(&line).into_owned();
    if line.chars().count() <= 60 {
        line
    } else {
        let mut cut: String = line.chars().take(59).collect();
        cut.push('…');
        cut
    }
}

/// How long ago `ms` (since the Unix epoch) was, for people: `just now`, `5 min ago`,
/// `3 h ago`, `2 days ago`.
pub fn age(ms: i64, now_ms: i64) -> String {
    let secs = now_ms.saturating_sub(ms).max(0) / 1000;
    match secs {
        0..60 => "just now".to_owned(),
        60..3_600 => format!("{} min ago", secs / 60),
        3_600..86_400 => format!("{} h ago", secs / 3_600),
        86_400..172_800 => "1 day ago".to_owned(),
        _ => format!("{} days ago", secs / 86_400),
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

/// Prints what `write` writes on stdout, as [`shown`] makes it.
pub fn to_stdout(
    format: OutputFormat,
    write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>,
) -> Result<(), CliError> {
    let mut text = Vec::new();
    write(&mut text).map_err(CliError::stdout)?;
    let text = shown(format, &text);
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)
}

/// A listing as it is printed, on any stream (a pipe ends at a terminal too): text
/// through the terminal sanitizer, since a stored message (the model's, a tool's) or
/// an MCP server's description can hold escape sequences; JSON lines with every
/// character the sanitizer escapes written as a JSON escape, the same values.
pub fn shown(format: OutputFormat, listing: &[u8]) -> String {
    let text = String::from_utf8_lossy(listing);
    match format {
        OutputFormat::Text => crate::terminal_text::lines(&text).into_owned(),
        OutputFormat::Jsonl => crate::terminal_text::escape_json(&text).into_owned(),
    }
}

/// The head of `sessions show`'s transcript: what the session runs with (nothing for a
/// session stored before sessions recorded it).
pub fn write_meta(out: &mut impl Write, meta: Option<&SessionMeta>) -> std::io::Result<()> {
    let Some(meta) = meta else {
        return Ok(());
    };
    writeln!(
        out,
        "model {}",
        run_as(
            Some(&meta.model),
            meta.agent.as_deref(),
            meta.replay_of.as_deref()
        )
    )?;
    match &meta.system_prompt {
        Some(prompt) => writeln!(out, "system prompt: {}", one_line_prompt(prompt)),
        None => writeln!(out, "no system prompt"),
    }
}

/// Prints sessions, one per line.
pub fn write_sessions(
    out: &mut impl Write,
    sessions: &[Listed],
    format: OutputFormat,
) -> std::io::Result<()> {
    match format {
        OutputFormat::Jsonl => {
            for Listed { info, first_prompt } in sessions {
                let line = json!({
                    "session_id": info.session_id,
                    "created_at": rfc3339(info.created_at_ms),
                    "updated_at": rfc3339(info.updated_at_ms),
                    "messages": info.messages,
                    "model": info.model,
                    "agent": info.agent,
                    "workspace": info.workspace,
                    "replay_of": info.replay_of,
                    "first_prompt": first_prompt,
                });
                writeln!(out, "{line}")?;
            }
        }
        OutputFormat::Text => {
            if sessions.is_empty() {
                writeln!(out, "no sessions stored")?;
            }
            let now = now_ms();
            for Listed { info, first_prompt } in sessions {
                let plural = if info.messages == 1 { "" } else { "s" };
                write!(
                    out,
                    "{}  {}  {} message{plural}  {}  {}",
                    info.session_id,
                    age(info.updated_at_ms, now),
                    info.messages,
                    run_as(
                        info.model.as_deref(),
                        info.agent.as_deref(),
                        info.replay_of.as_deref()
                    ),
                    escape(&short_workspace(info.workspace.as_deref())),
                )?;
                match first_prompt {
                    Some(prompt) => writeln!(out, "  {prompt}")?,
                    None => writeln!(out)?,
                }
            }
        }
    }
    out.flush()
}

/// The model a session ran with (`-` when it was stored before sessions recorded one),
/// the agent it runs as, if any, and the session it replays, if it is a replay:
/// `gpt-4o-mini (agent researcher) (replay of ses_…)`. Escaped: a database may hold
/// anything.
fn run_as(model: Option<&str>, agent: Option<&str>, replay_of: Option<&str>) -> String {
    let model = model.map_or_else(|| "-".to_owned(), super::run_header::short_model);
    let model = escape(&model).into_owned();
    let replay = replay_of.map_or_else(String::new, |of| format!(" (replay of {})", escape(of)));
    match agent {
        Some(agent) => format!("{model} (agent {}){replay}", escape(agent)),
        None => format!("{model}{replay}"),
    }
}

/// A session's workspace for a listing: under the home directory as `~/…`; `-` when
/// not recorded.
fn short_workspace(workspace: Option<&str>) -> String {
    let Some(workspace) = workspace else {
        return "-".to_owned();
    };
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    match home
        .as_deref()
        .and_then(|home| std::path::Path::new(workspace).strip_prefix(home).ok())
    {
        Some(rest) if rest.as_os_str().is_empty() => "~".to_owned(),
        Some(rest) => format!("~/{}", rest.display()),
        None => workspace.to_owned(),
    }
}

/// Prints stored messages, one per line (text: one block per message). Contents and
/// call arguments are scrubbed (a database written by an older version may hold
/// secrets); in text, call names and arguments show hidden characters escaped.
pub fn write_messages(
    out: &mut impl Write,
    messages: &[StoredMessage],
    format: OutputFormat,
) -> std::io::Result<()> {
    for stored in messages {
        let mut message = stored.message.clone();
        if let Some(content) = &mut message.content {
            *content = scrub(content).text.into_owned();
        }
        for call in &mut message.tool_calls {
            call.arguments = scrub(&call.arguments).text.into_owned();
        }
        match format {
            OutputFormat::Jsonl => {
                let line = json!({
                    "sequence": stored.sequence,
                    "role": message.role,
                    "content": message.content,
                    "tool_calls": message.tool_calls,
                    "tool_call_id": message.tool_call_id,
                });
                let mut line = with_parts(line, &message.parts);
                // A fallback model's answer names it; other messages keep their shape.
                if let (Some(model), Some(object)) = (&message.model, line.as_object_mut()) {
                    object.insert("model".to_owned(), json!(model));
                }
                // Where its text came from, when recorded (`web:<url>`, `workspace` …).
                if let (Some(source), Some(object)) = (&message.source, line.as_object_mut()) {
                    object.insert("source".to_owned(), json!(source.to_string()));
                }
                // A message of several sources (a prompt with piped text and files)
                // lists the others after the least trusted.
                if let (false, Some(object)) =
                    (message.other_sources.is_empty(), line.as_object_mut())
                {
                    let others: Vec<String> = message
                        .other_sources
                        .iter()
                        .map(ToString::to_string)
                        .collect();
                    object.insert("other_sources".to_owned(), json!(others));
                }
                writeln!(out, "{line}")?;
            }
            OutputFormat::Text => {
                let role = message.role.as_str();
                match (&message.tool_call_id, &message.name) {
                    (Some(call), Some(name)) => {
                        writeln!(out, "#{} {role} [{name} {call}]", stored.sequence)?;
                    }
                    _ => match &message.model {
                        // Written by a fallback model, not the session's.
                        Some(model) => writeln!(
                            out,
                            "#{} {role} (by fallback {})",
                            stored.sequence,
                            escape(model)
                        )?,
                        None => writeln!(out, "#{} {role}", stored.sequence)?,
                    },
                }
                if let Some(content) = message.content.as_deref().filter(|c| !c.is_empty()) {
                    for line in content.lines() {
                        writeln!(out, "  {line}")?;
                    }
                }
                for part in &message.parts {
                    writeln!(out, "  [{}]", escape(&part_line(part)))?;
                }
                for call in &message.tool_calls {
                    writeln!(
                        out,
                        "  → {} {} ({})",
                        escape(&call.name),
                        escape(&call.arguments),
                        escape(call.id.as_str())
                    )?;
                }
            }
        }
    }
    out.flush()
}

/// `line` with a `parts` array describing `parts` (kind, media type, size,
/// description; never the bytes), when there are any: a message of text only keeps
/// the shape it always had.
fn with_parts(mut line: serde_json::Value, parts: &[ContentPart]) -> serde_json::Value {
    if !parts.is_empty()
        && let Some(object) = line.as_object_mut()
    {
        let parts: Vec<serde_json::Value> = parts.iter().map(part_json).collect();
        object.insert("parts".to_owned(), serde_json::Value::from(parts));
    }
    line
}

/// Milliseconds since the Unix epoch as an RFC 3339 UTC timestamp.
pub fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra::types::{CallId, Message, SessionId, ToolCall};

    #[test]
    fn a_listing_is_sanitized_as_text_and_json_escaped_as_json_lines() {
        let text = "#2 tool\n  stored\u{1b}]2;pwned\u{7}\u{202e}\n";
        assert_eq!(
            shown(OutputFormat::Text, text.as_bytes()),
            "#2 tool\n  stored\\u{1b}]2;pwned\\u{7}\\u{202e}\n"
        );
        let line = json!({"content": "stored\u{1b}]2;pwned\u{7}\u{9b}\u{202e}"}).to_string();
        let json = shown(OutputFormat::Jsonl, line.as_bytes());
        assert!(
            !json.contains(['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}']),
            "{json}"
        );
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["content"], "stored\u{1b}]2;pwned\u{7}\u{9b}\u{202e}");
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn sessions_print_as_the_contract_says() {
        let sessions = vec![Listed {
            info: SessionInfo {
                session_id: SessionId::from("ses_1"),
                created_at_ms: 0,
                updated_at_ms: 1000,
                messages: 3,
                model: Some("gpt-4o-mini".into()),
                agent: Some("research\u{1b}er".into()),
                workspace: Some("/work/app".into()),
                replay_of: Some("ses_0".into()),
            },
            first_prompt: Some("Fix the build".into()),
        }];
        let mut out = Vec::new();
        write_sessions(&mut out, &sessions, OutputFormat::Jsonl).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            value,
            json!({"session_id":"ses_1","created_at":"1970-01-01T00:00:00.000Z",
                "updated_at":"1970-01-01T00:00:01.000Z","messages":3,
                "model":"gpt-4o-mini","agent":"research\u{1b}er",
                "workspace":"/work/app","replay_of":"ses_0","first_prompt":"Fix the build"})
        );
        let mut text = Vec::new();
        write_sessions(&mut text, &sessions, OutputFormat::Text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.starts_with("ses_1  "), "{text}");
        assert!(
            text.ends_with(
                " days ago  3 messages  gpt-4o-mini (agent research\\u{1b}er) (replay of ses_0)  /work/app  Fix the build\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_session_stored_before_metas_lists_no_model() {
        let sessions = vec![Listed {
            info: SessionInfo {
                session_id: SessionId::from("ses_old"),
                created_at_ms: 0,
                updated_at_ms: 0,
                messages: 1,
                model: None,
                agent: None,
                workspace: None,
                replay_of: None,
            },
            first_prompt: None,
        }];
        let mut text = Vec::new();
        write_sessions(&mut text, &sessions, OutputFormat::Text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.ends_with(" days ago  1 message  -  -\n"), "{text}");
        let mut out = Vec::new();
        write_sessions(&mut out, &sessions, OutputFormat::Jsonl).unwrap();
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            (&value["model"], &value["agent"]),
            (&json!(null), &json!(null))
        );
    }

    #[test]
    fn show_heads_the_transcript_with_the_meta() {
        let mut out = Vec::new();
        write_meta(&mut out, None).unwrap();
        assert!(out.is_empty());
        let meta = SessionMeta {
            model: "m".into(),
            system_prompt: Some("You research\nquestions.".into()),
            agent: Some("researcher".into()),
            workspace: None,
            replay_of: None,
        };
        write_meta(&mut out, Some(&meta)).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "model m (agent researcher)\nsystem prompt: You research questions.\n"
        );
    }

    #[test]
    fn ages_read_as_people_say_them() {
        let now = 1_000_000_000;
        assert_eq!(age(now - 5_000, now), "just now");
        assert_eq!(age(now + 5_000, now), "just now");
        assert_eq!(age(now - 5 * 60_000, now), "5 min ago");
        assert_eq!(age(now - 3 * 3_600_000, now), "3 h ago");
        assert_eq!(age(now - 86_400_000, now), "1 day ago");
        assert_eq!(age(now - 9 * 86_400_000, now), "9 days ago");
    }

    #[test]
    fn a_prompt_is_listed_on_one_line_scrubbed_and_short() {
        let prompt = one_line_prompt(&format!(
            "use password=hunter2-very-secret\nthen {}",
            "x".repeat(200)
        ));
        assert!(!prompt.contains("hunter2"), "{prompt}");
        assert!(!prompt.contains('\n'), "{prompt}");
        assert_eq!(prompt.chars().count(), 60);
    }

    #[test]
    fn shown_messages_are_scrubbed_and_escaped() {
        let call = ToolCall::new(
            CallId::from("c1"),
            "shell\u{202e}exec",
            r#"{"command":"mysql --password=hunter2-very-secret"}"#,
        );
        let messages = vec![
            StoredMessage {
                sequence: 1,
                message: Message::user("my password=hunter2-very-secret"),
                created_at_ms: 0,
            },
            StoredMessage {
                sequence: 2,
                message: Message::assistant_with_tool_calls(None, vec![call]),
                created_at_ms: 0,
            },
        ];
        for format in [OutputFormat::Jsonl, OutputFormat::Text] {
            let mut out = Vec::new();
            write_messages(&mut out, &messages, format).unwrap();
            let out = String::from_utf8(out).unwrap();
            assert!(!out.contains("hunter2"), "{out}");
            if format == OutputFormat::Text {
                assert!(out.contains(r"shell\u{202e}exec"), "{out}");
                assert!(!out.contains('\u{202e}'), "{out}");
            }
        }
    }

    #[test]
    fn messages_print_every_field() {
        let call = ToolCall::new(CallId::from("c1"), "file_read", r#"{"path":"a"}"#);
        let messages = vec![
            StoredMessage {
                sequence: 1,
                message: Message::assistant_with_tool_calls(None, vec![call]),
                created_at_ms: 0,
            },
            StoredMessage {
                sequence: 2,
                message: Message::tool_result(CallId::from("c1"), "file_read", "text"),
                created_at_ms: 0,
            },
        ];
        let mut out = Vec::new();
        write_messages(&mut out, &messages, OutputFormat::Jsonl).unwrap();
        let lines: Vec<serde_json::Value> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(
            lines[0],
            json!({"sequence":1,"role":"assistant","content":null,
                "tool_calls":[{"id":"c1","name":"file_read","arguments":"{\"path\":\"a\"}"}],
                "tool_call_id":null})
        );
        assert_eq!(lines[1]["tool_call_id"], "c1");
        assert_eq!(lines[1]["content"], "text");
        let mut text = Vec::new();
        write_messages(&mut text, &messages, OutputFormat::Text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("→ file_read {\"path\":\"a\"} (c1)"), "{text}");
        assert!(text.contains("#2 tool [file_read c1]"), "{text}");
    }

    #[test]
    fn parts_are_named_never_dumped() {
        let png = ContentPart::image("image/png", &[9u8; 4096]);
        let data = png.base64_data().unwrap().to_owned();
        let messages = vec![StoredMessage {
            sequence: 1,
            message: Message::user("look").with_parts(vec![
                png,
                ContentPart::pdf(b"%PDF-1.4", Some("r.pdf".into())),
            ]),
            created_at_ms: 0,
        }];
        let mut text = Vec::new();
        write_messages(&mut text, &messages, OutputFormat::Text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(text.contains("  [image (image/png, 4.0 KiB)]"), "{text}");
        assert!(
            text.contains("  [document r.pdf (application/pdf, 8 B)]"),
            "{text}"
        );
        let mut jsonl = Vec::new();
        write_messages(&mut jsonl, &messages, OutputFormat::Jsonl).unwrap();
        let jsonl = String::from_utf8(jsonl).unwrap();
        assert!(!jsonl.contains(&data[..64]), "{jsonl}");
        assert!(!text.contains(&data[..64]), "{text}");
        let line: serde_json::Value = serde_json::from_str(jsonl.trim()).unwrap();
        assert_eq!(line["parts"][0]["kind"], "image");
        assert_eq!(line["parts"][0]["bytes"], 4096);
        assert_eq!(line["parts"][1]["media_type"], "application/pdf");
        assert_eq!(line["content"], "look");
    }
}
