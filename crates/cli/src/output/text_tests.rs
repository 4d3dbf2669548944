//! Tests of the text renderer ([`super`]): what goes to stdout and stderr, the spinner,
//! Markdown, diffs and sanitizing.

use super::*;
use crate::output::test_support::SharedBuffer;
use oxydra::types::{CallId, RuntimeProgressEvent, SafetyTier, SessionId, Usage};

fn render(events: &[RuntimeEvent], spinner: bool) -> (String, String) {
    let out = SharedBuffer::default();
    let err = SharedBuffer::default();
    let renderer = TextRenderer::new(Box::new(out.clone()), Box::new(err.clone()), spinner);
    for event in events {
        renderer.emit(event);
    }
    renderer.finish();
    (out.text(), err.text())
}

fn run_events() -> Vec<RuntimeEvent> {
    vec![
        RuntimeEvent::Progress(RuntimeProgressEvent::new(
            RuntimeProgressKind::ProviderCall,
            1,
            8,
        )),
        RuntimeEvent::TextDelta {
            text: "Reading".into(),
        },
        RuntimeEvent::Progress(RuntimeProgressEvent::new(
            RuntimeProgressKind::ToolExecution {
                tool_names: vec!["file_read".into(), "shell_exec".into()],
            },
            1,
            8,
        )),
        RuntimeEvent::ToolStarted {
            call_id: CallId::from("c1"),
            name: "file_read".into(),
            tier: SafetyTier::ReadOnly,
            arguments: r#"{"path":"notes/plan.md"}"#.into(),
        },
        RuntimeEvent::ToolCompleted {
            call_id: CallId::from("c1"),
            name: "file_read".into(),
            duration_ms: 4,
            output: String::new(),
        },
        RuntimeEvent::ToolFailed {
            call_id: CallId::from("c2"),
            name: "shell_exec".into(),
            error: "permission denied\nmore".into(),
        },
        RuntimeEvent::TextDelta {
            text: "Done.".into(),
        },
        RuntimeEvent::Final {
            session_id: SessionId::from("ses_9"),
            text: "Done.".into(),
            turns: 2,
            usage: Usage::new(100, 20, 0),
            cost: 0.5,
            output: None,
        },
    ]
}

#[test]
fn text_streams_to_stdout_and_status_to_stderr() {
    let (out, err) = render(&run_events(), false);
    assert_eq!(out, "Reading\nDone.\n");
    assert!(
        err.contains("  ✓ file_read notes/plan.md (4 ms)\n"),
        "{err}"
    );
    assert!(err.contains("  ✗ shell_exec ("), "{err}");
    assert!(err.contains("permission denied\n"));
    assert!(!err.contains("more"));
    assert!(err.contains("— 2 turns · 120 tokens (100 in, 20 out) · $0.5000 · session ses_9"));
    assert!(
        !err.contains("Executing tools"),
        "no spinner off a terminal"
    );
}

#[test]
fn spinner_shows_the_progress_message_on_a_terminal() {
    let (out, err) = render(&run_events(), true);
    assert_eq!(out, "Reading\nDone.\n");
    assert!(err.contains("[1/8] Calling the model"));
    assert!(err.contains("[1/8] Executing tools: file_read, shell_exec"));
    assert!(err.contains("session ses_9\n"));
}

#[test]
fn final_text_is_shown_when_nothing_streamed() {
    let events = vec![
        RuntimeEvent::Progress(RuntimeProgressEvent::new(
            RuntimeProgressKind::ProviderCall,
            1,
            8,
        )),
        RuntimeEvent::Final {
            session_id: SessionId::from("ses_1"),
            text: "Answer".into(),
            turns: 1,
            usage: Usage::default(),
            cost: 0.0,
            output: None,
        },
    ];
    let (out, _) = render(&events, false);
    assert_eq!(out, "Answer\n");
}

#[test]
fn an_answer_written_to_a_pipe_is_sanitized_and_keeps_its_lines() {
    let delta = |text: &str| RuntimeEvent::TextDelta { text: text.into() };
    let events = vec![
        delta("title\u{1b}]2;pwned\u{7}\tcol"),
        // A Windows line end split between two pieces is one line end.
        delta("one\r"),
        delta("\ntwo\u{202e}\r"),
    ];
    let (out, _) = render(&events, false);
    assert_eq!(
        out,
        "title\\u{1b}]2;pwned\\u{7}\tcolone\ntwo\\u{202e}\\u{d}\n"
    );
    let structured = RuntimeEvent::Final {
        session_id: SessionId::from("ses_1"),
        text: String::new(),
        turns: 1,
        usage: Usage::default(),
        cost: 0.0,
        output: Some(serde_json::json!({"name": "a\u{9b}2J\u{202e}b"})),
    };
    let (out, _) = render(&[structured], false);
    assert_eq!(out, "{\"name\":\"a\\u009b2J\\u202eb\"}\n");
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["name"], "a\u{9b}2J\u{202e}b");
}

#[test]
fn an_edit_line_shows_its_diff_and_a_failed_one_does_not() {
    let edit = |id: &str| RuntimeEvent::ToolStarted {
        call_id: CallId::from(id),
        name: "file_edit".into(),
        tier: SafetyTier::SideEffecting,
        arguments: r#"{"path":"a.rs","old":"fn a() {}","new":"fn b() {}"}"#.into(),
    };
    let events = vec![
        edit("e1"),
        RuntimeEvent::ToolCompleted {
            call_id: CallId::from("e1"),
            name: "file_edit".into(),
            duration_ms: 3,
            output: String::new(),
        },
        edit("e2"),
        RuntimeEvent::ToolFailed {
            call_id: CallId::from("e2"),
            name: "file_edit".into(),
            error: "`old` not found Expected schema: {\"type\":\"object\"}".into(),
        },
    ];
    let (_, err) = render(&events, false);
    assert!(
        err.contains("  ✓ file_edit a.rs (3 ms)\n      - fn a() {}\n      + fn b() {}\n"),
        "{err}"
    );
    assert_eq!(err.matches("fn b()").count(), 1, "{err}");
    assert!(err.contains("): `old` not found\n"), "{err}");
    assert!(!err.contains("schema"), "{err}");
}

#[test]
fn markdown_is_rendered_when_asked_and_raw_otherwise() {
    let answer = "Some **bold** words.\n\n- one\n- two";
    let events = vec![
        RuntimeEvent::TextDelta {
            text: answer.into(),
        },
        RuntimeEvent::Final {
            session_id: SessionId::from("ses_1"),
            text: answer.into(),
            turns: 1,
            usage: Usage::default(),
            cost: 0.0,
            output: None,
        },
    ];
    let (raw, _) = render(&events, false);
    assert_eq!(raw, format!("{answer}\n"));

    let out = SharedBuffer::default();
    let err = SharedBuffer::default();
    let renderer = TextRenderer::new(Box::new(out.clone()), Box::new(err.clone()), false)
        .render_markdown(MarkdownStream::new(80));
    for event in &events {
        renderer.emit(event);
    }
    renderer.finish();
    let shown = out.text();
    assert!(!shown.contains("**"), "{shown:?}");
    assert!(shown.contains("bold"), "{shown:?}");
    assert!(shown.contains("one") && shown.contains("two"), "{shown:?}");
    assert!(shown.ends_with('\n'), "{shown:?}");
}

#[test]
fn the_spinner_shows_until_the_first_visible_text_and_a_preview_gives_way() {
    let out = SharedBuffer::default();
    let err = SharedBuffer::default();
    let renderer = TextRenderer::new(Box::new(out.clone()), Box::new(err.clone()), true)
        .render_markdown(MarkdownStream::new(80));
    renderer.emit(&RuntimeEvent::Progress(RuntimeProgressEvent::new(
        RuntimeProgressKind::ProviderCall,
        1,
        8,
    )));
    renderer.emit(&RuntimeEvent::TextDelta {
        text: "\n\n".into(),
    });
    assert!(
        lock(&renderer.state).spinner.is_some(),
        "blank text shows nothing"
    );
    assert_eq!(out.text(), "");
    renderer.emit(&RuntimeEvent::TextDelta { text: "Hel".into() });
    assert!(lock(&renderer.state).spinner.is_none());
    assert_eq!(out.text(), "Hel");
    renderer.emit(&RuntimeEvent::TextDelta {
        text: "lo\u{1b}[8m\nnext".into(),
    });
    // The preview's row is cleared and the whole line rendered in its place.
    assert_eq!(out.text(), "Hel\r\u{1b}[2KHello\\u{1b}[8m\nnext");
    renderer.finish();
    assert_eq!(
        out.text(),
        "Hel\r\u{1b}[2KHello\\u{1b}[8m\nnext\r\u{1b}[2Knext\n"
    );
}

#[test]
fn a_retry_says_why_how_long_and_which_attempt_comes() {
    let retry = |delay_ms| {
        RuntimeEvent::ProviderRetry(oxydra::types::ProviderRetry {
            attempt: 1,
            max_attempts: 4,
            delay_ms,
            reason: "rate limited".into(),
        })
    };
    let (_, err) = render(&[retry(5000), retry(250)], false);
    assert!(
        err.contains("  ↻ rate limited, retrying in 5 s (2/4)\n"),
        "{err}"
    );
    assert!(err.contains("retrying in 250 ms (2/4)"), "{err}");
    // On a terminal the spinner says it.
    let (_, err) = render(&[retry(1500)], true);
    assert!(err.contains("rate limited, retrying in 2 s (2/4)"), "{err}");
}

/// `oxydra run … | cat` on a terminal: the answer's closing line feed goes through the
/// pipe and may arrive after stderr's line, so a stderr line after an open answer line
/// starts with a line feed of its own; with stdout a file nothing is lost either.
#[test]
fn with_stdout_piped_and_stderr_a_terminal_the_closing_line_starts_its_own_line() {
    let final_event = RuntimeEvent::Final {
        session_id: SessionId::from("ses_1"),
        text: "The answer".into(),
        turns: 1,
        usage: Usage::new(10, 2, 0),
        cost: 0.0,
        output: None,
    };
    let open = vec![
        RuntimeEvent::TextDelta {
            text: "The answer".into(),
        },
        final_event.clone(),
    ];
    let (out, err) = render(&open, true);
    assert_eq!(out, "The answer\n");
    assert!(err.starts_with("\n— 1 turn"), "{err:?}");
    // Off a terminal, stderr gets no extra line.
    let (_, err) = render(&open, false);
    assert!(err.starts_with("— 1 turn"), "{err:?}");
    // An answer that ended its own line needs none either.
    let closed = vec![
        RuntimeEvent::TextDelta {
            text: "The answer\n".into(),
        },
        final_event,
    ];
    let (_, err) = render(&closed, true);
    assert!(err.starts_with("— 1 turn"), "{err:?}");
}
